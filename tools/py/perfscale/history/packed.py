"""A benchmark's repetitions as one value of its row (schema 6), not a row each.

A row per repetition cost about 270 bytes per sample in PostgreSQL (its header, the run id
and the benchmark's name again, and a primary key over them: 9.99 GB for a 50-machine
year), for 8 bytes of figure. Packed, a repetition costs its 8 bytes and the row's
overhead is shared by all of them.

The format is IEEE 754 binary64, big-endian, in repetition order: the bytes PostgreSQL's
float8send gives, so a PostgreSQL history is migrated in SQL without its samples leaving
the server (perfscale.history.postgres_engine), and SQLite's migration packs the same bytes
in Python (perfscale.history.sqlite_engine). A missing CPU time is a NaN; a benchmark
without any is stored as NULL.
"""

import math
import struct

SIZE = 8


class Damaged(ValueError):
    """A packed value whose length is no whole number of figures."""


def pack(values):
    """The bytes of `values` (None as NaN); None when there is no figure at all."""
    values = [math.nan if v is None else float(v) for v in values]
    if not values or all(math.isnan(v) for v in values):
        return None
    return struct.pack(">%dd" % len(values), *values)


def unpack(blob):
    """The figures of a packed value, in repetition order; [] for NULL."""
    if blob is None:
        return []
    blob = bytes(blob)
    if len(blob) % SIZE:
        raise Damaged("%d bytes, not a whole number of %d-byte figures" % (len(blob), SIZE))
    return list(struct.unpack(">%dd" % (len(blob) // SIZE), blob))


class Aggregate:
    """SQLite aggregate perfscale_pack(repetition, value): a group's values packed in
    repetition order (the migration from version 5's row per sample)."""

    def __init__(self):
        self.values = []

    def step(self, repetition, value):
        self.values.append((repetition, value))

    def finalize(self):
        return pack([value for _, value in sorted(self.values, key=lambda rv: rv[0])])

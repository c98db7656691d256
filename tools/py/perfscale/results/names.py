"""Splits Google Benchmark names into a family and its parameters.

Our families name their arguments, so a name is a path of `key:value` segments:

    parse_name("BM_BreakpointThread/breakpoints:4/parallelism:2/threads:20/real_time")
    # family 'BM_BreakpointThread', params {'breakpoints': '4', 'parallelism': '2',
    # 'threads': '20'}, flags ('real_time',)

Parsing is tolerant on purpose: the C++ side may add, rename or reorder parameters, and
names from other projects (positional `BM_X/8/64`) still plot and compare. Positional
arguments become `arg0`, `arg1`...; flags such as `real_time` are kept apart.
"""

import dataclasses
import math

# Segments Google Benchmark itself appends to control a run: they say how the figure was
# measured, not which point of the scaling curve it is, so they are not parameters.
_RUN_CONTROL_KEYS = frozenset({"min_time", "min_warmup_time", "iterations", "repeats"})


@dataclasses.dataclass(frozen=True)
class BenchmarkName:
    family: str
    params: dict  # key -> value, as text, in name order
    flags: tuple  # bare non-numeric segments after the family, e.g. ("real_time",)
    run_control: dict  # Google Benchmark's own segments (min_time:...)

    def without(self, *keys):
        """The parameters other than `keys`, as a hashable key for grouping siblings."""
        return tuple((k, v) for k, v in self.params.items() if k not in keys)


# Rows whose threads the scheduler places: they swing most between runs, so
# every table and verdict shows them as the noisy variant beside their pinned siblings.
NOISY_VARIANT = "placement:unpinned"


def display_name(name):
    """The benchmark's name as a person reads it in a table or log line."""
    return name + (" [unpinned: the noisy variant]" if NOISY_VARIANT in name else "")


def parse_name(name):
    segments = name.split("/")
    family, params, flags, control = segments[0], {}, [], {}
    positional = 0
    for segment in segments[1:]:
        key, sep, value = segment.partition(":")
        if sep and key:
            (control if key in _RUN_CONTROL_KEYS else params)[key] = value
        elif as_number(segment) is not None:
            params["arg%d" % positional] = segment
            positional += 1
        elif segment:
            flags.append(segment)
    return BenchmarkName(family, params, tuple(flags), control)


def as_number(text):
    """`text` as a finite float, or None: what can go on a numeric axis."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def describe(params, skip=()):
    """Short human label for a set of parameters: 'parallelism=2 threads=20'."""
    items = params.items() if isinstance(params, dict) else params
    return " ".join("%s=%s" % (k, v) for k, v in items if k not in skip) or "(default)"

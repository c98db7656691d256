"""The history's change stamp (schema version 7, schema.CHANGES): a random value that every
committed write replaces, in the write's own transaction (schema.new_change, which each
engine runs last in its transaction()). Whatever is computed from the history (the
dashboard's pages, the noise floors it learns) is kept under the stamp read before it was
computed, and is good for exactly as long as the history's stamp is that one: a reader
that sees the stamp sees every write before it.

    stamp = changes.change_stamp(conn)  # the same stamp: nothing was written since
"""

from perfscale.history.connection import HistoryError


def change_stamp(conn):
    """The stamp of the last committed write to the history open as `conn`."""
    with conn._errors():
        rows = conn.engine.execute("SELECT stamp, changes FROM perfscale_changes")
    if len(rows) != 1:  # written by no perfscale: a row deleted or added by hand
        raise HistoryError("%s: table perfscale_changes holds %d rows, not 1 (changed by "
                           "hand?)" % (conn.name, len(rows)))
    return "%d-%s" % (rows[0]["changes"], rows[0]["stamp"])

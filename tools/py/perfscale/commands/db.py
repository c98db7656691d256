"""`tools/perfscale db`: a local PostgreSQL for a trial or a small lab.

    tools/perfscale db start DIR     initdb (once) and start; prints the URLs
    tools/perfscale db stop DIR      stop the server DIR holds (by its PID)

The cluster's users, roles and password file: perfscale.history.cluster.
"""

import argparse
import subprocess
import sys

from perfscale.history import cluster, store


def main(argv):
    parser = argparse.ArgumentParser(
        prog="tools/perfscale db",
        description="Start or stop a local PostgreSQL cluster for a shared history "
                    "(docs/fleet-history.md).")
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("directory", metavar="DIR", help="the cluster's folder")
    args = parser.parse_args(argv)
    action, directory = args.action, args.directory
    try:
        if action == "stop":
            pid = cluster.stop(directory)
            print("db: %s" % ("stopped the server (pid %d)" % pid if pid else
                              "no server running in %s" % directory))
            return 0
        state = cluster.start(directory)
    except (cluster.DbError, OSError, subprocess.CalledProcessError, store.HistoryError) as err:
        print("db: %s" % err, file=sys.stderr)
        return 2
    print("db: PostgreSQL running in %s (pid %d); passwords in %s:" % (
        directory, state["pid"], cluster.pgpass_path(directory)))
    print("  export PGPASSFILE=%s" % cluster.pgpass_path(directory))
    for role, text in ((cluster.WRITER, "writer (nightly, calibrate, sync)"),
                       (cluster.READER, "reader (plot, report)"),
                       (cluster.OWNER, "owner (import, grants)")):
        print("  %-34s --history %s" % (text, state["urls"][role]))
    print("url: %s" % state["urls"][cluster.WRITER])
    return 0

"""`tools/perfscale run`: build and run the suite (perfscale.suite.runner does both)."""

import sys

from perfscale.suite import runner


def main(argv):
    if any(a in ("-h", "--help") for a in argv[:argv.index("--") if "--" in argv else None]):
        print("\n\n".join(runner.__doc__.split("\n\n")[1:3]))
        return 0
    try:
        return runner.run_suite(runner.parse_args(argv)).status
    except runner.UsageError as err:
        print(err, file=sys.stderr)
        return 2
    except runner.BuildError as err:
        print("perfscale run: %s" % err, file=sys.stderr)
        return err.status
    except OSError as err:  # bazel itself missing or not executable
        print("perfscale run: cannot start %s: %s" % (err.filename or "a build step",
                                                      err.strerror or err), file=sys.stderr)
        return 127

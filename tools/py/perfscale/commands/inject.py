"""`tools/perfscale inject ARGS`: the syscall injector (perfscale.suite.inject), built
and run in the foreground."""

import sys

from perfscale.suite import inject, runner


def main(argv):
    """Builds //tools/inject:inject and runs it with `argv` (tools/perfscale ran
    tools/setup): the program's output is ours, its exit status our return value (128 + N
    when signal N killed it). SIGTERM, SIGINT and SIGHUP sent to this process are passed
    on to it, so it switches off and says so; it dies with this process (PDEATHSIG)."""
    try:
        binary = runner.build_target(inject.INJECT_TARGET)
    except runner.BuildError as err:
        print("perfscale inject: %s" % err, file=sys.stderr)
        return err.status
    return inject.run_passing_signals([binary] + [str(arg) for arg in argv])

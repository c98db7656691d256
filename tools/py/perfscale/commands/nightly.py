"""`tools/perfscale nightly`: run the suite, keep it in the history, fail on a regression.

    tools/perfscale nightly [--repetitions N] [--history DB] [--baseline RUN_ID]
                            [--report-dir DIR] [--config NAME] [--no-plots]
                            [--alpha A] [--threshold PCT] [--min-repetitions N]
                            [--run-cmd CMD | --guest KERNEL [--guest-cpus N]]
                            [-- RUN_ARGS...]

Runs the suite as `tools/perfscale run --repetitions N RUN_ARGS` would (perfscale.suite.runner,
interleaved repetitions, into DIR/<UTC time>/results.json), compares the result with the
baseline, which is the last runs (up to 8) of the same lineage (host, online CPUs, config)
that passed, or the run named by --baseline, records the run in the history, and writes
DIR/<UTC time>/nightly.md (+ .html, the plots).

The config is RUN_ARGS unless --config names it: runs with another config, host or CPU
count are never compared. --config lets a deliberate change of RUN_ARGS (say, more
breakpoints) be judged against the usual runs.

Each benchmark is judged against its noise floor (`tools/perfscale calibrate`, else the
lineage's history); suspects are rerun alone, interleaved, and judged on the pooled data
before the alarm (--confirm-rounds, --confirm-budget, --ci-target).

Each regression opens or joins the alert of its change, or attaches to it on later nights
(`tools/perfscale alerts`, docs/dashboard.md): benchmarks of an acknowledged alert are
judged against the new level and pass "within alert #N (acknowledged)".

Exit 0: no regression, or the first run of its lineage. 1: a regression, benchmarks named.
2: the run failed, produced unusable results or could not be judged (nothing recorded),
or bad history/baseline. The binary runs under perfscale.suite.guard: killing nightly
kills it; a run killed before its report is never a baseline. --run-cmd runs the suite
with another command instead (say `tools/perfscale vm --kernel K --cpus 4 -- run`): it
gets run's options (--repetitions N --out FILE RUN_ARGS) and may print `results: FILE`
last; PERFSCALE_BINARY stands in for the binary alone (see perfscale.suite.runner). --guest KERNEL
runs it as `tools/perfscale vm --kernel KERNEL --clock instructions -- run` would: the
kernel under test booted in QEMU and timed in guest instructions, which a noisy host
cannot move (perfscale.gate.comparability); such runs are their own lineage.
"""

import argparse
import dataclasses
import os

from perfscale import options
from perfscale.gate import confirm
from perfscale.history import spool
from perfscale.suite import nightly


def parse_args(argv):
    ours, run_args = options.split_run_args(argv)
    parser = argparse.ArgumentParser(
        prog="tools/perfscale nightly",
        description="Run the suite, record it, compare with the baseline; exit 1 on a "
                    "regression. Arguments after -- go to `tools/perfscale run`.")
    parser.add_argument("--repetitions", type=int, default=nightly.DEFAULT_REPETITIONS,
                        metavar="N",
                        help="interleaved repetitions (default %(default)s)")
    options.add_lineage_options(parser, "name of the configuration (default: the run "
                                "arguments)", "a command that runs the suite instead (it "
                                "gets run's options, --repetitions N --out FILE RUN_ARGS; "
                                "default: $PERFSCALE_RUN_CMD, else the suite runs here)")
    parser.add_argument("--baseline", type=int, metavar="RUN_ID",
                        help="compare with this run of the history instead of the latest "
                        "passing run of the same lineage")
    parser.add_argument("--report-dir",
                        default=os.path.join(nightly.REPO_ROOT, "results", "nightly"),
                        metavar="DIR", help="where each run's folder goes "
                        "(default results/nightly)")
    parser.add_argument("--no-plots", action="store_true", help="report without pictures")
    parser.add_argument("--spool", default=spool.default_dir(nightly.REPO_ROOT), metavar="DIR",
                        help="where a run waits while the --history server cannot be "
                        "reached (default results/spool; `tools/perfscale history sync` "
                        "stores it later)")
    parser.add_argument("--history-timeout", type=float,
                        default=nightly.DEFAULT_HISTORY_TIMEOUT_S, metavar="S",
                        help="seconds one statement to a history server may go unanswered "
                        "before the run is spooled as for a server that is gone (default "
                        "%(default)s)")
    parser.add_argument("--confirm-rounds", type=int, default=confirm.DEFAULT_ROUNDS,
                        metavar="N", help="reruns of the suspects before raising the alarm "
                        "(default %(default)s; 0: judge the first run alone)")
    parser.add_argument("--confirm-budget", type=float, default=confirm.DEFAULT_BUDGET_S,
                        metavar="S", help="seconds the reruns may take (default %(default)s)")
    parser.add_argument("--ci-target", type=float, default=100 * confirm.DEFAULT_CI_TARGET,
                        metavar="PCT", help="rerun until each suspect's interval is this "
                        "narrow, half-width in percent (default %(default)s)")
    options.add_gate_options(parser)
    args = parser.parse_args(ours)
    options.check_lineage_options(parser, args)
    options.check_gate_options(parser, args)
    if args.repetitions < 1:
        parser.error("--repetitions must be at least 1")
    if args.confirm_rounds < 0:
        parser.error("--confirm-rounds must not be negative")
    if not args.history_timeout > 0:
        parser.error("--history-timeout must be positive")
    if not args.confirm_budget > 0 or not args.ci_target > 0:
        parser.error("--confirm-budget and --ci-target must be positive")
    options.check_run_args(parser, args, run_args)
    return args, run_args


def main(argv):
    args, run_args = parse_args(argv)
    settings = nightly.Settings(**{field.name: getattr(args, field.name)
                                   for field in dataclasses.fields(nightly.Settings)})
    return nightly.run(settings, run_args)

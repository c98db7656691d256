"""The options several commands share, declared and checked once: argparse stays in the
command layer (docs/python-tools.md, 'The layer rule'), so the library never sees a
parser; a command hands it typed values (suite.nightly.Settings, gate.stats.Options,
parity.common.Settings, suite.trials.Settings) or the plain fields it names.

This module is not a command (it has no main): the commands import it as they import the
library, and it imports only the library.
"""

import argparse
import os

from perfscale.gate import stats
from perfscale.labs import tokens
from perfscale.parity import common
from perfscale.suite import inject, nightly, runner
from perfscale.vm import kernel, qemu

# What every command that takes a kernel (vm --kernel, vm kernel, lava job --kernel,
# bisect --kernels, nightly/calibrate/trials --guest) says one is.
KERNEL_HELP = kernel.KINDS

# The one default of every command's --history (nightly, calibrate, trials, history, kcidb).
DEFAULT_HISTORY = os.path.join(runner.REPO_ROOT, "results", "history.sqlite")
HISTORY_HELP = ("history: an SQLite file (default %s), a postgresql:// URL or a libpq "
                "service (service=NAME); docs/fleet-history.md"
                % os.path.relpath(DEFAULT_HISTORY, runner.REPO_ROOT))


def split_run_args(argv):
    """(our arguments, those after -- for `tools/perfscale run`)."""
    if "--" in argv:
        return argv[:argv.index("--")], argv[argv.index("--") + 1:]
    return argv, []


def add_history_option(parser, help_text=HISTORY_HELP):
    """--history DB, defaulting to DEFAULT_HISTORY."""
    parser.add_argument("--history", default=DEFAULT_HISTORY, metavar="DB", help=help_text)


def add_lineage_options(parser, config_help, run_cmd_help, history_help=HISTORY_HELP):
    """--history, --config, --run-cmd and --guest: what nightly, calibrate and trials
    share (check_lineage_options checks them)."""
    add_history_option(parser, history_help)
    parser.add_argument("--config", metavar="NAME", help=config_help)
    parser.add_argument("--run-cmd", metavar="CMD", help=run_cmd_help)
    parser.add_argument("--guest", metavar="KERNEL",
                        help="run the suite in KERNEL (%s; docs/vm.md) booted in QEMU on its "
                        "instruction clock: timed in guest instructions, which the host's "
                        "load cannot move (docs/gate.md, 'A clock the host cannot move')"
                        % KERNEL_HELP)
    parser.add_argument("--guest-cpus", type=int, metavar="N",
                        help="the guest's vCPUs (default: this host's CPUs)")


def check_lineage_options(parser, args):
    if args.guest is not None and args.run_cmd:
        parser.error("--guest runs the suite through `tools/perfscale vm`; --run-cmd names "
                     "another runner: give one of them")
    if args.guest is not None and not args.guest.strip():
        parser.error("--guest needs a kernel: a vmlinuz path or debian:6.12-cloud, ...")
    if args.guest_cpus is not None and args.guest is None:
        parser.error("--guest-cpus sizes the --guest kernel's machine: it needs --guest")
    if args.guest_cpus is not None and not 1 <= args.guest_cpus <= qemu.MAX_CPUS:
        parser.error("--guest-cpus must be in 1..%d, got %d" % (qemu.MAX_CPUS, args.guest_cpus))


def check_run_args(parser, args, run_args):
    """Refuses RUN_ARGS that `run` would refuse, or that are ours to set (unless an
    external --run-cmd takes them; --guest hands them to `run` in the guest)."""
    if nightly.runner_command(args) and args.guest is None:
        return
    check_suite_args(parser, run_args)


def check_suite_args(parser, run_args):
    """Refuses RUN_ARGS that `run` would refuse, or that the command (parser.prog) sets
    itself: --repetitions, --out, --plan."""
    try:
        options = runner.parse_args(run_args)
        runner.check_family(options.family)
    except runner.UsageError as err:
        parser.error("after --: %s" % err)
    own = [flag for flag, given in (("--repetitions", options.repetitions),
                                    ("--out", options.out), ("--plan", options.plan)) if given]
    if own:
        parser.error("after --: %s %s set by %s itself" % (
            ", ".join(own), "is" if len(own) == 1 else "are", parser.prog))


def add_gate_options(parser, floor_default=stats.DEFAULT_BETWEEN_RUNS_FLOOR_PCT,
                     floor_default_text="%(default)s"):
    """The options that define a regression (--alpha, --threshold, --min-repetitions,
    --between-runs-floor):
    compare and nightly take the same ones. A command whose floor depends on something
    else (series: the clock) gives its own default (None: chosen later) and its words."""
    parser.add_argument("--alpha", type=float, default=stats.DEFAULT_ALPHA,
                        help="significance level of the U test (default %(default)s)")
    parser.add_argument("--threshold", type=float, default=stats.DEFAULT_THRESHOLD_PCT,
                        metavar="PCT", help="smallest slowdown of the median real time "
                        "that counts, in percent (default %(default)s)")
    parser.add_argument("--min-repetitions", type=int,
                        default=stats.DEFAULT_MIN_REPETITIONS, metavar="N",
                        help="fewest repetitions on each side for the U test "
                        "(default %(default)s, as compare.py recommends)")
    parser.add_argument("--between-runs-floor", type=float, default=floor_default,
                        metavar="PCT",
                        help="a benchmark with no calibrated noise floor is slower only "
                        "past this change of its median, in percent: how far whole runs "
                        "of one build move on a shared machine, which the repetitions of "
                        "one run do not show (default %s; docs/gate.md)"
                        % floor_default_text)


def check_gate_options(parser, args):
    if not 0 < args.alpha < 1:
        parser.error("--alpha must be between 0 and 1")
    if not 0 <= args.threshold < float("inf"):  # NaN fails too
        parser.error("--threshold must be a number of percent, 0 or more (an infinite "
                     "threshold would pass every slowdown)")
    if args.min_repetitions < 2:
        parser.error("--min-repetitions must be at least 2 (the U test needs two values)")
    if not 0 <= args.between_runs_floor < float("inf"):
        parser.error("--between-runs-floor must be a number of percent, 0 or more")


def gate_options(args):
    """The gate options add_gate_options declared, as the gate's own typed value."""
    return stats.Options(alpha=args.alpha, threshold_pct=args.threshold,
                         min_repetitions=args.min_repetitions,
                         between_runs_floor_pct=args.between_runs_floor)


def add_strength_option(parser, default):
    """--inject-events E, as calibrate and trials take it."""
    parser.add_argument("--inject-events", type=int, default=default, metavar="E",
                        help="injector strength: events per CPU and syscall tracepoint "
                        "(default %(default)s)")


def check_strength(parser, events, flag="--inject-events"):
    if not 1 <= events <= inject.MAX_EVENTS:
        parser.error("%s must be in 1..%d" % (flag, inject.MAX_EVENTS))


def parity_parser(description, default_rounds=5):
    """The parser of `tools/perfscale parity FAMILY`'s common options; a family adds its
    own before parity_options parses."""
    parser = argparse.ArgumentParser(prog="tools/perfscale parity", description=description)
    parser.add_argument("--rounds", type=int, default=default_rounds,
                        help="interleaved rounds of each case (default %(default)s)")
    parser.add_argument("--tolerance", type=float, default=10.0,
                        help="allowed |ours/reference - 1| in percent (default %(default)s)")
    parser.add_argument("--only", default="",
                        help="run only cases whose label contains this text")
    parser.add_argument("--json", default="", help="also write the table as JSON here")
    return parser


def parity_options(argv, parser):
    """(parity.common.Settings, the parsed namespace) from parity_parser's `parser`."""
    args = parser.parse_args(argv)
    if args.rounds < 2 or args.rounds > 1000:
        parser.error("--rounds must be in 2..1000")
    if args.tolerance <= 0:
        parser.error("--tolerance must be positive")
    return common.Settings(rounds=args.rounds, tolerance=args.tolerance, only=args.only,
                           json=args.json), args


def parity_settings(argv, description, default_rounds=5):
    """`tools/perfscale parity FAMILY`'s common options, as parity.common.Settings."""
    return parity_options(argv, parity_parser(description, default_rounds))[0]


# The dashboard's triage token: `serve` starts with it, `alerts set --dashboard` sends it.
TOKEN_ENV = "PERFSCALE_TRIAGE_TOKEN"
MIN_TOKEN = 16  # characters: a token a person could guess is no token


def read_token(path):
    """The triage token from the file `path`, else $PERFSCALE_TRIAGE_TOKEN; None when
    neither gives one. ValueError (never holding the token) for one that is too short or
    that no HTTP header can carry (perfscale.labs.tokens)."""
    token = tokens.read(path, TOKEN_ENV)
    if not token and not path:
        return None
    if len(token) < MIN_TOKEN:
        raise ValueError("the triage token must be at least %d characters" % MIN_TOKEN)
    return token

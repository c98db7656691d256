"""`tools/perfscale parity breakpoint`: its options (perfscale.options.parity_parser, and
the cases a user chooses); the parity itself is perfscale.parity.breakpoint."""

from perfscale import options
from perfscale.parity import breakpoint

# What each case option takes: its fields' names, the range of each, and the default of
# the last (the repeat) when it is left out.
_THREAD = (("breakpoints", 0, 64), ("parallelism", 1, 4096), ("threads", 1, 100000),
           ("repeat", 1, 1000000))
_ENABLE = (("passive", 0, 1000000), ("active", 0, 4096), ("repeat", 1, 10000000))


def _case(text, fields, default_repeat, option, parser):
    parts = text.split(",")
    if len(parts) not in (len(fields) - 1, len(fields)):
        parser.error("%s takes %s (the last optional), got '%s'"
                     % (option, ",".join(name.upper() for name, _, _ in fields), text))
    values = []
    for part, (name, low, high) in zip(parts, fields):
        try:
            value = int(part)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            parser.error("%s: %s must be an integer in %d..%d, got '%s'"
                         % (option, name, low, high, part))
        values.append(value)
    if len(values) < len(fields):
        values.append(default_repeat)
    return tuple(values)


def main(argv):
    parser = options.parity_parser(breakpoint.DESCRIPTION)
    parser.add_argument("--thread", action="append", default=[], metavar="B,P,T[,REPEAT]",
                        help="a thread-churn case of your own: breakpoints, parallelism, "
                             "threads per batch and batches (default %d); repeatable. With "
                             "--thread or --enable only the cases given run"
                             % breakpoint.THREAD_REPEAT)
    parser.add_argument("--enable", action="append", default=[], metavar="PASSIVE,ACTIVE[,REPEAT]",
                        help="an enable/disable case of your own: passive and active threads "
                             "and toggles (default 5000); repeatable")
    settings, args = options.parity_options(argv, parser)
    threads = [_case(text, _THREAD, breakpoint.THREAD_REPEAT, "--thread", parser)
               for text in args.thread]
    enables = [_case(text, _ENABLE, 5000, "--enable", parser) for text in args.enable]
    if not threads and not enables:
        return breakpoint.run(settings)
    return breakpoint.run(settings, thread_cases=threads, enable_cases=enables)

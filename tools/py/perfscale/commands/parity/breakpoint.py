"""`tools/perfscale parity breakpoint`: its options (perfscale.options.parity_settings); the
parity itself is perfscale.parity.breakpoint."""

from perfscale import options
from perfscale.parity import breakpoint


def main(argv):
    return breakpoint.run(options.parity_settings(argv, breakpoint.DESCRIPTION))

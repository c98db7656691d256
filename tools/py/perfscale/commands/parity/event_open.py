"""`tools/perfscale parity event_open`: its options (perfscale.options.parity_settings); the
parity itself is perfscale.parity.event_open."""

from perfscale import options
from perfscale.parity import event_open


def main(argv):
    return event_open.run(options.parity_settings(argv, event_open.DESCRIPTION))

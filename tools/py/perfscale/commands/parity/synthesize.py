"""`tools/perfscale parity synthesize`: its options (perfscale.options.parity_settings); the
parity itself is perfscale.parity.synthesize."""

from perfscale import options
from perfscale.parity import synthesize


def main(argv):
    return synthesize.run(options.parity_settings(argv, synthesize.DESCRIPTION))

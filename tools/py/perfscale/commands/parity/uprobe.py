"""`tools/perfscale parity uprobe`: its options (perfscale.options.parity_settings); the
parity itself is perfscale.parity.uprobe."""

from perfscale import options
from perfscale.parity import uprobe


def main(argv):
    return uprobe.run(options.parity_settings(argv, uprobe.DESCRIPTION))

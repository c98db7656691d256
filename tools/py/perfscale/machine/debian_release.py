"""Debian's kernel releases, spelled as `uname -r` and the package names spell them, and
the `debian:` names perfscale boots them by: one grammar for `vm` (perfscale.vm.debian,
which finds them in the archive) and the alert pages (perfscale.plots.alert_view, which
lists the builds between a good and a bad kernel for `bisect`).

    5.10.0-46-cloud-amd64        by ABI (5.10, 6.1)             debian:5.10.0-46-cloud
    6.12.118+deb12-amd64         by stable release, for Debian 12  debian:6.12.118
    7.3.4+deb13.1-rt-amd64       ... and a rebuild of it        debian:7.3.4-rt
    7.3-cloud-amd64              experimental: the line alone (its package version says
                                 which release candidate: debian:7.3-rc7-cloud)
"""

import re

# ASCII: \d and [0-9] alike would otherwise take Arabic-Indic digits, the same kernel
# under a label of its own.
RELEASE = (r"(?P<line>[0-9]+\.[0-9]+)(?:\.0-(?P<abi>[0-9]+)"
           r"|\.(?P<patch>[0-9]+)\+deb(?P<rebuild>[0-9]+(?:\.[0-9]+)?))?")
FLAVOUR = r"(?:(?P<flavour>rt|cloud)-)?amd64"
UNAME = re.compile(RELEASE + "-" + FLAVOUR, re.ASCII)


def name(line, abi=None, patch=None, flavour=""):
    """The debian: name of one build: name("5.10", abi=46, flavour="cloud")."""
    version = "%s.0-%d" % (line, abi) if abi is not None else "%s.%d" % (line, patch)
    return "debian:%s%s" % (version, "-" + flavour if flavour else "")

"""Where a kernel comes from: the one place every command that takes a kernel (`vm
--kernel`, `vm guest`, `bisect`, `lava job`, `nightly --guest`) resolves it.

A kernel is one of
    a vmlinuz (bzImage) path,
    debian:...       a Debian package (perfscale.vm.debian), fetched once and kept,
    tree:PATH[@REV]  a kernel git tree at a revision, or as it is now (perfscale.vm.tree),
                     built once per commit, config and compiler and kept,
and becomes a Kernel: the vmlinuz to boot, the label the run's JSON names it by, and what
the run's context records of where it came from.
"""

import dataclasses
import os
from typing import Dict

from perfscale.vm import cache, debian, tree
from perfscale.vm.errors import VmUsageError

KINDS = ("a vmlinuz path, %s, or tree:PATH[@REV] (a kernel git tree, built)"
         % debian.NAMES_HELP)


@dataclasses.dataclass
class Kernel:
    """A kernel ready to boot."""
    spec: str       # what the user named it by
    vmlinuz: str
    label: str      # the run's vm_kernel
    context: Dict[str, str] = dataclasses.field(default_factory=dict)  # the run's context adds


def resolve_kernel(spec):
    """The Kernel `spec` names: Debian's fetched, trees built (each once, then from the
    cache), paths checked. Raises VmError (VmUsageError for a bad name)."""
    if spec.startswith("debian:"):
        builds = debian.archive_builds()
        vmlinuz = debian.fetch(debian.choose(spec, builds))
        return Kernel(spec, vmlinuz, "%s (%s)" % (spec, os.path.basename(vmlinuz)),
                      context_of(vmlinuz))
    if spec.startswith("tree:"):
        vmlinuz = tree.build(tree.parse(spec))
        return Kernel(spec, vmlinuz, "%s (%s)" % (spec, os.path.basename(vmlinuz)),
                      context_of(vmlinuz))
    return kernel_at(spec)


def kernel_at(vmlinuz, spec=None):
    """The Kernel of a vmlinuz path, or of the one `spec` was already resolved to (`vm`
    hands its guests the one it resolved, so that a tree changed meanwhile is not built
    again under them): a kept kernel keeps its label and context."""
    if not os.path.isfile(vmlinuz):
        raise VmUsageError("--kernel: no such kernel image '%s' (%s)" % (vmlinuz, KINDS))
    vmlinuz = os.path.abspath(vmlinuz)
    named = spec and spec.startswith(("debian:", "tree:"))
    label = "%s (%s)" % (spec, os.path.basename(vmlinuz)) if named else vmlinuz
    return Kernel(spec or vmlinuz, vmlinuz, label, context_of(vmlinuz))


def name_problem(spec):
    """What is wrong with how `spec` is written, found without the archive or a build
    (a command says it before installing anything); None when nothing is."""
    if spec.startswith("debian:"):
        return debian.name_problem(spec)
    if spec.startswith("tree:"):
        try:
            tree.split_spec(spec)
        except VmUsageError as err:
            return str(err)
        return None
    return None if os.path.isfile(spec) else "--kernel: no such kernel image '%s' (%s)" % (
        spec, KINDS)


def context_of(vmlinuz):
    """What the run's context records of a kept kernel's origin ({} for a bare path)."""
    return {k: str(v) for k, v in cache.about(vmlinuz).get("context", {}).items()}


def listing(builds, cache_root=None):
    """`vm kernel`'s table: every release line the archive holds (its newest build), with
    the suite, the packaging, the flavours and whether it is already kept, as rows."""
    newest = debian.newest_of_each_line(builds)
    lines = sorted({(line, rc) for line, rc, _ in newest},
                   key=lambda k: (tuple(int(n) for n in k[0].split(".")), k[1]))
    rows = [("name", "newest", "suite", "packaging", "flavours", "kept")]
    for line, rc in lines:
        generic = newest.get((line, rc, "")) or next(
            b for (l, r, _), b in sorted(newest.items()) if (l, r) == (line, rc))
        flavours = [f for f in debian.FLAVOURS if (line, rc, f) in newest]
        kept = [("-" + f if f else "generic") for f in flavours
                if cache.vmlinuz_in(cache.kernel_dir(newest[line, rc, f].cache_name,
                                                     cache_root))]
        rows.append(("debian:%s%s" % (line, "-rc" if rc else ""), generic.version + (
            " (%s)" % generic.debian_version if generic.rc else ""),
                     debian.suite_name(generic.suite), "split" if generic.split else "image",
                     " ".join(("-" + f if f else "generic") for f in flavours),
                     " ".join(kept) or "-"))
    return rows

"""Where perfscale keeps what it fetches and builds: ~/.cache/perfscale (PERFSCALE_CACHE
moves it, as it does for tools/debian-archive and tools/setup).

Each kernel is a folder of its own under CACHE/kernels, written whole or not at all:
boot/vmlinuz-RELEASE, boot/config-RELEASE (where known: the guest's config digest reads
it) and kernel.json (what it was made from: a Debian package, a tree's commit).
"""

import json
import os
import shutil

from perfscale.vm.errors import VmError

CACHE = os.environ.get("PERFSCALE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                           "perfscale")
ABOUT = "kernel.json"


def kernel_dir(name, cache=None):
    return os.path.join(cache or CACHE, "kernels", name)


def vmlinuz_in(directory):
    """The one boot/vmlinuz-* of a kept kernel's folder; None when it has none."""
    boot = os.path.join(directory, "boot")
    try:
        kernels = [n for n in os.listdir(boot) if n.startswith("vmlinuz-")]
    except OSError:
        return None
    return os.path.join(boot, kernels[0]) if len(kernels) == 1 else None


def about(vmlinuz):
    """What kernel.json says of the kept kernel `vmlinuz` is in ({} for any other)."""
    try:
        with open(os.path.join(os.path.dirname(os.path.dirname(vmlinuz)), ABOUT)) as f:
            found = json.load(f)
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def make_room(directory, what):
    """Creates `directory`'s parent, or says that HOME cannot hold `what`."""
    try:
        os.makedirs(os.path.dirname(directory), exist_ok=True)
    except OSError as err:
        raise VmError("cannot keep %s in %s (%s): set HOME (or PERFSCALE_CACHE) to a folder "
                      "you can write" % (what, os.path.dirname(directory),
                                         err.strerror or err)) from None


def keep_kernel(directory, vmlinuz, release, config=None, about_it=None):
    """Keeps `vmlinuz` (and its `config`) as the kernel folder `directory`, whole or not at
    all: it is assembled beside and renamed into place. Returns the kept vmlinuz."""
    partial = directory + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        os.makedirs(os.path.join(partial, "boot"))
        shutil.copyfile(vmlinuz, os.path.join(partial, "boot", "vmlinuz-" + release))
        if config:
            shutil.copyfile(config, os.path.join(partial, "boot", "config-" + release))
        if about_it:
            with open(os.path.join(partial, ABOUT), "w") as f:
                json.dump(about_it, f, indent=2, sort_keys=True)
                f.write("\n")
        shutil.rmtree(directory, ignore_errors=True)
        os.replace(partial, directory)
    except OSError as err:
        shutil.rmtree(partial, ignore_errors=True)
        raise VmError("cannot keep the kernel in %s: %s" % (directory, err.strerror or err))
    return os.path.join(directory, "boot", "vmlinuz-" + release)

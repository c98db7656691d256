"""What stops a guest, in words a user can act on: the errors every part of vm/ raises."""


class VmError(Exception):
    """What stopped a guest run, in words a user can act on."""


class VmUsageError(VmError):
    """A bad vm argument (exit 2, as usage errors are everywhere else)."""


class KernelDidNotBoot(VmError):
    """The kernel never reached the guest's /init (it panicked, hung or QEMU refused it):
    the kernel's fault, or the machine's it was asked to boot on, not the benchmark's. A
    caller measuring several kernels skips this one with the reason."""


# `vm guest`'s exit status for a kernel that did not boot: automake's "skipped", which no
# benchmark binary returns, so `vm` and whoever runs it can tell a skip from a failure.
DID_NOT_BOOT_STATUS = 77

"""Guests in QEMU: kernels to boot, the initramfs, QEMU itself (`tools/perfscale vm`)."""

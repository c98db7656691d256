"""Runs in a kernel booted in QEMU, what their figures may be compared on, kernel bisection."""

"""Holds hardware breakpoint slots as another process would (a debugger, `perf record -e
mem:ADDR -a`): N CPU-wide breakpoints on every online CPU, until stdin closes.

    hold_breakpoints.py N    prints "held N" once they are all open; exit 2 if it cannot

CPU-wide (pid -1), because a task's own breakpoints only take slots from that task: the
kernel counts another task's per-task breakpoints against nobody else. Needs root or
perf_event_paranoid <= 0.
"""

import ctypes
import os
import struct
import sys

PERF_TYPE_BREAKPOINT = 5
HW_BREAKPOINT_W = 2
HW_BREAKPOINT_LEN_1 = 1
SYS_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}[os.uname().machine]
ATTR_SIZE = 112  # PERF_ATTR_SIZE_VER6

_libc = ctypes.CDLL(None, use_errno=True)
# Distinct bytes of our own that nothing writes: the breakpoints never fire.
_watched = ctypes.create_string_buffer(64)

def breakpoint_attr(address):
    attr = bytearray(ATTR_SIZE)
    struct.pack_into("=IIQ", attr, 0, PERF_TYPE_BREAKPOINT, ATTR_SIZE, 0)
    struct.pack_into("=Q", attr, 32, 0)  # sample_period
    # flags (offset 40): 0, counting; bp_type at 52, bp_addr at 56, bp_len at 64
    struct.pack_into("=I", attr, 52, HW_BREAKPOINT_W)
    struct.pack_into("=QQ", attr, 56, address, HW_BREAKPOINT_LEN_1)
    return (ctypes.c_char * ATTR_SIZE).from_buffer(attr)

def main(argv):
    count = int(argv[1])
    fds = []
    for cpu in range(os.cpu_count()):
        for i in range(count):
            attr = breakpoint_attr(ctypes.addressof(_watched) + i)
            fd = _libc.syscall(SYS_PERF_EVENT_OPEN, attr, -1, cpu, -1, 0)
            if fd < 0:
                err = ctypes.get_errno()
                print("hold_breakpoints: breakpoint %d on CPU %d: %s"
                      % (i + 1, cpu, os.strerror(err)), file=sys.stderr)
                return 2
            fds.append(fd)
    print("held %d" % count, flush=True)
    sys.stdin.read()
    for fd in fds:
        os.close(fd)
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""`tools/perfscale vm`: run the suite in a kernel booted in QEMU (KVM when it works, else
TCG); several --cpus sizes give one result file each.

    tools/perfscale vm --kernel K --cpus N[,N...]
                       [--mem MIB] [--timeout S] [--append ARGS] [--tcg-threads multi|single]
                       [--clock real|instructions] -- run [RUN OPTIONS] [-- FLAGS...]

K: a vmlinuz path, debian:LINE[...][-rt|-cloud] or tree:PATH[@REV] (perfscale.vm.kernel).
Each size runs `tools/perfscale run RUN OPTIONS` with the guest as its launcher: the
binary and its flags are built as `run` builds them, then booted by `vm guest`. With
several sizes, --out FILE becomes FILE-cpusN.json. A size whose guest the kernel does not
boot is skipped with the reason; the others run, and `vm` exits 77 (skipped).

    vm kernel        lists every Debian release line the archive holds (newest build,
                     suite, packaging, flavours, whether kept)
    vm kernel K...   fetches or builds each K and prints its vmlinuz path

What the suite runner starts, and what nothing else should:
    vm guest --kernel K [--vmlinuz PATH] --cpus N [machine options] -- BINARY FLAGS...
"""

import argparse
import dataclasses
import os
import re
import signal
import subprocess
import sys

from perfscale.options import KERNEL_HELP
from perfscale.suite import runner
from perfscale.vm import cache, debian, errors, kernel, qemu


def add_machine_options(parser):
    """The guest's options after --kernel and --cpus: `vm` and `vm guest` take the same."""
    defaults = qemu.Machine("", 1)
    parser.add_argument("--mem", type=int, default=defaults.mem, metavar="MIB",
                        help="guest memory, 256..65536 (default %(default)s)")
    parser.add_argument("--timeout", type=int, default=defaults.timeout, metavar="S",
                        help="seconds a guest may take (default %(default)s)")
    parser.add_argument("--append", default=defaults.append, metavar="ARGS",
                        help="more kernel command-line arguments")
    parser.add_argument("--tcg-threads", default=defaults.tcg_threads, metavar="multi|single",
                        help="under TCG: one host thread for all vCPUs (single, the default) "
                        "or one each (multi: faster on an idle host, but guests lock up "
                        "when the kernel patches its text: docs/vm.md)")
    parser.add_argument("--clock", default=defaults.clock, metavar="real|instructions",
                        help="what the guest's clocks count: real time (the default), or "
                        "instructions (QEMU's -icount: 1 ns per guest instruction; "
                        "figures the host cannot move)")


def machine(parser, args, kernel_spec, cpus):
    """The Machine the options describe; a usage error names what is wrong with it."""
    described = qemu.Machine(kernel_spec, cpus, args.mem, args.timeout, args.append,
                             args.tcg_threads, args.clock)
    problem = qemu.machine_problem(described)
    if problem:
        parser.error(problem)
    return described


def cpu_sizes(parser, text):
    if not re.fullmatch(r"[0-9]+(,[0-9]+)*", text or ""):
        parser.error("--cpus must be a count or a list such as 2,4,8,16, got '%s'" % text)
    return [int(n) for n in text.split(",")]


def sized_out(out, cpus):
    """--out FILE for one of several sizes: FILE-cpusN.json."""
    return "%s-cpus%d.json" % (out[:-len(".json")] if out.endswith(".json") else out, cpus)


def main(argv):
    if argv[:1] == ["guest"]:
        return guest(argv[1:])
    if argv[:1] == ["kernel"]:
        return print_kernel(argv[1:])
    ours, rest = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (
        argv, [])
    parser = argparse.ArgumentParser(
        prog="tools/perfscale vm",
        usage="%(prog)s --kernel K --cpus N[,N...] [options] -- run [RUN OPTIONS] "
              "[-- FLAGS...]",
        description="Boot a kernel in QEMU (KVM when it works, else TCG) and run the suite "
                    "inside; several --cpus sizes give one result file each.")
    parser.add_argument("--kernel", metavar="K", help=KERNEL_HELP)
    parser.add_argument("--cpus", metavar="N[,N...]", help="the guest's vCPUs, 1..%d; a list "
                        "runs one guest per size" % qemu.MAX_CPUS)
    add_machine_options(parser)
    args = parser.parse_args(ours)
    if not args.kernel:
        parser.error("--kernel is required: " + KERNEL_HELP)
    machines = [machine(parser, args, args.kernel, n) for n in cpu_sizes(parser, args.cpus)]
    if rest[:1] != ["run"]:
        parser.error("expected '-- run [RUN OPTIONS]' after the vm options (the run's "
                     "options go after '-- run')")
    try:  # a bad run option is a usage error before a kernel is fetched
        options = runner.parse_args(rest[1:])
        runner.check_family(options.family)
    except runner.UsageError as err:
        print(err, file=sys.stderr)
        return 2
    # A mistyped kernel is a usage error, said before setup installs anything.
    problem = kernel.name_problem(args.kernel)
    if problem:
        print("perfscale vm: %s" % problem, file=sys.stderr)
        return 2
    status = subprocess.call([os.path.join(runner.REPO_ROOT, "tools", "setup"), "vm"])
    if status != 0:
        return status
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        # Fetched or built once, before the first guest; every guest boots that one.
        resolved = kernel.resolve_kernel(args.kernel)
    except errors.VmError as err:
        print("perfscale vm: %s" % err, file=sys.stderr)
        return 2 if isinstance(err, errors.VmUsageError) else 1
    except KeyboardInterrupt:
        return 130
    name = re.sub(r"^vmlinuz-", "", os.path.basename(resolved.vmlinuz))
    skipped = []
    for guest_machine in machines:
        guest_machine = dataclasses.replace(guest_machine, vmlinuz=resolved.vmlinuz)
        sized = options
        if len(machines) > 1 and options.out:
            sized = dataclasses.replace(options, out=sized_out(options.out, guest_machine.cpus))
        try:
            status = runner.run_suite(sized, qemu.launcher(guest_machine),
                                      "vm-%s-cpus%d" % (name, guest_machine.cpus)).status
        except runner.UsageError as err:
            print(err, file=sys.stderr)
            return 2
        except runner.BuildError as err:
            print("perfscale run: %s" % err, file=sys.stderr)
            return err.status
        except KeyboardInterrupt:
            return 130
        if status == errors.DID_NOT_BOOT_STATUS:
            skipped.append(guest_machine.cpus)  # `vm guest` said why
            continue
        if status != 0:
            return status
    if skipped:
        print("perfscale vm: skipped --cpus %s: %s did not boot there (the reason is above)"
              % (",".join(map(str, skipped)), args.kernel), file=sys.stderr)
        return errors.DID_NOT_BOOT_STATUS
    return 0


def guest(argv):
    """`vm guest`: one guest running BINARY FLAGS (the suite runner's launcher)."""
    parser = argparse.ArgumentParser(prog="tools/perfscale vm guest")
    parser.add_argument("--kernel", required=True, metavar="K", help=KERNEL_HELP)
    parser.add_argument("--vmlinuz", default="", metavar="PATH",
                        help="the vmlinuz `vm` resolved K to: booted as it is")
    parser.add_argument("--cpus", type=int, required=True, metavar="N")
    add_machine_options(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    guest_machine = dataclasses.replace(machine(parser, args, args.kernel, args.cpus),
                                        vmlinuz=args.vmlinuz)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("vm guest needs -- BINARY FLAGS...")
    # So that a killed `vm` still stops its guest (Guest.stop runs in a finally).
    signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        return qemu.run_guest(guest_machine, command)
    except errors.KernelDidNotBoot as err:
        print("perfscale vm: %s" % err, file=sys.stderr)
        return errors.DID_NOT_BOOT_STATUS
    except errors.VmError as err:
        print("perfscale vm: %s" % err, file=sys.stderr)
        return 2 if isinstance(err, errors.VmUsageError) else 1
    except KeyboardInterrupt:
        print("perfscale vm: interrupted; the guest is stopped", file=sys.stderr)
        return 130


def print_kernel(argv):
    """`vm kernel`: every Debian release line the archive holds; `vm kernel K...`: each
    kernel fetched or built, its vmlinuz path printed."""
    parser = argparse.ArgumentParser(
        prog="tools/perfscale vm kernel",
        description="Without K: list every Debian kernel release line the archive holds. "
                    "With K: fetch (or build) each and print its vmlinuz path.")
    parser.add_argument("specs", nargs="*", metavar="K", help=KERNEL_HELP)
    args = parser.parse_args(argv)
    try:
        if not args.specs:
            rows = kernel.listing(debian.archive_builds())
            widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
            for row in rows:
                print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
            print("(each also as one build: debian:5.10.0-N, debian:6.12.N, debian:LINE-rcN; "
                  "kept under %s)" % os.path.join(cache.CACHE, "kernels"))
            return 0
        for spec in args.specs:
            print(kernel.resolve_kernel(spec).vmlinuz, flush=True)
    except errors.VmError as err:
        print("perfscale vm: %s" % err, file=sys.stderr)
        return 2 if isinstance(err, errors.VmUsageError) else 1
    except KeyboardInterrupt:
        return 130
    return 0


def _terminate_as_interrupt(signum, frame):
    raise KeyboardInterrupt

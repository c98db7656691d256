"""Stands in for the family binary in the nightly tests (PERFSCALE_BINARY): copies a
recorded result file to where `--benchmark_out=FILE` says.

Also stands in for a whole external runner (nightly --run-cmd): given `--repetitions N
--out FILE`, it writes FILE and prints `results: FILE` last, as `tools/perfscale run` does.
Its own flags (after run's --) choose what happens instead of benchmarks:
  --fixture=NAME     copy testing/py/data/NAME (default clean.json)
  --host=H --cpus=N  rewrite the context, as if run on another machine
  --context=K=V      set context field K to V (repeatable): another machine identity
  --truncate         write only the first half (a writer killed mid-file)
  --fail             print an error and exit 1 without writing anything
  --hang=PIDFILE     start a child that sleeps (as a runner starts the binary), write
                     the pids of both to PIDFILE, and wait for it: a run to kill
  --confirm-fixture=NAME  the fixture to copy for the nightly's confirmation reruns
                     (their results file is confirm-N.json)
  --count_syscalls=true  (the binary's own flag, as trials give it) every repetition
                     also says it made no syscalls (syscalls/op 0)
  --inject_syscall_events=N  (the binary's own flag, as calibrate and trials give it) the
                     context says what the injector's bare loop measured: +1000 ns per
                     syscall (FAKE_INJECTOR), as the real binary records it
  --attribution=MODE  (the binary's own flag) the context's "attribution": true ->
                     counting_pass, timed, false -> off; old-timed: no "attribution"
                     but counter_sources with available counters (a run from before the
                     counting pass, timed with the counters attached)
  --refuse-injection  with --inject_syscall_events: fail as a binary whose kernel refuses
                     the injector's events does (message, exit 2, no results)
"""

import argparse
import json
import os
import subprocess
import sys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
FAKE_INJECTOR = {"injector_bare_ns": "150.0", "injector_ns": "1150.0",
                 "injector_added_ns": "1000.0", "injector_events_per_cpu": "1",
                 "injector": "1 counting events per CPU on raw_syscalls:sys_enter and "
                             "raw_syscalls:sys_exit (fake)"}


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--repetitions", "--benchmark_repetitions", type=int)
    parser.add_argument("--out")
    parser.add_argument("--benchmark_out")
    parser.add_argument("--fixture", default="clean.json")
    parser.add_argument("--host")
    parser.add_argument("--cpus")
    parser.add_argument("--context", action="append", default=[])
    parser.add_argument("--truncate", action="store_true")
    parser.add_argument("--fail", action="store_true")
    parser.add_argument("--hang")
    parser.add_argument("--confirm-fixture")
    parser.add_argument("--count_syscalls")
    parser.add_argument("--inject_syscall_events", type=int, default=0)
    parser.add_argument("--refuse-injection", action="store_true")
    parser.add_argument("--attribution")
    args, _ = parser.parse_known_args([a for a in argv if a != "--"])
    if args.inject_syscall_events and args.refuse_injection:
        print("fake_run: --inject_syscall_events: system-wide tracepoint events refused "
              "(simulated)", file=sys.stderr)
        return 2
    if args.hang:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(args.hang + ".tmp", "w", encoding="ascii") as f:
            f.write("%d %d\n" % (os.getpid(), child.pid))
        os.rename(args.hang + ".tmp", args.hang)
        return child.wait()
    out = args.out or args.benchmark_out or ""
    if args.confirm_fixture and os.path.basename(out).startswith("confirm-"):
        args.fixture = args.confirm_fixture
    if args.fail:
        print("benchmark binary crashed (simulated)", file=sys.stderr)
        return 1
    with open(os.path.join(DATA, args.fixture), encoding="utf-8") as f:
        text = f.read()
    if args.count_syscalls == "true":
        document = json.loads(text)
        for item in document["benchmarks"]:
            if item.get("run_type") == "iteration":
                item["syscalls/op"] = 0.0
        text = json.dumps(document, indent=2)
    if args.inject_syscall_events:
        document = json.loads(text)
        document["context"].update(FAKE_INJECTOR)
        text = json.dumps(document, indent=2)
    if args.attribution:
        document = json.loads(text)
        if args.attribution == "old-timed":
            document["context"]["counter_sources"] = json.dumps(
                {"ipis_sent": "ipi:ipi_send_cpu", "xcalls": "csd:csd_queue_cpu",
                 "ipis_system": "/proc/interrupts", "sys_us": "getrusage"})
        else:
            document["context"]["attribution"] = {"true": "counting_pass",
                                                  "false": "off"}.get(args.attribution,
                                                                      args.attribution)
        text = json.dumps(document, indent=2)
    if args.host or args.cpus or args.context:
        document = json.loads(text)
        document["context"].update(kv.split("=", 1) for kv in args.context)
        if args.host:
            document["context"]["host_name"] = args.host
        if args.cpus:
            document["context"]["num_online_cpus"] = args.cpus
            document["context"]["online_cpus"] = "0-%d" % (int(args.cpus) - 1)
            document["context"]["num_cpus"] = int(args.cpus)
        text = json.dumps(document, indent=2)
    if args.truncate:
        text = text[:len(text) // 2]
    with open(args.out or args.benchmark_out, "w", encoding="utf-8") as f:
        f.write(text)
    if args.out:
        print("results: %s" % args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""`tools/perfscale parity uprobe`: a uprobe that perf attaches (perf probe + perf stat)
vs the one //benchmarks:uprobe attaches, on the same loop of the same function.

`perf bench uprobe` (added to perf in 2023, after 6.1) is not the reference: it times
usleep(1000) calls with and without an empty BPF program on usleep, so the probe's
microsecond is measured inside a millisecond of sleep and its timer slack, and its
consumer is BPF where ours is a counting perf event. perf 6.1 (Debian 12) has no
`bench uprobe` at all. What perf can do on every version is attach the same kind of
probe to our function: `perf probe -x BINARY FUNCTION` makes a uprobe event in
tracefs, `perf stat -e` counts it. The reference is then our baseline row
(--uprobe_probe=none, one thread) run under `perf stat` with that probe: the same loop,
one kernel uprobe with one counting perf consumer, attached through tracefs's
uprobe_events; ours is the probe:uprobe row, attached through the uprobe PMU. Both
pay the same trap and single-step, so the ratio should be near 1; perf stat's count
must be non-zero (a probe on the wrong place would make the reference the baseline).
The uretprobe case does the same with FUNCTION%return. Needs root (perf probe writes
tracefs) and perf.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

from perfscale.parity import common

# The command's --help line (perfscale.commands.parity.uprobe).
DESCRIPTION = ("a uprobe perf attaches (perf probe + perf stat) vs //benchmarks:uprobe's, "
               "on the same loop")

FUNCTION = "perfscale_uprobe_hit_target"
CALLS = 2000


def hit_filter(probe: str) -> str:
    return "--benchmark_filter=^BM_UprobeHit/probe:%s/threads:1/manual_time$" % probe


def ours_flags(probe: str, min_time: str):
    return ["--uprobe_probe=%s" % probe, "--uprobe_threads=1", "--uprobe_calls=%d" % CALLS,
            "--uprobe_processes=0", "--uprobe_attach_probes=1", hit_filter(probe),
            "--benchmark_min_time=%ss" % min_time]


def parse_added_event(text: str) -> str:
    """The event `perf probe -a` added: 'Added new event:\\n  probe_uprobe:f  (on ...)'."""
    match = re.search(r"^\s+(\S+:\S+)\s+\(on ", text, re.MULTILINE)
    if not match:
        raise common.ParityError("perf probe added no event; it printed:\n" + text[-800:])
    return match.group(1)


def parse_stat_count(text: str, event: str) -> int:
    """The count of `event` in `perf stat -x,` output ('123,,probe_uprobe:f,...')."""
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) >= 3 and fields[2] == event:
            if not fields[0].strip().isdigit():
                raise common.ParityError("perf stat could not count %s: %s" % (event, line))
            return int(fields[0])
    raise common.ParityError("perf stat printed no count of %s:\n%s" % (event, text[-800:]))


def parse_reference(stat_file: str, event: str):
    """Reads our JSON (stdout, first in the text) and perf stat's count of the probe;
    the figure is the baseline row's usecs/hit, now paid with perf's probe on it."""
    def parse(text: str) -> float:
        start = text.find("{")
        if start < 0:
            raise common.ParityError("the binary under perf stat printed no JSON:\n" + text[-800:])
        try:
            report, _end = json.JSONDecoder().raw_decode(text[start:])
        except ValueError as err:
            raise common.ParityError("the binary under perf stat printed bad JSON (%s)" % err)
        runs = common.parse_benchmark_json(json.dumps(report), "the binary under perf stat")
        with open(stat_file) as f:
            count = parse_stat_count(f.read(), event)
        if count <= 0:
            raise common.ParityError("perf's probe %s counted 0 hits: it is not on %s" %
                                 (event, FUNCTION))
        if len(runs) != 1 or "usecs/hit" not in runs[0]:
            raise common.ParityError("expected one run with usecs/hit under perf stat, got %s" %
                                 [r.get("name") for r in runs])
        return float(runs[0]["usecs/hit"])
    return parse


def add_probe(perf: str, binary: str, spec: str) -> str:
    result = subprocess.run([perf, "probe", "-x", binary, "-a", spec], capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise common.ParityError("perf probe -x %s -a %s failed (exit %d; it needs root and "
                             "tracefs):\n%s" % (binary, spec, result.returncode,
                                                result.stderr[-800:]))
    return parse_added_event(result.stdout + result.stderr)


def delete_probe(perf: str, event: str) -> None:
    subprocess.run([perf, "probe", "-d", event], capture_output=True, text=True)


def cases(perf: str, binary: str, events, workdir: str, min_time: str):
    result = []
    for probe, event in events:
        stat_file = os.path.join(workdir, "stat-%s.csv" % probe)
        result.append(common.Case(
            label="%s hit, 1 thread" % probe,
            reference_cmd=[perf, "stat", "-x,", "-o", stat_file, "-e", event, "--", binary,
                           "--benchmark_format=json"] + ours_flags("none", min_time),
            reference_parse=parse_reference(stat_file, event),
            ours_args=ours_flags(probe, min_time),
            ours_counter="usecs/hit", unit="usecs/hit"))
    return result


def run(args):
    """The parity with common.Settings `args`: prints the table; 0 within tolerance, 1
    not, 2 it could not run."""
    events = []
    perf = None
    try:
        perf = common.require_perf()
        binary = common.build_binary("uprobe")
        with tempfile.TemporaryDirectory(prefix="perfscale-parity-uprobe-") as workdir:
            try:
                events.append(("uprobe", add_probe(perf, binary, FUNCTION)))
                events.append(("uretprobe", add_probe(perf, binary, FUNCTION + "%return")))
                return common.run_parity("uprobe", cases(perf, binary, events, workdir, "0.2"),
                                     args, reference_name="perf probe")
            finally:
                for _probe, event in events:
                    delete_probe(perf, event)
    except common.ParityError as err:
        print("perfscale parity: %s" % err, file=sys.stderr)
        return 2

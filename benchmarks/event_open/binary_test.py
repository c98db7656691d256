"""Runs //benchmarks:event_open as a user would, with tiny parameters, and checks its JSON:
every benchmark ran (as root nothing skips), each BM_EventOpen reports its counters for
events x CPUs fds, and bad flags make the binary exit 2 naming the flag, before running.

Usage: binary_test.py PATH_TO_EVENT_OPEN_BINARY
"""

import json
import os
import subprocess
import sys
import unittest

BINARY = None


def run(*flags):
    return subprocess.run([BINARY, *flags], capture_output=True, text=True, timeout=600)


def online_cpus():
    with open("/sys/devices/system/cpu/online") as f:
        count = 0
        for item in f.read().strip().split(","):
            low, _, high = item.partition("-")
            count += int(high or low) - int(low) + 1
        return count


class EventOpenBinary(unittest.TestCase):
    def test_json_counters(self):
        result = run("--event_open_events=2", "--event_open_event_kinds=dummy,sched:sched_switch",
                     "--benchmark_min_time=0.002", "--benchmark_format=json")
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(result.stdout)
        self.assertIn("perf_event_paranoid", report["context"])
        benchmarks = report["benchmarks"]
        names = [b["name"] for b in benchmarks]
        # 3 strategies x 2 kinds x 3 phase plans x 2 loads (0, all), then 2 lookups.
        self.assertEqual(sum(n.startswith("BM_EventOpen/") for n in names), 36, names)
        self.assertEqual(sum(n.startswith("BM_PmuResolve/") for n in names), 2, names)
        root = os.geteuid() == 0
        cpus = online_cpus()
        for bench in benchmarks:
            name = bench["name"]
            if not root:
                continue  # skips are allowed without privileges; nothing more to check
            self.assertFalse(bench.get("error_occurred", False),
                             "%s: %s" % (name, bench.get("error_message")))
            if name.startswith("BM_EventOpen/"):
                self.assertIn("/cpus:%d" % cpus, name)
                self.assertEqual(bench["fds"], 2 * cpus, name)
                for counter in ("usecs/fd", "ipis_system/fd", "sys_us/fd"):
                    self.assertIn(counter, bench, name)
                self.assertGreater(bench["usecs/fd"], 0, name)
                if "/phases:lifecycle/" in name:
                    shares = sum(bench["share:" + p]
                                 for p in ("open", "enable", "read", "disable", "close"))
                    self.assertAlmostEqual(shares, 1.0, places=6)
            else:
                self.assertGreater(bench["sysfs_ops/event"], 0, name)

    def test_cpu_list_and_strategy_filter(self):
        result = run("--event_open_events=1", "--event_open_cpus=0",
                     "--event_open_strategy=cpu_major", "--event_open_phases=open",
                     "--event_open_event_kinds=cpu-clock", "--event_open_pmu_lookup=per_pmu",
                     "--event_open_pmu_events=software/config=0/", "--benchmark_min_time=0.002",
                     "--benchmark_format=json")
        self.assertEqual(result.returncode, 0, result.stderr)
        names = [b["name"] for b in json.loads(result.stdout)["benchmarks"]]
        self.assertEqual(names, [
            "BM_EventOpen/strategy:cpu_major/events:1/event:cpu-clock/phases:open/cpus:1"
            "/manual_time",
            "BM_EventOpen/strategy:cpu_major/events:1/event:cpu-clock/phases:open/cpus:1"
            "/load:1/manual_time",
            "BM_PmuResolve/lookup:per_pmu/events:1/names:1/real_time",
        ])

    def test_load_all_is_one_hog_per_cpu(self):
        result = run("--event_open_events=1", "--event_open_strategy=cpu_major",
                     "--event_open_phases=open", "--event_open_event_kinds=cpu-clock",
                     "--event_open_load=all,0,1", "--event_open_pmu_lookup=per_pmu",
                     "--event_open_pmu_events=software/config=0/", "--benchmark_list_tests")
        self.assertEqual(result.returncode, 0, result.stderr)
        cpus = online_cpus()
        base = "BM_EventOpen/strategy:cpu_major/events:1/event:cpu-clock/phases:open/cpus:%d" % cpus
        names = [n for n in result.stdout.split() if n.startswith("BM_EventOpen/")]
        expected = [base + "/load:%d" % cpus, base]
        if cpus > 1:
            expected.append(base + "/load:1")
        self.assertEqual(names, [n + "/manual_time" for n in expected])

    def test_quick_run_is_small(self):
        result = run("--quick=true", "--benchmark_list_tests")
        self.assertEqual(result.returncode, 0, result.stderr)
        names = result.stdout.split()
        self.assertEqual(len(names), 3 * 2 + 2, names)
        self.assertTrue(all("/events:100/" in n for n in names), names)

    def test_bad_flags_exit_2_naming_the_flag(self):
        cases = [
            ("--event_open_events=0", "--event_open_events"),
            ("--event_open_events=abc", "--event_open_events"),
            ("--event_open_strategy=cpu-major", "--event_open_strategy"),
            ("--event_open_cpus=0-", "--event_open_cpus"),
            ("--event_open_cpus=4095", "--event_open_cpus"),
            ("--event_open_event_kinds=cycles", "--event_open_event_kinds"),
            ("--event_open_event_kinds=sched:", "--event_open_event_kinds"),
            ("--event_open_event_kinds=cpu-clock,,dummy", "--event_open_event_kinds"),
            ("--event_open_phases=close", "--event_open_phases"),
            ("--event_open_strategy=", "--event_open_strategy"),
            ("--event_open_events=", "--event_open_events"),
            ("--event_open_group_size=0", "--event_open_group_size"),
            ("--event_open_load=4096", "--event_open_load"),
            ("--event_open_load=half", "--event_open_load"),
            ("--event_open_load=", "--event_open_load"),
            ("--event_open_pmu_lookup=cached", "--event_open_pmu_lookup"),
            ("--event_open_pmu_events=msr/tsc", "--event_open_pmu_events"),
            ("--event_open_pmu_events=msr", "--event_open_pmu_events"),
        ]
        for flag, named in cases:
            with self.subTest(flag=flag):
                result = run(flag, "--benchmark_list_tests")
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                self.assertIn(named, result.stderr)
                self.assertEqual(result.stdout, "")


if __name__ == "__main__":
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)

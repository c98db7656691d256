"""Bad command lines and unusable directories, tried on the all-families binary: every
usage error exits 2 with a message naming the flag before anything runs, and what one
family needs from the machine never stops a run that does not include it.

Usage: usage_test.py PATH_TO_ALL_BINARY
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

BINARY = None
# The cheapest benchmark there is: no threads, no tracefs, no fds beyond one event.
ONE_BENCHMARK = "--benchmark_filter=BM_BreakpointEnable/passive:0/active:1/placement:unpinned"
FAST = ["--quick=true", "--benchmark_min_time=0.001s", "--benchmark_format=json"]


def run(*flags, env=None, prefix=()):
    return subprocess.run([*prefix, BINARY, *flags], capture_output=True, text=True,
                          timeout=300, env=env)


def perfscale_help():
    result = run("--help")
    return result.stdout.split("Google Benchmark flags:")[0]


def perfscale_flags():
    """Every perfscale flag, from --help ("  --name" on a line of its own)."""
    return sorted(set(re.findall(r"^  --([a-z_]+)$", perfscale_help(), re.M)))


class UsageErrors(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="perfscale-usage-")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def assertUsageError(self, result, flag, *words):
        self.assertEqual(result.returncode, 2, "%s: rc %d, stderr %r, stdout %r" % (
            flag, result.returncode, result.stderr[-500:], result.stdout[-300:]))
        self.assertIn(flag, result.stderr)
        for word in words:
            self.assertIn(word, result.stderr)
        self.assertNotIn("BM_", result.stdout, "something ran before the usage error")

    def test_benchmark_out_the_kernel_refuses(self):
        # access(2) says yes to root for /proc and /sys: only an open tells the truth.
        for path in ["/proc/x", "/sys/x.json", self.dir]:
            with self.subTest(path=path):
                self.assertUsageError(run("--benchmark_out=" + path, ONE_BENCHMARK),
                                      "--benchmark_out")
        self.assertEqual(os.listdir(self.dir), [], "the probe left a file behind")

    def test_benchmark_out_probe_leaves_no_file(self):
        target = os.path.join(self.dir, "x.json")
        result = run("--benchmark_out=" + target, "--benchmark_filter=NoSuchBenchmark")
        self.assertEqual(result.returncode, 2)
        self.assertFalse(os.path.exists(target), "a usage error created the output file")

    def test_finished_run_says_so_in_its_result_file(self):
        target = os.path.join(self.dir, "x.json")
        result = run("--benchmark_out=" + target, ONE_BENCHMARK, *FAST)
        self.assertEqual(result.returncode, 0, result.stderr[-500:])
        with open(target) as f:
            report = json.load(f)
        self.assertEqual(report["context"]["run_complete"], "true")
        self.assertEqual(len(report["benchmarks"]), 1)
        self.assertEqual(os.listdir(self.dir), ["x.json"], "a partial copy was left")
        mask = os.umask(0)
        os.umask(mask)
        self.assertEqual(os.stat(target).st_mode & 0o777, 0o666 & ~mask)

    def test_benchmark_time_unit(self):
        self.assertUsageError(run("--benchmark_time_unit=fortnight", ONE_BENCHMARK),
                              "--benchmark_time_unit")
        self.assertEqual(run("--benchmark_time_unit=us", "--benchmark_list_tests",
                             ONE_BENCHMARK).returncode, 0)

    def test_benchmark_filter_invalid_regex(self):
        self.assertUsageError(run("--benchmark_filter=["), "--benchmark_filter")
        self.assertUsageError(run("--benchmark_filter=-("), "--benchmark_filter")

    def test_benchmark_filter_matching_nothing(self):
        self.assertUsageError(run("--benchmark_filter=NoSuchBenchmark"), "--benchmark_filter",
                              "no benchmark matches")
        self.assertUsageError(run("--benchmark_filter=NoSuchBenchmark", "--benchmark_list_tests"),
                              "--benchmark_filter", "no benchmark matches")

    def test_boolean_flags(self):
        self.assertUsageError(run("--quick=maybe", ONE_BENCHMARK), "--quick")
        self.assertUsageError(run("--synthesize_data=perhaps", ONE_BENCHMARK),
                              "--synthesize_data=perhaps", "not a boolean",
                              "allowed: true or false")
        self.assertUsageError(run("--benchmark_list_tests=maybe", ONE_BENCHMARK),
                              "--benchmark_list_tests")
        for good in ["--quick", "--quick=true", "--quick=false", "--quick=1", "--quick=0"]:
            with self.subTest(flag=good):
                result = run(good, "--benchmark_list_tests", ONE_BENCHMARK)
                self.assertEqual(result.returncode, 0, result.stderr[-500:])

    def test_every_flag_rejects_an_empty_value(self):
        flags = perfscale_flags()
        self.assertIn("breakpoint_breakpoints", flags)
        self.assertIn("event_open_events", flags)
        for name in flags:
            with self.subTest(flag=name):
                self.assertUsageError(run("--%s=" % name, "--benchmark_list_tests"), "--" + name)


    def test_bad_values_name_the_flag_the_value_and_what_is_allowed(self):
        for arg, allowed in [
                ("--breakpoint_passive=-1", "integers 0..1000000"),
                ("--breakpoint_threads=0", "integers 1..100000"),
                ("--event_open_strategy=fastest",
                 "one or more of event_major, cpu_major, parallel"),
                ("--synthesize_comm=proc", "one of status, comm"),
                ("--trace_overhead_ring_pages=3", "a power of two 1..524288"),
                ("--event_open_load=9999", "integers 0..C (the CPUs the events are opened on)"),
                ("--budget=soon", "seconds, or a duration"),
                ("--inject_syscall_events=5000", "an integer 0..4096")]:
            with self.subTest(arg=arg):
                self.assertUsageError(run(arg, "--benchmark_list_tests"), arg + ":",
                                      "(allowed: " + allowed)

    def test_every_family_flag_carries_its_family_prefix(self):
        families = ["breakpoint", "event_open", "synthesize", "trace_overhead", "uprobe"]
        groups = re.findall(r"^([a-z_]+) flags:$", perfscale_help(), re.M)
        self.assertEqual(groups, ["suite"] + families)
        for name in perfscale_flags():
            owner = [f for f in families if name.startswith(f + "_")]
            section = perfscale_help().split("\n  --%s\n" % name)[0]
            group = re.findall(r"^([a-z_]+) flags:$", section, re.M)[-1]
            self.assertEqual(owner, [] if group == "suite" else [group], name)

    def test_a_family_flag_without_its_prefix_is_unknown(self):
        # The names before December 2026's rename (`--passive`, `--synth_threads`) are gone:
        # each is an unknown flag, rejected before anything runs.
        self.assertNotIn("old name:", perfscale_help())
        for name in ["passive", "threads", "synth_threads", "pingpong_placement"]:
            with self.subTest(flag=name):
                self.assertUsageError(run("--%s=1" % name, "--benchmark_list_tests"),
                                      "unknown flag --" + name)


class FamiliesNotRun(unittest.TestCase):
    """$TMPDIR matters to the synthesize and trace families only: a run without them, or a
    listing, must not fail on it; a run with them still names the flag."""

    def check(self, tmpdir, prefix=()):
        env = dict(os.environ, TMPDIR=tmpdir)
        listed = run("--benchmark_list_tests", env=env, prefix=prefix)
        self.assertEqual(listed.returncode, 0, listed.stderr[-500:])
        self.assertIn("BM_Synthesize/", listed.stdout)
        ran = run(ONE_BENCHMARK, *FAST, env=env, prefix=prefix)
        self.assertEqual(ran.returncode, 0, ran.stderr[-500:])
        self.assertIn("BM_BreakpointEnable/", ran.stdout)
        file_sink = run("--benchmark_filter=BM_Synthesize/workload:controlled/sink:file",
                        "--synthesize_sink=file",
                        *FAST, env=env, prefix=prefix)
        self.assertEqual(file_sink.returncode, 2, file_sink.stderr[-500:])
        self.assertIn("--synthesize_dir", file_sink.stderr)

    def test_missing_tmpdir(self):
        self.check("/nonexistent-perfscale-tmpdir")

    def test_read_only_tmpdir(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for a read-only mount in a private namespace")
        directory = tempfile.mkdtemp(prefix="perfscale-ro-")
        try:
            script = "mount -t tmpfs -o ro none \"$0\" && exec \"$@\""
            self.check(directory, prefix=["unshare", "--mount", "--propagation", "private",
                                          "sh", "-c", script, directory])
        finally:
            os.rmdir(directory)


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    unittest.main(verbosity=2)

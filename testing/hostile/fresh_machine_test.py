"""A new machine as CI gets it: the kernel has tracefs, nothing has mounted it. Each case
runs in its own private mount namespace (the host's mounts are never touched) with
tracefs and debugfs unmounted, and checks what the documentation promises there:
- as root, the quick suite mounts tracefs itself, once, says so, and measures
  BM_PipePingPong with recorded sets (none skipped);
- as root, the tests that need tracefs pass there, none skipped;
- as nobody, the recorded runs skip, and the reason names the mount command.
Needs root (namespaces, setpriv); as another user each case is skipped with that reason.

Usage: fresh_machine_test.py PATH_TO_SUITE_BINARY (in the runfiles, beside the tests)
"""

import json
import os
import shutil
import subprocess
import sys
import unittest

from executable_copy import executable_copy

SUITE = None
ROOT = None  # the runfiles tree the suite binary is in
MOUNT_COMMAND = "mount -t tracefs nodev /sys/kernel/tracing"
MOUNT_NOTE = "perfscale: tracefs was not mounted; mounted it at /sys/kernel/tracing"
# What `tools/perfscale run --quick` passes, narrowed to the tracing family.
QUICK = ["--benchmark_min_time=0.01s", "--quick=true", "--benchmark_filter=PipePingPong",
         "--benchmark_format=json"]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
          "--inh-caps=-all", "--bounding-set=-all", "--"]
UNMOUNTED = ("while umount -l /sys/kernel/tracing 2>/dev/null; do :; done; "
             "while umount -l /sys/kernel/debug 2>/dev/null; do :; done; "
             "if grep -Eq ' (tracefs|debugfs) ' /proc/mounts; then "
             "echo 'still mounted' >&2; exit 99; fi; exec \"$@\"")
# The tests that read tracepoints through tracefs (the ones that failed on a new machine),
# with the filter that keeps only those cases: perf_event_test also holds breakpoint
# tests, which rightly skip on a machine without the breakpoint PMU.
TRACEFS_TESTS = [("lib/tracefs_test",), ("lib/perf_event_test", "--gtest_filter=*Tracepoint*"),
                 ("benchmarks/trace_overhead/trace_recorder_test",),
                 ("benchmarks/trace_overhead/trace_overhead_family_test",),
                 ("benchmarks/trace_overhead/binary_test",),
                 ("benchmarks/event_open/binary_test",)]
# Bazel's per-test outputs: an inner test must not write over this test's.
OUTER_TEST_ENV = ("GTEST_OUTPUT", "XML_OUTPUT_FILE", "TEST_PREMATURE_EXIT_FILE",
                  "TEST_SHARD_STATUS_FILE", "TEST_TOTAL_SHARDS", "TEST_SHARD_INDEX",
                  "TEST_WARNINGS_OUTPUT_FILE", "TEST_INFRASTRUCTURE_FAILURE_FILE")


def in_fresh_namespace(argv, timeout=600):
    env = {k: v for k, v in os.environ.items() if k not in OUTER_TEST_ENV}
    return subprocess.run(["unshare", "--mount", "--propagation", "private",
                           "sh", "-c", UNMOUNTED, "sh", *argv],
                          capture_output=True, text=True, timeout=timeout, env=env)


class FreshMachine(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root to create private mount namespaces")
        with open("/proc/filesystems") as f:
            if "tracefs" not in f.read():
                raise unittest.SkipTest("this kernel has no tracefs: nothing to mount")
        cls.dir, cls.suite = executable_copy(SUITE, "perfscale-fresh-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def run_suite(self, prefix=(), flags=()):
        result = in_fresh_namespace([*prefix, self.suite, *QUICK, *flags])
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        return json.loads(result.stdout)["benchmarks"], result.stderr

    def test_quick_suite_mounts_tracefs_and_records(self):
        benchmarks, stderr = self.run_suite()
        self.assertEqual(stderr.count(MOUNT_NOTE), 1, stderr[-3000:])
        skipped = [(b["name"], b.get("error_message") or b.get("skip_message"))
                   for b in benchmarks if b.get("error_occurred") or b.get("skipped")]
        self.assertEqual(skipped, [])
        recorded = [b for b in benchmarks
                    if b["name"].startswith("BM_PipePingPong/set:")
                    and not b["name"].startswith("BM_PipePingPong/set:none/")]
        self.assertTrue(recorded, [b["name"] for b in benchmarks])
        for bench in recorded:
            self.assertGreater(bench["samples/op"], 0, bench["name"])

    def test_tracefs_tests_pass_with_nothing_skipped(self):
        for test, *flags in TRACEFS_TESTS:
            with self.subTest(test=test):
                result = in_fresh_namespace([os.path.join(ROOT, test), *flags])
                output = result.stdout + result.stderr
                self.assertEqual(result.returncode, 0, output[-3000:])
                self.assertNotIn("[  SKIPPED ]", output)  # GoogleTest
                self.assertNotIn("skipped '", output)  # unittest

    def test_unprivileged_skip_names_the_mount_command(self):
        # Per-task ring recording, which paranoid 2 allows nobody: only tracefs stands in
        # the way (BPF programs need privileges of their own).
        benchmarks, _ = self.run_suite(prefix=NOBODY,
                                       flags=["--trace_overhead_sets=none,sched",
                                              "--trace_overhead_scope=task",
                                              "--trace_overhead_recorder=ring"])
        self.assertFalse([b for b in benchmarks if b.get("error_occurred")])
        reasons = [b.get("skip_message", "") for b in benchmarks if b.get("skipped")]
        self.assertTrue(reasons, [b["name"] for b in benchmarks])
        for reason in reasons:
            self.assertIn("'sudo %s'" % MOUNT_COMMAND, reason)


if __name__ == "__main__":
    SUITE = sys.argv.pop(1)
    ROOT = os.path.dirname(os.path.dirname(SUITE))
    unittest.main(verbosity=2)

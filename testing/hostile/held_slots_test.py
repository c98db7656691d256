"""Hardware breakpoint slots held by another process (issue 33, item 1): the breakpoint
family keeps every default row and says whose slots they are, and a count the user asked
for that cannot fit exits 2 saying "the hardware has N, M are in use".

Before the fix, with 3 of 4 slots held, a default run silently dropped the rows above 1
breakpoint, `--breakpoint_breakpoints=4` said "this machine has 1 hardware breakpoint
slots", and with all 4 held the limit fell back to 64.

Usage: held_slots_test.py PATH_TO_SUITE_BINARY   (bazel test //testing/hostile:held_slots_test)
"""

import json
import os
import subprocess
import sys
import unittest

BINARY = None
HOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hold_breakpoints.py")
THREAD_ROWS = ["--benchmark_filter=BM_BreakpointThread", "--quick=true",
               "--benchmark_min_time=0.001s", "--benchmark_format=json",
               "--breakpoint_threads=1", "--breakpoint_repeat=1"]


class HeldElsewhere:
    """hold_breakpoints.py N in its own process, for the length of a `with`."""

    def __init__(self, count):
        self.count = count

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, HOLDER, str(self.count)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "held %d" % self.count:
            err = self.proc.communicate(timeout=30)[1]
            raise unittest.SkipTest("cannot hold CPU-wide breakpoints here: %s" % err.strip())
        return self

    def __exit__(self, *_):
        self.proc.communicate(input="", timeout=30)  # closing stdin releases them


def run(*flags):
    return subprocess.run([BINARY, *flags], capture_output=True, text=True, timeout=300)


class HeldSlots(unittest.TestCase):
    def rows(self, result):
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        return {b["name"]: b for b in json.loads(result.stdout)["benchmarks"]}

    def test_default_rows_are_kept_and_say_whose_slots_they_are(self):
        with HeldElsewhere(3):
            rows = self.rows(run(*THREAD_ROWS))
        four = [b for name, b in rows.items() if "/breakpoints:4/" in name]
        self.assertTrue(four, "the 4-breakpoint rows vanished: %s" % sorted(rows))
        for bench in four:
            self.assertTrue(bench.get("skipped"), bench)
            self.assertIn("the hardware has 4 breakpoint slots, 3 are in use elsewhere",
                          bench["skip_message"])
        zero = [b for name, b in rows.items() if "/breakpoints:0/" in name]
        self.assertTrue(zero and not any(b.get("error_occurred") or b.get("skipped")
                                         for b in zero))

    def test_all_slots_held_keeps_the_hardwares_limit(self):
        with HeldElsewhere(4):
            result = run("--breakpoint_breakpoints=5", *THREAD_ROWS[1:])
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("5 breakpoints asked for, but the hardware has 4 breakpoint slots",
                      result.stderr)

    def test_a_count_asked_for_that_others_hold_is_a_usage_error_naming_them(self):
        with HeldElsewhere(3):
            result = run("--breakpoint_breakpoints=4", *THREAD_ROWS[1:])
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("4 breakpoints asked for, but the hardware has 4 breakpoint slots, "
                      "3 are in use elsewhere (1 free", result.stderr)
        self.assertIn("ask for at most 1", result.stderr)
        self.assertEqual(result.stdout.strip(), "")


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    if os.uname().machine not in ("x86_64",):
        print("held_slots_test: x86 only (4 debug registers); skipped")
        sys.exit(0)
    unittest.main(verbosity=2)

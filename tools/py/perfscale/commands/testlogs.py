"""Counts test cases for `tools/perfscale test`, from Bazel's per-target test.xml files
(GoogleTest's XML, or Bazel's own for tests that write none) and pytest's JUnit XML, and
names every skipped one with its reason.

  testlogs.py --bazel-testlogs DIR --targets FILE --label L --save OUT.json
  testlogs.py --junit FILE --label L --save OUT.json
  testlogs.py --total A.json B.json ...
      -> every skip as "  [label] target case: reason", then "N passed, N failed, N skipped"

A target listed but without a test.xml (it failed to build, or crashed before Bazel
could write one) counts as one failure, so nothing disappears from the count. Bazel
writes its own test.xml, one case holding the log, for a test that writes none (our
Python unittest scripts): their verbose lines ("test_x (Class.test_x) ... skipped 'why'")
are counted case by case instead, so their skips show too.
"""

import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ElementTree

# unittest.main(verbosity=2): "test_name (module.Class.test_name) ... ok", the docstring's
# first line before the dots when there is one; a skipped class shows as "setUpClass".
_UNITTEST_LINE = re.compile(
    r"^(test\w*|setUpClass|setUpModule) \(([\w.]+)\)(?:\n[^\n]*?)? \.\.\. "
    r"(ok|FAIL|ERROR|skipped '(.*)'|expected failure|unexpected success)$", re.M)
# GoogleTest starts a skip's message with "file.cc:LINE" on a line of its own.
_SOURCE_LOCATION = re.compile(r"^\S+:\d+\s*\n")


class Counts:
    def __init__(self, passed=0, failed=0, skips=None):
        self.passed = passed
        self.failed = failed
        self.skips = skips if skips is not None else []  # [(case, reason)]

    def add(self, other):
        self.passed += other.passed
        self.failed += other.failed
        self.skips += other.skips

    def line(self):
        return "%d passed, %d failed, %d skipped" % (self.passed, self.failed, len(self.skips))


def one_line(text, limit=300):
    text = " ".join(_SOURCE_LOCATION.sub("", (text or "").strip()).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def skip_reason(case):
    skipped = case.find("skipped")
    if skipped is None:
        return "(no reason recorded)"
    reason = skipped.get("message") or skipped.text or ""
    return one_line(reason) or "(no reason recorded)"


def count_unittest_log(log):
    """The cases of a unittest run's verbose log, or None when it has none."""
    counts = Counts()
    found = False
    for match in _UNITTEST_LINE.finditer(log):
        found = True
        name, where, outcome, reason = match.groups()
        if outcome.startswith("skipped"):
            counts.skips.append(("%s (%s)" % (name, where), one_line(reason)))
        elif outcome in ("ok", "expected failure"):
            counts.passed += 1
        else:
            counts.failed += 1
    return counts if found else None


def count_junit(path):
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return Counts(failed=1)
    cases = list(root.iter("testcase"))
    # Bazel's own XML for a test that wrote none: one case, the log in system-out.
    if len(cases) == 1 and not cases[0].get("classname"):
        out = "".join(e.text or "" for e in root.iter("system-out"))
        inner = count_unittest_log(out)
        if inner is not None:
            failed = cases[0].find("failure") is not None or cases[0].find("error") is not None
            if failed and not inner.failed:
                inner.failed = 1  # the script failed outside any case
            return inner
    counts = Counts()
    for case in cases:
        name = ".".join(p for p in (case.get("classname"), case.get("name")) if p)
        if case.find("failure") is not None or case.find("error") is not None:
            counts.failed += 1
        elif (case.find("skipped") is not None or case.get("result") == "skipped" or
              case.get("status") == "notrun"):
            counts.skips.append((name, skip_reason(case)))
        else:
            counts.passed += 1
    return counts


def label_to_xml(testlogs, label):
    package, _, name = label.lstrip("/").partition(":")
    return os.path.join(testlogs, package, name, "test.xml")


def load_saved(path):
    """A --save file: {"passed", "failed", "skips": [[label, target, case, reason]]}."""
    try:
        with open(path) as f:
            saved = json.load(f)
        return (int(saved["passed"]), int(saved["failed"]),
                [tuple(s) for s in saved["skips"]])
    except (OSError, ValueError, KeyError, TypeError):
        return 0, 1, []


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--bazel-testlogs")
    parser.add_argument("--targets")
    parser.add_argument("--junit")
    parser.add_argument("--label", default="tests")
    parser.add_argument("--save")
    parser.add_argument("--total", nargs="*")
    args = parser.parse_args(argv)

    if args.total is not None:
        passed = failed = 0
        skips = []
        for path in args.total:
            p, f, s = load_saved(path)
            passed, failed, skips = passed + p, failed + f, skips + s
        if skips:
            print("skipped:")
            for label, target, case, reason in skips:
                print("  [%s] %s: %s" % (label, " ".join(p for p in (target, case) if p), reason))
        print("%d passed, %d failed, %d skipped" % (passed, failed, len(skips)))
        return 1 if failed else 0

    # (target, Counts) per target.
    results = []
    if args.junit:
        results.append(("", count_junit(args.junit)))  # its case names say where
    elif args.bazel_testlogs and args.targets:
        with open(args.targets) as f:
            labels = [line.strip() for line in f if line.strip()]
        for label in labels:
            xml = label_to_xml(args.bazel_testlogs, label)
            if not os.path.exists(xml):
                print("%s: no test result for %s" % (args.label, label), file=sys.stderr)
                results.append((label, Counts(failed=1)))
                continue
            results.append((label, count_junit(xml)))
    total = Counts()
    for _, counts in results:
        total.add(counts)
    print("%s: %s" % (args.label, total.line()))
    if args.save:
        with open(args.save, "w") as f:
            json.dump({"passed": total.passed, "failed": total.failed,
                       "skips": [[args.label, target, case, reason]
                                 for target, counts in results
                                 for case, reason in counts.skips]}, f)
    return 1 if total.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

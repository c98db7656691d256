"""Counts test cases for `tools/perfscale test`, from Bazel's per-target test.xml files
(GoogleTest's XML, or Bazel's own for tests that write none) and pytest's JUnit XML.

  test_summary.py --bazel-testlogs DIR --targets FILE --label L --save OUT.json
  test_summary.py --junit FILE --label L --save OUT.json
  test_summary.py --total A.json B.json ...   -> prints "N passed, N failed, N skipped"

A target listed but without a test.xml (it failed to build, or crashed before Bazel
could write one) counts as one failure, so nothing disappears from the count.
"""

import argparse
import json
import os
import sys
import xml.etree.ElementTree as ElementTree


def count_junit(path):
    passed = failed = skipped = 0
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return 0, 1, 0
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None or case.get("result") == "skipped":
            skipped += 1
        elif case.get("status") == "notrun":
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def label_to_xml(testlogs, label):
    package, _, name = label.lstrip("/").partition(":")
    return os.path.join(testlogs, package, name, "test.xml")


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
        totals = [0, 0, 0]
        for path in args.total:
            try:
                with open(path) as f:
                    counts = json.load(f)
            except (OSError, ValueError):
                counts = [0, 1, 0]
            totals = [a + b for a, b in zip(totals, counts)]
        print("%d passed, %d failed, %d skipped" % tuple(totals))
        return 1 if totals[1] else 0

    counts = [0, 0, 0]
    if args.junit:
        counts = list(count_junit(args.junit))
    elif args.bazel_testlogs and args.targets:
        with open(args.targets) as f:
            labels = [line.strip() for line in f if line.strip()]
        for label in labels:
            xml = label_to_xml(args.bazel_testlogs, label)
            if not os.path.exists(xml):
                print("%s: no test result for %s" % (args.label, label), file=sys.stderr)
                counts[1] += 1
                continue
            counts = [a + b for a, b in zip(counts, count_junit(xml))]
    print("%s: %d passed, %d failed, %d skipped" % (args.label, *counts))
    if args.save:
        with open(args.save, "w") as f:
            json.dump(counts, f)
    return 1 if counts[1] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Runs Google Benchmark's own compare.py (Debian's libbenchmark-tools) for its A/B table.

People already read compare.py's table, so we show it unchanged and add our verdicts
after it. compare.py is handed cleaned copies of the inputs: without error entries (their
zero times would enter its U test) and without NaN/Infinity (a NaN time poisons its
geomean). The copies keep the original file names in the table's heading.
"""

import json
import os
import subprocess
import sys
import tempfile

from perfscale.results import io

DEFAULT_COMPARE_PY = "/usr/share/benchmark/compare.py"
# compare.py imports scipy: it runs on our own interpreter, which has it (tools/py/python).
PYTHON = sys.executable


def compare_py_path():
    return os.environ.get("PERFSCALE_COMPARE_PY", DEFAULT_COMPARE_PY)


def clean_document(path):
    """The benchmarks of `path` compare.py can use, as strict JSON text."""
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    kept = []
    for item in document.get("benchmarks", []):
        if io.untimed_reason(item) is not None:
            continue
        if any(io.finite_or_none(item.get(k)) is None for k in ("real_time", "cpu_time")):
            continue
        kept.append(item)
    document["benchmarks"] = kept
    return io.dumps(document, indent=1)


def table(base_path, new_path, alpha, color=False, every_repetition=False):
    """compare.py's output for the two files, or a line saying why there is none.

    By default only its aggregate rows and U test lines: with the ten or more repetitions
    the test needs, one row per repetition buries the figures people look for.
    """
    script = compare_py_path()
    if not os.path.exists(script):
        return ("(compare.py not found at %s: install libbenchmark-tools to see Google "
                "Benchmark's table)\n" % script)
    with tempfile.TemporaryDirectory(prefix="perfscale-compare-") as tmp:
        copies = []
        for label, path in (("base", base_path), ("new", new_path)):
            copy = os.path.join(tmp, "%s-%s" % (label, os.path.basename(path)))
            with open(copy, "w", encoding="utf-8") as f:
                f.write(clean_document(path))
            copies.append(copy)
        command = [PYTHON, script] + ([] if color else ["--no-color"]) + (
            [] if every_repetition else ["--display_aggregates_only"]) + [
            "--alpha", repr(alpha), "benchmarks"] + copies
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
    output = proc.stdout
    for copy, original in zip(copies, (base_path, new_path)):
        output = output.replace(copy, original)
    if proc.returncode != 0:
        output += "(compare.py failed with exit %d: %s)\n" % (
            proc.returncode, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "")
    return output


def stdout_wants_color():
    return sys.stdout.isatty() and os.environ.get("NO_COLOR") is None

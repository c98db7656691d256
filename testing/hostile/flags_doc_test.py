"""The flag reference (docs/flags.md) against the binary's --help, which prints every flag
from its family's table (benchmarks/harness/flags.h): the same flags, each with the same values, default
and `--quick` default. A flag added, renamed or given another default without its row
fails here. And every family flag the documentation names (README.md, docs/) exists, so
an example cannot teach a name the binary refuses.

A flag table is a Markdown table whose header is `| flag | values | default | --quick |
...`; the cells are compared without backticks, an empty `--quick` cell meaning the flag
has no `--quick` default of its own.

Usage: flags_doc_test.py PATH_TO_ALL_BINARY PATH_TO_FLAGS_MD [OTHER_DOC.md ...]
"""

import re
import subprocess
import sys
import unittest

BINARY = None
FLAGS_DOC = None
DOCS = []


def normalize(cell):
    return " ".join(cell.replace("`", "").split())


def help_flags():
    """{name: {"group", "help", "values", "default", "quick"}} from --help."""
    result = subprocess.run([BINARY, "--help"], capture_output=True, text=True, timeout=120)
    section = result.stdout.split("Google Benchmark flags:")[0]
    flags = {}
    group = None
    current = None
    for line in section.splitlines():
        match = re.match(r"^([a-z_]+) flags:$", line)
        if match:
            group = match.group(1)
            continue
        match = re.match(r"^  --([a-z_]+)$", line)
        if match:
            current = {"group": group, "help": None, "values": None, "default": None,
                       "quick": ""}
            flags[match.group(1)] = current
            continue
        if current is None or not line.startswith("      "):
            continue
        body = line.strip()
        for key, prefix in [("values", "values: "), ("default", "default: "),
                            ("quick", "--quick: ")]:
            if body.startswith(prefix):
                current[key] = normalize(body[len(prefix):])
                break
        else:
            if current["help"] is None:
                current["help"] = body
    return flags


def flag_tables():
    """(flag rows {name: {"values", "default", "quick", "line"}}, names with two rows)."""
    rows, duplicates = {}, []
    kind = None
    with open(FLAGS_DOC) as f:
        for number, line in enumerate(f, 1):
            if not line.startswith("|"):
                kind = None
                continue
            cells = [normalize(c) for c in line.strip().strip("|").split("|")]
            if cells[:4] == ["flag", "values", "default", "--quick"]:
                kind = "flags"
                continue
            if kind is None or set("".join(cells)) <= set("-: "):
                continue
            name = cells[0].lstrip("-")
            if name in rows:
                duplicates.append(name)
            rows[name] = {"values": cells[1], "default": cells[2], "quick": cells[3],
                          "line": number}
    return rows, duplicates


class DocsMatchHelp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.help = help_flags()
        cls.rows, cls.duplicates = flag_tables()

    def test_help_lists_flags(self):
        self.assertIn("breakpoint_passive", self.help)
        self.assertIn("quick", self.help)
        for name, flag in self.help.items():
            with self.subTest(flag=name):
                for key in ["group", "help", "values", "default"]:
                    self.assertTrue(flag[key], "--help gives --%s no %s" % (name, key))

    def test_every_flag_has_one_row_and_every_row_a_flag(self):
        self.assertEqual(self.duplicates, [], "flags with two rows")
        missing = sorted(set(self.help) - set(self.rows))
        unknown = sorted(set(self.rows) - set(self.help))
        self.assertEqual(missing, [], "flags --help lists but no table in %s has" % FLAGS_DOC)
        self.assertEqual(unknown, [], "rows for flags the binary does not have")

    def test_values_defaults_and_quick_defaults_agree(self):
        for name in sorted(set(self.help) & set(self.rows)):
            row, flag = self.rows[name], self.help[name]
            for key in ["values", "default", "quick"]:
                with self.subTest(flag=name, column=key):
                    self.assertEqual(row[key], flag[key],
                                     "%s:%d --%s %s: the page %r, --help %r" % (
                                         FLAGS_DOC, row["line"], name, key, row[key],
                                         flag[key]))

    def test_docs_name_only_family_flags_that_exist(self):
        families = sorted({flag["group"] for flag in self.help.values()} - {"suite"},
                          key=len, reverse=True)
        self.assertIn("breakpoint", families)
        pattern = re.compile(r"(?<![\w-])--((?:%s)_[a-z_]*[a-z])" % "|".join(families))
        self.assertTrue(DOCS, "no documentation pages given")
        for path in DOCS:
            with open(path) as f:
                for number, line in enumerate(f, 1):
                    for name in pattern.findall(line):
                        with self.subTest(page=path, line=number, flag=name):
                            self.assertTrue(name in self.help, "%s:%d names --%s, which --help "
                                            "does not list" % (path, number, name))


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    FLAGS_DOC = sys.argv.pop(1)
    DOCS = [FLAGS_DOC] + sys.argv[1:]
    del sys.argv[1:]
    unittest.main(verbosity=2)

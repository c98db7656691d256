"""tools/perfscale test's counting: every skip is listed with its reason, from each kind of
result file it reads, just before the closing "N passed, N failed, N skipped" line."""

import json

from perfscale.commands import testlogs

GTEST_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="1" disabled="0" errors="0" name="AllTests">
  <testsuite name="A" tests="3" failures="1" skipped="1">
    <testcase name="Skips" status="run" result="skipped" classname="A">
      <skipped message="testing/lib/a_test.cc:12&#x0A;no breakpoint PMU here"><![CDATA[x]]></skipped>
    </testcase>
    <testcase name="Passes" status="run" result="completed" classname="A" />
    <testcase name="Fails" status="run" result="completed" classname="A">
      <failure message="boom"><![CDATA[boom]]></failure>
    </testcase>
  </testsuite>
</testsuites>
"""

# What Bazel writes for a test that writes no XML (a Python unittest script).
BAZEL_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="testing/hostile/hostile_test" tests="1" failures="0" errors="0">
    <testcase name="testing/hostile/hostile_test" status="run" duration="26" time="26"></testcase>
      <system-out>
Generated test.log (if the file is not UTF-8, then this may be unreadable):
<![CDATA[Executing tests from //testing/hostile:hostile_test
test_low_fd_limit (__main__.Hostile.test_low_fd_limit) ... ok
test_paranoid (__main__.Hostile.test_paranoid)
Raises the sysctl. ... skipped 'needs perf_event_paranoid -1'
test_tracefs (__main__.Hostile.test_tracefs) ... ok

Ran 3 tests in 26.351s

OK (skipped=1)]]>
      </system-out>
    </testsuite>
</testsuites>
"""

PYTEST_XML = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="0" skipped="1" tests="2">
<testcase classname="test_plot" name="test_png" time="0.1" />
<testcase classname="test_plot" name="test_svg" time="0.0">
<skipped type="pytest.skip" message="no matplotlib">test_plot.py:9: no matplotlib</skipped>
</testcase></testsuite></testsuites>
"""


def write(tmp_path, relative, text):
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_gtest_skip_reason_without_its_source_location(tmp_path):
    counts = testlogs.count_junit(str(write(tmp_path, "a.xml", GTEST_XML)))
    assert (counts.passed, counts.failed) == (1, 1)
    assert counts.skips == [("A.Skips", "no breakpoint PMU here")]


def test_unittest_cases_inside_bazels_own_xml_are_counted_one_by_one(tmp_path):
    counts = testlogs.count_junit(str(write(tmp_path, "b.xml", BAZEL_XML)))
    assert (counts.passed, counts.failed) == (2, 0)
    assert counts.skips == [("test_paranoid (__main__.Hostile.test_paranoid)",
                             "needs perf_event_paranoid -1")]


def test_a_failed_script_with_no_failed_case_still_fails(tmp_path):
    failed = BAZEL_XML.replace('time="26"></testcase>',
                               'time="26"><error message="exited with error code 1"></error>'
                               '</testcase>')
    counts = testlogs.count_junit(str(write(tmp_path, "c.xml", failed)))
    assert counts.failed == 1


def test_pytest_skip(tmp_path):
    counts = testlogs.count_junit(str(write(tmp_path, "p.xml", PYTEST_XML)))
    assert counts.passed == 1
    assert counts.skips == [("test_plot.test_svg", "no matplotlib")]


def test_total_lists_every_skip_then_the_count_last(tmp_path, capsys):
    logs = tmp_path / "testlogs"
    write(logs, "testing/lib/a_test/test.xml", GTEST_XML)
    write(logs, "testing/hostile/hostile_test/test.xml", BAZEL_XML)
    targets = write(tmp_path, "targets",
                    "//testing/lib:a_test\n//testing/hostile:hostile_test\n//testing/lib:gone\n")
    bazel = tmp_path / "bazel.json"
    assert testlogs.main(["--bazel-testlogs", str(logs), "--targets", str(targets),
                              "--label", "bazel", "--save", str(bazel)]) == 1
    pytest_json = tmp_path / "pytest.json"
    assert testlogs.main(["--junit", str(write(tmp_path, "p.xml", PYTEST_XML)),
                              "--label", "pytest", "--save", str(pytest_json)]) == 0
    out = capsys.readouterr()
    assert "bazel: 3 passed, 2 failed, 2 skipped" in out.out  # the missing target failed
    assert "no test result for //testing/lib:gone" in out.err
    assert json.loads(bazel.read_text())["skips"][0] == [
        "bazel", "//testing/lib:a_test", "A.Skips", "no breakpoint PMU here"]

    assert testlogs.main(["--total", str(bazel), str(pytest_json)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "skipped:",
        "  [bazel] //testing/lib:a_test A.Skips: no breakpoint PMU here",
        "  [bazel] //testing/hostile:hostile_test test_paranoid "
        "(__main__.Hostile.test_paranoid): needs perf_event_paranoid -1",
        "  [pytest] test_plot.test_svg: no matplotlib",
        "4 passed, 2 failed, 3 skipped",
    ]


def test_total_without_skips_is_just_the_count_and_a_corrupt_part_fails(tmp_path, capsys):
    clean = write(tmp_path, "clean.json", json.dumps({"passed": 5, "failed": 0, "skips": []}))
    assert testlogs.main(["--total", str(clean)]) == 0
    assert capsys.readouterr().out == "5 passed, 0 failed, 0 skipped\n"
    corrupt = write(tmp_path, "corrupt.json", "[1, 2")
    assert testlogs.main(["--total", str(clean), str(corrupt)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "5 passed, 1 failed, 0 skipped"

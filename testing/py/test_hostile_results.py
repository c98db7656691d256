"""Result files another tool (or a hostile hand) wrote, through every command that reads
them (issue 38, items 5 and 6): each is one line naming the file and the problem, exit 2,
never a traceback and never a verdict on a merged sample; or, for names that are merely
odd, the command works."""

import json

import pytest

from conftest import data


def _document():
    with open(data("base.json")) as f:
        return json.load(f)


def _write(tmp_path, name, document):
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def _duplicated(tmp_path):
    """base.json with one benchmark's repetitions listed again, 30% slower: two runs
    pasted into one file."""
    document = _document()
    name = next(b["run_name"] for b in document["benchmarks"] if b["run_type"] == "iteration")
    again = [dict(b, real_time=b["real_time"] * 1.3, cpu_time=b["cpu_time"] * 1.3)
             for b in document["benchmarks"]
             if b["run_type"] == "iteration" and b["run_name"] == name]
    document["benchmarks"] += again
    return _write(tmp_path, "twice.json", document), name


def _commands(path, tmp_path):
    return {"compare": ("compare", data("base.json"), path),
            "compare as baseline": ("compare", path, data("base.json")),
            "report": ("report", path, "-o", tmp_path / "report", "--no-plots"),
            "import": ("history", "import", "--create", path, "--history",
                       tmp_path / "h.sqlite"),
            "plot": ("plot", path, "-o", tmp_path / "plots")}


def test_a_benchmark_listed_twice_is_refused_with_its_name(cli, tmp_path):
    path, name = _duplicated(tmp_path)
    for what, argv in _commands(path, tmp_path).items():
        code, out, err = cli(*argv)
        assert code == 2, (what, out, err)
        assert path in err and name in err and "twice" in err, (what, err)
        assert "Traceback" not in err


@pytest.mark.parametrize("case", ["deep", "surrogate", "cpus"])
def test_a_hostile_file_is_one_line_and_exit_2(cli, tmp_path, case):
    if case == "deep":
        path = tmp_path / "deep.json"
        path.write_text("[" * 100000 + "]" * 100000)
        path, expected = str(path), "nested too deep"
    elif case == "surrogate":
        document = _document()
        document["benchmarks"][0]["name"] += "\ud800"
        document["benchmarks"][0]["run_name"] += "\ud800"
        path, expected = _write(tmp_path, "surrogate.json", document), "lone surrogate"
    else:
        document = _document()
        document["context"]["num_cpus"] = 1e30
        document["context"].pop("num_online_cpus", None)
        document["context"].pop("online_cpus", None)
        path, expected = _write(tmp_path, "cpus.json", document), "CPU count"
    for what, argv in _commands(path, tmp_path).items():
        code, out, err = cli(*argv)
        assert code == 2, (what, out, err)
        assert path in err and expected in err, (what, err)
        assert len(err.strip().splitlines()) == 1, (what, err)


def test_mathtext_in_a_name_is_drawn_as_text(cli, tmp_path):
    """A '$' in a benchmark name is a character, not the start of matplotlib mathtext
    (which died on \\undefinedcmd)."""
    document = _document()
    for item in document["benchmarks"]:
        for key in ("name", "run_name"):
            item[key] = item[key].replace("BM_BreakpointThread", r"BM_Math$\undefinedcmd{x}$")
    path = _write(tmp_path, "math.json", document)
    code, out, err = cli("plot", path, "-o", tmp_path / "plots", "--filter", "Math")
    assert code == 0, err
    assert any("BM_Math" in p for p in out.split())
    code, _, err = cli("report", path, "-o", tmp_path / "report")
    assert code == 0, err

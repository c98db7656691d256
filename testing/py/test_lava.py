"""`tools/perfscale lava job|run` and `history import --lava`: the job checked by LAVA's own
validator (Debian's lava-common 2023.01), the guest's scripts run under busybox as the guest
runs them, and a real lava-run log (data/lava: the quick suite on debian:6.12-cloud under
TCG, docs/measurements/2026-12-03-lava.md) read back and imported."""

import dataclasses
import gzip
import hashlib
import http.server
import json
import os
import shutil
import subprocess

import pytest

from conftest import data, http_server

from perfscale.gate import stats
from perfscale.history import store
from perfscale.labs import kcidb, lava
from perfscale.results import io

BUSYBOX = shutil.which("busybox")
needs_busybox = pytest.mark.skipif(BUSYBOX is None, reason="busybox is not installed "
                                   "(tools/setup test installs busybox-static)")


def lava_common():
    try:
        from lava_common import schemas  # noqa: F401
    except ImportError:
        pytest.skip("lava-common is not installed (tools/setup test installs it)")


def real_log():
    with gzip.open(data("lava/log.yaml.gz"), "rt", encoding="utf-8") as f:
        return f.read()


@pytest.fixture
def run_dir(tmp_path):
    """The folder `lava run` wrote for the recorded job."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "log.yaml").write_text(real_log())
    shutil.copy(data("lava/job.yaml"), folder / "job.yaml")
    shutil.copy(data("lava/lineage.json"), folder / "lineage.json")
    return folder


@pytest.fixture
def job_dir(cli, tmp_path, monkeypatch):
    """`lava job` for a stand-in kernel and binary (/bin/true: ldd and the ramdisk work on
    it as on the suite)."""
    def write(*extra, run=("run", "--quick", "--repetitions", "3")):
        lava_common()
        kernel = tmp_path / "vmlinuz-6.1.0-99-amd64"
        kernel.write_bytes(b"not really a kernel")
        monkeypatch.setenv("PERFSCALE_BINARY", "/bin/true")
        out = tmp_path / "job"
        code, stdout, stderr = cli("lava", "job", "--kernel", kernel, "--out", out, *extra,
                                   "--", *run)
        return code, stdout, stderr, out, kernel
    return write


def test_the_qemu_job_passes_lavas_validation(job_dir):
    code, out, err, folder, kernel = job_dir("--cpus", "4")
    assert code == 0, err
    assert "valid for LAVA" in out
    document = lava.load_yaml(folder / "job.yaml")
    from lava_common.schemas import validate
    validate(document, strict=True)  # raises on a job LAVA's server would refuse
    assert document["device_type"] == "qemu"
    deploy, boot, test = (next(iter(a.values())) for a in document["actions"])
    assert deploy["to"] == "tmpfs" and boot["method"] == "qemu"
    images = deploy["images"]
    assert images["kernel"]["url"] == "file://%s" % kernel
    assert images["kernel"]["sha256sum"] == hashlib.sha256(kernel.read_bytes()).hexdigest()
    ramdisk = (folder / "ramdisk.cpio.gz").read_bytes()
    assert images["ramdisk"]["sha256sum"] == hashlib.sha256(ramdisk).hexdigest()
    assert images["ramdisk"]["overlays"] == {"lava": True}
    assert "-smp 4" in document["context"]["extra_options"]
    assert document["context"]["no_kvm"] is True
    (definition,) = test["definitions"]
    assert definition["from"] == "inline"
    assert definition["repository"]["metadata"]["format"] == "Lava-Test Test Definition 1.0"
    steps = "\n".join(definition["repository"]["run"]["steps"])
    # run --quick --repetitions 3, as `run` gives the binary its flags
    for flag in ("--benchmark_out=/tmp/out/result.json", "--quick=true",
                 "--benchmark_repetitions=3", "--benchmark_min_time=0.01s"):
        assert flag in steps
    assert "/perfscale/lava-cases" in steps and "/perfscale/lava-send" in steps
    archive = gzip.decompress(ramdisk)
    for name in (b"init\0", b"perfscale/lava-cases\0", b"perfscale/lava-cases.awk\0",
                 b"perfscale/lava-send\0", b"perfscale/true\0", b"bin/busybox\0"):
        assert name in archive
    assert lava.PROMPT.encode() in archive and boot["prompts"] == [lava.PROMPT]


def test_the_bare_metal_job_passes_lavas_validation(job_dir):
    code, _, err, folder, _ = job_dir("--device-type", "x86", "--image-url",
                                      "http://lab.example/perfscale/")
    assert code == 0, err
    document = lava.load_yaml(folder / "job.yaml")
    assert lava.validation_problem(document) == ""
    deploy, boot, _ = (next(iter(a.values())) for a in document["actions"])
    assert document["device_type"] == "x86"
    assert deploy["to"] == "tftp" and boot["method"] == "ipxe"
    assert deploy["kernel"]["url"] == "http://lab.example/perfscale/vmlinuz"
    assert (folder / "vmlinuz").read_bytes() == b"not really a kernel"


def test_lavas_validator_refuses_what_lava_would(job_dir):
    code, _, err, folder, _ = job_dir()
    assert code == 0, err
    document = lava.load_yaml(folder / "job.yaml")
    broken = dict(document)
    del broken["timeouts"]
    assert "timeouts" in lava.validation_problem(broken)
    document["actions"][1]["boot"]["method"] = "kvm"
    assert lava.validation_problem(document)


@pytest.mark.parametrize("extra, run, message", [
    ((), ("nightly",), "-- run"),
    ((), ("run", "--out", "x.json"), "--out"),
    ((), ("run", "--plan"), "--plan"),
    (("--device-type", "x86", "--cpus", "8"), ("run", "--quick"), "bare-metal"),
    (("--cpus", "0"), ("run", "--quick"), "--cpus 1..64"),
    ((), ("run", "--bogus"), "unknown option"),
])
def test_bad_job_options_are_usage_errors(job_dir, extra, run, message):
    with pytest.raises(SystemExit) as exit_:
        job_dir(*extra, run=run)
    assert exit_.value.code == 2


def awk_cases(path):
    result = subprocess.run([BUSYBOX, "awk", lava.CASES_AWK, str(path)], capture_output=True,
                            text=True, check=True)
    return result.stdout.splitlines()


def python_case(name):
    parsed = io.parse_results(json.dumps({"context": {}, "benchmarks": [
        {"name": name, "real_time": 1, "time_unit": "ns"}]})).entries[name]
    return "%s.%s" % (kcidb.family_path(parsed.family), kcidb.params_segment(parsed.params))


@needs_busybox
@pytest.mark.parametrize("fixture", ["base.json", "slow.json", "few_reps.json"])
def test_the_guests_case_names_are_the_kcidb_paths(fixture, tmp_path):
    lines = awk_cases(data(fixture))
    results = io.load_results(data(fixture))
    named = {line.split()[1] for line in lines if line.startswith("lava-test-case ")}
    assert named == {python_case(name) for name in results.entries}
    # One case per row: the median of repeated rows, the row itself otherwise.
    assert len(named) == len([line for line in lines if line.startswith("lava-test-case")])
    skipped = [e for e in results.entries.values() if not e.real_ns]
    for entry in skipped:
        assert any("skipped %s: %s" % (entry.name, entry.errors[0]) in line for line in lines)
        assert "lava-test-case %s --result skip" % python_case(entry.name) in lines


@needs_busybox
def test_tricky_names_agree(tmp_path):
    names = ["BM_BPFRecorder/set:a b/sink:x/min_time:0.5/real_time", "BM_Foo2Bar/8/64",
             "Plain", "BM_X_Y/passive:0/placement:other_cpus/p:1", "BM_A/key:v.1/flag"]
    document = {"context": {}, "benchmarks": [
        {"name": n, "run_name": n, "run_type": "iteration", "repetitions": 1,
         "real_time": 1.5, "time_unit": "us"} for n in names]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document, indent=2))
    lines = awk_cases(path)
    assert [line.split()[1] for line in lines] == [python_case(n) for n in names]
    assert lines[0].endswith("--result pass --measurement 1.5 --units us")


@needs_busybox
def test_the_result_comes_back_byte_for_byte(tmp_path):
    result = open(data("base.json"), "rb").read()
    path = tmp_path / "result.json"
    path.write_bytes(result)
    sent = subprocess.run([BUSYBOX, "sh", "-c", lava.SEND_SCRIPT, "lava-send", str(path)],
                          capture_output=True, text=True, check=True, env={"PATH": "/bin:/usr/bin"},
                          cwd=tmp_path).stdout.splitlines()
    entries = [{"lvl": "target", "msg": line} for line in sent]
    assert lava.parse_log(entries).result == result
    # A damaged line or a cut log is an error, never a wrong file.
    damaged = list(entries)
    damaged[3] = {"lvl": "target", "msg": "A" * len(damaged[3]["msg"])}
    with pytest.raises(lava.LavaError):
        lava.parse_log(damaged)
    with pytest.raises(lava.LavaError, match="cut off"):
        lava.parse_log(entries[:-1])


def test_the_recorded_lava_run_log():
    outcome = lava.parse_log(lava.log_entries(real_log()))
    assert outcome.job_result == "pass" and outcome.job_error == ""
    results = io.parse_results(outcome.result.decode())
    assert results.context["kernel_release"] == "6.12.118+deb12-cloud-amd64"
    cases = {c["case"]: c for c in outcome.cases}
    assert cases.pop(lava.RUN_CASE)["result"] == "pass"
    assert set(cases) == {python_case(name) for name in results.entries}
    for name, entry in results.entries.items():
        case = cases[python_case(name)]
        if entry.real_ns:
            assert case["result"] == "pass" and case["units"] == entry.time_unit
            assert float(case["measurement"]) * io.TIME_UNIT_NS[entry.time_unit] == \
                pytest.approx(entry.real_ns[0])
        else:
            assert case["result"] == "skip"


def test_import_of_a_lava_run_stores_once_with_its_lineage(cli, run_dir, tmp_path):
    history = str(tmp_path / "h.sqlite")
    code, out, err = cli("history", "import", "--create", "--history", history, "--lava", run_dir)
    assert code == 0, err
    assert "LAVA job 1796340610 (device perfscale-qemu01, worker vm): added as run 1" in out
    code, out, err = cli("history", "import", "--create", "--history", history, "--lava", run_dir)
    assert code == 0 and "already there as run 1" in out
    with store.open_history(history) as conn:
        (run,) = store.all_runs(conn)
        context = json.loads(run["context"])
    assert run["host"] == "lava-perfscale-qemu01"
    assert context["lava_job"] == "1796340610" and context["lava_worker"] == "vm"
    assert context["lava_device_type"] == "qemu" and context["vm_accelerator"] == "tcg"
    assert context["vm_vcpus"] == "2" and context["timings_comparable"] == "no"
    assert context["vm_guest_host_name"] == "perfscale-lava"
    assert context["kernel_config_sha256"].startswith("7161a0db")
    code, out, err = cli("kcidb", "--origin", "perfscale_lab", "--run", "1", "--history",
                         history)
    assert code == 0, err
    assert json.loads(out)["checkouts"][0]["misc"]["kernel_release"].startswith("6.12")


def test_a_failed_job_is_one_line_and_stores_nothing(cli, run_dir, tmp_path):
    log = real_log().replace(
        '"msg": {"case": "job", "definition": "lava", "result": "pass"}',
        '"msg": {"case": "job", "definition": "lava", "result": "fail", "error_type": '
        '"Infrastructure", "error_msg": "qemu-system-x86_64 died"}')
    (run_dir / "log.yaml").write_text(log)
    history = str(tmp_path / "h.sqlite")
    code, out, err = cli("history", "import", "--create", "--history", history, "--lava", run_dir)
    assert code == 2
    assert err.strip() == ("history import: LAVA job 1796340610 failed: Infrastructure: "
                           "qemu-system-x86_64 died")
    with store.open_history(history) as conn:
        assert store.all_runs(conn) == []
    # Cut before the end of the result: the same, with the reason.
    text = real_log()
    (run_dir / "log.yaml").write_text(text[:text.index(lava.END)])
    code, _, err = cli("history", "import", "--create", "--history", history, "--lava", run_dir)
    assert code == 2 and "cut off" in err and len(err.strip().splitlines()) == 1


def outcome_of(path):
    with open(path, "rb") as f:
        return lava.Outcome([], f.read(), "", "pass", "")


def test_imports_are_judged_against_the_lineage_like_a_nightly(tmp_path):
    lineage = lava.Lineage("7", "bench01", "x86", "worker1", "https://lava.example", {})
    with store.open_history(str(tmp_path / "h.sqlite")) as conn:
        first = lava.import_run(conn, outcome_of(data("base.json")), lineage, "ci")
        assert first.added and first.baseline_id == 0 and first.status == 0
        second = lava.import_run(conn, outcome_of(data("slow.json")),
                                 dataclasses_replace(lineage, job_id="8"), "ci")
        assert second.added and second.baseline_id == first.run_id
        assert second.status == 1 and any(v.verdict == stats.SLOWER for v in second.verdicts)
        again = lava.import_run(conn, outcome_of(data("slow.json")),
                                dataclasses_replace(lineage, job_id="8"), "ci")
        assert not again.added and again.run_id == second.run_id
        assert len(store.all_runs(conn)) == 2
        stored = kcidb.from_history("perfscale_lab", conn, second.run_id)
    assert any(t["status"] == "FAIL" for t in stored["tests"])


def dataclasses_replace(value, **changes):
    return dataclasses.replace(value, **changes)


def tcg_outcome(path):
    """The result file as a TCG guest on the real clock would have it."""
    with open(path) as f:
        document = json.load(f)
    document["context"].update({"timings_comparable": "no",
                                "timings_note": "emulated by QEMU TCG, not run on the CPU"})
    return lava.Outcome([], json.dumps(document).encode(), "", "pass", "")


def test_tcg_timings_are_not_judged_only_the_counts(tmp_path):
    lineage = lava.Lineage("7", "qemu01", "x86", "worker1", "https://lava.example", {})
    with store.open_history(str(tmp_path / "h.sqlite")) as conn:
        lava.import_run(conn, tcg_outcome(data("base.json")), lineage, "ci")
        judged = lava.import_run(conn, tcg_outcome(data("slow.json")),
                                 dataclasses_replace(lineage, job_id="8"), "ci")
    # slow.json is slower in time (the test above): not judged here, as `compare` does not
    assert judged.verdicts and not any(v.verdict == stats.SLOWER for v in judged.verdicts)
    timed = [v for v in judged.verdicts if v.verdict in stats.JUDGED]
    assert timed and all("timings not judged" in v.note for v in timed)
    assert all(v.verdict in (stats.SAME, stats.COUNTS) for v in timed)
    assert "the counted kernel events only" in judged.reason


def test_the_instruction_clock_job(job_dir):
    code, _, err, folder, _ = job_dir("--clock", "instructions")
    assert code == 0, err
    document = lava.load_yaml(folder / "job.yaml")
    assert "-icount shift=0,sleep=off,align=off" in document["context"]["extra_options"]
    assert lava.validation_problem(document) == ""
    outcome = lava.Outcome([], open(data("base.json"), "rb").read(), "", "pass", "")
    lineage = lava.Lineage("9", "qemu01", "qemu", "w", "lava-run:w", document)
    context = lava.run_context(json.loads(outcome.result)["context"], outcome, lineage)
    assert context["vm_clock"] == "instructions" and context["vm_vcpus"] == "2"


class Rest(http.server.BaseHTTPRequestHandler):
    """LAVA's REST API v0.2 as lava-server 2023.01 answers it (lava_rest_app/base: the
    TestJobSerializer's fields, the logs endpoint's YAML list, create's job_ids), serving
    the recorded lava-run job: what the client reads, not a LAVA."""
    health = "Complete"
    log = ""
    seen = []

    def answer(self, code, body, kind="application/json"):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.seen.append((self.path, self.headers.get("Authorization")))
        if self.path == "/api/v0.2/jobs/77/":
            self.answer(200, {"id": 77, "actual_device": "qemu01", "state": "Finished",
                              "health": self.health, "requested_device_type": "qemu",
                              "definition": open(data("lava/job.yaml")).read()})
        elif self.path == "/api/v0.2/jobs/77/logs/":
            self.answer(200, self.log, "application/yaml")
        elif self.path == "/api/v0.2/devices/qemu01/":
            self.answer(200, {"hostname": "qemu01", "worker_host": "worker7"})
        else:
            self.answer(404, {"detail": "Not found."})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.path, self.headers.get("Authorization")))
        if "device_type: qemu" in body["definition"]:
            self.answer(201, {"message": "job(s) successfully submitted", "job_ids": [77]})
        else:
            self.answer(400, {"message": "Problem with submitted job data: no device type"})

    def log_message(self, *_args):
        pass


@pytest.fixture
def rest():
    Rest.health, Rest.seen = "Complete", []
    Rest.log = "".join("- %s\n" % line for line in real_log().splitlines())
    with http_server(Rest) as httpd:
        yield "http://127.0.0.1:%d" % httpd.server_port


def test_import_from_a_lava_server(cli, rest, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFSCALE_LAVA_TOKEN", "lava-token-1")
    history = str(tmp_path / "h.sqlite")
    code, out, err = cli("history", "import", "--create", "--history", history, "--lava", rest, "77")
    assert code == 0, err
    assert "LAVA job 77 (device qemu01, worker worker7): added as run 1" in out
    assert all(auth == "Token lava-token-1" for _path, auth in Rest.seen)
    code, out, _ = cli("history", "import", "--create", "--history", history, "--lava", rest, "77")
    assert code == 0 and "already there as run 1" in out
    with store.open_history(history) as conn:
        (run,) = store.all_runs(conn)
    context = json.loads(run["context"])
    assert context["lava_source"] == rest and context["lava_worker"] == "worker7"
    assert run["host"] == "lava-qemu01"


def test_an_incomplete_server_job_stores_nothing(cli, rest, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFSCALE_LAVA_TOKEN", "lava-token-1")
    Rest.health = "Incomplete"
    Rest.log = Rest.log.replace(
        '"msg": {"case": "job", "definition": "lava", "result": "pass"}',
        '"msg": {"case": "job", "definition": "lava", "result": "fail", "error_type": '
        '"Infrastructure", "error_msg": "Device qemu01 lost"}')
    history = str(tmp_path / "h.sqlite")
    code, _, err = cli("history", "import", "--create", "--history", history, "--lava", rest, "77")
    assert code == 2
    assert err.strip() == ("history import: LAVA job 77 failed: Infrastructure: Device "
                           "qemu01 lost")
    code, _, err = cli("history", "import", "--create", "--history", history, "--lava", rest, "78")
    assert code == 2 and "HTTP 404" in err and len(err.strip().splitlines()) == 1
    with store.open_history(history) as conn:
        assert store.all_runs(conn) == []


def test_submit_follows_the_job(cli, rest, tmp_path):
    token = tmp_path / "token"
    token.write_text("lava-token-2\n")
    code, out, err = cli("lava", "submit", "--url", rest, "--token-file", token,
                         data("lava/job.yaml"))
    assert code == 0, err
    assert "lava submit: job 77" in out and "finished: Complete" in out
    assert Rest.seen[0] == ("/api/v0.2/jobs/", "Token lava-token-2")
    bad = tmp_path / "bad.yaml"
    bad.write_text("job_name: x\n")
    code, _, err = cli("lava", "submit", "--url", rest, "--token-file", token, bad)
    assert code == 2 and "refused the job: HTTP 400" in err and "no device type" in err

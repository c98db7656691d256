"""A run as a KCIDB report: KernelCI's common results database, I/O schema v5.3.

KCIDB (github kernelci/kcidb-io, kcidb_io/schema/v05_03.py; the schema itself is
kcidb_v5_3.schema.json beside this file) links three kinds of object by id:

    checkout   the kernel source under test: its release, and its tree and commit where
               the run's context has them (kernel_tree, kernel_git_url, kernel_git_commit:
               what a lab that builds its own kernels adds to the context)
    build      the kernel built from it: architecture, config digest (kernel_config_sha256)
    test       one per benchmark and measurement, at a dot-separated path such as
               perfscale.breakpoint.thread.b4_p2_t20.usecs_per_op, with its figure in
               `number` ({value, unit, prefix})

A test is DONE ("completed and produced a performance measurement"), FAIL where the gate
judged the benchmark a regression (its verdict, interval and minimum detectable change in
misc), SKIP where the benchmark did not run (the reason in comment and misc).

Every id is "ORIGIN:" and a digest of what identifies the object (the kernel, the run's
key and the test's path), so the same run reported twice gives the same ids and KCIDB
merges the second submission into the first. KCIDB allows no null anywhere: what is
unknown is left out.
"""

import dataclasses
import datetime
import hashlib
import json
import math
import os
import re
import statistics
import urllib.error
import urllib.request

from perfscale.gate import stats
from perfscale.labs import deadline, tokens
from perfscale.history import store, transfer
from perfscale.results import headlines, io

SCHEMA_VERSION = {"major": 5, "minor": 3}
SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "kcidb_v5_3.schema.json")
ORIGIN_RE = re.compile(r"^[a-z0-9_]+$")  # the schema's origin pattern
_PATH_JUNK = re.compile(r"[^a-zA-Z0-9_-]+")  # what a path segment may not hold
_HEX40 = re.compile(r"[0-9a-f]{40}")  # fullmatch, as every pattern here
_ARCH = re.compile(r"[a-z0-9_]+")
# An https URL as RFC 3986 spells one (KCIDB's format "uri"): no space, no control
# character, no letter outside ASCII, a % only before two hex digits.
_HTTPS_URL = re.compile(r"https://([A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=-]|%[0-9A-Fa-f]{2})+")
# Characters no KCIDB string may hold (NUL: every pattern's [^\0]; PostgreSQL's JSON
# refuses it too), and the other control characters, which no report of ours means.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ALNUM, _UPPER = re.compile(r"^[A-Za-z0-9]$"), re.compile(r"^[A-Z]$")
_LOWER_OR_DIGIT = re.compile(r"^[a-z0-9]$")
_TOKEN_ENV = "PERFSCALE_KCIDB_TOKEN"
# Counter units by name: "usecs/op" is a time in microseconds per op; KCIDB wants the
# unit's symbol without its prefix and `prefix: metric` so its displays scale the value.
_SCALE = {"usecs": ("s", 1e-6), "nsecs": ("s", 1e-9), "msecs": ("s", 1e-3),
          "secs": ("s", 1.0)}
# Debian kernel flavours and what KCIDB calls their architecture (its pattern: [a-z0-9_]*).
_ARCH_OF_FLAVOUR = (("amd64", "x86_64"), ("arm64", "arm64"), ("armmp", "arm"),
                    ("686", "i386"), ("ppc64el", "powerpc"), ("s390x", "s390"))


class KcidbError(Exception):
    """An input or a submission that failed; the text is one line, shown as is."""


@dataclasses.dataclass
class Judgement:
    """What the gate said of one benchmark of a judged run (the history's verdict)."""
    verdict: str
    change: float = math.nan
    pvalue: float = math.nan
    interval: tuple = (math.nan, math.nan)  # bootstrap interval of the change, vs baseline
    mdc: float = math.nan  # the calibrated minimum detectable change; NaN: not calibrated
    noise_floor: float = math.nan
    baseline_run: int = 0

    @property
    def regression(self):
        return self.verdict in (stats.SLOWER, stats.COUNTS)


def check_origin(origin):
    if not ORIGIN_RE.fullmatch(origin or ""):  # fullmatch: `$` lets a last newline by
        raise KcidbError("origin '%s' is not a KCIDB origin (lower-case letters, digits and "
                         "_ only, e.g. perfscale_lab1)" % origin)


def _digest(*parts):
    text = json.dumps(parts, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def segment(text):
    """`text` as one segment of a KCIDB path ([a-zA-Z0-9_-]+)."""
    return _PATH_JUNK.sub("-", str(text)).strip("-") or "_"


def family_path(family):
    """BM_BreakpointThread -> breakpoint.thread: the family's words, one segment each. A
    word starts at a capital after a small letter or digit, or at the last capital of a
    run before a small letter (BPFRecorder -> bpf.recorder); other characters part words.
    The LAVA job's guest names its test cases by the same rule, in awk
    (perfscale.labs.lava.CASES_AWK)."""
    name = family[3:] if family.startswith("BM_") else family
    words, word = [], ""
    for i, c in enumerate(name):
        if not _ALNUM.match(c):
            words.append(word)
            word = ""
            continue
        prev = name[i - 1] if i else ""
        after = name[i + 1] if i + 1 < len(name) else ""
        if word and _UPPER.match(c) and (_LOWER_OR_DIGIT.match(prev) or (
                _UPPER.match(prev) and re.match(r"^[a-z]$", after))):
            words.append(word)
            word = ""
        word += c
    words.append(word)
    return ".".join(w.lower() for w in words if w) or "_"


def params_segment(params):
    """{'breakpoints': '4', 'parallelism': '2', 'threads': '20'} -> b4_p2_t20: each
    parameter's initial and value; a parameter whose initial another one shares keeps its
    whole name (passive:0/placement:0 -> passive0_placement0), so no two instances of a
    family meet."""
    if not params:
        return "default"
    initials = [k[:1] for k in params]
    parts = []
    for key, value in params.items():
        label = key[:1] if initials.count(key[:1]) == 1 else key
        parts.append(label + str(value))
    return segment("_".join(parts))


def metric_segment(metric):
    """usecs/op -> usecs_per_op; real_time stays."""
    return segment(metric.replace("/", "_per_"))


def number_of(metric, value):
    """KCIDB's number of a measurement: the value in its unit's base symbol, the unit, and
    a metric prefix for the display to add."""
    if metric == "real_time":  # value in ns
        return {"value": value * 1e-9, "unit": "s", "prefix": "metric"}
    head, sep, rest = metric.partition("/")
    if head in _SCALE:
        unit, scale = _SCALE[head]
        return {"value": value * scale, "unit": unit + sep + rest, "prefix": "metric"}
    return {"value": value, "unit": metric, "prefix": "metric"}


def measurements(entry):
    """[(metric, median)] of one benchmark: its real time, then the counters its family's
    headlines are figured from (results.headlines), those it reports."""
    found = []
    if entry.real_ns:
        found.append(("real_time", statistics.median(entry.real_ns)))
    for spec in headlines.HEADLINES:
        if spec.family != entry.family:
            continue
        for metric in spec.metrics:
            values = entry.counters.get(metric)
            if values and metric not in [m for m, _ in found]:
                found.append((metric, statistics.median(values)))
    return [(m, v) for m, v in found if math.isfinite(v)]


def architecture(context):
    arch = context.get("kernel_arch") or context.get("machine_arch")
    if isinstance(arch, str) and _ARCH.fullmatch(arch):
        return arch
    release = str(context.get("kernel_release") or "")
    for flavour, name in _ARCH_OF_FLAVOUR:
        if re.search(r"-%s(-|$)" % flavour, release):
            return name
    return ""


def _time(text):
    """An RFC 3339 time from the context's date, or ''."""
    if not isinstance(text, str):
        return ""
    try:
        parsed = datetime.datetime.fromisoformat(text)
    except ValueError:
        return ""
    if parsed.tzinfo is None:
        return ""
    # In UTC: RFC 3339 offsets are hours and minutes, and an offset with seconds (Python
    # writes +05:30:15 for one) is no date-time KCIDB takes.
    return parsed.astimezone(datetime.timezone.utc).isoformat()


def clean(value):
    """`value` without None and non-finite numbers anywhere (KCIDB allows no null), and
    its text without control characters (a NUL is in no KCIDB string; the others become
    U+FFFD, so that what was there is seen)."""
    if isinstance(value, dict):
        return {scrubbed(k): clean(v) for k, v in value.items() if _present(v)}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value if _present(v)]
    return scrubbed(value) if isinstance(value, str) else value


def scrubbed(value):
    """`value` (a string) as KCIDB takes text: NUL left out, other control characters but
    tab and newline as U+FFFD."""
    return _CONTROL.sub(lambda m: "" if m.group() == "\0" else "\ufffd", value)


def _present(value):
    if value is None or value == "" or value == {}:
        return False
    return not (isinstance(value, float) and not math.isfinite(value))


def checkout_and_build(origin, context):
    release = str(context.get("kernel_release") or "unknown")
    tree = str(context.get("kernel_tree") or "")
    url = str(context.get("kernel_git_url") or "")
    commit = str(context.get("kernel_git_commit") or "").lower()
    commit = commit if _HEX40.fullmatch(commit) else ""
    checkout = clean({
        "id": "%s:checkout-%s" % (origin, _digest(release, tree, url, commit)),
        "origin": origin,
        "tree_name": tree,
        "git_repository_url": url if _HTTPS_URL.fullmatch(url) else "",
        "git_commit_hash": commit,
        "comment": "Linux %s" % release,
        "valid": True,
        "misc": {"kernel_release": release, "kernel_version": context.get("kernel_version"),
                 "vm_kernel": context.get("vm_kernel"),
                 # What the fields above could not take, kept as it came.
                 "kernel_git_url": url if url and not _HTTPS_URL.fullmatch(url) else None},
    })
    arch = architecture(context)
    config = str(context.get("kernel_config_sha256") or "")
    build = clean({
        "id": "%s:build-%s" % (origin, _digest(checkout["id"], arch, config)),
        "origin": origin,
        "checkout_id": checkout["id"],
        "architecture": arch,
        "comment": "Linux %s%s" % (release, ", config sha256 %s" % config[:12] if config
                                   else ""),
        # It booted and ran the suite: the build under test worked.
        "status": "PASS",
        "misc": {"kernel_config_sha256": config},
    })
    return checkout, build


def environment(context):
    host = str(context.get("host_name") or "unknown")
    cpus = io.cpu_list_size(context.get("online_cpus")) or context.get("num_online_cpus") \
        or context.get("num_cpus")
    guest = context.get("vm_accelerator")
    comment = "host %s, %s CPUs" % (host, cpus)
    if guest:
        comment += ", QEMU %s guest (%s)" % (str(guest).upper(), context.get("vm_kernel", ""))
    keys = ("host_name", "hypervisor", "clocksource", "perf_event_paranoid",
            "perfscale_revision", "attribution", "timings_comparable", "timings_note")
    misc = {k: context[k] for k in keys if k in context}
    misc.update({k: v for k, v in context.items()
                 if k.startswith(("vm_", "machine_", "lava_")) and isinstance(v, (str, int))})
    return clean({"comment": comment, "misc": misc})


def report(origin, results, run_key, judgements=None, lineage=None):
    """The KCIDB document of `results` (io.ResultSet), keyed by `run_key`; `judgements`
    {benchmark: Judgement} where the gate judged the run; `lineage` free-form facts of the
    run (history run id, config) for every test's misc."""
    check_origin(origin)
    judgements = judgements or {}
    context = results.context
    checkout, build = checkout_and_build(origin, context)
    env = environment(context)
    start = _time(context.get("date"))
    tests = []
    bases = test_paths(results.entries.values())
    for entry in results.entries.values():
        base = bases[entry.name]
        misc = clean({"benchmark": entry.name, "run_key": run_key,
                      "repetitions": len(entry.real_ns), **(lineage or {})})
        common = clean({"build_id": build["id"], "origin": origin, "start_time": start,
                        "environment": env})
        found = measurements(entry)
        if not found:
            reason = "; ".join(entry.errors) or "no usable repetition"
            tests.append(clean({
                **common, "id": "%s:%s:%s" % (origin, run_key, base), "path": base,
                "status": "SKIP", "comment": "%s: %s" % (entry.name, reason)[:1000],
                "misc": {**misc, "reason": reason}}))
            continue
        judged = judgements.get(entry.name)
        for metric, value in found:
            path = "%s.%s" % (base, metric_segment(metric))
            test_misc = dict(misc, metric=metric, median=value)
            status = "DONE"
            if judged is not None:
                test_misc["gate"] = _gate_misc(judged)
                if judged.regression:
                    status = "FAIL"
            tests.append(clean({
                **common, "id": "%s:%s:%s" % (origin, run_key, path), "path": path,
                "status": status, "number": number_of(metric, value),
                "comment": "%s %s" % (entry.name, metric), "misc": test_misc}))
    document = {"version": dict(SCHEMA_VERSION), "checkouts": [checkout],
                "builds": [build], "tests": tests}
    check(document)
    return document


def test_paths(entries):
    """{benchmark name: its tests' path}: the family's words and the parameters' initials
    (family_path, params_segment), as the LAVA job's guest names its cases. Where two
    benchmarks come out the same (names that differ only in what a path cannot hold, or
    in a parameter the path leaves out, such as min_time), each of them gets a digest of
    its whole name as well: one id for two would have KCIDB keep one of the two figures."""
    paths = {}
    for entry in entries:
        paths[entry.name] = "perfscale.%s.%s" % (family_path(entry.family),
                                                 params_segment(entry.params))
    taken = {}
    for path in paths.values():
        taken[path] = taken.get(path, 0) + 1
    return {name: path if taken[path] == 1 else "%s-%s" % (path, _digest(name)[:8])
            for name, path in paths.items()}


def schema_problems(document):
    """What KCIDB's own schema (kcidb_v5_3.schema.json, JSON Schema draft 7) says against
    `document`: [] when it takes it. Checked as KCIDB reads the schema, where Python's
    jsonschema alone is laxer: a pattern's `$` is the end of the text (ECMA-262), not a
    last newline before it, and date-time and uri are RFC 3339's and RFC 3986's formats
    (Debian 12's jsonschema has no date-time checker). KcidbError when python3-jsonschema
    is missing."""
    try:
        import jsonschema
    except ImportError:
        raise KcidbError("checking the report against KCIDB's schema needs Python's "
                         "jsonschema: tools/setup tools installs python3-jsonschema") from None
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        schema = json.load(f, object_hook=_end_anchored)
    formats = jsonschema.FormatChecker()
    formats.checks("date-time")(_rfc3339)
    validator = jsonschema.Draft7Validator(schema, format_checker=formats)
    return ["%s: %s" % ("/".join(str(p) for p in error.absolute_path) or "the report",
                        error.message)
            for error in sorted(validator.iter_errors(document),
                                key=lambda e: [str(p) for p in e.absolute_path])]


def check(document):
    """KcidbError naming the first of schema_problems, or the first id two objects share
    (KCIDB would merge them into one)."""
    problems = schema_problems(document)
    seen = set()
    for kind in ("checkouts", "builds", "tests"):
        for item in document.get(kind, []):
            if item["id"] in seen:
                problems.append("%s: id %s is given twice" % (kind, item["id"]))
            seen.add(item["id"])
    if problems:
        raise KcidbError("the report breaks KCIDB's schema, so it was neither written nor "
                         "sent: %s%s" % (problems[0][:300], " (and %d more)" % (
                             len(problems) - 1) if len(problems) > 1 else ""))


def _end_anchored(node):
    if isinstance(node.get("pattern"), str):
        node["pattern"] = node["pattern"].replace("$", r"\Z")
    return node


_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}"
                      r"(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})")


def _rfc3339(value):
    if not isinstance(value, str):
        return True
    if not _RFC3339.fullmatch(value):
        return False
    try:
        datetime.datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _gate_misc(judged):
    return clean({
        "verdict": judged.verdict, "change": judged.change, "pvalue": judged.pvalue,
        "interval": [judged.interval[0], judged.interval[1]]
        if all(math.isfinite(x) for x in judged.interval) else None,
        "confidence": stats.CONFIDENCE, "mdc": judged.mdc, "noise_floor": judged.noise_floor,
        "baseline_run": judged.baseline_run or None})


def from_results_file(origin, path):
    """The report of a result file, keyed as `history import` keys it (config ''), so the
    file and its imported run report under the same ids. No gate: DONE or SKIP."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as err:
        raise KcidbError("%s: cannot read: %s" % (path, err.strerror or err)) from None
    try:
        results = io.parse_results(raw.decode("utf-8", "replace"), source=path)
    except io.ResultsError as err:
        raise KcidbError(str(err)) from None
    return report(origin, results, transfer.file_run_key(raw, results))


def from_history(origin, conn, run_id):
    """The report of a run of the history, with the gate's verdicts: the stored verdict,
    change and p; the interval as the gate figures it (stats.ratio_interval, seeded by
    the benchmark's name) against the run's baseline; the calibrated MDC."""
    run = store.get_run(conn, run_id)
    if run is None:
        raise KcidbError("no run %d in %s" % (run_id, conn.name))
    entries = store.load_entries(conn, run_id)
    results = io.ResultSet("run %d" % run_id, json.loads(run["context"]), entries)
    base = store.load_entries(conn, run["baseline_id"]) if run["baseline_id"] else {}
    calibration = store.load_calibration(conn, run["host"], run["cpus"], run["config"],
                                         run["machine"])
    judgements = {}
    for row in store.run_content(conn, run_id):
        name, verdict, change, pvalue = row["name"], row["verdict"], row["change"], row["pvalue"]
        if verdict is None:
            continue  # not judged (no baseline): DONE
        cal = calibration.get((name, stats.REAL_TIME))
        interval = (math.nan, math.nan)
        if name in base and base[name].real_ns and entries[name].real_ns:
            interval = stats.ratio_interval(name, base[name].real_ns, entries[name].real_ns)
        judgements[name] = Judgement(
            verdict, _float(change), _float(pvalue), interval,
            cal.mdc if cal else math.nan, cal.noise_floor if cal else math.nan,
            run["baseline_id"] or 0)
    lineage = {"history_run": run_id, "config": run["config"], "machine": run["machine"],
               "recorded_at": run["recorded_at"]}
    return report(origin, results, run["run_key"], judgements, lineage)


def _float(value):
    return float(value) if value is not None else math.nan


def dumps(document):
    return json.dumps(document, indent=1, allow_nan=False) + "\n"


def read_token(token_file):
    """The bearer token: from `token_file`, else the environment's PERFSCALE_KCIDB_TOKEN
    (perfscale.labs.tokens: never from the command line, never printed)."""
    try:
        token = tokens.read(token_file, _TOKEN_ENV)
    except tokens.TokenError as err:
        raise KcidbError(str(err)) from None
    if not token:
        raise KcidbError("token file %s is empty" % token_file if token_file else
                         "no token: give --token-file FILE or set %s" % _TOKEN_ENV)
    return token


def submit(url, body, token, timeout=30):
    """POSTs the report `body` (bytes) to `url` (kcidb-ng's /submit) with the bearer token;
    returns the server's reply text. KcidbError (one line, no token) when the server cannot
    be reached or refuses."""
    try:
        deadline.check_url(url)
    except ValueError as err:
        raise KcidbError(str(err)) from None
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + token})
    try:
        return deadline.read(request, timeout).decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        text = err.read().decode("utf-8", "replace").strip().splitlines()
        raise KcidbError("%s refused the report: HTTP %d %s%s" % (
            deadline.shown_url(url), err.code, err.reason, ": " + text[0][:200] if text else "")) \
            from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise KcidbError("cannot reach %s: %s" % (deadline.shown_url(url), reason)) from None

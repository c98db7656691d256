"""A LAVA job that runs perfscale, and its results read back from the job's log.

LAVA (Linaro's Automated Validation Architecture, Debian 12's lava-server, lava-dispatcher,
lava-common 2023.01) schedules jobs onto a lab's machines. A job is YAML: the images to
deploy, how to boot them, and a Lava-Test Test Definition 1.0 whose steps run in the booted
system and report test cases with `lava-test-case NAME --result R [--measurement X --units
U]`.

perfscale's job deploys the kernel under test and a ramdisk built as `vm` builds its guest's
(perfscale.vm.initramfs: busybox, the family binary and its libraries), whose /init mounts
what the suite reads and starts a shell on the console for LAVA's test shell; LAVA adds its
own test scripts into the ramdisk (`overlays: lava: true`, no guest disk). The test runs the
binary with the flags `run ARGS` gives it (perfscale.suite.runner.binary_flags), then
reports each benchmark row as a test case (its median real time when repeated, in its time
unit; a skipped row as skip, its reason echoed before it), and prints the whole result file,
gzipped and base64, between two markers with its sha256: parse_log takes it back, byte for
byte. Device types: `qemu` (the kernel and ramdisk booted by LAVA's QEMU, TCG as `vm` uses
it) and `x86` (a bare-metal PC booted over iPXE from LAVA's TFTP server).
"""

import base64
import dataclasses
import gzip
import hashlib
import json
import math
import os
import re
import shlex
import urllib.error
import urllib.parse
import urllib.request

from perfscale.gate import comparability, floors, stats
from perfscale.history import store
from perfscale.labs import deadline, tokens
from perfscale.results import io
from perfscale.vm import initramfs, qemu

GUEST_OUT = "/tmp/out"
TIMEOUT = 60  # seconds for one whole answer of a LAVA server (labs.deadline)
RESULT = GUEST_OUT + "/result.json"
BEGIN, END = "PERFSCALE-LAVA-RESULT-BEGIN", "PERFSCALE-LAVA-RESULT-END"
CONFIG_MARK = "PERFSCALE-LAVA-KERNEL-CONFIG"
PROMPT = "perfscale-lava# "
DEFINITION = "perfscale"  # the test definition's name (LAVA's suite: 0_perfscale)
RUN_CASE = "perfscale-run"  # the binary's exit: pass when 0
DEVICE_TYPES = ("qemu", "x86")
TEMPLATE_DIRS = ("/etc/lava-server/dispatcher-config/device-types",
                 "/usr/share/lava-server/device-types")

# Test case names, from Google Benchmark's: the family's words and the parameters'
# initials, as the KCIDB paths (perfscale.labs.kcidb.family_path, params_segment) name
# them; testing/py/test_lava.py holds the two to the same names.
CASES_AWK = r"""
function isup(c) { return c ~ /^[A-Z]$/ }
function islow(c) { return c ~ /^[a-z0-9]$/ }
function addword(out, word) {
    if (word == "") return out
    word = tolower(word)
    return out == "" ? word : out "." word
}
function family_path(fam,   n, i, c, prev, nxt, out, word) {
    if (substr(fam, 1, 3) == "BM_") fam = substr(fam, 4)
    n = length(fam); out = ""; word = ""
    for (i = 1; i <= n; i++) {
        c = substr(fam, i, 1)
        if (c !~ /^[A-Za-z0-9]$/) { out = addword(out, word); word = ""; continue }
        prev = i > 1 ? substr(fam, i - 1, 1) : ""
        nxt = i < n ? substr(fam, i + 1, 1) : ""
        if (word != "" && isup(c) && (islow(prev) || (isup(prev) && nxt ~ /^[a-z]$/))) {
            out = addword(out, word); word = ""
        }
        word = word c
    }
    out = addword(out, word)
    return out == "" ? "_" : out
}
function segment(s) {
    gsub(/[^a-zA-Z0-9_-]+/, "-", s); sub(/^-+/, "", s); sub(/-+$/, "", s)
    return s == "" ? "_" : s
}
function params_segment(rn,   n, seg, i, p, k, v, m, pos, keys, vals, count, out, c) {
    n = split(rn, seg, "/"); m = 0; pos = 0
    for (i = 2; i <= n; i++) {
        p = index(seg[i], ":")
        if (p > 1) {
            k = substr(seg[i], 1, p - 1); v = substr(seg[i], p + 1)
            if (k == "min_time" || k == "min_warmup_time" || k == "iterations" || k == "repeats")
                continue
        } else if (seg[i] ~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/) {
            k = "arg" pos; pos++; v = seg[i]
        } else continue
        m++; keys[m] = k; vals[m] = v
    }
    if (m == 0) return "default"
    for (i = 1; i <= m; i++) count[substr(keys[i], 1, 1)]++
    out = ""
    for (i = 1; i <= m; i++) {
        c = substr(keys[i], 1, 1)
        out = out (i > 1 ? "_" : "") (count[c] == 1 ? c : keys[i]) vals[i]
    }
    return segment(out)
}
function case_name(rn,   first) {
    first = rn; sub(/\/.*/, "", first)
    return family_path(first) "." params_segment(rn)
}
function quoted(s) { gsub(/'/, "'\\''", s); return "'" s "'" }
function emit(   rn, name, reason) {
    rn = ("run_name" in f) ? f["run_name"] : f["name"]
    if (rn == "" || (rn in done)) return
    name = case_name(rn)
    if (f["error_occurred"] == "true" || (f["skipped"] != "" && f["skipped"] != "false" \
                                          && f["skipped"] != "0")) {
        reason = f["error_message"] != "" ? f["error_message"] : f["skip_message"]
        print "echo " quoted("perfscale: skipped " rn ": " reason)
        print "lava-test-case " name " --result skip"
        done[rn] = 1
        return
    }
    if (f["run_type"] == "aggregate") {
        if (f["aggregate_name"] != "median") return
    } else if (f["repetitions"] + 0 > 1) return
    if (f["real_time"] == "" || f["time_unit"] == "") return
    print "lava-test-case " name " --result pass --measurement " f["real_time"] \
          " --units " f["time_unit"]
    done[rn] = 1
}
/"benchmarks": \[/ { inb = 1; next }
!inb { next }
/^[ \t]*\{[ \t]*$/ { for (k in f) delete f[k]; next }
/^[ \t]*\},?[ \t]*$/ { emit(); next }
/^[ \t]*"[^"]+": / {
    line = $0; sub(/^[ \t]*"/, "", line)
    p = index(line, "\":"); k = substr(line, 1, p - 1); v = substr(line, p + 2)
    sub(/^[ \t]*/, "", v); sub(/,[ \t]*$/, "", v)
    if (v ~ /^".*"$/) v = substr(v, 2, length(v) - 2)
    f[k] = v
}
"""

# /perfscale/lava-cases RESULT: the binary's exit as a test case, then one per row.
CASES_SCRIPT = """#!/bin/sh
# Reports the run to LAVA: its exit status, then each benchmark row of RESULT (Google
# Benchmark's JSON) as a test case (perfscale.labs.lava).
rc=$(cat %(out)s/rc 2>/dev/null || echo missing)
if [ "$rc" = 0 ]; then
    lava-test-case %(run_case)s --result pass
else
    echo "perfscale: the benchmark binary exited $rc"
    lava-test-case %(run_case)s --result fail
fi
[ -s "$1" ] || { echo "perfscale: no results in $1"; exit 0; }
awk -f /perfscale/lava-cases.awk "$1" >%(out)s/cases.sh
. %(out)s/cases.sh
""" % {"out": GUEST_OUT, "run_case": RUN_CASE}

# /perfscale/lava-send RESULT: the file itself, for the importer.
SEND_SCRIPT = """#!/bin/sh
# Prints RESULT into the job's log, gzipped and base64 between two markers, with the
# sha256 of the file: the importer takes it back byte for byte (perfscale.labs.lava).
[ -s "$1" ] || exit 0
sum=$(sha256sum "$1" | cut -d' ' -f1)
echo %(begin)s
gzip -9 -c "$1" | base64
echo "%(end)s $sum"
""" % {"begin": BEGIN, "end": END}


class LavaError(Exception):
    """A job that cannot be written or read back; one line, shown as is."""


TOKEN_ENV = "PERFSCALE_LAVA_TOKEN"


def read_token(token_file, required=True):
    """A LAVA server's API token, from `token_file`, else $PERFSCALE_LAVA_TOKEN
    (perfscale.labs.tokens); '' when neither gives one and none is `required` (a server
    that lets anyone read its jobs)."""
    try:
        token = tokens.read(token_file, TOKEN_ENV)
    except tokens.TokenError as err:
        raise LavaError(str(err)) from None
    if not token and (required or token_file):
        raise LavaError("token file %s is empty" % token_file if token_file else
                        "no token: give --token-file FILE or set %s" % TOKEN_ENV)
    return token


def guest_init(env):
    """The ramdisk's /init: the guest's usual set-up, then a shell on the console with a
    prompt LAVA waits for (its test shell types into it)."""
    return initramfs.init_prelude(env, "perfscale-lava") + """mkdir -p %s
echo "perfscale: LAVA guest ready"
export PS1='%s'
exec setsid cttyhack sh
""" % (GUEST_OUT, PROMPT)


def ramdisk(binary, env):
    """(the gzipped ramdisk, the binary's path in the guest)."""
    archive, guest_binary = initramfs.binary_archive(binary)
    archive.file("init", guest_init(env).encode())
    archive.file("perfscale/lava-cases", CASES_SCRIPT.encode())
    archive.file("perfscale/lava-cases.awk", CASES_AWK.encode(), mode=0o644)
    archive.file("perfscale/lava-send", SEND_SCRIPT.encode())
    return archive.gzipped(), guest_binary


@dataclasses.dataclass
class Job:
    """What a perfscale LAVA job is made of."""
    name: str
    device_type: str            # qemu or x86
    kernel_url: str
    ramdisk_url: str
    kernel_sha256: str
    ramdisk_sha256: str
    command: list               # the guest binary and its flags
    cpus: int = 2               # qemu only
    mem_mib: int = 1024         # qemu only
    clock: str = "real"         # qemu only: real, or instructions (QEMU's -icount)
    timeout_min: int = 60
    metadata: dict = dataclasses.field(default_factory=dict)


def steps(job):
    """The test definition's steps, in the guest's shell (LAVA runs them with set -e)."""
    return [
        "mkdir -p %s && cd /tmp" % GUEST_OUT,
        "[ ! -r /proc/config.gz ] || echo \"%s $(zcat /proc/config.gz | sha256sum | "
        "cut -d' ' -f1)\"" % CONFIG_MARK,
        # Through a pipe: a progress line redrawn in place would reach the log as a smear
        # of carriage returns; the status is kept for lava-cases, and a failing binary
        # must not stop the steps that report it (set -e).
        "{ %s; echo $? >%s/rc; } 2>&1 | cat" % (shlex.join(job.command), GUEST_OUT),
        "/perfscale/lava-cases %s" % RESULT,
        "/perfscale/lava-send %s" % RESULT,
    ]


def definition(job):
    """The job as LAVA's YAML document (a dict)."""
    timeouts = {"job": {"minutes": job.timeout_min},
                "action": {"minutes": job.timeout_min},
                "connection": {"minutes": 2}}
    test = {"test": {
        "timeout": {"minutes": max(1, job.timeout_min - 10)},
        "definitions": [{
            "from": "inline", "name": DEFINITION, "path": "inline/perfscale.yaml",
            "repository": {
                "metadata": {"format": "Lava-Test Test Definition 1.0", "name": DEFINITION,
                             "description": "perfscale's benchmark suite; each benchmark "
                                            "row a test case (docs/labs.md)"},
                "run": {"steps": steps(job)}}}]}}
    if job.device_type == "qemu":
        deploy = {"deploy": {
            "to": "tmpfs", "timeout": {"minutes": 5},
            "images": {
                "kernel": {"url": job.kernel_url, "sha256sum": job.kernel_sha256,
                           "image_arg": "-kernel {kernel} -append \"console=ttyS0,115200 "
                                        "rdinit=/init panic=-1 nowatchdog\""},
                "ramdisk": {"url": job.ramdisk_url, "sha256sum": job.ramdisk_sha256,
                            "image_arg": "-initrd {ramdisk}", "format": "cpio.newc",
                            "compression": "gz", "overlays": {"lava": True}}}}}
        boot = {"boot": {"method": "qemu", "media": "tmpfs", "timeout": {"minutes": 5},
                         "prompts": [PROMPT]}}
        # As `vm` runs TCG: every vCPU on one host thread (docs/vm.md: "Guests that lock
        # up"), QEMU's "max" CPU; on the instruction clock without CX16 (perfscale.vm.qemu).
        timing = ["-cpu %s" % qemu.ICOUNT_CPU, "-icount %s" % qemu.ICOUNT] \
            if job.clock == "instructions" else ["-cpu max"]
        context = {"arch": "amd64", "memory": job.mem_mib, "no_kvm": True,
                   "extra_options": ["-smp %d" % job.cpus, "-accel tcg,thread=single"]
                   + timing}
    else:
        deploy = {"deploy": {
            "to": "tftp", "timeout": {"minutes": 5},
            "kernel": {"url": job.kernel_url, "sha256sum": job.kernel_sha256},
            "ramdisk": {"url": job.ramdisk_url, "sha256sum": job.ramdisk_sha256,
                        "compression": "gz", "install_overlay": True,
                        "install_modules": False}}}
        boot = {"boot": {"method": "ipxe", "commands": "ramdisk", "timeout": {"minutes": 10},
                         "prompts": [PROMPT]}}
        context = {"extra_kernel_args": "rdinit=/init nowatchdog"}
    document = {
        "device_type": job.device_type, "job_name": job.name, "timeouts": timeouts,
        "priority": "medium", "visibility": "public", "context": context,
        "actions": [deploy, boot, test]}
    if job.metadata:
        document["metadata"] = {k: str(v) for k, v in job.metadata.items()}
    return document


def validation_problem(document):
    """'' when LAVA's own job validation (lava_common.schemas.validate, strict, as the
    server checks a submission) accepts `document`, else its complaint. LavaError when
    lava-common is not installed."""
    try:
        from lava_common import schemas
        from voluptuous import Invalid
    except ImportError:
        raise LavaError("LAVA's validator is missing: install Debian's lava-common "
                        "(apt-get install lava-common)") from None
    try:
        schemas.validate(document, strict=True)
    except Invalid as err:
        return "%s (at %s)" % (err.msg, "/".join(str(p) for p in err.path))
    return ""


JOB_NAME_MAX = 200  # characters: lava_common.schemas' job_name, Length(max=200)


def job_name(run_args, label):
    """The job's name when the user gives none: the run and the kernel, the run cut short
    (with an ellipsis) where the whole would pass LAVA's 200 characters; the whole run
    is in the job's metadata (perfscale.run) all the same."""
    tail = " on %s" % label
    run = "perfscale %s" % " ".join(run_args)
    if len(run) + len(tail) > JOB_NAME_MAX:
        run = run[:max(0, JOB_NAME_MAX - len(tail) - 1)] + "\u2026"
    return (run + tail)[:JOB_NAME_MAX]


def file_url(path):
    """The file:// URL of `path` as LAVA reads one. LAVA 2023.01 opens urlparse(url).path
    as it is, never unescaped (lava_dispatcher/actions/deploy/download.py,
    FileDownloadAction), so a percent-escaped path would name another file: the URL holds
    the path as it is, and a path that would not come back whole ('#', '?', a ';' in the
    file's name, a line break), or a file name with white space (LAVA puts the name on
    QEMU's command line), is refused: LavaError."""
    path = os.path.abspath(path)
    url = "file://" + path
    name = os.path.basename(path)
    if urllib.parse.urlparse(url).path != path or any(c.isspace() for c in name):
        raise LavaError("%r cannot go into a file:// URL as LAVA reads one (it takes the "
                        "URL's path unescaped; '#', '?', ';', line breaks and a file name "
                        "with spaces do not come back whole): use another folder or name, "
                        "or serve the folder and give --image-url" % path)
    return url


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def find_templates(extra=()):
    """The folder of LAVA's device-type templates (qemu.jinja2 and base.jinja2)."""
    for folder in tuple(extra) + TEMPLATE_DIRS:
        if folder and os.path.isfile(os.path.join(folder, "qemu.jinja2")):
            return folder
    return ""


# A qemu device's dictionary: amd64 under TCG (no KVM here, as `vm` boots its guests), user
# networking. `lava run` adds the memory and the vCPUs; a server's device (`lava start`)
# leaves them to each job's context, which perfscale's jobs set.
QEMU_DICTIONARY = ("{% extends 'qemu.jinja2' %}\n{% set arch = 'amd64' %}\n"
                   "{% set no_kvm = True %}\n{% set netdevice = 'user' %}\n")


def device_description(templates, cpus, mem_mib, name="perfscale-qemu01"):
    """A qemu device's description as LAVA's server renders it for its worker: the
    device-type template qemu.jinja2 with a device dictionary (TCG, no KVM)."""
    import jinja2
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader([templates]),
                                     autoescape=False, trim_blocks=True)
    dictionary = QEMU_DICTIONARY + (
        "{%% set memory = %d %%}\n"
        "{%% set extra_options = ['-smp %d', '-accel tcg,thread=single'] %%}\n"
        % (mem_mib, cpus))
    return "# device %s\n" % name + environment.from_string(dictionary).render()


@dataclasses.dataclass
class Outcome:
    """What a job's log says."""
    cases: list          # LAVA's result entries of the perfscale definition (dicts)
    result: bytes        # the result file, b"" when the log holds none
    config_sha256: str   # the guest kernel's config digest, "" when it has no config.gz
    job_result: str      # LAVA's own verdict on the job: pass, fail, or "" when absent
    job_error: str       # and why it failed (error_type: error_msg)


_B64 = re.compile(r"^[A-Za-z0-9+/=]+$")


def parse_log(entries):
    """An Outcome from a LAVA job log: the list of {dt, lvl, msg} entries lava-run writes
    to its output and the server serves at /api/v0.2/jobs/ID/logs/. LavaError when the
    result between the markers is cut or does not match its sha256."""
    cases, lines, config, job_result, job_error = [], None, "", "", ""
    result = b""
    for entry in entries or ():
        if not isinstance(entry, dict):
            continue
        level, msg = entry.get("lvl"), entry.get("msg")
        if level == "results" and isinstance(msg, dict):
            if msg.get("definition") == "lava" and msg.get("case") == "job":
                job_result = str(msg.get("result", ""))
                if msg.get("error_msg"):
                    job_error = "%s: %s" % (msg.get("error_type", "error"), msg["error_msg"])
            elif str(msg.get("definition", "")).endswith("_" + DEFINITION):
                cases.append(msg)
            continue
        if level != "target" or not isinstance(msg, str):
            continue
        for text in msg.replace("\r", "\n").split("\n"):
            text = text.strip()
            if text == BEGIN:
                lines = []
            elif text.startswith(END + " ") and lines is not None:
                result = _decode(lines, text.split()[1])
                lines = None
            elif text.startswith(CONFIG_MARK + " "):
                config = text.split()[1]
            elif lines is not None and _B64.match(text):
                lines.append(text)
    if lines is not None:
        raise LavaError("the job's log holds the start of the result file but not its end "
                        "(cut off)")
    return Outcome(cases, result, config, job_result, job_error)


def _decode(lines, expected):
    try:
        data = gzip.decompress(base64.b64decode("".join(lines), validate=True))
    except (ValueError, OSError, EOFError) as err:
        raise LavaError("the result file in the job's log is damaged: %s" % err) from None
    if hashlib.sha256(data).hexdigest() != expected:
        raise LavaError("the result file in the job's log does not match its sha256 "
                        "(%s)" % expected[:12])
    return data


LOCAL_DEVICE = "perfscale-qemu01"  # the device `lava run` describes for lava-run


def to_yaml(document):
    import yaml
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False, width=100)


def load_yaml(path):
    """A YAML file (a job); LavaError when it is not YAML."""
    import yaml
    with open(path, encoding="utf-8") as f:
        try:
            document = yaml.safe_load(f)
        except yaml.YAMLError as err:
            raise LavaError("not YAML: %s" % str(err).splitlines()[0]) from None
        except RecursionError:
            raise LavaError("not a LAVA job: nested deeper than Python's stack") from None
        except UnicodeDecodeError:
            raise LavaError("not UTF-8 text, so not a LAVA job") from None
    if not isinstance(document, dict):
        raise LavaError("not a LAVA job (a YAML mapping)")
    return document


def log_entries(text):
    """A LAVA job log's entries: one `{"dt": ..., "lvl": ..., "msg": ...}` per line as
    lava-run writes them, `- {...}` as the server serves them (a YAML list); other lines
    (a helper's stray output) are left out, so one bad line does not lose the log."""
    import yaml
    entries = []
    for line in text.splitlines():
        line = line[2:] if line.startswith("- {") else line
        if not line.startswith("{"):
            continue
        try:
            entry = yaml.safe_load(line)
        except (yaml.YAMLError, RecursionError):  # a line nested past Python's stack
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


@dataclasses.dataclass
class Lineage:
    """Where a LAVA job ran: LAVA's job, device and worker (the run's context lava_*)."""
    job_id: str
    device: str
    device_type: str
    worker: str
    source: str          # the server's URL, or "lava-run" for a job run without one
    definition: dict     # the job as submitted (its metadata names the kernel)


@dataclasses.dataclass
class Imported:
    run_id: int
    added: bool
    baseline_id: int     # 0: none (the lineage's first run, or not judged)
    verdicts: list
    status: int          # stats.gate_status's: 0 pass, 1 regression, 2 could not judge
    reason: str


def job_failure(outcome, lineage):
    """The one line that says why a job gives no run to import, or ''."""
    where = "LAVA job %s" % lineage.job_id
    if outcome.job_result and outcome.job_result != "pass":
        return "%s failed: %s" % (where, outcome.job_error or "LAVA gives no reason")
    if not outcome.result:
        run = [c for c in outcome.cases if c.get("case") == RUN_CASE]
        if run and run[0].get("result") != "pass":
            return "%s: the benchmark binary failed in the guest (test case %s: %s)" % (
                where, RUN_CASE, run[0].get("result"))
        return "%s: its log holds no perfscale result (%s)" % (
            where, "the job did not finish" if not outcome.job_result else
            "the test did not run")
    return ""


def _mapping(value):
    return value if isinstance(value, dict) else {}


def qemu_shape(definition):
    """(vCPUs, memory in MiB) of a qemu job (its context's -smp and memory, as `lava job`
    writes them; 1 and 512 where it says nothing).
    LavaError for a context no qemu job of ours has (a -smp or memory that is no number)."""
    context = _mapping(_mapping(definition).get("context"))
    options = context.get("extra_options", [])
    options = [str(o) for o in (options if isinstance(options, list) else [options])]
    cpus, memory = 1, context.get("memory", 512)
    for option in options:
        if option.startswith("-smp"):
            words = option.split()
            if len(words) != 2 or not words[1].isdigit() or not 1 <= int(words[1]) <= 1024:
                raise LavaError("the job's context has %r, not -smp N" % option)
            cpus = int(words[1])
    if isinstance(memory, bool) or not isinstance(memory, (int, str)) \
            or not str(memory).isdigit() or not 1 <= int(memory) <= 1 << 24:
        raise LavaError("the job's context has memory %r, not a size in MiB" % (memory,))
    return cpus, int(memory)


def run_context(results_context, outcome, lineage, host_cpus=0):
    """The result's context with what LAVA knows: the job, device and worker (lava_*), the
    device as the lineage's host (the guest calls itself perfscale-lava on every device:
    its name is kept as vm_guest_host_name), and for a qemu device how the guest ran."""
    context = dict(results_context)
    metadata = _mapping(_mapping(lineage.definition).get("metadata"))
    job_context = _mapping(_mapping(lineage.definition).get("context"))
    context.update({"lava_job": str(lineage.job_id), "lava_device": lineage.device,
                    "lava_device_type": lineage.device_type, "lava_worker": lineage.worker,
                    "lava_source": lineage.source,
                    "vm_guest_host_name": str(context.get("host_name", ""))})
    context["host_name"] = "lava-%s" % lineage.device
    config = outcome.config_sha256 or metadata.get("perfscale.kernel_config_sha256")
    if config and "kernel_config_sha256" not in results_context:
        context["kernel_config_sha256"] = config
    if lineage.device_type == "qemu":
        options = job_context.get("extra_options", [])
        options = [str(o) for o in (options if isinstance(options, list) else [options])]
        vcpus, mem_mib = qemu_shape(lineage.definition)
        accel = "kvm" if not job_context.get("no_kvm") else "tcg"
        clock = "instructions" if any(o.startswith("-icount") for o in options) else "real"
        context.update(comparability.vm_context(
            kernel=str(metadata.get("perfscale.kernel", "")), vcpus=vcpus,
            mem_mib=mem_mib, accel=accel,
            host_cpus=host_cpus or vcpus, clock=clock,
            guest_host_name=context["vm_guest_host_name"]))
    return context


def import_run(conn, outcome, lineage, config="", host_cpus=0, options=None):
    """Stores the job's result in the history, judged as the nightly judges a run against
    its lineage's baseline runs (no confirmation reruns: the job is over). The run key is
    LAVA's job (where and which), so importing it twice stores it once. Nothing is stored
    for a job that failed (LavaError with job_failure's line)."""
    failure = job_failure(outcome, lineage)
    if failure:
        raise LavaError(failure)
    try:
        results = io.parse_results(outcome.result.decode("utf-8", "replace"),
                                   source="LAVA job %s" % lineage.job_id)
    except io.ResultsError as err:
        raise LavaError(str(err)) from None
    results.context = run_context(results.context, outcome, lineage, host_cpus)
    repetitions = max((len(e.real_ns) for e in results.entries.values()), default=0)
    info = store.RunInfo.from_results(results, config, [], repetitions)
    info.run_key = store.derived_run_key(["lava", lineage.source, lineage.job_id])
    existing = store.run_id_of(conn, info.run_key)
    if existing is not None:
        return Imported(existing, False, 0, [], 0, "already there")
    options = options or stats.Options()
    with conn.snapshot():
        base_rows = store.find_baselines(conn, *info.key(), floors.BASELINE_RUNS,
                                         info.machine)
        base_runs = [store.load_entries(conn, row["id"]) for row in base_rows]
        found, _source = floors.for_lineage(conn, *info.key(), options.alpha, info.machine)
    verdicts, status, reason = [], 0, "the lineage's first run: its baseline"
    comparable, why = comparability.timings_comparable(results.context)
    # On the instruction clock a guest's timings are judged against each other's
    # (comparability.judge): figures the worker's load cannot move.
    comparable = comparable or comparability.clock(results.context) == "instructions"
    if base_rows and comparable:
        verdicts = stats.compare_runs(base_runs, [results.entries], options, found)
        status, reason = stats.gate_status(verdicts)
    elif base_rows:
        verdicts = counts_only(base_runs, results.entries, found, options, why)
        status, reason = stats.gate_status(verdicts)
        reason += " (timings not judged: %s; the counted kernel events only)" % why
    baseline_id = base_rows[0]["id"] if base_rows else 0
    if status == 2:
        # The gate cannot judge it (too few repetitions, rows of the baseline missing):
        # stored without verdicts and never complete, so never a baseline; the caller
        # says why.
        run_id = store.record_run(conn, info, results, [], None)
        return Imported(run_id, True, 0, [], status, reason)
    run_id = store.record_run(conn, info, results, verdicts, baseline_id or None,
                              complete=True)
    return Imported(run_id, True, baseline_id, verdicts, status, reason)


def _get(url, token, what):
    request = urllib.request.Request(url, headers={"Authorization": "Token " + token}
                                     if token else {})
    try:
        return deadline.read(request, TIMEOUT).decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        raise LavaError("%s: HTTP %d %s from %s" % (what, err.code, err.reason,
                                                     deadline.shown_url(url))) from None
    except (urllib.error.URLError, OSError) as err:
        raise LavaError("cannot reach LAVA at %s: %s" % (deadline.shown_url(url),
                                                          getattr(err, "reason", err))) from None


def counts_only(base_runs, entries, found, options, why):
    """The gate's verdicts with the time left out, as `compare` judges two runs whose
    timings are no real machine's (a TCG guest on the real clock: comparability.judge):
    a count up past its floor is a regression (stats.COUNTS); what the gate could not
    judge (too few repetitions, rows missing) stays so."""
    verdicts = stats.compare_runs(base_runs, [entries], options, found)
    for verdict in verdicts:
        if verdict.verdict in stats.JUDGED:
            verdict.verdict = stats.COUNTS if verdict.counter_regressions else stats.SAME
            verdict.change = verdict.pvalue = verdict.p_adjusted = math.nan
            verdict.ci = (math.nan, math.nan)
            verdict.note = "timings not judged (%s): the counted kernel events only" % why
    return verdicts


def _json_object(text, what, url):
    """`text` as a JSON object (a dict), as each of LAVA's REST answers is; LavaError
    (one line) for anything else: no JSON, JSON nested past Python's stack, a list."""
    try:
        found = json.loads(text)
    except (ValueError, RecursionError):
        found = None
    if not isinstance(found, dict):
        raise LavaError("%s: %s answers no JSON object: not a LAVA server's REST API?"
                        % (what, deadline.shown_url(url)))
    return found


JOB_ID = re.compile(r"[0-9]+(\.[0-9]+)?")


def check_server(url):
    """LavaError unless `url` is a server's http(s) address (labs.deadline.check_url)."""
    try:
        deadline.check_url(url)
    except ValueError as err:
        raise LavaError("LAVA: %s" % err) from None


def fetch_job(url, job_id, token=""):
    """(Outcome, Lineage) of a finished job of the LAVA server at `url`, from its REST API
    (v0.2: the job, its log, its device's worker). LavaError (one line) when the job is
    not finished, or did not complete (LAVA's health and reason)."""
    check_server(url)
    if not JOB_ID.fullmatch(str(job_id)):
        raise LavaError("'%s' is not a LAVA job id (a number; N.M for one job of a "
                        "multinode group)" % job_id)
    base = url.rstrip("/") + "/api/v0.2/"
    what = "LAVA job %s" % job_id
    job = _json_object(_get(base + "jobs/%s/" % job_id, token, what), what, url)
    if job.get("state") != "Finished":
        raise LavaError("%s is %s, not finished: wait for it (lavacli jobs wait %s)"
                        % (what, str(job.get("state", "unknown")).lower(), job_id))
    outcome = parse_log(log_entries(_get(base + "jobs/%s/logs/" % job_id, token, what)))
    device = str(job.get("actual_device") or "")
    worker = ""
    if device:
        try:
            worker = str(_json_object(_get(base + "devices/%s/" % device, token, what),
                                      what, url).get("worker_host") or "")
        except LavaError:  # the worker is a detail of the lineage, not worth the run
            worker = ""
    if job.get("health") != "Complete" and not outcome.job_error:
        outcome.job_result = "fail"
        outcome.job_error = "health %s" % job.get("health", "unknown")
    try:
        import yaml
        definition = yaml.safe_load(str(job.get("definition") or "")) or {}
    except (yaml.YAMLError, RecursionError):
        definition = {}
    return outcome, Lineage(str(job_id), device, str(job.get("requested_device_type") or
                                                    definition.get("device_type", "")),
                            worker, deadline.shown_url(url),
                            definition if isinstance(definition, dict) else {})


def read_run_dir(path):
    """(Outcome, Lineage) of a job `tools/perfscale lava run` ran with lava-run into
    `path` (its log.yaml, job.yaml and lineage.json)."""
    try:
        with open(os.path.join(path, "lineage.json"), encoding="utf-8") as f:
            facts = json.load(f)
        if not isinstance(facts, dict):
            raise ValueError("lineage.json is no JSON object")
        with open(os.path.join(path, "log.yaml"), encoding="utf-8", errors="replace") as f:
            outcome = parse_log(log_entries(f.read()))
    except (OSError, ValueError, RecursionError) as err:
        raise LavaError("%s is not a folder `tools/perfscale lava run` wrote: %s"
                        % (path, getattr(err, "strerror", None) or err)) from None
    job_path = os.path.join(path, "job.yaml")
    try:
        definition = load_yaml(job_path)
    except OSError as err:
        raise LavaError("%s: %s" % (job_path, err.strerror or err)) from None
    except LavaError as err:
        raise LavaError("%s: %s" % (job_path, err)) from None
    return outcome, Lineage(str(facts.get("job_id", "")), str(facts.get("device", "")),
                            str(facts.get("device_type", "")), str(facts.get("worker", "")),
                            "lava-run:%s" % facts.get("worker", ""), definition)


def submit_job(url, definition_text, token):
    """Submits a job (its YAML text) to the LAVA server at `url` (REST API v0.2, the
    token as `Authorization: Token ...`); returns its id. LavaError with LAVA's message
    when the server refuses it."""
    check_server(url)
    request = urllib.request.Request(
        url.rstrip("/") + "/api/v0.2/jobs/", method="POST",
        data=json.dumps({"definition": definition_text}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Token " + token})
    try:
        answer = json.loads(deadline.read(request, TIMEOUT).decode("utf-8", "replace"))
    except urllib.error.HTTPError as err:
        text = err.read().decode("utf-8", "replace")
        try:
            text = json.loads(text).get("message", text)
        except (ValueError, AttributeError):
            pass
        raise LavaError("LAVA at %s refused the job: HTTP %d: %s" % (
            deadline.shown_url(url), err.code, " ".join(str(text).split())[:300])) from None
    except (urllib.error.URLError, OSError, ValueError, RecursionError) as err:
        raise LavaError("cannot submit to LAVA at %s: %s" % (
            deadline.shown_url(url), getattr(err, "reason", err))) from None
    ids = answer.get("job_ids") if isinstance(answer, dict) else None
    if not isinstance(ids, list) or not ids:
        raise LavaError("LAVA at %s answered no job id: %s" % (deadline.shown_url(url),
                                                               answer))
    return str(ids[0])


def job_state(url, job_id, token):
    """(state, health) of a job: Submitted/Scheduling/Scheduled/Running/Canceling/Finished,
    Unknown/Complete/Incomplete/Canceled."""
    check_server(url)
    what = "LAVA job %s" % job_id
    job = _json_object(_get(url.rstrip("/") + "/api/v0.2/jobs/%s/" % job_id, token, what),
                       what, url)
    return str(job.get("state", "")), str(job.get("health", ""))

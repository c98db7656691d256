"""What makes two machines the same, read where the suite ran, and what changed.

`collect()` reads /proc and /sys: CPU model, microcode, sockets/cores/threads, NUMA nodes,
memory, frequency governor and boost, the mitigations in
/sys/devices/system/cpu/vulnerabilities, and the kernel's build string (uname -v), command
line and config digest. The benchmark binary writes the same fields (but the config
digest) into its context where it runs (benchmarks/harness/machine_identity.cc: in a
guest, the guest's); perfscale.suite.runner adds what is missing after a run on this machine,
and perfscale.vm.qemu after a guest's run: the guest kernel's config digest, and for a
guest on the real clock its host's identity (`as_host`).

A lineage's `machine` is the digest of the machine_* fields only: the kernel under test
(kernel_*, kernel_release) stays inside a lineage, since judging kernels is the point. So do
the mitigations, though recorded as machine_* fields: which are in force is the kernel's
answer (its version and command line) as much as the CPU's, and 5.10 and 6.12 word
spectre_v2 differently on one CPU, so a kernel A/B would otherwise never be judged.
`kernel_reported_changes` names them when they move inside a lineage.
"""

import glob
import gzip
import hashlib
import json
import os
import zlib

PREFIX = "machine_"
# A guest's host's identity, inside the guest's (machine_host_cpu_model, ...).
HOST = "host_"
# Memory rounded to this (KiB): MemTotal moves by a few MiB between kernels, which
# reserve different amounts; a machine with another DIMM moves by GiBs.
_MEM_ROUND_KIB = 1 << 20
# Fields of the identity that the kernel under test reports (see above): in the context, not
# in the digest; a guest's host's too, whose kernel is not under test but changes with it.
KERNEL_REPORTED = ("mitigations", HOST + "mitigations")
_LABELS = {"cpu_model": "CPU model", "microcode": "microcode", "sockets": "sockets",
           "cores": "cores", "threads": "threads", "numa_nodes": "NUMA nodes",
           "memory_gib": "memory (GiB)", "governor": "governor", "boost": "boost",
           "mitigations": "mitigations"}


def _read(path, root):
    try:
        with open(root + path, "rb") as f:
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return None


def _cpuinfo(root):
    """(model, microcode, sockets, cores, threads) from /proc/cpuinfo."""
    model = microcode = None
    sockets, cores, threads = set(), set(), 0
    physical = None
    for line in (_read("/proc/cpuinfo", root) or "").splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "processor":
            threads += 1
        elif key == "model name" and model is None:
            model = value
        elif key == "microcode" and microcode is None:
            microcode = value
        elif key == "physical id":
            physical = value
            sockets.add(value)
        elif key == "core id":
            cores.add((physical, value))
    return model, microcode, len(sockets) or (1 if threads else 0), len(cores) or threads, threads


def _boost(root):
    value = _read("/sys/devices/system/cpu/cpufreq/boost", root)
    if value is not None:
        return "on" if value == "1" else "off"
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo", root)
    if no_turbo is not None:
        return "off" if no_turbo == "1" else "on"
    return "unknown"


def config_digest(release, carried=None, boot="/boot"):
    """sha256 of a kernel's config: of the copy the kernel carries (`carried`: the bytes of
    its /proc/config.gz), else of the one installed beside it (BOOT/config-RELEASE);
    'unknown' without either. A guest's (perfscale.vm.qemu) comes home from the guest, or
    from the kernel package's boot/ folder."""
    if carried:
        try:
            return hashlib.sha256(gzip.decompress(carried)).hexdigest()
        except (OSError, EOFError, zlib.error):
            pass  # cut short: the installed copy may still say
    try:
        with open(os.path.join(boot, "config-%s" % release), "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return "unknown"


def collect(root=""):
    """The identity of the machine we run on, as context fields (all strings)."""
    model, microcode, sockets, cores, threads = _cpuinfo(root)
    mitigations = {}
    for path in sorted(glob.glob(root + "/sys/devices/system/cpu/vulnerabilities/*")):
        mitigations[os.path.basename(path)] = _read(path[len(root):], root) or ""
    nodes = glob.glob(root + "/sys/devices/system/node/node[0-9]*")
    mem_kib = 0
    for line in (_read("/proc/meminfo", root) or "").splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    uname = os.uname()
    release = _read("/proc/sys/kernel/osrelease", root) or uname.release
    fields = {
        "cpu_model": model or "unknown", "microcode": microcode or "unknown",
        "sockets": sockets, "cores": cores, "threads": threads,
        "numa_nodes": len(nodes) or 1,
        "memory_gib": round(mem_kib / _MEM_ROUND_KIB),
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", root)
        or "none",
        "boost": _boost(root),
        "mitigations": json.dumps(mitigations, sort_keys=True),
    }
    context = {PREFIX + k: str(v) for k, v in fields.items()}
    context["kernel_version"] = _read("/proc/sys/kernel/version", root) or uname.version
    context["kernel_cmdline"] = _read("/proc/cmdline", root) or ""
    try:
        with open(root + "/proc/config.gz", "rb") as f:
            carried = f.read()
    except OSError:
        carried = None
    context["kernel_config_sha256"] = config_digest(release, carried, root + "/boot")
    return context


def stamp(path):
    """Adds this machine's identity to the context of the results file at `path` (which
    the binary just wrote here); fields already there are kept."""
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    context = document.setdefault("context", {})
    for key, value in collect().items():
        context.setdefault(key, value)
    temporary = path + ".identity"
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=2)
    os.replace(temporary, path)


def fields(context):
    """{name: value} of the identity in a run's context; {} when it recorded none."""
    return {k[len(PREFIX):]: str(v) for k, v in (context or {}).items()
            if isinstance(k, str) and k.startswith(PREFIX)}


def as_host(context):
    """The identity in `context` as a guest's host's (machine_host_*): a guest timed on the
    real clock runs at its host's pace, so the host is part of the guest's lineage."""
    return {PREFIX + HOST + k: v for k, v in fields(context).items()}


def digest(context):
    """The machine part of a lineage: '' for a run without identity (older runs). The
    KERNEL_REPORTED fields are left out."""
    found = {k: v for k, v in fields(context).items() if k not in KERNEL_REPORTED}
    if not found:
        return ""
    text = json.dumps(found, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def changes(old_context, new_context):
    """What differs between two identities, one phrase each ("mitigations: spectre_v2
    changed", "microcode: 0xf0 -> 0xf4")."""
    old, new = fields(old_context), fields(new_context)
    if not old:
        return ["no identity recorded before"] if new else []
    return _phrases(old, new, sorted(set(old) | set(new)))


def kernel_reported_changes(old_context, new_context):
    """What the kernel under test reports otherwise than before, inside one lineage
    (KERNEL_REPORTED): ["mitigations: spectre_v2, spectre_v1 changed"], or []."""
    old, new = fields(old_context), fields(new_context)
    return _phrases(old, new, [k for k in KERNEL_REPORTED if k in old and k in new])


def _phrases(old, new, keys):
    out = []
    for key in keys:
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        field = key[len(HOST):] if key.startswith(HOST) else key
        label = ("host's " if field != key else "") + _LABELS.get(field, field)
        a, b = _json_object(before), _json_object(after)
        if field == "mitigations" and a is not None and b is not None:
            moved = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            out.append("%s: %s changed" % (label, ", ".join(moved)))
        else:
            out.append("%s: %s -> %s" % (label, before or "none", after or "none"))
    return out


def _json_object(text):
    """The dict `text` holds, or None (absent, or not what perfscale wrote)."""
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None

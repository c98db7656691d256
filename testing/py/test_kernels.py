"""Where a kernel comes from (perfscale.vm.kernel, .debian, .tree): `debian:` names against
the archive's package names, the suite each line comes from, Debian's split packaging, and
kernels built from a git tree, with their cache key.

Nothing here reaches the archive or builds a real kernel: the archive is a recording
stand-in for tools/debian-archive (real .deb files made with dpkg-deb), and make is a
stand-in that writes a bzImage from the tree's files. A real fetch, build and boot of each
kind is a recorded demonstration (docs/measurements/2026-12-07-kernel-builds.md).
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from perfscale.machine import debian_release
from perfscale.suite import runner
from perfscale.vm import cache, debian, errors, kernel, qemu, tree

# What Debian's suites list (`apt-cache pkgnames linux-`), abridged to the kinds of names
# they hold: signed and -unsigned images, -dbg symbols, headers, metapackages without a
# number, bullseye's backport of 6.1, split packages from 6.19 on, experimental's rc.
BOOKWORM = ["linux-image-6.1.0-56-cloud-amd64", "linux-image-6.1.0-57-cloud-amd64",
            "linux-image-6.1.0-57-cloud-amd64-unsigned", "linux-image-6.1.0-57-cloud-amd64-dbg",
            "linux-image-6.1.0-57-amd64-unsigned", "linux-image-6.12.118+deb12-amd64",
            "linux-image-6.12.118+deb12-amd64-unsigned", "linux-headers-6.12.118+deb12-amd64",
            "linux-image-cloud-amd64"]
BULLSEYE = ["linux-image-5.10.0-32-cloud-amd64", "linux-image-5.10.0-46-cloud-amd64",
            "linux-image-5.10.0-46-amd64", "linux-image-5.10.0-46-rt-amd64-unsigned",
            "linux-image-6.1.0-0.deb11.52-cloud-amd64", "linux-image-6.1-cloud-amd64"]
TRIXIE = ["linux-image-6.12.118+deb13-amd64", "linux-image-6.12.119+deb13-rt-amd64",
          "linux-image-6.12.90+deb13-amd64", "linux-image-6.12.90+deb13.1-amd64"]
BACKPORTS = ["linux-image-6.18.15+deb13-cloud-amd64", "linux-image-6.19.14+deb13-cloud-amd64",
             "linux-binary-6.19.14+deb13-cloud-amd64", "linux-image-7.1.8+deb13-amd64",
             "linux-binary-7.1.8+deb13-amd64", "linux-binary-7.1.13+deb13-amd64",
             "linux-base-7.1.13+deb13-amd64", "linux-binary-7.2.12+deb13-amd64"]
SID = ["linux-image-7.2.13+deb14-amd64", "linux-binary-7.2.13+deb14-amd64",
       "linux-base-7.2.13+deb14-amd64"]
EXPERIMENTAL = ["linux-image-7.3-cloud-amd64", "linux-binary-7.3-cloud-amd64",
                "linux-base-7.3-cloud-amd64", "linux-modules-7.3-cloud-amd64"]
EXPERIMENTAL_VERSIONS = {"linux-binary-7.3-cloud-amd64": "7.3~rc7-1~exp1"}
LISTS = {None: BOOKWORM, "bullseye": BULLSEYE, "trixie": TRIXIE, "trixie-backports": BACKPORTS,
         "sid": SID, "experimental": EXPERIMENTAL}


def all_builds():
    found = []
    for rank, suite in enumerate(debian.SUITES):
        found += debian.builds_in(LISTS[suite], suite, rank, lambda packages: {
            p: EXPERIMENTAL_VERSIONS[p] for p in packages if p in EXPERIMENTAL_VERSIONS})
    return found


def pick(name):
    build = debian.choose(name, all_builds())
    return build.image, build.config, build.suite


# --- debian: names -------------------------------------------------------------------------

def test_each_line_comes_from_the_suite_that_builds_its_newest():
    assert pick("debian:5.10-cloud") == ("linux-image-5.10.0-46-cloud-amd64", None, "bullseye")
    # Signed images first (the names users know), -unsigned where only those exist.
    assert pick("debian:6.1-cloud") == ("linux-image-6.1.0-57-cloud-amd64", None, None)
    assert pick("debian:6.1") == ("linux-image-6.1.0-57-amd64-unsigned", None, None)
    # 6.12.118 is built for Debian 12 and 13: the machine's own suite gives it; trixie's
    # 6.12.119 is newer where it exists (-rt).
    assert pick("debian:6.12") == ("linux-image-6.12.118+deb12-amd64", None, None)
    assert pick("debian:6.12-rt") == ("linux-image-6.12.119+deb13-rt-amd64", None, "trixie")
    assert pick("debian:6.12.90")[0] == "linux-image-6.12.90+deb13.1-amd64"  # the rebuild
    # 7.2: trixie-backports has 7.2.12, sid 7.2.13.
    assert pick("debian:7.2") == ("linux-binary-7.2.13+deb14-amd64",
                                  "linux-base-7.2.13+deb14-amd64", "sid")
    assert pick("debian:7.2.12")[2] == "trixie-backports"


def test_split_packaging_takes_the_binary_and_its_base_never_the_metapackage():
    assert pick("debian:6.18-cloud") == ("linux-image-6.18.15+deb13-cloud-amd64", None,
                                         "trixie-backports")
    assert pick("debian:6.19-cloud")[0] == "linux-binary-6.19.14+deb13-cloud-amd64"
    assert pick("debian:7.1") == ("linux-binary-7.1.13+deb13-amd64",
                                  "linux-base-7.1.13+deb13-amd64", "trixie-backports")
    assert pick("debian:7.1.8") == ("linux-binary-7.1.8+deb13-amd64", None, "trixie-backports")
    build = debian.choose("debian:7.1", all_builds())
    assert build.split and build.name == "debian:7.1.13"


def test_release_candidates_are_named_from_their_package_version():
    build = debian.choose("debian:7.3-rc-cloud", all_builds())
    assert (build.image, build.suite, build.version) == (
        "linux-binary-7.3-cloud-amd64", "experimental", "7.3-rc7")
    assert build.config == "linux-base-7.3-cloud-amd64" and build.rc
    # One package name is every rc: the cache keeps it by its version.
    assert build.cache_name == "linux-binary-7.3-cloud-amd64_7.3~rc7-1~exp1"
    assert debian.choose("debian:7.3-rc7-cloud", all_builds()) == build
    with pytest.raises(errors.VmUsageError, match="no debian:7.3-cloud .its 7.3 -cloud builds: "
                                                  "7.3-rc7.; its release candidates are "
                                                  "debian:7.3-rc-cloud"):
        debian.choose("debian:7.3-cloud", all_builds())
    with pytest.raises(errors.VmUsageError, match="no debian:7.3-rc6-cloud .its 7.3 -cloud "
                                                  "builds: 7.3-rc7.$"):
        debian.choose("debian:7.3-rc6-cloud", all_builds())


def test_names_the_archive_does_not_hold_say_what_it_has():
    with pytest.raises(errors.VmUsageError, match=r"no 4\.19 kernel \(lines: 5\.10, 6\.1, "
                                                  r"6\.12, 6\.18, 6\.19, 7\.1, 7\.2, 7\.3"):
        debian.choose("debian:4.19", all_builds())
    with pytest.raises(errors.VmUsageError, match=r"no debian:6\.1\.0-50-cloud \(its 6\.1 "
                                                  r"-cloud builds: 6\.1\.0-56, 6\.1\.0-57\)"):
        debian.choose("debian:6.1.0-50-cloud", all_builds())
    with pytest.raises(errors.VmUsageError, match="no 7.1 -rt kernel"):
        debian.choose("debian:7.1-rt", all_builds())
    # By ABI for 5.10 and 6.1, by stable release for the rest: the other form names nothing.
    with pytest.raises(errors.VmUsageError, match="no debian:6.12.0-57 .its 6.12 builds: 6.12.90"):
        debian.choose("debian:6.12.0-57", all_builds())


@pytest.mark.parametrize("spec", ["debian:6.1\n", "debian:6.12.\u0661\u0661\u0668",
                                  "debian:6.1.0-057", "debian:7.1.08", "debian:7.3-rc07",
                                  "debian:6.12-foo", "debian:6", "debian:5.10.0-x-cloud",
                                  "debian:7.1-cloud-rt"])
def test_a_debian_kernel_has_one_spelling(spec):
    # Before: a trailing newline (`$`), Arabic-Indic digits (\d) and leading zeros were
    # each taken, the same kernel under a label of its own in the run's JSON.
    with pytest.raises(errors.VmUsageError, match="not a Debian kernel name"):
        debian.choose(spec, all_builds())


def test_uname_releases_and_debian_names_share_one_grammar():
    for release, name in (("5.10.0-46-cloud-amd64", "debian:5.10.0-46-cloud"),
                          ("6.12.118+deb12-amd64", "debian:6.12.118"),
                          ("7.3.4+deb13.1-rt-amd64", "debian:7.3.4-rt")):
        match = debian_release.UNAME.fullmatch(release)
        numbers = {k: int(match.group(k)) for k in ("abi", "patch") if match.group(k)}
        assert debian_release.name(match.group("line"), flavour=match.group("flavour") or "",
                                   **numbers) == name
        # ... and each is a name `vm --kernel` takes.
        assert debian.choose(name, [debian.Build(
            match.group("line"), match.group("flavour") or "", name[7:].split("-rt")[0]
            .split("-cloud")[0], release, None, "pkg", None)]).image == "pkg"


def test_vm_kernel_lists_every_line_once(tmp_path):
    rows = kernel.listing(all_builds(), cache_root=str(tmp_path))
    assert rows[0][:3] == ("name", "newest", "suite")
    assert [r[0] for r in rows[1:]] == ["debian:5.10", "debian:6.1", "debian:6.12",
                                        "debian:6.18", "debian:6.19", "debian:7.1",
                                        "debian:7.2", "debian:7.3-rc"]
    by_name = {r[0]: r for r in rows}
    assert by_name["debian:7.3-rc"][1:4] == ("7.3-rc7 (7.3~rc7-1~exp1)", "experimental", "split")
    assert by_name["debian:6.12"][4] == "generic -rt" and by_name["debian:6.12"][5] == "-"
    assert by_name["debian:6.18"][1] == "6.18.15" and by_name["debian:6.18"][4] == "-cloud"
    kept = tmp_path / "kernels" / "linux-image-6.12.119+deb13-rt-amd64" / "boot"
    kept.mkdir(parents=True)
    (kept / "vmlinuz-6.12.119+deb13-rt-amd64").write_bytes(b"k")
    assert {r[0]: r for r in kernel.listing(all_builds(), str(tmp_path))}["debian:6.12"][5] == "-rt"


# --- the archive, through a recording stand-in for tools/debian-archive ---------------------

def deb(folder, package, files):
    """A real .deb of `files` ({path: bytes}) in `folder`, as apt-get download leaves one."""
    root = folder / ("root-" + package)
    for path, content in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(content)
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN" / "control").write_text(
        "Package: %s\nVersion: 1\nArchitecture: amd64\nMaintainer: t <t@t>\nDescription: t\n"
        % package)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(root),
                    str(folder / ("%s_1_amd64.deb" % package))], check=True,
                   capture_output=True)


@pytest.fixture
def archive(tmp_path, monkeypatch):
    """tools/debian-archive stood in for: it lists the suites' names above, shows
    experimental's version, and `apt-get download` copies .debs from a folder (a package it
    has no .deb for fails as apt does). Its calls are recorded."""
    debs = tmp_path / "debs"
    debs.mkdir()
    calls = tmp_path / "calls"
    lists = tmp_path / "lists"
    lists.mkdir()
    for suite, names in LISTS.items():
        if suite:
            (lists / suite).write_text("\n".join(names) + "\n")
    tool = tmp_path / "debian-archive"
    tool.write_text(textwrap.dedent("""\
        #!/bin/sh
        echo "$@" >> %(calls)s
        suite=$1; shift
        case "$1 $2" in
          'apt-cache pkgnames') cat %(lists)s/$suite 2>/dev/null || { echo "E: no lists" >&2; exit 100; } ;;
          'apt-cache show') echo "Package: linux-binary-7.3-cloud-amd64"; echo "Version: 7.3~rc7-1~exp1" ;;
          'apt-get download') shift 2; for p in "$@"; do p=${p%%%%=*};
              cp %(debs)s/${p}_1_amd64.deb . 2>/dev/null || { echo "E: Unable to locate package $p" >&2; exit 100; }; done ;;
        esac
        """) % {"calls": calls, "lists": lists, "debs": debs})
    tool.chmod(0o755)
    monkeypatch.setattr(debian, "DEBIAN_ARCHIVE", str(tool))
    monkeypatch.setattr(cache, "CACHE", str(tmp_path / "cache"))

    class Archive:
        folder = debs

        @staticmethod
        def calls():
            return calls.read_text().splitlines() if calls.exists() else []
    return Archive


def test_suites_are_asked_through_perfscales_own_apt_state(archive):
    warnings = []
    builds = debian.archive_builds(("bullseye", "trixie-backports", "experimental", "forky"),
                                   warn=warnings.append)
    assert {b.suite for b in builds} == {"bullseye", "trixie-backports", "experimental"}
    assert sorted(archive.calls()) == sorted([
        "bullseye apt-cache pkgnames linux-", "trixie-backports apt-cache pkgnames linux-",
        "experimental apt-cache pkgnames linux-", "forky apt-cache pkgnames linux-",
        "experimental apt-cache show --no-all-versions linux-binary-7.3-cloud-amd64"])
    # A suite that cannot answer is left out, said; none answering is an error.
    assert warnings == ["perfscale: left out: cannot list the kernel packages of forky with "
                        "apt-cache: E: no lists"]
    with pytest.raises(errors.VmError, match="forky"):
        debian.archive_builds(("forky",))


def test_a_split_kernel_is_kept_as_its_vmlinuz_and_config(archive):
    release = "7.1.13+deb13-amd64"
    deb(archive.folder, "linux-binary-" + release,
        {"usr/lib/modules/%s/vmlinuz" % release: b"bzImage 7.1.13"})
    deb(archive.folder, "linux-base-" + release,
        {"usr/lib/modules/%s/config" % release: b"CONFIG_PERF_EVENTS=y\n",
         "usr/lib/modules/%s/System.map" % release: b"map"})
    build = debian.choose("debian:7.1", debian.archive_builds(("trixie-backports",)))
    vmlinuz = debian.fetch(build)
    assert vmlinuz == os.path.join(cache.CACHE, "kernels", "linux-binary-" + release, "boot",
                                   "vmlinuz-" + release)
    with open(vmlinuz, "rb") as f:
        assert f.read() == b"bzImage 7.1.13"
    boot = os.path.dirname(vmlinuz)
    assert sorted(os.listdir(boot)) == ["config-" + release, "vmlinuz-" + release]
    assert kernel.context_of(vmlinuz) == {}
    assert cache.about(vmlinuz)["packages"] == ["linux-binary-" + release, "linux-base-" + release]
    assert archive.calls()[-1] == ("trixie-backports apt-get download linux-binary-%s "
                                   "linux-base-%s" % (release, release))
    # Kept: asked again, nothing is downloaded.
    before = len(archive.calls())
    assert debian.fetch(build) == vmlinuz and len(archive.calls()) == before


def test_a_split_kernel_up_to_7_1_has_its_vmlinuz_in_boot_and_no_config(archive):
    release = "7.1.8+deb13-amd64"
    deb(archive.folder, "linux-binary-" + release, {"boot/vmlinuz-" + release: b"7.1.8"})
    vmlinuz = debian.fetch(debian.choose("debian:7.1.8",
                                         debian.archive_builds(("trixie-backports",))))
    assert os.listdir(os.path.dirname(vmlinuz)) == ["vmlinuz-" + release]
    assert archive.calls()[-1].endswith("download linux-binary-" + release)


def test_an_image_package_keeps_its_boot_folder_and_a_failed_download_keeps_nothing(archive):
    release = "5.10.0-46-cloud-amd64"
    builds = debian.archive_builds(("bullseye",))
    with pytest.raises(errors.VmError, match="apt-get download linux-image-%s failed: E: Unable "
                                             "to locate.*tools/debian-archive bullseye update"
                       % release):
        debian.fetch(debian.choose("debian:5.10-cloud", builds))
    assert not os.path.exists(os.path.join(cache.CACHE, "kernels", "linux-image-" + release))
    deb(archive.folder, "linux-image-" + release,
        {"boot/vmlinuz-" + release: b"k510", "boot/config-" + release: b"C=y\n",
         "usr/lib/modules/%s/kernel/x.ko" % release: b"module"})
    vmlinuz = debian.fetch(debian.choose("debian:5.10-cloud", builds))
    assert sorted(os.listdir(os.path.dirname(vmlinuz))) == ["config-" + release,
                                                            "vmlinuz-" + release]
    assert not os.path.exists(os.path.join(os.path.dirname(os.path.dirname(vmlinuz)), "usr"))


def test_an_rc_is_downloaded_at_its_version(archive):
    release = "7.3-cloud-amd64"
    deb(archive.folder, "linux-binary-" + release,
        {"usr/lib/modules/%s/vmlinuz" % release: b"rc7"})
    deb(archive.folder, "linux-base-" + release, {"usr/lib/modules/%s/config" % release: b"c"})
    build = debian.choose("debian:7.3-rc-cloud", debian.archive_builds(("experimental",)))
    vmlinuz = debian.fetch(build)
    assert "linux-binary-7.3-cloud-amd64_7.3~rc7-1~exp1" in vmlinuz
    assert archive.calls()[-1].endswith("download linux-binary-7.3-cloud-amd64=7.3~rc7-1~exp1 "
                                        "linux-base-7.3-cloud-amd64=7.3~rc7-1~exp1")


# --- kernel trees ----------------------------------------------------------------------------

FAKE_MAKE = r'''
import hashlib, os, shutil, sys
args = sys.argv[1:]
with open(os.environ["FAKE_MAKE_CALLS"], "a") as f:
    f.write(" ".join(a for a in args if not a.startswith(("-C", "/", "O=", "-j", "CC="))) + "\n")
src = args[args.index("-C") + 1]
out = next(a[2:] for a in args if a.startswith("O="))
os.makedirs(out, exist_ok=True)
for target in [a for a in args if not a.startswith(("-", "O=", "CC=")) and a != src]:
    if target == "x86_64_defconfig":
        shutil.copy(os.path.join(src, "arch/x86/configs/x86_64_defconfig"), out + "/.config")
    elif target == "olddefconfig":
        lines = open(out + "/.config").read().splitlines()
        # Kconfig drops what the tree lacks: this fake tree has no BTF.
        kept = sorted(set(l for l in lines if "BTF" not in l))
        open(out + "/.config", "w").write("\n".join(kept) + "\n")
    elif target == "bzImage":
        marks = os.environ.get("FAKE_MAKE_MARKS")
        if marks:  # a slow build, its time spent in a child as make's in sub-makes
            import subprocess, time
            with open(marks, "a") as f:
                f.write("start %f %d\n" % (time.time(), os.getpid()))
            sub = subprocess.Popen([sys.executable, "-c", "import sys, time; "
                                    "time.sleep(float(sys.argv[1]))",
                                    os.environ["FAKE_MAKE_SLEEP"]])
            with open(marks, "a") as f:
                f.write("sub %d\n" % sub.pid)
            sub.wait()
        if os.path.exists(os.path.join(src, "kernel/events/broken.c")):
            print("  CC      kernel/events/broken.o")
            print("kernel/events/broken.c:3:1: error: expected ';' before '}' token")
            print("make: *** [Makefile:2000: kernel/events] Error 2")
            sys.exit(2)
        digest = hashlib.sha256()
        for root, dirs, files in sorted(os.walk(src)):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for name in sorted(files):
                digest.update(open(os.path.join(root, name), "rb").read())
        os.makedirs(out + "/arch/x86/boot", exist_ok=True)
        open(out + "/arch/x86/boot/bzImage", "w").write(digest.hexdigest())
        os.makedirs(out + "/include/config", exist_ok=True)
        version = open(os.path.join(src, "VERSION")).read().strip()
        open(out + "/include/config/kernel.release", "w").write(version + "\n")
        if marks:
            with open(marks, "a") as f:
                f.write("end %f %d\n" % (time.time(), os.getpid()))
'''

MERGE_CONFIG = """#!/bin/sh
# merge_config.sh -m -O DIR BASE FRAGMENT, as the kernel's does for these arguments
[ "$1" = -m ] && [ "$2" = -O ] || exit 2
cat "$4" "$5" | grep '^CONFIG_' > "$3/.config.merged" && mv "$3/.config.merged" "$3/.config"
"""


def git(path, *args):
    return subprocess.run(["git", "-C", str(path)] + list(args), check=True,
                          capture_output=True, text=True,
                          env=dict(os.environ, GIT_OPTIONAL_LOCKS="0",
                                   GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")).stdout


@pytest.fixture
def linux(tmp_path, monkeypatch):
    """A tiny kernel tree (git, two tagged commits), make stood in for, the cache in
    tmp_path. Returns (tree path, recorded make calls)."""
    root = tmp_path / "linux"
    for path, text in {"VERSION": "7.3.0-rc2", "kernel/events/core.c": "int perf;\n",
                       "arch/x86/configs/x86_64_defconfig": "CONFIG_SMP=y\n",
                       "scripts/kconfig/merge_config.sh": MERGE_CONFIG}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "scripts/kconfig/merge_config.sh").chmod(0o755)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Linux 7.3-rc2")
    git(root, "tag", "v7.3-rc2")
    (root / "kernel/events/core.c").write_text("int perf = 1;\n")
    git(root, "commit", "-q", "-am", "perf: one")
    make = tmp_path / "make.py"
    make.write_text(FAKE_MAKE)
    calls = tmp_path / "make-calls"
    monkeypatch.setenv("FAKE_MAKE_CALLS", str(calls))
    monkeypatch.setattr(tree, "MAKE", (sys.executable, str(make)))
    monkeypatch.setattr(tree, "setup", lambda: None)
    monkeypatch.setattr(cache, "CACHE", str(tmp_path / "cache"))

    def made():
        return calls.read_text().splitlines() if calls.exists() else []
    return root, made


BUILDER = """
import sys
sys.path.insert(0, %r)
from perfscale.vm import cache, tree
tree.MAKE = (sys.executable, %r)
tree.setup = lambda: None
cache.CACHE = %r
print(tree.build(tree.parse(%r)))
"""


def start_builder(tmp_path, root, sleep):
    """A build of tree:ROOT@v7.3-rc2 in a process of its own (python, then make), its make
    sleeping `sleep` s; returns (the builder, the marks file) once make has started."""
    marks = tmp_path / "marks"
    script = tmp_path / "builder.py"
    script.write_text(BUILDER % (os.path.join(runner.REPO_ROOT, "tools", "py"), str(tmp_path / "make.py"),
                                 str(tmp_path / "cache"), "tree:%s@v7.3-rc2" % root))
    # Ctrl-C's default action, as a terminal leaves it: a test run started in the
    # background by a script inherits SIGINT ignored, and the builder would never see it.
    builder = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE,
                               env=dict(os.environ, FAKE_MAKE_MARKS=str(marks),
                                        FAKE_MAKE_SLEEP=str(sleep)),
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while not (marks.exists() and "sub" in marks.read_text()):
        assert builder.poll() is None, builder.communicate()
        assert time.monotonic() < deadline, "the builder's make never started"
        time.sleep(0.05)
    return builder, marks


def gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def untouched(root):
    """What must not change in the user's tree: HEAD, refs, index, the files' state."""
    index = os.stat(root / ".git" / "index").st_mtime_ns
    return (index, git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain"),
            sorted(os.listdir(root / ".git")), git(root, "worktree", "list"))


def test_a_tree_spec_names_a_commit_or_the_working_tree(linux, tmp_path):
    root, _ = linux
    source = tree.parse("tree:%s@v7.3-rc2" % root)
    assert source.commit == git(root, "rev-parse", "v7.3-rc2").strip()
    assert source.describe == "v7.3-rc2" and not source.dirty and source.revision == "v7.3-rc2"
    now = tree.parse("tree:%s" % root)
    assert now.commit == git(root, "rev-parse", "HEAD").strip()
    assert now.describe.startswith("v7.3-rc2-1-g") and not now.dirty
    (root / "kernel/events/core.c").write_text("int perf = 2;\n")
    dirty = tree.parse("tree:%s" % root)
    assert dirty.dirty and dirty.describe.endswith("-dirty") and b"perf = 2" in dirty.diff
    # A revision is read as git reads it, '@' and all; a folder may hold '@' too.
    assert tree.parse("tree:%s@HEAD@{0}" % root).commit == now.commit
    at = tmp_path / "a@b"
    at.symlink_to(root)
    assert tree.split_spec("tree:%s@v7.3-rc2" % at) == (str(at), "v7.3-rc2")
    assert tree.split_spec("tree:%s" % at) == (str(at), None)
    home = os.path.expanduser("~")
    assert tree.split_spec("tree:~@main") == (home, "main")


def test_bad_tree_specs_are_usage_errors(linux, tmp_path):
    root, _ = linux
    cases = {"tree:": "needs a path", "tree:%s@v1" % (tmp_path / "nope"): "no such folder",
             "tree:%s@v9.9" % root: "has no commit 'v9.9'",
             "tree:%s" % tmp_path: "not a git tree"}
    plain = tmp_path / "plain"
    plain.mkdir()
    git(plain, "init", "-q")
    cases["tree:%s" % plain] = "not a kernel tree"
    for spec, words in cases.items():
        with pytest.raises(errors.VmUsageError, match=words):
            tree.parse(spec)


def test_a_tree_is_built_once_per_commit_config_and_compiler(linux):
    root, made = linux
    before = untouched(root)
    first = kernel.resolve_kernel("tree:%s@v7.3-rc2" % root)
    assert made() == ["x86_64_defconfig", "olddefconfig", "bzImage"]
    assert os.path.basename(first.vmlinuz) == "vmlinuz-7.3.0-rc2"
    assert first.label == "tree:%s@v7.3-rc2 (vmlinuz-7.3.0-rc2)" % root
    commit = git(root, "rev-parse", "v7.3-rc2").strip()
    assert first.context == {
        "kernel_tree": str(root), "kernel_tree_commit": commit,
        "kernel_tree_describe": "v7.3-rc2", "kernel_tree_dirty": "no",
        "kernel_compiler": tree.compiler_identity(),
        "kernel_config_fragment_sha256": tree.digest(tree.fragment_bytes())}
    # The fragment merged onto the tree's defconfig is the config kept beside the vmlinuz.
    config = os.path.join(os.path.dirname(first.vmlinuz), "config-7.3.0-rc2")
    with open(config) as f:
        assert "CONFIG_SMP=y" in f.read().splitlines()
    assert "CONFIG_PERF_EVENTS=y" in open(config).read().splitlines()
    # What the tree lacks is said, not hidden.
    assert "CONFIG_DEBUG_INFO_BTF" in cache.about(first.vmlinuz)["fragment_options_not_set"]
    # Asked again: at once, from the cache.
    again = kernel.resolve_kernel("tree:%s@v7.3-rc2" % root)
    assert again.vmlinuz == first.vmlinuz and len(made()) == 3
    # Another commit is another kernel; the same folder builds it, with the config it has
    # (the defconfig did not change: Kbuild follows Kconfig changes itself).
    head = kernel.resolve_kernel("tree:%s@HEAD" % root)
    assert head.vmlinuz != first.vmlinuz and made()[3:] == ["bzImage"]
    assert head.context["kernel_tree_describe"].startswith("v7.3-rc2-1-g")
    assert open(head.vmlinuz).read() != open(first.vmlinuz).read()
    assert len(os.listdir(os.path.join(tree.tree_folder(str(root)), "src", "kernel",
                                       "events"))) == 1
    assert untouched(root) == before
    # A commit that changes the defconfig is configured again.
    (root / "arch/x86/configs/x86_64_defconfig").write_text("CONFIG_SMP=y\nCONFIG_NUMA=y\n")
    git(root, "commit", "-qam", "x86: defconfig")
    numa = kernel.resolve_kernel("tree:%s@HEAD" % root)
    assert made()[4:] == ["x86_64_defconfig", "olddefconfig", "bzImage"]
    assert "CONFIG_NUMA=y" in open(os.path.join(os.path.dirname(numa.vmlinuz),
                                                "config-7.3.0-rc2")).read().splitlines()


def test_uncommitted_changes_are_built_and_marked_dirty_and_the_tree_is_left_alone(linux):
    root, made = linux
    clean = kernel.resolve_kernel("tree:%s" % root)
    (root / "kernel/events/core.c").write_text("int perf = 3;\n")
    (root / "kernel/events/new.c").write_text("int fresh;\n")
    git(root, "add", "kernel/events/new.c")  # staged: in `git diff HEAD` too
    before = untouched(root)
    dirty = kernel.resolve_kernel("tree:%s" % root)
    assert dirty.vmlinuz != clean.vmlinuz
    assert dirty.context["kernel_tree_dirty"] == "yes"
    assert dirty.context["kernel_tree_describe"].endswith("-dirty")
    src = os.path.join(tree.tree_folder(str(root)), "src")
    assert open(os.path.join(src, "kernel/events/core.c")).read() == "int perf = 3;\n"
    assert os.path.isfile(os.path.join(src, "kernel/events/new.c"))
    assert untouched(root) == before
    # The same changes again: the kept kernel. Back to the commit: the clean one, and the
    # build's checkout loses the changes (the new file too).
    assert kernel.resolve_kernel("tree:%s" % root).vmlinuz == dirty.vmlinuz
    assert kernel.resolve_kernel("tree:%s@HEAD" % root).vmlinuz == clean.vmlinuz
    assert made() == ["x86_64_defconfig", "olddefconfig", "bzImage", "bzImage"]
    git(root, "reset", "-q", "--hard")
    git(root, "clean", "-qfd")
    os.remove(clean.vmlinuz)  # built again from the checkout
    kernel.resolve_kernel("tree:%s@HEAD" % root)
    assert not os.path.exists(os.path.join(src, "kernel/events/new.c"))


def test_the_cache_key_is_the_commit_changes_config_and_compiler():
    source = tree.Source("tree:x", "/x", None, "a" * 40, "v1")
    key = tree.build_key(source, b"CONFIG_A=y\n", "gcc 12")
    assert tree.build_key(source, b"CONFIG_A=y\n", "gcc 12") == key
    moved = [tree.build_key(tree.Source("tree:x", "/x", None, "b" * 40, "v1"), b"CONFIG_A=y\n",
                            "gcc 12"),
             tree.build_key(tree.Source("tree:x", "/x", None, "a" * 40, "v1", b"diff"),
                            b"CONFIG_A=y\n", "gcc 12"),
             tree.build_key(source, b"CONFIG_A=n\n", "gcc 12"),
             tree.build_key(source, b"CONFIG_A=y\n", "gcc 13")]
    assert len(set(moved + [key])) == 5
    # Where the tree is and what the user typed are not the kernel.
    assert tree.build_key(tree.Source("tree:~/y@v1", "/y", "v1", "a" * 40, "v1"), b"CONFIG_A=y\n",
                          "gcc 12") == key


def test_a_failed_build_is_one_line_naming_its_log(linux):
    root, _ = linux
    (root / "kernel/events/broken.c").write_text("int x\n}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "perf: broken")
    with pytest.raises(errors.VmError) as failure:
        kernel.resolve_kernel("tree:%s@HEAD" % root)
    message = str(failure.value)
    assert "\n" not in message
    assert message.startswith("building tree:%s@HEAD (v7.3-rc2-2-g" % root)
    assert "kernel/events/broken.c:3:1: error: expected ';'" in message
    log = message.rsplit("(log: ", 1)[1].rstrip(")")
    assert "Error 2" in open(log).read()
    assert not os.path.exists(os.path.join(cache.CACHE, "kernels"))  # nothing kept


def test_options_the_tree_lacks_are_named():
    assert tree.options_not_set("# c\nCONFIG_A=y\nCONFIG_B=y\n# CONFIG_C is not set\n",
                                "CONFIG_A=y\nCONFIG_B=m\n") == ["CONFIG_B"]


def test_a_resolved_kernel_is_handed_to_the_guest_as_it_is(linux):
    root, _ = linux
    built = kernel.resolve_kernel("tree:%s@v7.3-rc2" % root)
    machine = qemu.Machine("tree:%s@v7.3-rc2" % root, 2, vmlinuz=built.vmlinuz)
    argv = qemu.launcher(machine)
    assert argv[argv.index("--vmlinuz") + 1] == built.vmlinuz
    # The guest reads the label and the context back, without resolving (building) again.
    pinned = kernel.kernel_at(built.vmlinuz, machine.kernel)
    assert (pinned.label, pinned.context) == (built.label, built.context)
    assert "--vmlinuz" not in qemu.launcher(qemu.Machine("debian:6.1", 2))


def test_a_kernel_that_never_reaches_init_is_a_skip_with_the_consoles_last_lines(
        tmp_path, monkeypatch):
    def refusing_qemu(*args, **kwargs):
        console = args[5]
        return ["sh", "-c", "printf 'early console line\\nInvalid kernel\\n' > %s; "
                "echo 'qemu: cannot load kernel' >&2; exit 1" % console]
    monkeypatch.setattr(qemu, "qemu_command", refusing_qemu)
    with pytest.raises(errors.KernelDidNotBoot) as failure:
        qemu.boot("vmlinuz", "initrd", 8, 1024, "tcg", 60, str(tmp_path), clock="instructions")
    message = str(failure.value)
    assert message.startswith("the kernel did not boot (TCG, instruction clock, 8 vCPUs): "
                              "QEMU failed (exit 1): qemu: cannot load kernel")
    assert "  | Invalid kernel" in message


# --- tools/debian-archive's sources lists ---------------------------------------------------

@pytest.mark.parametrize("suite,stanzas", [
    ("sid", [("http://archive.example/debian/", "sid")]),
    ("experimental", [("http://archive.example/debian/", "experimental")]),
    ("trixie-backports", [("http://archive.example/debian/", "trixie-backports")]),
    ("trixie", [("http://archive.example/debian/", "trixie trixie-updates"),
                ("http://archive.example/debian-security/", "trixie-security")]),
    ("bookworm-security", [("http://archive.example/debian-security/", "bookworm-security")])])
def test_each_suite_names_only_suites_that_exist(tmp_path, suite, stanzas):
    # sid and experimental have no -updates or -security suites: naming them failed
    # `tools/debian-archive sid update`. apt-get is stood in for (the archive's address
    # is the machine's, from `apt-get indextargets`).
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "apt-get").write_text(
        "#!/bin/sh\n[ \"$1\" = indextargets ] && printf '%s\\n' "
        "'http://archive.example/debian/ bookworm' "
        "'http://archive.example/debian/ bookworm-updates' "
        "'http://archive.example/debian-security/ bookworm-security'\nexit 0\n")
    (fake / "apt-get").chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (fake, os.environ["PATH"]),
               PERFSCALE_CACHE=str(tmp_path / "cache"))
    tool = os.path.join(os.path.dirname(debian.DEBIAN_ARCHIVE), "debian-archive")
    done = subprocess.run([tool, suite, "update"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    sources = (tmp_path / "cache" / "apt" / suite / "perfscale.sources").read_text()
    found = [(s.split("URIs: ")[1].split("\n")[0], s.split("Suites: ")[1].split("\n")[0])
             for s in sources.strip().split("\n\n")]
    assert found == stanzas


def test_a_suite_name_is_checked(tmp_path):
    tool = os.path.join(os.path.dirname(debian.DEBIAN_ARCHIVE), "debian-archive")
    done = subprocess.run([tool, "Trixie/../x", "update"], capture_output=True, text=True,
                          env=dict(os.environ, PERFSCALE_CACHE=str(tmp_path)))
    assert done.returncode == 2 and "not a Debian suite name" in done.stderr
    assert not os.listdir(tmp_path)


def test_a_mistyped_kernel_is_said_before_anything_is_fetched_or_built(tmp_path):
    assert kernel.name_problem("debian:7.9-cloud") is None  # the archive says if it has it
    assert "not a Debian kernel name" in kernel.name_problem("debian:7.1.08")
    assert "no such folder" in kernel.name_problem("tree:%s@v1" % (tmp_path / "no"))
    assert kernel.name_problem("tree:%s@v1" % tmp_path) is None
    assert "no such kernel image" in kernel.name_problem(str(tmp_path / "bzImage"))
    # A path is labelled by its path; a named kernel by its name and its vmlinuz.
    image = tmp_path / "bzImage"
    image.write_bytes(b"k")
    assert kernel.kernel_at(str(image), "bzImage").label == str(image)
    assert kernel.kernel_at(str(image), "tree:x@y").label == "tree:x@y (bzImage)"


def test_a_builder_killed_outright_keeps_the_tree_locked_until_its_make_is_done(linux, tmp_path):
    # The bisect demo of 2026-12-07: its builder was stopped while make ran on, and the
    # resumed bisect's make in the same folder read the half-written vmlinux as up to date.
    root, _ = linux
    builder, marks = start_builder(tmp_path, root, sleep=2)
    builder.kill()  # SIGKILL: no handler of ours runs
    builder.communicate()
    vmlinuz = tree.build(tree.parse("tree:%s@v7.3-rc2" % root), say=lambda line: None)
    assert os.path.isfile(vmlinuz)
    first_start, first_end = [line.split() for line in marks.read_text().splitlines()
                              if not line.startswith("sub")]
    assert first_start[0] == "start" and first_end[0] == "end"
    assert first_start[2] == first_end[2]  # the orphaned make ran to its end alone


def test_an_interrupted_builder_stops_its_make_first(linux, tmp_path):
    root, _ = linux
    builder, marks = start_builder(tmp_path, root, sleep=60)
    pids = [int(line.split()[-1]) for line in marks.read_text().splitlines()]
    builder.send_signal(signal.SIGINT)  # to the builder alone, not to its make
    _, err = builder.communicate(timeout=30)
    assert builder.returncode != 0 and b"KeyboardInterrupt" in err
    assert all(gone(pid) for pid in pids)  # make and what it started
    assert "end" not in marks.read_text()

"""Kernels built from a git tree: `--kernel tree:PATH@REV` (a commit) or `tree:PATH` (the
working tree as it is, uncommitted changes to tracked files included).

The user's tree is only read (git with optional locks off, so not even its index is
refreshed). perfscale keeps a clone of it that borrows its objects (`git clone --shared`)
under CACHE/kernel-trees/TREE/src and checks the commit out there, so a change of
revision rewrites only the files that differ and an incremental build stays one;
uncommitted changes are applied there as `git diff HEAD` has them. The build is out of
tree (CACHE/kernel-trees/TREE/build-CONFIG, one folder per tree and config) with ccache,
from the tree's own x86_64_defconfig merged with perfscale's fragment
(tools/kernel/perfscale.config) by the tree's scripts/kconfig/merge_config.sh, then
`make olddefconfig`. The bzImage and its .config are kept as CACHE/kernels/tree-KEY, KEY
digesting the commit, the uncommitted changes, the fragment, the compiler and this
recipe: the same kernel asked for again boots at once.
"""

import dataclasses
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Optional

from perfscale.suite import runner
from perfscale.vm import cache
from perfscale.vm.errors import VmError, VmUsageError

FRAGMENT = os.path.join(runner.REPO_ROOT, "tools", "kernel", "perfscale.config")
DEFCONFIG = "x86_64_defconfig"
# How a tree is built; a change to it (make's targets, the steps) is a new RECIPE, so no
# kernel kept from an older one passes for one it would build.
RECIPE = "1"
MAKE = ("make",)      # tests put a stand-in here
COMPILER = "gcc"
# git reads the user's tree without taking its index lock or refreshing the index.
_READ_ONLY_GIT = dict(os.environ, GIT_OPTIONAL_LOCKS="0", LC_ALL="C")


@dataclasses.dataclass(frozen=True)
class Source:
    """A tree at a revision, as resolved from the user's tree."""
    spec: str
    path: str                 # the tree's top level
    revision: Optional[str]   # as given; None: the working tree
    commit: str
    describe: str             # `git describe`, -dirty when diff is not empty
    diff: bytes = b""         # the working tree's changes to tracked files

    @property
    def dirty(self):
        return bool(self.diff)


def _git(path, *args, check=True, binary=False):
    done = subprocess.run(["git", "-C", path] + list(args), capture_output=True,
                          env=_READ_ONLY_GIT, text=not binary)
    if check and done.returncode != 0:
        err = done.stderr if not binary else done.stderr.decode(errors="replace")
        raise VmError("git %s in %s failed: %s" % (args[0], path, (
            err.strip().splitlines() or ["no message"])[-1]))
    return done


def split_spec(spec):
    """(path, revision or None) of tree:PATH[@REV]. The path ends at the first '@' after
    which a folder is named (a path may hold '@', a revision too: HEAD@{1})."""
    body = spec[len("tree:"):]
    if not body:
        raise VmUsageError("--kernel tree: needs a path: tree:PATH[@REV] (e.g. "
                           "tree:~/linux@v7.3-rc2)")
    if os.path.isdir(os.path.expanduser(body)):
        return os.path.expanduser(body), None
    for at in [m.start() for m in re.finditer("@", body)]:
        if os.path.isdir(os.path.expanduser(body[:at])) and body[at + 1:]:
            return os.path.expanduser(body[:at]), body[at + 1:]
    raise VmUsageError("--kernel %s: no such folder '%s' (tree:PATH[@REV], PATH a kernel "
                       "git tree)" % (spec, body.split("@", 1)[0]))


def parse(spec):
    """The Source tree:PATH[@REV] names, read from the user's tree (which it leaves as it
    is). VmUsageError when PATH is no git tree or REV no commit in it."""
    path, revision = split_spec(spec)
    top = _git(path, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0:
        raise VmUsageError("--kernel %s: %s is not a git tree" % (spec, path))
    path = top.stdout.strip()
    if not os.path.isfile(os.path.join(path, "scripts", "kconfig", "merge_config.sh")):
        raise VmUsageError("--kernel %s: %s is not a kernel tree (it has no "
                           "scripts/kconfig/merge_config.sh)" % (spec, path))
    wanted = (revision or "HEAD") + "^{commit}"
    commit = _git(path, "rev-parse", "--verify", "--quiet", wanted, check=False)
    if commit.returncode != 0:
        raise VmUsageError("--kernel %s: %s has no commit '%s'"
                           % (spec, path, revision or "HEAD"))
    commit = commit.stdout.strip()
    diff = b""
    if revision is None:
        diff = _git(path, "diff", "HEAD", "--binary", "--no-ext-diff", "--no-color",
                    binary=True).stdout
    describe = _git(path, "describe", "--tags", "--always", "--abbrev=12", commit,
                    check=False).stdout.strip() or commit[:12]
    return Source(spec, path, revision, commit, describe + ("-dirty" if diff else ""), diff)


def compiler_identity():
    """The compiler's first --version line (gcc (Debian 12.2.0-14+deb12u1) 12.2.0);
    None where it is missing."""
    try:
        done = subprocess.run([COMPILER, "--version"], capture_output=True, text=True)
    except OSError:
        return None
    lines = done.stdout.splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else None


def fragment_bytes(fragment=None):
    try:
        with open(fragment or FRAGMENT, "rb") as f:
            return f.read()
    except OSError as err:
        raise VmError("cannot read perfscale's kernel config fragment %s: %s"
                      % (fragment or FRAGMENT, err.strerror or err))


def digest(data):
    return hashlib.sha256(data if isinstance(data, bytes) else data.encode()).hexdigest()


def build_key(source, fragment, compiler):
    """What a built kernel is kept by: the commit, the uncommitted changes, the config
    fragment, the compiler and the recipe (the tree's own defconfig is in its commit)."""
    return digest("\n".join(["recipe " + RECIPE, "commit " + source.commit,
                             "diff " + digest(source.diff), "fragment " + digest(fragment),
                             "compiler " + compiler]))


def tree_folder(path, cache_root=None):
    """CACHE/kernel-trees/NAME-HASH: this tree's clone, build folders and logs."""
    real = os.path.realpath(path)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(real)) or "tree"
    return os.path.join(cache_root or cache.CACHE, "kernel-trees",
                        "%s-%s" % (name, digest(real)[:10]))


def setup():
    """Installs what building needs (tools/setup kernel-build); VmError where it cannot."""
    status = subprocess.call([os.path.join(runner.REPO_ROOT, "tools", "setup"),
                              "kernel-build"])
    if status != 0:
        raise VmError("tools/setup kernel-build failed (exit %d): building a kernel tree "
                      "needs its packages" % status)


def build(source, cache_root=None, jobs=None, fragment=None, say=None):
    """The vmlinuz of `source` built (or kept from before). Raises VmError; a failed
    build's message is one line naming its log."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    compiler = compiler_identity()
    if compiler is None:
        setup()
        compiler = compiler_identity()
        if compiler is None:
            raise VmError("no %s to build %s with" % (COMPILER, source.spec))
    fragment_data = fragment_bytes(fragment)
    key = build_key(source, fragment_data, compiler)
    entry = cache.kernel_dir("tree-" + key[:24], cache_root)
    kept = cache.vmlinuz_in(entry)
    if kept:
        return kept
    setup()
    folder = tree_folder(source.path, cache_root)
    cache.make_room(os.path.join(folder, "lock"), "kernel builds")
    os.makedirs(os.path.join(folder, "logs"), exist_ok=True)
    with open(os.path.join(folder, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build of a tree at a time
        kept = cache.vmlinuz_in(entry)  # built while we waited
        if kept:
            return kept
        log = os.path.join(folder, "logs", "%s-%s.log" % (time.strftime("%Y%m%dT%H%M%S"),
                                                          key[:12]))
        build_dir = os.path.join(folder, "build-" + digest(fragment_data + compiler.encode())[:12])
        say("perfscale: building %s (%s, %s) in %s; log: %s"
            % (source.spec, source.describe, source.commit[:12], build_dir, log))
        start = time.monotonic()
        with open(log, "wb") as out:
            run = _Runner(out, lock)
            src = _checkout(source, os.path.join(folder, "src"), run)
            config, unset = _configure(src, build_dir, fragment or FRAGMENT, run)
            _make(src, build_dir, run, log, source, start, jobs, ["bzImage"])
        seconds = time.monotonic() - start
        release = _kernel_release(build_dir)
        context = {"kernel_tree": source.path, "kernel_tree_commit": source.commit,
                   "kernel_tree_describe": source.describe,
                   "kernel_tree_dirty": "yes" if source.dirty else "no",
                   "kernel_compiler": compiler,
                   "kernel_config_fragment_sha256": digest(fragment_data)}
        vmlinuz = cache.keep_kernel(entry, os.path.join(build_dir, "arch", "x86", "boot",
                                                        "bzImage"), release, config,
                                    {"source": "tree", "spec": source.spec, "key": key,
                                     "context": context, "log": log,
                                     "build_seconds": round(seconds, 1),
                                     "fragment_options_not_set": unset})
        say("perfscale: built %s in %s: %s" % (source.spec, _minutes(seconds), vmlinuz))
        if unset:
            say("perfscale: %s's config lacks %d option(s) the fragment asks for (the tree "
                "does not have them, or their dependencies are off): %s"
                % (source.spec, len(unset), " ".join(unset)))
        return vmlinuz


def _minutes(seconds):
    return "%dm%02ds" % divmod(int(round(seconds)), 60)


class _Runner:
    """Runs the build's commands, their output in the build's log. Each runs in a process
    group of its own that goes with us: interrupted (Ctrl-C, or an exception of ours), we
    stop the whole group (make and its compilers) before the lock is let go. And each
    holds the build lock too: were we killed outright (SIGKILL, a crash), the lock stays
    held until the orphaned make is done, so the next build of this tree waits for it
    instead of running a second make in the same folder (which reads a half-written
    vmlinux as up to date, and fails or boots a broken kernel)."""

    def __init__(self, out, lock):
        self.out = out
        self.lock = lock

    @property
    def name(self):
        return self.out.name

    def __call__(self, command, cwd=None, stdin=None):
        out = self.out
        out.write(("$ %s\n" % " ".join(command)).encode())
        out.flush()
        env = dict(os.environ, LC_ALL="C")
        # ccache's objects beside perfscale's other kept things, unless the user keeps them
        # elsewhere.
        env.setdefault("CCACHE_DIR", os.path.join(cache.CACHE, "ccache"))
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.PIPE if stdin is not None else None,
                                   env=env, start_new_session=True,
                                   pass_fds=(self.lock.fileno(),))
        try:
            process.communicate(stdin)
        except BaseException:
            _stop_group(process)
            raise
        return process.returncode


def _stop_group(process, grace=10.0):
    """Stops `process` and everything it started (its own process group): SIGTERM, under
    which make deletes the target it was writing, then SIGKILL after `grace` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    # What is left of the group after make itself exited (a compiler between signals).
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _checkout(source, src, run):
    """Our clone of the user's tree, at the source's commit with its uncommitted changes.
    A clone whose borrowed objects are gone (the tree moved, gc) is made again."""
    for attempt in (1, 2):
        if not os.path.isdir(os.path.join(src, ".git")):
            shutil.rmtree(src, ignore_errors=True)
            if run(["git", "clone", "--quiet", "--shared", "--no-checkout", source.path,
                    src]) != 0:
                raise VmError("cannot clone %s for building (log: %s)" % (source.path, run.name))
        if run(["git", "-C", src, "checkout", "--quiet", "--force", "--detach",
                source.commit]) == 0:
            break
        if attempt == 2:
            raise VmError("cannot check %s out of %s (log: %s)"
                          % (source.commit[:12], source.path, run.name))
        shutil.rmtree(src, ignore_errors=True)
    if run(["git", "-C", src, "clean", "--quiet", "-d", "--force", "-x"]) != 0:
        raise VmError("cannot clean the build's checkout %s (log: %s)" % (src, run.name))
    if source.diff and run(["git", "-C", src, "apply", "--binary", "--whitespace=nowarn"],
                           stdin=source.diff) != 0:
        raise VmError("the uncommitted changes of %s do not apply to %s (log: %s)"
                      % (source.path, source.commit[:12], run.name))
    return src


def _configure(src, build_dir, fragment, run):
    """The tree's defconfig with the fragment merged, in build_dir/.config; returns (its
    path, the fragment's options it lacks). Made again only when the defconfig or the
    fragment changed since the folder's last one: a commit that changes a Kconfig file is
    Kbuild's to follow (its syncconfig runs whenever one is newer than the config, and
    gives new options their defaults as olddefconfig does), and the minute kconfig takes
    stays out of an incremental build. A config that comes out as before keeps its time,
    so that make sees nothing new."""
    os.makedirs(build_dir, exist_ok=True)
    config = os.path.join(build_dir, ".config")
    stamp = os.path.join(build_dir, ".perfscale-config-inputs")
    try:
        with open(os.path.join(src, "arch", "x86", "configs", DEFCONFIG), "rb") as f:
            inputs = digest(f.read() + b"\0" + fragment_bytes(fragment))
    except OSError:
        raise VmError("%s has no arch/x86/configs/%s to start the config from (log: %s)"
                      % (src, DEFCONFIG, run.name))
    try:
        with open(stamp) as f:
            configured = f.read().strip() == inputs and os.path.isfile(config)
    except OSError:
        configured = False
    if configured:
        run.out.write(b"perfscale: the defconfig and the fragment are as at the last build: "
                  b"the config is kept\n")
        with open(config, "rb") as f:
            return config, options_not_set(fragment_bytes(fragment).decode(errors="replace"),
                                           f.read().decode(errors="replace"))
    before = None
    if os.path.isfile(config):
        with open(config, "rb") as f:
            before = (f.read(), os.stat(config))
    steps = [list(MAKE) + ["-C", src, "O=" + build_dir, DEFCONFIG],
             [os.path.join(src, "scripts", "kconfig", "merge_config.sh"), "-m", "-O", build_dir,
              config, fragment],
             list(MAKE) + ["-C", src, "O=" + build_dir, "olddefconfig"]]
    for step in steps:
        if run(step, cwd=src) != 0:
            raise VmError("configuring the kernel failed at `%s` (log: %s)"
                          % (" ".join(os.path.basename(s) if s.startswith("/") else s
                                      for s in step[:4]), run.name))
    with open(config, "rb") as f:
        after = f.read()
    if before and before[0] == after:
        os.utime(config, ns=(before[1].st_atime_ns, before[1].st_mtime_ns))
    with open(stamp, "w") as f:
        f.write(inputs + "\n")
    return config, options_not_set(fragment_bytes(fragment).decode(errors="replace"),
                                   after.decode(errors="replace"))


def options_not_set(fragment, config):
    """The fragment's CONFIG_X=... lines the final config does not have as asked."""
    have = set(config.splitlines())
    return [line.split("=", 1)[0] for line in fragment.splitlines()
            if line.startswith("CONFIG_") and line.strip() not in have]


def _make(src, build_dir, run, log, source, start, jobs, targets):
    command = list(MAKE) + ["-C", src, "O=" + build_dir, "-j%d" % (jobs or os.cpu_count() or 1)]
    if shutil.which("ccache"):
        command.append("CC=ccache " + COMPILER)
    status = run(command + targets, cwd=src)
    if status != 0:
        run.out.flush()
        raise VmError("building %s (%s) failed after %s: %s (log: %s)"
                      % (source.spec, source.describe, _minutes(time.monotonic() - start),
                         _first_error(log), log))


def _first_error(log):
    """The build log's first compiler or make error, as one line."""
    try:
        with open(log, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return "no log"
    for line in lines:
        if re.search(r"\berror\b|\*\*\*", line, re.I) and not line.startswith("$ "):
            return line.strip()[:200]
    return "make failed"


def _kernel_release(build_dir):
    try:
        with open(os.path.join(build_dir, "include", "config", "kernel.release")) as f:
            return f.read().strip()
    except OSError:
        raise VmError("the build in %s left no include/config/kernel.release" % build_dir)

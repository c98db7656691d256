"""`tools/perfscale lava`: perfscale as a LAVA job (perfscale.labs.lava, docs/labs.md).

    tools/perfscale lava job --kernel K [--device-type qemu|x86] [--cpus N] [--mem MIB]
                             [--out DIR] [--image-url URL] [--name NAME] [--timeout MIN]
                             -- run [RUN OPTIONS] [-- FLAGS...]
    tools/perfscale lava run DIR [--output DIR] [--templates DIR] [--timeout S]

`job` builds the family binary as `run` does, the ramdisk, and writes DIR/job.yaml (with
DIR/ramdisk.cpio.gz and the kernel's URL), checked by LAVA's own validator (lava-common).
Images are file:// URLs of this machine unless --image-url names where a lab serves DIR
(the kernel is then DIR/vmlinuz, copied there). `--device-type x86` is a bare-metal PC
booted over iPXE (LAVA's x86 device type); qemu is LAVA's QEMU device under TCG.

    tools/perfscale lava submit --url URL [--token-file F] [--wait S] DIR|JOB.yaml

    tools/perfscale lava start DIR [--port N] | stop DIR

`start` brings up Debian's LAVA 2023.01 in DIR: PostgreSQL (as `db start` runs it), the
server (gunicorn, lava-scheduler), a worker and one qemu device (TCG), each by its PID;
it prints the URL and the submitter's token (also in DIR/token). `stop` stops them all.

`submit` sends the job to a LAVA server (its REST API; the token from --token-file or
PERFSCALE_LAVA_TOKEN), prints its id and follows it until it finishes (--wait 0: not at
all); exit 1 when LAVA says it did not complete, with its health.

`run` runs the job with lava-run (lava-dispatcher, no server) on a qemu device described
by LAVA's qemu.jinja2 template, writes the log to OUTPUT/log.yaml and the result file,
taken back from the log byte for byte, to OUTPUT/result.json.
Exit 0: written (run: the job passed); 1: the job failed; 2: bad input.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from perfscale.machine import identity
from perfscale.labs import lava, lava_server
from perfscale.suite import runner
from perfscale.options import KERNEL_HELP
from perfscale.vm import cache, debian, errors, kernel

LAVA_RUN = "lava-run"
_CACHE_TEMPLATES = os.path.join(cache.CACHE, "lava-server", "usr", "share", "lava-server",
                                "device-types")


def job_parser():
    parser = argparse.ArgumentParser(
        prog="tools/perfscale lava job",
        description="Write a LAVA job that runs perfscale (docs/labs.md).")
    parser.add_argument("--kernel", required=True, metavar="K", help=KERNEL_HELP)
    parser.add_argument("--device-type", default="qemu", choices=lava.DEVICE_TYPES,
                        help="qemu: LAVA's QEMU device (TCG); x86: a bare-metal PC booted "
                             "over iPXE (default %(default)s)")
    parser.add_argument("--cpus", type=int, default=2, metavar="N",
                        help="the qemu guest's vCPUs (default %(default)s)")
    parser.add_argument("--mem", type=int, default=1024, metavar="MIB",
                        help="the qemu guest's memory (default %(default)s)")
    parser.add_argument("--clock", default="real", choices=("real", "instructions"),
                        help="the qemu guest's clocks: real time, or its instructions "
                             "(QEMU's -icount, as `vm --clock instructions`: timings the "
                             "worker's load cannot move; docs/gate.md)")
    parser.add_argument("--out", default="lava-job", metavar="DIR",
                        help="where job.yaml and the ramdisk go (default ./lava-job)")
    parser.add_argument("--image-url", default="", metavar="URL",
                        help="where the lab serves DIR (default: file:// URLs here)")
    parser.add_argument("--name", default="", help="the job's name")
    parser.add_argument("--timeout", type=int, default=60, metavar="MIN",
                        help="the job's timeout in minutes (default %(default)s)")
    return parser


def main(argv):
    if argv[:1] == ["job"]:
        return job_main(argv[1:])
    if argv[:1] == ["run"]:
        return run_main(argv[1:])
    if argv[:1] == ["submit"]:
        return submit_main(argv[1:])
    if argv[:1] in (["start"], ["stop"]):
        return server_main(argv[0], argv[1:])
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    print("usage: tools/perfscale lava job|run|submit|start|stop ...  (tools/perfscale "
          "lava --help)",
          file=sys.stderr)
    return 2


def job_main(argv):
    parser = job_parser()
    own, run_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) \
        if "--" in argv else (argv, [])
    args = parser.parse_args(own)
    if run_args[:1] != ["run"]:
        parser.error("give the suite's run after --: -- run [RUN OPTIONS]")
    try:
        options = runner.parse_args(run_args[1:])
    except runner.UsageError as err:
        parser.error(str(err))
    for given, why in ((options.out, "--out (the result comes home in the job's log)"),
                       (options.plan, "--plan"), (options.profile, "--profile")):
        if given:
            parser.error("run's %s has no place in a LAVA job" % why)
    if args.device_type == "x86" and (args.cpus != 2 or args.mem != 1024
                                      or args.clock != "real"):
        parser.error("--cpus, --mem and --clock are a qemu guest's; a bare-metal x86 "
                     "machine has its own")
    if not 1 <= args.cpus <= 64 or not 256 <= args.mem <= 65536 or args.timeout < 15:
        parser.error("--cpus 1..64, --mem 256..65536 and --timeout 15 or more minutes")
    if len(args.name) > lava.JOB_NAME_MAX:
        parser.error("--name: LAVA takes a job name of %d characters at most, this one has "
                     "%d" % (lava.JOB_NAME_MAX, len(args.name)))
    try:
        job_kernel = kernel.resolve_kernel(args.kernel)
        if not args.image_url:  # before the build: a path LAVA cannot read stops here
            lava.file_url(job_kernel.vmlinuz)
            lava.file_url(os.path.join(args.out, "ramdisk.cpio.gz"))
        runner.check_family(options.family)
        # The tests' stand-in for the family binary (run's PERFSCALE_BINARY), when it is
        # one file that can go into the ramdisk.
        stand_in = os.environ.get(runner.STAND_IN_ENV, "")
        binary = stand_in if os.path.isfile(stand_in) else runner.build(options.family)
    except errors.VmError as err:
        print("lava job: %s" % err, file=sys.stderr)
        return 2 if isinstance(err, errors.VmUsageError) else 1
    except runner.UsageError as err:
        print("lava job: %s" % err, file=sys.stderr)
        return 2
    except runner.BuildError as err:
        print("lava job: %s" % err, file=sys.stderr)
        return err.status
    except lava.LavaError as err:
        print("lava job: %s" % err, file=sys.stderr)
        return 2
    try:
        return _write_job(args, options, run_args, job_kernel, binary)
    except (OSError, errors.VmError) as err:
        print("lava job: %s" % err, file=sys.stderr)
        return 1
    except lava.LavaError as err:
        print("lava job: %s" % err, file=sys.stderr)
        return 2


def _write_job(args, options, run_args, job_kernel, binary):
    vmlinuz, label = job_kernel.vmlinuz, job_kernel.label
    os.makedirs(args.out, exist_ok=True)
    image, guest_binary = lava.ramdisk(binary, {"PERFSCALE_REVISION": runner.revision()})
    ramdisk = os.path.join(args.out, "ramdisk.cpio.gz")
    with open(ramdisk, "wb") as f:
        f.write(image)
    if args.image_url:
        shutil.copyfile(vmlinuz, os.path.join(args.out, "vmlinuz"))
        base = args.image_url.rstrip("/") + "/"
        kernel_url, ramdisk_url = base + "vmlinuz", base + "ramdisk.cpio.gz"
    else:
        kernel_url, ramdisk_url = lava.file_url(vmlinuz), lava.file_url(ramdisk)
    release = os.path.basename(vmlinuz).partition("vmlinuz-")[2]
    config = identity.config_digest(release, None, os.path.dirname(vmlinuz)) \
        if release else "unknown"
    job = lava.Job(
        name=args.name or lava.job_name(run_args, label),
        device_type=args.device_type, kernel_url=kernel_url, ramdisk_url=ramdisk_url,
        kernel_sha256=lava.sha256_file(vmlinuz), ramdisk_sha256=lava.sha256_file(ramdisk),
        command=[guest_binary] + runner.binary_flags(options, lava.RESULT),
        cpus=args.cpus, mem_mib=args.mem, clock=args.clock, timeout_min=args.timeout,
        metadata={"perfscale.kernel": label, "perfscale.kernel_config_sha256": config,
                  "perfscale.run": " ".join(run_args),
                  "perfscale.revision": runner.revision(),
                  **{"perfscale." + k: v for k, v in job_kernel.context.items()}})
    document = lava.definition(job)
    problem = lava.validation_problem(document)
    if problem:
        raise lava.LavaError("LAVA's validator rejects the job: %s" % problem)
    path = os.path.join(args.out, "job.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(lava.to_yaml(document))
    print("lava job: %s (%s, %s; valid for LAVA's lava_common.schemas)"
          % (path, args.device_type, label))
    return 0


def run_parser():
    parser = argparse.ArgumentParser(
        prog="tools/perfscale lava run",
        description="Run a job of `lava job` with lava-run on a local qemu device.")
    parser.add_argument("job_dir", metavar="DIR", help="the folder `lava job` wrote")
    parser.add_argument("--output", default="", metavar="DIR",
                        help="lava-run's output folder (default DIR/run-UTCTIME)")
    parser.add_argument("--templates", default="", metavar="DIR",
                        help="LAVA's device-type templates (default: lava-server's, else "
                             "the copy under ~/.cache/perfscale/lava-server)")
    parser.add_argument("--timeout", type=int, default=3600, metavar="S",
                        help="seconds lava-run may take (default %(default)s)")
    return parser


def run_main(argv):
    parser = run_parser()
    args = parser.parse_args(argv)
    if args.timeout < 1:
        parser.error("--timeout must be at least 1 second")
    job_path = os.path.join(args.job_dir, "job.yaml")
    try:
        document = lava.load_yaml(job_path)
    except (OSError, lava.LavaError) as err:
        print("lava run: %s: %s" % (job_path, getattr(err, "strerror", None) or err),
              file=sys.stderr)
        return 2
    if document.get("device_type") != "qemu":
        print("lava run: %s is a %s job; lava-run here runs qemu jobs only"
              % (job_path, document.get("device_type")), file=sys.stderr)
        return 2
    if shutil.which(LAVA_RUN) is None:
        print("lava run: lava-run is missing: install Debian's lava-dispatcher",
              file=sys.stderr)
        return 2
    templates = lava.find_templates((args.templates, _CACHE_TEMPLATES))
    if not templates:
        try:
            debian.fetch_files("lava-server", "usr/share/lava-server/device-types",
                               os.path.join(cache.CACHE, "lava-server"),
                               "LAVA's device-type templates")
        except errors.VmError as err:
            print("lava run: %s" % err, file=sys.stderr)
            return 2
        templates = lava.find_templates((_CACHE_TEMPLATES,))
    try:
        cpus, memory = lava.qemu_shape(document)
    except lava.LavaError as err:
        print("lava run: %s: %s" % (job_path, err), file=sys.stderr)
        return 2
    output = args.output or os.path.join(args.job_dir, time.strftime("run-%Y%m%dT%H%M%SZ",
                                                                     time.gmtime()))
    os.makedirs(output, exist_ok=True)
    device = os.path.join(output, "device.yaml")
    with open(device, "w", encoding="utf-8") as f:
        f.write(lava.device_description(templates, cpus, memory))
    job_id = str(int(time.time()))
    shutil.copyfile(job_path, os.path.join(output, "job.yaml"))
    with open(os.path.join(output, "lineage.json"), "w", encoding="utf-8") as f:
        json.dump({"job_id": job_id, "device": lava.LOCAL_DEVICE,
                   "device_type": "qemu", "worker": socket.gethostname(),
                   "dispatcher": "lava-run"}, f)
    log_path = os.path.join(output, "log.yaml")
    started = time.monotonic()
    print("lava run: lava-run job %s on %s (log: %s)" % (job_id, device, log_path),
          file=sys.stderr)
    with open(log_path, "wb") as log:
        # Its own process group, so that QEMU and every helper it starts go with it.
        child = subprocess.Popen(
            [LAVA_RUN, "--job-id", job_id, "--output-dir", os.path.join(output, "lava"),
             "--device", device, os.path.join(output, "job.yaml")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            status = child.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            status = None
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGTERM)
                try:
                    child.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait()
    took = time.monotonic() - started
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            outcome = lava.parse_log(lava.log_entries(f.read()))
    except lava.LavaError as err:
        print("lava run: job %s: %s" % (job_id, err), file=sys.stderr)
        return 1
    if status is None:
        print("lava run: job %s: lava-run ran past %d s and was stopped" % (job_id,
              args.timeout), file=sys.stderr)
        return 1
    passed = sum(1 for c in outcome.cases if c.get("result") == "pass")
    skipped = sum(1 for c in outcome.cases if c.get("result") == "skip")
    print("lava run: job %s %s in %.0f s: %d test case(s), %d pass, %d skip%s"
          % (job_id, outcome.job_result or "ended without a verdict", took,
             len(outcome.cases), passed, skipped,
             "; " + outcome.job_error if outcome.job_error else ""))
    if outcome.result:
        result = os.path.join(output, "result.json")
        with open(result, "wb") as f:
            f.write(outcome.result)
        print("results: %s" % result)
    return 0 if outcome.job_result == "pass" and outcome.result else 1


def submit_parser():
    parser = argparse.ArgumentParser(
        prog="tools/perfscale lava submit",
        description="Submit a job of `lava job` to a LAVA server and follow it.")
    parser.add_argument("--url", required=True, help="the LAVA server, e.g. "
                        "https://lava.lab.example")
    parser.add_argument("--token-file", metavar="FILE", help="the server's API token "
                        "(else the environment's PERFSCALE_LAVA_TOKEN)")
    parser.add_argument("--wait", type=int, default=3600, metavar="S",
                        help="seconds to follow the job (default %(default)s; 0: do not)")
    parser.add_argument("job", metavar="DIR|JOB.yaml")
    return parser


def submit_main(argv):
    parser = submit_parser()
    args = parser.parse_args(argv)
    if args.wait < 0:
        parser.error("--wait must not be negative (0: do not follow the job)")
    path = os.path.join(args.job, "job.yaml") if os.path.isdir(args.job) else args.job
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        token = lava.read_token(args.token_file)
    except OSError as err:
        print("lava submit: %s: %s" % (path, err.strerror or err), file=sys.stderr)
        return 2
    except UnicodeDecodeError:
        print("lava submit: %s is not UTF-8 text, so not a job of `lava job`" % path,
              file=sys.stderr)
        return 2
    except lava.LavaError as err:
        print("lava submit: %s" % err, file=sys.stderr)
        return 2
    try:
        job_id = lava.submit_job(args.url, text, token)
        print("lava submit: job %s" % job_id, flush=True)
        deadline = time.monotonic() + args.wait
        state, health = lava.job_state(args.url, job_id, token)
        while args.wait and state != "Finished" and time.monotonic() < deadline:
            time.sleep(5)
            now = lava.job_state(args.url, job_id, token)
            if now != (state, health):
                print("lava submit: job %s %s" % (job_id, now[0].lower()), flush=True)
            state, health = now
    except lava.LavaError as err:
        print("lava submit: %s" % err, file=sys.stderr)
        return 2
    if not args.wait:
        return 0
    if state != "Finished":
        print("lava submit: job %s is still %s after %d s" % (job_id, state.lower(),
              args.wait), file=sys.stderr)
        return 1
    print("lava submit: job %s finished: %s" % (job_id, health))
    return 0 if health == "Complete" else 1


def server_main(action, argv):
    parser = argparse.ArgumentParser(
        prog="tools/perfscale lava " + action,
        description="%s a local LAVA server (docs/labs.md)" % action.capitalize())
    parser.add_argument("directory", metavar="DIR")
    if action == "start":
        parser.add_argument("--port", type=int, default=0, metavar="N",
                            help="the web server's port on 127.0.0.1 (default: the one "
                                 "DIR's server had, else a free one)")
    args = parser.parse_args(argv)
    if action == "start" and not 0 <= args.port <= 65535:
        print("lava start: --port %d: not a port" % args.port, file=sys.stderr)
        return 2
    try:
        if action == "stop":
            stopped = lava_server.stop(args.directory)
            print("lava stop: %s" % (", ".join("%s (PID %d)" % item for item in
                                               stopped.items()) or "nothing was running"))
            return 0
        started = lava_server.start(args.directory, args.port)
    except lava_server.ServerError as err:
        print("lava %s: %s" % (action, err), file=sys.stderr)
        return 2
    print("lava start: LAVA 2023.01 at %s (web PID %d, scheduler PID %d, worker %s PID %d, "
          "PostgreSQL PID %d); device %s (qemu, TCG)" % (
              started["url"], started["pids"]["web"], started["pids"]["scheduler"],
              started["worker"], started["pids"]["worker"], started["db_pid"],
              started["device"]))
    # The submitter's token, as the lab set-up asks: it is this trial server's own.
    print("lava start: token %s (in %s)" % (started["token"], started["token_file"]))
    print("lava start: tools/perfscale lava submit --url %s --token-file %s JOB"
          % (started["url"], started["token_file"]))
    return 0

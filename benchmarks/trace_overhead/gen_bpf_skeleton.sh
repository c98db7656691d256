#!/usr/bin/env bash
# Builds the BPF recorder's skeleton header: vmlinux.h from the running kernel's BTF
# (bpftool btf dump), the object with clang's BPF target, the skeleton with bpftool gen
# skeleton. Where a step cannot run here (no BTF, no bpftool, no clang), it writes a header
# that says why instead, and the recorder skips with that reason at run time.
#   gen_bpf_skeleton.sh SOURCE.bpf.c OUT.skel.h
set -euo pipefail
source=$1
out=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

unavailable() {
  printf '// Generated: the BPF recorder could not be built on the build machine.\n' >"$out"
  printf '#define PERFSCALE_BPF_SKELETON_UNAVAILABLE "%s"\n' "$1" >>"$out"
  exit 0
}

btf=/sys/kernel/btf/vmlinux
bpftool=$(command -v bpftool || echo /usr/sbin/bpftool)
[[ -r $btf ]] || unavailable "the build machine has no kernel BTF ($btf: CONFIG_DEBUG_INFO_BTF)"
[[ -x $bpftool ]] || unavailable "the build machine has no bpftool (tools/setup installs it)"
command -v clang >/dev/null || unavailable "the build machine has no clang (tools/setup installs it)"
[[ -r /usr/include/bpf/bpf_helpers.h ]] ||
  unavailable "the build machine has no libbpf headers (libbpf-dev; tools/setup installs it)"

"$bpftool" btf dump file "$btf" format c >"$work/vmlinux.h"
cp "$source" "$(dirname "$source")/bpf_recorder_abi.h" "$work/"
arch=$(uname -m)
case "$arch" in
  x86_64) target_arch=x86 ;;
  aarch64) target_arch=arm64 ;;
  *) target_arch=$arch ;;
esac
clang -g -O2 -target bpf "-D__TARGET_ARCH_$target_arch" -I"$work" -I/usr/include \
  -Wall -Werror -c "$work/$(basename "$source")" -o "$work/recorder.bpf.o"
# DWARF is not needed to load (BTF is kept): without it the embedded object is far smaller.
if command -v llvm-strip >/dev/null; then llvm-strip -g "$work/recorder.bpf.o"; fi
"$bpftool" gen skeleton "$work/recorder.bpf.o" name perfscale_bpf_recorder >"$out"

#!/bin/sh
# The smoke test every family's binary gets from perfscale_family (tools/bazel/perfscale.bzl):
# it parses its flags, registers at least one benchmark and prints its help, each exiting 0.
#   family_smoke_test.sh BINARY [FLAG...]
set -eu
binary=$1
shift
list=$("$binary" --benchmark_list_tests=true "$@") || {
  echo "FAIL: $binary --benchmark_list_tests=true $* exited $?" >&2
  exit 1
}
[ -n "$list" ] || { echo "FAIL: $binary registered no benchmark" >&2; exit 1; }
echo "$(echo "$list" | wc -l) benchmarks registered, e.g. $(echo "$list" | head -1)"
help=$("$binary" --help) || { echo "FAIL: $binary --help exited $?" >&2; exit 1; }
case "$help" in
  *--benchmark_filter*) ;;
  *) echo "FAIL: $binary --help does not list Google Benchmark's flags" >&2; exit 1 ;;
esac

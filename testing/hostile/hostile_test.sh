#!/bin/sh
# Runs the Python test named by $1 with Debian's python3 on //benchmarks:suite from the runfiles.
set -eu
here="${TEST_SRCDIR}/${TEST_WORKSPACE}"
script=$1
shift
exec /usr/bin/python3 "${here}/testing/hostile/${script}" "${here}/benchmarks/suite" "$@"

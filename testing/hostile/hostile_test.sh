#!/bin/sh
# Runs hostile_test.py with Debian's python3 on //benchmarks:all from the runfiles.
set -eu
here="${TEST_SRCDIR}/${TEST_WORKSPACE}"
exec /usr/bin/python3 "${here}/testing/hostile/hostile_test.py" "${here}/benchmarks/all"

#!/bin/sh
# Runs the Python test named by $1 with Debian's python3 on //benchmarks:suite from the runfiles.
set -eu
here="${TEST_SRCDIR}/${TEST_WORKSPACE}"
exec /usr/bin/python3 "${here}/testing/hostile/$1" "${here}/benchmarks/suite"

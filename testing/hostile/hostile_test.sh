#!/bin/sh
# Runs the Python test named by $1 with perfscale's interpreter (tools/py/python) on
# //benchmarks:suite from the runfiles.
set -eu
here="${TEST_SRCDIR}/${TEST_WORKSPACE}"
script=$1
shift
exec "${here}/tools/py/python" "${here}/testing/hostile/${script}" "${here}/benchmarks/suite" "$@"

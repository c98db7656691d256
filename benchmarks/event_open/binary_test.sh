#!/bin/sh
# Runs binary_test.py with perfscale's interpreter (tools/py/python) on the
# event_open binary from this test's runfiles.
set -eu
here="${TEST_SRCDIR}/${TEST_WORKSPACE}"
exec "${here}/tools/py/python" "${here}/benchmarks/event_open/binary_test.py" \
  "${here}/benchmarks/event_open/event_open"

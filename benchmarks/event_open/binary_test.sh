#!/bin/sh
# Runs binary_test.py with Debian's python3 (never a pyenv one from PATH) on the
# event_open binary from this test's runfiles.
set -eu
here="${TEST_SRCDIR}/${TEST_WORKSPACE}"
exec /usr/bin/python3 "${here}/benchmarks/event_open/binary_test.py" \
  "${here}/benchmarks/event_open/event_open"

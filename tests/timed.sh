#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run a suite and say how long it took (make test's log shows where its
# minutes go). Usage: tests/timed.sh COMMAND [ARGS...]; its exit status.
t0=$(date +%s)
"$@"
rc=$?
echo "== $(( $(date +%s) - t0 )) s: $*"
exit $rc

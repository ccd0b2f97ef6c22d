#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run a suite and say how long it took, and how much CPU it used (make
# test's log shows where its minutes go, and which suites wait rather than
# compute: cpu well under the wall time). Usage: tests/timed.sh COMMAND
# [ARGS...]; its exit status. With GPUOS_TEST_SUMMARY=FILE it also adds a
# line to FILE (make test's suites run side by side; see the Makefile), and
# `tests/timed.sh --summary FILE` prints them: every suite by its wall time,
# then the ones that failed.
if [ "${1:-}" = --summary ]; then
	f=$2
	[ -s "$f" ] || { echo "== no suite ran"; exit 1; }
	echo "== the suites, longest first (wall s, cpu s, exit status):"
	sort -t'	' -k2,2nr "$f" | awk -F'\t' '{ printf "   %5d s %5d s  %s  %s\n", $2, $3, $1 == 0 ? "ok  " : "FAIL", $4 }'
	n=$(awk -F'\t' '$1 != 0' "$f" | wc -l)
	if [ "$n" -gt 0 ]; then
		echo "== $n failed:"
		awk -F'\t' '$1 != 0 { printf "   %s (exit %s)\n", $4, $1 }' "$f"
		exit 1
	fi
	echo "== all $(wc -l < "$f") passed"
	exit 0
fi
# python3 found once: through pyenv's shim (the build machine's python3)
# every start runs pyenv's bash scripts first, 0.7 s of CPU on the loaded
# 2-core machine against 0.1 s for the interpreter itself (2026-12-02), and
# the suites start python3 hundreds of times. As `pyenv exec` does, the
# interpreter's own folder goes first in PATH: the same python3, started
# directly (issue 35).
if py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -n "$py" ] &&
	[ "$(command -v python3)" != "$py" ]; then
	export PATH="${py%/*}:$PATH"
fi
t0=$(date +%s)
"$@"
rc=$?
# `times`' second line: the user and system time of the children waited
# for (written to a file: in a pipe or $(...) it would speak of a subshell).
f=$(mktemp) && times > "$f" &&
	cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); n += a[1] * 60 + a[2] }
		printf "%d", n + 0.5 }' "$f")
rm -f "$f"
dt=$(( $(date +%s) - t0 ))
echo "== $dt s (cpu ${cpu:-?} s): $*"
if [ -n "${GPUOS_TEST_SUMMARY:-}" ]; then
	# one line, written at once (suites end side by side): status, wall, cpu, command
	line=$(printf '%s\t%s\t%s\t%s' "$rc" "$dt" "${cpu:-0}" "$*")
	echo "$line" >> "$GPUOS_TEST_SUMMARY"
fi
exit $rc

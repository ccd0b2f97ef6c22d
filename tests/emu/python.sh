#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Python binding (apps/python/gpuos, ctypes) in host mode: a unittest
# file of tests/python against BUILD_DIR/lib/libgpuos.so, on models and
# files of its own in an ext4 image on the emulated controller:
# test_gpuos.py (the default: GGUF models, files, memory, DLPack),
# test_models.py (safetensors files and checkpoints, GGUF dequantised with
# dtype=) or test_connect.py (test_models.py's tests again through
# gpuos.connect() to a `gpuos boot` service, and what a client adds). Needs python3 with numpy (Debian: python3-numpy).
# Usage: tests/emu/python.sh BUILD_DIR [TEST_FILE]
set -u
build=${1:-build}
test=${2:-test_gpuos.py}
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/gpuos-python.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "  ok   $1"; }
bad() { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
export GPUOS_QUIET_HOST=1

summary() { echo "python: $pass passed, $fail failed"; [ $fail -eq 0 ]; exit $?; }

echo "== the interpreter and the library"
# python3 on PATH may be another installation than the one Debian's
# python3-numpy went into (/usr/bin/python3): take the first with numpy.
py=
for p in python3 /usr/bin/python3; do
	if command -v "$p" > /dev/null 2>&1 && "$p" -c 'import numpy' > /dev/null 2>&1; then
		py=$(command -v "$p")
		break
	fi
done
if ! command -v python3 > /dev/null 2>&1; then
	bad "python3 is missing: install python3 and python3-numpy (scripts/deps.sh)"
	summary
fi
if [ -z "$py" ]; then
	bad "numpy is missing for python3 ($(command -v python3)) and /usr/bin/python3: install python3-numpy (scripts/deps.sh)"
	summary
fi
ok "python3 with numpy: $py ($("$py" -c 'import sys, numpy; print("Python %d.%d, numpy %s" % (sys.version_info[0], sys.version_info[1], numpy.__version__))'))"
lib=$build/lib/libgpuos.so
if [ ! -f "$lib" ]; then
	bad "$lib is missing: build it with make lib"
	summary
fi
ok "$lib"
lib=$(cd "$(dirname "$lib")" && pwd)/libgpuos.so

echo "== tests/python/$test"
t0=$(date +%s)
GPUOS_LIBRARY=$lib GPUOS_BIN=$(cd "$build" && pwd)/gpuos PYTHONPATH=$here/apps/python${PYTHONPATH:+:$PYTHONPATH} \
	timeout 300 "$py" "$here/tests/python/$test" -v > "$tmp/log" 2>&1
rc=$?
t1=$(date +%s)
# One line per test ("name (module.Class.name) ... ok|FAIL|ERROR|skipped"),
# then the failures' tracebacks and "Ran N tests", "OK" or "FAILED (...)".
"$py" - "$tmp/log" > "$tmp/counts" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
n_ok = n_bad = 0
for m in re.finditer(r"^(\S+) \(([^)]*)\)(?:\n.*?)? \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$",
                     text, re.M):
    verdict = m.group(3)
    good = verdict == "ok" or verdict.startswith("skipped") or verdict == "expected failure"
    print(("ok" if good else "FAIL"), "%s.%s%s" % (m.group(2).split(".")[-2] if "." in m.group(2) else m.group(2),
                                                  m.group(1), "" if verdict in ("ok", "FAIL", "ERROR") else " (%s)" % verdict))
ran = re.search(r"^Ran (\d+) tests?", text, re.M)
print("RAN", ran.group(1) if ran else "-1")
PY
while read -r verdict name; do
	case $verdict in
	ok) ok "$name" ;;
	FAIL) bad "$name" ;;
	RAN) ran=$name ;;
	esac
done < "$tmp/counts"
if [ $rc -ne 0 ] || [ $fail -ne 0 ]; then
	# the failures' tracebacks (everything after the per-test lines)
	sed -n '/^======/,$p' "$tmp/log" | sed 's/^/       /'
	[ $fail -eq 0 ] && bad "$test exited $rc"
fi
check "$test ran its tests (${ran:-0}) in $((t1 - t0)) s, exit status 0" \
	test "$rc" -eq 0 -a "${ran:-0}" -gt 0

summary

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --root DIR (docs/security.md): clients see only DIR of the file system, as
# "/". Paths with "..", relative and absolute symlinks all stay inside; the
# metadata warp resolves them (gpuos_ext4_lookup_at), here in host mode on
# the emulated controller, through the local commands and through a service.
# Usage: tests/emu/root.sh BUILD_DIR
set -u
. "$(dirname "$0")/wait.sh" # wait_ready FILE PID
build=${1:-build}
gpuos=$build/gpuos
tmp=$(mktemp -d /tmp/gpuos-root-test.XXXXXX)
svc=
trap '[ -n "$svc" ] && kill -9 $svc 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
export GPUOS_QUIET_HOST=1

command -v mke2fs > /dev/null || { echo "root: mke2fs is missing (make deps)"; exit 1; }
[ -x "$gpuos" ] || { echo "root: $gpuos is missing (make BUILD=$build all)"; exit 1; }

# /pub is the root clients get; /secret.txt and /pub2/secret.txt lie outside.
src=$tmp/src
mkdir -p "$src/pub/sub" "$src/pub2"
echo "public a" > "$src/pub/a.txt"
echo "public b" > "$src/pub/sub/b.txt"
echo "SECRET" > "$src/secret.txt"
echo "SECRET2" > "$src/pub2/secret.txt"
ln -s ../secret.txt "$src/pub/up"            # relative, one level out
ln -s ../../../../secret.txt "$src/pub/sub/far" # relative, far out
ln -s /secret.txt "$src/pub/abs"              # absolute, outside
ln -s /a.txt "$src/pub/abs_in"                # absolute, inside once rooted
ln -s ../pub2 "$src/pub/sib"                  # a sibling directory
ln -s /pub/a.txt "$src/pub/full"              # a path that only works unrooted
mke2fs -q -F -t ext4 -d "$src" "$tmp/fs.img" 16M > /dev/null 2>&1 || { echo "root: mke2fs failed"; exit 1; }
dev="emu:$tmp/fs.img"

# cat_is NAME PATH WANT [--socket S | local]: cat prints WANT
cat_is() {
	local name=$1 path=$2 want=$3
	shift 3
	local got rc=0
	got=$("$@" cat "$path" 2> "$tmp/err") || rc=$?
	check "$name" test "$rc" -eq 0 -a "$got" = "$want"
}
# cat_refused NAME PATH REASON CMD: cat exits 1 and says REASON, and no secret leaks
cat_refused() {
	local name=$1 path=$2 reason=$3
	shift 3
	local rc=0
	"$@" cat "$path" > "$tmp/out" 2> "$tmp/err" || rc=$?
	check "$name" test "$rc" -eq 1 -a "$(grep -c SECRET "$tmp/out")" -eq 0 -a "$(grep -c "$reason" "$tmp/err")" -ge 1
}
local_cmd() { "$gpuos" "$@" --device "$dev" --root /pub; }

echo "== local commands with --root /pub"
cat_is "a file at the root" /a.txt "public a" local_cmd
cat_is "a file below it" /sub/b.txt "public b" local_cmd
cat_refused "/../secret.txt stops at the root" /../secret.txt 'no such file' local_cmd
cat_refused "/sub/../../secret.txt stops at the root" /sub/../../secret.txt 'no such file' local_cmd
cat_refused "relative path ../secret.txt resolves from the root" ../secret.txt 'no such file' local_cmd
cat_refused "a relative symlink out (../secret.txt)" /up 'no such file' local_cmd
cat_refused "a relative symlink far out" /sub/far 'no such file' local_cmd
cat_refused "an absolute symlink to /secret.txt" /abs 'no such file' local_cmd
cat_is "an absolute symlink resolves from the root" /abs_in "public a" local_cmd
cat_refused "a symlink to a sibling directory" /sib/secret.txt 'no such file' local_cmd
cat_refused "an absolute symlink that names the root's own path" /full 'no such file' local_cmd
"$gpuos" ls --device "$dev" --root /pub / > "$tmp/ls" 2>&1
check "ls / lists the root's entries, not the file system's" \
	test "$(grep -cw a.txt "$tmp/ls")" -eq 1 -a "$(grep -cw secret.txt "$tmp/ls")" -eq 0 -a "$(grep -cw pub2 "$tmp/ls")" -eq 0
"$gpuos" stat --device "$dev" --root /pub --json / > "$tmp/s1" 2>&1
"$gpuos" stat --device "$dev" --root /pub --json /.. > "$tmp/s2" 2>&1
"$gpuos" stat --device "$dev" --json /pub > "$tmp/s3" 2>&1
ino() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["inode"])' "$1" 2>/dev/null; }
check "/.. is the root itself, the inode of /pub" test -n "$(ino "$tmp/s1")" -a "$(ino "$tmp/s1")" = "$(ino "$tmp/s2")" \
	-a "$(ino "$tmp/s1")" = "$(ino "$tmp/s3")"
unrooted() { "$gpuos" "$@" --device "$dev"; }
cat_is "without --root the whole file system is seen" /secret.txt "SECRET" unrooted

echo "== a --root that cannot be"
rc=0; "$gpuos" cat --device "$dev" --root /pub/a.txt /x > /dev/null 2> "$tmp/err" || rc=$?
check "--root of a file: exit 1, not a directory" test "$rc" -eq 1 -a "$(grep -c 'not a directory' "$tmp/err")" -eq 1
rc=0; "$gpuos" cat --device "$dev" --root /nope /x > /dev/null 2> "$tmp/err" || rc=$?
check "--root of nothing: exit 1, no such directory" test "$rc" -eq 1 -a "$(grep -c 'no such directory' "$tmp/err")" -eq 1
rc=0; "$gpuos" cat --device "$dev" --root /pub/up /x > /dev/null 2> "$tmp/err" || rc=$?
check "--root of a symlink (not followed): exit 1" test "$rc" -eq 1 -a "$(grep -c 'not a directory' "$tmp/err")" -eq 1
rc=0; "$gpuos" cat --device "$dev" --root pub /a.txt > /dev/null 2> "$tmp/err" || rc=$?
check "--root relative: refused" test "$rc" -ne 0 -a "$(grep -c "from the file system's root" "$tmp/err")" -eq 1
rc=0; "$gpuos" gguf --device "$dev" --root /pub @0 > /dev/null 2> "$tmp/err" || rc=$?
check "raw bytes under --root: refused" test "$rc" -ne 0 -a "$(grep -c 'allow-raw' "$tmp/err")" -ge 1
rc=0; "$gpuos" cat --device "$dev" --root "/$(printf 'a%.0s' $(seq 300))" /x > /dev/null 2> "$tmp/err" || rc=$?
check "--root too long: refused" test "$rc" -ne 0 -a "$(grep -c 'at most 255 bytes' "$tmp/err")" -eq 1

echo "== a service with --root /pub"
sock=$tmp/s.sock
"$gpuos" boot --device "$dev" --host --socket "$sock" --root /pub > "$tmp/svc.out" 2> "$tmp/svc.err" &
svc=$!
wait_ready "$tmp/svc.out" $svc
sock_cmd() { "$gpuos" "$@" --socket "$sock"; }
cat_is "a client reads inside the root" /sub/b.txt "public b" sock_cmd
cat_refused "a client's /../secret.txt" /../secret.txt 'no such file' sock_cmd
cat_refused "a client's symlink out" /up 'no such file' sock_cmd
cat_refused "a client's absolute symlink out" /abs 'no such file' sock_cmd
"$gpuos" stop --socket "$sock" > /dev/null 2>&1
wait $svc 2>/dev/null
svc=

echo
echo "root: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hostile input and output around the command-line tools (issue 15, the
# smaller findings), in host mode on the emulated controller (no GPU needed):
#  1. output that cannot be written (stdout on /dev/full): every command that
#     prints exits 1 with "gpuos CMD: writing the output: REASON";
#  2. -o FILE, or stdout, onto the device's own image file (by its name,
#     another path, a symlink, a hard link): refused, the image unchanged;
#  3. names with control characters and bytes that are not UTF-8 (file
#     names, paths, GGUF keys, strings and tensor names) in text output and
#     error messages: escaped as README "Output" says (an oracle here
#     implements that rule on its own); JSON output keeps them exactly;
#  4. inline-data files whose size exceeds what the inode and its
#     system.data xattr hold, or whose xattr is malformed: corrupt metadata
#     (exit 1), never zeros;
#  5. numbers on the command line are decimal or 0x: 010 is ten;
#  6. a device that fails some commands (emu faults=): metadata reads are
#     retried as data reads are (DNR clear), and a completion that comes
#     twice for a command of a file request fails it, never answers OK.
# Usage: tests/emu/cli_hostile.sh BUILD_DIR
# Images are built here (mke2fs -d, debugfs, python3); GPUOS_HOSTILE_KEEP=1
# keeps the temporary directory.
set -u
build=${1:-build}
build=$(cd "$build" 2>/dev/null && pwd || echo "$build")
gpuos=$build/gpuos
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1

tmp=$(mktemp -d /tmp/gpuos-hostile-test.XXXXXX)
cleanup() { [ -n "${GPUOS_HOSTILE_KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"; }
trap cleanup EXIT
pass=0 fail=0 skipped=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
skip() { skipped=$((skipped + 1)); echo "  skip $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
t0=$(date +%s)

export GPUOS_QUIET_HOST=1 LC_ALL=C

for t in mke2fs debugfs python3 timeout; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "cli hostile: FAIL, $t is not installed (e2fsprogs, python3: scripts/deps.sh installs them)"
		exit 1
	fi
done
if [ ! -x "$gpuos" ]; then
	echo "cli hostile: no $build/gpuos (make BUILD=$build all)"
	exit 1
fi

# Each command's timeout is a hang guard (124: a bad exit), not a bound on
# its speed (issue 35): a runtime's boot takes seconds on a loaded machine.
hang=300
# run OUT ERR ARGS...: gpuos with stdout into OUT, stderr into ERR; its exit status in $rc
run() { local out=$1 err=$2; shift 2; timeout $hang "$gpuos" "$@" > "$out" 2> "$err"; rc=$?; }
# the one line the command printed on stderr, for the report
said() { head -c 300 "$1" | tr '\n' ' '; }

# ---- the images -------------------------------------------------------------------------------
S=$tmp/src
mkdir -p $S
printf 'hello\n' > $S/a
# names a terminal would obey: an escape sequence, a newline, a bell; bytes
# that are not UTF-8; a C1 control (U+009B, CSI) in UTF-8; a backslash
# beside UTF-8 text that must stay as it is
names=$(printf 'bad\033[31mred\nname|bell\007|inv\377\376utf|c1\302\233x|back\\slash \303\251t\303\251')
IFS='|' read -r -d '' n1 n2 n3 n4 n5 < <(printf '%s\0' "$names")
for n in "$n1" "$n2" "$n3" "$n4" "$n5"; do printf x > "$S/$n"; done
IMG=$tmp/img.ext4
mke2fs -q -F -t ext4 -b 4096 -d $S $IMG 8M > /dev/null 2>&1 || { echo "cli hostile: FAIL, mke2fs -d"; exit 1; }

# A GGUF v3 with a hostile key, string value and tensor name, written raw at
# byte 100 of a small image (gguf @OFFSET reads it there); the names go to
# names.json for the oracle.
python3 - $tmp <<'PY'
import json, struct, sys
d = sys.argv[1]
def s(b): return struct.pack("<Q", len(b)) + b
key = b"evil\x1b[2J.key"
val = b"v\x1b]0;pwned\x07\ninjected \xff end"
tname = b"tensor\x1b[31m\n\xc2\x9bname"
h = b"GGUF" + struct.pack("<IQQ", 3, 1, 2)
h += s(b"general.name") + struct.pack("<I", 8) + s(b"ok")
h += s(key) + struct.pack("<I", 8) + s(val)
h += s(tname) + struct.pack("<IQIQ", 1, 4, 0, 0)   # 1 dim of 4, F32, offset 0
h += bytes(-len(h) % 32) + struct.pack("<4f", 1, 2, 3, 4)
img = bytes(100) + h
open(d + "/gguf.img", "wb").write(img + bytes(-len(img) % 4096 + 4096))
open(d + "/alone.gguf", "wb").write(h)     # the file itself as the device: not whole LBAs
json.dump({"key": key.decode("latin-1"), "val": val.decode("latin-1"), "tensor": tname.decode("latin-1")},
          open(d + "/names.json", "w"))
# a raw image whose byte i is i mod 251: an offset reads back as itself
open(d + "/count.img", "wb").write(bytes(i % 251 for i in range(1 << 16)))
PY

# The escaping rule of README "Output", written again here: the oracle.
esc=$tmp/esc.py
cat > $esc <<'PY'
import sys
NAMED = {0x5c: "\\\\", 7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r"}
def utf8_len(b, i):
    """Bytes of the UTF-8 character at b[i], 0 if there is none (Python's
    decoder refuses overlong forms, surrogates and what is past U+10FFFF)."""
    c = b[i]
    n = 1 if c < 0x80 else 2 if 0xc2 <= c <= 0xdf else 3 if 0xe0 <= c <= 0xef else 4 if 0xf0 <= c <= 0xf4 else 0
    try:
        b[i:i + n].decode("utf-8")
    except UnicodeDecodeError:
        return 0
    return n if n and i + n <= len(b) else 0
def escape(b):
    out, i = [], 0
    while i < len(b):
        c = b[i]
        if c in NAMED:
            out.append(NAMED[c]); i += 1; continue
        n = utf8_len(b, i)
        cp = ord(b[i:i + n].decode("utf-8")) if n else None
        if n and not (cp < 0x20 or 0x7f <= cp < 0xa0):
            out.append(b[i:i + n].decode("utf-8")); i += n; continue
        for x in b[i:i + max(n, 1)]:
            out.append("\\%03o" % x)
        i += max(n, 1)
    return "".join(out)
if __name__ == "__main__":
    sys.stdout.write(escape(sys.argv[1].encode("utf-8", "surrogateescape")))
PY
e() { python3 $esc "$1"; }
# no byte below 0x20 but the newlines, nor DEL, nor a C1 control in UTF-8
clean() { python3 -c "import re, sys; sys.exit(1 if re.search(rb'[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]', open(sys.argv[1], 'rb').read()) else 0)" "$1"; }

# ---- 1. output that cannot be written ---------------------------------------------------------
echo "== 1. stdout on /dev/full: exit 1 and one line that says why"
if [ -w /dev/full ]; then
	full() { # NAME: ARGS... (stdout on /dev/full)
		local name=$1 cmd=$2
		shift
		run /dev/full $tmp/err "$@"
		if [ $rc -eq 1 ] && grep -q "^gpuos $cmd: .*No space left on device" $tmp/err; then
			ok "$name"
		else
			bad "$name (exit $rc: $(said $tmp/err))"
		fi
	}
	full "ls > /dev/full" ls --device emu:$IMG --host /
	full "ls --json > /dev/full" ls --json --device emu:$IMG --host /
	full "stat > /dev/full" stat --device emu:$IMG --host /a
	full "stat --json > /dev/full" stat --json --device emu:$IMG --host /a
	full "gguf > /dev/full" gguf --device emu:$tmp/gguf.img --host @100
	full "gguf --json > /dev/full" gguf --json --device emu:$tmp/gguf.img --host @100
	full "identify > /dev/full" identify --device emu:$IMG
	full "identify --json > /dev/full" identify --json --device emu:$IMG
	full "bench > /dev/full" bench --device emu:$IMG --iters 10
	full "cat > /dev/full" cat --device emu:$IMG --host /a
	full "read > /dev/full" read --device emu:$IMG --host --allow-raw --offset 0 --length 4096
	full "ls --help > /dev/full" ls --help
	cubin=$(ls $build/apps/*.cubin 2>/dev/null | head -1)
	if [ -n "$cubin" ]; then
		full "image > /dev/full" image $cubin
	else
		skip "image > /dev/full (no app image in $build/apps)"
	fi
	run /dev/full $tmp/err --version
	check "--version > /dev/full: exit 1" [ $rc -eq 1 ]
else
	skip "stdout on /dev/full: no writable /dev/full here"
fi

# ---- 2. the device's own image as the output --------------------------------------------------
echo "== 2. -o FILE or stdout onto the device's image: refused, the image unchanged"
OWN=$tmp/own.ext4 # a copy, fresh for each check: a failure leaves the others their image
cp $IMG $OWN
sum0=$(cksum < $IMG)
ln -s $OWN $tmp/own-link
ln $OWN $tmp/own-hard
refused() { # NAME REDIRECT ARGS...: gpuos with stdout to REDIRECT (> FILE, >> FILE)
	local name=$1 mode=$2
	shift 2
	cp $IMG $OWN # in place: the links below stay links to it
	case $mode in
	'>>'*) timeout $hang "$gpuos" "$@" >> "${mode#>>}" 2> $tmp/err; rc=$? ;;
	*) timeout $hang "$gpuos" "$@" > "$mode" 2> $tmp/err; rc=$? ;;
	esac
	if [ $rc -eq 2 ] && grep -q "the device's image" $tmp/err && [ "$(cksum < $OWN)" = "$sum0" ]; then
		ok "$name"
	else
		bad "$name (exit $rc, image $([ "$(cksum < $OWN)" = "$sum0" ] && echo unchanged || echo CHANGED): $(said $tmp/err))"
	fi
}
refused "cat -o IMAGE (the same name)" /dev/null cat --device emu:$OWN --host /a -o $OWN
refused "cat -o the image by another path" /dev/null \
	cat --device emu:$OWN --host /a -o "$tmp/../${tmp##*/}/./own.ext4"
refused "cat -o SYMLINK to the image" /dev/null cat --device emu:$OWN --host /a -o $tmp/own-link
refused "cat -o HARDLINK of the image" /dev/null cat --device emu:$OWN --host /a -o $tmp/own-hard
refused "cat -o IMAGE, device emu:IMAGE,queues=2 (options after the path)" /dev/null \
	cat --device "emu:$OWN,queues=2" --host /a -o $OWN
refused "cat >> IMAGE (stdout is the image)" ">>$OWN" cat --device emu:$OWN --host /a
refused "read -o SYMLINK to the image" /dev/null read --device emu:$OWN --host --allow-raw --offset 0 --length 512 \
	-o $tmp/own-link
# the refusal is not of every -o: another file is written, and truncated first
seq 1 2000 > $tmp/out.txt
run /dev/null $tmp/err cat --device emu:$IMG --host /a -o $tmp/out.txt
check "cat -o OTHER: written and truncated (exit $rc)" cmp -s $tmp/out.txt $S/a

# ---- 3. names that would drive a terminal -----------------------------------------------------
echo "== 3. names from the disk: escaped in text output and errors, exact in JSON"
run $tmp/ls.txt $tmp/err ls --device emu:$IMG --host /
check "ls: no control bytes on the terminal (exit $rc)" clean $tmp/ls.txt
check "ls: one line per entry (7: a, lost+found and 5 hostile names)" [ "$(wc -l < $tmp/ls.txt)" -eq 7 ]
for n in "$n1" "$n2" "$n3" "$n4" "$n5"; do
	x=$(e "$n")
	check "ls shows '$x'" grep -qF -- "  $x" $tmp/ls.txt
done
run $tmp/ls.json $tmp/err ls --json --device emu:$IMG --host /
check "ls --json: the names exactly (U+FFFD for bytes that are not UTF-8)" python3 - $tmp/ls.json "$names" <<'PY'
import json, sys
got = sorted(x["name"] for x in json.load(open(sys.argv[1]))["entries"])
raw = sys.argv[2].encode("utf-8", "surrogateescape").split(b"|")
want = sorted([n.decode("utf-8", "replace") for n in raw] + ["a", "lost+found"])
text = open(sys.argv[1], "rb").read()
sys.exit(0 if got == want and b"\\u001b" in text and b"\x1b" not in text else 1)
PY
run $tmp/stat.txt $tmp/err stat --device emu:$IMG --host "/$n1"
check "stat: 'File: /$(e "$n1")' (exit $rc)" grep -qxF -- "  File: /$(e "$n1")" $tmp/stat.txt
check "stat: no control bytes on the terminal" clean $tmp/stat.txt
run $tmp/stat.json $tmp/err stat --json --device emu:$IMG --host "/$n1"
check "stat --json: the path exactly" python3 -c "
import json, sys
sys.exit(json.load(open(sys.argv[1]))['path'] != sys.argv[2])" $tmp/stat.json "/$n1"
nope=$(printf 'no\033[2Jsuch\nfile')
# one line on stderr, with no control bytes, that names the path escaped
err_names() { [ "$(wc -l < $tmp/err)" -eq 1 ] && clean $tmp/err && grep -qF -- "$(e "$1")" $tmp/err; }
run $tmp/out $tmp/err cat --device emu:$IMG --host "/$nope"
check "an error naming a missing path: exit 1, one escaped line (exit $rc: $(said $tmp/err))" \
	eval '[ $rc -eq 1 ] && err_names "/$nope"'
run $tmp/out $tmp/err read --device emu:$IMG --host --allow-raw --offset 0 --length 1 -o "$tmp/$nope/x"
check "an error naming an output path: exit 1, one escaped line (exit $rc: $(said $tmp/err))" \
	eval '[ $rc -eq 1 ] && err_names "$tmp/$nope/x"'
run $tmp/gguf.txt $tmp/err gguf --device emu:$tmp/gguf.img --host @100
check "gguf text: no control bytes on the terminal (exit $rc: $(said $tmp/err))" clean $tmp/gguf.txt
for k in key val tensor; do
	x=$(python3 -c "
import json, sys; sys.path.insert(0, '$tmp'); import esc
b = json.load(open('$tmp/names.json'))['$k'].encode('latin-1')
print(esc.escape(b[:60] if '$k' == 'val' else b))")
	check "gguf text shows the $k as '$x'" grep -qF -- "$x" $tmp/gguf.txt
done
run $tmp/gguf.json $tmp/err gguf --json --device emu:$tmp/gguf.img --host @100
check "gguf --json: key, value and tensor name exactly (U+FFFD for the byte 0xff)" python3 - $tmp <<'PY'
import json, sys
d = sys.argv[1]
n = {k: v.encode("latin-1").decode("utf-8", "replace") for k, v in json.load(open(d + "/names.json")).items()}
g = json.load(open(d + "/gguf.json"))
kv = {x["key"]: x.get("value") for x in g["kv"]}
sys.exit(0 if kv.get(n["key"]) == n["val"] and g["tensors"][0]["name"] == n["tensor"] else 1)
PY

# ---- 4. inline data that the inode does not hold ----------------------------------------------
echo "== 4. inline data: a size past what the inode holds, a malformed system.data: CORRUPT"
I=$tmp/isrc
mkdir -p $I
head -c 100 /dev/urandom > $I/f100    # 60 bytes in i_block, 40 in system.data
printf tiny > $I/t
# with checksums (debugfs keeps them right) and without (raw edits below)
mke2fs -q -F -t ext4 -O inline_data -I 256 -b 4096 -d $I $tmp/inl.img 8M > /dev/null 2>&1
mke2fs -q -F -t ext4 -O inline_data,^metadata_csum -I 256 -b 4096 -d $I $tmp/inl-nocsum.img 8M > /dev/null 2>&1
if debugfs -R "stat /f100" $tmp/inl.img 2>/dev/null | grep -q "system.data (40)"; then
	run $tmp/out $tmp/err cat --device emu:$tmp/inl.img --host /f100
	check "inline: the intact file reads back (exit $rc)" cmp -s $tmp/out $I/f100
	corrupt() { # NAME IMG: cat /f100 fails with corrupt metadata, no bytes
		local n
		timeout $hang "$gpuos" cat --device "emu:$2" --host /f100 2> $tmp/err | head -c 1048576 > $tmp/out
		rc=${PIPESTATUS[0]}
		n=$(wc -c < $tmp/out)
		if [ $rc -eq 1 ] && [ $n -eq 0 ] && grep -qi "corrupt" $tmp/err; then
			ok "$1"
		else
			bad "$1 (exit $rc, $n bytes on stdout: $(said $tmp/err))"
		fi
	}
	cp $tmp/inl.img $tmp/i1.img
	debugfs -w -R "sif /f100 size 0xffffffff" $tmp/i1.img > /dev/null 2>&1
	corrupt "inline: i_size 0xffffffff (4 GiB of zeros before)" $tmp/i1.img
	cp $tmp/inl.img $tmp/i2.img
	head -c 20 /dev/urandom > $tmp/v20
	debugfs -w -R "ea_set -f $tmp/v20 /f100 system.data" $tmp/i2.img > /dev/null 2>&1
	corrupt "inline: system.data of 20 bytes under an i_size of 100" $tmp/i2.img
	# raw edits of the in-inode xattrs (no checksum to redo): the magic, and
	# the value's offset moved into the entry table
	python3 - $tmp/inl-nocsum.img "$(debugfs -R "imap /f100" $tmp/inl-nocsum.img 2>/dev/null)" <<'PY'
import re, struct, sys
img, imap = sys.argv[1], sys.argv[2]
blk, off = re.search(r"block (\d+), offset (0x[0-9a-f]+)", imap).groups()
ino = int(blk) * 4096 + int(off, 16)
d = bytearray(open(img, "rb").read())
extra = struct.unpack_from("<H", d, ino + 128)[0]
magic = ino + 128 + extra
assert struct.unpack_from("<I", d, magic)[0] == 0xEA020000
first = magic + 4
assert d[first + 16:first + 20] == b"data"      # the one entry: system.data
bad = bytearray(d); bad[magic] ^= 0xff
open(img + ".magic", "wb").write(bad)
bad = bytearray(d); struct.pack_into("<H", bad, first + 2, 0)   # e_value_offs: onto the entry
open(img + ".overlap", "wb").write(bad)
PY
	corrupt "inline: xattr magic broken (the data past i_block is gone)" $tmp/inl-nocsum.img.magic
	corrupt "inline: system.data value inside the entry table" $tmp/inl-nocsum.img.overlap
	run $tmp/out $tmp/err cat --device emu:$tmp/inl-nocsum.img.magic --host /t
	check "inline: a 4-byte file beside it still reads (exit $rc)" cmp -s $tmp/out $I/t
else
	skip "inline: mke2fs -d did not put 40 bytes of /f100 in system.data (e2fsprogs too old?)"
fi

# ---- 5. numbers -------------------------------------------------------------------------------
echo "== 5. numbers: decimal or 0x, a leading zero is not octal"
byte_at() { # ARGS...: the first byte that read prints, in decimal
	timeout $hang "$gpuos" read --device emu:$tmp/count.img --host --allow-raw "$@" 2> $tmp/err | od -An -tu1 | awk '{print $1; exit}'
}
check "--offset 010 reads byte 10" [ "$(byte_at --offset 010 --length 1)" = 10 ]
check "--offset 0x10 reads byte 16" [ "$(byte_at --offset 0x10 --length 1)" = 16 ]
check "--offset=0100 reads byte 100" [ "$(byte_at --offset=0100 --length 1)" = 100 ]
n=$(timeout $hang "$gpuos" read --device emu:$tmp/count.img --host --allow-raw --offset 0 --length 010 2> /dev/null | wc -c)
check "--length 010 reads 10 bytes (got $n)" [ "$n" -eq 10 ]
for v in 0x 0x-1 08x -1 +1 " 1" 1e3 0b1; do
	run /dev/null $tmp/err read --device emu:$tmp/count.img --host --allow-raw --offset "$v" --length 1
	check "--offset '$v' refused (exit $rc)" [ $rc -eq 2 ]
done
run $tmp/out $tmp/err gguf --json --device emu:$tmp/gguf.img --host @0100
check "gguf @0100 finds the GGUF at byte 100 (exit $rc: $(said $tmp/err))" grep -q '"tensor_count": 1' $tmp/out

# ---- 6. metadata reads of a device that fails some commands -----------------------------------
echo "== 6. metadata reads under injected faults"
# 18 cats of a fresh runtime each (a cold block cache: the partition table,
# superblock, group descriptors, inodes and the directory are read again),
# one command in 20 failed with a status whose DNR bit is clear.
n=0
for i in $(seq 18); do
	[ "$(timeout $hang "$gpuos" cat --device "emu:$IMG,faults=rate:0.05,seed=$i" --host /a 2> $tmp/err)" = hello ] && n=$((n + 1))
done
check "faults=rate:0.05: 18 of 18 cats read the file (metadata reads retried; got $n)" [ $n -eq 18 ]
# Completions that come twice (faults=dup): a file request one of whose
# commands the controller completes twice is refused, never answered OK;
# what does answer is what the device holds.
run $tmp/stat0 $tmp/err stat --device emu:$IMG --host /a
dup=0 wrong=0
for i in 1 2 3 4 5 6; do
	run $tmp/out $tmp/err stat --device "emu:$IMG,faults=dup:0.5,seed=$i" --host /a
	if [ $rc -eq 0 ]; then
		cmp -s $tmp/out $tmp/stat0 || wrong=$((wrong + 1))
	elif grep -q "completed a command twice" $tmp/err; then
		dup=$((dup + 1))
	fi
done
check "faults=dup:0.5: a stat whose command completed twice is refused ($dup of 6)" [ $dup -ge 1 ]
check "faults=dup:0.5: every stat that answers says what the device holds ($wrong wrong)" [ $wrong -eq 0 ]

# ---- 7. the front door: help, did you mean, -q, cat and read ranges ------------------------------
echo "== 7. the front door"
run $tmp/out $tmp/err help cat
check "gpuos help cat: cat's help (exit $rc)" sh -c "[ $rc -eq 0 ] && grep -q '^usage: gpuos cat ' $tmp/out && grep -q -- '--offset BYTES' $tmp/out"
run $tmp/out $tmp/err catt --device emu:$IMG /a
check "a mistyped command: exit 2, did you mean 'cat' ($(said $tmp/err))" sh -c "[ $rc -eq 2 ] && grep -q \"did you mean 'cat'\" $tmp/err"
run $tmp/out $tmp/err help ctas
check "gpuos help with a mistyped command: exit 2, did you mean ($(said $tmp/err))" sh -c "[ $rc -eq 2 ] && grep -q 'did you mean' $tmp/err"
run $tmp/out $tmp/err frobnicate
check "a command nothing is near: exit 2, no guess ($(said $tmp/err))" sh -c "[ $rc -eq 2 ] && ! grep -q 'did you mean' $tmp/err"
noex=
for c in $(timeout $hang "$gpuos" --help | awk '/^commands:/ {f = 1; next} f && /^  [a-z]/ {print $1} f && /^$/ {exit}'); do
	timeout $hang "$gpuos" help "$c" | grep -q '^examples:' || noex="$noex $c"
done
check "every command's help has examples (none:$noex)" [ -z "$noex" ]
run $tmp/out $tmp/err --help
check "gpuos --help names -q and GPUOS_QUIET_HOST" sh -c "grep -q -- '-q/--quiet' $tmp/out && grep -q GPUOS_QUIET_HOST $tmp/out"
(unset GPUOS_QUIET_HOST; timeout $hang "$gpuos" cat --device emu:$IMG --host /a > $tmp/out 2> $tmp/err)
check "without -q, host mode says so on stderr" grep -q 'host mode' $tmp/err
(unset GPUOS_QUIET_HOST; timeout $hang "$gpuos" cat -q --device emu:$IMG --host /a > $tmp/out 2> $tmp/err)
check "cat -q: the file, nothing on stderr ($(said $tmp/err))" sh -c "[ \"\$(cat $tmp/out)\" = hello ] && [ ! -s $tmp/err ]"
run $tmp/out $tmp/err cat --device emu:$IMG --host --offset 1 --length 3 /a
check "cat --offset 1 --length 3: 'ell' (exit $rc)" sh -c "[ $rc -eq 0 ] && [ \"\$(cat $tmp/out)\" = ell ]"
run $tmp/out $tmp/err cat --device emu:$IMG --host --offset 2 /a
check "cat --offset 2: to the end of the file" sh -c "[ $rc -eq 0 ] && [ \"\$(cat $tmp/out)\" = llo ]"
run $tmp/out $tmp/err cat --device emu:$IMG --host --offset 6 /a
check "cat --offset at the end: nothing, exit 0" sh -c "[ $rc -eq 0 ] && [ ! -s $tmp/out ]"
run $tmp/out $tmp/err cat --device emu:$IMG --host --offset 4 --length 3 /a
check "cat of a range past the end: refused, nothing written ($(said $tmp/err))" sh -c "[ $rc -eq 1 ] && [ ! -s $tmp/out ] && grep -q 'past its end' $tmp/err"
run $tmp/out $tmp/err cat --device emu:$IMG --host --offset 7 /a
check "cat --offset past the end: refused ($(said $tmp/err))" sh -c "[ $rc -eq 1 ] && grep -q 'past its end' $tmp/err"
run $tmp/out $tmp/err read --device emu:$IMG --host --allow-raw --length 1024
run $tmp/out2 $tmp/err read --device emu:$IMG --host --allow-raw --offset 0 --length 1024
check "read without --offset reads from byte 0" bash -c "[ \$(wc -c < $tmp/out) -eq 1024 ] && cmp -s $tmp/out $tmp/out2 && cmp -s $tmp/out <(head -c 1024 $IMG)"
run $tmp/out $tmp/err read --device emu:$IMG --host --allow-raw --offset 0
check "read without --length: exit 2 ($(said $tmp/err))" [ $rc -eq 2 ]

# every --device that does not parse is a usage error (exit 2), before anything opens
bad=
for d in "bogus:x" "emu:$IMG,lba=7" "emu:$IMG,ssds=17" "emu:$IMG,nosuch=1" "pci:zz" "pci:0000:01:00.0,mode=x" "null:abc" \
	 "gpu-nullx" "emu:$IMG+emu:$IMG" "pci:0000:01:00.0+emu:$IMG" ""; do
	run $tmp/out $tmp/err identify --device "$d"
	[ $rc -eq 2 ] && [ "$(wc -l < $tmp/err)" -eq 1 ] || bad="$bad [$d: $rc]"
done
check "an unparsable --device: exit 2 and one line, for each of 11 kinds of wrong ($bad)" [ -z "$bad" ]
run $tmp/out $tmp/err cat --device "emu:$tmp/no-such.img" /a
check "a --device that parses but names no image: exit 1 ($(said $tmp/err))" [ $rc -eq 1 ]

# emu:FILE whose size is not whole LBAs: served with its tail zero-padded, said once
head -c 1000 /dev/urandom > $tmp/odd.img
(unset GPUOS_QUIET_HOST; timeout $hang "$gpuos" read --device emu:$tmp/odd.img --host --allow-raw --length 1024 > $tmp/out 2> $tmp/err); rc=$?
check "emu: a 1000-byte image reads as 1024 bytes: the file, then 24 zeros (exit $rc)" bash -c \
	"[ $rc -eq 0 ] && cmp -s <(head -c 1000 $tmp/out) $tmp/odd.img && cmp -s <(tail -c 24 $tmp/out) <(head -c 24 /dev/zero)"
check "... and says so once ($(said $tmp/err))" [ "$(grep -c 'not whole 512-byte LBAs: served as 1024, the last 24 bytes zeros' $tmp/err)" = 1 ]
for be in file ram; do
	run $tmp/out2 $tmp/err read --device emu:$tmp/odd.img,backend=$be --host --allow-raw --length 1024
	check "... the same through backend=$be" cmp -s $tmp/out $tmp/out2
done
run $tmp/out $tmp/err read --device emu:$tmp/odd.img --host --allow-raw --offset 1024 --length 1
check "... and nothing past the padded LBA (exit $rc)" [ $rc -eq 1 ]
sz=$(stat -c %s $tmp/alone.gguf)
run $tmp/out $tmp/err gguf --json --device emu:$tmp/alone.gguf --host @0
check "a GGUF of $sz bytes ($((sz % 512)) past whole LBAs) given as the device parses (exit $rc: $(said $tmp/err))" \
	sh -c "[ $rc -eq 0 ] && [ $((sz % 512)) -ne 0 ] && grep -q '\"tensor_count\": 1' $tmp/out"

echo "cli hostile: $pass passed, $fail failed, $skipped skipped ($(( $(date +%s) - t0 )) s)"
[ $fail -eq 0 ]

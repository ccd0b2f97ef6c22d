#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The front door (issue 35), as a new user meets it, in host mode on the
# emulated controller (no GPU needed):
#  1. -q/--quiet, before the command or after it, silences every notice (host
#     mode, an emu: image padded to whole LBAs), never an error;
#     GPUOS_QUIET_HOST is named in --help and in the man page;
#  2. every --device that does not parse exits 2 (a usage error, as an
#     unknown option or a bad value does), for every command that takes one;
#  3. `gpuos help CMD` is `gpuos CMD --help`; an unknown command exits 2,
#     with "did you mean" for one within two edits or a unique prefix;
#  4. every command's help ends with examples that name real commands and
#     options; the man pages carry them in an EXAMPLES section;
#  5. cat --offset/--length (a range past the end refused, exit 1, nothing
#     written); read without --offset reads from byte 0;
#  6. emu:FILE of a size that is not whole LBAs: served with its tail
#     zero-padded, said once; a GGUF given as the device parses whole;
#  7. the bash and zsh completions: made from the help (every option of every
#     command), parse, --shard a flag, -q before the command; make install
#     installs both;
#  8. make bench without a GPU keeps the GPU's committed rows (on a copy).
# Usage: tests/emu/front.sh BUILD_DIR (GPUOS_FRONT_KEEP=1 keeps the temporary
# directory).
set -u
build=${1:-build}
build=$(cd "$build" 2>/dev/null && pwd || echo "$build")
gpuos=$build/gpuos
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1

tmp=$(mktemp -d /tmp/gpuos-front-test.XXXXXX)
cleanup() { [ -n "${GPUOS_FRONT_KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"; }
trap cleanup EXIT
pass=0 fail=0 skipped=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
skip() { skipped=$((skipped + 1)); echo "  skip $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
t0=$(date +%s)
export LC_ALL=C
unset GPUOS_QUIET_HOST

for t in mke2fs python3 timeout; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "front door: FAIL, $t is not installed (e2fsprogs, python3: scripts/deps.sh installs them)"
		exit 1
	fi
done
if [ ! -x "$gpuos" ]; then
	echo "front door: no $build/gpuos (make BUILD=$build all)"
	exit 1
fi

# run OUT ERR ARGS...: gpuos with stdout into OUT, stderr into ERR; its exit status in $rc
run() { local out=$1 err=$2; shift 2; timeout 120 "$gpuos" "$@" > "$out" 2> "$err"; rc=$?; }
# the first 300 bytes of a file on one line, for the report
said() { head -c 300 "$1" | tr '\n' ' '; }
# the commands of `gpuos --help`
cmds=$("$gpuos" --help | awk '/^commands:/ {f = 1; next} f && /^  [a-z]/ {print $1} f && /^$/ {exit}')

# ---- the images -------------------------------------------------------------------------------
S=$tmp/src
mkdir -p $S
printf 'hello\n' > $S/a
head -c 10000 /dev/urandom > $S/big
IMG=$tmp/img.ext4
mke2fs -q -F -t ext4 -b 4096 -d $S $IMG 8M > /dev/null 2>&1 || { echo "front door: FAIL, mke2fs -d"; exit 1; }
head -c 1000 /dev/urandom > $tmp/odd.img  # not whole 512-byte LBAs
head -c 4096 /dev/urandom > $tmp/whole.img
# a GGUF whose last tensor's data ends in a partial LBA
python3 tests/tools/gguf_writer.py --case all-v3 $tmp/odd.gguf --json $tmp/odd.json > /dev/null ||
	{ echo "front door: FAIL, gguf_writer.py"; exit 1; }
gsz=$(stat -c %s $tmp/odd.gguf)

# ---- 1. -q/--quiet ----------------------------------------------------------------------------
echo "== 1. -q/--quiet"
run $tmp/out $tmp/err --help
check "gpuos --help names -q, --quiet and GPUOS_QUIET_HOST" \
	sh -c "grep -q -- '-q, --quiet' $tmp/out && grep -q GPUOS_QUIET_HOST $tmp/out"
noq=
for c in $cmds; do "$gpuos" help "$c" | grep -q -- '-q, --quiet' || noq="$noq $c"; done
check "every command takes -q, --quiet (not:$noq)" [ -z "$noq" ]
run $tmp/out $tmp/err cat --device emu:$IMG --host /a
check "without -q: the host-mode notice on stderr ($(said $tmp/err))" grep -q 'host mode' $tmp/err
for q in "cat -q" "cat --quiet" "-q cat" "--quiet cat" "-q -q cat"; do
	run $tmp/out $tmp/err $q --device emu:$IMG --host /a
	check "gpuos $q: the file and nothing on stderr (exit $rc: $(said $tmp/err))" \
		sh -c "[ $rc -eq 0 ] && [ \"\$(cat $tmp/out)\" = hello ] && [ ! -s $tmp/err ]"
done
(export GPUOS_QUIET_HOST=1; timeout 120 "$gpuos" cat --device emu:$IMG --host /a > $tmp/out 2> $tmp/err)
check "GPUOS_QUIET_HOST=1: no host-mode notice" sh -c "[ \"\$(cat $tmp/out)\" = hello ] && ! grep -q 'host mode' $tmp/err"
run $tmp/out $tmp/err -q read --device emu:$tmp/odd.img --host --allow-raw --length 1024
check "gpuos -q read of an image padded to whole LBAs: no notice ($(said $tmp/err))" sh -c "[ $rc -eq 0 ] && [ ! -s $tmp/err ]"
run $tmp/out $tmp/err identify -q --device emu:$tmp/odd.img
check "identify -q of a padded image: no notice ($(said $tmp/err))" sh -c "[ $rc -eq 0 ] && [ ! -s $tmp/err ]"
run $tmp/out $tmp/err -q cat --device emu:$IMG --host /nosuch
check "-q keeps errors: a missing file still exit 1 and one line ($(said $tmp/err))" \
	sh -c "[ $rc -eq 1 ] && [ \$(wc -l < $tmp/err) -eq 1 ]"
run $tmp/out $tmp/err -q
check "gpuos -q alone: the usage, exit 2" sh -c "[ $rc -eq 2 ] && grep -q '^usage: gpuos' $tmp/err"
run $tmp/out $tmp/err -q --version
check "gpuos -q --version: the version" sh -c "[ $rc -eq 0 ] && grep -q '^gpuos ' $tmp/out"
man_ok=0
if command -v help2man > /dev/null 2>&1; then
	if bash man/gen-man.sh "$gpuos" $tmp/man > $tmp/man.out 2>&1; then
		man_ok=1
		ok "man/gen-man.sh makes the pages"
	else
		bad "man/gen-man.sh fails: $(said $tmp/man.out)"
	fi
else
	skip "help2man is not installed: the man pages are not checked (scripts/deps.sh installs it)"
fi
# a man page's text without its roff escapes and fonts; mangrep PAGE TEXT: is TEXT in it
mantext() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(aq/'"'"'/g' "$1"; }
mangrep() { mantext "$1" | grep -qF -- "$2"; }
if [ $man_ok -eq 1 ]; then
	check "gpuos.1 names GPUOS_QUIET_HOST" grep -q GPUOS_QUIET_HOST $tmp/man/gpuos.1
	check "gpuos.1 names -q, --quiet" mangrep $tmp/man/gpuos.1 "-q, --quiet"
	check "gpuos.1 has an ENVIRONMENT section" grep -q '^\.SH ENVIRONMENT' $tmp/man/gpuos.1
	check "gpuos-cat.1 names -q, --quiet" mangrep $tmp/man/gpuos-cat.1 "-q, --quiet"
fi

# ---- 2. an unparsable --device is a usage error -----------------------------------------------
echo "== 2. --device strings that do not parse: exit 2"
devs=("bogus:x" "emu:" "emu:$IMG,lba=7" "emu:$IMG,lba=" "emu:$IMG,ssds=0" "emu:$IMG,ssds=17" "emu:$IMG,nosuch=1"
	"emu:$IMG,backend=nosuch" "emu:$IMG,size=abc" "pci:zz" "pci:0000:01:00.0,mode=x" "pci:"
	"null:abc" "null:-1" "null:1Q" "gpu-nullx" "gpu-null:5" "emu:$IMG+emu:$IMG" "pci:0000:01:00.0+emu:$IMG"
	"+" "" " " "EMU:$IMG")
for c in identify read cat ls stat parts gguf model bench; do
	wrong=
	for d in "${devs[@]}"; do
		case $c in
		read) run $tmp/out $tmp/err read --device "$d" --host --allow-raw --length 1 ;;
		cat|ls|stat) run $tmp/out $tmp/err $c --device "$d" --host /a ;;
		gguf|model) run $tmp/out $tmp/err $c --device "$d" --host @0 ;;
		parts|bench) run $tmp/out $tmp/err $c --device "$d" --host ;;
		*) run $tmp/out $tmp/err $c --device "$d" ;;
		esac
		[ $rc -eq 2 ] && [ "$(wc -l < $tmp/err)" -eq 1 ] && [ ! -s $tmp/out ] || wrong="$wrong [$d: $rc]"
	done
	check "$c: ${#devs[@]} unparsable --device strings, each exit 2 and one line ($wrong)" [ -z "$wrong" ]
done
timeout 60 "$gpuos" boot --device "emu:$IMG,nosuch=1" --host --socket $tmp/s.sock > $tmp/out 2> $tmp/err; rc=$?
check "boot: an unparsable --device, exit 2 before it serves ($(said $tmp/err))" [ $rc -eq 2 ]
# the other usage errors, for comparison: all 2
wrong=
while IFS='|' read -r what args; do
	# shellcheck disable=SC2086
	run $tmp/out $tmp/err $args
	[ $rc -eq 2 ] || wrong="$wrong [$what: $rc]"
done <<EOF
an unknown option|cat --device emu:$IMG --host --nosuch /a
a missing value|cat --device emu:$IMG --host /a --offset
a bad value|cat --device emu:$IMG --host --length 1Q /a
a missing operand|cat --device emu:$IMG --host
neither --device nor a PATH|identify
an extra operand|identify --device emu:$IMG extra
EOF
check "the other usage errors exit 2 too ($wrong)" [ -z "$wrong" ]
run $tmp/out $tmp/err cat --device "emu:$tmp/no-such.img" --host /a
check "a --device that parses but names no image: exit 1 ($(said $tmp/err))" [ $rc -eq 1 ]

# ---- 3. help and did you mean -----------------------------------------------------------------
echo "== 3. gpuos help CMD, did you mean"
differ=
for c in $cmds; do
	timeout 60 "$gpuos" help "$c" > $tmp/h1 2> /dev/null; r1=$?
	timeout 60 "$gpuos" "$c" --help > $tmp/h2 2> /dev/null; r2=$?
	[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ -s $tmp/h1 ] && cmp -s $tmp/h1 $tmp/h2 || differ="$differ $c"
done
check "gpuos help CMD is gpuos CMD --help, exit 0, for each of $(echo $cmds | wc -w) commands (differ:$differ)" [ -z "$differ" ]
run $tmp/out $tmp/err help
check "gpuos help: the commands, exit 0" sh -c "[ $rc -eq 0 ] && grep -q '^commands:' $tmp/out"
run $tmp/out $tmp/err help nosuch
check "gpuos help nosuch: exit 2, its name on stderr, nothing on stdout ($(said $tmp/err))" \
	sh -c "[ $rc -eq 2 ] && grep -q nosuch $tmp/err && [ ! -s $tmp/out ]"
while read -r typed want; do
	run $tmp/out $tmp/err $typed --device emu:$IMG /a
	check "gpuos $typed: exit 2, did you mean '$want' ($(said $tmp/err))" \
		sh -c "[ $rc -eq 2 ] && grep -q \"did you mean '$want'\" $tmp/err && [ ! -s $tmp/out ]"
done <<EOF
catt cat
ca cat
idnetify identify
identfy identify
ident identify
stauts status
gguff gguf
modle model
bnech bench
EOF
run $tmp/out $tmp/err help ctas
check "gpuos help ctas: exit 2, did you mean ... 'cat' ($(said $tmp/err))" sh -c "[ $rc -eq 2 ] && grep -q \"did you mean .*'cat'\" $tmp/err"
run $tmp/out $tmp/err stats
check "gpuos stats: as near two commands, both named ($(said $tmp/err))" \
	sh -c "[ $rc -eq 2 ] && grep -q \"did you mean 'status' or 'stat'?\" $tmp/err"
for typed in frobnicate st xyz; do
	run $tmp/out $tmp/err $typed
	check "gpuos $typed: exit 2, no guess ($(said $tmp/err))" sh -c "[ $rc -eq 2 ] && ! grep -q 'did you mean' $tmp/err"
done

# ---- 4. examples ------------------------------------------------------------------------------
echo "== 4. examples"
# examples CMD: the lines under "examples:" of its help (the top level's for "")
examples() { timeout 60 "$gpuos" ${1:+help "$1"} ${1:---help} | awk 'f {print} /^examples:$/ {f = 1}'; }
notlast= noex= unreal=
for c in $cmds ""; do
	"$gpuos" ${c:+help "$c"} ${c:---help} > $tmp/h
	n=$(grep -n '^examples:$' $tmp/h | cut -d: -f1)
	if [ -z "$n" ]; then
		noex="$noex ${c:-gpuos}"
		continue
	fi
	# the section is last: only indented command lines after its heading
	tail -n +$((n + 1)) $tmp/h | grep -qv '^  gpuos ' && notlast="$notlast ${c:-gpuos}"
	[ "$(tail -n +$((n + 1)) $tmp/h | wc -l)" -ge 2 ] || noex="$noex ${c:-gpuos}(one)"
	# each line: a command of gpuos, with options that command has
	while read -r line; do
		words=${line%%#*}
		words=${words%%|*}
		set -- $words
		shift
		while [ $# -gt 0 ] && [[ $1 == -* ]]; do shift; done
		ec=${1:-}
		[ "$ec" = help ] && continue # gpuos help CMD
		if ! "$gpuos" help "$ec" > $tmp/eh 2> /dev/null; then
			unreal="$unreal [$line: no command $ec]"
			continue
		fi
		for w in $words; do
			case $w in
			--) break ;; # an app's arguments follow
			--*) o=${w%%=*}
				grep -qE -- "^ +(-[a-z], )?$o( |$)" $tmp/eh || unreal="$unreal [$ec: no $o]" ;;
			-?) grep -qE -- "^ +$w, --" $tmp/eh || [ "$w" = -q ] || unreal="$unreal [$ec: no $w]" ;;
			esac
		done
	done < <(tail -n +$((n + 1)) $tmp/h)
done
check "every command's help (and gpuos --help) has two examples or more (none:$noex)" [ -z "$noex" ]
check "... as its last section (not last:$notlast)" [ -z "$notlast" ]
check "... each naming a command and options it has ($unreal)" [ -z "$unreal" ]
if [ $man_ok -eq 1 ]; then
	noman=
	for c in $cmds ""; do
		page=$tmp/man/gpuos${c:+-$c}.1
		first=$(examples "$c" | head -1 | sed 's/^ *//')
		grep -q '^\.SH EXAMPLES' "$page" && mangrep "$page" "$first" || noman="$noman ${c:-gpuos}"
	done
	check "every man page has an EXAMPLES section with its help's examples (not:$noman)" [ -z "$noman" ]
fi

# ---- 5. cat and read ranges -------------------------------------------------------------------
echo "== 5. cat --offset/--length, read from 0"
run $tmp/out $tmp/err help cat
check "cat's help says what a range past the end does" grep -q 'past the end' $tmp/out
Q="--device emu:$IMG --host -q"
run $tmp/out $tmp/err cat $Q --offset 1 --length 3 /a
check "cat --offset 1 --length 3: 'ell' (exit $rc)" sh -c "[ $rc -eq 0 ] && [ \"\$(cat $tmp/out)\" = ell ]"
run $tmp/out $tmp/err cat $Q --length 2 /a
check "cat --length 2: from byte 0" sh -c "[ $rc -eq 0 ] && [ \"\$(cat $tmp/out)\" = he ]"
run $tmp/out $tmp/err cat $Q --offset 4K --length 1K /big
check "cat --offset 4K --length 1K of a 10000-byte file: its bytes 4096..5119" \
	bash -c "[ $rc -eq 0 ] && cmp -s $tmp/out <(tail -c +4097 $S/big | head -c 1024)"
run $tmp/out $tmp/err cat $Q --offset=0x2000 /big
check "cat --offset=0x2000: to the end (1808 bytes)" bash -c "[ $rc -eq 0 ] && cmp -s $tmp/out <(tail -c +8193 $S/big)"
run $tmp/out $tmp/err cat $Q --offset 6 /a
check "cat --offset at the end: nothing, exit 0" sh -c "[ $rc -eq 0 ] && [ ! -s $tmp/out ]"
run $tmp/out $tmp/err cat $Q --offset 9000 --length 1001 /big
check "cat of a range past the end: exit 1, nothing written ($(said $tmp/err))" \
	sh -c "[ $rc -eq 1 ] && [ ! -s $tmp/out ] && grep -q 'past its end' $tmp/err"
run $tmp/out $tmp/err cat $Q --offset 10001 /big
check "cat --offset past the end: exit 1, said ($(said $tmp/err))" sh -c "[ $rc -eq 1 ] && grep -q 'past its end' $tmp/err"
run $tmp/out $tmp/err cat $Q /nosuch
check "... as other failed cats: a missing file exits 1" [ $rc -eq 1 ]
run $tmp/out $tmp/err cat $Q --offset -1 /a
check "cat --offset -1: a usage error, exit 2" [ $rc -eq 2 ]
run $tmp/out $tmp/err read --device emu:$IMG --host -q --allow-raw --length 3000
check "read without --offset: bytes 0..2999 of the device" bash -c "[ $rc -eq 0 ] && cmp -s $tmp/out <(head -c 3000 $IMG)"
run $tmp/out $tmp/err read --device emu:$IMG --host -q --allow-raw --offset 1536 --length 512
check "read --offset 1536 --length 512: those bytes" bash -c "[ $rc -eq 0 ] && cmp -s $tmp/out <(tail -c +1537 $IMG | head -c 512)"

# ---- 6. emu:FILE not whole LBAs ---------------------------------------------------------------
echo "== 6. emu:FILE whose size is not whole LBAs"
run $tmp/out $tmp/err identify --json --device emu:$tmp/odd.img
check "identify: a 1000-byte image is a namespace of 1024 bytes" grep -q '"namespace_bytes": 1024' $tmp/out
run $tmp/out $tmp/err identify --json --device emu:$tmp/odd.img,lba=4096
check "identify, lba=4096: a namespace of 4096 bytes" grep -q '"namespace_bytes": 4096' $tmp/out
run $tmp/out $tmp/err read --device emu:$tmp/odd.img --host --allow-raw --length 1024
check "read: the 1000 bytes, then 24 zeros (exit $rc)" \
	bash -c "[ $rc -eq 0 ] && cmp -s <(head -c 1000 $tmp/out) $tmp/odd.img && cmp -s <(tail -c 24 $tmp/out) <(head -c 24 /dev/zero)"
check "... said once, beside the host-mode notice ($(said $tmp/err))" \
	[ "$(grep -c 'is 1000 bytes, not whole 512-byte LBAs: served as 1024, the last 24 bytes zeros' $tmp/err)" = 1 ]
run $tmp/out $tmp/err read --device emu:$tmp/odd.img,lba=4096 --host --allow-raw --length 4096
check "lba=4096: 4096 bytes, said for 4096-byte LBAs ($(said $tmp/err))" \
	bash -c "[ $rc -eq 0 ] && [ \$(wc -c < $tmp/out) -eq 4096 ] && grep -q 'not whole 4096-byte LBAs: served as 4096' $tmp/err"
run $tmp/out $tmp/err read --device emu:$tmp/whole.img --host --allow-raw --length 4096
check "an image of whole LBAs: no notice ($(said $tmp/err))" sh -c "[ $rc -eq 0 ] && ! grep -q LBAs $tmp/err"
pad=$(( (gsz + 511) / 512 * 512 ))
run $tmp/out $tmp/err read -q --device emu:$tmp/odd.gguf --host --allow-raw --length $pad
check "a GGUF of $gsz bytes ($((gsz % 512)) past whole LBAs) reads whole as the device, then zeros" \
	bash -c "[ $rc -eq 0 ] && [ $((gsz % 512)) -ne 0 ] && cmp -s <(head -c $gsz $tmp/out) $tmp/odd.gguf && [ \$(tail -c +$((gsz + 1)) $tmp/out | tr -d '\\0' | wc -c) -eq 0 ]"
for c in gguf model; do
	run $tmp/out $tmp/err $c -q --json --device emu:$tmp/odd.gguf --host @0
	check "gpuos $c --device emu:FILE.gguf @0: parses, every tensor the writer wrote (exit $rc: $(said $tmp/err))" \
		python3 -c '
import json, sys
got, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
names = {t["name"] for t in got["tensors"]}
assert sys.argv[3] == "0" and names == {t["name"] for t in want["tensors"]}, names' $tmp/out $tmp/odd.json $rc
done
run $tmp/out $tmp/err read -q --device emu:$tmp/odd.img --host --allow-raw --offset 1024 --length 1
check "nothing past the padded LBA: exit 1" [ $rc -eq 1 ]

# ---- 7. completion ----------------------------------------------------------------------------
echo "== 7. bash and zsh completion"
python3 scripts/gen-completion.py "$gpuos" > $tmp/comp.bash 2> $tmp/err; r1=$?
python3 scripts/gen-completion.py --zsh "$gpuos" > $tmp/comp.zsh 2> $tmp/err; r2=$?
check "gen-completion.py writes bash's and zsh's ($(said $tmp/err))" [ $r1 -eq 0 -a $r2 -eq 0 -a -s $tmp/comp.bash -a -s $tmp/comp.zsh ]
# (copied first: emu-install, beside this suite, removes and makes them again)
for f in completion/gpuos completion/_gpuos; do
	if cp "$build/$f" $tmp/built 2> /dev/null && [ -s $tmp/built ]; then
		check "the build's $f is up to date with this gpuos" cmp -s $tmp/built $tmp/comp.$([ $f = completion/gpuos ] && echo bash || echo zsh)
	else
		skip "no $build/$f (make completion makes it): only the fresh one is checked"
	fi
done
check "bash -n: bash's parses" bash -n $tmp/comp.bash
if command -v zsh > /dev/null 2>&1; then
	check "zsh -n: zsh's parses" zsh -n $tmp/comp.zsh
else
	skip "zsh is not installed: zsh -n not run (scripts/deps.sh installs it)"
fi
# cw WORDS...: what bash's completion offers for the last word, one a line, sorted
mkdir -p $tmp/files && : > $tmp/files/disk.img
cw() {
	(cd $tmp/files && bash --norc --noprofile -c '
		source "$1" || exit 1; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
		_gpuos gpuos "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		[ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}"' x $tmp/comp.bash "$@" 2> /dev/null) | sort
}
missing= zmissing=
for c in $cmds; do
	got=" $(cw gpuos $c -- | tr '\n' ' ') "
	zf=$(sed -n "/^_gpuos_$c() {/,/^}/p" $tmp/comp.zsh)
	for o in $("$gpuos" help $c | grep -oE '^ +(-[a-z], )?--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+'); do
		[[ $got == *" $o "* ]] || missing="$missing $c$o"
		grep -qF -- "'$o" <<< "$zf" || zmissing="$zmissing $c$o"
	done
done
check "bash: every option of every command's help is offered ($missing)" [ -z "$missing" ]
check "zsh: every option of every command's help has a spec ($zmissing)" [ -z "$zmissing" ]
for c in gguf model; do
	check "bash: $c --shard takes no file (it offers nothing after it: $(cw gpuos $c --shard '' | tr '\n' ' '))" \
		[ -z "$(cw gpuos $c --shard '')" ]
	check "zsh: $c's --shard is a flag" grep -qx "		'--shard' \\\\" <(sed -n "/^_gpuos_$c() {/,/^}/p" $tmp/comp.zsh)
done
check "bash: gpuos cat -o d<TAB> still completes a file (disk.img)" [ "$(cw gpuos cat -o d)" = disk.img ]
check "bash: gpuos -q ca<TAB>: cat" [ "$(cw gpuos -q ca)" = cat ]
check "bash: gpuos -q cat --dev<TAB>: --device" [ "$(cw gpuos -q cat --dev)" = --device ]
check "bash: gpuos --q<TAB>: --quiet" [ "$(cw gpuos --q)" = --quiet ]
if command -v zsh > /dev/null 2>&1; then
	# zsh: what _gpuos asks for, with compadd and friends replaced by echoes
	zc() {
		ZC=$tmp/comp.zsh zsh -f -c 'autoload -U compinit; compinit -u -D; source $ZC 2> /dev/null
			_describe() { echo DESCRIBE "$@"; }; compadd() { echo COMPADD "$@"; }; _arguments() { echo ARGUMENTS "$@"; }
			words=("$@"); CURRENT=$#; PREFIX=${words[-1]}; _gpuos' x "$@" 2>&1
	}
	check "zsh: gpuos -q <TAB>: the commands" sh -c "echo '$(zc gpuos -q '')' | grep -q 'DESCRIBE -t commands'"
	check "zsh: gpuos -q cat --<TAB>: cat's options" sh -c "echo '$(zc gpuos -q cat -- | tr "'" ' ')' | grep -q -- '--offset'"
	check "zsh: gpuos --<TAB>: --quiet among the global options" sh -c "echo '$(zc gpuos -- | tr "'" ' ')' | grep -q -- 'COMPADD.*--quiet'"
fi
check "make install installs both completions (the Makefile's install rule)" \
	sh -c "grep -qE 'INSTALL.*completion/gpuos .*BASHCOMPDIR' Makefile && grep -qE 'INSTALL.*completion/_gpuos .*ZSHCOMPDIR' Makefile"

# ---- 8. make bench without a GPU --------------------------------------------------------------
echo "== 8. make bench keeps the rows it cannot measure"
R=$tmp/res
mkdir -p $R
cp bench/results/random4k.csv $R/kept.csv
# what a run without a GPU measures of section 2: host-mode rows of some names
( cd $R && for q in 1 4; do
	echo '{"iops": 100, "p50": 20, "p99": 30}' | python3 "$root/bench/results.py" add random4k.csv random4k liburing-qd-$q \
		"liburing, CPU reads" "page cache" - "cmd" iops=iops:reads/s lat_p50_us=p50:us lat_p99_us=p99:us
	echo '{"iops": 50, "p50": 40, "p99": 60}' | python3 "$root/bench/results.py" add random4k.csv random4k gpuos-qd-$q \
		"gpuos (host mode)" "page cache" liburing-qd-$q "cmd" iops=iops:reads/s lat_p50_us=p50:us lat_p99_us=p99:us
done )
n=$(python3 bench/results.py keep $R/random4k.csv $R/kept.csv 2> $tmp/err); rc=$?
python3 - $R/random4k.csv $R/kept.csv "${n:-x}" $rc > $tmp/out 2>&1 <<'PY'
import csv, sys
new, kept = list(csv.DictReader(open(sys.argv[1]))), list(csv.DictReader(open(sys.argv[2])))
key = lambda r: (r["section"], r["name"], r["source"], r["metric"])
assert sys.argv[4] == "0", "exit " + sys.argv[4]
assert len({key(r) for r in new}) == len(new), "a row twice"
measured = {key(r) for r in new if r["command"] == "cmd"}
back = [r for r in new if r["command"] != "cmd"]
assert back == [r for r in kept if key(r) not in measured], "not the committed rows this run had none of"
assert any(r["name"] == "gpu-null" for r in back) and any(r["name"] == "array-4-gen4" for r in back), "GPU rows dropped"
assert int(sys.argv[3]) == len(back) > 0, "said %s, kept %d" % (sys.argv[3], len(back))
PY
check "results.py keep: section 2 measured in part keeps the committed rows it did not measure (gpu-null, the array; $n rows; $(said $tmp/out))" \
	[ ! -s $tmp/out ]
python3 bench/results.py report $R $tmp/page.md $tmp/plots > /dev/null 2>&1
check "... and the page shows them" sh -c "grep -q '| gpu-null |' $tmp/page.md && grep -q '| array-4-gen4 |' $tmp/page.md"
printf 'datapath\ttmpfs\tmmap\t0a\ndatapath\ttmpfs\tgpuos-ram\t0a\n' > $tmp/sums.kept
: > $tmp/sums
printf 'section,name,path,source,metric,value,unit,baseline,command,machine,gpu,date\r\n' > $tmp/d.csv
sed -n '1p;/,gpuos-ram,/p' bench/results/datapath.csv > $tmp/d.kept
n=$(python3 bench/results.py keep $tmp/d.csv $tmp/d.kept $tmp/sums $tmp/sums.kept)
check "... with the checksum lines of the rows it keeps, only ($n rows)" \
	sh -c "[ \"$n\" -gt 0 ] && [ \"\$(cat $tmp/sums)\" = \"\$(printf 'datapath\ttmpfs\tgpuos-ram\t0a')\" ]"
if [ ! -x "$build/bench/baselines" ]; then
	skip "no $build/bench/baselines (make bench-build): bench/all.sh is not run"
elif "$gpuos" bench --device gpu-null --threads 1 --iters 1 --op nop > /dev/null 2>&1; then
	skip "a GPU here: bench/all.sh measures the GPU sections (not run here)"
else
	mkdir -p $tmp/copy/docs
	cp -r bench $tmp/copy/
	cp docs/benchmarks.md $tmp/copy/docs/
	# every section that needs a GPU: all skipped here, quickly
	BENCH_ONLY="1 3 4 x f" bash $tmp/copy/bench/all.sh "$build" $tmp $tmp > $tmp/all.out 2>&1; rc=$?
	check "BENCH_ONLY='1 3 4 x f' without a GPU: exit 0 ($(tail -2 $tmp/all.out | tr '\n' ' '))" [ $rc -eq 0 ]
	changed=
	for f in bench/results/*.csv bench/results/checksums.txt bench/results/layers-timeline.tsv; do
		[ -f "$f" ] || continue
		cmp -s "$f" "$tmp/copy/$f" || changed="$changed ${f##*/}"
	done
	check "every committed CSV kept byte for byte (changed:$changed)" [ -z "$changed" ]
	gone=
	for s in datapath layers runtime xproc fragmented llama; do
		[ -s bench/results/$s.csv ] || continue
		row=$(sed -n '2p' bench/results/$s.csv | cut -d, -f2)
		grep -q "^| $row |" $tmp/copy/docs/benchmarks.md || gone="$gone $s"
	done
	check "docs/benchmarks.md rewritten with the GPU's rows of every section (gone:$gone)" [ -z "$gone" ]
	check "nothing set aside is left behind" [ -z "$(ls -a $tmp/copy/bench/results | grep kept)" ]
fi

echo "front door: $pass passed, $fail failed, $skipped skipped ($(( $(date +%s) - t0 )) s)"
[ $fail -eq 0 ]

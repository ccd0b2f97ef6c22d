#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make install` (issues 14, 18 and 32): the binary, the library (libgpuos.a,
# libgpuos.so, the headers, gpuos.pc) with a program built against the
# installed files alone, the systemd unit and the sample config (which
# `systemd-analyze verify` must accept where it is installed, and `gpuos boot
# --config` must read), the manual pages that help2man makes
# from its help and the bash completion generated from the same help, under a
# DESTDIR. The pages must render and name every command of `gpuos --help`;
# the completion must complete the commands, each command's options, file
# names for an option that takes a FILE and device kinds for --device.
# Usage: tests/emu/install.sh BUILD_DIR
#
# It installs the binary already built in BUILD_DIR (make -o: never rebuilt
# here) and makes the pages and the completion from it again. What is expected
# comes from the binary's help, read here by other code than the generators:
# the commands are the words indented in `gpuos --help` that `gpuos WORD
# --help` accepts; a command's options are the long options that start a line
# of its help ("  -o, --output FILE   ...") and those of its usage line.
set -u
. "$(dirname "$0")/wait.sh" # wait_ready FILE PID
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
gpuos=$build/gpuos
pass=0 fail=0
ok()   { pass=$((pass + 1)); echo "  ok   $1"; }
bad()  { fail=$((fail + 1)); echo "  FAIL $1"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

for t in help2man man groff make python3; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "install: FAIL, $t is not installed (help2man, man-db, make, python3: scripts/deps.sh installs them)"
		exit 1
	fi
done
if [ ! -x "$gpuos" ]; then
	echo "install: FAIL, no $gpuos (make BUILD=$build all)"
	exit 1
fi

tmp=$(mktemp -d /tmp/gpuos-install-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export GPUOS_QUIET_HOST=1 LC_ALL=C MANWIDTH=100 MAN_DISABLE_SECCOMP=1
unset MANPATH MANOPT

# ---- what the binary says -------------------------------------------------------
cmds=()
for w in $("$gpuos" --help 2>/dev/null | sed -nE 's/^ {1,4}([a-z][a-z0-9_-]*)([[:space:]].*)?$/\1/p'); do
	if "$gpuos" "$w" --help 2>/dev/null | grep -q "gpuos $w\b"; then
		case " ${cmds[*]} " in *" $w "*) ;; *) cmds+=("$w") ;; esac
	fi
done
# long options of command $1, sorted
opts_of() {
	local h
	h=$("$gpuos" "$1" --help 2>/dev/null)
	{
		sed -nE 's/^[[:space:]]+((-[[:alnum:]],[[:space:]]*)?--[[:alnum:]][-[:alnum:]_]*)(([ =][^[:space:]]+)?)([[:space:]]{2,}.*)?$/\1/p' <<< "$h" |
			grep -oE -- '--[[:alnum:]][-[:alnum:]_]*'
		grep -im1 '^[[:space:]]*usage:' <<< "$h" | grep -oE -- '--[[:alnum:]][-[:alnum:]_]*'
	} | sort -u
}
echo "== gpuos --help lists ${#cmds[@]} commands: ${cmds[*]}"
check "gpuos --help lists the commands (cat among them)" test ${#cmds[@]} -ge 5 -a -n "$(printf '%s\n' "${cmds[@]}" | grep -x cat)"

# ---- make install ----------------------------------------------------------------
echo "== make install DESTDIR=... (the binary of $build as it is)"
dest=$tmp/dest
rm -rf "$build/man" "$build/completion"
make --no-print-directory BUILD="$build" -o "$gpuos" DESTDIR="$dest" install > "$tmp/make.log" 2>&1
rc=$?
check "make install: exit 0" test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/    | /' "$tmp/make.log" | tail -20
pre=$dest/usr/local
check "bin/gpuos installed (default PREFIX /usr/local), the built binary" cmp -s "$gpuos" "$pre/bin/gpuos"
check "bin/gpuos is executable" test -x "$pre/bin/gpuos"
if [ -f "$build/gpuos-static" ]; then
	check "bin/gpuos-static installed (it is built)" cmp -s "$build/gpuos-static" "$pre/bin/gpuos-static"
	check "its completion: completions/gpuos-static -> gpuos" \
		test "$(readlink "$pre/share/bash-completion/completions/gpuos-static")" = gpuos
else
	check "no bin/gpuos-static (not built)" test ! -e "$pre/bin/gpuos-static"
fi
man1=$pre/share/man/man1
comp=$pre/share/bash-completion/completions/gpuos
check "share/man/man1/gpuos.1 installed" test -s "$man1/gpuos.1"
check "share/bash-completion/completions/gpuos installed" test -s "$comp"
check "the build's man/ and completion/ made again from $gpuos" test -s "$build/man/gpuos.1" -a -s "$build/completion/gpuos"
check "nothing else installed" test -z "$(cd "$dest" && find . -type f | grep -vE '^\./(usr/local/(bin/gpuos(-static)?|share/man/man1/gpuos(-[a-z0-9_-]+)?\.1|share/bash-completion/completions/gpuos|share/zsh/site-functions/_gpuos|lib/libgpuos\.(a|so\.[0-9.]+)|lib/pkgconfig/gpuos\.pc|include/gpuos/[a-z_]+\.h|lib/systemd/system/gpuos\.service)|etc/gpuos/gpuos\.conf)$')"

# ---- the pages ---------------------------------------------------------------------
echo "== manual pages"
render() { # page -> $tmp/txt, $tmp/err
	man --warnings -l "$1" > "$tmp/txt" 2> "$tmp/err"
}
render "$man1/gpuos.1"; rc=$?
check "man -l gpuos.1: exit 0, no warning" test $rc -eq 0 -a ! -s "$tmp/err" -a -s "$tmp/txt"
[ -s "$tmp/err" ] && sed 's/^/    | /' "$tmp/err" | head -5
cp "$tmp/txt" "$tmp/gpuos.txt"
missing=
for c in "${cmds[@]}"; do grep -qw -- "$c" "$tmp/gpuos.txt" || missing="$missing $c"; done
check "gpuos.1 names every command of gpuos --help${missing:+ (missing:$missing)}" test -z "$missing"
missing=
for c in "${cmds[@]}"; do grep -q -- "gpuos-$c(1)" "$tmp/gpuos.txt" || missing="$missing $c"; done
check "gpuos.1 refers to every gpuos-CMD(1)${missing:+ (missing:$missing)}" test -z "$missing"
check "gpuos.1: NAME, SYNOPSIS, DESCRIPTION, SEE ALSO" \
	test "$(grep -cxE 'NAME|SYNOPSIS|DESCRIPTION|SEE ALSO' "$tmp/gpuos.txt")" -eq 4
ver=$("$gpuos" --version 2>/dev/null | awk 'NR == 1 { print $2 }')
check "gpuos.1 carries the version of gpuos --version ($ver)" grep -q "gpuos $ver" "$tmp/gpuos.txt"
for c in "${cmds[@]}"; do
	p=$man1/gpuos-$c.1
	if [ ! -s "$p" ]; then
		bad "gpuos-$c.1 installed"
		continue
	fi
	render "$p"; rc=$?
	why=
	[ $rc -eq 0 ] && [ ! -s "$tmp/err" ] || why="man -l: exit $rc, $(head -1 "$tmp/err")"
	[ -z "$why" ] && ! grep -qE "^ *gpuos-$c +- " "$tmp/txt" && why="no NAME line gpuos-$c - ..."
	[ -z "$why" ] && ! grep -q "gpuos $c" "$tmp/txt" && why="no synopsis gpuos $c"
	if [ -z "$why" ]; then
		for o in $(opts_of "$c"); do
			grep -q -- "$o\b" "$tmp/txt" || why="$why $o"
		done
		[ -n "$why" ] && why="options missing:$why"
	fi
	check "gpuos-$c.1 renders, names gpuos-$c and its options${why:+ ($why)}" test -z "$why"
done
# stderr never lands in a page (the notice of a machine without a GPU, an error)
check "no message of gpuos in any page" \
	sh -c "for p in '$man1'/*.1; do man -l \"\$p\" 2>/dev/null; done | grep -E '^ *gpuos: |unknown command' >/dev/null; test \$? -eq 1"
out=$(man -M "$pre/share/man" gpuos cat 2>/dev/null | head -1)
check "man gpuos cat finds gpuos-cat(1)" grep -q '^GPUOS-CAT(1)' <<< "$out"

# ---- the completion -------------------------------------------------------------
echo "== bash completion"
fn=$(bash --norc --noprofile -c 'source "$1" && complete -p gpuos' x "$comp" 2>/dev/null | sed -nE 's/.*-F ([^ ]+) .*/\1/p')
check "sourcing it registers a function for gpuos (${fn:-none})" test -n "$fn"
fn=${fn:-_gpuos}
mkdir -p "$tmp/files/somedir"
: > "$tmp/files/disk.img"
: > "$tmp/files/data.bin"
# the completions of the words given (the last one being completed), one a line, sorted
complete_words() {
	(cd "$tmp/files" && bash --norc --noprofile -c '
		comp=$1 fn=$2; shift 2
		source "$comp" || exit 1
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		COMPREPLY=()
		"$fn" gpuos "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		[ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}"' x "$comp" "$fn" "$@" 2>/dev/null) | sort
}
same() { # name, got, want
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1"; diff <(echo "$3") <(echo "$2") | sed -n 's/^[<>]/    &/p' | head -8; fi
}
same "gpuos <TAB>: the commands" "$(complete_words gpuos '')" "$(printf '%s\n' "${cmds[@]}" | sort)"
same "gpuos ca<TAB>: cat" "$(complete_words gpuos ca)" "$(printf '%s\n' "${cmds[@]}" | grep '^ca' | sort)"
for c in "${cmds[@]}"; do
	same "gpuos $c --<TAB>: $c's options" "$(complete_words gpuos "$c" --)" "$(opts_of "$c")"
done
# cat's option that takes a FILE (-o, --output: what its help says)
fopt=$("$gpuos" cat --help 2>/dev/null | sed -nE 's/^[[:space:]]+(-[[:alnum:]],[[:space:]]*)?(--[[:alnum:]][-[:alnum:]_]*)[ =]FILE([[:space:]].*)?$/\2/p' | head -1)
check "cat has an option that takes a FILE (${fopt:-none})" test -n "$fopt"
if [ -n "$fopt" ]; then
	same "gpuos cat $fopt d<TAB>: file names" "$(complete_words gpuos cat "$fopt" d)" "$(printf 'data.bin\ndisk.img\n')"
	same "gpuos cat $fopt=<TAB> (split at =): file names" "$(complete_words gpuos cat "$fopt" = '')" \
		"$(printf 'data.bin\ndisk.img\nsomedir\n')"
	sopt=$("$gpuos" cat --help 2>/dev/null | sed -nE "s/^[[:space:]]+(-[[:alnum:]]),[[:space:]]*${fopt}[ =]FILE.*/\\1/p")
	[ -n "$sopt" ] && same "gpuos cat $sopt so<TAB>: file names" "$(complete_words gpuos cat "$sopt" so)" "somedir"
fi
got=$(complete_words gpuos cat --device '')
check "gpuos cat --device <TAB>: emu: and pci: among the kinds" \
	test -n "$(grep -x 'emu:' <<< "$got")" -a -n "$(grep -x 'pci:' <<< "$got")"
same "gpuos cat --device e<TAB>: emu:" "$(complete_words gpuos cat --device e)" "emu:"
# bash splits "emu:di" into emu, :, di (COMP_WORDBREAKS); it replaces what follows the :
same "gpuos cat --device emu:di<TAB>: the image's file name" "$(complete_words gpuos cat --device emu : di)" "disk.img"
same "gpuos cat --device emu:<TAB> without COMP_LINE" \
	"$( (cd "$tmp/files" && bash --norc --noprofile -c 'source "$1"; COMP_WORDS=(gpuos cat --device emu :); COMP_CWORD=4; "$2"; printf "%s\n" "${COMPREPLY[@]}"' x "$comp" "$fn" 2>/dev/null) | sort)" \
	"$(printf 'data.bin\ndisk.img\nsomedir\n')"
same "gpuos nosuch <TAB>: nothing" "$(complete_words gpuos nosuch '')" ""

# ---- the systemd unit and its config ---------------------------------------------
echo "== zsh completion"
zcomp=$pre/share/zsh/site-functions/_gpuos
check "share/zsh/site-functions/_gpuos installed, a #compdef for gpuos" eval 'test "$(head -1 "$zcomp")" = "#compdef gpuos gpuos-static"'
missing=
for c in "${cmds[@]}"; do grep -q "^_gpuos_${c//-/_}() {" "$zcomp" || missing="$missing $c"; done
check "a function per command (${#cmds[@]}; missing:$missing)" test -z "$missing"
zfn() { sed -n "/^_gpuos_$1() {/,/^}/p" "$zcomp"; }
check "cat: --offset takes a value, --device completes a device" eval 'zfn cat | grep -q -- "--offset=:bytes:" &&
	zfn cat | grep -q -- "--device=:dev:_gpuos_device"'
check "gguf: --shard is a flag (no value)" eval 'zfn gguf | grep -q "^		.--shard. .$"'
if command -v zsh > /dev/null; then
	check "zsh -n: it parses" zsh -n "$zcomp"
	# completing "gpuos ca<TAB>" in a zsh with the function loaded: the candidates it offers
	ZC=$zcomp zsh -f -c 'autoload -U compinit; compinit -u -D; fpath=(${ZC:h} $fpath); autoload -U _gpuos
		compadd() { print -r -- "ADD $*"; }; _describe() { print -r -- "DESCRIBE $*"; }
		words=(gpuos ca); CURRENT=2; _gpuos' > "$tmp/zsh.out" 2>&1
	check "zsh: the commands offered at the first word" grep -q "DESCRIBE -t commands" "$tmp/zsh.out"
else
	bad "zsh is missing (scripts/deps.sh installs it)"
fi

echo "== the systemd unit and the sample config (docs/service.md)"
unit=$pre/lib/systemd/system/gpuos.service
conf=$dest/etc/gpuos/gpuos.conf
check "lib/systemd/system/gpuos.service installed (PREFIX /usr/local), mode 644" \
	test -s "$unit" -a "$(stat -c %a "$unit" 2>/dev/null)" = 644
check "etc/gpuos/gpuos.conf installed (SYSCONFDIR /etc), mode 644" \
	test -s "$conf" -a "$(stat -c %a "$conf" 2>/dev/null)" = 644
check "the unit runs gpuos boot --config of the installed paths, nothing left to fill in" \
	bash -c "grep -qx 'ExecStart=/usr/local/bin/gpuos boot --config /etc/gpuos/gpuos.conf' '$unit' && ! grep -q @ '$unit' '$conf'"
check "the unit makes /run/gpuos (RuntimeDirectory=gpuos), stops gpuos with SIGTERM first (KillMode=mixed)" \
	bash -c "grep -qx 'RuntimeDirectory=gpuos' '$unit' && grep -qx 'KillMode=mixed' '$unit'"
missing=
for k in $(sed -nE 's/^#?([a-z][a-z0-9-]*) *=.*/\1/p' "$conf"); do
	opts_of boot | grep -qx -- "--$k" || missing="$missing $k"
done
check "every option the sample config names is one of gpuos boot's${missing:+ (not:$missing)}" \
	test -z "$missing" -a -n "$(sed -nE 's/^#?([a-z][a-z0-9-]*) *=.*/\1/p' "$conf")"
if command -v systemd-analyze >/dev/null 2>&1; then
	# verify checks that ExecStart's program exists and Documentation='s pages
	# are there: the installed ones, under DESTDIR.
	mkdir -p "$tmp/verify"
	sed "s|/usr/local/bin/gpuos|$pre/bin/gpuos|" "$unit" > "$tmp/verify/gpuos.service"
	MANPATH=$pre/share/man systemd-analyze verify "$tmp/verify/gpuos.service" > "$tmp/verify.out" 2>&1
	rc=$?
	check "systemd-analyze verify accepts the unit: exit 0, not a word" test $rc -eq 0 -a ! -s "$tmp/verify.out"
	sed 's/^/    | /' "$tmp/verify.out" | head -5
else
	echo "  skip systemd-analyze verify of the unit: systemd-analyze is not installed"
fi
# The sample, every line a comment, with a device and a socket of ours: a
# service boots from it and serves.
cp "$conf" "$tmp/boot.conf"
printf 'device = emu:%s\nhost = yes\nsocket = %s\n' "$tmp/svcimg/disk.img" "$tmp/conf.sock" >> "$tmp/boot.conf"
chmod 644 "$tmp/boot.conf"
mkdir -p "$tmp/svcimg/tree"
echo served > "$tmp/svcimg/tree/x.txt"
mke2fs -q -F -t ext4 -d "$tmp/svcimg/tree" "$tmp/svcimg/disk.img" 16M > /dev/null 2>&1
"$gpuos" boot --config "$tmp/boot.conf" > "$tmp/boot.out" 2> "$tmp/boot.err" &
svc=$!
wait_ready "$tmp/boot.out" $svc
out=$(timeout 60 "$gpuos" cat --socket "$tmp/conf.sock" /x.txt 2>/dev/null)
timeout 60 "$gpuos" stop --socket "$tmp/conf.sock" > /dev/null 2>&1
kill $svc 2>/dev/null; wait $svc 2>/dev/null
check "gpuos boot --config reads the sample (and a device added to it) and serves" test "$out" = served
rm -rf "$tmp/svcimg/tree" "$tmp/svcimg/disk.img"
echo "# the administrator's" >> "$conf"
make --no-print-directory BUILD="$build" -o "$gpuos" DESTDIR="$dest" install > "$tmp/make.log" 2>&1
check "make install again leaves an existing config as it is" grep -qx "# the administrator's" "$conf"
sed -i '$d' "$conf"

# ---- the library: a program built against the installed files only ------------
echo "== the library: libgpuos.a, libgpuos.so, headers, gpuos.pc; apps/embed/cat.c built against them"
lib=$pre/lib
check "lib/libgpuos.a, lib/libgpuos.so -> .so.0 -> .so.VERSION, include/gpuos/*.h, lib/pkgconfig/gpuos.pc" \
	test -s "$lib/libgpuos.a" -a -x "$lib/libgpuos.so.$($gpuos --version | awk '{ print $2 }')" \
	-a "$(readlink "$lib/libgpuos.so")" = libgpuos.so.0 -a -s "$pre/include/gpuos/gpuos.h" \
	-a -s "$pre/include/gpuos/host.h" -a -s "$lib/pkgconfig/gpuos.pc"
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
# (the sysroot also prefixes the Requires.private libraries' own -I/usr/include)
check "pkg-config: the version of gpuos --version, -I and -L into the install, no private library in --libs" \
	test "$(pkg-config --modversion gpuos)" = "$($gpuos --version | awk '{ print $2 }')" \
	-a "$(pkg-config --cflags gpuos | xargs -n1 | head -1)" = "-I$pre/include" \
	-a "$(pkg-config --libs gpuos | xargs)" = "-L$lib -lgpuos"
# The program's sources and the installed files, nothing of the tree.
mkdir -p "$tmp/embed/src" "$tmp/embed/tree"
cp apps/embed/cat.c "$tmp/embed/"
head -c 3000000 /dev/urandom > "$tmp/embed/tree/data.bin"
mke2fs -q -F -t ext4 -d "$tmp/embed/tree" "$tmp/embed/disk.img" 16M > /dev/null 2>&1
(cd "$tmp/embed" && cc -Wall -Wextra -Werror -o cat-shared cat.c $(pkg-config --cflags --libs gpuos) \
	-Wl,-rpath,"$lib") > "$tmp/cc.log" 2>&1
check "cc cat.c \$(pkg-config --cflags --libs gpuos): builds, linked to the installed libgpuos.so" \
	eval 'ldd "$tmp/embed/cat-shared" | grep -q "libgpuos.so.0 => $lib/libgpuos.so.0"'
(cd "$tmp/embed" && cc -Wall -Wextra -Werror -o cat-static cat.c $(pkg-config --cflags gpuos) \
	-Wl,-Bstatic -L"$lib" -lgpuos -Wl,-Bdynamic $(pkg-config --static --libs-only-l gpuos | sed 's/-lgpuos//')) \
	>> "$tmp/cc.log" 2>&1
check "and with libgpuos.a (pkg-config --static): builds, no libgpuos.so needed, the runtime image inside" \
	eval 'test -x "$tmp/embed/cat-static" && ! ldd "$tmp/embed/cat-static" | grep -q libgpuos &&
		nm "$tmp/embed/cat-static" | grep -q " R gpuos_rt_image$" && nm "$tmp/embed/cat-shared" > /dev/null'
check "libgpuos.so carries the runtime image too" eval 'nm -D "$lib/libgpuos.so" | grep -q " R gpuos_rt_image$"'
# The boundary (issue 35): gpuos_ names only, no command line inside, no
# internal contract among the headers.
others=$(nm -D --defined-only "$lib/libgpuos.so" | awk '$3 !~ /^gpuos_/ { print $3 }' | head -5 | xargs)
check "libgpuos.so exports gpuos_* only${others:+ (also: $others ...)}" \
	eval 'test -z "$others" && test "$(nm -D --defined-only "$lib/libgpuos.so" | grep -c " gpuos_")" -gt 50'
check "the command line is not in the library (no cmd_cat, cli_parse in libgpuos.a or .so)" \
	eval '! nm "$lib/libgpuos.a" 2>/dev/null | grep -qE " T (cmd_cat|cli_parse)$" &&
		! nm "$lib/libgpuos.so" 2>/dev/null | grep -qE " (cmd_cat|cli_parse)$"'
installed_internal=
for h in internal rt.h queue.h loopback.h dma.h; do
	[ ! -e "$pre/include/gpuos/$h" ] || installed_internal="$installed_internal $h"
done
check "no internal header installed (include/gpuos/internal/, rt.h, queue.h, loopback.h, dma.h)${installed_internal:+ (found:$installed_internal)}" \
	test -z "$installed_internal"
failing=
for h in "$pre"/include/gpuos/*.h; do
	echo "#include \"gpuos/$(basename "$h")\"" > "$tmp/hdr.c"
	cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fsyntax-only -I"$pre/include" "$tmp/hdr.c" 2>> "$tmp/hdr.err" ||
		failing="$failing $(basename "$h")"
done
check "every installed header builds alone against the install${failing:+ (not:$failing)}" test -z "$failing"
[ -z "$failing" ] || sed 's/^/    | /' "$tmp/hdr.err" | head -10
sed 's/^/    | /' "$tmp/cc.log" | head -20
for v in shared static; do
	"$tmp/embed/cat-$v" --host "emu:$tmp/embed/disk.img" /data.bin > "$tmp/embed/out" 2> "$tmp/embed/err"
	rc=$?
	check "cat-$v boots a runtime (host mode) and reads a file equal to its source" \
		eval 'test $rc -eq 0 && cmp -s "$tmp/embed/out" "$tmp/embed/tree/data.bin"'
done
"$tmp/embed/cat-shared" --host "emu:$tmp/embed/disk.img" /missing > /dev/null 2> "$tmp/embed/err"
rc=$?
check "a missing file: exit 1, one line that says so" \
	eval 'test $rc -eq 1 && test "$(cat "$tmp/embed/err")" = "gpuos-cat: /missing: no such file or directory"'
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

# ---- another PREFIX, uninstall ----------------------------------------------------
echo "== PREFIX, uninstall"
make --no-print-directory BUILD="$build" -o "$gpuos" DESTDIR="$tmp/d2" PREFIX=/opt/gpuos install > "$tmp/make.log" 2>&1
check "make install PREFIX=/opt/gpuos: bin, man1, completion there" \
	test -x "$tmp/d2/opt/gpuos/bin/gpuos" -a -s "$tmp/d2/opt/gpuos/share/man/man1/gpuos.1" \
	-a -s "$tmp/d2/opt/gpuos/share/bash-completion/completions/gpuos"
check "and its gpuos.pc names that prefix" grep -qx "prefix=/opt/gpuos" "$tmp/d2/opt/gpuos/lib/pkgconfig/gpuos.pc"
want_req=$(for d in liburing libelf zlib libzstd; do pkg-config --exists $d && printf '%s ' $d; done | sed 's/ $//')
if [ -n "$want_req" ]; then
	check "gpuos.pc: Requires.private names the host libraries that have a .pc here ($want_req), not -l flags" \
		eval 'grep -qx "Requires.private: $want_req" "$tmp/d2/opt/gpuos/lib/pkgconfig/gpuos.pc" &&
			! grep "^Libs.private:" "$tmp/d2/opt/gpuos/lib/pkgconfig/gpuos.pc" | grep -q -- "-luring"'
fi
check "and its unit, in /opt/gpuos/lib/systemd/system, runs /opt/gpuos/bin/gpuos" \
	grep -qx "ExecStart=/opt/gpuos/bin/gpuos boot --config /etc/gpuos/gpuos.conf" \
	"$tmp/d2/opt/gpuos/lib/systemd/system/gpuos.service"
echo "# edited" >> "$tmp/d2/etc/gpuos/gpuos.conf"
make --no-print-directory BUILD="$build" -o "$gpuos" DESTDIR="$tmp/d2" PREFIX=/opt/gpuos uninstall > "$tmp/make.log" 2>&1
check "make uninstall keeps a config that was edited, removes the unit" \
	test -f "$tmp/d2/etc/gpuos/gpuos.conf" -a ! -e "$tmp/d2/opt/gpuos/lib/systemd/system/gpuos.service"
make --no-print-directory BUILD="$build" -o "$gpuos" DESTDIR="$dest" uninstall > "$tmp/make.log" 2>&1
rc=$?
check "make uninstall: exit 0, no file left" test $rc -eq 0 -a -z "$(find "$dest" -type f -o -type l)"

echo "install: $pass passed, $fail failed"
[ $fail -eq 0 ]

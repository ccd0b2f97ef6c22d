#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The manual pages of gpuos, made by help2man from the binary's own help:
# gpuos.1 from `gpuos --help` (with man/gpuos.h2m), and one page per command,
# gpuos-CMD.1 from `gpuos CMD --help`, as git and nvme-cli do (`man gpuos cat`
# finds gpuos-cat). The commands are those of `gpuos --help`
# (scripts/gen-completion.py --commands), so nothing here goes stale when the
# command line changes.
# Usage: man/gen-man.sh PATH/TO/gpuos OUTDIR
#
# help2man runs the binary: GPUOS_QUIET_HOST=1 and stderr discarded, so that
# a notice of a machine without a GPU never lands in a page. The text goes
# through man/help.awk on its way (whitespace only, and "usage:" reads
# "Usage:", which help2man takes for the SYNOPSIS). The version is the second
# word of `gpuos --version` (the rest names the GPU architectures of one
# build, not of the program).
set -euo pipefail
bin=${1:?usage: gen-man.sh PATH/TO/gpuos OUTDIR}
out=${2:?usage: gen-man.sh PATH/TO/gpuos OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "gen-man.sh: $*" >&2; exit 1; }

command -v help2man >/dev/null 2>&1 || die "help2man is not installed (scripts/deps.sh installs it)"
[ -x "$bin" ] || die "no $bin (build it first)"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

ver=$(GPUOS_QUIET_HOST=1 "$bin" --version 2>/dev/null | sed -n '1s/^[^ ]* \([^ ]*\).*/\1/p')
[ -n "$ver" ] || die "$bin --version printed no version"

mkdir -p "$out"
tmp=$(mktemp -d "$out/.gen.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# What help2man runs: the binary, its stderr discarded, its stdout through
# help.awk (usage: -> Usage:, and paragraphs as help2man knows them).
cat > "$tmp/gpuos" <<SH
#!/bin/sh
GPUOS_QUIET_HOST=1 LC_ALL=C "$bin" "\$@" 2>/dev/null | awk -f "$here/help.awk"
SH
chmod +x "$tmp/gpuos"

python3 "$here/../scripts/gen-completion.py" --commands "$bin" > "$tmp/commands"
[ -s "$tmp/commands" ] || die "no commands in \`$bin --help\`"

h2m() { help2man --no-info --section=1 --source="gpuos $ver" "$@"; }

see_also=
while IFS=$'\t' read -r cmd what; do
	see_also+=".BR gpuos\\-${cmd//-/\\-} (1),"$'\n'
	printf '[SEE ALSO]\n.BR gpuos (1)\n' > "$tmp/$cmd.h2m"
	h2m --name="${what//-/\\-}" --version-string="gpuos-$cmd $ver" --help-option="$cmd --help" \
		--include="$tmp/$cmd.h2m" --output="$tmp/gpuos-$cmd.1" "$tmp/gpuos" ||
		die "help2man failed on \`gpuos $cmd --help\`"
done < "$tmp/commands"
printf '[SEE ALSO]\n%s\n' "${see_also%,$'\n'}" > "$tmp/see-also.h2m"
h2m --version-string="gpuos $ver" --include="$here/gpuos.h2m" --include="$tmp/see-also.h2m" \
	--output="$tmp/gpuos.1" "$tmp/gpuos" || die "help2man failed on \`gpuos --help\`"

# the pages of commands that are gone go with them; gpuos.1 (make's target) last
rm -f "$out"/gpuos-*.1
mv "$tmp"/gpuos-*.1 "$out"/
mv "$tmp/gpuos.1" "$out/gpuos.1"

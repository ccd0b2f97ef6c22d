#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Bash completion for gpuos, generated from the binary's own help.

    scripts/gen-completion.py BUILD/gpuos > BUILD/completion/gpuos
    scripts/gen-completion.py --zsh BUILD/gpuos > BUILD/completion/_gpuos
    scripts/gen-completion.py --commands BUILD/gpuos   # NAME<TAB>WHAT, one a line

Nothing here names a command or an option: the subcommands come from
`gpuos --help` (words indented under it that `gpuos WORD --help` accepts as a
command), each one's options from `gpuos CMD --help` (lines that start with
an option, and the usage line). An option followed by a metavariable takes a
value: FILE, PATH, IMAGE, DIR or a name with a dot in it (APP.cubin) complete
file names, a device (--device, DEV) the device kinds (emu:IMAGE completes the
image's file name; pci: the NVMe functions of /sys/bus/pci), a|b|c those
words. The binary runs with GPUOS_QUIET_HOST=1 and its stderr discarded (a
machine without a GPU prints a notice there on some paths). --commands is the
list that man/gen-man.sh makes one page of each.
"""
import os
import re
import subprocess
import sys

OPT = r"-(?:-[A-Za-z0-9][A-Za-z0-9_-]*|[A-Za-z0-9])"
# a metavariable: has a capital (DEV, BYTES, sm_XY, APP.cubin) or is a|b|c
METAVAR = re.compile(r"^=?(?:[A-Za-z0-9_.@+-]*[A-Z][A-Za-z0-9_.@+|-]*|[a-z0-9_-]+(?:\|[a-z0-9_-]+)+)(?:\.\.\.)?$")
FILEISH = re.compile(r"FILE|PATH|IMAGE|DIR|SOCK|\.[A-Za-z]")


def die(msg):
    sys.stderr.write("gen-completion: %s\n" % msg)
    sys.exit(1)


def run(binary, *args):
    env = dict(os.environ, GPUOS_QUIET_HOST="1", LC_ALL="C")
    try:
        p = subprocess.run([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, timeout=60)
    except OSError as e:
        die("cannot run %s: %s" % (binary, e))
    return p.returncode, p.stdout.decode("utf-8", "replace")


def usage_lines(text):
    """The usage line and its continuations (indented lines right after it)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"(?i)\s*usage:", line):
            out = [re.sub(r"(?i)^\s*usage:\s*", "", line)]
            for more in lines[i + 1:]:
                if not more.startswith(" ") or not more.strip():
                    break
                out.append(more.strip())
            return out
    return []


def commands(binary):
    rc, top = run(binary, "--help")
    if rc != 0 or not top.strip():
        die("%s --help failed (exit %d)" % (binary, rc))
    m = re.search(r"(?im)^\s*usage:\s*(\S+)", top)
    prog = os.path.basename(m.group(1)) if m else "gpuos"
    found, seen = [], set()
    for line in top.splitlines():
        m = re.match(r"^ {1,4}([a-z][a-z0-9_-]*)(?=\s|$)(.*)", line)
        if not m or m.group(1) in seen:
            continue
        name = m.group(1)
        seen.add(name)
        rc, text = run(binary, name, "--help")
        if rc != 0 or not re.search(r"(?m)\b%s %s\b" % (re.escape(prog), re.escape(name)), text):
            continue  # a word of some description, not a command
        found.append((name, m.group(2).strip(), text))
    if not found:
        die("no subcommands found in `%s --help`" % binary)
    return prog, top, found


def what(name, topline, text):
    """One line saying what the command does: the first plain line after its usage."""
    lines = text.splitlines()
    start = 0
    for i, line in enumerate(lines):
        if re.match(r"(?i)\s*usage:", line):
            start = i + 1
            while start < len(lines) and lines[start].startswith(" ") and lines[start].strip():
                start += 1
            break
    for line in lines[start:]:
        if line.strip() and not line[0].isspace() and not line.rstrip().endswith(":"):
            return line.strip().rstrip(".")
    return topline.rstrip(".") or "the %s command" % name


def options(text):
    """{option: metavariable or ''} in the order the help gives them; and the operands."""
    opts = {}

    def add(names, arg):
        for n in names:
            if n not in opts or (arg and not opts[n]):
                opts[n] = arg

    # definition lines: "  -o, --output FILE      write ..." (the spec ends at two spaces)
    for line in text.splitlines():
        m = re.match(r"^\s+(%s(?:(?:,\s*|\s+)%s)*)((?:[ =]\S+)?)(?:\s{2,}|$)" % (OPT, OPT), line)
        if not m:
            continue
        arg = m.group(2).strip()
        if arg and not METAVAR.match(arg.strip("[]")):
            continue  # prose that starts with an option
        add(re.findall(OPT, m.group(1)), arg.strip("[]=").strip())
    # the usage line: "[-o FILE]", "--device DEV", "[--mbox-vram [--vram-mib N]]"
    operands = []
    words = " ".join(usage_lines(text)).split()[2:]  # after PROG CMD
    i = 0
    while i < len(words):
        w = words[i].strip("[]")
        if w == "--":
            break
        if re.fullmatch(OPT + r"(=\S+)?", w):
            name, _, val = w.partition("=")
            nxt = words[i + 1].strip("[]") if i + 1 < len(words) else ""
            # "[--shard] PATH": a bracket closed after the option leaves the next word out of it
            if not val and nxt and METAVAR.match(nxt) and not nxt.startswith("-") and not words[i].endswith("]"):
                val = nxt
                i += 1
            add([name], val)
        elif w and w.upper() != "OPTIONS" and not w.startswith("-"):
            operands.append(w)
        i += 1
    return opts, operands


def kind(name, arg):
    if not arg:
        return ""
    if name == "--device" or arg == "DEV":
        return "device"
    if "|" in arg and re.fullmatch(r"[a-z0-9_|-]+", arg):
        return "choice " + " ".join(arg.split("|"))
    if FILEISH.search(arg):
        return "file"
    return "value"


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def global_options(top):
    """The options `gpuos --help` defines (those given before the command)."""
    glob_opts = list(options(top)[0])
    if "--help" in top and "--help" not in glob_opts:
        glob_opts.append("--help")
    return glob_opts


def generate(binary):
    prog, top, cmds = commands(binary)
    rc, ver = run(binary, "--version")
    ver = ver.splitlines()[0].strip() if rc == 0 and ver.strip() else "%s (no --version)" % prog
    glob_opts = global_options(top)

    opt_cases, arg_cases, pos_cases = [], [], []
    for name, _, text in cmds:
        opts, operands = options(text)
        opt_cases.append("\t%s) _gpuos_w=%s ;;" % (name, sh_quote(" ".join(opts))))
        by_kind = {}
        for o, a in opts.items():
            k = kind(o, a)
            if k:
                by_kind.setdefault(k, []).append(o)
        if by_kind:
            inner = " ".join("%s) _gpuos_w=%s ;;" % ("|".join(os_), sh_quote(k)) for k, os_ in by_kind.items())
            arg_cases.append("\t%s) case $2 in %s esac ;;" % (name, inner))
        # operands that are local files: FILE, IMAGE, APP.cubin (PATH is a path in the device)
        if any(re.search(r"FILE|IMAGE|\.[A-Za-z]", o) for o in operands):
            pos_cases.append(name)

    out = []
    w = out.append
    w("# bash completion for %s                                   -*- shell-script -*-" % prog)
    w("# Generated by scripts/gen-completion.py from `%s --help` and `%s COMMAND --help`" % (prog, prog))
    w("# of %s. Do not edit: `make completion` writes it again." % ver)
    w("")
    w("_gpuos_commands=%s" % sh_quote(" ".join(n for n, _, _ in cmds)))
    w("_gpuos_global_opts=%s" % sh_quote(" ".join(glob_opts)))
    w("")
    w("# the options of command $1, into _gpuos_w")
    w("_gpuos_opts() {")
    w("\t_gpuos_w=")
    w("\tcase $1 in")
    out.extend(opt_cases)
    w("\tesac")
    w("}")
    w("")
    w("# what option $2 of command $1 takes, into _gpuos_w: nothing (a flag), file,")
    w("# device, value (not completed) or \"choice WORD...\"")
    w("_gpuos_arg() {")
    w("\t_gpuos_w=")
    w("\tcase $1 in")
    out.extend(arg_cases)
    w("\tesac")
    w("}")
    w("")
    w("# commands whose operands are local files")
    w("_gpuos_file_operands=%s" % sh_quote(" ".join(pos_cases)))
    w(BODY)
    return "\n".join(out) + "\n"


BODY = r'''
# file names starting with $1, each prefixed with $2 (readline quotes them and
# marks directories: -o filenames)
_gpuos_files() {
	local f IFS=$'\n'
	for f in $(compgen -f -- "$1"); do
		COMPREPLY+=("$2$f")
	done
	compopt -o filenames 2>/dev/null
}

# a device: the kinds, then emu:IMAGE's file name or pci:'s NVMe functions
_gpuos_device() {
	local cur=$1 pre=$2 d c
	case $cur in
	emu:*)
		_gpuos_files "${cur#emu:}" "${pre}emu:" ;;
	pci:*)
		for d in /sys/bus/pci/devices/*; do
			[ -r "$d/class" ] || continue
			read -r c < "$d/class" 2>/dev/null
			[ "$c" = 0x010802 ] && COMPREPLY+=("${pre}pci:${d##*/}")
		done
		COMPREPLY=($(compgen -W "${COMPREPLY[*]}" -- "$pre$cur")) ;;
	*)
		COMPREPLY=($(compgen -W "emu: null null: gpu-null pci:" -- "$cur"))
		COMPREPLY=("${COMPREPLY[@]/#/$pre}") ;;
	esac
}

# the value of an option of kind $1, the word so far $2, $3 before it (--opt=)
_gpuos_value() {
	case $1 in
	file) _gpuos_files "$2" "$3" ;;
	device) _gpuos_device "$2" "$3" ;;
	choice\ *) COMPREPLY=($(compgen -W "${1#choice }" -- "$2")); COMPREPLY=("${COMPREPLY[@]/#/$3}") ;;
	esac
}

_gpuos() {
	local i w n=0 cur prev cmd k brk="" c ci
	local -a words=()
	COMPREPLY=()
	# the words as typed: bash splits "emu:x" and "--opt=x" at : and = (COMP_WORDBREAKS)
	for c in : =; do [[ $COMP_WORDBREAKS == *"$c"* ]] && brk+=$c; done
	for ((i = 0; i <= COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if ((n > 1)) && [ -n "$brk" ] && { [[ $w == ["$brk"] ]] || [[ ${words[n - 1]} == *["$brk"] ]]; }; then
			words[n - 1]+=$w
		else
			words[n++]=$w
		fi
	done
	cur=${words[n - 1]}
	prev=${words[n - 2]}
	# the command: the first word after the options given before it (gpuos -q cat)
	ci=1
	while ((ci < n - 1)) && [[ ${words[ci]} == -* ]]; do ((ci++)); done
	if ((ci == n - 1)); then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "$_gpuos_global_opts" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$_gpuos_commands" -- "$cur"))
		fi
		return 0
	fi
	cmd=${words[ci]}
	[[ " $_gpuos_commands " == *" $cmd "* ]] || return 0
	for ((i = ci + 1; i < n - 1; i++)); do
		if [ "${words[i]}" = -- ]; then # an app's arguments
			_gpuos_files "$cur" ""
			k="file"
			break
		fi
	done
	if [ -z "${k:-}" ]; then
		if [[ $prev == -* ]] && _gpuos_arg "$cmd" "$prev" && [ -n "$_gpuos_w" ]; then
			k=$_gpuos_w
			_gpuos_value "$k" "$cur" ""
		elif [[ $cur == -*=* ]]; then
			_gpuos_arg "$cmd" "${cur%%=*}"
			k=$_gpuos_w
			_gpuos_value "$k" "${cur#*=}" "${cur%%=*}="
		elif [[ $cur == -* ]]; then
			_gpuos_opts "$cmd"
			COMPREPLY=($(compgen -W "$_gpuos_w" -- "$cur"))
		elif [[ " $_gpuos_file_operands " == *" $cmd "* ]]; then
			k="file"
			_gpuos_files "$cur" ""
		fi
	fi
	# bash replaces only what follows the last : or = of the word: drop what precedes
	if [ -n "$brk" ] && [[ $cur == *["$brk"]* ]]; then
		w=${cur%"${cur##*["$brk"]}"}
		COMPREPLY=("${COMPREPLY[@]#"$w"}")
	fi
	# no space after a device kind (emu:)
	for w in "${COMPREPLY[@]}"; do
		case $w in *:) compopt -o nospace 2>/dev/null; break ;; esac
	done
	return 0
}
complete -F _gpuos gpuos gpuos-static
# ex: filetype=sh'''


def zsh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def zsh_spec(name, arg):
    """One _arguments spec: the option, and what its value completes."""
    k = kind(name, arg)
    if not k:
        return zsh_quote(name)
    if k == "file":
        action = "_files"
    elif k == "device":
        action = "_gpuos_device"
    elif k.startswith("choice "):
        action = "(%s)" % k[len("choice "):]
    else:
        action = " "
    return zsh_quote("%s=:%s:%s" % (name, arg.lower() if arg else "value", action) if name.startswith("--")
                     else "%s+:%s:%s" % (name, arg.lower() if arg else "value", action))


def generate_zsh(binary):
    """The same commands, options and value kinds as the bash completion, as
    a zsh completion function (_arguments per command)."""
    prog, top, cmds = commands(binary)
    rc, ver = run(binary, "--version")
    ver = ver.splitlines()[0].strip() if rc == 0 and ver.strip() else "%s (no --version)" % prog
    out = []
    w = out.append
    w("#compdef gpuos gpuos-static")
    w("# zsh completion for %s, generated by scripts/gen-completion.py --zsh from" % prog)
    w("# `%s --help` and `%s COMMAND --help` of %s. Do not edit: `make completion` writes it again." % (prog, prog, ver))
    w("")
    w("_gpuos_device() {")
    w("	local -a kinds nvme")
    w("	local d c")
    w("	case $PREFIX in")
    w("	emu:*) compset -P 'emu:'; _files ;;")
    w("	pci:*)")
    w("		for d in /sys/bus/pci/devices/*(N); do")
    w("			[[ -r $d/class ]] || continue")
    w("			c=$(<$d/class)")
    w("			[[ $c == 0x010802 ]] && nvme+=(pci:${d:t})")
    w("		done")
    w("		compadd -a nvme ;;")
    w("	*) kinds=(emu: null null: gpu-null pci:); compadd -S '' -a kinds ;;")
    w("	esac")
    w("}")
    w("")
    for name, topline, text in cmds:
        opts, operands = options(text)
        specs = [zsh_spec(o, a) for o, a in opts.items()]
        files = any(re.search(r"FILE|IMAGE|\.[A-Za-z]", o) for o in operands)
        specs.append(zsh_quote("*:%s:%s" % ("file" if files else "argument", "_files" if files else " ")))
        w("_gpuos_%s() {" % name.replace("-", "_"))
        w("	_arguments -s \\")
        for i, s in enumerate(specs):
            w("		%s%s" % (s, " \\" if i + 1 < len(specs) else ""))
        w("}")
        w("")
    w("_gpuos() {")
    w("	local -a cmds")
    w("	cmds=(")
    for name, topline, text in cmds:
        w("		%s" % zsh_quote("%s:%s" % (name, what(name, topline, text).replace(":", "\\:"))))
    w("	)")
    w("	# the options given before the command (gpuos -q cat) are left out")
    w("	while (( CURRENT > 2 )) && [[ $words[2] == -* ]]; do")
    w("		words[2]=()")
    w("		(( CURRENT-- ))")
    w("	done")
    w("	if (( CURRENT == 2 )); then")
    w("		if [[ $PREFIX == -* ]]; then")
    w("			compadd -- %s" % " ".join(zsh_quote(o) for o in global_options(top)))
    w("		else")
    w("			_describe -t commands 'gpuos command' cmds")
    w("		fi")
    w("		return")
    w("	fi")
    w("	local cmd=${words[2]}")
    w("	shift words")
    w("	(( CURRENT-- ))")
    w("	(( $+functions[_gpuos_${cmd//-/_}] )) && _gpuos_${cmd//-/_}")
    w("}")
    w("")
    w('_gpuos "$@"')
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    if args and args[0] == "--zsh" and len(args) == 2:
        sys.stdout.write(generate_zsh(args[1]))
        return
    if args and args[0] == "--commands" and len(args) == 2:
        _, _, cmds = commands(args[1])
        for name, topline, text in cmds:
            print("%s\t%s" % (name, what(name, topline, text)))
        return
    if len(args) != 1 or args[0].startswith("-"):
        die("usage: gen-completion.py [--commands | --zsh] PATH/TO/gpuos")
    sys.stdout.write(generate(args[0]))


if __name__ == "__main__":
    main()

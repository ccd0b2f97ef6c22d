# SPDX-License-Identifier: MIT
# `gpuos ... --help` on its way to help2man (man/gen-man.sh): the words stay,
# only the layout changes where help2man would read it wrongly.
#  - "usage:" reads "Usage:": help2man takes that line for the SYNOPSIS;
#  - an indented line right after a line of prose (one at column 0 that is no
#    heading "...:") continues it: help2man would indent it as a paragraph;
#  - a line of prose that starts with a label ("exit status: 0 done") starts a
#    paragraph: help2man runs the lines of one paragraph together;
#  - "examples:" reads "Examples:", which help2man makes the EXAMPLES section;
#    each line under it is a paragraph of its own (help2man runs the lines of
#    one paragraph together).
function flush() { if (have) print buf; have = 0 }
NR == 1 { sub(/^usage:/, "Usage:") }
/^examples:$/ { $0 = "Examples:" }
have && prose && /^[ \t]+[^ \t-]/ {
	s = $0
	sub(/^[ \t]+/, "", s)
	buf = buf " " s
	next
}
/^[^ \t]/ { ex = 0 }
{
	flush()
	if (prose && /^[A-Za-z][A-Za-z ]*: /)
		print ""
	if (ex > 1 && /^[ \t]/)
		print ""
	if (ex || /^Examples:$/)
		ex++
	buf = $0
	have = 1
	prose = ($0 ~ /^[^ \t]/ && $0 !~ /:$/ && $0 !~ /^Usage:/)
}
END { flush() }

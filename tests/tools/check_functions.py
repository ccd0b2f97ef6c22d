#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Functions under 80 lines in runtime/, boot/ and apps/ (issue 35, item 6),
except those that read better whole and say why (part of make check).

A function's length is the lines from its first line (where its return type
starts) to its closing brace, both counted, comments and blank lines inside
included: what a reader has to hold at once.

The reason marker: the comment that ends on the line directly above the
function's first line (its header comment, or a comment of its own) holds
`whole:` followed by the reason, at least three words on the same line, e.g.

    /* Bring-up, step by step (NVMe 3.5.1).
     * whole: a state machine; each state's case reads beside the next. */
    static int bringup(...)

A marked function may be any length; a marker with no reason does not count.
Files: .c, .h, .cu and .cuh. Functions written inside a #define are not seen.

Usage: check_functions.py [--strict] [--limit N] [PATH...]  (from the
repository root; PATH defaults to runtime boot apps). Lists every function
over the limit (80) that has no marker, longest first, as FILE:LINE NAME
LINES. Exit 0 unless --strict is given and something is listed; then 1."""
import argparse
import pathlib
import re
import sys

LIMIT = 80
MARK = re.compile(r"\bwhole:\s*(\S+\s+){2,}\S")
SUFFIXES = (".c", ".h", ".cu", ".cuh")
NOT_CALLS = {"if", "for", "while", "switch", "return", "sizeof", "__attribute__",
             "__declspec", "alignof", "_Alignof", "defined"}


def blank(text):
    """The text with comments, string and character literals and preprocessor
    lines turned to spaces (newlines kept, so lines still count); a string
    keeps its quotes, so extern "C" stays recognisable."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                if text.startswith("/*", i):
                    end = text.find("*/", i + 2)
                    end = n if end < 0 else end + 2
                    out.append(re.sub(r"[^\n]", " ", text[i:end]))
                    i = end
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = c == "\n"
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def head_name(head):
    """The function's name if head (the text between the last top-level ';'
    or '}' and a top-level '{') is a function's declarator, else None."""
    h = re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", head, flags=re.S).strip()
    if not h.endswith(")") or h.startswith("typedef"):
        return None
    depth = 0
    for i, c in enumerate(h):
        if c == "(":
            if depth == 0:
                m = re.search(r"([A-Za-z_]\w*)\s*$", h[:i])
                if m and m.group(1) not in NOT_CALLS:
                    return None if "=" in h[:i] else m.group(1)
            depth += 1
        elif c == ")":
            depth -= 1
    return None


def first_line_at(head):
    """Where the function's first line starts in head: the first line of
    its last run of lines that are not empty once comments and preprocessor
    lines are blanked (so GPUOS_EXTERN_C_BEGIN above a comment is not part
    of the function below it)."""
    at, offset = 0, 0
    for i, line in enumerate(head.rstrip().split("\n")):
        if not line.strip():
            at = None
        elif at is None or i == 0:
            at = offset + len(line) - len(line.lstrip())
        offset += len(line) + 1
    return at


def functions(path):
    """(name, first line, last line) of each function defined in path."""
    text = path.read_text(errors="replace")
    code = blank(text)
    found, depth, start, open_at, name = [], 0, 0, 0, None
    transparent = []  # depths of extern "C" { ... } blocks
    for i, c in enumerate(code):
        if c == "{":
            if depth == len(transparent):
                head = code[start:i]
                if re.fullmatch(r'\s*extern\s*"\s*"\s*', head):
                    transparent.append(depth + 1)
                else:
                    name = head_name(head)
                    open_at = start + first_line_at(head)
            depth += 1
        elif c == "}":
            depth -= 1
            if transparent and depth + 1 == transparent[-1]:
                transparent.pop()
                start = i + 1
            elif depth == len(transparent):
                if name:
                    first = code.count("\n", 0, open_at) + 1
                    found.append((name, first, code.count("\n", 0, i) + 1))
                name = None
                start = i + 1
        elif c == ";" and depth == len(transparent):
            start = i + 1
    return text.splitlines(), found


def marked(lines, first):
    """Whether the comment ending on the line above line `first` (1-based)
    holds the reason marker."""
    end = first - 2
    if end < 0:
        return False
    begin = end
    if lines[end].strip().startswith("//"):
        while begin > 0 and lines[begin - 1].strip().startswith("//"):
            begin -= 1
    elif lines[end].rstrip().endswith("*/"):
        while begin > 0 and "/*" not in lines[begin]:
            begin -= 1
    else:
        return False
    return any(MARK.search(line.replace("*/", "")) for line in lines[begin:end + 1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strict", action="store_true", help="exit 1 when any function is listed")
    ap.add_argument("--limit", type=int, default=LIMIT)
    ap.add_argument("paths", nargs="*", default=["runtime", "boot", "apps"])
    a = ap.parse_args()
    long_, whole = [], 0
    for d in a.paths:
        p = pathlib.Path(d)
        for f in sorted([p] if p.is_file() else p.rglob("*")):
            if f.suffix not in SUFFIXES:
                continue
            lines, found = functions(f)
            for name, first, last in found:
                n = last - first + 1
                if n <= a.limit:
                    continue
                if marked(lines, first):
                    whole += 1
                else:
                    long_.append((n, str(f), first, name))
    for n, f, line, name in sorted(long_, key=lambda x: (-x[0], x[1], x[2])):
        print("check_functions: %s:%d %s %d lines" % (f, line, name, n))
    print("check: %d functions over %d lines without a reason (whole:), %d with one%s"
          % (len(long_), a.limit, whole, "" if a.strict else " (report only; --strict fails on any)"))
    sys.exit(1 if a.strict and long_ else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Are the engine's tokens llama.cpp's? (tests/emu/llama.sh, tests/gpu/llama.sh)

Usage: llama_same.py REF_JSON WANT GOT
       llama_same.py --want REF_JSON       llama.cpp's ids, as WANT
       llama_same.py --got ENGINE_OUTPUT   the engine's ids, as GOT

WANT and GOT are "PROMPT_IDS TOK TOK ..." (the prompt's ids joined by
commas, then the generated ids); REF_JSON is llama_ref.mjs's answer with
--top2; ENGINE_OUTPUT what `gpuos run llama` printed ("tokens: P | G"). Equal: exit 0. Equal up to a step where llama.cpp itself was torn
between its token and ours (its two likeliest within 1 % of each other:
float rounding in another order decides such a tie either way): exit 0,
saying so. Anything else: exit 1 with the first difference.
"""
import json
import re
import sys


def verdict(ref, want, got):
    want, got = want.split(), got.split()
    if not want or want != got and len(want) != len(got):
        return False, "no answer" if not got else "%d ids, not %d" % (len(got), len(want))
    k = next((i for i in range(len(want)) if want[i] != got[i]), None)
    if k is None:
        return True, ""
    step = k - 1  # want[0] is the prompt
    top = ref.get("top2", [])
    if step < 0 or step >= len(top) or len(top[step]) < 2:
        return False, "first difference at token %d" % k
    (a, pa), (b, pb) = top[step]
    if str(a) == want[k] and str(b) == got[k] and (pa - pb) / pa < 0.01:
        return True, "equal for %d tokens, then a tie llama.cpp itself saw (%d: %.6g, %d: %.6g)" % (step, a, pa, b, pb)
    return False, "first difference at token %d (llama.cpp: %d %.6g, then %d %.6g)" % (step, a, pa, b, pb)


def ids(prompt, gen):
    return ",".join(map(str, prompt)) + " " + " ".join(map(str, gen))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--want":
        d = json.load(open(sys.argv[2]))
        print(ids(d["prompt_tokens"], d["tokens"]))
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "--got":
        m = re.search(r"^tokens: (.*) \| (.*)$", open(sys.argv[2], errors="replace").read(), re.M)
        if m:
            print(ids(m.group(1).split(), m.group(2).split()))
        return 0
    if len(sys.argv) != 4:
        sys.exit("\n".join(__doc__.strip().splitlines()[2:5]))
    ok, why = verdict(json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3])
    if why:
        print(why)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

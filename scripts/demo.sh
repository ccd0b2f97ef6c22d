#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make demo: a GGUF model on an ext4 file system on an (emulated) NVMe SSD,
# parsed, streamed layer by layer and verified by GPU apps (gpuos run).
#
#   bash scripts/demo.sh BUILD_DIR
#
# 1. generates a llama-shaped GGUF of about 83 MiB (8 layers, 7 tensor types,
#    every byte random) with tests/tools/gguf_writer.py --case demo,
# 2. puts it in an ext4 image (mke2fs -d),
# 3. computes the reference checksums and SHA-256s on the host from the file,
# 4. lists the tensors through the runtime (gpuos gguf on emu:) and compares
#    the listing with what the writer wrote,
# 5. streams every layer into two VRAM slots (apps/layer_stream.c) and
#    compares its per-layer checksums with the host's,
# 6. loads a few tensors and a whole layer (apps/gguf_load.c) and has the app
#    verify their SHA-256 against the host's,
# 7. generates tokens with the llama engine (apps/llama.c) from a model whose
#    layers stream through gpuos for every token (Q4_K, derived from
#    ../shared/testdata's llama-2-tiny-random.gguf with its tokenizer), and
#    checks them against llama.cpp's own (tests/tools/llama_ref.mjs).
# Steps 1-3 run once: their results stay in BUILD_DIR/demo, keyed by the
# generator's options and source, and a second run reuses them.
#
# The runtime runs on the GPU when there is one (gpuos picks it), otherwise on
# CPU threads (host mode); GPUOS_DEMO_HOST=1 forces host mode. A progress bar
# when stdout is a terminal (the apps' own bars from gpuos run beneath it),
# plain lines otherwise. Any failure stops the demo
# with a message and a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:-build}
g=$build/gpuos
dir=$build/demo
layers=8
seed=7
nsteps=7
t_start=$(date +%s.%N)

die() {
	bar_clear
	echo "demo: FAILED: $*" >&2
	exit 1
}

# ---- progress ------------------------------------------------------------------------
if [ -t 1 ]; then tty=1; else tty=0; fi
bar_clear() { if [ "$tty" = 1 ]; then printf '\r\033[K'; fi; }
step() { # N TEXT
	local n=$1 text=$2 w=30 fill
	if [ "$tty" = 1 ]; then
		fill=$((w * (n - 1) / nsteps))
		printf '\r\033[K[%s%s] %d/%d %s ...' "$(printf '%*s' "$fill" '' | tr ' ' '#')" \
			"$(printf '%*s' $((w - fill)) '' | tr ' ' '.')" "$n" "$nsteps" "$text"
	else
		echo "[$n/$nsteps] $text"
	fi
}
# A finished step: on a terminal its title replaces the bar (plain output
# printed the title when the step began).
done_step() { # N TEXT
	if [ "$tty" = 1 ]; then
		bar_clear
		echo "[$1/$nsteps] $2"
	fi
}
# Result lines of a step (after the bar is cleared).
say() {
	bar_clear
	printf '%s\n' "$@"
}
# run_app OUT ARGS...: gpuos run ARGS with the app's report in OUT. On a
# terminal its progress bar and statistics (stderr) show live below the step's
# line; otherwise both go to OUT.
run_app() {
	local out=$1
	shift
	if [ "$tty" = 1 ]; then
		printf '\n'
		"$g" run "$@" > "$out"
	else
		"$g" run "$@" > "$out" 2>&1
	fi
}
now() { date +%s.%N; }
secs() { python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$2"; }

for tool in python3 mke2fs node; do
	command -v "$tool" >/dev/null 2>&1 || die "needs $tool (python3; e2fsprogs for mke2fs)"
done
[ -x "$g" ] || die "$g is missing: run make first"
for app in layer_stream gguf_load llama; do
	[ -f "$build/apps/$app.cubin" ] || [ -f "$build/apps/$app.so" ] ||
		die "$build/apps/$app.{cubin,so} missing: run make first"
done
export GPUOS_QUIET_HOST=1

# GPU or host threads: thread 0 of layer_stream loads, the others reduce.
run_opts=()
if [ "${GPUOS_DEMO_HOST:-0}" = 1 ]; then
	run_opts+=(--host)
fi
if [ "${GPUOS_DEMO_HOST:-0}" != 1 ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; then
	mode="GPU"
	stream_geom=(--grid 8 --block 256)
	load_geom=(--grid 1 --block 64)
else
	mode="host mode"
	stream_geom=(--grid 1 --block 4)
	load_geom=(--grid 1 --block 4)
fi

mkdir -p "$dir"
gguf=$dir/src/models/demo.gguf
json=$dir/demo.json
img=$dir/disk.img
ref=$dir/ref.txt
stamp=$dir/stamp
key="demo v1 layers=$layers seed=$seed writer=$(sha256sum tests/tools/gguf_writer.py | cut -c1-16)"

echo "gpuos demo: a GGUF model on ext4 on an emulated NVMe SSD, read by GPU apps ($mode)"

# ---- 1-3: the model, the image, the host's reference (once) ------------------------------
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ] && [ -s "$img" ] && [ -s "$gguf" ] && [ -s "$ref" ]; then
	step 1 "model, disk image and host checksums"
	done_step 1 "model, disk image and host checksums"
	say "    reusing them from $dir (delete it to start over)"
else
	rm -f "$stamp"
	step 1 "generating the GGUF model"
	t0=$(now)
	rm -rf "$dir/src"
	mkdir -p "$dir/src/models"
	python3 tests/tools/gguf_writer.py --case demo "$gguf" --json "$json" --seed "$seed" --layers "$layers" ||
		die "gguf_writer.py could not write $gguf"
	printf 'gpuos demo model: %s\n' "$key" > "$dir/src/README"
	done_step 1 "generating the GGUF model"
	say "    model: $gguf, $(stat -c %s "$gguf") bytes ($(secs "$t0" "$(now)") s)"

	step 2 "building the ext4 disk image"
	t0=$(now)
	mib=$(( ($(stat -c %s "$gguf") >> 20) + 40 ))
	rm -f "$img"
	mke2fs -q -F -t ext4 -b 4096 -L gpuos-demo -d "$dir/src" "$img" "${mib}M" >"$dir/mke2fs.log" 2>&1 ||
		die "mke2fs failed: $(tail -n 3 "$dir/mke2fs.log")"
	done_step 2 "building the ext4 disk image"
	say "    disk image: $img, ${mib} MiB ext4 holding /models/demo.gguf ($(secs "$t0" "$(now)") s)"

	step 3 "computing reference checksums on the host"
	t0=$(now)
	python3 tests/tools/layer_sums.py "$gguf" "$json" > "$ref.tmp" || die "host checksums failed"
	mv "$ref.tmp" "$ref"
	echo "$key" > "$stamp"
	done_step 3 "computing reference checksums on the host"
	say "    host reference: $(grep -c '^layer ' "$ref") layer checksums, $(grep -c '^sha ' "$ref") tensor SHA-256s ($(secs "$t0" "$(now)") s)"
fi
dev="emu:$img"

# ---- 4: list the tensors through the runtime -----------------------------------------------
step 4 "listing the tensors (gpuos gguf)"
"$g" gguf --device "$dev" /models/demo.gguf > "$dir/gguf.txt" 2>&1 || die "gpuos gguf failed: $(tail -n 3 "$dir/gguf.txt")"
"$g" gguf --json --device "$dev" /models/demo.gguf > "$dir/gguf.json" 2> "$dir/gguf.err" ||
	die "gpuos gguf --json failed: $(tail -n 3 "$dir/gguf.err")"
if [ -s "$json" ]; then
	python3 tests/tools/gguf_compare.py "$json" "$dir/gguf.json" > "$dir/compare.txt" 2>&1 ||
		die "the runtime's listing differs from what the writer wrote: $(head -n 5 "$dir/compare.txt")"
	same=$(tail -n 1 "$dir/compare.txt")
else
	same="(writer JSON missing)"
fi
ntens=$(($(wc -l < "$dir/gguf.txt") - 1))
types=$(awk 'NR > 1 { print $2 }' "$dir/gguf.txt" | sort -u | paste -sd' ')
done_step 4 "listing the tensors (gpuos gguf)"
say "    gpuos gguf --device $dev /models/demo.gguf"
{
	head -n 1 "$dir/gguf.txt"
	sed -n '2,12p' "$dir/gguf.txt"
	echo "  ... $((ntens - 13)) more ..."
	tail -n 2 "$dir/gguf.txt"
} | sed 's/^/      /'
say "    tensor types: $types; listing equals the writer's: $same"

# ---- 5: stream every layer ---------------------------------------------------------------
step 5 "streaming every layer into two VRAM slots (layer_stream)"
t0=$(now)
rc=0
run_app "$dir/stream.txt" --device "$dev" "${run_opts[@]}" "$build/apps/layer_stream.cubin" "${stream_geom[@]}" \
	-- /models/demo.gguf || rc=$?
t_stream=$(secs "$t0" "$(now)")
[ "$rc" = 0 ] || die "layer_stream exited $rc: $(tail -n 5 "$dir/stream.txt")"
done_step 5 "streaming every layer into two VRAM slots (layer_stream)"
say "    gpuos run layer_stream.cubin ${stream_geom[*]} -- /models/demo.gguf (${t_stream} s)"
sed 's/^/      /' "$dir/stream.txt"
verdict=$(python3 - "$dir/stream.txt" "$ref" <<'PY'
import re, sys
got = {}
for line in open(sys.argv[1]):
    m = re.match(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([0-9a-f]{16})\s*$", line)
    if m:
        got[int(m.group(1))] = m.group(4)
want = {}
for line in open(sys.argv[2]):
    f = line.split()
    if f[0] == "layer":
        want[int(f[1])] = f[2]
bad = [n for n in want if got.get(n) != want[n]]
extra = [n for n in got if n not in want]
if bad or extra or not want:
    for n in bad:
        print("layer %d: app %s, host %s" % (n, got.get(n, "missing"), want[n]))
    for n in extra:
        print("layer %d: reported by the app, not in the model" % n)
    sys.exit(1)
print("%d/%d" % (len(want), len(want)))
PY
) || die "layer checksums differ from the host's: $verdict"
say "    checksums: $verdict layers equal the host's (crc32 per 4 KiB chunk, mixed and summed)"
stream_total=$(grep '^total ' "$dir/stream.txt" || true)
stream_gbs=$(sed -n 's/.* s: \([0-9.]*\) GB\/s streamed.*/\1/p' <<< "$stream_total")

# ---- 6: load and verify tensors -----------------------------------------------------------
step 6 "loading tensors and a whole layer, verified by SHA-256 (gguf_load)"
sha() { awk -v n="$1" '$1 == "sha" && $2 == n { print $3 }' "$ref"; }
l1=$(awk '$1 == "sha" && $2 ~ /^blk\.1\./ { print $3 }' "$ref" | paste -sd,)
specs=()
for t in token_embd.weight blk.0.attn_q.weight blk.7.ffn_down.weight output.weight; do
	h=$(sha "$t")
	[ -n "$h" ] || die "no host SHA-256 for $t"
	specs+=("$t=$h")
done
specs+=("layer:1=$l1")
t0=$(now)
rc=0
run_app "$dir/load.txt" --device "$dev" "${run_opts[@]}" "$build/apps/gguf_load.cubin" "${load_geom[@]}" \
	-- /models/demo.gguf "${specs[@]}" || rc=$?
t_load=$(secs "$t0" "$(now)")
done_step 6 "loading tensors and a whole layer, verified by SHA-256 (gguf_load)"
say "    gpuos run gguf_load.cubin ${load_geom[*]} -- /models/demo.gguf NAME=SHA256 ... layer:1=SHA256,... (${t_load} s)"
sed 's/^/      /' "$dir/load.txt"
[ "$rc" = 0 ] || die "gguf_load exited $rc: $(grep -E 'MISMATCH|ERROR|gguf_load:' "$dir/load.txt" | head -n 3)"
nok=$(grep -c '^ok ' "$dir/load.txt" || true)
nwant=$(( ${#specs[@]} - 1 + $(tr ',' '\n' <<< "$l1" | wc -l) ))
[ "$nok" = "$nwant" ] || die "gguf_load verified $nok tensors, $nwant expected"

# ---- 7: tokens from a model streamed through gpuos, against llama.cpp ------------------------
step 7 "generating tokens with the llama engine, every layer streamed through gpuos, against llama.cpp"
tiny=../shared/testdata/gguf/llama-2-tiny-random.gguf
prompt="Once upon a time"
gen_verdict="skipped (no $tiny to derive the model from)"
if [ -f "$tiny" ]; then
	mkdir -p "$dir/llama/src"
	python3 tests/tools/llama_derive.py "$tiny" "$dir/llama/src/q4k.gguf" --type Q4_K --layers 4 --seed 11 ||
		die "llama_derive.py failed"
	mke2fs -q -F -t ext4 -d "$dir/llama/src" "$dir/llama/img" 64M > /dev/null 2>&1 || die "mke2fs -d of the llama model failed"
	node tests/tools/llama_ref.mjs generate "$dir/llama/src/q4k.gguf" --prompt "$prompt" --tokens 12 --ignore-eos \
		--no-flash-attention > "$dir/llama/ref.json" 2> "$dir/llama/ref.err" ||
		die "llama.cpp (node tests/tools/llama_ref.mjs) failed: $(head -n 3 "$dir/llama/ref.err")"
	if [ "$mode" = GPU ]; then llama_geom=(--grid 1 --block 128); else llama_geom=(--grid 1 --block 4); fi
	t0=$(now)
	rc=0
	run_app "$dir/llama.txt" --device "emu:$dir/llama/img" "${run_opts[@]}" "$build/apps/llama.cubin" "${llama_geom[@]}" \
		-- /q4k.gguf --prompt "$prompt" --tokens 12 --ignore-eos || rc=$?
	t_gen=$(secs "$t0" "$(now)")
	done_step 7 "generating tokens with the llama engine, every layer streamed through gpuos, against llama.cpp"
	say "    gpuos run llama.cubin ${llama_geom[*]} -- /q4k.gguf --prompt \"$prompt\" --tokens 12 (${t_gen} s)"
	sed 's/^/      /' "$dir/llama.txt"
	[ "$rc" = 0 ] || die "the llama engine exited $rc"
	gen_verdict=$(python3 - "$dir/llama/ref.json" "$dir/llama.txt" <<'PY'
import json, re, sys
ref = json.load(open(sys.argv[1]))
m = re.search(r"^tokens: (.*) \| (.*)$", open(sys.argv[2]).read(), re.M)
if not m:
    sys.exit("the engine printed no tokens")
prompt, gen = [int(t) for t in m.group(1).split()], [int(t) for t in m.group(2).split()]
if prompt != ref["prompt_tokens"] or gen != ref["tokens"]:
    sys.exit("llama.cpp: %s | %s; gpuos: %s | %s" % (ref["prompt_tokens"], ref["tokens"], prompt, gen))
print("%d tokens equal llama.cpp's" % len(gen))
PY
) || die "the engine's tokens differ from llama.cpp's: $gen_verdict"
	say "    $gen_verdict: \"$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["text"])' "$dir/llama/ref.json")\""
else
	done_step 7 "generating tokens with the llama engine: $gen_verdict"
fi

# ---- summary ------------------------------------------------------------------------------
bar_clear
total=$(secs "$t_start" "$(now)")
echo
echo "throughput: layer streaming ${stream_gbs:-?} GB/s over the whole pass ($(sed -n 's/.*, loads \([0-9.]*\) GB\/s.*/\1/p' <<< "$stream_total") GB/s in the loads alone)"
echo "demo: ok: $(($(stat -c %s "$gguf") >> 20)) MiB GGUF ($ntens tensors, $layers layers) on ext4 via emu:, $verdict layer checksums and $nok/$nwant tensor SHA-256s equal the host's, ${stream_gbs:-?} GB/s streaming ($mode); llama engine: $gen_verdict; ${total} s"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# GPU clients in other processes (docs/benchmarks.md): the round trip of a NOP
# posted by a kernel of another process into its own VRAM area, and aggregate
# NOPs/s with 1, 4 and 16 such processes at once; each against the same figure
# for a client kernel in the runtime's own process (gpuos bench, its mailbox
# in VRAM), measured in the same run on gpu-null with the same service warps.
# Starts MPS for the run (its own pipe directory) and stops it after.
# Usage: bench/xproc.sh BUILD_DIR   (needs a GPU); with XPROC_RESULTS=CSV
# the figures are also appended there as rows (bench/results.py).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
g=$build/gpuos
xc=$build/bench/xproc-client
warps=${XPROC_WARPS:-16}
per=${XPROC_THREADS:-256}     # client threads per process
iters=${XPROC_ITERS:-400}     # NOPs per thread
tmp=$(mktemp -d /dev/shm/gpuos-xproc.XXXXXX)
export CUDA_MPS_PIPE_DIRECTORY=$tmp/pipe CUDA_MPS_LOG_DIRECTORY=$tmp/log
svc=
cleanup() {
	[ -n "$svc" ] && { timeout 20 "$g" stop --socket "$tmp/s.sock" > /dev/null 2>&1; wait $svc; }
	sh scripts/mps-stop.sh > /dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
json() { python3 -c "import json,sys; print(json.loads(sys.stdin.readline())$1)"; }
# row NAME PATH BASELINE COMMAND METRIC UNIT VALUE
row() {
	[ -n "${XPROC_RESULTS:-}" ] || return 0
	echo "{\"v\": $7}" | python3 "$here/results.py" add "$XPROC_RESULTS" xproc "$1" "$2" none "$3" "$4" "$5=v:$6"
}

echo "# gpuos cross-process bench, $(date -u +%Y-%m-%dT%H:%MZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
echo "# gpu-null, $warps service warps; $per client threads per process, $iters NOPs each"
sh scripts/mps-start.sh > /dev/null || exit 1

# Baselines: a client kernel in the runtime's own process.
base_rtt=$("$g" bench --device gpu-null --warps "$warps" --threads 1 --iters 20000 --op nop --json | json '["lat_median_us"]')
declare -A base_rate
for p in 1 4 16; do
	t=$((p * per))
	base_rate[$p]=$("$g" bench --device gpu-null --warps "$warps" --mbox-slots $((t > 1024 ? t : 1024)) --threads $t \
		--iters "$iters" --op nop --json | json '["requests_per_s"]')
done

# The service, with 16 GPU client areas.
"$g" boot --device gpu-null --socket "$tmp/s.sock" --warps "$warps" --gpu-clients 16 --gpu-client-mib 2 \
	> "$tmp/svc.out" 2> "$tmp/svc.err" &
svc=$!
for i in $(seq 100); do grep -q ready "$tmp/svc.out" 2>/dev/null && break; sleep 0.2; done
grep -q ready "$tmp/svc.out" || { cat "$tmp/svc.err"; exit 1; }

"$xc" --socket "$tmp/s.sock" --mode rtt --iters 20000 > "$tmp/rtt.json" || exit 1
x_rtt=$(json '["p50_ns"] / 1000' < "$tmp/rtt.json")
x_p99=$(json '["p99_ns"] / 1000' < "$tmp/rtt.json")
printf "round trip, one thread, NOP:  other process %.2f us median (p99 %.2f)  runtime's own process %.2f us  ratio %.2f\n" \
	"$x_rtt" "$x_p99" "$base_rtt" "$(python3 -c "print($x_rtt / $base_rtt)")"
row rtt-in-process "a client kernel in the runtime's process" - \
	"gpuos bench --device gpu-null --warps $warps --threads 1 --iters 20000 --op nop" round_trip_us us "$base_rtt"
row rtt-other-process "a kernel of another process (bench/xproc_client.cu)" rtt-in-process \
	"xproc-client --mode rtt --iters 20000 (gpuos boot --device gpu-null --warps $warps --gpu-clients 16)" \
	round_trip_us us "$x_rtt"

for p in 1 4 16; do
	rm -f "$tmp/go" "$tmp"/r.*
	pids=
	for i in $(seq "$p"); do
		"$xc" --socket "$tmp/s.sock" --mode rate --threads "$per" --iters "$iters" --go "$tmp/go" > "$tmp/r.$i" &
		pids="$pids $!"
	done
	sleep $((1 + p / 4))
	touch "$tmp/go"
	ok=0
	for q in $pids; do wait $q || ok=1; done
	[ $ok -eq 0 ] || { echo "a client process failed:"; cat "$tmp"/r.*; exit 1; }
	# Requests of all processes over the time from the first start to the last end.
	agg=$(cat "$tmp"/r.* | python3 -c "
import json, sys
r = [json.loads(l) for l in sys.stdin if l.strip()]
print(sum(x['requests'] for x in r) / (max(x['t_end'] for x in r) - min(x['t_start'] for x in r)))")
	printf "NOPs/s, %2d processes x %d threads: %10.0f   runtime's own process, %5d threads: %10.0f  ratio %.2f\n" \
		"$p" "$per" "$agg" $((p * per)) "${base_rate[$p]}" "$(python3 -c "print($agg / ${base_rate[$p]})")"
	row "in-process-$((p * per))-threads" "a client kernel in the runtime's process" - \
		"gpuos bench --device gpu-null --warps $warps --threads $((p * per)) --iters $iters --op nop" \
		requests_per_s NOPs/s "${base_rate[$p]}"
	row "$p-processes" "kernels of $p other processes, $per threads each" "in-process-$((p * per))-threads" \
		"xproc-client --mode rate --threads $per --iters $iters, $p at once" requests_per_s NOPs/s "$agg"
done

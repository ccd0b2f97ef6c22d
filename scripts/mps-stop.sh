#!/bin/sh
# SPDX-License-Identifier: MIT
# Stop the CUDA MPS daemon that scripts/mps-start.sh started. Stop gpuos
# services and their GPU clients first: the daemon ends once its clients
# have. Exits 0 when none runs.
#
#   scripts/mps-stop.sh [PIPE_DIR]
set -eu

pipe=${1:-${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}}
export CUDA_MPS_PIPE_DIRECTORY="$pipe"
if [ ! -e "$pipe/control" ]; then
	echo "mps-stop: no MPS daemon at $pipe"
	exit 0
fi
command -v nvidia-cuda-mps-control > /dev/null 2>&1 || {
	echo "mps-stop: nvidia-cuda-mps-control is missing" >&2
	exit 1
}
answers() { echo get_default_active_thread_percentage | timeout 5 nvidia-cuda-mps-control > /dev/null 2>&1; }
if ! answers; then
	echo "mps-stop: no MPS daemon answers at $pipe"
	exit 0
fi
echo quit | nvidia-cuda-mps-control
# The daemon may leave its control endpoint behind: wait until it answers no more.
i=0
while answers && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
if answers; then
	echo "mps-stop: the daemon at $pipe has not ended yet (clients still running?)" >&2
	exit 1
fi
echo "mps-stop: MPS stopped"

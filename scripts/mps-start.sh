#!/bin/sh
# SPDX-License-Identifier: MIT
# Start CUDA MPS (the Multi-Process Service) so that kernels of other
# processes run beside gpuos's persistent runtime kernel: without it they
# never start (docs/platform.md). Start it before `gpuos boot`: the runtime's
# context must be an MPS client too, and `gpuos boot` says whether it is.
#
#   scripts/mps-start.sh [PIPE_DIR [LOG_DIR]]
#
# PIPE_DIR defaults to $CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps (where
# CUDA looks when the variable is unset); LOG_DIR to
# $CUDA_MPS_LOG_DIRECTORY, else /tmp/nvidia-log. Every process that is to
# share the GPU needs the same CUDA_MPS_PIPE_DIRECTORY. Exits 0 when a daemon
# already answers there.
set -eu

pipe=${1:-${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}}
log=${2:-${CUDA_MPS_LOG_DIRECTORY:-/tmp/nvidia-log}}
command -v nvidia-cuda-mps-control > /dev/null 2>&1 || {
	echo "mps-start: nvidia-cuda-mps-control is missing (it comes with the NVIDIA driver)" >&2
	exit 1
}
export CUDA_MPS_PIPE_DIRECTORY="$pipe" CUDA_MPS_LOG_DIRECTORY="$log"
# A daemon that answers: nothing to do.
if [ -e "$pipe/control" ] && echo get_default_active_thread_percentage | nvidia-cuda-mps-control > /dev/null 2>&1; then
	echo "mps-start: MPS already runs (pipe directory $pipe)"
	exit 0
fi
mkdir -p "$pipe" "$log"
nvidia-cuda-mps-control -d
# The daemon creates its control endpoint a moment after it forks.
i=0
while [ ! -e "$pipe/control" ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ -e "$pipe/control" ] || {
	echo "mps-start: the daemon made no $pipe/control (see $log/control.log)" >&2
	exit 1
}
echo "mps-start: MPS runs (pipe directory $pipe, logs in $log); now boot gpuos"

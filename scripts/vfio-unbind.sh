#!/bin/sh
# SPDX-License-Identifier: MIT
# Give NVMe controllers back to the kernel's driver after gpuos: clear the
# driver_override that scripts/vfio-bind.sh (or gpuos itself) set, unbind
# from vfio-pci / uio_pci_generic and let the kernel probe again (nvme takes
# it when loaded). POSIX sh, busybox-friendly.
#
#   scripts/vfio-unbind.sh [--force] DDDD:BB:DD.F...
#
# Refuses, unless --force, a controller that a process still holds through
# its vfio group, uio node or BAR mapping (a running gpuos, SPDK, a VM):
# unbinding under it would block or pull the device away. Needs root.
set -eu

force=0
prog=vfio-unbind
usage_args="[--force] DDDD:BB:DD.F..."
takes_uio=0
# shellcheck source=scripts/vfio-lib.sh
. "$(dirname "$0")/vfio-lib.sh"
read_args "$@"

rc=0
for bdf in $devs; do
	find_ctrl "$bdf"
	case "$cur" in
	vfio-pci | uio_pci_generic) ;;
	*)
		echo "$bdf: not bound to vfio-pci or uio_pci_generic (driver: ${cur:-none}); nothing to do"
		continue
		;;
	esac
	if [ $force -eq 0 ]; then
		node=$(node_of "$bdf" "$cur")
		who=$(user_of "${node:-/nonexistent}" "$bdf")
		if [ -n "$who" ]; then
			echo "vfio-unbind: $bdf: in use by $who through $cur; refusing (stop it first, or --force)" >&2
			rc=1
			continue
		fi
	fi
	rebind ""
	if [ -n "$now" ]; then
		echo "$bdf: unbound from $cur, now bound to $now"
	else
		echo "$bdf: unbound from $cur, now without a driver"
	fi
done
exit $rc

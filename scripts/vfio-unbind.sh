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
usage() {
	echo "usage: $0 [--force] DDDD:BB:DD.F..." >&2
	exit 2
}
die() {
	echo "vfio-unbind: $*" >&2
	exit 1
}
[ $# -gt 0 ] || usage
devs=""
for a in "$@"; do
	case "$a" in
	--force) force=1 ;;
	-*) usage ;;
	*) devs="$devs $a" ;;
	esac
done
[ -n "$devs" ] || usage
[ "$(id -u)" -eq 0 ] || die "binding drivers needs root"

user_of() { # a process holding node $1 or mapping BARs of controller $2
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = "$$" ] && continue
		for f in "$p"/fd/*; do
			[ "$(readlink "$f" 2>/dev/null)" = "$1" ] && { echo "process ${p#/proc/} ($(cat "$p/comm" 2>/dev/null))"; return; }
		done
		if grep -q "/$2/resource" "$p/maps" 2>/dev/null; then
			echo "process ${p#/proc/} ($(cat "$p/comm" 2>/dev/null))"
			return
		fi
	done
	return 0
}

rc=0
for bdf in $devs; do
	case "$bdf" in ????:??:??.?) ;; ??:??.?) bdf="0000:$bdf" ;; *) die "$bdf: expected DDDD:BB:DD.F" ;; esac
	bdf=$(echo "$bdf" | tr 'A-F' 'a-f')
	dev=/sys/bus/pci/devices/$bdf
	[ -e "$dev" ] || die "$bdf: no such PCI device"
	cur=""
	[ -e "$dev/driver" ] && cur=$(basename "$(readlink "$dev/driver")")
	node=""
	case "$cur" in
	vfio-pci) g=$(readlink "$dev/iommu_group" 2>/dev/null) && node="/dev/vfio/${g##*/}" ;;
	uio_pci_generic) for u in "$dev/uio/"uio*; do [ -e "$u" ] && node="/dev/${u##*/}"; done ;;
	*)
		echo "$bdf: not bound to vfio-pci or uio_pci_generic (driver: ${cur:-none}); nothing to do"
		continue
		;;
	esac
	if [ $force -eq 0 ]; then
		who=$(user_of "${node:-/nonexistent}" "$bdf")
		if [ -n "$who" ]; then
			echo "vfio-unbind: $bdf: in use by $who through $cur; refusing (stop it first, or --force)" >&2
			rc=1
			continue
		fi
	fi
	# An empty write clears the override, so the ordinary match applies again.
	echo > "$dev/driver_override"
	echo "$bdf" > "$dev/driver/unbind"
	echo "$bdf" > /sys/bus/pci/drivers_probe 2>/dev/null || true
	now=""
	[ -e "$dev/driver" ] && now=$(basename "$(readlink "$dev/driver")")
	if [ -n "$now" ]; then
		echo "$bdf: unbound from $cur, now bound to $now"
	else
		echo "$bdf: unbound from $cur, now without a driver"
	fi
done
exit $rc

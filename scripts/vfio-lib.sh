# SPDX-License-Identifier: MIT
# What scripts/vfio-bind.sh and scripts/vfio-unbind.sh share, sourced by both
# from the folder they stand in (so the QEMU test guest needs it beside them
# in /test). POSIX sh, busybox-friendly. Before sourcing, a script sets prog
# (its name in messages), usage_args (its usage line after $0) and takes_uio
# (1 where --uio is an option); the functions hand back their results in the
# variables each one names.
# shellcheck shell=sh disable=SC2034,SC2154

usage() {
	echo "usage: $0 $usage_args" >&2
	exit 2
}

die() {
	echo "$prog: $*" >&2
	exit 1
}

# The command line: --force into $force, --uio (where taken) into $driver,
# the controllers into $devs. Then the root check both scripts need.
read_args() {
	[ $# -gt 0 ] || usage
	devs=""
	for a in "$@"; do
		case "$a" in
		--force) force=1 ;;
		--uio) [ "$takes_uio" = 1 ] || usage; driver=uio_pci_generic ;;
		-*) usage ;;
		*) devs="$devs $a" ;;
		esac
	done
	[ -n "$devs" ] || usage
	[ "$(id -u)" -eq 0 ] || die "binding drivers needs root"
}

driver_of() { # the driver that the device in sysfs folder $1 is bound to, or nothing
	[ -e "$1/driver" ] && basename "$(readlink "$1/driver")"
	return 0
}

# Controller $1 (DDDD:BB:DD.F, or BB:DD.F in domain 0): its address in lower
# case into $bdf, its sysfs folder into $dev, its driver now into $cur.
find_ctrl() {
	case "$1" in ????:??:??.?) bdf=$1 ;; ??:??.?) bdf="0000:$1" ;; *) die "$1: expected DDDD:BB:DD.F" ;; esac
	bdf=$(echo "$bdf" | tr 'A-F' 'a-f')
	dev=/sys/bus/pci/devices/$bdf
	[ -e "$dev" ] || die "$bdf: no such PCI device"
	cur=$(driver_of "$dev")
}

node_of() { # the vfio group or uio node of controller $1 bound to driver $2
	case "$2" in
	vfio-pci) g=$(readlink "/sys/bus/pci/devices/$1/iommu_group" 2>/dev/null) && echo "/dev/vfio/${g##*/}" ;;
	uio_pci_generic) for u in "/sys/bus/pci/devices/$1/uio/"uio*; do [ -e "$u" ] && echo "/dev/${u##*/}"; done ;;
	esac
	return 0
}

# A process holding node $1 (or mapping BAR files of controller $2).
user_of() {
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

# Hand controller $bdf (found by find_ctrl) to driver $1, or with $1 empty
# clear the override so that the ordinary match applies again: take it from
# its driver, let the kernel probe, and say in $now which driver took it.
rebind() {
	echo "$1" > "$dev/driver_override"
	[ -z "$cur" ] || echo "$bdf" > "$dev/driver/unbind"
	echo "$bdf" > /sys/bus/pci/drivers_probe 2>/dev/null || true
	now=$(driver_of "$dev")
}

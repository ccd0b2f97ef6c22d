#!/bin/sh
# SPDX-License-Identifier: MIT
# Hand NVMe controllers to vfio-pci (or, with --uio, uio_pci_generic) so
# that gpuos can drive them as pci:DDDD:BB:DD.F. POSIX sh: it also runs
# under busybox inside the QEMU test guest.
#
#   scripts/vfio-bind.sh [--uio] [--force] DDDD:BB:DD.F...
#
# Refuses (docs/hardware.md; the same checks as boot/pci/pci_sysfs.c), unless
# --force, a controller one of whose namespaces or partitions is mounted (the
# root file system included), used as swap, held by device mapper, LVM or RAID,
# or whose vfio/uio node another process holds. A controller bound to the
# kernel's nvme driver with none of that in use is taken from it: that is what
# this script is for; it names the namespaces that go away.
# scripts/vfio-unbind.sh gives the controller back. Needs root. Exit 0 when
# every device is bound.
set -eu

driver=vfio-pci
force=0
prog=vfio-bind
usage_args="[--uio] [--force] DDDD:BB:DD.F..."
takes_uio=1
# shellcheck source=scripts/vfio-lib.sh
. "$(dirname "$0")/vfio-lib.sh"
read_args "$@"

# Is /sys/block/$1 a namespace of controller $2 (directly, or the namespace
# head of an NVMe subsystem one of whose controllers it is)?
disk_of() {
	real=$(realpath "/sys/block/$1" 2>/dev/null) || return 1
	case "$real/" in */"$2"/*) return 0 ;; esac
	case "$real" in
	*/nvme-subsystem/*)
		sub=${real%/*}
		for c in "$sub"/nvme*; do
			case "${c##*/}" in nvme*n*) continue ;; esac
			case "$(realpath "$c" 2>/dev/null)/" in */"$2"/*) return 0 ;; esac
		done
		;;
	esac
	return 1
}

# Namespaces and partitions of controller $1: "name sysdir" lines.
blockdevs() {
	for d in /sys/block/*; do
		n=${d##*/}
		disk_of "$n" "$1" || continue
		echo "$n $n"
		for p in "$d/$n"*; do
			[ -e "$p/partition" ] && echo "${p##*/} $n/${p##*/}"
		done
	done
	return 0
}

# One line saying why controller $1 is in use, or nothing.
in_use() {
	blockdevs "$1" | while read -r name sys; do
		devno=$(cat "/sys/block/$sys/dev")
		# mountinfo: id parent maj:min root mountpoint ... - fstype source ...
		m=$(awk -v d="$devno" -v s="/dev/$name" '{src=""; for (i = 7; i < NF; i++) if ($i == "-") { src = $(i + 2); break }
			if ($3 == d || src == s) { print $5; exit }}' /proc/self/mountinfo)
		if [ -n "$m" ]; then
			[ "$m" = / ] && echo "$name is mounted at / (the root file system)" || echo "$name is mounted at $m"
			return
		fi
		if awk -v s="/dev/$name" '$1 == s { f = 1 } END { exit !f }' /proc/swaps; then
			echo "$name is in use as swap"
			return
		fi
		for h in "/sys/block/$sys/holders/"*; do
			[ -e "$h" ] && { echo "$name is held by ${h##*/} (device mapper, LVM or RAID)"; return; }
		done
	done
	return 0 # a status here would end the script under set -e in $(in_use)
}

rc=0
for bdf in $devs; do
	find_ctrl "$bdf"
	class=$(cat "$dev/class")
	if [ "$class" != 0x010802 ] && [ $force -eq 0 ]; then
		die "$bdf is not an NVMe controller (class $class); --force binds it anyway"
	fi
	if [ "$cur" = "$driver" ]; then
		echo "$bdf: already bound to $driver"
		continue
	fi
	if [ $force -eq 0 ]; then
		why=$(in_use "$bdf")
		if [ -z "$why" ] && { [ "$cur" = vfio-pci ] || [ "$cur" = uio_pci_generic ]; }; then
			node=$(node_of "$bdf" "$cur")
			who=$(user_of "${node:-/nonexistent}" "$bdf")
			[ -n "$who" ] && why="it is in use by $who through $cur"
		fi
		if [ -n "$why" ]; then
			echo "vfio-bind: $bdf: $why; refusing (--force overrides)" >&2
			rc=1
			continue
		fi
	fi
	[ -d "/sys/bus/pci/drivers/$driver" ] || modprobe "$driver" 2>/dev/null ||
		die "the $driver driver is not loaded and modprobe $driver failed"
	# gpuos uses the type1 IOMMU backend, which vfio-pci does not pull in.
	if [ "$driver" = vfio-pci ] && [ ! -d /sys/module/vfio_iommu_type1 ]; then
		modprobe vfio_iommu_type1 2>/dev/null || die "modprobe vfio_iommu_type1 failed"
	fi
	nss=$(blockdevs "$bdf" | awk '$1 == $2 { printf "%s%s", sep, $1; sep = ", " }')
	rebind "$driver"
	if [ "$now" != "$driver" ]; then
		echo "vfio-bind: $bdf: $driver did not take it (dmesg says why)" >&2
		rc=1
		continue
	fi
	msg="$bdf: bound to $driver"
	[ -n "$cur" ] && msg="$msg (was $cur${nss:+, serving $nss})"
	[ "$driver" = vfio-pci ] && msg="$msg, IOMMU group $(node_of "$bdf" vfio-pci)"
	echo "$msg"
done
exit $rc

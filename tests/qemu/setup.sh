#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The guest pieces for tests/qemu, from Debian's packages, cached under
# BUILD/qemu/kernel so that a second run starts at once:
#   vmlinuz     the distribution kernel (linux-image-amd64's current image)
#   base.cpio.gz busybox-static, the modules the tests load (vfio-pci,
#               vfio_iommu_type1, uio_pci_generic, nvme, minix and what they
#               need), modules.dep for busybox modprobe
# Usage: tests/qemu/setup.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
cache=$build/qemu/kernel
# nvme-core needs t10-pi, whose CRCs the crypto API loads on demand (through
# /sbin/modprobe, which /init provides): the generic ones are carried along.
mods=(vfio-pci vfio_iommu_type1 uio_pci_generic nvme minix crc64_rocksoft_generic crct10dif_generic)
stamp="$cache/stamp"
want_stamp="v3 ${mods[*]}"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ] && [ -f "$cache/vmlinuz" ] && [ -f "$cache/base.cpio.gz" ]; then
	exit 0
fi
for t in apt-get dpkg-deb depmod modprobe cpio gzip busybox; do
	command -v "$t" >/dev/null || { echo "tests/qemu/setup.sh: $t is missing (make deps)" >&2; exit 1; }
done
bb=$(command -v busybox)
if ! file -L "$bb" 2>/dev/null | grep -q 'statically linked' && ! ldd "$bb" 2>&1 | grep -q 'not a dynamic'; then
	echo "tests/qemu/setup.sh: $bb is not static (install busybox-static)" >&2
	exit 1
fi

rm -rf "$cache"
mkdir -p "$cache/dl"
cache=$(cd "$cache" && pwd) # modprobe -d prints absolute paths
# The image package the metapackage points at, e.g. linux-image-6.1.0-56-amd64.
pkg() { apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }'; }
p=$(pkg)
if [ -z "$p" ]; then
	apt-get update -qq >/dev/null 2>&1 || true
	p=$(pkg)
fi
[ -n "$p" ] || { echo "tests/qemu/setup.sh: apt knows no linux-image-amd64 (apt-get update?)" >&2; exit 1; }
echo "  QEMU    fetching $p (Debian's kernel for the guest)" >&2
fetch() { (cd "$cache/dl" && apt-get download -qq "$p" >/dev/null 2>&1) || return 1; }
# Stale package lists name versions the archive no longer has: refresh once.
fetch || { apt-get update -qq >/dev/null 2>&1 || true; fetch || true; }
deb=$(ls "$cache"/dl/"$p"_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { echo "tests/qemu/setup.sh: apt-get download $p failed" >&2; exit 1; }

x=$cache/x
mkdir -p "$x"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$x" --wildcards './boot/vmlinuz-*' './lib/modules/*/modules.*' \
	'./lib/modules/*/kernel/drivers/vfio/*' './lib/modules/*/kernel/drivers/uio/*' \
	'./lib/modules/*/kernel/drivers/nvme/*' './lib/modules/*/kernel/fs/minix/*' \
	'./lib/modules/*/kernel/lib/*' './lib/modules/*/kernel/crypto/*' './lib/modules/*/kernel/drivers/pci/*' \
	'./lib/modules/*/kernel/virt/*' './lib/modules/*/kernel/block/*' 2>/dev/null || true
kver=$(ls "$x/lib/modules" | head -1)
if [ -z "$kver" ] || [ ! -f "$x/boot/vmlinuz-$kver" ]; then
	echo "tests/qemu/setup.sh: $deb holds no kernel" >&2
	exit 1
fi
depmod -b "$x" "$kver"

root=$cache/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,mnt,run} "$root/lib/modules/$kver"
ln -s bin "$root/sbin"
cp "$bb" "$root/bin/busybox"
for m in "${mods[@]}"; do
	modprobe -d "$x" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
done | sort -u | while read -r ko; do
	rel=${ko#"$x"/lib/modules/"$kver"/}
	mkdir -p "$root/lib/modules/$kver/$(dirname "$rel")"
	cp "$ko" "$root/lib/modules/$kver/$rel"
done
cp "$x/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$root/lib/modules/$kver/" 2>/dev/null || true
depmod -b "$root" "$kver"
nko=$(find "$root/lib/modules" -name '*.ko*' | wc -l)
cp "$x/boot/vmlinuz-$kver" "$cache/vmlinuz"
(cd "$root" && find . | cpio -o -H newc --owner=0:0 --quiet | gzip -6) > "$cache/base.cpio.gz"
echo "$kver" > "$cache/kver"
rm -rf "$x" "$cache/dl" "$root"
echo "$want_stamp" > "$stamp"
echo "  QEMU    guest kernel $kver, $nko modules, base initramfs $(du -k "$cache/base.cpio.gz" | cut -f1) KiB" >&2

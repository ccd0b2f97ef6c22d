#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write a GUID partition table onto an image, for machines without sgdisk
(the GPU machine: tests/tools/files_images.sh builds its images there).
UEFI 2.x, chapter 5: a protective MBR at LBA 0, the primary header at LBA 1
and its 128 entries of 128 bytes from LBA 2, the backup entries and header
at the end; 512-byte LBAs; CRC32 over the entries and over each header.

  gpt_write.py IMAGE FIRST:LAST [FIRST:LAST...]

Each partition a Linux file system (8300) from LBA FIRST to LAST, both
included; the image's size is the disk's. Partition GUIDs come from the
partition's place, so the same command writes the same bytes."""
import struct
import sys
import uuid
import zlib

LBA = 512
LINUX_FS = uuid.UUID("0FC63DAF-8483-4772-8E79-3D69D8477DE4")
ENTRIES, ENTRY_BYTES = 128, 128
ENTRY_LBAS = ENTRIES * ENTRY_BYTES // LBA


def header(my, alt, first, last, disk, entries_lba, entries_crc):
    h = struct.pack("<8sIIIIQQQQ16sQIII", b"EFI PART", 0x00010000, 92, 0, 0, my, alt, first, last, disk,
                    entries_lba, ENTRIES, ENTRY_BYTES, entries_crc)
    h = h[:16] + struct.pack("<I", zlib.crc32(h) & 0xffffffff) + h[20:]
    return h + bytes(LBA - len(h))


def main():
    path, parts = sys.argv[1], [tuple(int(x) for x in a.split(":")) for a in sys.argv[2:]]
    with open(path, "r+b") as f:
        f.seek(0, 2)
        total = f.tell() // LBA
        first, last = 2 + ENTRY_LBAS, total - 2 - ENTRY_LBAS
        for a, b in parts:
            if not first <= a <= b <= last:
                sys.exit("gpt_write.py: %d:%d is outside the usable LBAs %d to %d" % (a, b, first, last))
        table = bytearray(ENTRIES * ENTRY_BYTES)
        for i, (a, b) in enumerate(parts):
            unique = uuid.uuid5(uuid.NAMESPACE_OID, "gpuos-test-%d-%d-%d" % (i, a, b))
            table[i * ENTRY_BYTES:(i + 1) * ENTRY_BYTES] = struct.pack(
                "<16s16sQQQ72s", LINUX_FS.bytes_le, unique.bytes_le, a, b, 0, bytes(72))
        crc = zlib.crc32(table) & 0xffffffff
        disk = uuid.uuid5(uuid.NAMESPACE_OID, "gpuos-test-disk-%d" % total).bytes_le
        # protective MBR: one partition of type 0xEE over the whole disk
        mbr = bytearray(LBA)
        mbr[446:462] = struct.pack("<B3sB3sII", 0, b"\x00\x02\x00", 0xEE, b"\xff\xff\xff", 1,
                                   min(total - 1, 0xffffffff))
        mbr[510:512] = b"\x55\xaa"
        f.seek(0)
        f.write(mbr)
        f.write(header(1, total - 1, first, last, disk, 2, crc))
        f.write(table)
        f.seek((total - 1 - ENTRY_LBAS) * LBA)
        f.write(table)
        f.write(header(total - 1, 1, first, last, disk, total - 1 - ENTRY_LBAS, crc))


if __name__ == "__main__":
    main()

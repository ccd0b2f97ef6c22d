#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Disks for `gpuos parts` and what its listing must say (tests/emu/files.sh).

  parts_oracle.py gpt OUT.img FS_A FS_B   a GPT disk made by sgdisk from RECIPE
                                          below, FS_A and FS_B (ext4 images of
                                          at most 8 and 1 MiB) written into
                                          partitions 2 and 6; OUT.img.recipe
                                          keeps what it was made with
  parts_oracle.py mbr OUT.img             a plain MBR disk (written here: sgdisk
                                          writes GPTs), its recipe beside it
  parts_oracle.py check OUT.img JSON [backup]
                                          `gpuos parts --json` of OUT.img against
                                          its recipe and, for a GPT, sgdisk -p/-i
                                          (LBAs, GUIDs, attributes, the header;
                                          with backup: read from the backup header
                                          at the last LBA)

The expected answers come from the recipe (names, types, attributes, which
partitions got ext4) and from sgdisk reading the image; never from gpuos.
"""
import json
import os
import re
import struct
import subprocess
import sys

SECTORS = 16 << 11  # 16 MiB of 512-byte LBAs
# number, sgdisk type code, type GUID, sgdisk's name of the type, partition
# name, attribute bits, first LBA, size in LBAs (entries 3 and 4 stay empty)
RECIPE = [
    (1, "ef00", "C12A7328-F81F-11D2-BA4B-00A0C93EC93B", "EFI system partition", "EFI system", [0], 34, 2014),
    (2, "8300", "0FC63DAF-8483-4772-8E79-3D69D8477DE4", "Linux filesystem", "a\tb\\c\x1b[31m", [], 2081, 8 << 11),
    (5, "8300", "0FC63DAF-8483-4772-8E79-3D69D8477DE4", "Linux filesystem", "\u6f22" * 36, [2], 20000, 2048),
    (6, "0700", "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7", "Microsoft basic data", "d\u00fc\U0001f600x", [60, 63], 22528, 2048),
    (7, "8200", "0657FD6D-A4AB-43C4-84E5-0933C84B4F4F", "Linux swap", "", [], 24576, 1024),
    (8, "12345678-9ABC-DEF0-1234-56789ABCDEF0", "12345678-9ABC-DEF0-1234-56789ABCDEF0", None, "custom", [], 25600, 100),
]
EXT4 = {2, 6}  # the partitions that get FS_A and FS_B
GPT_ATTR = {0: "required", 1: "no_block_io", 2: "legacy_bios_bootable"}
# MBR: record index (0-based), type, bootable, start, count; record 2 stays empty
MBR = [(0, 0x83, True, 2048, 4096), (1, 0x07, False, 8192, 2048), (3, 0x0c, False, 12000, 100)]
MBR_NAMES = {0x83: "Linux", 0x07: "HPFS/NTFS/exFAT", 0x0c: "W95 FAT32 (LBA)"}


def sh(args):
    return subprocess.run(args, check=True, capture_output=True).stdout.decode("utf-8", "surrogateescape")


def make_gpt(out, fs_a, fs_b):
    with open(out, "wb") as f:
        f.truncate(SECTORS * 512)
    args = ["sgdisk", "-o", "-a", "1"]
    for n, code, _, _, name, attrs, first, count in RECIPE:
        args += ["-n", "%d:%d:%d" % (n, first, first + count - 1), "-t", "%d:%s" % (n, code), "-c", "%d:%s" % (n, name)]
        for b in attrs:
            args += ["-A", "%d:set:%d" % (n, b)]
    sh(args + [out])
    with open(out, "r+b") as f:
        for n, fs in ((2, fs_a), (6, fs_b)):
            first = next(r[6] for r in RECIPE if r[0] == n)
            f.seek(first * 512)
            f.write(open(fs, "rb").read())
    json.dump({"scheme": "gpt"}, open(out + ".recipe", "w"))
    return 0


def make_mbr(out):
    mbr = bytearray(512)
    for i, typ, boot, start, count in MBR:
        struct.pack_into("<B3sB3sII", mbr, 446 + 16 * i, 0x80 if boot else 0, b"\xfe\xff\xff", typ,
                         b"\xfe\xff\xff", start, count)
    mbr[510:512] = b"\x55\xaa"
    with open(out, "wb") as f:
        f.truncate(SECTORS * 512)
        f.write(mbr)
    json.dump({"scheme": "mbr"}, open(out + ".recipe", "w"))
    return 0


def sgdisk_table(img):
    """What sgdisk reads in the image: the header and every partition."""
    p = sh(["sgdisk", "-p", img])
    t = {"disk_guid": re.search(r"^Disk identifier \(GUID\): (\S+)", p, re.M).group(1),
         "entries": int(re.search(r"holds up to (\d+) entries", p).group(1))}
    m = re.search(r"First usable sector is (\d+), last usable sector is (\d+)", p)
    t["first_usable_lba"], t["last_usable_lba"] = int(m.group(1)), int(m.group(2))
    t["parts"] = {}
    for n in re.findall(r"^\s+(\d+)\s+\d+\s+\d+", p, re.M):
        i = sh(["sgdisk", "-i", n, img])
        field = lambda k: re.search(r"^%s: (\S+)" % k, i, re.M).group(1)
        t["parts"][int(n)] = {"type_guid": field("Partition GUID code"), "unique_guid": field("Partition unique GUID"),
                              "first_lba": int(field("First sector")), "last_lba": int(field("Last sector")),
                              "attributes": int(field("Attribute flags"), 16)}
    return t


def check(img, out, backup=False):
    errs = []

    def want(what, got, exp):
        if got != exp:
            errs.append("%s: %r, wanted %r" % (what, got, exp))

    j = json.load(open(out))
    scheme = json.load(open(img + ".recipe"))["scheme"]
    want("scheme", j["scheme"], scheme)
    want("lba_bytes", j["lba_bytes"], 512)
    want("disk_lbas", j["disk_lbas"], os.path.getsize(img) // 512)
    got = {p["number"]: p for p in j["partitions"]}
    if scheme == "gpt":
        t = sgdisk_table(img)
        for k in ("disk_guid", "entries", "first_usable_lba", "last_usable_lba"):
            want(k, j[k], t[k])
        want("header_lba", j["header_lba"], j["disk_lbas"] - 1 if backup else 1)
        want("backup_used", j["backup_used"], backup)
        want("numbers", sorted(got), sorted(t["parts"]))
        want("numbers (recipe)", sorted(got), [r[0] for r in RECIPE])
        for n, code, guid, tname, name, attrs, first, count in RECIPE:
            p, s = got.get(n, {}), t["parts"].get(n, {})
            for k in ("type_guid", "unique_guid", "first_lba", "last_lba", "attributes"):
                want("partition %d %s (sgdisk)" % (n, k), p.get(k), s.get(k))
            want("partition %d first/last (recipe)" % n, (p.get("first_lba"), p.get("last_lba")), (first, first + count - 1))
            want("partition %d bytes" % n, p.get("bytes"), count * 512)
            want("partition %d type_guid (recipe)" % n, p.get("type_guid"), guid)
            want("partition %d type_name" % n, p.get("type_name"), tname)
            want("partition %d name" % n, p.get("name"), name)
            want("partition %d attributes (recipe)" % n, p.get("attributes"), sum(1 << b for b in attrs))
            want("partition %d attribute_names" % n, p.get("attribute_names"),
                 [GPT_ATTR.get(b, "bit %d" % b) for b in attrs])
            want("partition %d ext4" % n, p.get("ext4"), n in EXT4)
            want("partition %d files" % n, p.get("files"), n == min(EXT4))
            want("partition %d mbr_type" % n, p.get("mbr_type"), None)
    else:
        want("numbers", sorted(got), [r[0] + 1 for r in MBR])
        for i, typ, boot, start, count in MBR:
            p = got.get(i + 1, {})
            want("partition %d first/last" % (i + 1), (p.get("first_lba"), p.get("last_lba")), (start, start + count - 1))
            want("partition %d mbr_type" % (i + 1), p.get("mbr_type"), typ)
            want("partition %d type_name" % (i + 1), p.get("type_name"), MBR_NAMES[typ])
            want("partition %d active" % (i + 1), p.get("attribute_names"), ["active"] if boot else [])
            want("partition %d type_guid" % (i + 1), p.get("type_guid"), None)
            want("partition %d ext4" % (i + 1), p.get("ext4"), False)
    for e in errs[:12]:
        print("       " + e)
    return 1 if errs else 0


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["gpt"] and len(a) == 4:
        sys.exit(make_gpt(*a[1:]))
    if a[:1] == ["mbr"] and len(a) == 2:
        sys.exit(make_mbr(a[1]))
    if a[:1] == ["check"] and len(a) in (3, 4) and a[3:] in ([], ["backup"]):
        sys.exit(check(a[1], a[2], a[3:] == ["backup"]))
    sys.exit(__doc__)

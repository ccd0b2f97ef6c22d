/* SPDX-License-Identifier: MIT */
/*
 * runtime/gpt.h - partition tables, parsed where the runtime runs: the GUID
 * Partition Table (UEFI 2.10 section 5.3) behind its protective MBR (5.2.3),
 * and, when sector 0 holds a plain MBR (5.2.1) instead, its four primary
 * partitions.
 *
 *   LBA 0            protective MBR: one record of OSType 0xEE (5.2.3)
 *   LBA 1            primary GPT header (table 5-5), CRC32 over HeaderSize
 *                    bytes with the CRC field zeroed
 *   entries_lba...   the partition entry array (table 5-6), CRC32 in the header
 *   ...              usable LBAs
 *   last LBA - n     backup entry array
 *   last LBA         backup header (its my_lba is the last LBA)
 *
 * The primary is used when it is valid; otherwise the backup at the last LBA
 * (GPUOS_GPT_F_BACKUP_USED). Every field is hostile: header size, entry size
 * and count, LBAs, CRCs are checked before anything is used; the entry array
 * is read in 4 KiB chunks through the parser's buffer.
 *
 * The sector size is the caller's (512 or 4096: the namespace's LBA format).
 * The io covers the whole device from byte 0.
 */
#ifndef GPUOS_RUNTIME_GPT_H
#define GPUOS_RUNTIME_GPT_H

#include "gpuos/port.h"
#include "meta_io.h"

GPUOS_EXTERN_C_BEGIN

/* ---- on-disk layouts (little-endian; decoded with gpuos_le*() at these offsets) ---- */

#define GPUOS_GPT_SIGNATURE   0x5452415020494645ull /* "EFI PART" */
#define GPUOS_GPT_REVISION    0x00010000u           /* 1.0 */
#define GPUOS_GPT_HEADER_MIN  92u
#define GPUOS_GPT_ENTRY_MIN   128u                  /* entry size is 128 * 2^n */
#define GPUOS_GPT_ENTRY_MAX   4096u
#define GPUOS_GPT_ARRAY_MAX   (1u << 20)            /* entry array bytes we accept */
#define GPUOS_GPT_NAME_UNITS  36u                   /* UTF-16 code units of a name */
#define GPUOS_GPT_NAME_UTF8   112u                  /* a name in UTF-8: at most 3 bytes a unit, and the NUL */
#define GPUOS_GPT_BUF         4096u

/* UEFI table 5-5: GPT header. */
struct gpuos_gpt_header {
	uint64_t signature;         /* 0x00 "EFI PART" */
	uint32_t revision;          /* 0x08 */
	uint32_t header_size;       /* 0x0c 92 .. sector size */
	uint32_t header_crc32;      /* 0x10 over header_size bytes, this field zero */
	uint32_t rsvd14;            /* 0x14 */
	uint64_t my_lba;            /* 0x18 */
	uint64_t alternate_lba;     /* 0x20 */
	uint64_t first_usable_lba;  /* 0x28 */
	uint64_t last_usable_lba;   /* 0x30 inclusive */
	uint8_t disk_guid[16];      /* 0x38 */
	uint64_t entries_lba;       /* 0x48 */
	uint32_t num_entries;       /* 0x50 */
	uint32_t entry_size;        /* 0x54 */
	uint32_t entries_crc32;     /* 0x58 */
	uint32_t rsvd5c;            /* 0x5c struct padding; on disk the header is 92 bytes */
};
static_assert(sizeof(struct gpuos_gpt_header) == 96, "GPT header size");
static_assert(offsetof(struct gpuos_gpt_header, my_lba) == 0x18, "GPT my_lba");
static_assert(offsetof(struct gpuos_gpt_header, disk_guid) == 0x38, "GPT disk_guid");
static_assert(offsetof(struct gpuos_gpt_header, entries_crc32) == 0x58, "GPT entries_crc32");

/* UEFI table 5-6: partition entry (the first 128 bytes of entry_size). */
struct gpuos_gpt_entry {
	uint8_t type_guid[16];      /* 0x00 all zero: unused */
	uint8_t unique_guid[16];    /* 0x10 */
	uint64_t first_lba;         /* 0x20 */
	uint64_t last_lba;          /* 0x28 inclusive */
	uint64_t attributes;        /* 0x30 */
	uint16_t name[GPUOS_GPT_NAME_UNITS]; /* 0x38 UTF-16LE */
};
static_assert(sizeof(struct gpuos_gpt_entry) == 128, "GPT entry size");
static_assert(offsetof(struct gpuos_gpt_entry, name) == 0x38, "GPT entry name");

/* UEFI table 5-2 / 5-3: MBR partition record at 446 + 16 * i, signature at 510. */
struct gpuos_mbr_part {
	uint8_t boot_indicator;     /* 0x00 0x00 or 0x80 */
	uint8_t chs_start[3];       /* 0x01 */
	uint8_t os_type;            /* 0x04 0xEE: GPT protective */
	uint8_t chs_end[3];         /* 0x05 */
	uint32_t starting_lba;      /* 0x08 */
	uint32_t size_in_lba;       /* 0x0c */
};
static_assert(sizeof(struct gpuos_mbr_part) == 16, "MBR partition record size");
#define GPUOS_MBR_PART_OFF     446u
#define GPUOS_MBR_SIG_OFF      510u
#define GPUOS_MBR_OSTYPE_GPT   0xeeu

/* Type GUIDs as bytes on disk (the first three fields little-endian). */
#define GPUOS_GPT_GUID_LINUX_FS /* 0FC63DAF-8483-4772-8E79-3D69D8477DE4 */ \
	{ 0xaf, 0x3d, 0xc6, 0x0f, 0x83, 0x84, 0x72, 0x47, 0x8e, 0x79, 0x3d, 0x69, 0xd8, 0x47, 0x7d, 0xe4 }
#define GPUOS_GPT_GUID_ESP      /* C12A7328-F81F-11D2-BA4B-00A0C93EC93B */ \
	{ 0x28, 0x73, 0x2a, 0xc1, 0x1f, 0xf8, 0xd2, 0x11, 0xba, 0x4b, 0x00, 0xa0, 0xc9, 0x3e, 0xc9, 0x3b }
#define GPUOS_GPT_GUID_LINUX_ROOT_X86_64 /* 4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709 */ \
	{ 0xe3, 0xbc, 0x68, 0x4f, 0xcd, 0xe8, 0xb1, 0x4d, 0x96, 0xe7, 0xfb, 0xca, 0xf9, 0x84, 0xb7, 0x09 }

/* ---- results -------------------------------------------------------------------- */

/* struct gpuos_gpt.scheme */
#define GPUOS_PT_NONE 0u  /* no partition table: the whole device is one volume */
#define GPUOS_PT_GPT  1u
#define GPUOS_PT_MBR  2u  /* a plain MBR (no 0xEE record): its primary partitions */

/* struct gpuos_gpt.flags */
#define GPUOS_GPT_F_BACKUP_USED (1u << 0) /* the primary is invalid (primary_why): the backup was used */
#define GPUOS_GPT_F_BACKUP_BAD  (1u << 1) /* the primary is valid, the backup header is not (backup_why) */
#define GPUOS_GPT_F_NO_PMBR     (1u << 2) /* a GPT without a protective MBR in sector 0 */
#define GPUOS_GPT_F_HYBRID_MBR  (1u << 3) /* the MBR holds 0xEE and other records */
#define GPUOS_GPT_F_SKIPPED     (1u << 4) /* entries outside the usable LBAs were left out (n_skipped) */

struct gpuos_gpt_part {
	uint64_t first_lba;         /* 0x00 */
	uint64_t last_lba;          /* 0x08 inclusive */
	uint64_t attributes;        /* 0x10 GPT attributes; MBR: the boot indicator */
	uint8_t type_guid[16];      /* 0x18 GPT; zero for MBR */
	uint8_t unique_guid[16];    /* 0x28 GPT; zero for MBR */
	uint32_t index;             /* 0x38 entry number in the table (0-based) */
	uint8_t mbr_type;           /* 0x3c MBR os_type; 0 for GPT */
	uint8_t rsvd3d[3];          /* 0x3d */
	char name[40];              /* 0x40 the GPT name as ASCII ('?' for the rest), NUL-terminated */
	char name_utf8[GPUOS_GPT_NAME_UTF8]; /* 0x68 the GPT name in UTF-8 (U+FFFD for a lone
				     *      surrogate), NUL-terminated; empty for MBR */
};
static_assert(sizeof(struct gpuos_gpt_part) == 216, "gpt part size");
static_assert(offsetof(struct gpuos_gpt_part, name_utf8) == 0x68, "gpt part name_utf8");

struct gpuos_gpt {
	/* set by the caller before gpuos_gpt_parse */
	struct gpuos_gpt_part *parts;
	uint32_t part_cap;
	/* results */
	uint32_t scheme;            /* GPUOS_PT_* */
	uint32_t flags;             /* GPUOS_GPT_F_* */
	uint32_t sector_size;
	uint64_t disk_lbas;         /* io->size / sector_size */
	uint32_t n_parts;           /* entries filled in parts */
	uint32_t n_used;            /* partitions found (> n_parts after -ENOSPC) */
	uint32_t n_skipped;         /* used entries left out: LBAs outside the usable range */
	uint32_t n_entries;         /* GPT: entries in the array */
	uint32_t entry_size;
	uint32_t rsvd;
	uint64_t header_lba;        /* GPT: the header used (1, or the last LBA) */
	uint64_t alternate_lba;
	uint64_t first_usable_lba;
	uint64_t last_usable_lba;
	uint64_t entries_lba;
	uint8_t disk_guid[16];
	const char *primary_why;    /* why the primary was refused, or NULL */
	const char *backup_why;     /* why the backup was refused (or not checked), or NULL */
};

/* Scratch and error report; keep it in global memory on the GPU. */
struct gpuos_gpt_parser {
	const char *why;            /* static string after a failure */
	uint64_t err_lba;           /* the LBA being looked at */
	const struct gpuos_meta_io *io;
	uint8_t buf[GPUOS_GPT_BUF];
};

/*
 * Find the partition table of the device io covers. sector_size is 512 or
 * 4096. g->parts/part_cap must be set (parts may be NULL with cap 0 to learn
 * n_used). Context: one lane or one host thread; blocks in io reads.
 * Returns 0 with g->scheme GPUOS_PT_GPT, GPUOS_PT_MBR or GPUOS_PT_NONE (no
 * partition table: not an error), or
 *   -EINVAL  corrupt: a protective MBR or a GPT signature is there but neither
 *            header (with its entries) is valid; p->why, g->primary_why and
 *            g->backup_why say why; also a sector size other than 512/4096
 *   -ENOSPC  more partitions than part_cap (the first part_cap are filled,
 *            n_used says how many there are)
 *   -EIO     the io failed
 */
GPUOS_HD int gpuos_gpt_parse(struct gpuos_gpt *g, struct gpuos_gpt_parser *p,
			     const struct gpuos_meta_io *io, uint32_t sector_size);

/* Index in g->parts of the first partition at or after `from` whose type GUID
 * is guid, or -ENOENT. */
GPUOS_HD int gpuos_gpt_find_type(const struct gpuos_gpt *g, const uint8_t guid[16], uint32_t from);

/* True for the Linux filesystem data GUID 0FC63DAF-8483-4772-8E79-3D69D8477DE4. */
GPUOS_HD int gpuos_gpt_guid_is_linux_fs(const uint8_t guid[16]);

/* "0FC63DAF-8483-4772-8E79-3D69D8477DE4" (36 characters and a NUL). */
GPUOS_HD void gpuos_gpt_guid_format(const uint8_t guid[16], char out[37]);

/* Parse the text form (either case); 0 or -EINVAL. */
GPUOS_HD int gpuos_gpt_guid_parse(const char *s, uint8_t guid[16]);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_GPT_H */

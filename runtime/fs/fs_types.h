/* SPDX-License-Identifier: MIT */
/*
 * runtime/fs/fs_types.h - what every file system of the runtime hands back,
 * whatever it keeps on disk: a run of a file's blocks (the extent the
 * handles' maps and the request engine read) and a directory entry. The
 * file systems behind runtime/fs/fs.h write these; nothing here knows one
 * of them.
 *
 * Units: a file system's block (1 << block_bits bytes, struct gpuos_fs),
 * counted from its byte 0: a file's byte off lies in logical block
 * off >> block_bits, and physical block p at device byte
 * base + (p << block_bits), base being where the file system starts.
 */
#ifndef GPUOS_RUNTIME_FS_TYPES_H
#define GPUOS_RUNTIME_FS_TYPES_H

#include "gpuos/port.h"

GPUOS_EXTERN_C_BEGIN

#define GPUOS_FS_NAME_MAX 255u          /* bytes of a file name */

/* struct gpuos_fs_extent.flags (and a block map's run) */
#define GPUOS_FS_EXT_HOLE      (1u << 0) /* no block: reads as zeros */
#define GPUOS_FS_EXT_UNWRITTEN (1u << 1) /* allocated, not written: reads as zeros */

/* gpuos_fs_extents(): *next when nothing follows. */
#define GPUOS_FS_EXTENTS_END UINT64_MAX

/* A run of logical blocks mapped to consecutive physical blocks. Its size
 * is the ABI's (GPUOS_RT_EXTENT_BYTES): boot sizes the extent pool by it. */
struct gpuos_fs_extent {
	uint64_t lblk;         /* 0x00 first logical block (file offset >> block_bits) */
	uint64_t pblk;         /* 0x08 first physical block (from the file system's byte 0) */
	uint32_t len;          /* 0x10 blocks */
	uint32_t flags;        /* 0x14 GPUOS_FS_EXT_UNWRITTEN or 0 (holes are not listed) */
};
static_assert(sizeof(struct gpuos_fs_extent) == 24, "fs extent size");
static_assert(offsetof(struct gpuos_fs_extent, flags) == 0x14, "fs extent flags");

/* A directory entry. */
struct gpuos_fs_dirent {
	uint32_t ino;          /* 0x00 */
	uint8_t type;          /* 0x04 enum gpuos_ftype (abi.h); UNKNOWN where the disk does not say */
	uint8_t name_len;      /* 0x05 1..255 */
	uint16_t rsvd6;        /* 0x06 */
	char name[GPUOS_FS_NAME_MAX + 1]; /* 0x08 NUL-terminated */
};
static_assert(sizeof(struct gpuos_fs_dirent) == 264, "fs dirent size");
static_assert(offsetof(struct gpuos_fs_dirent, name) == 8, "fs dirent name");

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_FS_TYPES_H */

/* SPDX-License-Identifier: MIT */
/*
 * gpuos/abi.h - the mailbox ABI between clients (GPU app threads, host
 * tools) and the runtime, and the device-memory layouts boot/ hands to the
 * runtime. Versioned: GPUOS_ABI_VERSION changes whenever a layout or a
 * meaning here changes; app images carry it in the gpuos_abi_version symbol (gpuos/app.h).
 *
 * Mailbox protocol (one slot, multi-producer, one consumer at a time):
 *
 *   state   FREE --client CAS--> CLAIMED --client release--> POSTED
 *           POSTED --runtime--> TAKEN --runtime release--> DONE
 *           DONE --client release--> FREE
 *
 * - A client reserves a slot by CAS FREE->CLAIMED on its state. A GPU thread
 *   tries its home slot first (gpuos.h: from its place in the grid, each
 *   thread its own while there are no more threads than slots); otherwise,
 *   or when that one is taken, a fetch_add on `ticket` (spreads thousands of
 *   threads over the slots) picks where to probe; after probing
 *   GPUOS_MBOX_PROBE slots without success it gives up with GPUOS_ST_FULL
 *   (backpressure; nothing is dropped or overwritten). Which slot a client
 *   takes is its own affair: the runtime only reads the rings.
 * - The client writes the request fields and state = POSTED, then takes a
 *   position in its partition's ring (fetch_add on `posted`) and writes the
 *   slot number, tagged with the ring lap, into that ring entry with release
 *   semantics (system scope unless GPUOS_MBOX_F_DEVICE). The owning service
 *   warp reads new ring entries with acquire (pairs with that release): its
 *   intake costs one load per new request, never a scan of idle slots.
 * - The runtime reads the request, and later writes status/result fields,
 *   then stores state = DONE with release (pairs with the client's acquire
 *   load of state).
 *   If `batch` is non-zero it then adds 1 to that 32-bit counter (system-scope
 *   atomic after the DONE release), so a warp or block that posted many waits
 *   on one word.
 * - The client loads state with acquire until DONE, reads the results, and
 *   releases the slot with a release store of FREE.
 *
 * All pointers in requests are in the runtime's address space: device
 * pointers when the runtime runs on the GPU, host pointers in host mode.
 */
#ifndef GPUOS_ABI_H
#define GPUOS_ABI_H

#include "gpuos/port.h"

GPUOS_EXTERN_C_BEGIN

#define GPUOS_ABI_VERSION 4u
#define GPUOS_MBOX_MAGIC  0x786f626du /* "mbox" */
#define GPUOS_RT_MAGIC    0x736f7067u /* "gpos" */

/* ---- opcodes ---------------------------------------------------------------- */
/*
 * Files and models (ABI 2). Paths are absolute, NUL-terminated, in registered
 * memory (the client heap), at most GPUOS_PATH_MAX bytes with the NUL. For
 * every file or model opcode: when the status is not OK and dst/length give
 * room, dst holds a NUL-terminated reason ("corrupt superblock: bad magic"),
 * cut to length. Handles are opaque non-zero numbers; a stale or closed
 * handle gets BAD_HANDLE.
 *
 *   op            handle  offset        length      dst             arg         result / result2
 *   OPEN          -       -             dst bytes   reason buffer   path        handle / size in bytes
 *   STAT          [h]     first extent  dst bytes   gpuos_stat+ext  path        extents written / total
 *   READDIR       dir h   cookie        dst bytes   gpuos_dirent[]  -           entries / next cookie
 *   READ          file h  file offset   bytes       data            -           bytes (short at EOF)
 *   CLOSE         h       -             -           -               -           0
 *   RELEASE       -       -             -           -               share N     handles closed / 0
 *   PARTS         -       first entry   dst bytes   gpuos_parts+part -          entries written / in all
 *   GGUF_OPEN     -       [raw offset]  dst bytes   reason buffer   [path]      handle / tensor count
 *   GGUF_INFO     gguf h  -             dst bytes   gguf export     -           bytes needed / 0
 *   GGUF_FIND     gguf h  -             dst bytes   reason buffer   name        tensor index / 0
 *   GGUF_TENSOR   gguf h  -             dst bytes   gpuos_gguf_tensor index     0 / 0
 *   GGUF_LOAD     gguf h  tensor offset bytes (0:   data            index       bytes / 0
 *                                       to its end)
 *   GGUF_LAYER    gguf h  -             dst bytes   uint32_t[]      layer N     tensors in it / 0
 *
 * READ and GGUF_LOAD are served by the service warps (the extent map of the
 * handle is in device memory); the others by the runtime's metadata warp.
 *
 * GGUF_OPEN of a gguf-split model (gpuos/gguf.h, gpuos_gguf_split_parse):
 * given any shard "P-0000k-of-0000n.gguf", or the base name P or P.gguf
 * when no such file exists, it opens every shard, checks their split KVs
 * (split.no, split.count, split.tensors.count) and answers one model whose
 * tables hold every tensor. The shards are open files of the client until
 * the model's CLOSE. A missing or inconsistent shard is refused by name.
 * GPUOS_GGUF_SHARD opens the named shard alone.
 *
 * Clients of a service (docs/security.md): the service splits client memory
 * in shares, one per connection, and each client posts to a mailbox of its
 * own at the start of its share (include/gpuos/internal/rt.h); its requests may name
 * only the rest of its share, and handles it opened. A handle belongs to
 * the client that opened it (for the service's own mailbox: the share that
 * held the request's path, or its reason buffer): at most
 * GPUOS_MAX_HANDLES_PER_SHARE each, so one client cannot take every handle;
 * RELEASE closes all of share N's (1-based), which only the service posts,
 * when that client's connection ends.
 */
enum gpuos_op {
	GPUOS_OP_NOP = 0,        /* completes at once; measures the mailbox path */
	GPUOS_OP_READ_RAW = 1,   /* bytes [offset, offset+length) of the namespace -> dst; needs allow_raw */
	GPUOS_OP_WRITE_RAW = 2,  /* reserved: writes need --allow-write (not served yet) */
	/* 16..31: files */
	GPUOS_OP_OPEN = 16,
	GPUOS_OP_STAT = 17,
	GPUOS_OP_READDIR = 18,
	GPUOS_OP_READ = 19,
	GPUOS_OP_CLOSE = 20,
	GPUOS_OP_RELEASE = 21,    /* close every handle of client share `arg` (the service, at disconnect) */
	GPUOS_OP_PARTS = 22,     /* the partition table the runtime found (struct gpuos_parts) */
	/* 32..47: GGUF models */
	GPUOS_OP_GGUF_OPEN = 32,
	GPUOS_OP_GGUF_INFO = 33,
	GPUOS_OP_GGUF_FIND = 34,
	GPUOS_OP_GGUF_TENSOR = 35,
	GPUOS_OP_GGUF_LOAD = 36,
	GPUOS_OP_GGUF_LAYER = 37,
	GPUOS_OP_MAX = 64
};

/* Flags of OPEN and STAT. */
#define GPUOS_OPEN_NOFOLLOW  (1u << 0)  /* do not follow a symlink in the last component (lstat) */
#define GPUOS_STAT_HANDLE    (1u << 1)  /* STAT: the open handle `handle`, not a path */
/* Flags of GGUF_OPEN. */
#define GPUOS_GGUF_RAW       (1u << 2)  /* a GGUF written raw at byte `offset` of the device (allow_raw) */
#define GPUOS_GGUF_SHARD     (1u << 3)  /* a gguf-split shard alone, not the whole model */

#define GPUOS_PATH_MAX 4096u
#define GPUOS_MAX_HANDLES 128u  /* files, directories, models and shards open at once in one runtime */
/* Client mailboxes of one runtime (a service's clients, docs/security.md),
 * with the service's own mailbox one lane each in a probe */
#define GPUOS_RT_MAX_CLIENTS 31u
#define GPUOS_MAX_HANDLES_PER_SHARE 40u /* of them, held by one client share of a service (a model of
					 * GPUOS_GGUF_MAX_SHARDS shards and a few files) */
#define GPUOS_MAX_SHARES 64u    /* client shares a service splits its client memory in */
#define GPUOS_NAME_MAX 255u
#define GPUOS_DIR_END  0xffffffffffffffffull  /* READDIR: no entry left */

/* File types (the ext4 directory entry codes). */
enum gpuos_ftype {
	GPUOS_FT_UNKNOWN = 0, GPUOS_FT_REG = 1, GPUOS_FT_DIR = 2, GPUOS_FT_CHR = 3,
	GPUOS_FT_BLK = 4, GPUOS_FT_FIFO = 5, GPUOS_FT_SOCK = 6, GPUOS_FT_SYMLINK = 7
};

/* A run of file blocks: blocks [lblk, lblk+len) of the file are blocks
 * [pblk, pblk+len) of the file system (block_size bytes each). */
#define GPUOS_EXTENT_UNWRITTEN (1u << 0)  /* allocated, reads as zeros */
struct gpuos_extent {
	uint64_t lblk;         /* 0x00 */
	uint64_t pblk;         /* 0x08 */
	uint32_t len;          /* 0x10 */
	uint32_t flags;        /* 0x14 GPUOS_EXTENT_* */
};
static_assert(sizeof(struct gpuos_extent) == 24, "extent size");

/* STAT's answer; extents (from index `offset` on) follow while they fit. */
struct gpuos_stat {
	uint32_t ino;          /* 0x00 */
	uint32_t type;         /* 0x04 enum gpuos_ftype */
	uint32_t mode;         /* 0x08 permission and type bits (st_mode) */
	uint32_t links;        /* 0x0c */
	uint64_t size;         /* 0x10 bytes */
	uint32_t block_size;   /* 0x18 of the file system */
	uint32_t nextents;     /* 0x1c extents of the file in all */
	uint64_t part_lba;     /* 0x20 partition start in device LBAs (0: no partition table) */
	uint32_t uid;          /* 0x28 */
	uint32_t gid;          /* 0x2c */
	int64_t mtime;         /* 0x30 seconds since the epoch */
	uint32_t first;        /* 0x38 index of ext[0] among the file's extents */
	uint32_t n;            /* 0x3c extents in ext[] */
	struct gpuos_extent ext[]; /* 0x40 */
};
static_assert(sizeof(struct gpuos_stat) == 64, "stat size");

struct gpuos_dirent {
	uint32_t ino;          /* 0x00 */
	uint8_t type;          /* 0x04 enum gpuos_ftype */
	uint8_t name_len;      /* 0x05 */
	uint16_t rsvd06;       /* 0x06 */
	char name[GPUOS_NAME_MAX + 1]; /* 0x08 NUL-terminated */
};
static_assert(sizeof(struct gpuos_dirent) == 264, "dirent size");

/*
 * PARTS's answer: the partition table as the runtime's parser read it (GPT,
 * UEFI 2.10 section 5.3, or a plain MBR), then its partitions from index
 * `offset` of the list on while they fit (n of total). Partitions are in
 * table order; `number` is what --part N (gpuos_boot_opts.part) names.
 */
enum gpuos_parts_scheme {
	GPUOS_PARTS_NONE = 0,  /* no partition table: the whole device is one volume */
	GPUOS_PARTS_GPT = 1,
	GPUOS_PARTS_MBR = 2    /* a plain MBR: its primary partitions */
};
/* struct gpuos_parts.flags */
#define GPUOS_PARTS_F_BACKUP_USED (1u << 0) /* the primary GPT is corrupt (primary_why): the backup was used */
#define GPUOS_PARTS_F_BACKUP_BAD  (1u << 1) /* the backup GPT is corrupt (backup_why); the primary was used */
#define GPUOS_PARTS_F_NO_PMBR     (1u << 2) /* a GPT without a protective MBR in sector 0 */
#define GPUOS_PARTS_F_HYBRID_MBR  (1u << 3) /* the MBR holds the protective record and others */
/* struct gpuos_part.fs: what the runtime finds at the start of a partition */
enum gpuos_part_fs {
	GPUOS_PART_FS_UNKNOWN = 0, /* nothing it can mount */
	GPUOS_PART_FS_EXT = 1      /* an ext2/3/4 superblock (its magic) */
};
/* struct gpuos_part.flags */
#define GPUOS_PART_F_FILES (1u << 0) /* the file tools' partition: --part N, or the first holding ext2/3/4 */

#define GPUOS_GUID_TEXT 40u        /* "0FC63DAF-8483-4772-8E79-3D69D8477DE4", NUL, padding */
#define GPUOS_PART_NAME_MAX 112u   /* a GPT name (36 UTF-16 units) in UTF-8, and the NUL */
#define GPUOS_PARTS_WHY 64u

struct gpuos_part {
	uint64_t first_lba;    /* 0x00 */
	uint64_t last_lba;     /* 0x08 inclusive */
	uint64_t attributes;   /* 0x10 GPT attribute bits (UEFI table 5-7); MBR: the boot indicator */
	uint32_t number;       /* 0x18 its entry in the table, from 1 */
	uint8_t mbr_type;      /* 0x1c MBR: the partition type; GPT: 0 */
	uint8_t fs;            /* 0x1d enum gpuos_part_fs */
	uint8_t flags;         /* 0x1e GPUOS_PART_F_* */
	uint8_t rsvd1f;        /* 0x1f */
	char type_guid[GPUOS_GUID_TEXT];   /* 0x20 text form, upper case; "" for MBR */
	char unique_guid[GPUOS_GUID_TEXT]; /* 0x48 */
	char name[GPUOS_PART_NAME_MAX];    /* 0x70 UTF-8 (U+FFFD for a lone surrogate), NUL-terminated;
	                        *      control characters are kept as they are */
};
static_assert(sizeof(struct gpuos_part) == 224, "part size");
static_assert(offsetof(struct gpuos_part, name) == 0x70, "part name");

struct gpuos_parts {
	uint32_t scheme;       /* 0x00 enum gpuos_parts_scheme */
	uint32_t flags;        /* 0x04 GPUOS_PARTS_F_* */
	uint32_t lba_bytes;    /* 0x08 the namespace's LBA size */
	uint32_t first;        /* 0x0c index of part[0] in the list (the request's offset) */
	uint32_t n;            /* 0x10 entries in part[] */
	uint32_t total;        /* 0x14 partitions in the list (the runtime keeps at most 128) */
	uint32_t skipped;      /* 0x18 used entries left out: LBAs outside the usable range or the disk */
	uint32_t n_entries;    /* 0x1c GPT: entries of the partition entry array, used or not */
	uint64_t disk_lbas;    /* 0x20 */
	uint64_t header_lba;   /* 0x28 GPT: the header used (1, or the last LBA: the backup) */
	uint64_t first_usable_lba; /* 0x30 GPT */
	uint64_t last_usable_lba;  /* 0x38 GPT, inclusive */
	char disk_guid[GPUOS_GUID_TEXT]; /* 0x40 GPT */
	char primary_why[GPUOS_PARTS_WHY]; /* 0x68 with BACKUP_USED: why the primary was refused */
	char backup_why[GPUOS_PARTS_WHY];  /* 0xa8 with BACKUP_BAD: why the backup was refused */
	uint32_t whole_fs;     /* 0xe8 GPUOS_PARTS_NONE: enum gpuos_part_fs of the whole device */
	uint32_t found;        /* 0xec partitions in the table: more than total when some were not kept */
	struct gpuos_part part[]; /* 0xf0 */
};
static_assert(sizeof(struct gpuos_parts) == 240, "parts size");
static_assert(offsetof(struct gpuos_parts, whole_fs) == 0xe8, "parts whole_fs");

/* ---- request status (what the runtime answers; never a negative errno) ---- */
enum gpuos_status {
	GPUOS_ST_OK = 0,
	GPUOS_ST_BAD_OPCODE = 1,   /* unknown or unserved opcode */
	GPUOS_ST_BAD_RANGE = 2,    /* offset/length past the end of the device or file */
	GPUOS_ST_BAD_DST = 3,      /* destination null or outside registered memory */
	GPUOS_ST_OVERFLOW = 4,     /* offset + length overflows, or length over the limit */
	GPUOS_ST_NVME = 5,         /* the controller failed a command: see nvme_status */
	GPUOS_ST_TIMEOUT = 6,      /* a command did not complete within the controller's timeout */
	GPUOS_ST_CTRL_FATAL = 7,   /* CSTS.CFS: the controller failed; nothing more is served */
	GPUOS_ST_FULL = 8,         /* mailbox full (set by the client library, not the runtime) */
	GPUOS_ST_DENIED = 9,       /* not allowed (raw access without allow_raw, writes) */
	GPUOS_ST_NOENT = 10,
	GPUOS_ST_NOTDIR = 11,
	GPUOS_ST_LOOP = 12,
	GPUOS_ST_CORRUPT = 13,
	GPUOS_ST_UNSUPPORTED = 14,
	GPUOS_ST_BAD_HANDLE = 15,
	GPUOS_ST_NOSPC = 16,
	GPUOS_ST_STOPPING = 17,    /* runtime is shutting down */
	GPUOS_ST_BAD_FLAGS = 18,
	GPUOS_ST_ISDIR = 19,       /* READ of a directory */
	GPUOS_ST_NAMETOOLONG = 20, /* a path or a name too long */
	GPUOS_ST_IO = 21,          /* metadata could not be read (device error or timeout) */
	GPUOS_ST_NO_FILES = 22,    /* this runtime serves no files (no metadata queue) */
	GPUOS_ST_CTRL_RESET = 23,  /* the controller was reset (a command it did not answer); retry */
	GPUOS_ST_DUP_CQE = 24,     /* the controller completed a command of the request twice: its
	                            * bytes cannot be trusted (docs/design.md, "The life of a command") */
	GPUOS_ST_GONE = 25,        /* the service is gone, or answered nothing for GPUOS_CLIENT_TIMEOUT_MS
	                            * (set by the client library, not the runtime: host.h) */
	GPUOS_ST_COUNT
};

/* Readable name for a status ("range past the end of the device"); never NULL. */
GPUOS_HD const char *gpuos_status_name(uint32_t st);
/* Which step made the runtime give up (enum gpuos_rt_fatal, ctl->fatal_why's low byte). */
GPUOS_HD const char *gpuos_fatal_name(uint32_t why);

/* ---- the mailbox ------------------------------------------------------------- */
enum gpuos_slot_state {
	GPUOS_SLOT_FREE = 0,
	GPUOS_SLOT_CLAIMED = 1,
	GPUOS_SLOT_POSTED = 2,
	GPUOS_SLOT_TAKEN = 3,
	GPUOS_SLOT_DONE = 4
};

#define GPUOS_MBOX_PROBE 64u           /* slots a client tries before FULL */
#define GPUOS_MAX_LENGTH (1ull << 40)  /* longest single request, bytes */

/* Where a request was, by the runtime's clock (slot t_trace_ns; GPUOS_TRACE
 * builds only, for measuring the path: docs/benchmarks-log.md). */
enum gpuos_trace_stage {
	GPUOS_TRACE_TAKEN = 0,   /* a service warp took it from the ring */
	GPUOS_TRACE_RUNG = 1,    /* the doorbell of its first command was rung */
	GPUOS_TRACE_CTRL = 2,    /* the controller saw its last command (gpu-null stamps the CQE) */
	GPUOS_TRACE_REAPED = 3,  /* the service warp read the CQE of its last command */
	GPUOS_TRACE_STAGES = 4
};

struct gpuos_mbox_slot {
	/* first 64 bytes: the request, written by the client */
	uint32_t state;        /* 0x00 enum gpuos_slot_state, see protocol above */
	uint16_t opcode;       /* 0x04 enum gpuos_op */
	uint16_t flags;        /* 0x06 opcode specific, 0 for READ_RAW */
	uint32_t handle;       /* 0x08 file/model handle */
	uint32_t rsvd0c;       /* 0x0c */
	uint64_t offset;       /* 0x10 byte offset */
	uint64_t length;       /* 0x18 byte count */
	uint64_t dst;          /* 0x20 destination (runtime address space) */
	uint64_t arg;          /* 0x28 opcode specific (a path pointer, an index) */
	uint64_t batch;        /* 0x30 address of a uint32 counter bumped on DONE, or 0 */
	uint64_t tag;          /* 0x38 client's own, returned untouched */
	/* --- cache line boundary (64): the completion, written by the runtime --- */
	uint32_t status;       /* 0x40 enum gpuos_status */
	uint16_t nvme_status;  /* 0x44 first failing NVMe status (SCT<<8|SC, DNR 0x4000), 0 if none */
	uint16_t rsvd46;       /* 0x46 */
	uint64_t result;       /* 0x48 bytes transferred, or opcode specific */
	uint64_t result2;      /* 0x50 opcode specific */
	uint64_t t_done_ns;    /* 0x58 runtime clock at completion */
	uint64_t t_trace_ns[GPUOS_TRACE_STAGES]; /* 0x60 .. 0x7f runtime clock at the stages of
	                        *      enum gpuos_trace_stage; written only by a runtime built
	                        *      with GPUOS_TRACE (bench --stages), 0 otherwise */
};
static_assert(sizeof(struct gpuos_mbox_slot) == 128, "mailbox slot size");
static_assert(offsetof(struct gpuos_mbox_slot, status) == 64, "completion on its own cache line");
static_assert(offsetof(struct gpuos_mbox_slot, tag) == 0x38, "slot tag");

/* The mailbox is in GPU memory and only threads of that GPU use it: device
 * scope orders enough, and atomics work (GPU atomics on pinned host memory
 * do not exist on PCIe systems, so a host-memory mailbox serves host
 * clients only). */
#define GPUOS_MBOX_F_DEVICE 1u

/* Slots are split in `nparts` contiguous partitions, one per service warp. */
#define GPUOS_MBOX_MAX_PARTS 256u

struct gpuos_mbox_part {
	uint32_t posted;       /* 0x00 bumped by clients after each POSTED (system-scope atomic): a ring
	                        *      position each; the runtime tells new entries by their lap */
	uint32_t rsvd[15];     /* one counter per 64-byte line */
};
static_assert(sizeof(struct gpuos_mbox_part) == 64, "partition counter line");

struct gpuos_mbox {
	uint32_t magic;        /* 0x00 GPUOS_MBOX_MAGIC */
	uint32_t version;      /* 0x04 GPUOS_ABI_VERSION */
	uint32_t nslots;       /* 0x08 total slots, a multiple of nparts */
	uint32_t nparts;       /* 0x0c partitions (== service warps) */
	uint64_t slots_off;    /* 0x10 byte offset of slot 0 from this header (== sizeof header) */
	uint32_t flags;        /* 0x18 GPUOS_MBOX_F_* */
	uint32_t rsvd1c;       /* 0x1c */
	uint64_t ring_off;     /* 0x20 byte offset of the rings: uint32_t[nslots], partition p's ring
	                        *      is entries [p * per, (p + 1) * per), per = nslots / nparts */
	uint32_t rsvd28[6];    /* 0x28 .. 0x3f */
	/* --- cache line boundary (64) --- */
	uint32_t ticket;       /* 0x40 clients' fetch_add to pick a first slot */
	uint32_t rsvd44[15];
	/* --- cache line boundary (128) --- */
	struct gpuos_mbox_part part[GPUOS_MBOX_MAX_PARTS]; /* 0x80 */
};
static_assert(offsetof(struct gpuos_mbox, ticket) == 64, "ticket on its own line");
static_assert(offsetof(struct gpuos_mbox, part) == 128, "partition counters");

GPUOS_INLINE GPUOS_HD struct gpuos_mbox_slot *gpuos_mbox_slots(struct gpuos_mbox *mb)
{
	return (struct gpuos_mbox_slot *)((char *)mb + mb->slots_off);
}

/* Ordering primitives at the mailbox's scope (see GPUOS_MBOX_F_DEVICE). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_mbox_load_acquire(int dev, const uint32_t *p)
{
	return dev ? gpuos_load_acquire_dev32(p) : gpuos_load_acquire_sys32(p);
}
GPUOS_INLINE GPUOS_HD void gpuos_mbox_store_release(int dev, uint32_t *p, uint32_t v)
{
	if (dev)
		gpuos_store_release_dev32(p, v);
	else
		gpuos_store_release_sys32(p, v);
}
/* A counter (ticket, ring position): orders nothing. */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_mbox_fetch_add_relaxed(int dev, uint32_t *p, uint32_t v)
{
	return dev ? gpuos_fetch_add_relaxed_dev32(p, v) : gpuos_fetch_add_relaxed_sys32(p, v);
}
/* A count others read to learn that work is done (a batch counter). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_mbox_fetch_add_release(int dev, uint32_t *p, uint32_t v)
{
	return dev ? gpuos_fetch_add_release_dev32(p, v) : gpuos_fetch_add_release_sys32(p, v);
}
/* Claiming a slot: acquire (after the last owner's release of FREE). */
GPUOS_INLINE GPUOS_HD uint32_t gpuos_mbox_cas_acquire(int dev, uint32_t *p, uint32_t expect, uint32_t desired)
{
	return dev ? gpuos_cas_acquire_dev32(p, expect, desired) : gpuos_cas_acquire_sys32(p, expect, desired);
}

GPUOS_INLINE GPUOS_HD uint64_t gpuos_mbox_bytes(uint32_t nslots)
{
	return sizeof(struct gpuos_mbox) + (uint64_t)nslots * sizeof(struct gpuos_mbox_slot) +
	       (uint64_t)nslots * sizeof(uint32_t);
}

/* A ring entry: the slot's index within its partition, and the lap of the
 * ring position (position / per + 1, 16 bits) so an entry left from an
 * earlier lap never reads as new. Partitions hold at most 65535 slots. */
#define GPUOS_MBOX_MAX_PER_PART 65535u
GPUOS_INLINE GPUOS_HD uint32_t gpuos_mbox_ring_entry(uint32_t pos, uint32_t per, uint32_t slot_in_part)
{
	return ((((pos / per) + 1u) & 0xffffu) << 16) | slot_in_part;
}

/* ---- runtime control block (host <-> runtime) -------------------------------- */
enum gpuos_rt_cmd {
	GPUOS_RT_CMD_RUN = 0,
	GPUOS_RT_CMD_PARK = 1,   /* drain in-flight commands, leave state, exit */
	GPUOS_RT_CMD_STOP = 2    /* drain, finish every posted request with STOPPING, exit */
};
/* Things the runtime noticed that the host should tell the user. */
#define GPUOS_NOTICE_GPT_BACKUP (1u << 0) /* the primary GPT is corrupt: the backup is used */
#define GPUOS_NOTICE_GPT_BACKUP_BAD (1u << 1) /* the backup GPT is corrupt (the primary is used) */

enum gpuos_rt_state {
	GPUOS_RT_STATE_BOOT = 0,
	GPUOS_RT_STATE_RUNNING = 1,
	GPUOS_RT_STATE_PARKED = 2,
	GPUOS_RT_STATE_STOPPED = 3,
	GPUOS_RT_STATE_FATAL = 4
};

/* Why the runtime went FATAL (ctl->fatal_why, low byte), so that a failure
 * says which step gave up; ctl->fatal_csts holds the CSTS read then. */
enum gpuos_rt_fatal {
	GPUOS_RT_FATAL_NONE = 0,
	GPUOS_RT_FATAL_CFS = 1,         /* CSTS.CFS where no reset is possible */
	GPUOS_RT_FATAL_GONE = 2,        /* CSTS all ones: the controller left the bus */
	GPUOS_RT_FATAL_NOT_STOPPED = 3, /* reset: RDY stayed 1 for CAP.TO after CC.EN = 0 */
	GPUOS_RT_FATAL_NOT_READY = 4,   /* reset: RDY did not come back within CAP.TO, or CFS */
	GPUOS_RT_FATAL_ADMIN = 5,       /* reset: an admin command failed (status) or went unanswered */
	GPUOS_RT_FATAL_STUCK = 6,       /* an aborted command never completed, and no reset possible */
};

/* Counters per service warp, written by that warp only (relaxed stores of
 * its private counts, published every few hundred loops, when idle, and on
 * park/stop), read by the host: exact after park or stop, else recent. */
struct gpuos_rt_stats {
	uint64_t requests;     /* 0x00 requests completed */
	uint64_t bytes;        /* 0x08 payload bytes delivered */
	uint64_t errors;       /* 0x10 requests completed with a non-OK status */
	uint64_t commands;     /* 0x18 NVMe commands submitted the first time (retries: 0x60) */
	uint64_t timeouts;     /* 0x20 commands that timed out */
	uint64_t doorbells;    /* 0x28 SQ doorbell stores */
	uint64_t polls;        /* 0x30 service loop iterations */
	uint64_t inflight;     /* 0x38 commands in flight now */
	uint64_t zero_copy;    /* 0x40 commands the controller wrote straight into the destination */
	uint64_t strays;       /* 0x48 completions that matched no command in flight (ignored) */
	uint64_t aborts;       /* 0x50 NVMe Aborts sent for commands that timed out */
	uint64_t resets;       /* 0x58 controller resets this warp started */
	uint64_t retries;      /* 0x60 commands sent again after a failure with DNR clear */
	uint64_t duplicates;   /* 0x68 completions for a command already completed, or already
	                        * queued to be sent again (the CID of an earlier use of a slot) */
	uint64_t untrusted;    /* 0x70 requests failed with GPUOS_ST_DUP_CQE: a command of theirs
	                        * was completed twice while they were unanswered */
	uint64_t rsvd78;
	/* --- cache line boundary (128) --- */
	uint32_t dup_by_ctrl[16]; /* 0x80 duplicates by controller of an array (GPUOS_RT_MAX_CTRL) */
	uint64_t rsvd_c0[8];
};
static_assert(sizeof(struct gpuos_rt_stats) == 256, "stats lines");
static_assert(offsetof(struct gpuos_rt_stats, dup_by_ctrl) == 0x80, "stats: by controller");

struct gpuos_rt_ctl {
	uint32_t cmd;          /* 0x00 enum gpuos_rt_cmd, written by the host (release, sys) */
	uint32_t rsvd04[15];
	/* --- cache line boundary (64) --- */
	uint32_t state;        /* 0x40 enum gpuos_rt_state, written by service warp 0 */
	uint32_t notices;      /* 0x44 GPUOS_NOTICE_* bits, written by the metadata warp */
	uint32_t fatal_csts;   /* 0x48 CSTS value seen when the controller failed */
	uint32_t epoch;        /* 0x4c launches so far (park/resume count) */
	uint32_t fatal_why;    /* 0x50 enum gpuos_rt_fatal | controller << 8 | admin status << 16 */
	uint32_t rsvd54[11];
	/* --- cache line boundary (128) --- */
	struct gpuos_rt_stats stats[]; /* one per service warp */
};
static_assert(offsetof(struct gpuos_rt_ctl, state) == 64, "ctl state line");
static_assert(offsetof(struct gpuos_rt_ctl, stats) == 128, "ctl stats");

GPUOS_EXTERN_C_END

#endif /* GPUOS_ABI_H */

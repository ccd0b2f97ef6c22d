/* SPDX-License-Identifier: MIT */
/*
 * boot/image.h - inspecting a GPU app image (an ELF cubin) before it is
 * loaded (DESIGN.md section 3, issue 6 section 1): architecture, the gpuos
 * ABI note (gpuos/app.h), the entry points and, per entry, what it needs
 * from the SM (registers, static shared memory, threads per block).
 *
 * Every offset, size and count in the file is hostile input: a fatbin, a
 * host ELF, a relocatable object, a truncated or malformed file is refused
 * with one line saying why, never a crash or a read past the buffer.
 */
#ifndef GPUOS_BOOT_IMAGE_H
#define GPUOS_BOOT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* What CUDA allows per block when an image declares no limit. */
#define GPUOS_IMAGE_DEFAULT_MAX_THREADS 1024u
/* Refused beyond these: no real app comes near them. */
#define GPUOS_IMAGE_MAX_ENTRIES 4096u
#define GPUOS_IMAGE_MAX_BYTES   (1ull << 30)

struct gpuos_image_entry {
	char *name;             /* the kernel's symbol (mangled unless extern "C"); owned by the info */
	uint32_t registers;     /* per thread (EIATTR_REGCOUNT) */
	uint32_t shared_bytes;  /* static shared memory per block: the size of .nv.shared.NAME, as
	                         * cuobjdump -res-usage reports it (for sm_90 nvcc 13 counts the
	                         * 1 KiB it reserves for the system in it; the driver's
	                         * CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES leaves that out) */
	uint32_t max_threads;   /* per block: what the image declares, else 1024 */
	uint32_t block[3];      /* the declared x, y, z (maxntid or reqntid), 0 0 0 if none */
	int exact;              /* 1: reqntid, a launch must use exactly block[] */
};

struct gpuos_image_info {
	uint32_t sm_major, sm_minor; /* e.g. 9, 0 */
	int arch_specific;           /* built for sm_XYa: runs on sm_XY only */
	char arch[16];               /* "sm_90", "sm_90a" */
	uint32_t elf_abi;            /* EI_ABIVERSION of the cubin (8 for nvcc 13) */
	uint32_t abi_version;        /* the image's gpuos ABI (== GPUOS_ABI_VERSION once inspected) */
	uint32_t nentries;
	struct gpuos_image_entry *entries; /* symbol-table order */
};

/*
 * Inspect an image held in memory. buf is only read, and need not outlive
 * the call; *out is filled on success and must then be released with
 * gpuos_image_info_free(). On failure *out holds nothing to free and err
 * says why in one line. Checks, in order: not a fatbin or PTX, ELF64
 * little-endian, EM_CUDA, an executable cubin (not -rdc=true before
 * linking), every header, section, symbol, note and attribute in bounds,
 * an SM architecture in e_flags, the gpuos ABI note equal to
 * GPUOS_ABI_VERSION, at least one entry point.
 * Returns 0, -ENOEXEC (not a loadable CUDA cubin), -EINVAL (malformed),
 * -EOVERFLOW (a value out of range), -EPROTO (ABI note missing or of
 * another version), -ENOMEM. Host, any thread.
 */
int gpuos_image_inspect(const void *buf, size_t len, struct gpuos_image_info *out, char *err, size_t errlen);

/* The same for a file (at most GPUOS_IMAGE_MAX_BYTES). Returns as above,
 * or the negative errno of opening or reading it. */
/* Read a whole image file (a regular file of at most GPUOS_IMAGE_MAX_BYTES)
 * into *buf (malloc'd; the caller frees it). 0 or a negative errno with a
 * one-line reason naming the path. */
int gpuos_image_read_file(const char *path, uint8_t **buf, size_t *len, char *err, size_t errlen);

int gpuos_image_inspect_file(const char *path, struct gpuos_image_info *out, char *err, size_t errlen);

/* Release what gpuos_image_inspect() allocated; *info is zeroed. */
void gpuos_image_info_free(struct gpuos_image_info *info);

/*
 * Can this image run on a GPU of compute capability sm_major.sm_minor?
 * CUDA's rules for SASS: the same major version and a minor no newer than
 * the GPU's (sm_86 code runs on sm_89, never on sm_80 or sm_90);
 * architecture-specific code (sm_90a) runs on exactly its own version.
 * Returns 0, or -ENOEXEC with err naming the image's and the GPU's
 * architecture.
 */
int gpuos_image_check_arch(const struct gpuos_image_info *info, int sm_major, int sm_minor, char *err,
			   size_t errlen);

/* The entry called name, or NULL. */
const struct gpuos_image_entry *gpuos_image_entry_find(const struct gpuos_image_info *info, const char *name);

#endif /* GPUOS_BOOT_IMAGE_H */

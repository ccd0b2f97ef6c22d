/* SPDX-License-Identifier: MIT */
/*
 * boot/shm.h - the shared-memory segment a runtime publishes for host
 * clients: a header page, the mailbox, and the client heap (the memory
 * clients name as destinations). Another process maps it by name (given by
 * the service's control socket) and posts with gpuos/gpuos.h; addresses in
 * requests are runtime-space: rt_base + (offset into the segment).
 */
#ifndef GPUOS_BOOT_SHM_H
#define GPUOS_BOOT_SHM_H

#include <stdint.h>

#define GPUOS_SHM_MAGIC 0x6d687367u /* "gshm" */
#define GPUOS_SHM_MBOX_OFF 4096u

struct gpuos_shm_hdr {
	uint32_t magic;
	uint32_t version;   /* GPUOS_ABI_VERSION */
	uint64_t mbox_off;  /* byte offset of struct gpuos_mbox */
	uint64_t heap_off;  /* byte offset of the client heap */
	uint64_t heap_len;
	uint64_t rt_base;   /* runtime-space address of byte 0 of the segment */
};

#endif /* GPUOS_BOOT_SHM_H */

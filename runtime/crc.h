/* SPDX-License-Identifier: MIT */
/*
 * runtime/crc.h - CRC32 (IEEE 802.3, reflected 0xEDB88320; GPT headers and
 * entries, UEFI spec 5.3) and CRC32C (Castagnoli, reflected 0x82F63B78; ext4
 * metadata_csum). Bitwise-by-nibble tables computed at compile time would be
 * globals; these use a 16-entry table in constant data instead, valid on the
 * GPU and the host, and fast enough for metadata.
 */
#ifndef GPUOS_RUNTIME_CRC_H
#define GPUOS_RUNTIME_CRC_H

#include "gpuos/port.h"

GPUOS_EXTERN_C_BEGIN

/* Continue a CRC over len bytes. Start with crc = 0 for a fresh CRC32 (the
 * ~ pre/post conditioning is done inside), as zlib's crc32() does. */
GPUOS_HD uint32_t gpuos_crc32(uint32_t crc, const void *buf, size_t len);

/* Raw CRC32C update without final inversion, as ext4 chains it:
 * ext4 computes crc = crc32c_raw(~0, ...) and stores it (no final xor). */
GPUOS_HD uint32_t gpuos_crc32c_raw(uint32_t crc, const void *buf, size_t len);

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_CRC_H */

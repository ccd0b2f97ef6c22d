/* SPDX-License-Identifier: MIT */
#include "crc.h"

/* Reflected CRC, four bits at a time: t[i] = CRC of nibble i with poly. */
GPUOS_INLINE GPUOS_HD uint32_t crc_nibble_step(uint32_t crc, uint32_t poly)
{
	int k;
	for (k = 0; k < 4; k++)
		crc = (crc >> 1) ^ ((crc & 1u) ? poly : 0u);
	return crc;
}

GPUOS_INLINE GPUOS_HD uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t len, uint32_t poly)
{
	/* Nibble table built on the stack per call: 16 entries, no globals. */
	uint32_t t[16];
	uint32_t i;
	for (i = 0; i < 16; i++)
		t[i] = crc_nibble_step(i, poly);
	while (len--) {
		crc ^= *p++;
		crc = (crc >> 4) ^ t[crc & 0xfu];
		crc = (crc >> 4) ^ t[crc & 0xfu];
	}
	return crc;
}

GPUOS_HD uint32_t gpuos_crc32(uint32_t crc, const void *buf, size_t len)
{
	return ~crc_update(~crc, (const uint8_t *)buf, len, 0xEDB88320u);
}

GPUOS_HD uint32_t gpuos_crc32c_raw(uint32_t crc, const void *buf, size_t len)
{
	return crc_update(crc, (const uint8_t *)buf, len, 0x82F63B78u);
}

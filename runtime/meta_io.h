/* SPDX-License-Identifier: MIT */
/*
 * runtime/meta_io.h - how the metadata parsers (GPT, ext4, GGUF) read the
 * disk. A parser is handed one of these and calls gpuos_meta_read(); in the
 * runtime it goes through the runtime's own queues (and a small block cache),
 * in unit tests and fuzz targets it reads a buffer. Parsers never see LBAs,
 * controllers or the host.
 *
 * Context: any lane of a GPU warp, or a host thread; the call blocks until
 * the bytes are in dst. Parsers run single-threaded (one lane).
 */
#ifndef GPUOS_RUNTIME_META_IO_H
#define GPUOS_RUNTIME_META_IO_H

#include <errno.h>

#include "gpuos/port.h"

GPUOS_EXTERN_C_BEGIN

struct gpuos_meta_io {
	/* Read len bytes at byte offset off (relative to the start of what this
	 * io covers) into dst. Returns 0, -EIO (device error), or -ERANGE when
	 * [off, off+len) is past `size`. */
	int (*read)(void *ctx, uint64_t off, uint32_t len, void *dst);
	void *ctx;
	uint64_t size;   /* bytes readable through this io */
};

GPUOS_INLINE GPUOS_HD int gpuos_meta_read(const struct gpuos_meta_io *io, uint64_t off,
					  uint32_t len, void *dst)
{
	if (off > io->size || len > io->size - off)
		return -ERANGE;
	return io->read(io->ctx, off, len, dst);
}

GPUOS_EXTERN_C_END

#endif /* GPUOS_RUNTIME_META_IO_H */

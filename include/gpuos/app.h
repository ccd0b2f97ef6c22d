/* SPDX-License-Identifier: MIT */
/*
 * gpuos/app.h - what a GPU app image carries so that boot/ can check it
 * before loading it (DESIGN.md section 3; boot/image.h reads it).
 *
 * An app marks its image, once, at namespace scope of one of its .cu files:
 *
 *     #include "gpuos/app.h"
 *     GPUOS_APP_ABI_NOTE;
 *
 * The ABI note is a device variable with C linkage,
 *
 *     extern "C" __device__ const unsigned int gpuos_abi_version = GPUOS_ABI_VERSION;
 *
 * marked used so that no compiler pass drops it. nvcc 13 puts it in the
 * cubin as an STT_OBJECT symbol of size 4 named gpuos_abi_version in
 * .nv.global.init, its value the offset of the 4 little-endian bytes in
 * that section; the same holds for -rdc=true objects after nvlink.
 * (nvcc keeps no ELF note of the program's own: its .note.nv.* sections
 * are the toolkit's, so a symbol is what survives.) boot/ finds it by name
 * and reads it through its section and value, whatever the section.
 *
 * Built by gcc or g++ (the host-mode variants of apps), the macro defines
 * the same symbol as an ordinary constant with C linkage.
 *
 * Use it once per image: with -rdc=true two definitions clash at link time,
 * which is the right answer (one image, one ABI version).
 */
#ifndef GPUOS_APP_H
#define GPUOS_APP_H

#include "gpuos/abi.h"

#if defined(__CUDACC__)
#define GPUOS_APP_ABI_NOTE                                                                      \
	extern "C" __device__ __attribute__((used)) const unsigned int gpuos_abi_version = \
		GPUOS_ABI_VERSION
#elif defined(__cplusplus)
#define GPUOS_APP_ABI_NOTE \
	extern "C" __attribute__((used)) const unsigned int gpuos_abi_version = GPUOS_ABI_VERSION
#else
#define GPUOS_APP_ABI_NOTE __attribute__((used)) const unsigned int gpuos_abi_version = GPUOS_ABI_VERSION
#endif

/* The symbol's name, for tools that look it up. */
#define GPUOS_APP_ABI_SYMBOL "gpuos_abi_version"

#endif /* GPUOS_APP_H */

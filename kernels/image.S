/* SPDX-License-Identifier: MIT */
/* The runtime fatbin, embedded in the gpuos binary for cuModuleLoadData. */
	.section .rodata
	.balign 64
	.globl gpuos_rt_image
	.globl gpuos_rt_image_end
gpuos_rt_image:
	.incbin GPUOS_RT_IMAGE
gpuos_rt_image_end:
	.byte 0
	.section .note.GNU-stack,"",@progbits

/* SPDX-License-Identifier: MIT */
/* boot/shm.h - the segment layout moved to include/gpuos/host.h (kept while
 * boot/sys*.c are being split; remove with its last include). */
#include "gpuos/host.h"

/* SPDX-License-Identifier: MIT */
/*
 * boot/pci/pci_internal.h - the pieces behind the pci: controller (boot/pci/pci.c):
 * sysfs look-ups, the safety checks (docs/hardware.md) and driver binding
 * (boot/pci/pci_sysfs.c), and physically contiguous hugepage memory for
 * uio_pci_generic, where the controller is given physical addresses
 * (boot/pci/pci_hugemem.c). Host-only; Linux only.
 */
#ifndef GPUOS_BOOT_PCI_INTERNAL_H
#define GPUOS_BOOT_PCI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define GPUOS_PCI_BDF_LEN 24   /* "DDDD:BB:DD.F" with room for 5+ digit domains (VMD) */
#define GPUOS_PCI_CLASS_NVME 0x010802u  /* mass storage, NVM, NVM Express */

#define GPUOS_PCI_DRV_VFIO "vfio-pci"
#define GPUOS_PCI_DRV_UIO  "uio_pci_generic"

/* ---- sysfs (boot/pci/pci_sysfs.c) ------------------------------------------------ */

/* "DDDD:BB:DD.F" or "BB:DD.F" (domain 0), n bytes of s, into the kernel's
 * lower-case spelling. 0 or -EINVAL. */
int gpuos_pci_parse_bdf(const char *s, size_t n, char bdf[GPUOS_PCI_BDF_LEN]);

/* A sysfs attribute of the device, e.g. "class", trailing newline removed.
 * 0 or -errno. */
int gpuos_pci_attr(const char *bdf, const char *attr, char *buf, size_t len);

/* The driver bound to the device, "" when none. 0 or -ENODEV (no such device). */
int gpuos_pci_driver(const char *bdf, char *drv, size_t len);

/* May gpuos take the controller from the host? Refuses (-EBUSY) when one of
 * its namespaces or their partitions is mounted, is swap, holds the root file
 * system, is held by device mapper or md, or is open exclusively; and when the
 * device is bound to a driver other than vfio-pci or uio_pci_generic (the
 * kernel's nvme driver serving namespaces), or to one of those two while
 * another process holds it. 0 when free; otherwise one line in why that says
 * what and how to resolve it. */
int gpuos_pci_check_free(const char *bdf, char *why, size_t whylen);

/* Bind the device to driver through driver_override, unbind and drivers_probe
 * (the same steps as scripts/vfio-bind.sh). Only after gpuos_pci_check_free.
 * 0; -ENODEV when the driver is not loaded; -EACCES without root; -EIO when
 * the driver did not take the device; one line in why. */
int gpuos_pci_bind(const char *bdf, const char *driver, char *why, size_t whylen);

/* ---- hugepage memory for uio (boot/pci/pci_hugemem.c) ----------------------------- */

struct gpuos_hugemem;

/* Check that hugepages are configured and physical addresses readable (root,
 * /proc/self/pagemap). 0, -ENOMEM (no free hugepages), -EPERM; why says what
 * to do. */
int gpuos_hugemem_create(struct gpuos_hugemem **out, char *why, size_t whylen);
void gpuos_hugemem_destroy(struct gpuos_hugemem *h);

/* len bytes (multiple of 4 KiB, zeroed) physically contiguous at *phys.
 * Small allocations share a hugepage; larger ones get a run of physically
 * consecutive hugepages. 0, -ENOMEM (not enough hugepages, or no contiguous
 * run among them), -EPERM (no physical addresses). */
int gpuos_hugemem_alloc(struct gpuos_hugemem *h, size_t len, void **host, uint64_t *phys);
void gpuos_hugemem_free(struct gpuos_hugemem *h, void *host);
/* Bytes of hugepages this allocator holds (for describe). */
uint64_t gpuos_hugemem_bytes_mapped(const struct gpuos_hugemem *h);

#endif /* GPUOS_BOOT_PCI_INTERNAL_H */

/* SPDX-License-Identifier: MIT */
/*
 * The pci: controller (docs/hardware.md): a real NVMe controller behind the
 * ops table, "pci:DDDD:BB:DD.F[,mode=vfio|uio]"; or several striped as one
 * array (docs/design.md, "Arrays of SSDs"),
 * "pci:A+B+...[,mode=...][,stripe=KiB]", every device through the same
 * checks, all of them in one VFIO container (one IOMMU address space: a
 * buffer mapped once has the same IOVA for each) or all through uio
 * (physical addresses are the same for each anyway).
 *
 * vfio (the default): the device is bound to vfio-pci and sits in its own
 * IOMMU container (type1); BAR0 is a VFIO region we mmap; every DMA buffer is
 * mapped with VFIO_IOMMU_MAP_DMA at an IOVA we choose, so the controller can
 * reach those buffers and nothing else (a stray address is an IOMMU fault,
 * not a write into someone's memory).
 * uio (the fallback, root only): the device is bound to uio_pci_generic; BAR0
 * is sysfs resource0; there is no IOMMU translation, so the controller gets
 * physical addresses and every buffer is physically contiguous hugepage
 * memory (boot/pci/pci_hugemem.c).
 *
 * Either way the controller reaches host memory only (no P2P into VRAM
 * here): dma_host_only puts the bounce buffers in host memory. With a GPU,
 * BAR0 is registered with cudaHostRegisterIoMemory so the runtime's doorbell
 * stores go from the GPU to the SSD directly.
 *
 * Before taking a device from the host, the safety checks (docs/hardware.md,
 * "What gpuos refuses, and --force"; boot/pci/pci_sysfs.c) refuse one that
 * the host still uses, unless --force.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "../ctrl/ctrl.h"
#include "pci_internal.h"

#define SYS_PCI "/sys/bus/pci/devices/"
#define MAX_IOVA_RANGES 32u
#define MEMLOCK_WANT (256ull << 20)

enum pci_mode { MODE_VFIO = 0, MODE_UIO = 1 };

struct iova_range {
	uint64_t start, end;     /* inclusive, as VFIO reports them */
};

struct pci_dev {                /* one controller of the device string */
	char bdf[GPUOS_PCI_BDF_LEN];
	/* vfio */
	int group;                /* -1: its IOMMU group is an earlier device's (group_of) */
	int device;
	char group_name[32];
	uint64_t cfg_off;         /* config space region offset in the device fd */
	/* uio */
	int cfg_fd;               /* sysfs config */
	int res_fd;               /* sysfs resource0, flock'ed: one user at a time */
	/* BAR0 */
	void *bar;
	size_t bar_map_len;       /* the whole mapping (or reservation) to munmap */
	size_t regs_len;          /* the part from offset 0 we may touch */
	int bar_gpu;              /* registered with the GPU */
	int master;               /* we enabled bus mastering */
	char drv[64];             /* its driver when we found it */
};

struct pci_priv {
	enum pci_mode mode;
	/* vfio: one container (IOMMU address space) for every device */
	int container;
	struct iova_range range[MAX_IOVA_RANGES];
	unsigned nranges;
	/* uio */
	struct gpuos_hugemem *hm;
	/* describe */
	unsigned dma_regions;
	uint64_t dma_bytes;
	unsigned ndev;
	struct pci_dev dev[GPUOS_CTRL_MAX_MEMBERS];
};

/* ---- config space ------------------------------------------------------------ */

static int cfg_read16(struct pci_priv *p, struct pci_dev *v, unsigned off, uint16_t *val)
{
	ssize_t n = p->mode == MODE_VFIO ? pread(v->device, val, 2, (off_t)(v->cfg_off + off))
					 : pread(v->cfg_fd, val, 2, (off_t)off);
	return n == 2 ? 0 : (n < 0 ? -errno : -EIO);
}

static int cfg_write16(struct pci_priv *p, struct pci_dev *v, unsigned off, uint16_t val)
{
	ssize_t n = p->mode == MODE_VFIO ? pwrite(v->device, &val, 2, (off_t)(v->cfg_off + off))
					 : pwrite(v->cfg_fd, &val, 2, (off_t)off);
	return n == 2 ? 0 : (n < 0 ? -errno : -EIO);
}

/* Memory decoding for BAR0 and bus mastering for DMA; the controller may
 * not master until this is set (neither vfio-pci nor uio_pci_generic do it). */
static int enable_master(struct pci_priv *p, struct pci_dev *v, char *err, size_t errlen)
{
	uint16_t cmd;
	int r = cfg_read16(p, v, PCI_COMMAND, &cmd);
	if (!r && (cmd & (PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER)) != (PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER))
		r = cfg_write16(p, v, PCI_COMMAND, (uint16_t)(cmd | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER));
	if (r) {
		snprintf(err, errlen, "pci:%s: enable bus mastering in the command register: %s", v->bdf, strerror(-r));
		return r;
	}
	v->master = 1;
	return 0;
}

static void disable_master(struct pci_priv *p, struct pci_dev *v)
{
	uint16_t cmd;
	if (v->master && !cfg_read16(p, v, PCI_COMMAND, &cmd))
		cfg_write16(p, v, PCI_COMMAND, (uint16_t)(cmd & ~PCI_COMMAND_MASTER));
	v->master = 0;
}

/* ---- vfio ---------------------------------------------------------------------- */

/* A VFIO info query. Every info struct starts with argsz; the kernel raises
 * it when capabilities follow, and then we ask again with room for them.
 * init holds the struct as passed in (argsz, and the index for regions). */
static void *vfio_info(int fd, unsigned long req, const void *init, size_t size)
{
	void *buf = NULL;
	uint32_t argsz = (uint32_t)size;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		void *b = realloc(buf, argsz);
		if (!b)
			break;
		buf = b;
		memset(buf, 0, argsz);
		memcpy(buf, init, size);
		memcpy(buf, &argsz, sizeof(argsz));
		if (ioctl(fd, req, buf))
			break;
		memcpy(&argsz, buf, sizeof(argsz));
		if (argsz <= size || pass == 1)
			return buf;
	}
	free(buf);
	return NULL;
}

static struct vfio_region_info *vfio_region(int device, uint32_t index)
{
	struct vfio_region_info ri;
	memset(&ri, 0, sizeof(ri));
	ri.index = index;
	return (struct vfio_region_info *)vfio_info(device, VFIO_DEVICE_GET_REGION_INFO, &ri, sizeof(ri));
}

static const struct vfio_info_cap_header *find_cap(const void *info, uint32_t argsz, uint32_t first, uint16_t id)
{
	uint32_t off = first;
	int guard = 0;
	while (off && off + sizeof(struct vfio_info_cap_header) <= argsz && guard++ < 64) {
		const struct vfio_info_cap_header *h = (const struct vfio_info_cap_header *)((const char *)info + off);
		if (h->id == id)
			return h;
		off = h->next;
	}
	return NULL;
}

/* The IOVA windows the IOMMU accepts (outside them: reserved regions such
 * as the MSI doorbell window, or beyond the address width). */
static int vfio_iova_ranges(struct pci_priv *p, char *err, size_t errlen)
{
	struct vfio_iommu_type1_info init;
	struct vfio_iommu_type1_info *info;
	const struct vfio_info_cap_header *h;
	unsigned i;

	memset(&init, 0, sizeof(init));
	info = (struct vfio_iommu_type1_info *)vfio_info(p->container, VFIO_IOMMU_GET_INFO, &init, sizeof(init));
	if (!info) {
		snprintf(err, errlen, "pci:%s: VFIO_IOMMU_GET_INFO: %s", p->dev[0].bdf, strerror(errno));
		return -EIO;
	}
	if ((info->flags & VFIO_IOMMU_INFO_PGSIZES) && !(info->iova_pgsizes & 4096u)) {
		snprintf(err, errlen, "pci:%s: the IOMMU maps no 4 KiB pages (page sizes 0x%llx)", p->dev[0].bdf,
			 (unsigned long long)info->iova_pgsizes);
		free(info);
		return -EOPNOTSUPP;
	}
	h = (info->flags & VFIO_IOMMU_INFO_CAPS)
		    ? find_cap(info, info->argsz, info->cap_offset, VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE)
		    : NULL;
	if (h) {
		const struct vfio_iommu_type1_info_cap_iova_range *cr =
			(const struct vfio_iommu_type1_info_cap_iova_range *)h;
		for (i = 0; i < cr->nr_iovas && p->nranges < MAX_IOVA_RANGES; i++) {
			p->range[p->nranges].start = cr->iova_ranges[i].start;
			p->range[p->nranges].end = cr->iova_ranges[i].end;
			p->nranges++;
		}
	}
	free(info);
	return 0;
}

/* IOVAs only grow: one allocation never reuses another's addresses, and
 * the gap after each (gpuos_iova_after) makes an overrun an IOMMU fault. */
static int iova_pick_locked(struct gpuos_ctrl *c, struct pci_priv *p, size_t len, uint64_t *out)
{
	uint64_t a = GPUOS_ALIGN_UP(c->next_iova, GPUOS_IOVA_ALIGN);
	unsigned i;

	if (p->nranges == 0) {
		*out = a;
		c->next_iova = gpuos_iova_after(a, len);
		return 0;
	}
	for (i = 0; i < p->nranges; i++) {
		uint64_t s = p->range[i].start, e = p->range[i].end;
		if (e < a)
			continue;
		if (s > a)
			a = GPUOS_ALIGN_UP(s, GPUOS_IOVA_ALIGN);
		if (a + len > a && a + len - 1u <= e) {
			*out = a;
			c->next_iova = gpuos_iova_after(a, len);
			return 0;
		}
	}
	return -ENOSPC;
}

/* A group's runtimes pick from their own threads (boot/ctrl/ctrl.h, iova_lock). */
static int iova_pick(struct gpuos_ctrl *c, struct pci_priv *p, size_t len, uint64_t *out)
{
	int r;
	pthread_mutex_lock(&c->iova_lock);
	r = iova_pick_locked(c, p, len, out);
	pthread_mutex_unlock(&c->iova_lock);
	return r;
}

static int vfio_map(struct gpuos_ctrl *c, struct pci_priv *p, void *ptr, size_t len, uint64_t *iova)
{
	struct vfio_iommu_type1_dma_map m;
	uint64_t a;
	int r = iova_pick(c, p, len, &a);

	if (r)
		return r;
	memset(&m, 0, sizeof(m));
	m.argsz = sizeof(m);
	m.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
	m.vaddr = (uint64_t)(uintptr_t)ptr;
	m.iova = a;
	m.size = len;
	/* Pins the pages and programs the IOMMU: the controller may DMA at
	 * [a, a+len) from the moment this returns. */
	if (ioctl(p->container, VFIO_IOMMU_MAP_DMA, &m))
		return -errno;
	*iova = a;
	p->dma_regions++;
	p->dma_bytes += len;
	return 0;
}

static void vfio_unmap(struct pci_priv *p, uint64_t iova, size_t len)
{
	struct vfio_iommu_type1_dma_unmap u;
	memset(&u, 0, sizeof(u));
	u.argsz = sizeof(u);
	u.iova = iova;
	u.size = len;
	if (!ioctl(p->container, VFIO_IOMMU_UNMAP_DMA, &u)) {
		p->dma_regions--;
		p->dma_bytes -= len;
	}
}

/* Devices of the group that keep it from being viable: bound to a host driver. */
static void group_blockers(struct pci_dev *v, char *buf, size_t len)
{
	char path[PATH_MAX];
	DIR *d;
	struct dirent *e;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/sys/kernel/iommu_groups/%s/devices", v->group_name);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char drv[64];
		if (e->d_name[0] == '.' || gpuos_pci_driver(e->d_name, drv, sizeof(drv)) || !drv[0] ||
		    !strcmp(drv, GPUOS_PCI_DRV_VFIO) || !strcmp(drv, "pci-stub") || !strcmp(drv, "pcieport"))
			continue;
		if (strlen(buf) + strlen(e->d_name) + strlen(drv) + 8 < len)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s (%s)", buf[0] ? ", " : "", e->d_name, drv);
	}
	closedir(d);
}

static int has_iommu_group(struct pci_dev *v, char *err, size_t errlen)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), SYS_PCI "%s/iommu_group", v->bdf);
	if (access(path, F_OK) == 0)
		return 0;
	snprintf(err, errlen,
		 "pci:%s has no IOMMU group: the IOMMU is off (VT-d/AMD-Vi in the firmware, intel_iommu=on "
		 "or amd_iommu=on on the kernel command line), or use pci:%s,mode=uio",
		 v->bdf, v->bdf);
	return -ENODEV;
}

/* The IOMMU group of device v: its name, and its fd, opened here or shared
 * with an earlier device of the list in the same group (a group opens
 * once); a group of its own joins the container. */
static int vfio_group(struct pci_priv *p, unsigned i, char *err, size_t errlen)
{
	struct pci_dev *v = &p->dev[i];
	char path[PATH_MAX], link[PATH_MAX];
	struct vfio_group_status gs;
	unsigned j;
	int k, r;
	ssize_t n;

	if ((r = has_iommu_group(v, err, errlen)))
		return r;
	snprintf(path, sizeof(path), SYS_PCI "%s/iommu_group", v->bdf);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return -ENODEV;
	link[n] = 0;
	if (snprintf(v->group_name, sizeof(v->group_name), "%s", strrchr(link, '/') ? strrchr(link, '/') + 1 : link) >=
	    (int)sizeof(v->group_name)) {
		snprintf(err, errlen, "pci:%s: unexpected IOMMU group %s", v->bdf, link);
		return -EIO;
	}
	for (j = 0; j < i; j++)
		if (!strcmp(p->dev[j].group_name, v->group_name))
			return 0; /* v->group stays -1: group_fd finds the earlier one */

	snprintf(path, sizeof(path), "/dev/vfio/%s", v->group_name);
	if (!strncmp(v->group_name, "noiommu-", 8) || access(path, F_OK) != 0) {
		char nio[PATH_MAX];
		snprintf(nio, sizeof(nio), "/dev/vfio/noiommu-%s", v->group_name);
		if (!strncmp(v->group_name, "noiommu-", 8) || !access(nio, F_OK)) {
			snprintf(err, errlen, "pci:%s: VFIO's no-IOMMU mode is not supported: use pci:%s,mode=uio", v->bdf,
				 v->bdf);
			return -EOPNOTSUPP;
		}
	}
	/* The group's node appears when vfio-pci binds; give udev a moment. */
	for (k = 0; k < 100; k++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		v->group = open(path, O_RDWR | O_CLOEXEC);
		if (v->group >= 0 || errno != ENOENT)
			break;
		nanosleep(&ts, NULL);
	}
	if (v->group < 0) {
		r = -errno;
		snprintf(err, errlen, "pci:%s: open %s: %s%s", v->bdf, path, strerror(errno),
			 r == -EBUSY ? " (another process, another gpuos or a VM, holds the IOMMU group)" : "");
		return r;
	}
	memset(&gs, 0, sizeof(gs));
	gs.argsz = sizeof(gs);
	if (ioctl(v->group, VFIO_GROUP_GET_STATUS, &gs)) {
		snprintf(err, errlen, "pci:%s: VFIO_GROUP_GET_STATUS: %s", v->bdf, strerror(errno));
		return -EIO;
	}
	if (!(gs.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		char who[512];
		group_blockers(v, who, sizeof(who));
		snprintf(err, errlen,
			 "pci:%s: IOMMU group %s is not viable: %s %s it; bind every device of the group to vfio-pci, "
			 "or see docs/hardware.md on ACS",
			 v->bdf, v->group_name, who[0] ? who : "other devices", who[0] && strchr(who, ',') ? "share" : "shares");
		return -EBUSY;
	}
	if (ioctl(v->group, VFIO_GROUP_SET_CONTAINER, &p->container)) {
		snprintf(err, errlen, "pci:%s: add IOMMU group %s to a VFIO container: %s", v->bdf, v->group_name,
			 strerror(errno));
		return -EIO;
	}
	return 0;
}

/* The open group fd of device i (its own, or the earlier device's it shares). */
static int group_fd(struct pci_priv *p, unsigned i)
{
	unsigned j;
	for (j = 0; j <= i; j++)
		if (p->dev[j].group >= 0 && !strcmp(p->dev[j].group_name, p->dev[i].group_name))
			return p->dev[j].group;
	return -1;
}

/* BAR0 of VFIO region bar into v->bar, its registers' length into
 * v->regs_len. */
static int map_bar0(struct pci_dev *v, const struct vfio_region_info *bar, char *err, size_t errlen)
{
	const struct vfio_info_cap_header *h;

	h = (bar->flags & VFIO_REGION_INFO_FLAG_CAPS)
		    ? find_cap(bar, bar->argsz, bar->cap_offset, VFIO_REGION_INFO_CAP_SPARSE_MMAP)
		    : NULL;
	v->bar_map_len = bar->size;
	if (!h) {
		v->bar = mmap(NULL, bar->size, PROT_READ | PROT_WRITE, MAP_SHARED, v->device, (off_t)bar->offset);
		if (v->bar == MAP_FAILED) {
			v->bar = NULL;
			snprintf(err, errlen, "pci:%s: map BAR0: %s", v->bdf, strerror(errno));
			return -EIO;
		}
		v->regs_len = bar->size;
	} else {
		/* Only parts of BAR0 may be mapped (the MSI-X table is left out
		 * without interrupt remapping): map those into one reservation,
		 * so offsets stay offsets; the registers and doorbells are the
		 * part that starts at 0. */
		const struct vfio_region_info_cap_sparse_mmap *sp = (const struct vfio_region_info_cap_sparse_mmap *)h;
		uint32_t a;
		v->bar = mmap(NULL, bar->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (v->bar == MAP_FAILED) {
			v->bar = NULL;
			return -ENOMEM;
		}
		v->regs_len = 0;
		for (a = 0; a < sp->nr_areas; a++) {
			const struct vfio_region_sparse_mmap_area *ar = &sp->areas[a];
			if (ar->size == 0 || ar->offset + ar->size > bar->size)
				continue;
			if (mmap((char *)v->bar + ar->offset, ar->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
				 v->device, (off_t)(bar->offset + ar->offset)) == MAP_FAILED) {
				snprintf(err, errlen, "pci:%s: map BAR0 at 0x%llx: %s", v->bdf,
					 (unsigned long long)ar->offset, strerror(errno));
				return -EIO;
			}
			if (ar->offset == 0)
				v->regs_len = ar->size;
		}
		if (v->regs_len == 0) {
			snprintf(err, errlen, "pci:%s: VFIO offers no mapping of BAR0's registers (offset 0)", v->bdf);
			return -EOPNOTSUPP;
		}
	}
	return 0;
}

/* Device i's fd, config space and BAR0 (the registers of member i). */
static int vfio_device(struct gpuos_ctrl *c, struct pci_priv *p, unsigned i, char *err, size_t errlen)
{
	struct pci_dev *v = &p->dev[i];
	struct vfio_device_info di;
	struct vfio_region_info *bar = NULL, *cfg = NULL;
	int r;

	v->device = ioctl(group_fd(p, i), VFIO_GROUP_GET_DEVICE_FD, v->bdf);
	if (v->device < 0) {
		r = -errno;
		snprintf(err, errlen, "pci:%s: VFIO_GROUP_GET_DEVICE_FD: %s%s", v->bdf, strerror(errno),
			 r == -EBUSY ? " (in use by another process)" : "");
		return r;
	}
	memset(&di, 0, sizeof(di));
	di.argsz = sizeof(di);
	if (ioctl(v->device, VFIO_DEVICE_GET_INFO, &di) || !(di.flags & VFIO_DEVICE_FLAGS_PCI) ||
	    di.num_regions <= VFIO_PCI_CONFIG_REGION_INDEX) {
		snprintf(err, errlen, "pci:%s: VFIO does not describe it as a PCI device", v->bdf);
		return -EIO;
	}
	cfg = vfio_region(v->device, VFIO_PCI_CONFIG_REGION_INDEX);
	bar = vfio_region(v->device, VFIO_PCI_BAR0_REGION_INDEX);
	if (!cfg || !bar || bar->size == 0) {
		snprintf(err, errlen, "pci:%s: no config space or BAR0 region", v->bdf);
		r = -EIO;
		goto out;
	}
	v->cfg_off = cfg->offset;
	if (!(bar->flags & VFIO_REGION_INFO_FLAG_MMAP)) {
		snprintf(err, errlen, "pci:%s: VFIO does not let BAR0 be mapped", v->bdf);
		r = -EOPNOTSUPP;
		goto out;
	}
	r = map_bar0(v, bar, err, errlen);
	if (r)
		goto out;
	c->member[i].regs = (volatile uint32_t *)v->bar;
	c->member[i].regs_len = v->regs_len;
	r = enable_master(p, v, err, errlen);
out:
	free(bar);
	free(cfg);
	return r;
}

/* One container for every device of the list: the groups join it, then
 * the type1 IOMMU is set (it needs a group), then the devices open. */
static int vfio_open(struct gpuos_ctrl *c, struct pci_priv *p, char *err, size_t errlen)
{
	const char *bdf = p->dev[0].bdf;
	unsigned i;
	int type, r;

	if (geteuid() != 0) {
		struct rlimit rl;
		if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < MEMLOCK_WANT) {
			snprintf(err, errlen,
				 "pci:%s: VFIO pins DMA memory against RLIMIT_MEMLOCK, which is %llu KiB: raise it "
				 "(ulimit -l, limits.conf) or run as root",
				 bdf, (unsigned long long)rl.rlim_cur / 1024u);
			return -ENOMEM;
		}
	}
	p->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (p->container < 0) {
		r = -errno;
		snprintf(err, errlen, "pci:%s: open /dev/vfio/vfio: %s%s", bdf, strerror(errno),
			 r == -ENOENT ? " (modprobe vfio-pci)" : r == -EACCES ? " (needs root or the vfio group)" : "");
		return r;
	}
	if (ioctl(p->container, VFIO_GET_API_VERSION) != VFIO_API_VERSION) {
		snprintf(err, errlen, "pci:%s: the kernel's VFIO API is not version %d", bdf, VFIO_API_VERSION);
		return -EOPNOTSUPP;
	}
	if (ioctl(p->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) > 0)
		type = VFIO_TYPE1v2_IOMMU;
	else if (ioctl(p->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1_IOMMU) > 0)
		type = VFIO_TYPE1_IOMMU;
	else {
		snprintf(err, errlen, "pci:%s: the kernel's VFIO has no type1 IOMMU backend (modprobe vfio_iommu_type1)",
			 bdf);
		return -EOPNOTSUPP;
	}
	for (i = 0; i < p->ndev; i++) {
		if ((r = vfio_group(p, i, err, errlen)))
			return r;
		if (i == 0 && ioctl(p->container, VFIO_SET_IOMMU, type)) {
			r = -errno;
			/* type1 refuses an IOMMU without interrupt remapping: a device
			 * could then forge MSIs. Seen under QEMU's intel-iommu,intremap=off. */
			snprintf(err, errlen, "pci:%s: VFIO_SET_IOMMU (type1): %s%s", bdf, strerror(-r),
				 r == -EPERM ? " (the IOMMU has no interrupt remapping; vfio_iommu_type1 then needs "
					       "allow_unsafe_interrupts=1, see docs/hardware.md)"
					     : "");
			return r;
		}
	}
	/* After every group joined: the windows of all of them together. */
	if ((r = vfio_iova_ranges(p, err, errlen)))
		return r;
	for (i = 0; i < p->ndev; i++)
		if ((r = vfio_device(c, p, i, err, errlen)))
			return r;
	return 0;
}

/* ---- uio ------------------------------------------------------------------------ */

/* uio hands the controller physical addresses: refuse where an IOMMU
 * translates the device's DMA (they would fault, or worse, hit other
 * IOVAs); identity (iommu=pt) and no IOMMU are fine. */
static int uio_iommu_ok(struct pci_dev *v, char *err, size_t errlen)
{
	char path[PATH_MAX], type[64];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), SYS_PCI "%s/iommu_group/type", v->bdf);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* no IOMMU group: no translation */
	n = read(fd, type, sizeof(type) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	type[n] = 0;
	type[strcspn(type, "\n")] = 0;
	if (!strcmp(type, "identity"))
		return 0;
	snprintf(err, errlen,
		 "pci:%s: the IOMMU translates this device's DMA (IOMMU group type %s), so the physical "
		 "addresses uio gives it would fault: use mode=vfio, or boot with iommu=pt",
		 v->bdf, type);
	return -EOPNOTSUPP;
}

/* Device i's BAR0 through sysfs and its config space (member i). */
static int uio_device(struct gpuos_ctrl *c, struct pci_priv *p, unsigned i, char *err, size_t errlen)
{
	struct pci_dev *v = &p->dev[i];
	char path[PATH_MAX];
	struct stat st;
	int r;

	snprintf(path, sizeof(path), SYS_PCI "%s/resource0", v->bdf);
	v->res_fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC);
	if (v->res_fd < 0) {
		r = -errno;
		snprintf(err, errlen, "pci:%s: open %s: %s%s", v->bdf, path, strerror(errno),
			 r == -EACCES || r == -EPERM ? " (uio needs root)" : "");
		return r;
	}
	/* uio itself lets any number of processes map the BAR: a lock keeps
	 * two gpuos off one controller. */
	if (flock(v->res_fd, LOCK_EX | LOCK_NB)) {
		snprintf(err, errlen, "pci:%s is in use by another gpuos (its resource0 is locked)", v->bdf);
		return -EBUSY;
	}
	if (fstat(v->res_fd, &st) || st.st_size <= 0) {
		snprintf(err, errlen, "pci:%s: BAR0 has no size", v->bdf);
		return -EIO;
	}
	v->bar_map_len = (size_t)st.st_size;
	v->bar = mmap(NULL, v->bar_map_len, PROT_READ | PROT_WRITE, MAP_SHARED, v->res_fd, 0);
	if (v->bar == MAP_FAILED) {
		r = -errno;
		v->bar = NULL;
		snprintf(err, errlen, "pci:%s: map BAR0 through sysfs: %s%s", v->bdf, strerror(-r),
			 r == -EPERM ? " (kernel lockdown, e.g. under Secure Boot, forbids it: use mode=vfio)" : "");
		return r;
	}
	v->regs_len = v->bar_map_len;
	c->member[i].regs = (volatile uint32_t *)v->bar;
	c->member[i].regs_len = v->regs_len;
	snprintf(path, sizeof(path), SYS_PCI "%s/config", v->bdf);
	v->cfg_fd = open(path, O_RDWR | O_CLOEXEC);
	if (v->cfg_fd < 0) {
		r = -errno;
		snprintf(err, errlen, "pci:%s: open %s: %s", v->bdf, path, strerror(errno));
		return r;
	}
	return enable_master(p, v, err, errlen);
}

/* Hugepages for every device's DMA (physical addresses mean the same to
 * all of them), then each device. */
static int uio_open(struct gpuos_ctrl *c, struct pci_priv *p, char *err, size_t errlen)
{
	char why[256];
	unsigned i;
	int r;

	r = gpuos_hugemem_create(&p->hm, why, sizeof(why));
	if (r) {
		snprintf(err, errlen, "pci:%s: %s", p->dev[0].bdf, why);
		return r;
	}
	for (i = 0; i < p->ndev; i++)
		if ((r = uio_device(c, p, i, err, errlen)))
			return r;
	return 0;
}

/* ---- the ops ------------------------------------------------------------------- */

static void pci_close(struct gpuos_ctrl *c)
{
	struct pci_priv *p = (struct pci_priv *)c->priv;
	unsigned i;
	if (!p)
		return;
	for (i = 0; i < p->ndev; i++) {
		struct pci_dev *v = &p->dev[i];
		if (v->bar_gpu)
			gpuos_gpu_io_unregister(c->gpu, v->bar);
		/* The controller is shut down by now; without bus mastering it
		 * cannot DMA into memory that is given back below, whatever state
		 * it is in. */
		disable_master(p, v);
		if (v->bar)
			munmap(v->bar, v->bar_map_len);
		if (v->device >= 0)
			close(v->device);
		if (v->cfg_fd >= 0)
			close(v->cfg_fd);
		if (v->res_fd >= 0)
			close(v->res_fd);
	}
	for (i = 0; i < p->ndev; i++)
		if (p->dev[i].group >= 0)
			close(p->dev[i].group); /* leaves the container, which drops its IOMMU mappings */
	if (p->container >= 0)
		close(p->container);
	gpuos_hugemem_destroy(p->hm);
	free(p);
	c->priv = NULL;
}

#define PCI_USAGE "expected pci:DDDD:BB:DD.F[,mode=vfio|uio], or an array pci:A+B+...[,mode=...][,stripe=KiB]"

/* "A[+B...][,mode=vfio|uio][,stripe=KiB]"; a device of the list may repeat
 * the "pci:" prefix. */
static int parse_args(const char *args, struct pci_priv *p, int *have_mode, uint32_t *stripe_kib, char *err,
		      size_t errlen)
{
	const char *comma = strchr(args, ','), *item = args, *end = comma ? comma : args + strlen(args);
	size_t n;
	unsigned i;

	*have_mode = 0;
	p->ndev = 0;
	while (item <= end) {
		const char *plus = memchr(item, '+', (size_t)(end - item));
		const char *stop = plus ? plus : end;
		struct pci_dev *v = &p->dev[p->ndev];
		if (p->ndev > 0 && (size_t)(stop - item) > 4 && !strncmp(item, "pci:", 4))
			item += 4;
		if (p->ndev == GPUOS_CTRL_MAX_MEMBERS) {
			snprintf(err, errlen, "device 'pci:%s': at most %u controllers in an array", args,
				 GPUOS_CTRL_MAX_MEMBERS);
			return -EINVAL;
		}
		if (gpuos_pci_parse_bdf(item, (size_t)(stop - item), v->bdf)) {
			snprintf(err, errlen, "device 'pci:%s': %s", args, PCI_USAGE);
			return -EINVAL;
		}
		for (i = 0; i < p->ndev; i++)
			if (!strcmp(p->dev[i].bdf, v->bdf)) {
				snprintf(err, errlen, "device 'pci:%s': %s is listed twice", args, v->bdf);
				return -EINVAL;
			}
		p->ndev++;
		item = stop + 1;
	}
	while (comma) {
		const char *opt = comma + 1;
		comma = strchr(opt, ',');
		n = comma ? (size_t)(comma - opt) : strlen(opt);
		if (n == 9 && !strncmp(opt, "mode=vfio", 9)) {
			p->mode = MODE_VFIO;
			*have_mode = 1;
		} else if (n == 8 && !strncmp(opt, "mode=uio", 8)) {
			p->mode = MODE_UIO;
			*have_mode = 1;
		} else if (n > 7 && !strncmp(opt, "stripe=", 7)) {
			char num[16], *e;
			unsigned long v;
			snprintf(num, sizeof(num), "%.*s", (int)(n - 7), opt + 7);
			v = strtoul(num, &e, 10);
			if (n - 7 >= sizeof(num) || *e || num[0] < '0' || num[0] > '9' || v == 0 || v % 4u ||
			    v > (1ul << 20)) {
				snprintf(err, errlen,
					 "device 'pci:%s': stripe=%.*s: the chunk size in KiB, a multiple of 4, up to 1 GiB",
					 args, (int)(n - 7), opt + 7);
				return -EINVAL;
			}
			*stripe_kib = (uint32_t)v;
		} else {
			snprintf(err, errlen, "device 'pci:%s': unknown option '%.*s' (mode=vfio, mode=uio or stripe=KiB)",
				 args, (int)n, opt);
			return -EINVAL;
		}
	}
	return 0;
}

/* May device i be taken from the host (docs/hardware.md)? 0 or the refusal. */
static int pci_check(struct gpuos_ctrl *c, struct pci_priv *p, unsigned i, char *err, size_t errlen)
{
	struct pci_dev *v = &p->dev[i];
	const char *want = p->mode == MODE_VFIO ? GPUOS_PCI_DRV_VFIO : GPUOS_PCI_DRV_UIO;
	char why[512];
	int r;

	if (p->mode == MODE_UIO && (r = uio_iommu_ok(v, err, errlen)))
		return r;
	if (p->mode == MODE_VFIO && (r = has_iommu_group(v, err, errlen)))
		return r; /* before binding: vfio-pci would refuse it and leave it without a driver */
	/* Taking it from its driver needs the checks; so does uio when already
	 * bound, since uio itself lets any number of processes in. */
	if (!c->force && (strcmp(v->drv, want) || p->mode == MODE_UIO) &&
	    (r = gpuos_pci_check_free(v->bdf, why, sizeof(why)))) {
		const char *hint = "--force overrides";
		if (strstr(why, "in use by"))
			hint = "stop it first";
		else if (strstr(why, "bound to the kernel's"))
			hint = "scripts/vfio-bind.sh hands it over, or --force overrides";
		snprintf(err, errlen, "pci:%s: refusing to take the controller: %s (%s)", v->bdf, why, hint);
		return r;
	}
	return 0;
}

/* Device i to the driver of the mode, after pci_check. */
static int pci_bind(struct pci_priv *p, unsigned i, char *err, size_t errlen)
{
	struct pci_dev *v = &p->dev[i];
	const char *want = p->mode == MODE_VFIO ? GPUOS_PCI_DRV_VFIO : GPUOS_PCI_DRV_UIO;
	char why[512];
	int r;
	if (strcmp(v->drv, want) && (r = gpuos_pci_bind(v->bdf, want, why, sizeof(why)))) {
		snprintf(err, errlen, "pci:%s: bind to %s: %s", v->bdf, want, why);
		return r;
	}
	return 0;
}

static int pci_parse(const char *args, char *err, size_t errlen)
{
	struct pci_priv *p = (struct pci_priv *)calloc(1, sizeof(*p));
	uint32_t stripe_kib = GPUOS_CTRL_STRIPE_KIB;
	int have_mode, r;
	if (!p)
		return -ENOMEM;
	r = parse_args(args, p, &have_mode, &stripe_kib, err, errlen);
	free(p);
	return r;
}

static int pci_open(struct gpuos_ctrl *c, const char *args, char *err, size_t errlen)
{
	struct pci_priv *p = (struct pci_priv *)calloc(1, sizeof(*p));
	char why[512], cls[32];
	uint32_t stripe_kib = GPUOS_CTRL_STRIPE_KIB;
	unsigned i, nuio = 0;
	int have_mode, r;

	if (!p)
		return -ENOMEM;
	p->container = -1;
	for (i = 0; i < GPUOS_CTRL_MAX_MEMBERS; i++)
		p->dev[i].group = p->dev[i].device = p->dev[i].cfg_fd = p->dev[i].res_fd = -1;
	p->mode = MODE_VFIO;
	c->priv = p;
	c->dma_host_only = 1;
	r = parse_args(args, p, &have_mode, &stripe_kib, err, errlen);
	if (r)
		goto fail;
	/* Every device is looked at before any is taken: a bad one anywhere in
	 * the list leaves all of them as they were. */
	for (i = 0; i < p->ndev; i++) {
		struct pci_dev *v = &p->dev[i];
		unsigned long klass;
		if (gpuos_pci_driver(v->bdf, v->drv, sizeof(v->drv))) {
			snprintf(err, errlen, "pci:%s: no such PCI device (lspci -D lists them)", v->bdf);
			r = -ENODEV;
			goto fail;
		}
		if (!gpuos_pci_attr(v->bdf, "class", cls, sizeof(cls)) &&
		    (klass = strtoul(cls, NULL, 16)) != GPUOS_PCI_CLASS_NVME && !c->force) {
			snprintf(err, errlen, "pci:%s is not an NVMe controller (PCI class 0x%06lx); --force tries anyway",
				 v->bdf, klass);
			r = -ENODEV;
			goto fail;
		}
		nuio += !strcmp(v->drv, GPUOS_PCI_DRV_UIO);
	}
	/* Already under uio_pci_generic (all of them): stay with it. */
	if (!have_mode && nuio == p->ndev)
		p->mode = MODE_UIO;
	for (i = 0; i < p->ndev; i++)
		if ((r = pci_check(c, p, i, err, errlen)))
			goto fail;
	for (i = 0; i < p->ndev; i++)
		if ((r = pci_bind(p, i, err, errlen)))
			goto fail;
	r = p->mode == MODE_VFIO ? vfio_open(c, p, err, errlen) : uio_open(c, p, err, errlen);
	if (r)
		goto fail;
	for (i = 0; i < p->ndev; i++) {
		struct pci_dev *v = &p->dev[i];
		struct gpuos_ctrl_member *m = &c->member[i];
		if (c->gpu) {
			r = gpuos_gpu_io_register(c->gpu, v->bar, v->regs_len, &m->regs_rt, why, sizeof(why));
			if (r) {
				snprintf(err, errlen, "pci:%s: %s", v->bdf, why);
				goto fail;
			}
			v->bar_gpu = 1;
		} else {
			m->regs_rt = (uint64_t)(uintptr_t)m->regs;
		}
		snprintf(m->name, sizeof(m->name), "pci:%s", v->bdf);
	}
	c->nmembers = p->ndev;
	c->stripe_kib = stripe_kib;
	return 0;
fail:
	pci_close(c);
	return r;
}

static int pci_alloc(struct gpuos_ctrl *c, size_t len, void **host, uint64_t *iova)
{
	struct pci_priv *p = (struct pci_priv *)c->priv;
	void *m;
	int r;

	if (p->mode == MODE_UIO) {
		r = gpuos_hugemem_alloc(p->hm, len, host, iova);
		if (!r) {
			p->dma_regions++;
			p->dma_bytes += len;
		}
		return r;
	}
	/* Anonymous pages: VFIO pins them (it cannot pin the driver-owned
	 * pages of cudaHostAlloc); the GPU registers them on top. */
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	/* A child would share these pages copy-on-write and the first write
	 * would move them away from the pinned copy the controller sees. */
	madvise(m, len, MADV_DONTFORK);
	r = vfio_map(c, p, m, len, iova);
	if (r) {
		munmap(m, len);
		return r;
	}
	*host = m;
	return 0;
}

static void pci_free(struct gpuos_ctrl *c, void *host, uint64_t iova, size_t len)
{
	struct pci_priv *p = (struct pci_priv *)c->priv;
	if (p->mode == MODE_UIO) {
		gpuos_hugemem_free(p->hm, host);
		p->dma_regions--;
		p->dma_bytes -= len;
		return;
	}
	vfio_unmap(p, iova, len);
	munmap(host, len);
}

static int pci_map(struct gpuos_ctrl *c, void *ptr, size_t len, int vram, uint64_t *iova)
{
	struct pci_priv *p = (struct pci_priv *)c->priv;
	/* VRAM would need P2P DMA (dma-buf or nvidia-peermem), which VFIO type1
	 * cannot map; under uio only our own hugepages are contiguous and stay
	 * put. Callers allocate through pci_alloc instead (dma_host_only). */
	if (vram || p->mode == MODE_UIO || ((uintptr_t)ptr | len) & 4095u)
		return -EOPNOTSUPP;
	return vfio_map(c, p, ptr, len, iova);
}

static void pci_unmap(struct gpuos_ctrl *c, uint64_t iova, size_t len)
{
	struct pci_priv *p = (struct pci_priv *)c->priv;
	if (p->mode == MODE_VFIO)
		vfio_unmap(p, iova, len);
}

static void pci_describe(struct gpuos_ctrl *c, char *buf, size_t len)
{
	struct pci_priv *p = (struct pci_priv *)c->priv;
	char devs[GPUOS_CTRL_MAX_MEMBERS * 48] = "";
	unsigned i;
	size_t o = 0;
	/* "pci:A (IOMMU group 12)+B (...)" under vfio, "pci:A+B" under uio */
	for (i = 0; i < p->ndev && o < sizeof(devs); i++) {
		const struct pci_dev *v = &p->dev[i];
		int k = p->mode == MODE_VFIO ? snprintf(devs + o, sizeof(devs) - o, "%s%s (IOMMU group %s)", i ? "+" : "",
							v->bdf, v->group_name)
					     : snprintf(devs + o, sizeof(devs) - o, "%s%s", i ? "+" : "", v->bdf);
		o += k > 0 ? (size_t)k : 0;
	}
	if (p->mode == MODE_VFIO)
		snprintf(buf, len, "pci:%s through vfio: %u DMA regions, %llu KiB mapped%s", devs, p->dma_regions,
			 (unsigned long long)p->dma_bytes / 1024u, p->dev[0].bar_gpu ? ", doorbells written by the GPU" : "");
	else
		snprintf(buf, len, "pci:%s through uio: %u DMA regions, %llu KiB in %llu MiB of hugepages%s", devs,
			 p->dma_regions, (unsigned long long)p->dma_bytes / 1024u,
			 (unsigned long long)(gpuos_hugemem_bytes_mapped(p->hm) >> 20),
			 p->dev[0].bar_gpu ? ", doorbells written by the GPU" : "");
}

const struct gpuos_ctrl_ops gpuos_ctrl_pci_ops = {
	.prefix = "pci:",
	.open = pci_open,
	.parse = pci_parse,
	.close = pci_close,
	.map = pci_map,
	.unmap = pci_unmap,
	.alloc = pci_alloc,
	.free = pci_free,
	.describe = pci_describe,
	.lists = 1,
	.pins = 1,
};

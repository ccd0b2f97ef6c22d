/* SPDX-License-Identifier: MIT */
/*
 * The pci: controller's dealings with the host kernel through sysfs and
 * procfs: which driver holds a device, whether the host still uses it
 * (mounted file systems, the root disk, swap, device mapper, another
 * process; docs/hardware.md, "What gpuos refuses, and --force"), and
 * binding it to vfio-pci or uio_pci_generic.
 * scripts/vfio-bind.sh makes the same checks in shell.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "pci_internal.h"

#define SYS_PCI "/sys/bus/pci/devices/"
#define MAX_BLK 256

struct blkdev {
	char name[64];      /* nvme0n1, nvme0n1p2 */
	char sys[160];      /* its directory under /sys/block */
	unsigned maj, min;
};

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	int e;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int e;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	e = errno;
	close(fd);
	if (n < 0)
		return -e;
	return (size_t)n == strlen(s) ? 0 : -EIO;
}

int gpuos_pci_parse_bdf(const char *s, size_t n, char bdf[GPUOS_PCI_BDF_LEN])
{
	char tmp[GPUOS_PCI_BDF_LEN];
	unsigned dom = 0, bus, dev, fn;
	size_t i;
	int used = -1;

	if (n == 0 || n >= sizeof(tmp))
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) && s[i] != ':' && s[i] != '.')
			return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = 0;
	if (sscanf(tmp, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &used) != 4 || used != (int)n) {
		dom = 0;
		used = -1;
		if (sscanf(tmp, "%x:%x.%x%n", &bus, &dev, &fn, &used) != 3 || used != (int)n)
			return -EINVAL;
	}
	if (bus > 0xff || dev > 0x1f || fn > 7)
		return -EINVAL;
	snprintf(bdf, GPUOS_PCI_BDF_LEN, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

int gpuos_pci_attr(const char *bdf, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), SYS_PCI "%s/%s", bdf, attr);
	return read_file(path, buf, len);
}

int gpuos_pci_driver(const char *bdf, char *drv, size_t len)
{
	char path[PATH_MAX], link[PATH_MAX];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), SYS_PCI "%s", bdf);
	if (access(path, F_OK))
		return -ENODEV;
	snprintf(path, sizeof(path), SYS_PCI "%s/driver", bdf);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		drv[0] = 0;
		return 0;
	}
	link[n] = 0;
	base = strrchr(link, '/');
	snprintf(drv, len, "%s", base ? base + 1 : link);
	return 0;
}

/* The real path of p holds the device's own sysfs directory. */
static int path_under(const char *p, const char *bdf)
{
	char real[PATH_MAX], needle[GPUOS_PCI_BDF_LEN + 2];
	if (!realpath(p, real))
		return 0;
	snprintf(needle, sizeof(needle), "/%s/", bdf);
	strcat(real, "/");
	return strstr(real, needle) != NULL;
}

/* Is block device `disk` a namespace of this controller? Directly under it,
 * or (native NVMe multipath, the default in distribution kernels) a
 * namespace head of a subsystem one of whose controllers it is. */
static int disk_of(const char *bdf, const char *disk)
{
	char path[PATH_MAX], real[PATH_MAX], *sub, *end;
	DIR *d;
	struct dirent *e;
	int mine = 0;

	snprintf(path, sizeof(path), "/sys/block/%s", disk);
	if (path_under(path, bdf))
		return 1;
	if (!realpath(path, real) || !(sub = strstr(real, "/nvme-subsystem/")))
		return 0;
	/* .../nvme-subsystem/nvme-subsysN/nvmeXnY: list the subsystem's controllers */
	end = strchr(sub + strlen("/nvme-subsystem/"), '/');
	if (!end)
		return 0;
	*end = 0;
	d = opendir(real);
	if (!d)
		return 0;
	while (!mine && (e = readdir(d))) {
		if (strncmp(e->d_name, "nvme", 4) || strchr(e->d_name + 4, 'n'))
			continue; /* controllers are nvmeN; namespaces nvmeNnM */
		if (snprintf(path, sizeof(path), "%s/%s", real, e->d_name) < (int)sizeof(path))
			mine = path_under(path, bdf);
	}
	closedir(d);
	return mine;
}

static int add_blk(struct blkdev *b, int n, const char *name, const char *sys)
{
	char path[PATH_MAX], dev[32];
	unsigned maj, min;

	if (n >= MAX_BLK)
		return n;
	snprintf(path, sizeof(path), "/sys/block/%s/dev", sys);
	if (read_file(path, dev, sizeof(dev)) || sscanf(dev, "%u:%u", &maj, &min) != 2)
		return n;
	snprintf(b[n].name, sizeof(b[n].name), "%s", name);
	snprintf(b[n].sys, sizeof(b[n].sys), "%s", sys);
	b[n].maj = maj;
	b[n].min = min;
	return n + 1;
}

/* Namespaces of the controller and their partitions. */
static int list_blk(const char *bdf, struct blkdev *b)
{
	DIR *d = opendir("/sys/block"), *pd;
	struct dirent *e, *pe;
	char path[PATH_MAX], sys[160];
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !disk_of(bdf, e->d_name))
			continue;
		n = add_blk(b, n, e->d_name, e->d_name);
		snprintf(path, sizeof(path), "/sys/block/%s", e->d_name);
		pd = opendir(path);
		if (!pd)
			continue;
		while ((pe = readdir(pd))) {
			struct stat st;
			if (strncmp(pe->d_name, e->d_name, strlen(e->d_name)))
				continue;
			snprintf(path, sizeof(path), "/sys/block/%s/%s/partition", e->d_name, pe->d_name);
			if (stat(path, &st))
				continue;
			if (snprintf(sys, sizeof(sys), "%s/%s", e->d_name, pe->d_name) < (int)sizeof(sys))
				n = add_blk(b, n, pe->d_name, sys);
		}
		closedir(pd);
	}
	closedir(d);
	return n;
}

/* mountinfo escapes blanks as \040 and so on. */
static void unescape(char *s)
{
	char *o = s;
	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = 0;
}

static const char *base_name(const char *p)
{
	const char *b = strrchr(p, '/');
	return b ? b + 1 : p;
}

static int check_mounts(const struct blkdev *b, int n, char *why, size_t whylen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int hit = 0;

	if (!f)
		return 0;
	while (!hit && fgets(line, sizeof(line), f)) {
		char *tok[32], *save = NULL, *t;
		int nt = 0, sep = -1, i;
		unsigned maj, min;

		for (t = strtok_r(line, " \n", &save); t && nt < 32; t = strtok_r(NULL, " \n", &save)) {
			if (!strcmp(t, "-") && sep < 0)
				sep = nt;
			tok[nt++] = t;
		}
		/* id parent maj:min root mountpoint options [optional...] - fstype source superopts */
		if (nt < 5 || sscanf(tok[2], "%u:%u", &maj, &min) != 2)
			continue;
		for (i = 0; i < n; i++) {
			int src = sep > 0 && sep + 2 < nt && !strncmp(tok[sep + 2], "/dev/", 5) &&
				  !strcmp(base_name(tok[sep + 2]), b[i].name);
			if ((maj == b[i].maj && min == b[i].min) || src) {
				unescape(tok[4]);
				snprintf(why, whylen, "%s is mounted at %s%s", b[i].name, tok[4],
					 strcmp(tok[4], "/") ? "" : " (the root file system)");
				hit = 1;
				break;
			}
		}
	}
	fclose(f);
	return hit;
}

/* The root file system's block device, and what it is built on (dm, md). */
static int on_root(const struct blkdev *b, int n, unsigned maj, unsigned min, int depth, char *via, size_t vialen)
{
	char path[PATH_MAX], real[PATH_MAX];
	DIR *d;
	struct dirent *e;
	int i, hit = 0;

	for (i = 0; i < n; i++)
		if (b[i].maj == maj && b[i].min == min)
			return 1;
	if (depth > 8)
		return 0;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/slaves", maj, min);
	d = opendir(path);
	if (!d)
		return 0;
	while (!hit && (e = readdir(d))) {
		char dev[32];
		unsigned smaj, smin;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/slaves/%s/dev", maj, min, e->d_name);
		if (read_file(path, dev, sizeof(dev)) || sscanf(dev, "%u:%u", &smaj, &smin) != 2)
			continue;
		if (on_root(b, n, smaj, smin, depth + 1, via, vialen)) {
			snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", maj, min);
			if (!via[0] && realpath(path, real) && snprintf(via, vialen, "%s", base_name(real)) >= (int)vialen)
				via[0] = 0;
			hit = 1;
		}
	}
	closedir(d);
	return hit;
}

static int check_root(const struct blkdev *b, int n, char *why, size_t whylen)
{
	struct stat st;
	char via[64] = "";

	if (stat("/", &st))
		return 0;
	if (!on_root(b, n, major(st.st_dev), minor(st.st_dev), 0, via, sizeof(via)))
		return 0;
	if (via[0])
		snprintf(why, whylen, "it holds the root file system (through %s)", via);
	else
		snprintf(why, whylen, "it holds the root file system");
	return 1;
}

static int check_swap(const struct blkdev *b, int n, char *why, size_t whylen)
{
	FILE *f = fopen("/proc/swaps", "re");
	char line[1024], name[512];
	int i, hit = 0;

	if (!f)
		return 0;
	while (!hit && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%511s", name) != 1 || strncmp(name, "/dev/", 5))
			continue;
		for (i = 0; i < n; i++)
			if (!strcmp(base_name(name), b[i].name)) {
				snprintf(why, whylen, "%s is in use as swap", b[i].name);
				hit = 1;
				break;
			}
	}
	fclose(f);
	return hit;
}

static int check_holders(const struct blkdev *b, int n, char *why, size_t whylen)
{
	char path[PATH_MAX];
	int i;

	for (i = 0; i < n; i++) {
		DIR *d;
		struct dirent *e;
		snprintf(path, sizeof(path), "/sys/block/%s/holders", b[i].sys);
		d = opendir(path);
		if (!d)
			continue;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(why, whylen, "%s is held by %s (device mapper, LVM or RAID)", b[i].name, e->d_name);
			closedir(d);
			return 1;
		}
		closedir(d);
	}
	return 0;
}

/* What the kernel itself knows: a mounted or claimed block device cannot be
 * opened exclusively (EBUSY). Catches users the checks above do not name. */
static int check_exclusive(const struct blkdev *b, int n, char *why, size_t whylen)
{
	char path[PATH_MAX];
	int i;

	for (i = 0; i < n; i++) {
		int fd;
		snprintf(path, sizeof(path), "/dev/%s", b[i].name);
		fd = open(path, O_RDONLY | O_EXCL | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			continue;
		}
		if (errno == EBUSY) {
			snprintf(why, whylen, "%s is busy (claimed by a file system, swap or another program)", b[i].name);
			return 1;
		}
	}
	return 0;
}

/* Another process holding the device node (an fd on /dev/vfio/N or
 * /dev/uioN) or mapping its BAR (resourceN through sysfs). */
static int find_user(const char *node, const char *bar, char *who, size_t wholen)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char path[PATH_MAX], link[PATH_MAX];
	pid_t self = getpid();
	int hit = 0;

	if (!d)
		return 0;
	while (!hit && (e = readdir(d))) {
		DIR *fd_dir;
		struct dirent *fe;
		FILE *maps;
		char comm[64] = "?";
		long pid = strtol(e->d_name, NULL, 10);

		if (pid <= 0 || pid == self)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
		fd_dir = node ? opendir(path) : NULL;
		while (fd_dir && !hit && (fe = readdir(fd_dir))) {
			ssize_t k;
			snprintf(path, sizeof(path), "/proc/%ld/fd/%s", pid, fe->d_name);
			k = readlink(path, link, sizeof(link) - 1);
			if (k > 0) {
				link[k] = 0;
				hit = !strcmp(link, node);
			}
		}
		if (fd_dir)
			closedir(fd_dir);
		snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
		maps = (!hit && bar) ? fopen(path, "re") : NULL;
		while (maps && !hit && fgets(link, sizeof(link), maps))
			hit = strstr(link, bar) != NULL;
		if (maps)
			fclose(maps);
		if (hit) {
			snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
			read_file(path, comm, sizeof(comm));
			snprintf(who, wholen, "process %ld (%s)", pid, comm);
		}
	}
	closedir(d);
	return hit;
}

static int check_users(const char *bdf, const char *drv, char *why, size_t whylen)
{
	char path[PATH_MAX], link[PATH_MAX], node[64] = "", bar[GPUOS_PCI_BDF_LEN + 16], who[128];
	ssize_t k;

	snprintf(bar, sizeof(bar), "/%s/resource", bdf);
	if (!strcmp(drv, GPUOS_PCI_DRV_VFIO)) {
		snprintf(path, sizeof(path), SYS_PCI "%s/iommu_group", bdf);
		k = readlink(path, link, sizeof(link) - 1);
		if (k > 0) {
			link[k] = 0;
			if (snprintf(node, sizeof(node), "/dev/vfio/%s", base_name(link)) >= (int)sizeof(node))
				node[0] = 0;
		}
	} else if (!strcmp(drv, GPUOS_PCI_DRV_UIO)) {
		DIR *d;
		struct dirent *e;
		snprintf(path, sizeof(path), SYS_PCI "%s/uio", bdf);
		if ((d = opendir(path))) {
			while ((e = readdir(d)))
				if (!strncmp(e->d_name, "uio", 3) &&
				    snprintf(node, sizeof(node), "/dev/%s", e->d_name) >= (int)sizeof(node))
					node[0] = 0;
			closedir(d);
		}
	}
	if (find_user(node[0] ? node : NULL, bar, who, sizeof(who))) {
		snprintf(why, whylen, "it is in use by %s through %s", who, drv);
		return 1;
	}
	return 0;
}

int gpuos_pci_check_free(const char *bdf, char *why, size_t whylen)
{
	struct blkdev *b = (struct blkdev *)calloc(MAX_BLK, sizeof(*b));
	char drv[64], names[256] = "";
	int n, i, r;

	if (!b)
		return -ENOMEM;
	r = gpuos_pci_driver(bdf, drv, sizeof(drv));
	if (r) {
		free(b);
		snprintf(why, whylen, "no PCI device %s", bdf);
		return r;
	}
	n = list_blk(bdf, b);
	if (check_root(b, n, why, whylen) || check_mounts(b, n, why, whylen) || check_swap(b, n, why, whylen) ||
	    check_holders(b, n, why, whylen) || check_exclusive(b, n, why, whylen)) {
		free(b);
		return -EBUSY;
	}
	if (!strcmp(drv, GPUOS_PCI_DRV_VFIO) || !strcmp(drv, GPUOS_PCI_DRV_UIO)) {
		free(b);
		return check_users(bdf, drv, why, whylen) ? -EBUSY : 0;
	}
	if (drv[0]) {
		for (i = 0; i < n; i++) {
			if (strchr(b[i].sys, '/'))
				continue; /* partitions: the namespace says enough */
			if (strlen(names) + strlen(b[i].name) + 3 < sizeof(names))
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", names[0] ? ", " : "",
					 b[i].name);
		}
		if (names[0])
			snprintf(why, whylen, "it is bound to the kernel's %s driver, which serves %s", drv, names);
		else
			snprintf(why, whylen, "it is bound to the kernel's %s driver", drv);
		free(b);
		return -EBUSY;
	}
	free(b);
	return 0;
}

int gpuos_pci_bind(const char *bdf, const char *driver, char *why, size_t whylen)
{
	char path[PATH_MAX], cur[64];
	int r, i;

	snprintf(path, sizeof(path), "/sys/bus/pci/drivers/%s", driver);
	if (access(path, F_OK)) {
		snprintf(why, whylen, "the %s driver is not loaded (modprobe %s)", driver, driver);
		return -ENODEV;
	}
	snprintf(path, sizeof(path), SYS_PCI "%s/driver_override", bdf);
	r = write_file(path, driver);
	if (r) {
		snprintf(why, whylen, "set driver_override to %s: %s%s", driver, strerror(-r),
			 r == -EACCES || r == -EPERM ? " (binding needs root)" : "");
		return r == -EPERM ? -EACCES : r;
	}
	r = gpuos_pci_driver(bdf, cur, sizeof(cur));
	if (!r && cur[0] && strcmp(cur, driver)) {
		snprintf(path, sizeof(path), SYS_PCI "%s/driver/unbind", bdf);
		r = write_file(path, bdf);
		if (r) {
			snprintf(why, whylen, "unbind from %s: %s", cur, strerror(-r));
			return r;
		}
	}
	if (!cur[0] || strcmp(cur, driver))
		write_file("/sys/bus/pci/drivers_probe", bdf); /* the result is read back below */
	for (i = 0; i < 100; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		if (!gpuos_pci_driver(bdf, cur, sizeof(cur)) && !strcmp(cur, driver))
			return 0;
		nanosleep(&ts, NULL);
	}
	snprintf(why, whylen, "%s did not take the device (%s; dmesg says why)", driver,
		 strcmp(driver, GPUOS_PCI_DRV_VFIO) ? "INTx masking unsupported?" : "no IOMMU group?");
	return -EIO;
}

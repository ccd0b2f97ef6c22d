/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_emu.c - the emulated NVMe controller, driven through its
 * registers and queues by the raw test driver (nvme_testdrv.c), the way a
 * real driver drives a real controller. Criterion runs each test in its own
 * process, so a hung or crashed controller stays inside its test.
 */
#ifdef GPUOS_MINI_CRITERION
/* The project's Criterion stand-in: for the GPU machine, and for the TSan
 * build (Criterion 2.4 cannot start under -fsanitize=thread: its boxfort
 * arena finds no address outside TSan's shadow, Criterion issue #274). */
#include <math.h>
#include "../gpu/mini_criterion.h"
/* what the stand-in does not have */
#define cr_assert_leq(a, b, ...) cr_assert((a) <= (b), __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) cr_assert(!strcmp((a), (b)), __VA_ARGS__)
#define cr_assert_float_eq(a, b, eps, ...) cr_assert(fabs((double)(a) - (double)(b)) <= (eps), __VA_ARGS__)
#else
#include <criterion/criterion.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* one translation unit: the Makefile builds each test_*.c on its own */
#include "nvme_testdrv.c"


/* ---- fixtures ------------------------------------------------------------ */

static char img_path[64];
static uint8_t *img;            /* what the image file holds (the test's copy) */
static size_t img_len;

/* Drop the immutable flag a read-only test may have set, so unlink works. */
static void img_mutable(void)
{
	int fd = open(img_path, O_RDONLY);
	int flags = 0;

	if (fd < 0)
		return;
	if (!ioctl(fd, FS_IOC_GETFLAGS, &flags) && (flags & FS_IMMUTABLE_FL)) {
		flags &= ~FS_IMMUTABLE_FL;
		(void)ioctl(fd, FS_IOC_SETFLAGS, &flags);
	}
	close(fd);
}

static void cleanup(void)
{
	if (img_path[0]) {
		img_mutable();
		unlink(img_path);
	}
	img_path[0] = 0;
	free(img);
	img = NULL;
}

/* An image of `bytes` pseudo-random bytes in /tmp; the content stays in img. */
static const char *make_image(size_t bytes, uint64_t seed)
{
	snprintf(img_path, sizeof(img_path), "/tmp/gpuos_emu_XXXXXX");
	int fd = mkstemp(img_path);
	cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
	img = malloc(bytes ? bytes : 1);
	cr_assert(img);
	td_pattern(img, bytes, seed);
	size_t done = 0;
	while (done < bytes) {
		ssize_t k = write(fd, img + done, bytes - done);
		cr_assert(k > 0);
		done += (size_t)k;
	}
	close(fd);
	img_len = bytes;
	return img_path;
}

static void read_file(const char *path, uint8_t *buf, size_t len, off_t off)
{
	int fd = open(path, O_RDONLY);
	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, buf, len, off), (ssize_t)len);
	close(fd);
}

__attribute__((format(printf, 2, 3)))
static void open_emu(struct td *d, const char *fmt, ...)
{
	char args[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	int r = td_open(d, args, NULL);
	cr_assert_eq(r, 0, "open \"%s\": %d %s", args, r, d->err);
}

/* A controller on a 4 MiB image, enabled, with npairs queue pairs. */
static void up(struct td *d, uint32_t npairs, uint32_t depth, const char *extra)
{
	make_image(4u << 20, 1);
	open_emu(d, "%s%s%s", img_path, extra[0] ? "," : "", extra);
	cr_assert_eq(td_bringup(d, npairs, depth), 0, "bring-up");
}

static uint16_t stat_of(const struct gpuos_nvme_cqe *c)
{
	return gpuos_nvme_status_of(c->status);
}

static uint64_t ms_since(uint64_t t0)
{
	return (gpuos_now_ns() - t0) / 1000000u;
}

static struct gpuos_emu_stats stats(struct td *d)
{
	struct gpuos_emu_stats s;

	gpuos_emu_get_stats(d->e, &s);
	return s;
}

/* Bytes this process has read through read(2) and its kin so far
 * (/proc/self/io's rchar), -1 unknown. */
static long long read_bytes(void)
{
	char line[128];
	long long n = -1;
	FILE *f = fopen("/proc/self/io", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "rchar: %lld", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

TestSuite(nvme_spec);
/* Hang guards, not bounds on speed (issue 35): 20 s was one that a loaded
 * 2-core machine could break. */
TestSuite(emu_regs, .fini = cleanup, .timeout = 300);
TestSuite(emu_admin, .fini = cleanup, .timeout = 300);
TestSuite(emu_io, .fini = cleanup, .timeout = 300);
TestSuite(emu_fault, .fini = cleanup, .timeout = 300);
TestSuite(emu_backend, .fini = cleanup, .timeout = 300);
TestSuite(emu_opts, .fini = cleanup, .timeout = 300);

/* ---- spec layouts (nvme.h) ------------------------------------------------ */

Test(nvme_spec, sqe_cqe_layout)
{
	cr_assert_eq(sizeof(struct gpuos_nvme_sqe), 64);
	cr_assert_eq(offsetof(struct gpuos_nvme_sqe, opc), 0);
	cr_assert_eq(offsetof(struct gpuos_nvme_sqe, fuse_psdt), 1);
	cr_assert_eq(offsetof(struct gpuos_nvme_sqe, cid), 2);
	cr_assert_eq(offsetof(struct gpuos_nvme_sqe, nsid), 4);
	cr_assert_eq(offsetof(struct gpuos_nvme_sqe, mptr), 16);
	cr_assert_eq(offsetof(struct gpuos_nvme_sqe, prp1), 24);
	cr_assert_eq(offsetof(struct gpuos_nvme_sqe, prp2), 32);
	cr_assert_eq(offsetof(struct gpuos_nvme_sqe, cdw10), 40);
	cr_assert_eq(offsetof(struct gpuos_nvme_sqe, cdw11), 44);
	cr_assert_eq(offsetof(struct gpuos_nvme_sqe, cdw12), 48);
	cr_assert_eq(offsetof(struct gpuos_nvme_sqe, cdw15), 60);
	cr_assert_eq(sizeof(struct gpuos_nvme_cqe), 16);
	cr_assert_eq(offsetof(struct gpuos_nvme_cqe, dw0), 0);
	cr_assert_eq(offsetof(struct gpuos_nvme_cqe, sqhd), 8);
	cr_assert_eq(offsetof(struct gpuos_nvme_cqe, sqid), 10);
	cr_assert_eq(offsetof(struct gpuos_nvme_cqe, cid), 12);
	cr_assert_eq(offsetof(struct gpuos_nvme_cqe, status), 14);
	/* the status word: phase bit 0, SC 8:1, SCT 11:9, DNR 15 */
	cr_assert_eq(gpuos_nvme_status_of((uint16_t)(0x8000u | 0x2u << 9 | 0x81u << 1 | 1u)), 0x4281);
	cr_assert_eq(gpuos_nvme_status_make(1, 2, 1), 0x4102);
}

Test(nvme_spec, identify_layouts)
{
	cr_assert_eq(sizeof(struct gpuos_nvme_id_ctrl), 4096);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ctrl, sn), 0x04);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ctrl, mn), 0x18);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ctrl, fr), 0x40);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ctrl, mdts), 0x4d);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ctrl, ver), 0x50);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ctrl, oacs), 0x100);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ctrl, elpe), 0x106);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ctrl, sqes), 0x200);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ctrl, cqes), 0x201);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ctrl, nn), 0x204);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ctrl, vwc), 0x20d);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ctrl, sgls), 0x218);
	cr_assert_eq(sizeof(struct gpuos_nvme_id_ns), 4096);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ns, ncap), 0x08);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ns, nuse), 0x10);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ns, nlbaf), 0x19);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ns, flbas), 0x1a);
	cr_assert_eq(offsetof(struct gpuos_nvme_id_ns, lbaf), 0x80);
	cr_assert_eq(sizeof(struct gpuos_nvme_lbaf), 4);
	cr_assert_eq(offsetof(struct gpuos_nvme_lbaf, lbads), 2);
}

Test(nvme_spec, log_layouts)
{
	cr_assert_eq(sizeof(struct gpuos_nvme_error_log), 64);
	cr_assert_eq(offsetof(struct gpuos_nvme_error_log, sqid), 0x08);
	cr_assert_eq(offsetof(struct gpuos_nvme_error_log, cid), 0x0a);
	cr_assert_eq(offsetof(struct gpuos_nvme_error_log, status), 0x0c);
	cr_assert_eq(offsetof(struct gpuos_nvme_error_log, lba), 0x10);
	cr_assert_eq(offsetof(struct gpuos_nvme_error_log, nsid), 0x18);
	cr_assert_eq(sizeof(struct gpuos_nvme_smart_log), 512);
	cr_assert_eq(offsetof(struct gpuos_nvme_smart_log, composite_temp), 0x01);
	cr_assert_eq(offsetof(struct gpuos_nvme_smart_log, data_units_read), 0x20);
	cr_assert_eq(offsetof(struct gpuos_nvme_smart_log, data_units_written), 0x30);
	cr_assert_eq(offsetof(struct gpuos_nvme_smart_log, host_reads), 0x40);
	cr_assert_eq(offsetof(struct gpuos_nvme_smart_log, host_writes), 0x50);
	cr_assert_eq(offsetof(struct gpuos_nvme_smart_log, media_errors), 0xa0);
	cr_assert_eq(offsetof(struct gpuos_nvme_smart_log, num_err_log_entries), 0xb0);
}

Test(nvme_spec, register_offsets)
{
	cr_assert_eq(GPUOS_NVME_REG_CC, 0x14);
	cr_assert_eq(GPUOS_NVME_REG_CSTS, 0x1c);
	cr_assert_eq(GPUOS_NVME_REG_AQA, 0x24);
	cr_assert_eq(GPUOS_NVME_REG_ASQ, 0x28);
	cr_assert_eq(GPUOS_NVME_REG_ACQ, 0x30);
	cr_assert_eq(gpuos_nvme_sq_db_offset(0, 0), 0x1000);
	cr_assert_eq(gpuos_nvme_cq_db_offset(0, 0), 0x1004);
	cr_assert_eq(gpuos_nvme_sq_db_offset(1, 0), 0x1008);
	cr_assert_eq(gpuos_nvme_sq_db_offset(1, 2), 0x1020);
	cr_assert_eq(gpuos_nvme_cq_db_offset(1, 2), 0x1030);
}

/* ---- registers and the CC/CSTS handshake ----------------------------------- */

Test(emu_regs, cap_and_version)
{
	struct td d;

	open_emu(&d, "null,depth=64,to=7,queues=3");
	uint64_t cap = td_rd64(&d, GPUOS_NVME_REG_CAP);
	cr_assert_eq(gpuos_nvme_cap_mqes(cap), 63);
	cr_assert_eq(gpuos_nvme_cap_cqr(cap), 1);
	cr_assert_eq(gpuos_nvme_cap_to(cap), 7);
	cr_assert_eq(gpuos_nvme_cap_dstrd(cap), 0);
	cr_assert_eq(gpuos_nvme_cap_css(cap) & GPUOS_NVME_CAP_CSS_NVM, GPUOS_NVME_CAP_CSS_NVM);
	cr_assert_eq(gpuos_nvme_cap_mpsmin(cap), 0);
	cr_assert_eq(gpuos_nvme_cap_mpsmax(cap), 0);
	cr_assert_eq(td_rd32(&d, GPUOS_NVME_REG_VS), 0x00010400);
	cr_assert_eq(td_rd32(&d, GPUOS_NVME_REG_CSTS), 0);
	cr_assert_geq(gpuos_emu_regs_len(d.e), GPUOS_NVME_REGS_MIN);
	td_close(&d);

	open_emu(&d, "null");
	cap = td_rd64(&d, GPUOS_NVME_REG_CAP);
	cr_assert_eq(gpuos_nvme_cap_mqes(cap), 1023);
	cr_assert_eq(gpuos_nvme_cap_to(cap), 20);
	td_close(&d);
}

Test(emu_regs, enable_disable_enable)
{
	struct td d;
	uint8_t *buf;

	open_emu(&d, "null");
	cr_assert_eq(td_enable(&d, 8), 0);
	cr_assert_eq(td_rd32(&d, GPUOS_NVME_REG_CSTS) & GPUOS_NVME_CSTS_CFS, 0);
	buf = td_alloc(&d, 4096, 4096, NULL);
	cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_CONTROLLER, 0, buf), 0);
	cr_assert_eq(td_disable(&d), 0);
	cr_assert_eq(td_rd32(&d, GPUOS_NVME_REG_CSTS), 0);
	/* a second bring-up on fresh queues: the old admin queue is forgotten */
	cr_assert_eq(td_enable(&d, 4), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_CONTROLLER, 0, buf), 0);
	td_close(&d);
}

Test(emu_regs, ready_after_rdy_ms)
{
	struct td d;

	open_emu(&d, "null,rdy_ms=150");
	uint64_t t0 = gpuos_now_ns();
	cr_assert_eq(td_enable(&d, 4), 0);
	cr_assert_geq(ms_since(t0), 140, "RDY came after %llu ms", (unsigned long long)ms_since(t0));
	td_close(&d);
}

Test(emu_regs, never_ready)
{
	struct td d;
	uint64_t iova;

	open_emu(&d, "null,never_ready=1");
	td_alloc(&d, 8192, 4096, &iova);
	td_wr32(&d, GPUOS_NVME_REG_AQA, 3u << 16 | 3u);
	td_wr64(&d, GPUOS_NVME_REG_ASQ, iova);
	td_wr64(&d, GPUOS_NVME_REG_ACQ, iova + 4096);
	td_wr32(&d, GPUOS_NVME_REG_CC, GPUOS_NVME_CC_EN);
	/* the driver's view: RDY never comes, and no fatal status either */
	cr_assert_eq(td_wait_csts(&d, GPUOS_NVME_CSTS_RDY, GPUOS_NVME_CSTS_RDY, 300), -ETIMEDOUT);
	cr_assert_eq(td_rd32(&d, GPUOS_NVME_REG_CSTS), 0);
	cr_assert_eq(td_disable(&d), 0);
	td_close(&d);
}

Test(emu_regs, bad_config_sets_cfs)
{
	struct td d;
	uint64_t iova;

	open_emu(&d, "null");
	td_alloc(&d, 8192, 4096, &iova);
	td_wr32(&d, GPUOS_NVME_REG_AQA, 3u << 16 | 3u);
	td_wr64(&d, GPUOS_NVME_REG_ASQ, iova);
	td_wr64(&d, GPUOS_NVME_REG_ACQ, iova + 4096);
	/* MPS = 1 (8 KiB pages) is outside CAP.MPSMAX */
	td_wr32(&d, GPUOS_NVME_REG_CC, GPUOS_NVME_CC_EN | 1u << GPUOS_NVME_CC_MPS_SHIFT);
	cr_assert_eq(td_wait_csts(&d, GPUOS_NVME_CSTS_CFS, GPUOS_NVME_CSTS_CFS, TD_TIMEOUT_MS), 0);
	cr_assert_eq(td_rd32(&d, GPUOS_NVME_REG_CSTS) & GPUOS_NVME_CSTS_RDY, 0);
	/* reset clears it */
	cr_assert_eq(td_disable(&d), 0);
	cr_assert_eq(td_wait_csts(&d, GPUOS_NVME_CSTS_CFS, 0, TD_TIMEOUT_MS), 0);

	/* an admin SQ outside every region: a DMA fault, CFS */
	td_wr64(&d, GPUOS_NVME_REG_ASQ, 0xdead0000ull);
	td_wr32(&d, GPUOS_NVME_REG_CC, GPUOS_NVME_CC_EN);
	cr_assert_eq(td_wait_csts(&d, GPUOS_NVME_CSTS_CFS, GPUOS_NVME_CSTS_CFS, TD_TIMEOUT_MS), 0);
	cr_assert_eq(stats(&d).dma_faults, 1);
	cr_assert_eq(stats(&d).last_fault_iova, 0xdead0000ull);
	cr_assert_eq(td_disable(&d), 0);

	/* an admin queue of one entry (AQA 0) */
	td_wr32(&d, GPUOS_NVME_REG_AQA, 0);
	td_wr64(&d, GPUOS_NVME_REG_ASQ, iova);
	td_wr32(&d, GPUOS_NVME_REG_CC, GPUOS_NVME_CC_EN);
	cr_assert_eq(td_wait_csts(&d, GPUOS_NVME_CSTS_CFS, GPUOS_NVME_CSTS_CFS, TD_TIMEOUT_MS), 0);
	cr_assert_eq(td_disable(&d), 0);
	/* and a good configuration still works afterwards */
	cr_assert_eq(td_enable(&d, 4), 0);
	td_close(&d);
}

Test(emu_regs, start_enabled)
{
	struct td d;

	open_emu(&d, "null,enabled=1");
	cr_assert_eq(td_rd32(&d, GPUOS_NVME_REG_CC) & GPUOS_NVME_CC_EN, GPUOS_NVME_CC_EN);
	cr_assert_eq(td_rd32(&d, GPUOS_NVME_REG_CSTS) & GPUOS_NVME_CSTS_RDY, GPUOS_NVME_CSTS_RDY);
	/* a doorbell rung before the reset goes nowhere */
	td_wr32(&d, gpuos_nvme_sq_db_offset(0, 0), 1);
	struct timespec ts = { 0, 20000000 };
	nanosleep(&ts, NULL);
	cr_assert_eq(stats(&d).admin_cmds, 0);
	/* the driver disables first, as it must after firmware */
	cr_assert_eq(td_disable(&d), 0);
	cr_assert_eq(td_enable(&d, 4), 0);
	uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
	cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_CONTROLLER, 0, buf), 0);
	cr_assert_eq(stats(&d).admin_cmds, 1);
	td_close(&d);
}

Test(emu_regs, shutdown_normal_waits_for_commands)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	up(&d, 1, 16, "latency_us=2000000"); /* the window to see SHST occurring in */
	uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 8, td_iova(&d, buf), 0);
	s.cid = 77;
	td_sq_push(&d, &d.q[1], &s);
	td_sq_ring(&d, &d.q[1]);
	for (int i = 0; i < 1000 && stats(&d).io_cmds == 0; i++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	cr_assert_eq(stats(&d).io_cmds, 1, "the read was fetched");

	uint32_t cc = td_rd32(&d, GPUOS_NVME_REG_CC);
	td_wr32(&d, GPUOS_NVME_REG_CC, cc | GPUOS_NVME_CC_SHN_NORMAL);
	cr_assert_eq(td_wait_csts(&d, GPUOS_NVME_CSTS_SHST_MASK, GPUOS_NVME_CSTS_SHST_OCCURRING, TD_TIMEOUT_MS), 0,
		     "SHST occurring while the read is in flight");
	cr_assert_eq(td_wait_csts(&d, GPUOS_NVME_CSTS_SHST_MASK, GPUOS_NVME_CSTS_SHST_COMPLETE, TD_TIMEOUT_MS), 0);
	/* the command in flight completed before shutdown said complete */
	cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, 0, 1), 0);
	cr_assert_eq(c.cid, 77);
	cr_assert_eq(stat_of(&c), 0);
	cr_assert(!memcmp(buf, img, 4096));
	/* reset brings SHST back to 0 and allows a new bring-up */
	td_wr32(&d, GPUOS_NVME_REG_CC, 0);
	cr_assert_eq(td_wait_csts(&d, GPUOS_NVME_CSTS_RDY | GPUOS_NVME_CSTS_SHST_MASK, 0, TD_TIMEOUT_MS), 0);
	cr_assert_eq(td_bringup(&d, 1, 16), 0);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 8, buf), 0);
	td_close(&d);
}

Test(emu_regs, shutdown_abrupt)
{
	struct td d;

	up(&d, 1, 16, "");
	uint32_t cc = td_rd32(&d, GPUOS_NVME_REG_CC);
	td_wr32(&d, GPUOS_NVME_REG_CC, cc | GPUOS_NVME_CC_SHN_ABRUPT);
	cr_assert_eq(td_wait_csts(&d, GPUOS_NVME_CSTS_SHST_MASK, GPUOS_NVME_CSTS_SHST_COMPLETE, TD_TIMEOUT_MS), 0);
	/* after shutdown nothing is served until a reset */
	uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 1, td_iova(&d, buf), 0);
	td_sq_push(&d, &d.q[1], &s);
	td_sq_ring(&d, &d.q[1]);
	cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, 50, 1), -ETIMEDOUT);
	td_close(&d);
}

Test(emu_regs, doorbell_stride)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	up(&d, 2, 16, "dstrd=2,queues=4");
	cr_assert_eq(gpuos_nvme_cap_dstrd(td_rd64(&d, GPUOS_NVME_REG_CAP)), 2);
	cr_assert_geq(gpuos_emu_regs_len(d.e), gpuos_nvme_cq_db_offset(4, 2) + 4);
	uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);

	/* the stride-0 location of SQ 1's doorbell is nobody's doorbell now */
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 8, 8, td_iova(&d, buf), 0);
	s.cid = 5;
	td_sq_push(&d, &d.q[1], &s);
	td_wr32(&d, gpuos_nvme_sq_db_offset(1, 0), 1);
	cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, 50, 1), -ETIMEDOUT);
	/* the strided one is */
	td_sq_ring(&d, &d.q[1]);
	cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, TD_TIMEOUT_MS, 1), 0);
	cr_assert_eq(c.cid, 5);
	cr_assert(!memcmp(buf, img + 8 * 512, 4096));
	cr_assert_eq(td_rw(&d, 2, GPUOS_NVME_CMD_READ, 16, 8, buf), 0);
	cr_assert(!memcmp(buf, img + 16 * 512, 4096));
	td_close(&d);
}

static size_t regs_alloc_len;
static int regs_freed;
static void *test_alloc_regs(void *ctx, size_t len)
{
	(void)ctx;
	regs_alloc_len = len;
	return calloc(1, len);
}
static void test_free_regs(void *ctx, void *p, size_t len)
{
	(void)ctx;
	cr_assert_eq(len, regs_alloc_len);
	regs_freed = 1;
	free(p);
}

Test(emu_regs, register_memory_from_env)
{
	struct td d;
	struct gpuos_emu_env env = { .alloc_regs = test_alloc_regs, .free_regs = test_free_regs };

	cr_assert_eq(td_open(&d, "null,queues=64,dstrd=3", &env), 0, "%s", d.err);
	cr_assert_eq(regs_alloc_len, gpuos_emu_regs_len(d.e));
	cr_assert_geq(regs_alloc_len, gpuos_nvme_cq_db_offset(64, 3) + 4);
	cr_assert_eq(regs_alloc_len % 4096, 0);
	cr_assert_eq(td_bringup(&d, 1, 8), 0);
	td_close(&d);
	cr_assert(regs_freed);
}

Test(emu_regs, invalid_doorbell_values_are_ignored)
{
	struct td d;

	up(&d, 1, 8, "");
	uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
	/* a tail past the queue size */
	td_wr32(&d, gpuos_nvme_sq_db_offset(1, 0), 100);
	td_wr32(&d, gpuos_nvme_cq_db_offset(1, 0), 100);
	struct timespec ts = { 0, 10000000 };
	nanosleep(&ts, NULL);
	cr_assert_eq(stats(&d).io_cmds, 0);
	td_wr32(&d, gpuos_nvme_cq_db_offset(1, 0), 0);
	for (int i = 0; i < 20; i++)
		cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 8, buf), 0);
	td_close(&d);
}

/* ---- admin commands ------------------------------------------------------- */

Test(emu_admin, identify_controller)
{
	struct td d;

	open_emu(&d, "null,model=Test Model,serial=SN123,mdts=512");
	cr_assert_eq(td_enable(&d, 4), 0);
	struct gpuos_nvme_id_ctrl *id = td_alloc(&d, 4096, 4096, NULL);
	memset(id, 0xee, 4096);
	cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_CONTROLLER, 0, id), 0);
	cr_assert(!memcmp(id->mn, "Test Model                              ", 40));
	cr_assert(!memcmp(id->sn, "SN123               ", 20));
	cr_assert(!memcmp(id->fr, "gpuos1  ", 8));
	cr_assert_eq(id->mdts, 7);          /* 512 KiB = 2^7 pages of 4 KiB */
	cr_assert_eq(id->sqes, 0x66);
	cr_assert_eq(id->cqes, 0x44);
	cr_assert_eq(id->nn, 1);
	cr_assert_eq(id->ver, 0x00010400);
	cr_assert_eq(id->elpe, 63);
	cr_assert_eq(id->sgls, 0);
	cr_assert_eq(id->rsvd540[100], 0, "reserved bytes are zero");
	td_close(&d);
}

Test(emu_admin, identify_mdts_values)
{
	static const struct { const char *mdts; uint8_t v; } t[] = {
		{ "0", 0 }, { "8", 1 }, { "128", 5 }, { "1024", 8 },
	};
	for (size_t i = 0; i < GPUOS_ARRAY_SIZE(t); i++) {
		struct td d;
		open_emu(&d, "null,mdts=%s", t[i].mdts);
		cr_assert_eq(td_enable(&d, 4), 0);
		struct gpuos_nvme_id_ctrl *id = td_alloc(&d, 4096, 4096, NULL);
		cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_CONTROLLER, 0, id), 0);
		cr_assert_eq(id->mdts, t[i].v, "mdts=%s", t[i].mdts);
		td_close(&d);
	}
}

Test(emu_admin, identify_namespace)
{
	struct td d;

	make_image((1u << 20) + 300, 3);
	open_emu(&d, "%s", img_path);
	cr_assert_eq(td_enable(&d, 4), 0);
	struct gpuos_nvme_id_ns *ns = td_alloc(&d, 4096, 4096, NULL);
	cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_NAMESPACE, 1, ns), 0);
	cr_assert_eq(ns->nsze, 2049);       /* the odd 300 bytes are a block, zero-padded */
	cr_assert_eq(ns->ncap, 2049);
	cr_assert_eq(ns->nuse, 2049);
	cr_assert_eq(ns->nlbaf, 0);
	cr_assert_eq(ns->flbas, 0);
	cr_assert_eq(ns->lbaf[0].lbads, 9);
	cr_assert_eq(gpuos_emu_ns_bytes(d.e), (1u << 20) + 512);
	cr_assert_eq(gpuos_emu_image_bytes(d.e), (1u << 20) + 300);
	cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_NAMESPACE, 0, ns), 0x400b);
	cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_NAMESPACE, 2, ns), 0x400b);
	td_close(&d);

	open_emu(&d, "%s,lba=4096", img_path);
	cr_assert_eq(td_enable(&d, 4), 0);
	ns = td_alloc(&d, 4096, 4096, NULL);
	cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_NAMESPACE, 1, ns), 0);
	cr_assert_eq(ns->nsze, 257);        /* 4 KiB LBAs: the 300 bytes, the rest of the LBA zeros */
	cr_assert_eq(ns->lbaf[0].lbads, 12);
	td_close(&d);
}

Test(emu_admin, identify_active_ns_list_and_bad_cns)
{
	struct td d;

	open_emu(&d, "null");
	cr_assert_eq(td_enable(&d, 4), 0);
	uint32_t *list = td_alloc(&d, 4096, 4096, NULL);
	memset(list, 0xff, 4096);
	cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_ACTIVE_NS_LIST, 0, list), 0);
	cr_assert_eq(list[0], 1);
	cr_assert_eq(list[1], 0);
	cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_ACTIVE_NS_LIST, 1, list), 0);
	cr_assert_eq(list[0], 0, "no active NSID above 1");
	cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_ACTIVE_NS_LIST, 0xfffffffeu, list), 0x400b);
	cr_assert_eq(td_identify(&d, 0x15, 0, list), 0x4002);
	td_close(&d);
}

Test(emu_admin, identify_with_prp1_offset_and_prp2)
{
	struct td d;

	open_emu(&d, "null,model=Offset Model");
	cr_assert_eq(td_enable(&d, 4), 0);
	uint64_t iova;
	uint8_t *two = td_alloc(&d, 8192, 4096, &iova);
	memset(two, 0xee, 8192);
	struct gpuos_nvme_sqe s;
	memset(&s, 0, sizeof(s));
	s.opc = GPUOS_NVME_ADMIN_IDENTIFY;
	s.prp1 = iova + 0x200;
	s.prp2 = iova + 4096;
	s.cdw10 = GPUOS_NVME_CNS_CONTROLLER;
	cr_assert_eq(td_admin(&d, &s, NULL), 0);
	const struct gpuos_nvme_id_ctrl *id = (const void *)(two + 0x200);
	cr_assert(!memcmp(id->mn, "Offset Model", 12));
	cr_assert_eq(id->sqes, 0x66);       /* in the second page */
	cr_assert_eq(two[0x1ff], 0xee, "nothing before the offset");
	cr_assert_eq(two[0x200 + 4096], 0xee, "nothing after 4096 bytes");
	td_close(&d);
}

Test(emu_admin, features_number_of_queues)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;
	uint32_t dw0 = 0;

	open_emu(&d, "null,queues=4");
	cr_assert_eq(td_enable(&d, 8), 0);
	cr_assert_eq(td_set_nq(&d, 64, 64, &dw0), 0);
	cr_assert_eq(dw0, 0x00030003, "granted min(asked, 4), 0's based: %#x", dw0);
	cr_assert_eq(td_set_nq(&d, 2, 3, &dw0), 0);
	cr_assert_eq(dw0, 0x00020001);

	memset(&s, 0, sizeof(s));
	s.opc = GPUOS_NVME_ADMIN_GET_FEATURES;
	s.cdw10 = GPUOS_NVME_FEAT_NUM_QUEUES;
	cr_assert_eq(td_admin(&d, &s, &c), 0);
	cr_assert_eq(c.dw0, 0x00020001);
	s.cdw10 = GPUOS_NVME_FEAT_NUM_QUEUES | 1u << 8;   /* SEL default */
	cr_assert_eq(td_admin(&d, &s, &c), 0);
	cr_assert_eq(c.dw0, 0x00030003);
	s.cdw10 = 0x7f;                                    /* unknown feature */
	cr_assert_eq(td_admin(&d, &s, &c), 0x4002);

	memset(&s, 0, sizeof(s));
	s.opc = GPUOS_NVME_ADMIN_SET_FEATURES;
	s.cdw10 = GPUOS_NVME_FEAT_NUM_QUEUES;
	s.cdw11 = 0xffff;                                  /* 65535 queues */
	cr_assert_eq(td_admin(&d, &s, NULL), 0x4002);
	s.cdw10 = GPUOS_NVME_FEAT_NUM_QUEUES | 1u << 31;   /* save */
	s.cdw11 = 0;
	cr_assert_eq(td_admin(&d, &s, NULL), 0x410d);

	/* the grant limits the queue identifiers */
	cr_assert_eq(td_create_cq(&d, 3, 8), 0);
	cr_assert_eq(td_create_cq(&d, 4, 8), 0x4101);
	cr_assert_eq(td_create_sq(&d, 3, 8, 3), 0x4101);
	cr_assert_eq(td_create_sq(&d, 2, 8, 3), 0);
	/* and once queues exist the number is fixed */
	cr_assert_eq(td_set_nq(&d, 1, 1, NULL), 0x400c);
	td_close(&d);
}

Test(emu_admin, create_and_delete_queue_checks)
{
	struct td d;
	struct gpuos_nvme_sqe s;

	open_emu(&d, "null,queues=4,depth=64");
	cr_assert_eq(td_enable(&d, 8), 0);
	uint64_t qmem;
	td_alloc(&d, 64 * 64, 4096, &qmem);

	memset(&s, 0, sizeof(s));
	s.opc = GPUOS_NVME_ADMIN_CREATE_CQ;
	s.prp1 = qmem;
	s.cdw11 = GPUOS_NVME_CREATE_Q_PC;
	s.cdw10 = 7u << 16 | 0;                    /* QID 0 */
	cr_assert_eq(td_admin(&d, &s, NULL), 0x4101);
	s.cdw10 = 7u << 16 | 5;                    /* QID > granted */
	cr_assert_eq(td_admin(&d, &s, NULL), 0x4101);
	s.cdw10 = 0u << 16 | 1;                    /* one entry */
	cr_assert_eq(td_admin(&d, &s, NULL), 0x4102);
	s.cdw10 = 64u << 16 | 1;                   /* 65 entries > MQES + 1 */
	cr_assert_eq(td_admin(&d, &s, NULL), 0x4102);
	s.cdw10 = 7u << 16 | 1;
	s.cdw11 = 0;                               /* PC = 0 with CAP.CQR = 1 */
	cr_assert_eq(td_admin(&d, &s, NULL), 0x4002);
	s.cdw11 = GPUOS_NVME_CREATE_Q_PC;
	s.prp1 = qmem + 0x100;                     /* not page aligned */
	cr_assert_eq(td_admin(&d, &s, NULL), 0x4013);
	s.prp1 = 0xdead0000ull;                    /* unmapped */
	cr_assert_eq(td_admin(&d, &s, NULL), 0x0004);
	cr_assert_eq(stats(&d).dma_faults, 1);
	s.prp1 = qmem;
	s.cdw11 = GPUOS_NVME_CREATE_Q_PC | GPUOS_NVME_CREATE_CQ_IEN | 3u << 16;
	cr_assert_eq(td_admin(&d, &s, NULL), 0x4108);

	cr_assert_eq(td_create_cq(&d, 1, 64), 0);
	cr_assert_eq(td_create_cq(&d, 1, 8), 0x4101, "QID in use");

	cr_assert_eq(td_create_sq(&d, 1, 8, 2), 0x4100, "SQ on a CQ that does not exist");
	cr_assert_eq(td_create_sq(&d, 1, 8, 0), 0x4100, "SQ on the admin CQ");
	cr_assert_eq(td_create_sq(&d, 0, 8, 1), 0x4101);
	cr_assert_eq(td_create_sq(&d, 1, 1, 1), 0x4102);
	cr_assert_eq(td_create_sq(&d, 1, 65, 1), 0x4102);
	memset(&s, 0, sizeof(s));
	s.opc = GPUOS_NVME_ADMIN_CREATE_SQ;
	s.prp1 = qmem;
	s.cdw10 = 7u << 16 | 1;
	s.cdw11 = 1u << 16;                        /* PC = 0 */
	cr_assert_eq(td_admin(&d, &s, NULL), 0x4002);
	cr_assert_eq(td_create_sq(&d, 1, 8, 1), 0);
	cr_assert_eq(td_create_sq(&d, 2, 8, 1), 0, "two SQs on one CQ");

	cr_assert_eq(td_delete_cq(&d, 1), 0x410c, "CQ still has SQs");
	cr_assert_eq(td_delete_sq(&d, 3), 0x4101);
	cr_assert_eq(td_delete_sq(&d, 0), 0x4101);
	cr_assert_eq(td_delete_sq(&d, 1), 0);
	cr_assert_eq(td_delete_cq(&d, 1), 0x410c);
	cr_assert_eq(td_delete_sq(&d, 2), 0);
	cr_assert_eq(td_delete_sq(&d, 2), 0x4101, "already deleted");
	cr_assert_eq(td_delete_cq(&d, 1), 0);
	cr_assert_eq(td_delete_cq(&d, 1), 0x4101);
	cr_assert_eq(td_delete_cq(&d, 0), 0x4101);

	/* the same identifiers work again */
	cr_assert_eq(td_create_pair(&d, 1, 16, 16), 0);
	uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 8, buf), 0);
	td_close(&d);
}

Test(emu_admin, io_entry_sizes_must_be_set_before_queues)
{
	struct td d;
	uint64_t iova;

	open_emu(&d, "null");
	td_alloc(&d, 8192, 4096, &iova);
	d.aq.qid = 0;
	d.aq.sq_size = d.aq.cq_size = 4;
	d.aq.sq = (void *)(d.arena + (iova - TD_ARENA_IOVA));
	d.aq.sq_iova = iova;
	d.aq.cq = (void *)(d.arena + (iova + 4096 - TD_ARENA_IOVA));
	d.aq.cq_iova = iova + 4096;
	d.aq.phase = 1;
	td_wr32(&d, GPUOS_NVME_REG_AQA, 3u << 16 | 3u);
	td_wr64(&d, GPUOS_NVME_REG_ASQ, iova);
	td_wr64(&d, GPUOS_NVME_REG_ACQ, iova + 4096);
	td_wr32(&d, GPUOS_NVME_REG_CC, GPUOS_NVME_CC_EN);   /* IOSQES = IOCQES = 0 */
	cr_assert_eq(td_wait_csts(&d, GPUOS_NVME_CSTS_RDY, GPUOS_NVME_CSTS_RDY, TD_TIMEOUT_MS), 0);
	cr_assert_eq(td_create_cq(&d, 1, 8), 0x4002);
	td_wr32(&d, GPUOS_NVME_REG_CC, GPUOS_NVME_CC_EN | 4u << GPUOS_NVME_CC_IOCQES_SHIFT);
	cr_assert_eq(td_create_cq(&d, 1, 8), 0);
	cr_assert_eq(td_create_sq(&d, 1, 8, 1), 0x4002);
	td_wr32(&d, GPUOS_NVME_REG_CC, GPUOS_NVME_CC_EN | 4u << GPUOS_NVME_CC_IOCQES_SHIFT |
		6u << GPUOS_NVME_CC_IOSQES_SHIFT);
	cr_assert_eq(td_create_sq(&d, 1, 8, 1), 0);
	td_close(&d);
}

static int get_log(struct td *d, uint8_t lid, uint32_t nsid, void *buf, uint32_t bytes, uint64_t off)
{
	struct gpuos_nvme_sqe s;
	uint64_t p1, p2;
	uint32_t numd = bytes / 4 - 1;

	memset(&s, 0, sizeof(s));
	s.opc = GPUOS_NVME_ADMIN_GET_LOG_PAGE;
	s.nsid = nsid;
	td_prps(d, td_iova(d, buf), bytes, &p1, &p2);
	s.prp1 = p1;
	s.prp2 = p2;
	s.cdw10 = (numd & 0xffffu) << 16 | lid;
	s.cdw11 = numd >> 16;
	s.cdw12 = (uint32_t)off;
	s.cdw13 = (uint32_t)(off >> 32);
	return td_admin(d, &s, NULL);
}

Test(emu_admin, log_pages_error_and_smart)
{
	struct td d;

	up(&d, 1, 16, "faults=lba:1000-1003");
	uint8_t *buf = td_alloc(&d, 8192, 4096, NULL);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 8, buf), 0);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 8, 16, buf), 0);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_WRITE, 64, 4, buf), 0);
	uint16_t cid_bad = d.q[1].next_cid;
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 8192, 1, buf), 0x4080);
	uint16_t cid_media = d.q[1].next_cid;
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 1002, 1, buf), 0x281);

	struct gpuos_nvme_error_log *el = td_alloc(&d, 4096, 4096, NULL);
	cr_assert_eq(get_log(&d, GPUOS_NVME_LOG_ERROR, 0, el, 4096, 0), 0);
	/* most recent first */
	cr_assert_eq(el[0].error_count, 2);
	cr_assert_eq(el[0].sqid, 1);
	cr_assert_eq(el[0].cid, cid_media);
	cr_assert_eq(el[0].status >> 1, 0x281);
	cr_assert_eq(el[0].lba, 1002);
	cr_assert_eq(el[0].nsid, 1);
	cr_assert_eq(el[1].error_count, 1);
	cr_assert_eq(el[1].cid, cid_bad);
	cr_assert_eq(el[1].status >> 1, 0x4080);
	cr_assert_eq(el[2].error_count, 0);

	struct gpuos_nvme_smart_log *sm = td_alloc(&d, 4096, 4096, NULL);
	cr_assert_eq(get_log(&d, GPUOS_NVME_LOG_SMART, 0xffffffffu, sm, 512, 0), 0);
	cr_assert_eq(sm->host_reads[0], 2);
	cr_assert_eq(sm->host_writes[0], 1);
	cr_assert_eq(sm->data_units_read[0], 1);     /* 24 units of 512 B, in thousands, rounded up */
	cr_assert_eq(sm->data_units_written[0], 1);
	cr_assert_eq(sm->media_errors[0], 1);
	cr_assert_eq(sm->num_err_log_entries[0], 2);
	cr_assert_gt(sm->composite_temp, 273);

	/* a slice at an offset: host_reads alone */
	uint64_t *hr = td_alloc(&d, 4096, 4096, NULL);
	hr[1] = 0xabcdef;
	cr_assert_eq(get_log(&d, GPUOS_NVME_LOG_SMART, 0, hr, 8, 0x40), 0);
	cr_assert_eq(hr[0], 2);
	cr_assert_eq(hr[1], 0xabcdef, "only the asked-for dwords moved");

	cr_assert_eq(get_log(&d, 0x7f, 0, buf, 512, 0), 0x4109);
	cr_assert_eq(get_log(&d, GPUOS_NVME_LOG_SMART, 0, buf, 512, 4096), 0x4002);
	cr_assert_eq(get_log(&d, GPUOS_NVME_LOG_SMART, 0, buf, 512, 2), 0x4002);
	cr_assert_eq(get_log(&d, GPUOS_NVME_LOG_SMART, 7, buf, 512, 0), 0x400b);
	td_close(&d);
}

Test(emu_admin, bad_opcode_and_abort)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	open_emu(&d, "null");
	cr_assert_eq(td_enable(&d, 4), 0);
	memset(&s, 0, sizeof(s));
	s.opc = 0x7f;
	cr_assert_eq(td_admin(&d, &s, &c), 0x4001);
	s.opc = GPUOS_NVME_ADMIN_ABORT;
	cr_assert_eq(td_admin(&d, &s, &c), 0);
	cr_assert_eq(c.dw0 & 1, 1, "not aborted");
	s.opc = GPUOS_NVME_ADMIN_IDENTIFY;
	s.fuse_psdt = 0x40;                          /* SGL */
	cr_assert_eq(td_admin(&d, &s, &c), 0x4002);
	cr_assert_eq(stats(&d).admin_cmds, 3);
	cr_assert_eq(stats(&d).errors, 2);
	td_close(&d);
}

Test(emu_admin, admin_dma_fault)
{
	struct td d;
	struct gpuos_nvme_sqe s;

	open_emu(&d, "null");
	cr_assert_eq(td_enable(&d, 4), 0);
	memset(&s, 0, sizeof(s));
	s.opc = GPUOS_NVME_ADMIN_IDENTIFY;
	s.cdw10 = GPUOS_NVME_CNS_CONTROLLER;
	s.prp1 = 0x7000000000ull;
	cr_assert_eq(td_admin(&d, &s, NULL), 0x0004);
	cr_assert_eq(stats(&d).dma_faults, 1);
	cr_assert_eq(stats(&d).last_fault_iova, 0x7000000000ull);
	/* the controller keeps serving */
	uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
	cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_CONTROLLER, 0, buf), 0);
	td_close(&d);
}

Test(emu_admin, admin_queue_wraps)
{
	struct td d;

	open_emu(&d, "null");
	cr_assert_eq(td_enable(&d, 2), 0);          /* the smallest admin queue */
	uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
	for (int i = 0; i < 50; i++)
		cr_assert_eq(td_identify(&d, GPUOS_NVME_CNS_NAMESPACE, 1, buf), 0, "round %d", i);
	td_close(&d);
}

/* ---- I/O ------------------------------------------------------------------- */

Test(emu_io, read_write_ram)
{
	struct td d;

	up(&d, 1, 16, "");
	uint8_t *buf = td_alloc(&d, 65536, 4096, NULL);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 8, buf), 0);
	cr_assert(!memcmp(buf, img, 4096));
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 1000, 128, buf), 0);
	cr_assert(!memcmp(buf, img + 1000 * 512, 65536));

	td_pattern(buf, 8192, 99);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_WRITE, 100, 16, buf), 0);
	memset(buf, 0, 8192);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 100, 16, buf), 0);
	cr_assert(td_pattern_ok(buf, 8192, 99));
	/* the last LBA is readable */
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 8191, 1, buf), 0);
	cr_assert(!memcmp(buf, img + 8191 * 512, 512));

	struct gpuos_emu_stats st = stats(&d);
	cr_assert_eq(st.io_cmds, 5);
	cr_assert_eq(st.read_bytes, 4096 + 65536 + 8192 + 512);
	cr_assert_eq(st.write_bytes, 8192);
	cr_assert_eq(st.errors, 0);
	td_close(&d);
	/* ram: the image file itself never changes */
	uint8_t *chk = malloc(8192);
	read_file(img_path, chk, 8192, 100 * 512);
	cr_assert(!memcmp(chk, img + 100 * 512, 8192));
	free(chk);
}

Test(emu_io, flush)
{
	struct td d;
	struct gpuos_nvme_sqe s;

	up(&d, 1, 16, "");
	td_rw_sqe(&s, GPUOS_NVME_CMD_FLUSH, 1, 0, 1, 0, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	td_rw_sqe(&s, GPUOS_NVME_CMD_FLUSH, 0xffffffffu, 0, 1, 0, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	td_rw_sqe(&s, GPUOS_NVME_CMD_FLUSH, 0, 0, 1, 0, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x400b);
	td_close(&d);
}

/* Write pattern `seed` through PRP1/PRP2 as given, read it back plainly. */
static void write_then_check(struct td *d, uint64_t prp1, uint64_t prp2, uint64_t slba,
			     uint32_t nlb, const void *src)
{
	struct gpuos_nvme_sqe s;
	size_t len = (size_t)nlb * 512;

	td_rw_sqe(&s, GPUOS_NVME_CMD_WRITE, 1, slba, nlb, prp1, prp2);
	cr_assert_eq(td_cmd(d, &d->q[1], &s, NULL), 0);
	uint8_t *back = td_alloc(d, len, 4096, NULL);
	cr_assert_eq(td_rw(d, 1, GPUOS_NVME_CMD_READ, slba, nlb, back), 0);
	cr_assert(!memcmp(back, src, len));
}

Test(emu_io, prp1_only_and_prp1_offset)
{
	struct td d;
	struct gpuos_nvme_sqe s;

	up(&d, 1, 16, "");
	uint64_t iova;
	uint8_t *page = td_alloc(&d, 4096, 4096, &iova);
	memset(page, 0xee, 4096);
	/* 2 KiB at offset 1 KiB: inside one page, PRP2 unused (garbage is fine) */
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 20, 4, iova + 1024, 0xdeadbeefull);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	cr_assert(!memcmp(page + 1024, img + 20 * 512, 2048));
	cr_assert_eq(page[1023], 0xee);
	cr_assert_eq(page[3072], 0xee);
	/* one LBA at offset 0 */
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 21, 1, iova, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	cr_assert(!memcmp(page, img + 21 * 512, 512));
	/* and writes the same ways */
	td_pattern(page, 4096, 5);
	write_then_check(&d, iova + 512, 0, 300, 7, page + 512);
	td_close(&d);
}

Test(emu_io, prp1_prp2)
{
	struct td d;
	struct gpuos_nvme_sqe s;

	up(&d, 1, 16, "");
	uint64_t a, b;
	uint8_t *pa = td_alloc(&d, 4096, 4096, &a);
	td_alloc(&d, 4096, 4096, NULL);                 /* a gap: pages need not touch */
	uint8_t *pb = td_alloc(&d, 4096, 4096, &b);
	/* 8 KiB, two whole pages */
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 40, 16, a, b);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	cr_assert(!memcmp(pa, img + 40 * 512, 4096));
	cr_assert(!memcmp(pb, img + 40 * 512 + 4096, 4096));
	/* 4 KiB starting at offset 0xe00: 512 bytes in page a, the rest in page b */
	memset(pa, 0, 4096);
	memset(pb, 0, 4096);
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 80, 8, a + 0xe00, b);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	cr_assert(!memcmp(pa + 0xe00, img + 80 * 512, 512));
	cr_assert(!memcmp(pb, img + 80 * 512 + 512, 3584));
	cr_assert_eq(pb[3584], 0);
	/* PRP2 must be page aligned */
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 80, 16, a, b + 8);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x4013);
	/* PRP1 must be dword aligned */
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 80, 1, a + 2, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x4013);
	td_close(&d);
}

Test(emu_io, prp_list_scattered_pages)
{
	struct td d;
	struct gpuos_nvme_sqe s;

	up(&d, 1, 16, "");
	enum { NPG = 16 };
	uint64_t pg_iova[NPG];
	uint8_t *pg[NPG];
	for (int i = 0; i < NPG; i++)
		pg[i] = td_alloc(&d, 4096, 4096, &pg_iova[i]);
	uint64_t list_iova;
	uint64_t *list = td_alloc(&d, 4096, 4096, &list_iova);
	/* pages in reverse order: the controller must follow entries, not assume a run */
	for (int i = 1; i < NPG; i++)
		list[i - 1] = pg_iova[NPG - i];
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 256, NPG * 8, pg_iova[0], list_iova);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	cr_assert(!memcmp(pg[0], img + 256 * 512, 4096));
	for (int i = 1; i < NPG; i++)
		cr_assert(!memcmp(pg[NPG - i], img + 256 * 512 + (size_t)i * 4096, 4096), "page %d", i);

	/* a list with PRP1 at an offset: 64 KiB from 0x200 spans 17 pages */
	uint64_t buf_iova, p1, p2;
	uint8_t *buf = td_alloc(&d, 20 * 4096, 4096, &buf_iova);
	uint8_t *src = malloc(65536);
	td_pattern(src, 65536, 11);
	memcpy(buf + 0x200, src, 65536);
	td_prps(&d, buf_iova + 0x200, 65536, &p1, &p2);
	write_then_check(&d, p1, p2, 2048, 128, src);
	free(src);
	td_close(&d);
}

Test(emu_io, prp_list_chained_past_one_page)
{
	struct td d;
	uint64_t iova, p1, p2;

	/* 3 MiB: 768 pages, one list page holds 512 entries, so the list chains */
	up(&d, 1, 16, "mdts=4096");
	uint8_t *buf = td_alloc(&d, 3u << 20, 4096, &iova);
	td_prps(&d, iova, 3u << 20, &p1, &p2);
	const uint64_t *l1 = (const uint64_t *)(d.arena + (p2 - TD_ARENA_IOVA));
	cr_assert_eq(l1[511] & 4095, 0, "the chain pointer is a page");
	cr_assert_neq(l1[511], l1[510] + 4096, "and it is not the next data page");
	struct gpuos_nvme_sqe s;
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 6144, p1, p2);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	cr_assert(!memcmp(buf, img, 3u << 20));
	td_close(&d);
}

Test(emu_io, prp_list_pointer_offset_chains_early)
{
	struct td d;
	struct gpuos_nvme_sqe s;

	up(&d, 1, 16, "");
	uint64_t a[4];
	uint8_t *p[4];
	for (int i = 0; i < 4; i++)
		p[i] = td_alloc(&d, 4096, 4096, &a[i]);
	uint64_t l1_iova, l2_iova;
	uint64_t *l1 = td_alloc(&d, 4096, 4096, &l1_iova);
	uint64_t *l2 = td_alloc(&d, 4096, 4096, &l2_iova);
	/* PRP2 points at the last two slots of its page: one data entry, then
	 * the chain to the next list, which holds the last two pages */
	l1[510] = a[1];
	l1[511] = l2_iova;
	l2[0] = a[2];
	l2[1] = a[3];
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 512, 32, a[0], l1_iova + 510 * 8);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	for (int i = 0; i < 4; i++)
		cr_assert(!memcmp(p[i], img + 512 * 512 + (size_t)i * 4096, 4096), "page %d", i);
	/* a list pointer that is not qword aligned */
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 512, 32, a[0], l1_iova + 4);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x4013);
	/* a list that chains to itself forever ends in an error, not a hang */
	l1[511] = l1_iova + 511 * 8;
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 512, 32, a[0], l1_iova + 511 * 8);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x4013);
	td_close(&d);
}

Test(emu_io, prp_list_misaligned_entry)
{
	struct td d;
	struct gpuos_nvme_sqe s;

	up(&d, 1, 16, "");
	uint64_t a[3], l_iova;
	uint8_t *p0 = td_alloc(&d, 4096, 4096, &a[0]);
	td_alloc(&d, 4096, 4096, &a[1]);
	td_alloc(&d, 4096, 4096, &a[2]);
	uint64_t *l = td_alloc(&d, 4096, 4096, &l_iova);
	memset(p0, 0xee, 4096);
	l[0] = a[1];
	l[1] = a[2] + 0x10;
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 24, a[0], l_iova);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x4013);
	cr_assert_eq(p0[0], 0xee, "no partial transfer before the error");
	cr_assert_eq(stats(&d).errors, 1);
	td_close(&d);
}

Test(emu_io, mdts_enforced)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	up(&d, 1, 16, "mdts=8");
	uint64_t iova, p1, p2;
	uint8_t *buf = td_alloc(&d, 16384, 4096, &iova);
	td_prps(&d, iova, 8704, &p1, &p2);
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 17, p1, p2);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, &c), 0x4002, "8.5 KiB > MDTS 8 KiB, as QEMU: 0x4002");
	cr_assert(gpuos_nvme_status_dnr(stat_of(&c)));
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 16, buf), 0);
	td_close(&d);
}

Test(emu_io, lba_out_of_range)
{
	struct td d;
	struct gpuos_nvme_sqe s;

	up(&d, 1, 16, "");                             /* 8192 LBAs */
	uint8_t *buf = td_alloc(&d, 8192, 4096, NULL);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 8192, 1, buf), 0x4080);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 8191, 2, buf), 0x4080);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_WRITE, 8190, 3, buf), 0x4080);
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, UINT64_MAX - 1, 4, td_iova(&d, buf), 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x4080, "no wrap-around");
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 8184, 8, buf), 0);
	td_close(&d);
}

Test(emu_io, bad_opcode_and_nsid)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	up(&d, 1, 16, "");
	uint64_t iova;
	td_alloc(&d, 4096, 4096, &iova);
	td_rw_sqe(&s, 0x7e, 1, 0, 1, iova, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, &c), 0x4001);
	cr_assert_eq(gpuos_nvme_status_sc(stat_of(&c)), 0x01);
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 0, 0, 1, iova, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, &c), 0x400b);
	cr_assert(gpuos_nvme_status_dnr(stat_of(&c)));
	td_rw_sqe(&s, GPUOS_NVME_CMD_WRITE, 2, 0, 1, iova, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x400b);
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 0xffffffffu, 0, 1, iova, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x400b);
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 1, iova, 0);
	s.fuse_psdt = 0x40;                            /* SGLs: not supported */
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x4002);
	cr_assert_eq(stats(&d).errors, 5);
	td_close(&d);
}

Test(emu_io, dma_fault)
{
	struct td d;
	struct gpuos_nvme_sqe s;

	up(&d, 1, 16, "");
	uint64_t a, l_iova;
	uint8_t *pa = td_alloc(&d, 4096, 4096, &a);
	uint64_t *l = td_alloc(&d, 4096, 4096, &l_iova);
	memset(pa, 0xee, 4096);

	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 8, 0xdead0000ull, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x0004);
	cr_assert_eq(stats(&d).dma_faults, 1);
	cr_assert_eq(stats(&d).last_fault_iova, 0xdead0000ull);

	/* the second page unmapped: nothing lands in the first either */
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 16, a, 0xbeef0000ull);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x0004);
	cr_assert_eq(pa[0], 0xee);
	cr_assert_eq(stats(&d).last_fault_iova, 0xbeef0000ull);

	/* the list itself unmapped, then one entry in it */
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 24, a, 0xcafe0000ull);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x0004);
	cr_assert_eq(stats(&d).last_fault_iova, 0xcafe0000ull);
	l[0] = TD_ARENA_IOVA + TD_ARENA_BYTES;      /* one page past the arena */
	l[1] = a;
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 24, a, l_iova);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x0004);
	cr_assert_eq(stats(&d).last_fault_iova, TD_ARENA_IOVA + TD_ARENA_BYTES);

	/* a write from nowhere changes nothing */
	td_rw_sqe(&s, GPUOS_NVME_CMD_WRITE, 1, 0, 8, 0xdead0000ull, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x0004);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 8, pa), 0);
	cr_assert(!memcmp(pa, img, 4096));

	struct gpuos_emu_stats st = stats(&d);
	cr_assert_eq(st.dma_faults, 5);
	cr_assert_eq(st.errors, 5);
	cr_assert_eq(st.csts & GPUOS_NVME_CSTS_CFS, 0, "a DMA fault is not fatal");
	td_close(&d);
}

Test(emu_io, unmapped_region_faults)
{
	struct td d;
	struct gpuos_nvme_sqe s;

	up(&d, 1, 16, "");
	uint8_t *extra = aligned_alloc(4096, 8192);
	cr_assert_eq(gpuos_emu_map(d.e, 0x50000000ull, extra, 8192, GPUOS_EMU_REGION_HOST), 0);
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 16, 0x50000000ull, 0x50001000ull);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	cr_assert(!memcmp(extra, img, 8192));
	cr_assert_eq(gpuos_emu_unmap(d.e, 0x50000000ull), 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0x0004);
	td_close(&d);
	free(extra);
}

Test(emu_io, full_sq)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	up(&d, 1, 16, "");
	uint8_t *buf = td_alloc(&d, 15 * 4096, 4096, NULL);
	/* depth - 1 commands outstanding: the most an SQ holds */
	for (int i = 0; i < 15; i++) {
		td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, (uint64_t)i * 8, 8, td_iova(&d, buf + i * 4096), 0);
		s.cid = (uint16_t)(100 + i);
		td_sq_push(&d, &d.q[1], &s);
	}
	cr_assert_eq(d.q[1].sq_tail, 15);
	td_sq_ring(&d, &d.q[1]);
	uint32_t seen = 0;
	for (int i = 0; i < 15; i++) {
		cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, TD_TIMEOUT_MS, 1), 0, "completion %d", i);
		cr_assert_eq(stat_of(&c), 0);
		cr_assert_eq(c.sqid, 1);
		cr_assert(c.cid >= 100 && c.cid < 115);
		seen |= 1u << (c.cid - 100);
		cr_assert_leq(c.sqhd, 15);
	}
	cr_assert_eq(seen, 0x7fff);
	cr_assert_eq(c.sqhd, 15, "the last CQE reports the SQ drained");
	cr_assert(!memcmp(buf, img, 15 * 4096));
	td_close(&d);
}

Test(emu_io, cq_phase_wraps_many_rounds)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	up(&d, 1, 4, "");
	uint8_t *buf = td_alloc(&d, 3 * 512, 4096, NULL);
	/* 3 in flight at a time in a 4-entry queue pair, 300 rounds: the phase
	 * flips 225 times */
	for (int round = 0; round < 300; round++) {
		for (int i = 0; i < 3; i++) {
			td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, (uint64_t)(round * 3 + i) % 8192, 1,
				  td_iova(&d, buf + i * 512), 0);
			s.cid = (uint16_t)(round * 3 + i);
			td_sq_push(&d, &d.q[1], &s);
		}
		td_sq_ring(&d, &d.q[1]);
		for (int i = 0; i < 3; i++) {
			cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, TD_TIMEOUT_MS, 1), 0, "round %d", round);
			cr_assert_eq(stat_of(&c), 0);
			cr_assert_eq(c.cid, round * 3 + i, "in order without ooo");
		}
		size_t at = (size_t)((round * 3) % 8192) * 512;
		cr_assert(!memcmp(buf, img + at, 512));
	}
	td_close(&d);
}

Test(emu_io, full_cq_waits_for_the_host)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	make_image(4u << 20, 1);
	open_emu(&d, "%s", img_path);
	cr_assert_eq(td_enable(&d, 8), 0);
	cr_assert_eq(td_create_cq(&d, 1, 4), 0);
	cr_assert_eq(td_create_sq(&d, 1, 64, 1), 0);
	uint8_t *buf = td_alloc(&d, 40 * 512, 4096, NULL);
	for (int i = 0; i < 40; i++) {
		td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, (uint64_t)i, 1, td_iova(&d, buf + i * 512), 0);
		s.cid = (uint16_t)i;
		td_sq_push(&d, &d.q[1], &s);
	}
	td_sq_ring(&d, &d.q[1]);
	struct timespec ts = { 0, 30000000 };
	nanosleep(&ts, NULL);
	/* the host consumed nothing: 3 entries posted, the 4th slot untouched */
	const uint32_t *cq = (const uint32_t *)d.q[1].cq;
	for (int i = 0; i < 3; i++)
		cr_assert_eq((__atomic_load_n(&cq[i * 4 + 3], __ATOMIC_ACQUIRE) >> 16) & 1, 1);
	cr_assert_eq(__atomic_load_n(&cq[3 * 4 + 3], __ATOMIC_ACQUIRE), 0, "no entry in the slot before head");
	cr_assert_geq(stats(&d).cq_full_waits, 1);

	/* a slow host: one at a time, a pause between */
	uint64_t seen = 0;
	for (int i = 0; i < 40; i++) {
		cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, TD_TIMEOUT_MS, 1), 0, "completion %d", i);
		cr_assert_eq(stat_of(&c), 0);
		cr_assert_lt(c.cid, 40);
		cr_assert_eq(seen & (1ull << c.cid), 0, "cid %u twice", c.cid);
		seen |= 1ull << c.cid;
		if (i % 8 == 0) {
			struct timespec t2 = { 0, 2000000 };
			nanosleep(&t2, NULL);
		}
	}
	cr_assert_eq(seen, (1ull << 40) - 1, "nothing lost");
	cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, 20, 1), -ETIMEDOUT, "nothing extra");
	cr_assert(!memcmp(buf, img, 40 * 512));
	td_close(&d);
}

/* Submit n one-LBA reads with cids 0..n-1 in one doorbell; collect the order. */
static int burst(struct td *d, uint16_t qid, int n, uint16_t *order, uint32_t timeout_ms)
{
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;
	uint8_t *buf = td_alloc(d, (size_t)n * 512, 4096, NULL);
	int got = 0;

	for (int i = 0; i < n; i++) {
		td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, (uint64_t)i, 1, td_iova(d, buf + i * 512), 0);
		s.cid = (uint16_t)i;
		td_sq_push(d, &d->q[qid], &s);
	}
	td_sq_ring(d, &d->q[qid]);
	while (got < n && td_cq_poll(d, &d->q[qid], &c, timeout_ms, 1) == 0)
		order[got++] = c.cid;
	return got;
}

Test(emu_io, out_of_order_completion)
{
	struct td d;
	uint16_t order[32];

	up(&d, 1, 64, "ooo=1,seed=3");
	cr_assert_eq(burst(&d, 1, 32, order, TD_TIMEOUT_MS), 32);
	int inorder = 1;
	uint32_t seen = 0;
	for (int i = 0; i < 32; i++) {
		inorder &= order[i] == i;
		seen |= 1u << order[i];
	}
	cr_assert_eq(seen, 0xffffffffu, "every command completes once");
	cr_assert(!inorder, "ooo=1 completes a batch out of order");
	td_close(&d);
	cleanup();

	up(&d, 1, 64, "");
	cr_assert_eq(burst(&d, 1, 32, order, TD_TIMEOUT_MS), 32);
	for (int i = 0; i < 32; i++)
		cr_assert_eq(order[i], i, "ooo=0 keeps fetch order");
	td_close(&d);
}

Test(emu_io, reset_deletes_io_queues)
{
	struct td d;

	up(&d, 2, 16, "");
	uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 8, buf), 0);
	cr_assert_eq(td_disable(&d), 0);
	cr_assert_eq(td_enable(&d, 8), 0);
	/* the old identifiers are free again */
	cr_assert_eq(td_create_pair(&d, 1, 16, 16), 0);
	cr_assert_eq(td_create_pair(&d, 2, 16, 16), 0);
	cr_assert_eq(td_rw(&d, 2, GPUOS_NVME_CMD_READ, 8, 8, buf), 0);
	cr_assert(!memcmp(buf, img + 4096, 4096));
	td_close(&d);
}

Test(emu_io, delete_sq_with_commands_in_flight)
{
	struct td d;
	struct gpuos_nvme_sqe s;

	/* 30 s of latency against a bound of half that: a busy machine (make
	 * test runs suites side by side) delays the deletion's answer by
	 * seconds at worst, never by the model's latency (issue 35: 2 s against
	 * a bound of 1 s was one a loaded machine could break). */
	up(&d, 1, 16, "latency_us=30000000");
	uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
	for (int i = 0; i < 4; i++) {
		td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 1, td_iova(&d, buf), 0);
		s.cid = (uint16_t)i;
		td_sq_push(&d, &d.q[1], &s);
	}
	td_sq_ring(&d, &d.q[1]);
	uint64_t t0 = gpuos_now_ns();
	cr_assert_eq(td_delete_sq(&d, 1), 0);
	cr_assert_lt(ms_since(t0), 15000, "deletion does not wait for the model's latency");
	cr_assert_eq(td_delete_cq(&d, 1), 0);
	td_close(&d);
}

Test(emu_io, two_workers_four_queues)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	up(&d, 4, 32, "queues=4,workers=2");
	uint8_t *w = td_alloc(&d, 4 * 16 * 4096, 4096, NULL);
	uint8_t *r = td_alloc(&d, 4 * 16 * 4096, 4096, NULL);
	td_pattern(w, 4 * 16 * 4096, 21);
	/* 16 writes per queue, all queues at once, disjoint LBAs */
	for (int q = 1; q <= 4; q++) {
		for (int i = 0; i < 16; i++) {
			size_t k = (size_t)(q - 1) * 16 + (size_t)i;
			td_rw_sqe(&s, GPUOS_NVME_CMD_WRITE, 1, k * 8, 8, td_iova(&d, w + k * 4096), 0);
			s.cid = (uint16_t)i;
			td_sq_push(&d, &d.q[q], &s);
		}
		td_sq_ring(&d, &d.q[q]);
	}
	for (int q = 1; q <= 4; q++)
		for (int i = 0; i < 16; i++) {
			cr_assert_eq(td_cq_poll(&d, &d.q[q], &c, TD_TIMEOUT_MS, 1), 0);
			cr_assert_eq(stat_of(&c), 0);
			cr_assert_eq(c.sqid, q);
		}
	for (int q = 1; q <= 4; q++) {
		for (int i = 0; i < 16; i++) {
			size_t k = (size_t)(q - 1) * 16 + (size_t)i;
			td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, k * 8, 8, td_iova(&d, r + k * 4096), 0);
			s.cid = (uint16_t)i;
			td_sq_push(&d, &d.q[q], &s);
		}
		td_sq_ring(&d, &d.q[q]);
	}
	for (int q = 1; q <= 4; q++)
		for (int i = 0; i < 16; i++)
			cr_assert_eq(td_cq_poll(&d, &d.q[q], &c, TD_TIMEOUT_MS, 1), 0);
	cr_assert(!memcmp(r, w, 4 * 16 * 4096));
	td_close(&d);
}

Test(emu_io, performance_model)
{
	struct td d;
	uint16_t order[64];

	up(&d, 1, 64, "latency_us=30000");
	uint8_t *buf = td_alloc(&d, 512 * 1024, 4096, NULL);
	uint64_t t0 = gpuos_now_ns();
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 1, buf), 0);
	cr_assert_geq(ms_since(t0), 29, "latency_us=30000");
	td_close(&d);
	cleanup();

	up(&d, 1, 64, "iops=500");
	t0 = gpuos_now_ns();
	cr_assert_eq(burst(&d, 1, 50, order, TD_TIMEOUT_MS), 50);
	cr_assert_geq(ms_since(t0), 95, "50 commands at 500 IOPS: %llu ms",
		      (unsigned long long)ms_since(t0));
	td_close(&d);
	cleanup();

	up(&d, 1, 64, "gbps=0.01");
	buf = td_alloc(&d, 512 * 1024, 4096, NULL);
	t0 = gpuos_now_ns();
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 1024, buf), 0);
	cr_assert_geq(ms_since(t0), 50, "512 KiB at 10 MB/s: %llu ms", (unsigned long long)ms_since(t0));
	td_close(&d);
}

/* ---- fault injection --------------------------------------------------- */

Test(emu_fault, lba_ranges)
{
	struct td d;

	up(&d, 1, 16, "faults=lba:100-199+lba:500:0x4006");
	uint8_t *buf = td_alloc(&d, 8192, 4096, NULL);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 100, 1, buf), 0x281);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 199, 1, buf), 0x281);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 96, 8, buf), 0x281, "touching the range");
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_WRITE, 150, 1, buf), 0x281);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 92, 8, buf), 0);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 200, 8, buf), 0);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 500, 1, buf), 0x4006);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 501, 1, buf), 0);
	cr_assert_eq(stats(&d).errors, 5);
	td_close(&d);
}

static void rate_run(const char *extra, uint8_t *pattern, int n)
{
	struct td d;

	up(&d, 1, 16, extra);
	uint8_t *buf = td_alloc(&d, 512, 4096, NULL);
	for (int i = 0; i < n; i++) {
		int st = td_rw(&d, 1, GPUOS_NVME_CMD_READ, (uint64_t)i, 1, buf);
		cr_assert(st == 0 || st == 0x006, "status %#x", st);
		pattern[i] = st != 0;
	}
	td_close(&d);
	cleanup();
}

Test(emu_fault, random_rate_deterministic)
{
	uint8_t a[200], b[200], c[200];
	int fails = 0;

	rate_run("faults=rate:0.3:0x6,seed=11", a, 200);
	rate_run("faults=rate:0.3:0x6,seed=11", b, 200);
	rate_run("faults=rate:0.3:0x6,seed=12", c, 200);
	for (int i = 0; i < 200; i++)
		fails += a[i];
	cr_assert(fails > 30 && fails < 90, "%d of 200 failed at p = 0.3", fails);
	cr_assert(!memcmp(a, b, sizeof(a)), "same seed, same faults");
	cr_assert(memcmp(a, c, sizeof(a)), "another seed, other faults");

	/* the default status: unrecovered read error */
	struct td d;
	up(&d, 1, 16, "faults=rate:1");
	uint8_t *buf = td_alloc(&d, 512, 4096, NULL);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 1, buf), 0x281);
	td_close(&d);
}

/* burst on queue 1 under a lost-completion fault: no silence tells a lost
 * completion from a late one on a loaded machine (unit-emu beside other
 * suites stalled the controller past 100 ms), so take completions until
 * the controller has run all n and every completion not lost has come;
 * 60 s is a hang guard, not a bound */
static int burst_lossy(struct td *d, int n, uint16_t *order)
{
	int got = burst(d, 1, n, order, 100);
	struct gpuos_emu_stats st = stats(d);

	for (int i = 0; i < 600 && got < n && (st.io_cmds < (uint64_t)n || got < (int)(n - st.lost)); i++) {
		struct gpuos_nvme_cqe c;
		if (td_cq_poll(d, &d->q[1], &c, 100, 1) == 0)
			order[got++] = c.cid;
		st = stats(d);
	}
	return got;
}

Test(emu_fault, lost_completions_by_rate)
{
	struct td d;
	uint16_t order[64];

	up(&d, 1, 128, "faults=lost:0.5,seed=5");
	int got = burst_lossy(&d, 64, order);
	struct gpuos_emu_stats st = stats(&d);
	cr_assert_eq(st.io_cmds, 64);
	cr_assert_eq(st.lost, (uint64_t)(64 - got));
	cr_assert(got > 12 && got < 52, "%d of 64 arrived at p = 0.5", got);
	td_close(&d);
}

Test(emu_fault, lost_every_nth)
{
	struct td d;
	uint16_t order[40];

	up(&d, 1, 64, "faults=lost_every:4");
	int got = burst_lossy(&d, 40, order);
	cr_assert_eq(stats(&d).io_cmds, 40);
	cr_assert_eq(got, 30);
	cr_assert_eq(stats(&d).lost, 10);
	uint64_t seen = 0;
	for (int i = 0; i < got; i++)
		seen |= 1ull << order[i];
	for (int i = 0; i < 40; i++)
		cr_assert_eq(!!(seen & (1ull << i)), (i + 1) % 4 != 0, "cid %d", i);
	/* later completions still carry the SQ head past the lost ones */
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 1, td_alloc(&d, 512, 4096, NULL)), 0);
	td_close(&d);
}

/* Submit n one-LBA reads with cids 0..n-1 in one doorbell; collect up to
 * max completions (duplicates included): the first want of them under the
 * hang guard (a loaded machine can stall the controller for seconds), then
 * any more until 300 ms pass without one; a late extra can only hide, so a
 * busy machine cannot fail a count. */
static int collect(struct td *d, int n, uint16_t *cids, int max, int want)
{
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;
	uint8_t *buf = td_alloc(d, (size_t)n * 512, 4096, NULL);
	int got = 0;

	for (int i = 0; i < n; i++) {
		td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, (uint64_t)i, 1, td_iova(d, buf + i * 512), 0);
		s.cid = (uint16_t)i;
		td_sq_push(d, &d->q[1], &s);
	}
	td_sq_ring(d, &d->q[1]);
	while (got < max && td_cq_poll(d, &d->q[1], &c, got < want ? TD_TIMEOUT_MS : 300, 1) == 0) {
		cr_assert_eq(stat_of(&c), 0);
		cids[got++] = c.cid;
	}
	return got;
}

/* dup:P, the second completion 20 us after the first; dupnow:P, in the next
 * CQ entry; duplate:P:MS, MS ms later. The controller counts the copies. */
Test(emu_fault, duplicate_completions)
{
	struct td d;
	struct gpuos_nvme_cqe c;
	struct gpuos_emu_stats st;
	uint16_t cids[160];
	int got;

	up(&d, 1, 128, "faults=dup:1");
	got = collect(&d, 16, cids, 80, 32);
	cr_assert_eq(got, 32, "each of 16 completions twice, got %d", got);
	for (int i = 0; i < 16; i++) {
		int k = 0;
		for (int j = 0; j < got; j++)
			k += cids[j] == i;
		cr_assert_eq(k, 2, "cid %d completed %d times", i, k);
	}
	st = stats(&d);
	cr_assert_eq(st.dups, 16);
	cr_assert_eq(st.io_fetched, 16);
	cr_assert_eq(st.io_cmds, 16, "a copy is not a command");
	td_close(&d);
	cleanup();

	/* out of order, so that only the fault keeps the two copies together */
	up(&d, 1, 128, "faults=dupnow:1,ooo=1,seed=4");
	got = collect(&d, 32, cids, 80, 64);
	cr_assert_eq(got, 64, "each of 32 completions twice, got %d", got);
	for (int j = 0; j < got; j += 2)
		cr_assert_eq(cids[j], cids[j + 1], "entries %d and %d: cids %u and %u", j, j + 1, cids[j], cids[j + 1]);
	cr_assert_eq(stats(&d).dups, 32);
	td_close(&d);
	cleanup();

	/* the copy 10 s late, the completion at once: within half of the
	 * copy's time (issue 35: 1 s against a bound of 500 ms was one a busy
	 * machine could break); the poll's limit is a hang guard */
	up(&d, 1, 128, "faults=duplate:1:10000");
	uint8_t *buf = td_alloc(&d, 512, 4096, NULL);
	uint64_t t0 = gpuos_now_ns(), at;
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 1, buf), 0);
	at = ms_since(t0);
	cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, 120000, 1), 0, "the copy comes");
	cr_assert_geq(ms_since(t0), 10000u, "the copy after %lu ms", (unsigned long)ms_since(t0));
	cr_assert_lt(at * 2, ms_since(t0), "the completion at once: %lu ms, the copy %lu ms", (unsigned long)at,
		     (unsigned long)ms_since(t0));
	cr_assert_eq(c.cid, 0);
	cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, 100, 1), -ETIMEDOUT, "once");
	cr_assert_eq(stats(&d).dups, 1);
	td_close(&d);
	cleanup();

	/* rates: about half of 64 completions get a copy, repeatably per seed */
	up(&d, 1, 256, "faults=dupnow:0.5,seed=9");
	got = collect(&d, 64, cids, 160, 64);
	st = stats(&d);
	/* a copy counted and not yet read: its entry follows (a hang guard) */
	for (int i = 0; i < 600 && (uint64_t)got < 64u + st.dups && got < 160; i++) {
		if (td_cq_poll(&d, &d.q[1], &c, 100, 1) == 0)
			cids[got++] = c.cid;
		st = stats(&d);
	}
	cr_assert_eq((uint64_t)got, 64u + st.dups);
	cr_assert(st.dups > 12 && st.dups < 52, "%lu copies of 64 at p = 0.5", (unsigned long)st.dups);
	td_close(&d);
}

/* A CID is unique among the outstanding commands of an SQ (NVMe 4.2): the
 * controller counts a command fetched while another with its CID is still
 * unanswered, and runs it all the same. A CID is free again once its
 * completion is posted, or dropped (lost), never because of a copy. */
Test(emu_fault, cid_conflicts_are_counted)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	up(&d, 1, 64, "latency_us=20000");
	uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
	for (int i = 0; i < 3; i++) {
		td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, (uint64_t)i, 1, td_iova(&d, buf + i * 512), 0);
		s.cid = i == 2 ? 7 : (uint16_t)(7 + 300 * i); /* 7, 307, then 7 again */
		td_sq_push(&d, &d.q[1], &s);
	}
	td_sq_ring(&d, &d.q[1]);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, TD_TIMEOUT_MS, 1), 0);
	cr_assert(!memcmp(buf, img, 3 * 512), "executed all the same");
	cr_assert_eq(stats(&d).cid_conflicts, 1);
	/* answered: 7 and 307 are free again */
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 1, td_iova(&d, buf), 0);
	s.cid = 307;
	td_sq_push(&d, &d.q[1], &s);
	td_sq_ring(&d, &d.q[1]);
	cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, TD_TIMEOUT_MS, 1), 0);
	cr_assert_eq(stats(&d).cid_conflicts, 1);
	cr_assert_eq(stats(&d).io_fetched, 4);
	td_close(&d);
	cleanup();

	/* lost, and copies: neither keeps a CID taken. Each command is done
	 * with (its completion and the copy read, or its loss counted) before
	 * the next takes its CID. */
	up(&d, 1, 64, "faults=lost_every:2+dup:1");
	buf = td_alloc(&d, 4096, 4096, NULL);
	for (int i = 0; i < 6; i++) {
		td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 1, td_iova(&d, buf), 0);
		s.cid = 5;
		td_sq_push(&d, &d.q[1], &s);
		td_sq_ring(&d, &d.q[1]);
		if (i % 2) {
			uint64_t t0 = gpuos_now_ns();
			/* until the controller has dropped it (a hang guard) */
			while (stats(&d).lost < (uint64_t)(i + 1) / 2u && ms_since(t0) < 60000)
				usleep(100);
		} else {
			cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, TD_TIMEOUT_MS, 1), 0);
			cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, TD_TIMEOUT_MS, 1), 0, "the copy");
		}
	}
	cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, 50, 1), -ETIMEDOUT);
	cr_assert_eq(stats(&d).lost, 3);
	cr_assert_eq(stats(&d).cid_conflicts, 0);
	td_close(&d);
}

Test(emu_fault, cfs_after_n_commands)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	up(&d, 1, 16, "faults=cfs:5");
	uint8_t *buf = td_alloc(&d, 512, 4096, NULL);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, (uint64_t)i, 1, buf), 0);
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 1, td_iova(&d, buf), 0);
	td_sq_push(&d, &d.q[1], &s);
	td_sq_ring(&d, &d.q[1]);
	cr_assert_eq(td_wait_csts(&d, GPUOS_NVME_CSTS_CFS, GPUOS_NVME_CSTS_CFS, TD_TIMEOUT_MS), 0);
	cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, 50, 1), -ETIMEDOUT, "the 6th never completes");
	cr_assert_eq(stats(&d).csts & GPUOS_NVME_CSTS_CFS, GPUOS_NVME_CSTS_CFS);
	/* admin stops too */
	struct gpuos_nvme_sqe a;
	memset(&a, 0, sizeof(a));
	a.opc = GPUOS_NVME_ADMIN_IDENTIFY;
	a.prp1 = td_iova(&d, td_alloc(&d, 4096, 4096, NULL));
	a.cdw10 = GPUOS_NVME_CNS_CONTROLLER;
	td_sq_push(&d, &d.aq, &a);
	td_sq_ring(&d, &d.aq);
	cr_assert_eq(td_cq_poll(&d, &d.aq, &c, 50, 1), -ETIMEDOUT);
	/* the driver's recovery: reset, bring up again */
	cr_assert_eq(td_disable(&d), 0);
	cr_assert_eq(td_rd32(&d, GPUOS_NVME_REG_CSTS), 0);
	cr_assert_eq(td_bringup(&d, 1, 16), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, (uint64_t)i, 1, buf), 0);
	td_close(&d);
}

/* ---- backends ------------------------------------------------------------- */

static void backend_roundtrip(const char *backend)
{
	struct td d;

	make_image(4u << 20, 7);
	open_emu(&d, "%s,backend=%s", img_path, backend);
	cr_assert_eq(td_bringup(&d, 1, 32), 0);
	uint8_t *buf = td_alloc(&d, 1u << 20, 4096, NULL);
	/* aligned: 4 KiB LBAs runs (the O_DIRECT path for uring) */
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 8, 256, buf), 0);
	cr_assert(!memcmp(buf, img + 4096, 128 * 1024));
	/* unaligned: one 512-byte LBA at an odd place into an odd offset (buffered) */
	uint64_t iova;
	uint8_t *odd = td_alloc(&d, 8192, 4096, &iova);
	struct gpuos_nvme_sqe s;
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 3, 1, iova + 0x204, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	cr_assert(!memcmp(odd + 0x204, img + 3 * 512, 512));
	/* a large read through a chained-free list */
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 1024, buf), 0);
	cr_assert(!memcmp(buf, img, 512 * 1024));

	td_pattern(buf, 65536, 42);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_WRITE, 1024, 128, buf), 0);
	td_pattern(odd + 0x204, 512, 43);
	td_rw_sqe(&s, GPUOS_NVME_CMD_WRITE, 1, 5, 1, iova + 0x204, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	td_rw_sqe(&s, GPUOS_NVME_CMD_FLUSH, 1, 0, 1, 0, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	memset(buf, 0, 65536);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 1024, 128, buf), 0);
	cr_assert(td_pattern_ok(buf, 65536, 42));
	td_close(&d);

	/* file and uring write through to the image */
	uint8_t *chk = malloc(65536);
	read_file(img_path, chk, 65536, 1024 * 512);
	cr_assert(td_pattern_ok(chk, 65536, 42));
	read_file(img_path, chk, 512, 5 * 512);
	cr_assert(td_pattern_ok(chk, 512, 43));
	read_file(img_path, chk, 512, 4 * 512);
	cr_assert(!memcmp(chk, img + 4 * 512, 512), "neighbours untouched");
	free(chk);
}

Test(emu_backend, file)
{
	backend_roundtrip("file");
}

Test(emu_backend, uring)
{
	backend_roundtrip("uring");
}

Test(emu_backend, uring_two_workers_batches)
{
	struct td d;
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	make_image(4u << 20, 8);
	open_emu(&d, "%s,backend=uring,queues=2,workers=2", img_path);
	cr_assert_eq(td_bringup(&d, 2, 64), 0);
	uint8_t *buf = td_alloc(&d, 2 * 48 * 4096, 4096, NULL);
	for (int q = 1; q <= 2; q++) {
		for (int i = 0; i < 48; i++) {
			size_t k = (size_t)(q - 1) * 48 + (size_t)i;
			td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, k * 8, 8, td_iova(&d, buf + k * 4096), 0);
			s.cid = (uint16_t)i;
			td_sq_push(&d, &d.q[q], &s);
		}
		td_sq_ring(&d, &d.q[q]);
	}
	for (int q = 1; q <= 2; q++)
		for (int i = 0; i < 48; i++) {
			cr_assert_eq(td_cq_poll(&d, &d.q[q], &c, TD_TIMEOUT_MS, 1), 0);
			cr_assert_eq(stat_of(&c), 0);
		}
	cr_assert(!memcmp(buf, img, 2 * 48 * 4096));
	td_close(&d);
}

Test(emu_backend, ram_keeps_writes_in_memory)
{
	struct td d;

	up(&d, 1, 16, "backend=ram");
	uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
	td_pattern(buf, 4096, 9);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_WRITE, 0, 8, buf), 0);
	memset(buf, 0, 4096);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 8, buf), 0);
	cr_assert(td_pattern_ok(buf, 4096, 9));
	td_close(&d);
	uint8_t chk[4096];
	read_file(img_path, chk, 4096, 0);
	cr_assert(!memcmp(chk, img, 4096));
}

/* The ram backend reads a chunk of the image when a command first touches
 * it: a write into a chunk not yet read keeps the file's bytes around it,
 * a chunk read stays as it was read, and one first touched after the file
 * shrank reads as zeros, status OK (no SIGBUS, as a mapping of the file
 * would give). */
Test(emu_backend, ram_loads_what_commands_touch)
{
	struct td d;

	up(&d, 2, 16, "backend=ram,workers=2");
	uint8_t *buf = td_alloc(&d, 1u << 20, 4096, NULL);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 8, buf), 0);
	cr_assert(!memcmp(buf, img, 4096));
	/* 8 LBAs in the middle of the second 256 KiB chunk */
	td_pattern(buf, 4096, 5);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_WRITE, 700, 8, buf), 0);
	cr_assert_eq(td_rw(&d, 2, GPUOS_NVME_CMD_READ, 512, 512, buf), 0);
	cr_assert(!memcmp(buf, img + 512 * 512, 188 * 512), "the chunk's bytes before the write");
	cr_assert(td_pattern_ok(buf + 188 * 512, 4096, 5));
	cr_assert(!memcmp(buf + 196 * 512, img + 708 * 512, 316 * 512), "the chunk's bytes after it");
	/* the file shrinks to 1 MiB under the controller */
	cr_assert_eq(truncate(img_path, 1u << 20), 0);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 8, buf), 0);
	cr_assert(!memcmp(buf, img, 4096), "a chunk read stays");
	memset(buf, 0xee, 256u << 10);
	cr_assert_eq(td_rw(&d, 2, GPUOS_NVME_CMD_READ, 6144, 512, buf), 0, "past the file's new end");
	for (uint32_t i = 0; i < (256u << 10); i++)
		cr_assert_eq(buf[i], 0, "byte %u", i);
	cr_assert_eq(stats(&d).io_cmds, 5);
	td_close(&d);
}

/* A sparse image of 4 GiB with 8 KiB of data in its middle: the ram
 * backend reads what a command touches and skips the holes: 1,024 reads
 * spread over the image read about one chunk of the file (/proc/self/io). */
Test(emu_backend, ram_sparse_image_reads_its_data)
{
	struct td d;
	uint8_t data[8192];
	int fd = open(make_image(0, 1), O_RDWR);

	cr_assert_geq(fd, 0);
	td_pattern(data, sizeof(data), 3);
	cr_assert_eq(pwrite(fd, data, sizeof(data), 2ull << 30), (ssize_t)sizeof(data));
	cr_assert_eq(ftruncate(fd, 4ull << 30), 0);
	close(fd);
	open_emu(&d, "%s,backend=ram", img_path);
	cr_assert_eq(td_bringup(&d, 1, 64), 0);
	uint8_t *buf = td_alloc(&d, 1u << 20, 4096, NULL);
	long long r0 = read_bytes();
	if (r0 < 0)
		cr_skip_test("no /proc/self/io here");
	/* every 16th 256 KiB chunk of the image, 4 KiB of each */
	for (uint64_t k = 0; k < 16384; k += 16) {
		cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, k << 9, 8, buf), 0, "chunk %lu", (unsigned long)k);
		if (k != 8192)
			cr_assert(buf[0] == 0 && !memcmp(buf, buf + 1, 4095), "chunk %lu reads zeros", (unsigned long)k);
	}
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 8192u << 9, 16, buf), 0);
	cr_assert(td_pattern_ok(buf, sizeof(data), 3));
	long long got = read_bytes() - r0;
	cr_assert_lt(got, 4ll << 20, "%lld bytes read from the file for 8 KiB of data", got);
	td_close(&d);
}

Test(emu_backend, null)
{
	struct td d;

	open_emu(&d, "null,size=1M");
	cr_assert_eq(gpuos_emu_ns_bytes(d.e), 1u << 20);
	cr_assert_eq(td_bringup(&d, 1, 16), 0);
	uint8_t *buf = td_alloc(&d, 8192, 4096, NULL);
	memset(buf, 0xaa, 8192);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_WRITE, 0, 16, buf), 0);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 0, 16, buf), 0);
	for (int i = 0; i < 8192; i++)
		cr_assert_eq(buf[i], 0, "byte %d", i);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 2048, 1, buf), 0x4080);
	td_close(&d);

	open_emu(&d, "null");
	cr_assert_eq(gpuos_emu_ns_bytes(d.e), 1ull << 40, "1 TiB by default");
	cr_assert_eq(td_bringup(&d, 1, 16), 0);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, (1ull << 31) - 1, 1, buf), 0);
	td_close(&d);

	open_emu(&d, "null,size=1M,lba=4096");
	cr_assert_eq(gpuos_emu_ns_bytes(d.e), 1u << 20);
	td_close(&d);
}

Test(emu_backend, read_only_image)
{
	struct td d;

	make_image(1u << 20, 12);
	cr_assert_eq(chmod(img_path, 0444), 0);
	int fd = open(img_path, O_RDWR);
	if (fd >= 0) {
		/* root ignores the mode; an immutable file it cannot write either */
		int flags = 0;
		int ok = !ioctl(fd, FS_IOC_GETFLAGS, &flags);
		flags |= FS_IMMUTABLE_FL;
		ok = ok && !ioctl(fd, FS_IOC_SETFLAGS, &flags);
		close(fd);
		if (!ok)
			cr_skip_test("cannot make the image read-only here");
	}
	for (int b = 0; b < 2; b++) {
		open_emu(&d, "%s,backend=%s", img_path, b ? "uring" : "file");
		cr_assert_eq(td_bringup(&d, 1, 16), 0);
		uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
		cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 8, 8, buf), 0);
		cr_assert(!memcmp(buf, img + 4096, 4096));
		cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_WRITE, 8, 8, buf), 0x4020,
			     "Namespace is Write Protected");
		td_close(&d);
	}
	img_mutable();
}

/* A partial last LBA is served: the file's bytes, then zeros; nothing past it. */
Test(emu_backend, image_rounds_up_to_whole_lbas)
{
	static const char *backends[] = { "file", "ram", "uring" };
	struct td d;

	for (int b = 0; b < 3; b++) {
		make_image((1u << 20) + 4000, 4);
		open_emu(&d, "%s,lba=4096,backend=%s", img_path, backends[b]);
		cr_assert_eq(gpuos_emu_ns_bytes(d.e), (1u << 20) + 4096, "%s", backends[b]);
		cr_assert_eq(td_bringup(&d, 1, 16), 0);
		uint8_t *buf = td_alloc(&d, 4096, 4096, NULL);
		cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 255, 1, buf), 0);
		cr_assert(!memcmp(buf, img + 255 * 4096, 4096));
		memset(buf, 0xee, 4096);
		cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 256, 1, buf), 0, "%s", backends[b]);
		cr_assert(!memcmp(buf, img + 256 * 4096, 4000), "%s: the file's last 4000 bytes", backends[b]);
		for (int i = 4000; i < 4096; i++)
			cr_assert_eq(buf[i], 0, "%s: byte %d past the file reads 0", backends[b], i);
		cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 257, 1, buf), 0x4080);
		td_close(&d);
	}
}

Test(emu_backend, missing_and_tiny_images)
{
	struct gpuos_emu_opts o;
	struct gpuos_emu *e = NULL;
	char err[256];

	for (int b = 0; b < 3; b++) {
		static const char *names[] = { "ram", "file", "uring" };
		char args[128];
		snprintf(args, sizeof(args), "/nonexistent/x.img,backend=%s", names[b]);
		cr_assert_eq(gpuos_emu_parse(args, &o, err, sizeof(err)), 0);
		cr_assert_eq(gpuos_emu_create(&o, NULL, &e, err, sizeof(err)), -ENOENT);
		cr_assert_str_eq(err, "emu: /nonexistent/x.img: No such file or directory");
		cr_assert_null(e);
	}
	/* smaller than one LBA: that LBA, its tail zeros (a GGUF given as the device) */
	for (int b = 0; b < 3; b++) {
		static const char *names[] = { "ram", "file", "uring" };
		char args[4200];
		make_image(100, 1);
		snprintf(args, sizeof(args), "%s,backend=%s", img_path, names[b]);
		cr_assert_eq(gpuos_emu_parse(args, &o, err, sizeof(err)), 0);
		cr_assert_eq(gpuos_emu_create(&o, NULL, &e, err, sizeof(err)), 0, "%s: %s", names[b], err);
		cr_assert_eq(gpuos_emu_ns_bytes(e), 512);
		cr_assert_eq(gpuos_emu_image_bytes(e), 100);
		gpuos_emu_destroy(e);
		e = NULL;
	}
	make_image(0, 1);
	cr_assert_eq(gpuos_emu_parse(img_path, &o, err, sizeof(err)), 0);
	cr_assert_eq(gpuos_emu_create(&o, NULL, &e, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "the image is empty"), "%s", err);
}

/* A stand-in for cudaMemcpy: "device memory" is host memory here, but the
 * controller may only reach it through this callback. */
static uint32_t dev_to, dev_from, dev_done;
static int fake_dev_copy(void *ctx, void *dst, const void *src, size_t len, int to_device)
{
	(void)ctx;
	memcpy(dst, src, len);
	__atomic_fetch_add(to_device ? &dev_to : &dev_from, 1, __ATOMIC_SEQ_CST);
	struct timespec ts = { 0, 5000000 };
	nanosleep(&ts, NULL);
	/* the CQE must not be visible before this */
	__atomic_fetch_add(&dev_done, 1, __ATOMIC_SEQ_CST);
	return 0;
}

Test(emu_backend, device_regions_through_dev_copy)
{
	struct td d;
	struct gpuos_emu_env env = { .dev_copy = fake_dev_copy };
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;

	make_image(4u << 20, 6);
	cr_assert_eq(td_open(&d, img_path, &env), 0, "%s", d.err);
	cr_assert_eq(td_bringup(&d, 1, 16), 0);
	uint8_t *vram = aligned_alloc(4096, 64 * 1024);
	memset(vram, 0, 64 * 1024);
	const uint64_t dev = 0x400000000ull;
	cr_assert_eq(gpuos_emu_map(d.e, dev, vram, 64 * 1024, GPUOS_EMU_REGION_DEVICE), 0);

	/* 16 KiB into device memory through PRP1 + a list (in host memory) */
	uint64_t p1, p2;
	td_prps(&d, dev, 16384, &p1, &p2);
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 64, 32, p1, p2);
	s.cid = 9;
	td_sq_push(&d, &d.q[1], &s);
	td_sq_ring(&d, &d.q[1]);
	cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, TD_TIMEOUT_MS, 1), 0);
	cr_assert_eq(stat_of(&c), 0);
	cr_assert_geq(__atomic_load_n(&dev_done, __ATOMIC_SEQ_CST), 1, "CQE only after dev_copy returned");
	cr_assert_geq(__atomic_load_n(&dev_to, __ATOMIC_SEQ_CST), 1);
	cr_assert(!memcmp(vram, img + 64 * 512, 16384));

	/* a write from device memory */
	td_pattern(vram + 32768, 8192, 77);
	td_rw_sqe(&s, GPUOS_NVME_CMD_WRITE, 1, 400, 16, dev + 32768, dev + 32768 + 4096);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	cr_assert_geq(__atomic_load_n(&dev_from, __ATOMIC_SEQ_CST), 1);
	uint8_t *host = td_alloc(&d, 8192, 4096, NULL);
	cr_assert_eq(td_rw(&d, 1, GPUOS_NVME_CMD_READ, 400, 16, host), 0);
	cr_assert(td_pattern_ok(host, 8192, 77));

	/* a PRP list may live in device memory too */
	uint64_t *dlist = (uint64_t *)(vram + 60 * 1024);
	dlist[0] = dev + 4096;
	dlist[1] = dev + 8192;
	memset(vram, 0, 12288);
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 24, dev, dev + 60 * 1024);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	cr_assert(!memcmp(vram, img, 12288));

	/* queues must be host memory: the controller's threads poll them */
	struct gpuos_nvme_sqe q;
	memset(&q, 0, sizeof(q));
	q.opc = GPUOS_NVME_ADMIN_CREATE_CQ;
	q.prp1 = dev;
	q.cdw10 = 7u << 16 | 2;
	q.cdw11 = GPUOS_NVME_CREATE_Q_PC;
	cr_assert_eq(td_admin(&d, &q, NULL), 0x4002);
	td_close(&d);
	free(vram);
}

Test(emu_backend, region_table)
{
	struct td d;
	static uint8_t mem[1 << 16];

	open_emu(&d, "null");
	cr_assert_eq(gpuos_emu_map(d.e, 0x1000, mem, 0, GPUOS_EMU_REGION_HOST), -EINVAL);
	cr_assert_eq(gpuos_emu_map(d.e, UINT64_MAX - 10, mem, 100, GPUOS_EMU_REGION_HOST), -EINVAL);
	cr_assert_eq(gpuos_emu_map(d.e, 0x1000, mem, 4096, GPUOS_EMU_REGION_DEVICE), -ENOTSUP,
		     "no dev_copy, no device regions");
	cr_assert_eq(gpuos_emu_map(d.e, TD_ARENA_IOVA, mem, 4096, GPUOS_EMU_REGION_HOST), -EEXIST);
	cr_assert_eq(gpuos_emu_map(d.e, TD_ARENA_IOVA - 100, mem, 4096, GPUOS_EMU_REGION_HOST), -EEXIST);
	cr_assert_eq(gpuos_emu_map(d.e, TD_ARENA_IOVA + TD_ARENA_BYTES - 1, mem, 4096,
				   GPUOS_EMU_REGION_HOST), -EEXIST);
	cr_assert_eq(gpuos_emu_map(d.e, TD_ARENA_IOVA + TD_ARENA_BYTES, mem, 4096,
				   GPUOS_EMU_REGION_HOST), 0, "adjacent is fine");
	cr_assert_eq(gpuos_emu_unmap(d.e, 0x1234), -ENOENT);
	cr_assert_eq(gpuos_emu_unmap(d.e, TD_ARENA_IOVA + TD_ARENA_BYTES), 0);
	/* fill the table: the arena holds one entry */
	int i;
	for (i = 0; i < GPUOS_EMU_MAX_REGIONS - 1; i++)
		cr_assert_eq(gpuos_emu_map(d.e, 0x100000000ull + (uint64_t)i * 64, mem + i * 64, 64,
					   GPUOS_EMU_REGION_HOST), 0, "region %d", i);
	cr_assert_eq(gpuos_emu_map(d.e, 0x900000000ull, mem, 64, GPUOS_EMU_REGION_HOST), -ENOSPC);
	cr_assert_eq(gpuos_emu_unmap(d.e, 0x100000000ull + 64), 0);
	cr_assert_eq(gpuos_emu_map(d.e, 0x900000000ull, mem, 64, GPUOS_EMU_REGION_HOST), 0);

	/* transfers may cross from one region into an adjacent one */
	cr_assert_eq(gpuos_emu_unmap(d.e, 0x100000000ull + 128), 0);
	cr_assert_eq(gpuos_emu_unmap(d.e, 0x100000000ull + 192), 0);
	cr_assert_eq(td_bringup(&d, 1, 8), 0);
	static uint8_t lo[8192] __attribute__((aligned(4096)));
	static uint8_t hi[8192] __attribute__((aligned(4096)));
	cr_assert_eq(gpuos_emu_map(d.e, 0xa00000000ull, lo, 6144, GPUOS_EMU_REGION_HOST), 0);
	cr_assert_eq(gpuos_emu_map(d.e, 0xa00001800ull, hi, 2048, GPUOS_EMU_REGION_HOST), 0);
	memset(hi, 0xaa, sizeof(hi));
	struct gpuos_nvme_sqe s;
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 16, 0xa00000000ull, 0xa00001000ull);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, NULL), 0);
	for (int k = 0; k < 2048; k++)
		cr_assert_eq(hi[k], 0, "null backend zeros reached the second region");
	td_close(&d);
}

/* ---- options --------------------------------------------------------------- */

Test(emu_opts, defaults)
{
	struct gpuos_emu_opts o;

	gpuos_emu_opts_default(&o);
	cr_assert_eq(o.size, sizeof(o));
	cr_assert_eq(o.backend, GPUOS_EMU_RAM);
	cr_assert_eq(o.null_bytes, 1ull << 40);
	cr_assert_eq(o.lba_bytes, 512);
	cr_assert_eq(o.mdts_kib, 512);
	cr_assert_eq(o.queues, 16);
	cr_assert_eq(o.depth, 1024);
	cr_assert_eq(o.dstrd, 0);
	cr_assert_eq(o.workers, 2);
	cr_assert_eq(o.to, 20);
	cr_assert_eq(o.rdy_ms, 1);
	cr_assert_str_eq(o.model, "gpuos emulated NVMe");
}

Test(emu_opts, parse_everything)
{
	struct gpuos_emu_opts o;
	char err[256];

	cr_assert_eq(gpuos_emu_parse("/img/a.raw,backend=uring,size=2G,lba=4096,mdts=128,queues=8,"
				     "depth=256,dstrd=1,workers=3,to=10,rdy_ms=5,never_ready=1,"
				     "enabled=0,latency_us=70,gbps=2.5,iops=1000,ooo=1,seed=42,"
				     "model=Fast Disk,serial=S1,"
				     "faults=lba:10-20:0x4281+lba:7+rate:0.25:6+lost:0.1+lost_every:9+cfs:100",
				     &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(o.path, "/img/a.raw");
	cr_assert_eq(o.backend, GPUOS_EMU_URING);
	cr_assert_eq(o.null_bytes, 2ull << 30);
	cr_assert_eq(o.lba_bytes, 4096);
	cr_assert_eq(o.mdts_kib, 128);
	cr_assert_eq(o.queues, 8);
	cr_assert_eq(o.depth, 256);
	cr_assert_eq(o.dstrd, 1);
	cr_assert_eq(o.workers, 3);
	cr_assert_eq(o.to, 10);
	cr_assert_eq(o.rdy_ms, 5);
	cr_assert_eq(o.never_ready, 1);
	cr_assert_eq(o.start_enabled, 0);
	cr_assert_eq(o.latency_us, 70);
	cr_assert_float_eq(o.gbps, 2.5, 1e-9);
	cr_assert_eq(o.iops, 1000);
	cr_assert_eq(o.ooo, 1);
	cr_assert_eq(o.seed, 42);
	cr_assert_str_eq(o.model, "Fast Disk");
	cr_assert_str_eq(o.serial, "S1");
	cr_assert_eq(o.n_lba_faults, 2);
	cr_assert_eq(o.lba_fault[0].start, 10);
	cr_assert_eq(o.lba_fault[0].end, 20);
	cr_assert_eq(o.lba_fault[0].status, 0x4281);
	cr_assert_eq(o.lba_fault[1].start, 7);
	cr_assert_eq(o.lba_fault[1].end, 7);
	cr_assert_eq(o.lba_fault[1].status, 0x281);
	cr_assert_float_eq(o.fault_rate, 0.25, 1e-9);
	cr_assert_eq(o.fault_rate_status, 0x6);
	cr_assert_float_eq(o.lost_rate, 0.1, 1e-9);
	cr_assert_eq(o.lost_every, 9);
	cr_assert_eq(o.cfs_after, 100);

	cr_assert_eq(gpuos_emu_parse("x.img,faults=dup:0.5+dupnow:0.25+duplate:0.125:7", &o, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_float_eq(o.dup_rate, 0.5, 1e-9);
	cr_assert_float_eq(o.dupnow_rate, 0.25, 1e-9);
	cr_assert_float_eq(o.duplate_rate, 0.125, 1e-9);
	cr_assert_eq(o.duplate_ms, 7);
	cr_assert_eq(gpuos_emu_parse("x.img,faults=duplate:1", &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(o.duplate_ms, 5, "a few ms by default");
}

Test(emu_opts, parse_null_and_worker_default)
{
	struct gpuos_emu_opts o;
	char err[256];

	cr_assert_eq(gpuos_emu_parse("null", &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(o.backend, GPUOS_EMU_NULL);
	cr_assert_str_eq(o.path, "");
	cr_assert_eq(o.null_bytes, 1ull << 40);
	cr_assert_eq(gpuos_emu_parse("null,size=64M,queues=1", &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(o.null_bytes, 64ull << 20);
	cr_assert_eq(o.workers, 1, "never more workers than queues");
	cr_assert_eq(gpuos_emu_parse("x.img,backend=null", &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(o.backend, GPUOS_EMU_NULL);
	cr_assert_eq(gpuos_emu_parse("x.img,enabled=1", &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(o.start_enabled, 1);
}

Test(emu_opts, numbers_are_decimal_or_hex_never_octal)
{
	struct gpuos_emu_opts o;
	char err[256];

	cr_assert_eq(gpuos_emu_parse("x.img,latency_us=010,size=010K", &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(o.latency_us, 10, "010 is ten, not eight");
	cr_assert_eq(o.null_bytes, 10ull << 10, "010K is ten KiB");
	cr_assert_eq(gpuos_emu_parse("x.img,latency_us=0x10", &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(o.latency_us, 16);
	cr_assert_neq(gpuos_emu_parse("x.img,latency_us=09x", &o, err, sizeof(err)), 0);
	cr_assert_neq(gpuos_emu_parse("x.img,latency_us=0b1", &o, err, sizeof(err)), 0);
}

Test(emu_opts, parse_errors_name_the_key)
{
	static const struct { const char *args, *key; } t[] = {
		{ "x.img,foo=1", "foo" },
		{ "x.img,lba=513", "lba" },
		{ "x.img,lba=", "lba" },
		{ "x.img,mdts=12", "mdts" },
		{ "x.img,mdts=4", "mdts" },
		{ "x.img,queues=0", "queues" },
		{ "x.img,queues=70000", "queues" },
		{ "x.img,depth=1", "depth" },
		{ "x.img,depth=65537", "depth" },
		{ "x.img,dstrd=16", "dstrd" },
		{ "x.img,queues=60000,dstrd=12", "dstrd" },
		{ "x.img,workers=0", "workers" },
		{ "x.img,to=0", "to" },
		{ "x.img,rdy_ms=-1", "rdy_ms" },
		{ "x.img,never_ready=2", "never_ready" },
		{ "x.img,enabled=yes please", "enabled" },
		{ "x.img,ooo=maybe", "ooo" },
		{ "x.img,gbps=fast", "gbps" },
		{ "x.img,gbps=-1", "gbps" },
		{ "x.img,iops=1k", "iops" },
		{ "x.img,latency_us=9999999999", "latency_us" },
		{ "x.img,seed=x", "seed" },
		{ "x.img,size=12Q", "size" },
		{ "x.img,size=0", "size" },
		{ "x.img,backend=tape", "backend" },
		{ "x.img,model=0123456789012345678901234567890123456789X", "model" },
		{ "x.img,serial=012345678901234567890", "serial" },
		{ "x.img,faults=bogus:1", "faults" },
		{ "x.img,faults=lba:20-10", "faults" },
		{ "x.img,faults=lba:5:0", "faults" },
		{ "x.img,faults=lba:5:zz", "faults" },
		{ "x.img,faults=rate:1.5", "faults" },
		{ "x.img,faults=lost:0.5:0x281", "faults" },
		{ "x.img,faults=lost_every:0", "faults" },
		{ "x.img,faults=cfs:0", "faults" },
		{ "x.img,faults=dupnow:2", "faults" },
		{ "x.img,faults=dupnow:0.1:3", "faults" },
		{ "x.img,faults=duplate:0.1:0", "faults" },
		{ "x.img,faults=duplate:0.1:x", "faults" },
		{ "x.img,faults=", "faults" },
		{ "x.img,noequals", "noequals" },
		{ "", "path" },
		{ "null,backend=file", "path" },
	};
	for (size_t i = 0; i < GPUOS_ARRAY_SIZE(t); i++) {
		struct gpuos_emu_opts o;
		char err[256] = "";
		cr_assert_eq(gpuos_emu_parse(t[i].args, &o, err, sizeof(err)), -EINVAL, "\"%s\" parsed",
			     t[i].args);
		cr_assert(strstr(err, t[i].key), "\"%s\": \"%s\" does not name %s", t[i].args, err, t[i].key);
		cr_assert(!strchr(err, '\n'), "one line");
	}
	/* 17 lba ranges */
	char many[1024] = "x.img,faults=lba:0";
	for (int i = 1; i < 17; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "+lba:%d", i);
	struct gpuos_emu_opts o;
	char err[256];
	cr_assert_eq(gpuos_emu_parse(many, &o, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "faults"));
}

Test(emu_opts, create_checks_a_hand_made_struct)
{
	struct gpuos_emu_opts o;
	struct gpuos_emu *e = NULL;
	char err[256];

	gpuos_emu_opts_default(&o);
	o.backend = GPUOS_EMU_NULL;
	o.size = 0;
	cr_assert_eq(gpuos_emu_create(&o, NULL, &e, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "size"), "%s", err);
	o.size = sizeof(o);
	o.lba_bytes = 1000;
	cr_assert_eq(gpuos_emu_create(&o, NULL, &e, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "lba"), "%s", err);
	o.lba_bytes = 512;
	o.workers = 8;          /* more workers than queues: fewer workers, not an error */
	o.queues = 2;
	cr_assert_eq(gpuos_emu_create(&o, NULL, &e, err, sizeof(err)), 0, "%s", err);
	gpuos_emu_destroy(e);
}

/* env.thread_init runs once in every I/O worker, and before gpuos_emu_create
 * returns (the GPU build creates each worker's copy stream there, before a
 * kernel spins: with the stream made on first use, a burst of GPU clients
 * left commands unfetched). */
static uint32_t inits_seen;
static void count_init(void *ctx)
{
	__atomic_add_fetch((uint32_t *)ctx, 1u, __ATOMIC_RELAXED);
}

Test(emu_opts, thread_init_runs_in_every_worker_before_create_returns)
{
	struct gpuos_emu_opts o;
	struct gpuos_emu_env env;
	struct gpuos_emu *e = NULL;
	char err[256];

	gpuos_emu_opts_default(&o);
	o.backend = GPUOS_EMU_NULL;
	o.queues = 8;
	o.workers = 5;
	memset(&env, 0, sizeof(env));
	env.ctx = &inits_seen;
	env.thread_init = count_init;
	inits_seen = 0;
	cr_assert_eq(gpuos_emu_create(&o, &env, &e, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(__atomic_load_n(&inits_seen, __ATOMIC_RELAXED), 5u);
	gpuos_emu_destroy(e);
}

/* ---- arrays (ssds=N, stripe=KiB) ----------------------------------------- */

static uint64_t xrand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The byte of the image that byte moff of member i of n holds (chunk k of
 * the image on member k % n, at member chunk k / n); 0 past the image. */
static uint8_t striped_byte(uint64_t moff, uint32_t i, uint32_t n, uint64_t stripe)
{
	uint64_t k = moff / stripe, x = (k * n + i) * stripe + moff % stripe;
	return x < img_len ? img[x] : 0;
}

static void array_case(uint32_t n, uint32_t stripe_kib, uint32_t lba, const char *backend, size_t bytes)
{
	char args[512];
	struct gpuos_emu_opts o;
	struct gpuos_emu *m[GPUOS_EMU_MAX_SSDS];
	struct td *d = calloc(n, sizeof(*d));
	char err[256];
	uint64_t stripe = (uint64_t)stripe_kib * 1024u, rng = n * 7919u + stripe_kib;

	make_image(bytes, n + stripe_kib);
	snprintf(args, sizeof(args), "%s,ssds=%u,stripe=%u,lba=%u,backend=%s", img_path, n, stripe_kib, lba, backend);
	cr_assert_eq(gpuos_emu_parse(args, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpuos_emu_create_array(&o, NULL, m, err, sizeof(err)), 0, "%s", err);
	uint64_t row = stripe * n, member = (bytes / row + (bytes % row != 0)) * stripe;
	for (uint32_t i = 0; i < n; i++) {
		cr_assert_eq(td_attach(&d[i], m[i], &o), 0, "%s", d[i].err);
		cr_assert_eq(gpuos_emu_ns_bytes(m[i]), member, "member %u: %llu bytes", i,
			     (unsigned long long)gpuos_emu_ns_bytes(m[i]));
		cr_assert_eq(td_bringup(&d[i], 1, 64), 0, "bring-up of member %u", i);
	}
	uint8_t *buf[GPUOS_EMU_MAX_SSDS];
	for (uint32_t i = 0; i < n; i++)
		buf[i] = td_alloc(&d[i], 256 * 1024, 4096, NULL);
	uint64_t nlba = member / lba;
	for (int it = 0; it < 300; it++) {
		uint32_t i = (uint32_t)(xrand(&rng) % n);
		uint32_t nlb = 1u + (uint32_t)(xrand(&rng) % ((256u * 1024u) / lba));
		/* half the ranges start just before a chunk boundary */
		uint64_t slba = xrand(&rng) % nlba;
		if (it & 1)
			slba = (slba * lba / stripe + 1) * stripe / lba - 1u - xrand(&rng) % 3u;
		if (slba >= nlba)
			slba = nlba - 1;
		if (nlb > nlba - slba)
			nlb = (uint32_t)(nlba - slba);
		memset(buf[i], 0xa5, (size_t)nlb * lba);
		cr_assert_eq(td_rw(&d[i], 1, GPUOS_NVME_CMD_READ, slba, nlb, buf[i]), 0, "read %u LBAs at %llu of member %u",
			     nlb, (unsigned long long)slba, i);
		for (size_t b = 0; b < (size_t)nlb * lba; b++)
			if (buf[i][b] != striped_byte(slba * lba + b, i, n, stripe))
				cr_assert_fail("%s ssds=%u stripe=%u lba=%u: member %u LBA %llu + byte %zu differs", backend, n,
					       stripe_kib, lba, i, (unsigned long long)slba, b);
	}
	/* the last LBA of every member: past the image it reads as zeros */
	for (uint32_t i = 0; i < n; i++) {
		cr_assert_eq(td_rw(&d[i], 1, GPUOS_NVME_CMD_READ, nlba - 1, 1, buf[i]), 0);
		for (size_t b = 0; b < lba; b++)
			cr_assert_eq(buf[i][b], striped_byte((nlba - 1) * lba + b, i, n, stripe));
		cr_assert_geq(stats(&d[i]).io_cmds, 1, "member %u served", i);
	}
	/* a write lands in the right chunk: read back through its member */
	if (strcmp(backend, "null")) {
		uint64_t slba = stripe / lba - 1;   /* crosses into member chunk 1 */
		td_pattern(buf[n - 1], 2u * lba, 5);
		cr_assert_eq(td_rw(&d[n - 1], 1, GPUOS_NVME_CMD_WRITE, slba, 2, buf[n - 1]), 0);
		memset(buf[n - 1], 0, 2u * lba);
		cr_assert_eq(td_rw(&d[n - 1], 1, GPUOS_NVME_CMD_READ, slba, 2, buf[n - 1]), 0);
		cr_assert(td_pattern_ok(buf[n - 1], 2u * lba, 5));
	}
	for (uint32_t i = 0; i < n; i++)
		td_close(&d[i]);
	free(d);
	cleanup();
}

Test(emu_array, striped_reads_across_chunk_boundaries)
{
	array_case(2, 4, 512, "ram", (3u << 20) + 1234);
	array_case(3, 8, 512, "ram", (2u << 20) + 4096 * 3);
	array_case(4, 128, 4096, "ram", 5u << 20);
	array_case(4, 4, 4096, "file", (1u << 20) + 8192);
	array_case(3, 12, 512, "uring", (2u << 20) + 512);
}

Test(emu_array, options_and_serials)
{
	struct gpuos_emu_opts o;
	struct gpuos_emu *m[GPUOS_EMU_MAX_SSDS];
	char err[256];

	cr_assert_eq(gpuos_emu_parse("null,ssds=17", &o, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "ssds"), "%s", err);
	cr_assert_eq(gpuos_emu_parse("null,ssds=2,stripe=6", &o, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "stripe"), "%s", err);
	cr_assert_eq(gpuos_emu_parse("null,ssds=2,stripe=4,lba=4096", &o, err, sizeof(err)), 0, "%s", err);
	struct gpuos_emu *one;
	cr_assert_eq(gpuos_emu_create(&o, NULL, &one, err, sizeof(err)), -EINVAL, "an array needs create_array");
	cr_assert_eq(gpuos_emu_parse("null,ssds=3,size=1G", &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpuos_emu_create_array(&o, NULL, m, err, sizeof(err)), 0, "%s", err);
	struct td d[3];
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(td_attach(&d[i], m[i], &o), 0);
		cr_assert_eq(td_bringup(&d[i], 1, 16), 0);
		struct gpuos_nvme_sqe s;
		uint8_t *id = td_alloc(&d[i], 4096, 4096, NULL);
		memset(&s, 0, sizeof(s));
		s.opc = GPUOS_NVME_ADMIN_IDENTIFY;
		s.prp1 = td_iova(&d[i], id);
		s.cdw10 = GPUOS_NVME_CNS_CONTROLLER;
		cr_assert_eq(td_admin(&d[i], &s, NULL), 0);
		char sn[21];
		memcpy(sn, id + 4, 20);
		sn[20] = 0;
		char want[8];
		snprintf(want, sizeof(want), "-%d", i);
		cr_assert(strstr(sn, want), "member %d serial '%s'", i, sn);
	}
	/* destroyed out of order: the shared backend goes with the last */
	td_close(&d[1]);
	td_close(&d[0]);
	td_close(&d[2]);
}

/* 200 reads on each of the first n members of d at once; ms until all
 * are back (the polls' limit a hang guard). */
static uint64_t members_round(struct td *d, uint8_t **buf, int n)
{
	struct gpuos_nvme_cqe c;
	uint64_t t0 = gpuos_now_ns();
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < 200; k++) {
			struct gpuos_nvme_sqe s;
			td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, (uint64_t)k, 1, td_iova(&d[i], buf[i] + k * 512), 0);
			s.cid = (uint16_t)k;
			td_sq_push(&d[i], &d[i].q[1], &s);
		}
		td_sq_ring(&d[i], &d[i].q[1]);
	}
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 200; k++)
			cr_assert_eq(td_cq_poll(&d[i], &d[i].q[1], &c, 60000, 1), 0);
	return ms_since(t0);
}

Test(emu_array, each_member_has_its_own_model)
{
	struct gpuos_emu_opts o;
	struct gpuos_emu *m[GPUOS_EMU_MAX_SSDS];
	char err[256];
	struct td d[2];

	cr_assert_eq(gpuos_emu_parse("null,ssds=2,iops=200,size=1G", &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpuos_emu_create_array(&o, NULL, m, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(td_attach(&d[i], m[i], &o), 0);
		cr_assert_eq(td_bringup(&d[i], 1, 256), 0);
	}
	/* 200 commands at 200 IOPS: 1 s on one member. On both members at
	 * once, 1 s again with a model each, 2 s on one shared timeline.
	 * Measured against one member alone in the same round (issue 35: no
	 * wall-clock bound; a busy machine adds to both): under 1.5 times it,
	 * in one of up to five rounds. Never faster than the model. */
	uint8_t *buf[2];
	uint64_t one = 0, both = 0;
	int met = 0;
	for (int i = 0; i < 2; i++)
		buf[i] = td_alloc(&d[i], 200 * 512, 4096, NULL);
	for (int round = 0; round < 5 && !met; round++) {
		one = members_round(d, buf, 1);
		both = members_round(d, buf, 2);
		cr_assert(one >= 900 && both >= 900, "200 commands at 200 IOPS in %llu ms, on both members in %llu ms: "
			  "faster than the model", (unsigned long long)one, (unsigned long long)both);
		met = both * 2 < one * 3;
	}
	cr_assert(met, "2 x 200 commands at 200 IOPS per member: %llu ms, one member alone %llu ms",
		  (unsigned long long)both, (unsigned long long)one);
	td_close(&d[0]);
	td_close(&d[1]);
}

/* ---- the performance model under load ------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Keep qd commands of nlb LBAs in flight until total are done; returns ns. */
static uint64_t drive(struct td *d, uint32_t qd, uint32_t nlb, uint32_t total)
{
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;
	uint8_t *buf = td_alloc(d, (size_t)qd * nlb * 512, 4096, NULL);
	uint32_t sent = 0, done = 0;
	uint64_t t0 = gpuos_now_ns();

	while (done < total) {
		while (sent < total && sent - done < qd) {
			uint32_t k = sent % qd;
			uint64_t p1, p2;
			td_prps(d, td_iova(d, buf + (size_t)k * nlb * 512), (size_t)nlb * 512, &p1, &p2);
			td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, (uint64_t)k * nlb, nlb, p1, p2);
			s.cid = (uint16_t)k;
			td_sq_push(d, &d->q[1], &s);
			sent++;
		}
		td_sq_ring(d, &d->q[1]);
		cr_assert_eq(td_cq_poll(d, &d->q[1], &c, TD_TIMEOUT_MS, 1), 0, "completion %u", done);
		cr_assert_eq(stat_of(&c), 0);
		done++;
	}
	return gpuos_now_ns() - t0;
}

/* A second controller on the same image beside d, without a model: what this
 * driver reaches at the same moments, the baseline of the rates below. */
static void unmodelled(struct td *u, const char *extra)
{
	open_emu(u, "%s%s%s", img_path, extra[0] ? "," : "", extra);
	cr_assert_eq(td_bringup(u, 1, 256), 0, "bring-up");
}

Test(emu_io, performance_model_holds_under_load)
{
	struct td d, u;

	/* The model is a limit: no run may beat it by more than 10 %. A busy
	 * machine (make test runs suites side by side on 2 cores) slows this
	 * driver thread down, so each round first drives the same commands
	 * through a controller without the model (u), and the modelled one must
	 * reach 75 % of the model or of that baseline, whichever is lower, in
	 * one of up to ten rounds. A fixed 75 % of the model alone failed where
	 * the driver itself could not go that fast (CI, three runs for 90 %
	 * while another suite installed beside it: 8943 IOPS); on the GPU
	 * machine, driven by the GPU: 6.999 of 7 GB/s. */
	double s, best = 0, base = 0, need = 0;
	int met = 0;
	/* iops: 3000 commands at 10000 IOPS with 64 in flight: 300 ms */
	up(&d, 1, 256, "iops=10000,backend=null");
	unmodelled(&u, "backend=null");
	for (int k = 0; k < 10 && !met; k++) {
		base = 3000 / ((double)drive(&u, 64, 1, 3000) / 1e9);
		s = (double)drive(&d, 64, 1, 3000) / 1e9;
		cr_assert(3000 / s < 11000, "iops=10000: %.0f IOPS, faster than the model", 3000 / s);
		best = GPUOS_MAX(best, 3000 / s);
		need = 0.75 * GPUOS_MIN(10000.0, base);
		met = 3000 / s > need;
	}
	cr_assert(met, "iops=10000: %.0f IOPS at best, under %.0f (the driver alone reached %.0f)", best, need, base);
	td_close(&u);
	td_close(&d);
	cleanup();
	/* gbps: 400 x 64 KiB at 0.1 GB/s: 262 ms */
	up(&d, 1, 256, "gbps=0.1");
	unmodelled(&u, "");
	best = 0;
	met = 0;
	for (int k = 0; k < 10 && !met; k++) {
		base = 400.0 * 65536 / ((double)drive(&u, 16, 128, 400) / 1e9) / 1e9;
		s = (double)drive(&d, 16, 128, 400) / 1e9;
		double gbps = 400.0 * 65536 / s / 1e9;
		cr_assert(gbps < 0.11, "gbps=0.1: %.4f GB/s, faster than the model", gbps);
		best = GPUOS_MAX(best, gbps);
		need = 0.75 * GPUOS_MIN(0.1, base);
		met = gbps > need;
	}
	cr_assert(met, "gbps=0.1: %.4f GB/s at best, under %.4f (the driver alone reached %.4f)", best, need, base);
	td_close(&u);
	td_close(&d);
	cleanup();
	/* latency: batches of 32 rung at once complete latency_us after the
	 * fetch, never earlier; later only by what this machine adds, which the
	 * same batches without the model show, round by round (15 batches of
	 * each, about 30 ms): the median modelled batch within 1 ms or twice
	 * the unmodelled median of 2 ms, whichever is more, in one of up to 10
	 * rounds (on 2 busy cores a round's median had reached 3.9 ms). */
	up(&d, 1, 256, "latency_us=2000,backend=null");
	unmodelled(&u, "backend=null");
	double ms[15], med = 1e9, bmed = 0;
	met = 0;
	for (int round = 0; round < 10 && !met; round++) {
		for (int k = 0; k < 15; k++)
			ms[k] = (double)drive(&u, 32, 1, 32) / 1e6;
		qsort(ms, 15, sizeof(ms[0]), cmp_double);
		bmed = ms[7];
		for (int k = 0; k < 15; k++)
			ms[k] = (double)drive(&d, 32, 1, 32) / 1e6;
		qsort(ms, 15, sizeof(ms[0]), cmp_double);
		cr_assert(ms[0] >= 1.99, "latency_us=2000: a batch completed after %.3f ms", ms[0]);
		med = GPUOS_MIN(med, ms[7]);
		met = ms[7] < 2.0 + GPUOS_MAX(1.0, 2 * bmed);
	}
	cr_assert(met, "latency_us=2000: the median batch took %.3f ms at best (without the model: %.3f ms)", med,
		  bmed);
	td_close(&u);
	td_close(&d);
}

/* ---- the DMA engine -------------------------------------------------------
 * A stand-in for the GPU's channel: transfers are recorded and happen only
 * when their ticket is polled 5 ms after it was marked, so a completion
 * posted before its data had landed would show the old bytes. */
static struct {
	struct { uint8_t *dst; const uint8_t *src; size_t len; uint64_t t; int gathered; } op[8192];
	uint32_t n;
	uint64_t marked, landed, fail_ticket;
	uint64_t mark_ns[1024];
	int registered, copies, gathers, zeros;
} fk;

static int fk_put(void *dst, const void *src, size_t len, int gathered)
{
	cr_assert_lt(fk.n, 8192u);
	fk.op[fk.n].dst = dst;
	fk.op[fk.n].src = src;
	fk.op[fk.n].len = len;
	fk.op[fk.n].t = 0;
	fk.op[fk.n].gathered = gathered;
	fk.n++;
	return 0;
}
static int fk_copy(void *ctx, void *dst, const void *src, size_t len) { (void)ctx; fk.copies++; return fk_put(dst, src, len, 0); }
static int fk_gather(void *ctx, void *dst, const void *src, size_t len) { (void)ctx; fk.gathers++; return fk_put(dst, src, len, 1); }
static int fk_zero(void *ctx, void *dst, size_t len) { (void)ctx; fk.zeros++; return fk_put(dst, NULL, len, 0); }
static int fk_mark(void *ctx, uint64_t *t)
{
	(void)ctx;
	*t = ++fk.marked;
	fk.mark_ns[*t % 1024] = gpuos_now_ns();
	for (uint32_t i = fk.n; i-- && !fk.op[i].t;)
		fk.op[i].t = fk.marked;
	return 0;
}
static int fk_poll(void *ctx, uint64_t t)
{
	(void)ctx;
	if (t <= fk.landed)
		return 1;
	if (gpuos_now_ns() < fk.mark_ns[t % 1024] + 5000000u)
		return 0;
	uint32_t j = 0;
	for (uint32_t i = 0; i < fk.n; i++) {
		if (fk.op[i].t && fk.op[i].t <= t) {
			if (fk.op[i].src)
				memcpy(fk.op[i].dst, fk.op[i].src, fk.op[i].len);
			else
				memset(fk.op[i].dst, 0, fk.op[i].len);
		} else {
			fk.op[j++] = fk.op[i];
		}
	}
	fk.n = j;
	fk.landed = t;
	return t == fk.fail_ticket ? -EIO : 1;
}
static int fk_register(void *ctx, void *p, size_t len) { (void)ctx; (void)p; (void)len; fk.registered++; return 0; }
static void fk_unregister(void *ctx, void *p) { (void)ctx; (void)p; fk.registered--; }
static void *fk_alloc(void *ctx, size_t len) { void *p = NULL; (void)ctx; return posix_memalign(&p, 4096, len) ? NULL : p; }
static void fk_free(void *ctx, void *p, size_t len) { (void)ctx; (void)len; free(p); }

/* 64 4 KiB reads and two 256 KiB reads into device memory with one doorbell. */
static void dma_case(const char *extra, int registered, int zeros)
{
	struct td d;
	struct gpuos_emu_env env = { .dev_copy = fake_dev_copy, .dma_copy = fk_copy, .dma_gather = fk_gather,
				     .dma_zero = fk_zero, .dma_mark = fk_mark, .dma_poll = fk_poll,
				     .pinned_alloc = fk_alloc, .pinned_free = fk_free };
	struct gpuos_nvme_sqe s;
	struct gpuos_nvme_cqe c;
	char args[512];

	memset(&fk, 0, sizeof(fk));
	if (registered) {
		env.host_register = fk_register;
		env.host_unregister = fk_unregister;
	}
	make_image(8u << 20, 21);
	snprintf(args, sizeof(args), "%s,workers=1%s", img_path, extra);
	cr_assert_eq(td_open(&d, args, &env), 0, "%s", d.err);
	cr_assert_eq(fk.registered, registered, "the ram image is registered once");
	cr_assert_eq(td_bringup(&d, 1, 256), 0);
	const size_t vlen = 64 * 4096 + 2 * 262144;
	uint8_t *vram = aligned_alloc(4096, vlen);
	memset(vram, 0xee, vlen);
	const uint64_t dev = 0x400000000ull;
	cr_assert_eq(gpuos_emu_map(d.e, dev, vram, vlen, GPUOS_EMU_REGION_DEVICE), 0);
	for (int i = 0; i < 66; i++) {
		uint64_t off = i < 64 ? (uint64_t)i * 4096 : 64 * 4096 + (uint64_t)(i - 64) * 262144;
		uint32_t nlb = i < 64 ? 8 : 512;
		uint64_t p1, p2;
		td_prps(&d, dev + off, (size_t)nlb * 512, &p1, &p2);
		td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, (uint64_t)(66 - i) * 200, nlb, p1, p2);
		s.cid = (uint16_t)i;
		td_sq_push(&d, &d.q[1], &s);
	}
	td_sq_ring(&d, &d.q[1]);
	for (int k = 0; k < 66; k++) {
		cr_assert_eq(td_cq_poll(&d, &d.q[1], &c, TD_TIMEOUT_MS, 1), 0, "completion %d", k);
		cr_assert_eq(stat_of(&c), 0);
		int i = c.cid;
		uint64_t off = i < 64 ? (uint64_t)i * 4096 : 64 * 4096 + (uint64_t)(i - 64) * 262144;
		size_t len = i < 64 ? 4096 : 262144;
		/* the CQE is here: the data must be too */
		for (size_t b = 0; b < len; b++)
			if (vram[off + b] != (zeros ? 0 : img[(size_t)(66 - i) * 200 * 512 + b]))
				cr_assert_fail("command %d: byte %zu not landed when its CQE came", i, b);
	}
	struct gpuos_emu_stats st = stats(&d);
	cr_assert_eq(st.dma_cmds, 66, "every read moved asynchronously: %llu", (unsigned long long)st.dma_cmds);
	cr_assert_lt(st.dma_batches, 66, "batched: %llu marks for 66 commands", (unsigned long long)st.dma_batches);
	if (!zeros) {
		cr_assert_geq(st.dma_gathered, 64, "4 KiB pieces are gathered");
		cr_assert_geq(st.dma_copies, 2, "256 KiB pieces are copies");
		cr_assert_eq(fk.gathers + fk.copies >= 66, 1);
	} else {
		cr_assert_geq(fk.zeros, 66);
	}
	cr_assert_eq(st.errors, 0);

	/* a transfer that fails fails its command, and the next one works */
	fk.fail_ticket = fk.marked + 1;
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 8, dev, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, &c), 0x0004, "a failed transfer is a data transfer error");
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 0, 8, dev, 0);
	cr_assert_eq(td_cmd(&d, &d.q[1], &s, &c), 0);
	cr_assert_eq(stat_of(&c), 0);
	cr_assert_eq(gpuos_emu_unmap(d.e, dev), 0);
	td_close(&d);
	cr_assert_eq(fk.registered, 0, "unregistered at close");
	free(vram);
	cleanup();
}

Test(emu_dma, ram_image_registered)
{
	dma_case("", 1, 0);
}

Test(emu_dma, ram_through_staging)
{
	dma_case("", 0, 0);
}

Test(emu_dma, file_and_uring_through_staging)
{
	dma_case(",backend=file", 0, 0);
	dma_case(",backend=uring,stage=1", 0, 0);
	dma_case(",backend=uring,direct=0", 0, 0); /* through the page cache */
}

Test(emu_dma, null_backend_zeros)
{
	dma_case(",backend=null,size=64M", 0, 1);
}

Test(emu_dma, striped_member_reads_into_device_memory)
{
	struct gpuos_emu_opts o;
	struct gpuos_emu *m[GPUOS_EMU_MAX_SSDS];
	struct gpuos_emu_env env = { .dev_copy = fake_dev_copy, .dma_copy = fk_copy, .dma_gather = fk_gather,
				     .dma_zero = fk_zero, .dma_mark = fk_mark, .dma_poll = fk_poll,
				     .host_register = fk_register, .host_unregister = fk_unregister,
				     .pinned_alloc = fk_alloc, .pinned_free = fk_free };
	char err[256], args[512];
	struct td d[2];

	memset(&fk, 0, sizeof(fk));
	make_image(4u << 20, 33);
	snprintf(args, sizeof(args), "%s,ssds=2,stripe=8,workers=1", img_path);
	cr_assert_eq(gpuos_emu_parse(args, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpuos_emu_create_array(&o, &env, m, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(fk.registered, 1, "one image, registered once");
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(td_attach(&d[i], m[i], &o), 0);
		cr_assert_eq(td_bringup(&d[i], 1, 16), 0);
	}
	uint8_t *vram = aligned_alloc(4096, 65536);
	const uint64_t dev = 0x400000000ull;
	cr_assert_eq(gpuos_emu_map(m[1], dev, vram, 65536, GPUOS_EMU_REGION_DEVICE), 0);
	/* 40 KiB of member 1 from member byte 4 KiB: member chunks 0..5 */
	struct gpuos_nvme_sqe s;
	uint64_t p1, p2;
	td_prps(&d[1], dev, 40960, &p1, &p2);
	td_rw_sqe(&s, GPUOS_NVME_CMD_READ, 1, 8, 80, p1, p2);
	cr_assert_eq(td_cmd(&d[1], &d[1].q[1], &s, NULL), 0);
	for (size_t b = 0; b < 40960; b++)
		cr_assert_eq(vram[b], striped_byte(4096 + b, 1, 2, 8192), "byte %zu", b);
	cr_assert_eq(gpuos_emu_unmap(m[1], dev), 0);
	td_close(&d[0]);
	td_close(&d[1]);
	cr_assert_eq(fk.registered, 0);
	free(vram);
}

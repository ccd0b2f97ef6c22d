/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_pci.c - the parts of the pci: controller that need no
 * device: device strings, refusals with their one-line reasons, the ops
 * table entry. The controller itself is tested against QEMU's NVMe device
 * (tests/qemu), where binding drivers cannot hurt anything.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../boot/ctrl/ctrl.h"
#include "../../boot/pci/pci_internal.h"

static void bdf_ok(const char *in, const char *want)
{
	char out[GPUOS_PCI_BDF_LEN];
	cr_assert_eq(gpuos_pci_parse_bdf(in, strlen(in), out), 0, "%s", in);
	cr_assert_str_eq(out, want, "%s", in);
}

static void bdf_bad(const char *in)
{
	char out[GPUOS_PCI_BDF_LEN];
	cr_assert_eq(gpuos_pci_parse_bdf(in, strlen(in), out), -EINVAL, "%s", in);
}

Test(pci, bdf_forms)
{
	bdf_ok("0000:00:04.0", "0000:00:04.0");
	bdf_ok("00:04.0", "0000:00:04.0");        /* domain 0 implied */
	bdf_ok("0000:AB:1f.7", "0000:ab:1f.7");   /* the kernel's spelling is lower case */
	bdf_ok("10000:01:00.0", "10000:01:00.0"); /* VMD domains have five digits */
	bdf_ok("1:2.3", "0000:01:02.3");
}

Test(pci, bdf_rejects)
{
	bdf_bad("");
	bdf_bad("zz");
	bdf_bad("0000:00:20.0");  /* device 0..0x1f */
	bdf_bad("0000:00:04.8");  /* function 0..7 */
	bdf_bad("0000:100:04.0"); /* bus 0..0xff */
	bdf_bad("0000:00:04.0 ");
	bdf_bad("+0:00:04.0");
	bdf_bad("0x0:00:04.0");
	bdf_bad("0000:00:04");
	bdf_bad("0000:00:04.0.1");
	bdf_bad("0000000000000000000000:00:04.0");
}

Test(pci, device_string_errors)
{
	struct gpuos_ctrl *c = (struct gpuos_ctrl *)1;
	char err[512];

	cr_assert_eq(gpuos_ctrl_open("pci:nonsense", NULL, 0, 0, &c, err, sizeof(err)), -EINVAL);
	cr_assert_null(c);
	cr_assert(strstr(err, "expected pci:DDDD:BB:DD.F[,mode=vfio|uio]"), "%s", err);
	cr_assert_eq(gpuos_ctrl_open("pci:0000:00:04.0,mode=dma", NULL, 0, 0, &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "unknown option 'mode=dma'"), "%s", err);
	cr_assert_eq(gpuos_ctrl_open("pci:ffff:ff:1f.7", NULL, 0, 0, &c, err, sizeof(err)), -ENODEV);
	cr_assert(strstr(err, "pci:ffff:ff:1f.7: no such PCI device"), "%s", err);
	cr_assert_null(strchr(err, '\n'), "one line");
}

Test(pci, checks_on_missing_device)
{
	char why[256], drv[64];
	cr_assert_eq(gpuos_pci_driver("ffff:ff:1f.7", drv, sizeof(drv)), -ENODEV);
	cr_assert_eq(gpuos_pci_check_free("ffff:ff:1f.7", why, sizeof(why)), -ENODEV);
	cr_assert(strstr(why, "no PCI device"), "%s", why);
}

Test(pci, ops_entry)
{
	extern const struct gpuos_ctrl_ops gpuos_ctrl_pci_ops;
	cr_assert_str_eq(gpuos_ctrl_pci_ops.prefix, "pci:");
	/* DMA memory comes from the controller (hugepages or pinnable pages). */
	cr_assert_not_null(gpuos_ctrl_pci_ops.alloc);
	cr_assert_not_null(gpuos_ctrl_pci_ops.free);
}

/* Device lists (docs/hardware.md): "pci:A+B+...[,stripe=KiB]", one kind only. */
Test(pci, device_list_errors)
{
	struct gpuos_ctrl *c = (struct gpuos_ctrl *)1;
	char err[512], dev[512];
	int i, o;

	cr_assert_eq(gpuos_ctrl_open("pci:0000:00:04.0+00:04.0", NULL, 0, 0, &c, err, sizeof(err)), -EINVAL);
	cr_assert_null(c);
	cr_assert(strstr(err, "0000:00:04.0 is listed twice"), "%s", err);
	cr_assert_eq(gpuos_ctrl_open("pci:0000:00:04.0+", NULL, 0, 0, &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "pci:A+B+..."), "%s", err);
	cr_assert_eq(gpuos_ctrl_open("pci:0000:00:04.0+zz,mode=vfio", NULL, 0, 0, &c, err, sizeof(err)), -EINVAL);
	cr_assert_eq(gpuos_ctrl_open("pci:0000:00:04.0+0000:00:05.0,stripe=6", NULL, 0, 0, &c, err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "stripe=6: the chunk size in KiB, a multiple of 4"), "%s", err);
	cr_assert_eq(gpuos_ctrl_open("pci:0000:00:04.0+0000:00:05.0,stripe=", NULL, 0, 0, &c, err, sizeof(err)),
		     -EINVAL);
	/* 17 controllers */
	o = snprintf(dev, sizeof(dev), "pci:0000:00:00.0");
	for (i = 1; i < 17; i++)
		o += snprintf(dev + o, sizeof(dev) - (size_t)o, "+0000:00:%02x.0", i);
	cr_assert_eq(gpuos_ctrl_open(dev, NULL, 0, 0, &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "at most 16 controllers"), "%s", err);
	/* mixed kinds, and lists of a kind that makes none */
	cr_assert_eq(gpuos_ctrl_open("pci:0000:00:04.0+emu:/tmp/x.img", NULL, 0, 0, &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "mixes pci: and emu: controllers"), "%s", err);
	cr_assert_eq(gpuos_ctrl_open("emu:/tmp/x.img+pci:0000:00:04.0", NULL, 0, 0, &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "mixes emu: and pci: controllers"), "%s", err);
	cr_assert_eq(gpuos_ctrl_open("pci:0000:00:04.0+null", NULL, 0, 0, &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "mixes pci: and null controllers"), "%s", err);
	cr_assert_eq(gpuos_ctrl_open("emu:/tmp/a.img+emu:/tmp/b.img", NULL, 0, 0, &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "emu:IMAGE,ssds=N"), "%s", err);
	cr_assert_null(strchr(err, '\n'), "one line");
	/* every device is looked at before any is taken: the second is missing */
	cr_assert_eq(gpuos_ctrl_open("pci:ffff:ff:1f.6+pci:ffff:ff:1f.7", NULL, 0, 0, &c, err, sizeof(err)), -ENODEV);
	cr_assert(strstr(err, "pci:ffff:ff:1f.6: no such PCI device"), "%s", err);
	cr_assert_null(c);
}

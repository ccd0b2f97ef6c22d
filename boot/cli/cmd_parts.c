/* SPDX-License-Identifier: MIT */
/*
 * gpuos parts [--json] --device DEV: the partitions of a device, as
 * `sgdisk -p` and `fdisk -l` list them. The runtime parses the partition
 * table (runtime/gpt.c, on the GPU or on CPU threads) and answers PARTS
 * (struct gpuos_parts); nothing here reads the disk or decodes the table.
 *
 * A device without a partition table is not an error: it is listed as
 * "no partition table", one volume (exit 0), and says whether it holds
 * ext2/3/4, as the file tools then read the whole device. A table that is
 * there but corrupt (a protective MBR or a GPT signature, neither GPT
 * header valid) fails with the parser's reasons (exit 1).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

/* Short names of well-known partition types: sgdisk's names (`sgdisk -L`,
 * the text after the GUID in `sgdisk -i`). */
static const struct { const char *guid, *name; } gpt_types[] = {
	{ "C12A7328-F81F-11D2-BA4B-00A0C93EC93B", "EFI system partition" },
	{ "21686148-6449-6E6F-744E-656564454649", "BIOS boot partition" },
	{ "0FC63DAF-8483-4772-8E79-3D69D8477DE4", "Linux filesystem" },
	{ "0657FD6D-A4AB-43C4-84E5-0933C84B4F4F", "Linux swap" },
	{ "E6D6D379-F507-44C2-A23C-238F2A3DF928", "Linux LVM" },
	{ "A19D880F-05FC-4D3B-A006-743F0F84911E", "Linux RAID" },
	{ "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709", "Linux x86-64 root (/)" },
	{ "B921B045-1DF0-41C3-AF44-4C6F280D3FAE", "Linux ARM64 root (/)" },
	{ "933AC7E1-2EB4-4F13-B844-0E14E2AEF915", "Linux /home" },
	{ "CA7D7CCB-63ED-4C53-861C-1742536059CC", "Linux LUKS" },
	{ "7FFEC5C9-2D00-49B7-8941-3EA10A5586B7", "Linux dm-crypt" },
	{ "BC13C2FF-59E6-4262-A352-B275FD6F7172", "XBOOTLDR partition" },
	{ "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7", "Microsoft basic data" },
	{ "E3C9E316-0B5C-4DB8-817D-F92DF00215AE", "Microsoft reserved" },
	{ "DE94BBA4-06D1-4D40-A16A-BFD50179D6AC", "Windows RE" },
	{ "48465300-0000-11AA-AA11-00306543ECAC", "Apple HFS/HFS+" },
	{ "7C3457EF-0000-11AA-AA11-00306543ECAC", "Apple APFS" },
	{ "516E7CB6-6ECF-11D6-8FF8-00022D09712B", "FreeBSD UFS" },
	{ "516E7CBA-6ECF-11D6-8FF8-00022D09712B", "FreeBSD ZFS" },
};

/* The same for MBR partition types: fdisk's names. */
static const struct { uint8_t type; const char *name; } mbr_types[] = {
	{ 0x05, "Extended" },        { 0x07, "HPFS/NTFS/exFAT" }, { 0x0b, "W95 FAT32" },
	{ 0x0c, "W95 FAT32 (LBA)" }, { 0x0f, "W95 Ext'd (LBA)" }, { 0x82, "Linux swap / Solaris" },
	{ 0x83, "Linux" },           { 0x8e, "Linux LVM" },       { 0xef, "EFI (FAT-12/16/32)" },
	{ 0xfd, "Linux raid autodetect" },
};

/* GPT attribute bits with a meaning for every type (UEFI 2.10 table 5-7). */
static const char *const gpt_attr_names[3] = { "required", "no_block_io", "legacy_bios_bootable" };

static const char *type_name(const struct gpuos_parts *t, const struct gpuos_part *p)
{
	size_t i;
	if (t->scheme == GPUOS_PARTS_MBR) {
		for (i = 0; i < sizeof(mbr_types) / sizeof(mbr_types[0]); i++)
			if (mbr_types[i].type == p->mbr_type)
				return mbr_types[i].name;
		return NULL;
	}
	for (i = 0; i < sizeof(gpt_types) / sizeof(gpt_types[0]); i++)
		if (!strcmp(gpt_types[i].guid, p->type_guid))
			return gpt_types[i].name;
	return NULL;
}

/* The names of the attribute bits set, into out ("required", "bit 60";
 * MBR: "active"). Returns how many. */
static unsigned attr_names(const struct gpuos_parts *t, uint64_t a, char out[64][24])
{
	unsigned n = 0, b;
	if (t->scheme == GPUOS_PARTS_MBR) {
		if (a & 0x80u)
			snprintf(out[n++], 24, "active");
		return n;
	}
	for (b = 0; b < 64; b++)
		if (a >> b & 1u) {
			if (b < 3)
				snprintf(out[n++], 24, "%s", gpt_attr_names[b]);
			else
				snprintf(out[n++], 24, "bit %u", b);
		}
	return n;
}

/* A string the runtime wrote into a field of cap bytes: "" unless it ends there. */
static const char *field(const char *s, size_t cap)
{
	return memchr(s, 0, cap) ? s : "";
}

/* One partition of the JSON's "partitions". */
static void json_part(struct json *j, const struct gpuos_parts *t, const struct gpuos_part *p)
{
	char names[64][24];
	const char *tn = type_name(t, p);
	unsigned k, na;
	int gpt = t->scheme == GPUOS_PARTS_GPT;

	json_obj(j, NULL);
	json_u64(j, "number", p->number);
	json_u64(j, "first_lba", p->first_lba);
	json_u64(j, "last_lba", p->last_lba);
	json_u64(j, "bytes", (p->last_lba - p->first_lba + 1) * t->lba_bytes);
	if (gpt) {
		json_str(j, "type_guid", field(p->type_guid, sizeof(p->type_guid)));
		json_null(j, "mbr_type");
		json_str(j, "unique_guid", field(p->unique_guid, sizeof(p->unique_guid)));
	} else {
		json_null(j, "type_guid");
		json_u64(j, "mbr_type", p->mbr_type);
		json_null(j, "unique_guid");
	}
	json_str_or_null(j, "type_name", tn);
	json_u64(j, "attributes", p->attributes);
	json_arr(j, "attribute_names");
	na = attr_names(t, p->attributes, names);
	for (k = 0; k < na; k++)
		json_str(j, NULL, names[k]);
	json_end(j);
	json_str(j, "name", field(p->name, sizeof(p->name)));
	json_bool(j, "ext4", p->fs == GPUOS_PART_FS_EXT);
	json_bool(j, "files", (p->flags & GPUOS_PART_F_FILES) != 0);
	json_end(j);
}

static void write_json(const struct cli *c, const struct gpuos_parts *t, const struct gpuos_part *parts)
{
	struct json j;
	uint32_t i;
	int gpt = t->scheme == GPUOS_PARTS_GPT;

	json_begin(&j, stdout, "parts");
	json_str_or_null(&j, "device", c->boot.device);
	json_str(&j, "scheme", gpt ? "gpt" : t->scheme == GPUOS_PARTS_MBR ? "mbr" : "none");
	json_u64(&j, "lba_bytes", t->lba_bytes);
	json_u64(&j, "disk_lbas", t->disk_lbas);
	json_u64(&j, "disk_bytes", t->disk_lbas * t->lba_bytes);
	if (gpt) {
		json_str(&j, "disk_guid", field(t->disk_guid, sizeof(t->disk_guid)));
		json_u64(&j, "entries", t->n_entries);
		json_u64(&j, "first_usable_lba", t->first_usable_lba);
		json_u64(&j, "last_usable_lba", t->last_usable_lba);
		json_u64(&j, "header_lba", t->header_lba);
		json_str(&j, "protective_mbr", (t->flags & GPUOS_PARTS_F_NO_PMBR) ? "missing"
					       : (t->flags & GPUOS_PARTS_F_HYBRID_MBR) ? "hybrid" : "protective");
	} else {
		json_null(&j, "disk_guid");
		json_null(&j, "entries");
		json_null(&j, "first_usable_lba");
		json_null(&j, "last_usable_lba");
		json_null(&j, "header_lba");
		json_null(&j, "protective_mbr");
	}
	json_bool(&j, "backup_used", (t->flags & GPUOS_PARTS_F_BACKUP_USED) != 0);
	json_bool(&j, "backup_bad", (t->flags & GPUOS_PARTS_F_BACKUP_BAD) != 0);
	if (t->flags & GPUOS_PARTS_F_BACKUP_USED)
		json_str(&j, "primary_problem", field(t->primary_why, sizeof(t->primary_why)));
	else
		json_null(&j, "primary_problem");
	if (t->flags & GPUOS_PARTS_F_BACKUP_BAD)
		json_str(&j, "backup_problem", field(t->backup_why, sizeof(t->backup_why)));
	else
		json_null(&j, "backup_problem");
	if (t->scheme == GPUOS_PARTS_NONE)
		json_bool(&j, "whole_device_ext4", t->whole_fs == GPUOS_PART_FS_EXT);
	else
		json_null(&j, "whole_device_ext4");
	json_u64(&j, "skipped", t->skipped);
	json_u64(&j, "unlisted", t->found > t->total ? t->found - t->total : 0);
	json_arr_lines(&j, "partitions");
	for (i = 0; i < t->total; i++)
		json_part(&j, t, &parts[i]);
	json_end(&j);
	json_finish(&j);
}

static void write_text(const struct cli *c, const struct gpuos_parts *t, const struct gpuos_part *parts)
{
	char h[32], names[64][24];
	uint64_t bytes = t->disk_lbas * t->lba_bytes;
	uint32_t i;
	unsigned k, na;
	int gpt = t->scheme == GPUOS_PARTS_GPT, star = 0;

	printf("Disk %s: %s, %" PRIu64 " bytes, %" PRIu64 " LBAs of %u bytes\n",
	       c->boot.device ? c->boot.device : c->socket, cli_human(h, sizeof(h), bytes), bytes, t->disk_lbas,
	       t->lba_bytes);
	if (t->scheme == GPUOS_PARTS_NONE) {
		printf("No partition table: the whole device is one volume (%s)\n",
		       t->whole_fs == GPUOS_PART_FS_EXT ? "it holds an ext2/3/4 file system"
							: "no ext2/3/4 file system on it");
		return;
	}
	if (gpt)
		printf("Partition table: GPT, disk GUID %s, %u entries, usable LBAs %" PRIu64 "-%" PRIu64
		       ", header at LBA %" PRIu64 "%s%s\n",
		       field(t->disk_guid, sizeof(t->disk_guid)), t->n_entries, t->first_usable_lba, t->last_usable_lba,
		       t->header_lba, (t->flags & GPUOS_PARTS_F_BACKUP_USED) ? " (the backup)" : "",
		       (t->flags & GPUOS_PARTS_F_NO_PMBR) ? ", no protective MBR"
		       : (t->flags & GPUOS_PARTS_F_HYBRID_MBR) ? ", hybrid MBR" : "");
	else
		printf("Partition table: MBR (primary partitions)\n");
	printf("\n%6s %12s %12s %14s %11s  %-8s  %-22s %s\n", "Number", "First LBA", "Last LBA", "Bytes", "Size",
	       "FS", "Type", "Name");
	for (i = 0; i < t->total; i++) {
		const struct gpuos_part *p = &parts[i];
		uint64_t pb = (p->last_lba - p->first_lba + 1) * t->lba_bytes;
		const char *tn = type_name(t, p), *name;
		char mt[48] = "";
		int files = (p->flags & GPUOS_PART_F_FILES) != 0;
		star |= files;
		if (!gpt)
			snprintf(mt, sizeof(mt), "0x%02x %s", p->mbr_type, tn ? tn : "");
		printf("%6u %12" PRIu64 " %12" PRIu64 " %14" PRIu64 " %11s  %-8s  %-22s ", p->number, p->first_lba,
		       p->last_lba, pb, cli_human(h, sizeof(h), pb),
		       p->fs == GPUOS_PART_FS_EXT ? (files ? "ext4 *" : "ext4") : (files ? "- *" : "-"),
		       gpt ? (tn ? tn : "unknown type") : mt);
		name = field(p->name, sizeof(p->name));
		cli_put_escaped(stdout, name, strlen(name)); /* a name from the disk: escaped as ls -b does */
		putchar('\n');
		na = attr_names(t, p->attributes, names);
		if (gpt)
			printf("%6s type %s, unique %s, attributes 0x%016" PRIx64, "",
			       field(p->type_guid, sizeof(p->type_guid)), field(p->unique_guid, sizeof(p->unique_guid)),
			       p->attributes);
		else if (na)
			printf("%6s boot indicator 0x%02" PRIx64, "", p->attributes);
		for (k = 0; k < na; k++)
			printf("%s%s", k ? ", " : " (", names[k]);
		if (na)
			putchar(')');
		if (gpt || na)
			putchar('\n');
	}
	if (star)
		printf("\n* the partition the file tools (ls, stat, cat, gguf) read without --part\n");
	if (t->found > t->total)
		printf("%u more partitions are not listed: the runtime keeps the first %u\n", t->found - t->total,
		       t->total);
	if (t->skipped)
		printf("%u used entries left out: their LBAs lie outside the usable range\n", t->skipped);
}

/* The table and its partitions into the heap's first cap bytes and
 * *parts (allocated; the caller frees it, also on failure), as many at a
 * time as the heap holds. 0, or -1 after one line on stderr. */
static int read_table(const struct cli *c, const struct client *cl, uint64_t cap, struct gpuos_part **parts)
{
	struct gpuos_parts *t = (struct gpuos_parts *)cl->heap;
	uint32_t got = 0, st;

	do {
		uint32_t room = (uint32_t)((cap - sizeof(*t)) / sizeof(struct gpuos_part)), i;
		struct gpuos_part *m;
		st = gpuos_part_table(cl->mb, (struct gpuos_parts *)(uintptr_t)cl->heap_rt, cap, got);
		if (st != GPUOS_ST_OK) {
			const char *why = field((const char *)t, cap < 256 ? cap : 256);
			char d[256];
			if (!why[0]) {
				describe_status(d, sizeof(d), st, 0);
				why = d;
			}
			cli_err("parts", "%s: %s", c->boot.device ? c->boot.device : c->socket, why);
			return -1;
		}
		if (t->first != got || t->n > room || t->n > t->total - GPUOS_MIN(got, t->total) ||
		    (t->n == 0 && got < t->total)) {
			cli_err("parts", "the runtime answered %u partitions from %u of %u, asked from %u", t->n, t->first,
				t->total, got);
			return -1;
		}
		m = realloc(*parts, ((size_t)got + t->n + 1) * sizeof(**parts));
		if (!m) {
			cli_err("parts", "out of memory");
			return -1;
		}
		*parts = m;
		for (i = 0; i < t->n; i++)
			m[got + i] = t->part[i];
		got += t->n;
	} while (got < t->total);
	return 0;
}

int cmd_parts(int argc, char **argv)
{
	struct cli c;
	struct client cl;
	struct gpuos_parts *t;
	struct gpuos_part *parts = NULL;
	char err[512];
	uint64_t cap;
	int rc = GPUOS_EXIT_OK;

	if (cli_parse(&c, "parts", argc, argv))
		return GPUOS_EXIT_USAGE;
	if (c.argc) {
		cli_err("parts", "takes no arguments: '%s' (gpuos parts --device DEV)", c.argv[0]);
		free(c.argv);
		return GPUOS_EXIT_USAGE;
	}
	if (!c.boot.device && !c.socket) {
		cli_err("parts", "give --device DEV (emu:IMAGE, null, pci:...) or --socket PATH");
		free(c.argv);
		return GPUOS_EXIT_USAGE;
	}
	if (client_open(&c, &cl, err, sizeof(err))) {
		cli_err("parts", "%s", err);
		free(c.argv);
		return GPUOS_EXIT_FAIL;
	}
	t = (struct gpuos_parts *)cl.heap;
	cap = cl.heap_len < (1u << 20) ? cl.heap_len : (1u << 20);
	if (cap < sizeof(*t) + sizeof(struct gpuos_part)) {
		cli_err("parts", "client memory of %llu bytes is too small", (unsigned long long)cl.heap_len);
		client_close(&cl, err, sizeof(err));
		free(c.argv);
		return GPUOS_EXIT_FAIL;
	}
	if (read_table(&c, &cl, cap, &parts))
		rc = GPUOS_EXIT_FAIL;
	if (!rc) {
		if (t->flags & GPUOS_PARTS_F_BACKUP_USED)
			cli_err("parts", "note: the primary GPT is corrupt (%s); the backup GPT was used",
				field(t->primary_why, sizeof(t->primary_why)));
		if (t->flags & GPUOS_PARTS_F_BACKUP_BAD)
			cli_err("parts", "note: the backup GPT is corrupt (%s); the primary is good",
				field(t->backup_why, sizeof(t->backup_why)));
		if (c.json)
			write_json(&c, t, parts);
		else
			write_text(&c, t, parts);
	}
	free(parts);
	if (client_close(&cl, err, sizeof(err)) && !rc) {
		cli_err("parts", "shutdown: %s", err);
		rc = GPUOS_EXIT_FAIL;
	}
	free(c.argv);
	return rc;
}

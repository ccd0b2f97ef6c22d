/* SPDX-License-Identifier: MIT */
/*
 * runtime/gpt.c - protective MBR, GPT primary/backup headers and entry
 * arrays, plain MBR (see gpt.h). Reads one sector for each header and the
 * entry array in GPUOS_GPT_BUF chunks; entries are taken into the caller's
 * table while the array's CRC is computed and dropped if it does not match.
 */
#include "gpt.h"
#include "crc.h"
#include "util.h"

#define HDR(f) offsetof(struct gpuos_gpt_header, f)
#define ENT(f) offsetof(struct gpuos_gpt_entry, f)

/* A header decoded and checked, before its entries are. */
struct hdr {
	uint64_t my_lba, alternate_lba, first_usable, last_usable, entries_lba;
	uint32_t num_entries, entry_size, entries_crc32;
	uint8_t disk_guid[16];
};

static GPUOS_HD int fail(struct gpuos_gpt_parser *p, int err, const char *why)
{
	if (!p->why)
		p->why = why;
	return err;
}

/* Read one sector (at most GPUOS_GPT_BUF bytes) into p->buf. */
static GPUOS_HD int rd_lba(struct gpuos_gpt_parser *p, uint64_t lba, uint32_t ss)
{
	int rc;

	p->err_lba = lba;
	rc = gpuos_meta_read(p->io, lba * ss, ss, p->buf);
	if (rc == -ERANGE)
		return -EINVAL;
	return rc ? (rc < 0 ? rc : -EIO) : 0;
}

/* ---- GUIDs ------------------------------------------------------------------------ */

GPUOS_HD int gpuos_gpt_guid_is_linux_fs(const uint8_t guid[16])
{
	const uint8_t linux_fs[16] = GPUOS_GPT_GUID_LINUX_FS;

	return !gpuos_mem_cmp(guid, linux_fs, 16);
}

/* Byte order of the text form: three little-endian fields, then 8 bytes. */
GPUOS_INLINE GPUOS_HD uint32_t guid_text_byte(uint32_t i)
{
	if (i < 4)
		return 3 - i;
	if (i < 6)
		return 9 - i;  /* 4,5 -> 5,4 */
	if (i < 8)
		return 13 - i; /* 6,7 -> 7,6 */
	return i;
}

GPUOS_HD void gpuos_gpt_guid_format(const uint8_t guid[16], char out[37])
{
	const char *hex = "0123456789ABCDEF";
	uint32_t i, o = 0;

	for (i = 0; i < 16; i++) {
		uint8_t b = guid[guid_text_byte(i)];

		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[b >> 4];
		out[o++] = hex[b & 15];
	}
	out[o] = 0;
}

GPUOS_INLINE GPUOS_HD int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

GPUOS_HD int gpuos_gpt_guid_parse(const char *s, uint8_t guid[16])
{
	uint32_t i, o = 0;

	for (i = 0; i < 16; i++) {
		int hi, lo;

		if (i == 4 || i == 6 || i == 8 || i == 10) {
			if (s[o] != '-')
				return -EINVAL;
			o++;
		}
		hi = hexval(s[o]);
		lo = hi < 0 ? -1 : hexval(s[o + 1]);
		if (lo < 0)
			return -EINVAL;
		guid[guid_text_byte(i)] = (uint8_t)(hi << 4 | lo);
		o += 2;
	}
	return s[o] ? -EINVAL : 0;
}

GPUOS_HD int gpuos_gpt_find_type(const struct gpuos_gpt *g, const uint8_t guid[16], uint32_t from)
{
	uint32_t i;

	for (i = from; i < g->n_parts; i++)
		if (!gpuos_mem_cmp(g->parts[i].type_guid, guid, 16))
			return (int)i;
	return -ENOENT;
}

/* The UTF-16LE name, once: to ASCII (printable ASCII kept, anything else one
 * '?', a surrogate pair counting as one character) and to UTF-8 (a lone
 * surrogate as U+FFFD). At most 3 bytes a unit: it fits GPUOS_GPT_NAME_UTF8. */
static GPUOS_HD void name_decode(const uint8_t *u16, char *ascii, char *utf8)
{
	uint32_t i, o = 0, u = 0;

	for (i = 0; i < GPUOS_GPT_NAME_UNITS; i++) {
		uint32_t c = gpuos_le16(u16 + 2 * i);

		if (!c)
			break;
		if (c >= 0xd800 && c <= 0xdbff && i + 1 < GPUOS_GPT_NAME_UNITS) {
			uint16_t d = gpuos_le16(u16 + 2 * (i + 1));

			if (d >= 0xdc00 && d <= 0xdfff) {
				c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
				i++;
			}
		}
		if (c >= 0xd800 && c <= 0xdfff)
			c = 0xfffd;
		ascii[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
		if (c < 0x80) {
			utf8[u++] = (char)c;
		} else if (c < 0x800) {
			utf8[u++] = (char)(0xc0 | c >> 6);
			utf8[u++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			utf8[u++] = (char)(0xe0 | c >> 12);
			utf8[u++] = (char)(0x80 | ((c >> 6) & 0x3f));
			utf8[u++] = (char)(0x80 | (c & 0x3f));
		} else {
			utf8[u++] = (char)(0xf0 | c >> 18);
			utf8[u++] = (char)(0x80 | ((c >> 12) & 0x3f));
			utf8[u++] = (char)(0x80 | ((c >> 6) & 0x3f));
			utf8[u++] = (char)(0x80 | (c & 0x3f));
		}
	}
	ascii[o] = 0;
	utf8[u] = 0;
}

/* ---- MBR ------------------------------------------------------------------------------ */

struct mbr_scan {
	int signature;  /* 0x55AA at 510 */
	int protective; /* a 0xEE record */
	int others;     /* non-empty records other than 0xEE */
	int sane;       /* every boot indicator is 0x00 or 0x80 (else it is no MBR:
			 * a boot sector's code, as Linux's msdos.c decides) */
};

static GPUOS_HD void mbr_scan(const uint8_t *s, struct mbr_scan *m)
{
	uint32_t i;

	m->signature = s[GPUOS_MBR_SIG_OFF] == 0x55 && s[GPUOS_MBR_SIG_OFF + 1] == 0xaa;
	m->protective = 0;
	m->others = 0;
	m->sane = 1;
	for (i = 0; i < 4; i++) {
		const uint8_t *r = s + GPUOS_MBR_PART_OFF + 16 * i;
		uint8_t type = r[offsetof(struct gpuos_mbr_part, os_type)];
		uint8_t boot = r[offsetof(struct gpuos_mbr_part, boot_indicator)];

		if (boot != 0 && boot != 0x80)
			m->sane = 0;
		if (!type)
			continue;
		if (type == GPUOS_MBR_OSTYPE_GPT)
			m->protective = 1;
		else
			m->others++;
	}
}

/* Count a used partition of LBAs [first, last] and give it the next slot of
 * g->parts, zeroed but for its range; NULL where the table is full (it is
 * still counted, so the caller can say -ENOSPC). */
static GPUOS_HD struct gpuos_gpt_part *take_part(struct gpuos_gpt *g, uint64_t first, uint64_t last)
{
	struct gpuos_gpt_part *pt;

	g->n_used++;
	if (g->n_parts >= g->part_cap)
		return NULL;
	pt = &g->parts[g->n_parts++];
	gpuos_mem_set(pt, 0, sizeof(*pt));
	pt->first_lba = first;
	pt->last_lba = last;
	return pt;
}

static GPUOS_HD int mbr_parts(struct gpuos_gpt *g, const uint8_t *s)
{
	uint32_t i;

	for (i = 0; i < 4; i++) {
		const uint8_t *r = s + GPUOS_MBR_PART_OFF + 16 * i;
		uint8_t type = r[offsetof(struct gpuos_mbr_part, os_type)];
		uint64_t start = gpuos_le32(r + offsetof(struct gpuos_mbr_part, starting_lba));
		uint64_t count = gpuos_le32(r + offsetof(struct gpuos_mbr_part, size_in_lba));
		struct gpuos_gpt_part *pt;

		if (!type)
			continue;
		if (!start || !count || start + count > g->disk_lbas) {
			g->n_skipped++;
			continue;
		}
		pt = take_part(g, start, start + count - 1);
		if (!pt)
			continue;
		pt->attributes = r[offsetof(struct gpuos_mbr_part, boot_indicator)];
		pt->index = i;
		pt->mbr_type = type;
	}
	return g->n_used > g->n_parts ? -ENOSPC : 0;
}

/* ---- GPT ---------------------------------------------------------------------------------- */

/* Check the header in p->buf, read from lba. Returns 0, -EINVAL with *why. */
static GPUOS_HD int check_header(const uint8_t *b, uint64_t lba, uint64_t lbas, uint32_t ss,
				 struct hdr *h, const char **why)
{
	const uint8_t zero[4] = {0, 0, 0, 0};
	uint32_t hs, crc;
	uint64_t bytes, nsec, ent_end;

	if (gpuos_le64(b + HDR(signature)) != GPUOS_GPT_SIGNATURE) {
		*why = "no GPT signature";
		return -EINVAL;
	}
	if (gpuos_le32(b + HDR(revision)) != GPUOS_GPT_REVISION) {
		*why = "unsupported GPT revision";
		return -EINVAL;
	}
	hs = gpuos_le32(b + HDR(header_size));
	if (hs < GPUOS_GPT_HEADER_MIN || hs > ss) {
		*why = "GPT header size out of bounds";
		return -EINVAL;
	}
	crc = gpuos_crc32(0, b, HDR(header_crc32));
	crc = gpuos_crc32(crc, zero, 4);
	crc = gpuos_crc32(crc, b + HDR(rsvd14), hs - HDR(rsvd14));
	if (crc != gpuos_le32(b + HDR(header_crc32))) {
		*why = "GPT header CRC mismatch";
		return -EINVAL;
	}
	h->my_lba = gpuos_le64(b + HDR(my_lba));
	h->alternate_lba = gpuos_le64(b + HDR(alternate_lba));
	h->first_usable = gpuos_le64(b + HDR(first_usable_lba));
	h->last_usable = gpuos_le64(b + HDR(last_usable_lba));
	h->entries_lba = gpuos_le64(b + HDR(entries_lba));
	h->num_entries = gpuos_le32(b + HDR(num_entries));
	h->entry_size = gpuos_le32(b + HDR(entry_size));
	h->entries_crc32 = gpuos_le32(b + HDR(entries_crc32));
	gpuos_mem_copy(h->disk_guid, b + HDR(disk_guid), 16);
	if (h->my_lba != lba) {
		*why = "GPT header's own LBA is not where it was read";
		return -EINVAL;
	}
	if (h->first_usable > h->last_usable || h->last_usable >= lbas || h->first_usable < 2 ||
	    (lba >= h->first_usable && lba <= h->last_usable)) {
		*why = "GPT usable LBA range out of bounds";
		return -EINVAL;
	}
	if (h->entry_size < GPUOS_GPT_ENTRY_MIN || h->entry_size > GPUOS_GPT_ENTRY_MAX ||
	    !gpuos_is_pow2_u64(h->entry_size)) {
		*why = "GPT entry size is not 128 * 2^n (at most 4096)";
		return -EINVAL;
	}
	bytes = (uint64_t)h->num_entries * h->entry_size;
	if (bytes > GPUOS_GPT_ARRAY_MAX) {
		*why = "GPT entry array larger than 1 MiB";
		return -EINVAL;
	}
	/* The array: inside the disk, past the MBR, clear of the usable range
	 * and of the header itself. */
	nsec = (bytes + ss - 1) / ss;
	if (h->entries_lba < 2 || h->entries_lba >= lbas || nsec > lbas - h->entries_lba) {
		*why = "GPT entry array outside the disk";
		return -EINVAL;
	}
	ent_end = h->entries_lba + nsec; /* exclusive */
	if ((nsec && h->entries_lba <= h->last_usable && ent_end > h->first_usable) ||
	    (lba >= h->entries_lba && lba < ent_end)) {
		*why = "GPT entry array overlaps the usable LBAs or the header";
		return -EINVAL;
	}
	return 0;
}

/* Read the entry array of h in chunks, CRC it, take the used entries into
 * g->parts. Returns 0, -EINVAL (*why) or -EIO. */
static GPUOS_HD int read_entries(struct gpuos_gpt *g, struct gpuos_gpt_parser *p, const struct hdr *h,
				 uint32_t ss, const char **why)
{
	uint64_t bytes = (uint64_t)h->num_entries * h->entry_size, done = 0;
	uint64_t base = h->entries_lba * ss;
	uint32_t crc = 0, idx = 0, i;
	int rc;

	g->n_parts = 0;
	g->n_used = 0;
	g->n_skipped = 0;
	while (done < bytes) {
		uint32_t n = bytes - done < GPUOS_GPT_BUF ? (uint32_t)(bytes - done) : GPUOS_GPT_BUF;

		p->err_lba = (base + done) / ss;
		rc = gpuos_meta_read(p->io, base + done, n, p->buf);
		if (rc)
			return rc == -ERANGE ? (*why = "GPT entry array past the end of the disk", -EINVAL)
					     : (rc < 0 ? rc : -EIO);
		crc = gpuos_crc32(crc, p->buf, n);
		/* entry_size divides GPUOS_GPT_BUF, so chunks hold whole entries */
		for (i = 0; i + h->entry_size <= n; i += h->entry_size, idx++) {
			const uint8_t *e = p->buf + i;
			struct gpuos_gpt_part *pt;
			uint64_t first, last;

			if (gpuos_mem_is_zero(e + ENT(type_guid), 16))
				continue;
			first = gpuos_le64(e + ENT(first_lba));
			last = gpuos_le64(e + ENT(last_lba));
			if (first > last || first < h->first_usable || last > h->last_usable) {
				g->n_skipped++;
				continue;
			}
			pt = take_part(g, first, last);
			if (!pt)
				continue;
			pt->attributes = gpuos_le64(e + ENT(attributes));
			gpuos_mem_copy(pt->type_guid, e + ENT(type_guid), 16);
			gpuos_mem_copy(pt->unique_guid, e + ENT(unique_guid), 16);
			pt->index = idx;
			name_decode(e + ENT(name), pt->name, pt->name_utf8);
		}
		done += n;
	}
	if (crc != h->entries_crc32) {
		g->n_parts = g->n_used = g->n_skipped = 0;
		*why = "GPT partition entry array CRC mismatch";
		return -EINVAL;
	}
	return 0;
}

/* Header at lba and its entries. 0, -EINVAL (*why, *sig says whether the
 * signature was there), -EIO. */
static GPUOS_HD int try_gpt(struct gpuos_gpt *g, struct gpuos_gpt_parser *p, uint64_t lba, uint32_t ss,
			    struct hdr *h, const char **why, int *sig)
{
	int rc;

	*sig = 0;
	if (lba >= g->disk_lbas) {
		*why = "GPT header LBA past the end of the disk";
		return -EINVAL;
	}
	if ((rc = rd_lba(p, lba, ss))) {
		if (rc == -EINVAL)
			*why = "GPT header past the end of the disk";
		return rc;
	}
	*sig = gpuos_le64(p->buf + HDR(signature)) == GPUOS_GPT_SIGNATURE;
	if ((rc = check_header(p->buf, lba, g->disk_lbas, ss, h, why)))
		return rc;
	return read_entries(g, p, h, ss, why);
}

/* The GPT header h, whose entries are in g, as the table's. */
static GPUOS_HD void take_header(struct gpuos_gpt *g, const struct hdr *h)
{
	g->scheme = GPUOS_PT_GPT;
	g->header_lba = h->my_lba;
	g->alternate_lba = h->alternate_lba;
	g->first_usable_lba = h->first_usable;
	g->last_usable_lba = h->last_usable;
	g->entries_lba = h->entries_lba;
	g->n_entries = h->num_entries;
	g->entry_size = h->entry_size;
	gpuos_mem_copy(g->disk_guid, h->disk_guid, 16);
	if (g->n_skipped)
		g->flags |= GPUOS_GPT_F_SKIPPED;
}

/* The backup header of the good primary h, read and checked against it:
 * g->backup_why and GPUOS_GPT_F_BACKUP_BAD say what is wrong with it.
 * Returns 0, or fail()'s error when its sector cannot be read. */
static GPUOS_HD int check_backup(struct gpuos_gpt *g, struct gpuos_gpt_parser *p, const struct hdr *h,
				 uint32_t ss)
{
	struct hdr b;
	const char *why = NULL;
	int rc;

	if (h->alternate_lba >= g->disk_lbas || h->alternate_lba == h->my_lba) {
		g->backup_why = "alternate LBA is not on the disk";
	} else if ((rc = rd_lba(p, h->alternate_lba, ss)) != 0) {
		return fail(p, rc, "device read error"); /* the LBA is on the disk */
	} else if (check_header(p->buf, h->alternate_lba, g->disk_lbas, ss, &b, &why)) {
		g->backup_why = why;
	} else if (b.entries_crc32 != h->entries_crc32 || b.num_entries != h->num_entries ||
		   b.entry_size != h->entry_size || b.alternate_lba != h->my_lba) {
		g->backup_why = "backup header does not match the primary";
	}
	if (g->backup_why)
		g->flags |= GPUOS_GPT_F_BACKUP_BAD;
	return 0;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_gpt_parse(struct gpuos_gpt *g, struct gpuos_gpt_parser *p,
			     const struct gpuos_meta_io *io, uint32_t sector_size)
{
	struct gpuos_gpt_part *parts = g->parts;
	uint32_t cap = g->part_cap;
	struct mbr_scan m;
	struct hdr h;
	const char *why1 = NULL, *why2 = NULL;
	uint64_t last;
	int rc, sig1, sig2;

	gpuos_mem_set(g, 0, sizeof(*g));
	g->parts = parts;
	g->part_cap = parts ? cap : 0;
	p->why = NULL;
	p->err_lba = 0;
	p->io = io;
	if (sector_size != 512 && sector_size != 4096)
		return fail(p, -EINVAL, "sector size must be 512 or 4096");
	g->sector_size = sector_size;
	g->disk_lbas = io->size / sector_size;
	if (g->disk_lbas < 2) {
		g->scheme = GPUOS_PT_NONE;
		return 0;
	}
	last = g->disk_lbas - 1;

	if ((rc = rd_lba(p, 0, sector_size)))
		return fail(p, rc, "cannot read sector 0");
	mbr_scan(p->buf, &m);
	if (m.signature && m.sane && !m.protective && m.others) {
		/* A plain MBR wins over any GPT left behind (as Linux decides).
		 * Extended partitions are listed as they are, not followed. */
		g->scheme = GPUOS_PT_MBR;
		rc = mbr_parts(g, p->buf);
		if (g->n_skipped)
			g->flags |= GPUOS_GPT_F_SKIPPED;
		return rc ? fail(p, rc, "more partitions than the caller's table holds") : 0;
	}
	if (!m.signature || !m.protective)
		g->flags |= GPUOS_GPT_F_NO_PMBR;
	else if (m.others)
		g->flags |= GPUOS_GPT_F_HYBRID_MBR;

	rc = try_gpt(g, p, 1, sector_size, &h, &why1, &sig1);
	if (rc == -EINVAL) {
		g->primary_why = why1;
		rc = try_gpt(g, p, last, sector_size, &h, &why2, &sig2);
		if (rc == -EINVAL) {
			g->backup_why = why2;
			if (!sig1 && !sig2 && (g->flags & GPUOS_GPT_F_NO_PMBR)) {
				g->primary_why = g->backup_why = NULL;
				g->flags = 0;
				g->scheme = GPUOS_PT_NONE;
				return 0;
			}
			if (!sig1 && !sig2)
				return fail(p, -EINVAL, "protective MBR but no GPT header");
			return fail(p, -EINVAL, "primary and backup GPT are both invalid");
		}
		if (!rc)
			g->flags |= GPUOS_GPT_F_BACKUP_USED;
	}
	if (rc)
		return fail(p, rc, "device read error");

	take_header(g, &h);

	/* The primary is good: look at the backup header too (one sector, no
	 * entries), so that tools can say it needs repair. */
	if (!(g->flags & GPUOS_GPT_F_BACKUP_USED) && (rc = check_backup(g, p, &h, sector_size)))
		return rc;
	if (g->n_used > g->n_parts)
		return fail(p, -ENOSPC, "more partitions than the caller's table holds");
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * runtime/fs/ext4/ext4_super.c - the ext4 parser's file system (ext4.h): the
 * superblock (gpuos_ext4_mount), group descriptors and inodes
 * (gpuos_ext4_iget), and the device read every part of the parser goes
 * through (ext4_internal.h).
 */
#include "ext4_internal.h"

/* ---- reads and checksums ------------------------------------------------------ */

GPUOS_HD int ext4_dev_read(struct gpuos_ext4 *fs, uint64_t off, uint32_t len, void *dst)
{
	int r = gpuos_meta_read(&fs->io, off, len, dst);

	if (r == 0)
		return 0;
	if (r == -ERANGE)
		return fail(fs, -EIO, "read past the end of the device", off);
	return fail(fs, r < 0 ? r : -EIO, "device read error", off);
}

/* crc16 (ANSI, reflected 0xA001), as the gdt_csum group descriptor checksum
 * uses it (lib/crc16.c); bitwise: no table, no globals. */
static GPUOS_HD uint16_t ext4_crc16(uint16_t crc, const uint8_t *p, uint32_t len)
{
	uint32_t i;
	int k;

	for (i = 0; i < len; i++) {
		crc = (uint16_t)(crc ^ p[i]);
		for (k = 0; k < 8; k++)
			crc = (uint16_t)((crc >> 1) ^ ((crc & 1u) ? 0xA001u : 0u));
	}
	return crc;
}

GPUOS_INLINE GPUOS_HD uint32_t ext4_csum_le32(uint32_t seed, uint32_t v)
{
	uint8_t b[4];

	gpuos_put_le32(b, v);
	return ext4_csum32(seed, b, 4);
}

/* ---- superblock ------------------------------------------------------------- */

GPUOS_HD const char *gpuos_ext4_incompat_name(uint32_t bit)
{
	switch (bit) {
	case GPUOS_EXT4_INCOMPAT_COMPRESSION: return "compression";
	case GPUOS_EXT4_INCOMPAT_FILETYPE: return "filetype";
	case GPUOS_EXT4_INCOMPAT_RECOVER: return "needs_recovery";
	case GPUOS_EXT4_INCOMPAT_JOURNAL_DEV: return "journal_dev";
	case GPUOS_EXT4_INCOMPAT_META_BG: return "meta_bg";
	case GPUOS_EXT4_INCOMPAT_EXTENTS: return "extents";
	case GPUOS_EXT4_INCOMPAT_64BIT: return "64bit";
	case GPUOS_EXT4_INCOMPAT_MMP: return "mmp";
	case GPUOS_EXT4_INCOMPAT_FLEX_BG: return "flex_bg";
	case GPUOS_EXT4_INCOMPAT_EA_INODE: return "ea_inode";
	case GPUOS_EXT4_INCOMPAT_DIRDATA: return "dirdata";
	case GPUOS_EXT4_INCOMPAT_CSUM_SEED: return "metadata_csum_seed";
	case GPUOS_EXT4_INCOMPAT_LARGEDIR: return "large_dir";
	case GPUOS_EXT4_INCOMPAT_INLINE_DATA: return "inline_data";
	case GPUOS_EXT4_INCOMPAT_ENCRYPT: return "encrypt";
	case GPUOS_EXT4_INCOMPAT_CASEFOLD: return "casefold";
	default: return NULL;
	}
}

/* The reason for refusing incompatible feature bit `bit`. */
static GPUOS_HD const char *incompat_why(uint32_t bit)
{
	switch (bit) {
	case GPUOS_EXT4_INCOMPAT_COMPRESSION:
		return "unsupported incompatible feature: compression";
	case GPUOS_EXT4_INCOMPAT_JOURNAL_DEV:
		return "unsupported incompatible feature: journal_dev (an external journal, not a file system)";
	case GPUOS_EXT4_INCOMPAT_DIRDATA:
		return "unsupported incompatible feature: dirdata";
	default:
		return "unsupported incompatible feature: unknown bit (see fs->bad)";
	}
}

GPUOS_INLINE GPUOS_HD int ext4_is_power_of(uint32_t g, uint32_t base)
{
	uint64_t p = base;
	int i;

	/* 3^21 > 2^32: the loop ends long before the bound */
	for (i = 0; i < 32 && p < g; i++)
		p *= base;
	return p == g;
}

/* Whether group g holds a superblock backup (ext4_bg_has_super()). */
static GPUOS_HD int group_has_super(const struct gpuos_ext4 *fs, uint32_t g)
{
	if (g == 0)
		return 1;
	if (fs->feature_compat & GPUOS_EXT4_COMPAT_SPARSE_SUPER2)
		return g == fs->backup_bgs[0] || g == fs->backup_bgs[1];
	if (g <= 1 || !(fs->feature_ro_compat & GPUOS_EXT4_RO_COMPAT_SPARSE_SUPER))
		return 1;
	if (!(g & 1u))
		return 0;
	return ext4_is_power_of(g, 3) || ext4_is_power_of(g, 5) || ext4_is_power_of(g, 7);
}

/* The superblock's checksum under metadata_csum (only crc32c) and the seed
 * of every other checksum; or gdt_csum's 16-bit group checksums. */
static GPUOS_HD int mount_csum(struct gpuos_ext4 *fs, const uint8_t *sb)
{
	if (fs->feature_ro_compat & GPUOS_EXT4_RO_COMPAT_METADATA_CSUM) {
		if (LD8(sb, struct ext4_sb, s_checksum_type) != 1)
			return fail(fs, -EOPNOTSUPP,
				    "unsupported metadata checksum type (only crc32c)",
				    LD8(sb, struct ext4_sb, s_checksum_type));
		if (ext4_csum32(~0u, sb, offsetof(struct ext4_sb, s_checksum)) !=
		    SB32(sb, s_checksum))
			return fail(fs, -EINVAL, "corrupt superblock: bad checksum",
				    SB32(sb, s_checksum));
		fs->has_csum = 1;
		if (fs->feature_incompat & GPUOS_EXT4_INCOMPAT_CSUM_SEED)
			fs->csum_seed = SB32(sb, s_checksum_seed);
		else
			fs->csum_seed = ext4_csum32(~0u, FIELD_AT(sb, struct ext4_sb, s_uuid), 16);
	} else if (fs->feature_ro_compat & GPUOS_EXT4_RO_COMPAT_GDT_CSUM) {
		fs->has_gdt_csum = 1;
	}
	return 0;
}

/* Refuse the incompatible features that change the format in ways not read
 * here (needs_recovery too, unless flags say to read it as it is). */
static GPUOS_HD int mount_features(struct gpuos_ext4 *fs, uint32_t flags)
{
	uint32_t unsupported, bit;

	unsupported = fs->feature_incompat & ~(uint32_t)GPUOS_EXT4_INCOMPAT_SUPPORTED;
	if (flags & GPUOS_EXT4_MOUNT_NORECOVERY)
		unsupported &= ~GPUOS_EXT4_INCOMPAT_RECOVER;
	if (unsupported & GPUOS_EXT4_INCOMPAT_RECOVER)
		return fail(fs, -EOPNOTSUPP,
			    "unsupported incompatible feature: needs_recovery (the journal was not "
			    "replayed; GPUOS_EXT4_MOUNT_NORECOVERY reads it as it is)",
			    GPUOS_EXT4_INCOMPAT_RECOVER);
	if (unsupported) {
		bit = unsupported & (0u - unsupported); /* lowest one */
		return fail(fs, -EOPNOTSUPP, incompat_why(bit), bit);
	}
	return 0;
}

/* The geometry the superblock gives: block and cluster size (*bs), counts,
 * names, inode and group descriptor sizes, each size checked. */
static GPUOS_HD int mount_geometry(struct gpuos_ext4 *fs, const uint8_t *sb, uint32_t *bs_out)
{
	uint32_t log_bs, log_cs, bs, incompat = fs->feature_incompat;

	log_bs = SB32(sb, s_log_block_size);
	if (log_bs > 6)
		return fail(fs, -EINVAL, "corrupt superblock: block size over 64 KiB", log_bs);
	bs = 1024u << log_bs;
	log_cs = log_bs;
	if (fs->feature_ro_compat & GPUOS_EXT4_RO_COMPAT_BIGALLOC) {
		log_cs = SB32(sb, s_log_cluster_size);
		if (log_cs < log_bs || log_cs > 16 + log_bs)
			return fail(fs, -EINVAL, "corrupt superblock: bad cluster size", log_cs);
	}
	fs->cluster_bits = 10 + log_cs;
	fs->block_bits = 10 + log_bs;

	fs->blocks_count = SB32(sb, s_blocks_count_lo);
	if (incompat & GPUOS_EXT4_INCOMPAT_64BIT)
		fs->blocks_count |= (uint64_t)SB32(sb, s_blocks_count_hi) << 32;
	fs->first_data_block = SB32(sb, s_first_data_block);
	fs->blocks_per_group = SB32(sb, s_blocks_per_group);
	fs->inodes_per_group = SB32(sb, s_inodes_per_group);
	fs->inodes_count = SB32(sb, s_inodes_count);
	fs->first_meta_bg = SB32(sb, s_first_meta_bg);
	fs->backup_bgs[0] = gpuos_le32(FIELD_AT(sb, struct ext4_sb, s_backup_bgs));
	fs->backup_bgs[1] = gpuos_le32(FIELD_AT(sb, struct ext4_sb, s_backup_bgs) + 4);
	gpuos_mem_copy(fs->uuid, FIELD_AT(sb, struct ext4_sb, s_uuid), 16);
	gpuos_mem_copy(fs->volume_name, FIELD_AT(sb, struct ext4_sb, s_volume_name), 16);
	fs->volume_name[16] = '\0';

	if (fs->rev_level == 0) {
		fs->inode_size = EXT4_GOOD_OLD_INODE_SIZE;
		fs->first_ino = EXT4_GOOD_OLD_FIRST_INO;
	} else {
		fs->inode_size = SB16(sb, s_inode_size);
		fs->first_ino = SB32(sb, s_first_ino);
	}
	if (fs->inode_size < EXT4_GOOD_OLD_INODE_SIZE || fs->inode_size > bs ||
	    (fs->inode_size & (fs->inode_size - 1u)))
		return fail(fs, -EINVAL, "corrupt superblock: bad inode size", fs->inode_size);
	if (fs->first_ino < EXT4_GOOD_OLD_FIRST_INO)
		return fail(fs, -EINVAL, "corrupt superblock: bad first inode", fs->first_ino);

	if (incompat & GPUOS_EXT4_INCOMPAT_64BIT) {
		fs->desc_size = SB16(sb, s_desc_size);
		if (fs->desc_size < EXT4_DESC_MIN_64 || fs->desc_size > EXT4_DESC_MAX ||
		    (fs->desc_size & (fs->desc_size - 1u)) || fs->desc_size > bs)
			return fail(fs, -EINVAL, "corrupt superblock: bad group descriptor size",
				    fs->desc_size);
	} else {
		fs->desc_size = EXT4_DESC_MIN;
	}
	*bs_out = bs;
	return 0;
}

/* The groups (block size bs): per-group counts, the first data block, the
 * whole file system inside io, the inode count against the groups, meta_bg
 * and the first inode; sets group_count. */
static GPUOS_HD int mount_groups(struct gpuos_ext4 *fs, const struct gpuos_meta_io *io, uint32_t bs)
{
	uint32_t ipb;
	uint64_t groups, gdt_blocks, per_block;

	if (fs->blocks_per_group == 0 ||
	    (!(fs->feature_ro_compat & GPUOS_EXT4_RO_COMPAT_BIGALLOC) &&
	     fs->blocks_per_group > 8u * bs))
		return fail(fs, -EINVAL, "corrupt superblock: bad blocks per group",
			    fs->blocks_per_group);
	ipb = bs / fs->inode_size;
	if (fs->inodes_per_group < ipb || fs->inodes_per_group > 8u * bs)
		return fail(fs, -EINVAL, "corrupt superblock: bad inodes per group",
			    fs->inodes_per_group);
	if (fs->first_data_block > 1 || fs->first_data_block >= fs->blocks_count ||
	    (bs > 1024 && fs->first_data_block != 0))
		return fail(fs, -EINVAL, "corrupt superblock: bad first data block",
			    fs->first_data_block);
	/* the whole file system must be readable through io */
	if (fs->blocks_count > (io->size >> fs->block_bits))
		return fail(fs, -EINVAL,
			    "corrupt superblock: block count beyond the end of the device",
			    fs->blocks_count);
	groups = (fs->blocks_count - fs->first_data_block + fs->blocks_per_group - 1) /
		 fs->blocks_per_group;
	if (groups == 0 || groups > UINT32_MAX ||
	    (uint64_t)fs->inodes_count != groups * fs->inodes_per_group)
		return fail(fs, -EINVAL, "corrupt superblock: inode count does not match the groups",
			    fs->inodes_count);
	fs->group_count = (uint32_t)groups;
	per_block = bs / fs->desc_size;
	gdt_blocks = (groups + per_block - 1) / per_block;
	if ((fs->feature_incompat & GPUOS_EXT4_INCOMPAT_META_BG) && fs->first_meta_bg > gdt_blocks)
		return fail(fs, -EINVAL, "corrupt superblock: first meta_bg past the descriptors",
			    fs->first_meta_bg);
	if (fs->first_ino > fs->inodes_count)
		return fail(fs, -EINVAL, "corrupt superblock: first inode past the inode count",
			    fs->first_ino);
	return 0;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_ext4_mount(struct gpuos_ext4 *fs, const struct gpuos_meta_io *io,
			      uint32_t flags)
{
	const uint8_t *sb;
	uint32_t bs = 0;
	struct gpuos_ext4_inode *root = &fs->lookup_cur;
	int r;

	begin(fs);
	fs->io = *io;
	fs->cache_valid = 0;
	fs->mount_flags = flags;
	fs->has_csum = 0;
	fs->has_gdt_csum = 0;
	/* read_block() and friends refuse everything until the geometry is set */
	fs->blocks_count = 0;
	fs->block_size = 0;

	sb = scratch(fs);
	r = ext4_dev_read(fs, GPUOS_EXT4_SUPER_OFFSET, sizeof(struct ext4_sb), scratch(fs));
	if (r)
		return r;
	if (SB16(sb, s_magic) != GPUOS_EXT4_MAGIC)
		return fail(fs, -EINVAL, "corrupt superblock: bad magic (not ext2/3/4)",
			    SB16(sb, s_magic));

	fs->feature_compat = SB32(sb, s_feature_compat);
	fs->feature_incompat = SB32(sb, s_feature_incompat);
	fs->feature_ro_compat = SB32(sb, s_feature_ro_compat);
	fs->rev_level = SB32(sb, s_rev_level);
	fs->creator_os = SB32(sb, s_creator_os);

	/* metadata_csum first: a checksum mismatch says more than whatever field
	 * the corruption hit */
	r = mount_csum(fs, sb);
	if (!r)
		r = mount_features(fs, flags);
	if (!r)
		r = mount_geometry(fs, sb, &bs);
	if (!r)
		r = mount_groups(fs, io, bs);
	if (r)
		return r;

	fs->block_size = bs;

	r = gpuos_ext4_iget(fs, GPUOS_EXT4_ROOT_INO, root);
	if (r == -ENOENT)
		r = fail(fs, -EINVAL, "corrupt: root inode not in use", GPUOS_EXT4_ROOT_INO);
	else if (r == 0 && root->type != GPUOS_EXT4_FT_DIR)
		r = fail(fs, -EINVAL, "corrupt: root inode is not a directory", root->mode);
	if (r) {
		fs->block_size = 0; /* not mounted: the other calls refuse */
		return r;
	}
	begin(fs);
	return 0;
}

/* ---- group descriptors and inodes --------------------------------------------- */

/* Byte offset of group g's descriptor (ext4's descriptor_loc()). */
static GPUOS_HD uint64_t desc_offset(const struct gpuos_ext4 *fs, uint32_t g)
{
	uint32_t per = fs->block_size / fs->desc_size;
	uint32_t nr = g / per;   /* descriptor block index */
	uint64_t blk;

	if ((fs->feature_incompat & GPUOS_EXT4_INCOMPAT_META_BG) && nr >= fs->first_meta_bg) {
		/* meta_bg: the descriptor block of meta group nr sits in its first
		 * group, after the superblock backup if that group has one */
		uint32_t first = nr * per;

		blk = (uint64_t)first * fs->blocks_per_group + fs->first_data_block +
		      (uint64_t)group_has_super(fs, first);
		if (fs->block_size == 1024 && nr == 0 && fs->first_data_block == 0)
			blk++;
	} else {
		/* right after the superblock's block */
		blk = (fs->block_size == 1024 ? 1u : 0u) + (uint64_t)nr + 1u;
	}
	return (blk << fs->block_bits) + (uint64_t)(g % per) * fs->desc_size;
}

struct ext4_group_info {
	uint64_t inode_table;
	uint32_t flags;
	uint32_t itable_unused;
};

static GPUOS_HD int read_group(struct gpuos_ext4 *fs, uint32_t g, struct ext4_group_info *gi)
{
	uint8_t *d = scratch(fs);
	uint32_t dsz = fs->desc_size;
	uint64_t off = desc_offset(fs, g);
	uint8_t le_g[4];
	int r;

	if (off + dsz > (fs->blocks_count << fs->block_bits) ||
	    (off >> fs->block_bits) <= fs->first_data_block)
		return fail(fs, -EINVAL, "corrupt: group descriptor outside the file system", g);
	r = ext4_dev_read(fs, off, dsz, d);
	if (r)
		return r;

	gpuos_put_le32(le_g, g);
	if (fs->has_csum) {
		uint32_t c;
		uint8_t zero[2] = {0, 0};

		c = ext4_csum32(fs->csum_seed, le_g, 4);
		c = ext4_csum32(c, d, offsetof(struct ext4_gd, bg_checksum));
		c = ext4_csum32(c, zero, 2);
		if (dsz > 0x20)
			c = ext4_csum32(c, d + 0x20, dsz - 0x20);
		if ((c & 0xFFFFu) != GD16(d, bg_checksum))
			return fail(fs, -EINVAL, "corrupt group descriptor: bad checksum", g);
	} else if (fs->has_gdt_csum) {
		uint16_t c;

		c = ext4_crc16(0xFFFFu, fs->uuid, 16);
		c = ext4_crc16(c, le_g, 4);
		c = ext4_crc16(c, d, offsetof(struct ext4_gd, bg_checksum));
		if (dsz > 0x20)
			c = ext4_crc16(c, d + 0x20, dsz - 0x20);
		if (c != GD16(d, bg_checksum))
			return fail(fs, -EINVAL, "corrupt group descriptor: bad checksum (gdt_csum)", g);
	}

	gi->inode_table = GD32(d, bg_inode_table_lo);
	gi->flags = GD16(d, bg_flags);
	gi->itable_unused = GD16(d, bg_itable_unused_lo);
	if (dsz >= EXT4_DESC_MIN_64) {
		gi->inode_table |= (uint64_t)GD32(d, bg_inode_table_hi) << 32;
		gi->itable_unused |= (uint32_t)GD16(d, bg_itable_unused_hi) << 16;
	}
	return 0;
}

/* Seconds and nanoseconds of a timestamp with an optional _extra word
 * (bits 1:0 extend the seconds past 2038, bits 31:2 are nanoseconds). */
static GPUOS_HD void ext4_decode_time(const uint8_t *raw, uint32_t sec_off, uint32_t extra_off,
				 uint32_t have, int64_t *sec, uint32_t *ns)
{
	uint32_t e;

	*sec = (int32_t)gpuos_le32(raw + sec_off);
	*ns = 0;
	if (extra_off + 4 > have)
		return;
	e = gpuos_le32(raw + extra_off);
	*sec += (int64_t)(e & 3u) << 32;
	*ns = e >> 2;
}

/* Find system.data in the in-inode xattrs of raw (isz bytes), held to the
 * rules of the kernel's check of in-inode xattrs (xattr_check_inode()):
 * the entries end with a zero word inside the inode, and a value lies
 * past that word and, padded to 4 bytes, inside the inode. */
static GPUOS_HD int find_inline_xattr(struct gpuos_ext4 *fs, const uint8_t *raw, uint32_t isz,
				      uint32_t ino, struct gpuos_ext4_inode *out)
{
	uint32_t start = EXT4_GOOD_OLD_INODE_SIZE + out->extra_isize;
	uint32_t p, first, i, data = 0, voff, vsize;

	out->inline_off = 0;
	out->inline_len = 0;
	if (start + 4 > isz || gpuos_le32(raw + start) != EXT4_XATTR_MAGIC)
		return 0; /* no xattrs: the data is the 60 bytes of i_block */
	first = start + 4;
	p = first;
	/* entries are at least 16 bytes: the bound ends the loop */
	for (i = 0; p + 4 <= isz && gpuos_le32(raw + p) != 0; i++) {
		uint32_t nlen, esize;

		if (i >= isz / 16 || p + sizeof(struct ext4_xattr_entry) > isz)
			return fail(fs, -EINVAL, "corrupt inode: xattr entry overruns the inode", ino);
		nlen = XE8(raw + p, e_name_len);
		esize = (uint32_t)(sizeof(struct ext4_xattr_entry) + nlen + 3u) & ~3u;
		if (p + esize > isz)
			return fail(fs, -EINVAL, "corrupt inode: xattr name overruns the inode", ino);
		if (XE8(raw + p, e_name_index) == EXT4_XATTR_INDEX_SYSTEM && nlen == 4 &&
		    gpuos_mem_cmp(raw + p + sizeof(struct ext4_xattr_entry), "data", 4) == 0 && !data)
			data = p;
		p += esize;
	}
	if (p + 4 > isz)
		return fail(fs, -EINVAL, "corrupt inode: xattr entries run past the inode", ino);
	if (!data)
		return 0;
	if (XE32(raw + data, e_value_inum) != 0)
		return fail(fs, -EINVAL, "corrupt inode: inline data in an xattr inode", ino);
	voff = XE16(raw + data, e_value_offs);
	vsize = XE32(raw + data, e_value_size);
	if (vsize == 0)
		return 0;
	/* p + 4 - first: the values start past the zero word */
	if (voff < p + 4 - first || voff > isz - first ||
	    (((uint64_t)vsize + 3u) & ~3ull) > (uint64_t)(isz - first - voff))
		return fail(fs, -EINVAL, "corrupt inode: inline data outside the xattr values", ino);
	out->inline_off = (uint16_t)(first + voff); /* < isz <= 65536 */
	out->inline_len = vsize;
	return 0;
}

/* Where inode ino sits on the device (*off): its group's descriptor, the
 * inode table inside the file system, and the inode inside the initialized
 * part of the table where group checksums say how much is. */
static GPUOS_HD int inode_locate(struct gpuos_ext4 *fs, uint32_t ino, uint64_t *off)
{
	struct ext4_group_info gi;
	uint32_t g, idx;
	uint64_t itable_blocks;
	int r;

	g = (ino - 1u) / fs->inodes_per_group;
	idx = (ino - 1u) % fs->inodes_per_group;
	r = read_group(fs, g, &gi);
	if (r)
		return r;
	itable_blocks = ((uint64_t)fs->inodes_per_group * fs->inode_size + fs->block_size - 1u) >>
			fs->block_bits;
	if (!blocks_ok(fs, gi.inode_table, itable_blocks))
		return fail(fs, -EINVAL, "corrupt group descriptor: inode table outside the file system",
			    gi.inode_table);
	if ((fs->has_csum || fs->has_gdt_csum) &&
	    ((gi.flags & EXT4_BG_INODE_UNINIT) ||
	     (gi.itable_unused <= fs->inodes_per_group &&
	      idx >= fs->inodes_per_group - gi.itable_unused)))
		return fail(fs, -ENOENT, "inode not in use (uninitialized part of the inode table)", ino);
	*off = (gi.inode_table << fs->block_bits) + (uint64_t)idx * fs->inode_size;
	return 0;
}

/* metadata_csum of the raw inode (ext4_inode_csum()), isz bytes of which
 * have are struct ext4_inode_disk; the checksum fields count as zero. Sets
 * out->csum_seed; needs out->generation. */
static GPUOS_HD int inode_csum_check(struct gpuos_ext4 *fs, const uint8_t *raw, uint32_t isz,
				     uint32_t have, uint32_t ino, struct gpuos_ext4_inode *out)
{
	uint8_t zero[2] = {0, 0};
	uint32_t seed, c, want, got_lo;
	int has_hi = have >= offsetof(struct ext4_inode_disk, i_checksum_hi) + 2;

	seed = ext4_csum_le32(fs->csum_seed, ino);
	seed = ext4_csum_le32(seed, out->generation);
	out->csum_seed = seed;
	if (fs->creator_os != 0) /* only Linux inodes carry the checksum fields */
		return 0;
	c = ext4_csum32(seed, raw, offsetof(struct ext4_inode_disk, l_i_checksum_lo));
	c = ext4_csum32(c, zero, 2);
	c = ext4_csum32(c, raw + 0x7e, EXT4_GOOD_OLD_INODE_SIZE - 0x7e);
	if (isz > EXT4_GOOD_OLD_INODE_SIZE) {
		uint32_t o = offsetof(struct ext4_inode_disk, i_checksum_hi);

		c = ext4_csum32(c, raw + EXT4_GOOD_OLD_INODE_SIZE, o - EXT4_GOOD_OLD_INODE_SIZE);
		if (has_hi) {
			c = ext4_csum32(c, zero, 2);
			o += 2;
		}
		c = ext4_csum32(c, raw + o, isz - o);
	}
	got_lo = IN16(raw, l_i_checksum_lo);
	if (has_hi) {
		want = c;
		got_lo |= (uint32_t)IN16(raw, i_checksum_hi) << 16;
	} else {
		want = c & 0xFFFFu;
	}
	if (want != got_lo) {
		if (gpuos_mem_is_zero(raw, isz))
			return fail(fs, -ENOENT, "inode not in use", ino);
		return fail(fs, -EINVAL, "corrupt inode: bad checksum", ino);
	}
	return 0;
}

/* The inode's links, mode and file type; -ENOENT for one not in use. */
static GPUOS_HD int inode_type(struct gpuos_ext4 *fs, const uint8_t *raw, uint32_t ino,
			       struct gpuos_ext4_inode *out)
{
	uint32_t mode = IN16(raw, i_mode);

	out->links = IN16(raw, i_links_count);
	if (out->links == 0 && IN32(raw, i_dtime) != 0)
		return fail(fs, -ENOENT, "inode not in use (deleted)", ino);
	if (mode == 0 && out->links == 0)
		return fail(fs, -ENOENT, "inode not in use", ino);
	out->mode = (uint16_t)mode;
	switch (mode & EXT4_S_IFMT) {
	case EXT4_S_IFREG: out->type = GPUOS_EXT4_FT_REG; break;
	case EXT4_S_IFDIR: out->type = GPUOS_EXT4_FT_DIR; break;
	case EXT4_S_IFLNK: out->type = GPUOS_EXT4_FT_SYMLINK; break;
	case EXT4_S_IFCHR: out->type = GPUOS_EXT4_FT_CHR; break;
	case EXT4_S_IFBLK: out->type = GPUOS_EXT4_FT_BLK; break;
	case EXT4_S_IFIFO: out->type = GPUOS_EXT4_FT_FIFO; break;
	case EXT4_S_IFSOCK: out->type = GPUOS_EXT4_FT_SOCK; break;
	default: return fail(fs, -EINVAL, "corrupt inode: bad file type in mode", mode);
	}
	return 0;
}

/* Owner, size, flags, block count, xattr block, times, project and i_block
 * of the raw inode, have bytes of which are struct ext4_inode_disk. */
static GPUOS_HD void inode_fields(const struct gpuos_ext4 *fs, const uint8_t *raw, uint32_t have,
				  struct gpuos_ext4_inode *out)
{
	out->uid = IN16(raw, i_uid) | (uint32_t)IN16(raw, l_i_uid_high) << 16;
	out->gid = IN16(raw, i_gid) | (uint32_t)IN16(raw, l_i_gid_high) << 16;
	out->size = IN32(raw, i_size_lo) | (uint64_t)IN32(raw, i_size_high) << 32;
	out->flags = IN32(raw, i_flags);
	out->blocks = IN32(raw, i_blocks_lo);
	if (fs->feature_ro_compat & GPUOS_EXT4_RO_COMPAT_HUGE_FILE) {
		out->blocks |= (uint64_t)IN16(raw, l_i_blocks_high) << 32;
		if (out->flags & GPUOS_EXT4_IFL_HUGE_FILE)
			out->blocks <<= fs->block_bits - 9; /* counted in blocks: 48 + 7 bits fit */
	}
	out->file_acl = IN32(raw, i_file_acl_lo);
	if (fs->feature_incompat & GPUOS_EXT4_INCOMPAT_64BIT)
		out->file_acl |= (uint64_t)IN16(raw, l_i_file_acl_high) << 32;
	ext4_decode_time(raw, offsetof(struct ext4_inode_disk, i_atime),
		    offsetof(struct ext4_inode_disk, i_atime_extra), have, &out->atime, &out->atime_ns);
	ext4_decode_time(raw, offsetof(struct ext4_inode_disk, i_mtime),
		    offsetof(struct ext4_inode_disk, i_mtime_extra), have, &out->mtime, &out->mtime_ns);
	ext4_decode_time(raw, offsetof(struct ext4_inode_disk, i_ctime),
		    offsetof(struct ext4_inode_disk, i_ctime_extra), have, &out->ctime, &out->ctime_ns);
	if (have >= offsetof(struct ext4_inode_disk, i_crtime) + 4)
		ext4_decode_time(raw, offsetof(struct ext4_inode_disk, i_crtime),
			    offsetof(struct ext4_inode_disk, i_crtime_extra), have, &out->crtime,
			    &out->crtime_ns);
	if (have >= offsetof(struct ext4_inode_disk, i_projid) + 4)
		out->projid = IN32(raw, i_projid);
	gpuos_mem_copy(out->i_block, FIELD_AT(raw, struct ext4_inode_disk, i_block), 60);
}

/* Where the data of the inode lives (out->map): none for a device, FIFO or
 * socket (with its device numbers), inline, a fast symlink, an extent tree
 * (its root checked) or a block map. raw is the raw inode of isz bytes. */
static GPUOS_HD int inode_map(struct gpuos_ext4 *fs, const uint8_t *raw, uint32_t isz,
			      uint32_t ino, struct gpuos_ext4_inode *out)
{
	uint32_t iflags = out->flags;
	uint64_t ea_sectors = out->file_acl ? (1ull << (fs->cluster_bits - 9)) : 0;
	int r;

	if ((iflags & GPUOS_EXT4_IFL_INLINE_DATA) &&
	    !(fs->feature_incompat & GPUOS_EXT4_INCOMPAT_INLINE_DATA))
		return fail(fs, -EINVAL, "corrupt inode: inline data flag without the feature", ino);
	if ((iflags & GPUOS_EXT4_IFL_INLINE_DATA) && (iflags & GPUOS_EXT4_IFL_EXTENTS))
		return fail(fs, -EINVAL, "corrupt inode: both inline data and extents flags", ino);
	if (out->type == GPUOS_EXT4_FT_CHR || out->type == GPUOS_EXT4_FT_BLK ||
	    out->type == GPUOS_EXT4_FT_FIFO || out->type == GPUOS_EXT4_FT_SOCK) {
		uint32_t d0 = gpuos_le32(out->i_block), d1 = gpuos_le32(out->i_block + 4);

		out->map = GPUOS_EXT4_MAP_NONE;
		if (d0) { /* old 8:8 encoding */
			out->rdev_major = (d0 >> 8) & 0xffu;
			out->rdev_minor = d0 & 0xffu;
		} else {  /* new 12:20 encoding */
			out->rdev_major = (d1 & 0xfff00u) >> 8;
			out->rdev_minor = (d1 & 0xffu) | ((d1 >> 12) & 0xfff00u);
		}
	} else if (iflags & GPUOS_EXT4_IFL_INLINE_DATA) {
		out->map = GPUOS_EXT4_MAP_INLINE;
		r = find_inline_xattr(fs, raw, isz, ino, out);
		if (r)
			return r;
		/* the data is i_block, then the system.data value: nothing holds
		 * bytes past both (they would read as zeros) */
		if (out->size > GPUOS_EXT4_INLINE_MIN + (uint64_t)out->inline_len)
			return fail(fs, -EINVAL, "corrupt inode: inline data shorter than the file's size",
				    out->size);
	} else if (out->type == GPUOS_EXT4_FT_SYMLINK && out->blocks == ea_sectors) {
		/* no data block: the target is in i_block (ext4_inode_is_fast_symlink()) */
		if (out->size >= sizeof(out->i_block))
			return fail(fs, -EINVAL, "corrupt inode: fast symlink longer than i_block",
				    out->size);
		out->map = GPUOS_EXT4_MAP_FAST_SYMLINK;
	} else if (iflags & GPUOS_EXT4_IFL_EXTENTS) {
		const uint8_t *eh = out->i_block;

		if (!(fs->feature_incompat & GPUOS_EXT4_INCOMPAT_EXTENTS))
			return fail(fs, -EINVAL, "corrupt inode: extents flag without the feature", ino);
		if (EH16(eh, eh_magic) != EXT4_EXT_MAGIC)
			return fail(fs, -EINVAL, "corrupt extent tree: bad magic in the inode", ino);
		if (EH16(eh, eh_max) > 4 || EH16(eh, eh_entries) > EH16(eh, eh_max))
			return fail(fs, -EINVAL, "corrupt extent tree: bad entry count in the inode",
				    EH16(eh, eh_entries));
		if (EH16(eh, eh_depth) > GPUOS_EXT4_MAX_DEPTH)
			return fail(fs, -EINVAL, "corrupt extent tree: too deep", EH16(eh, eh_depth));
		out->map = GPUOS_EXT4_MAP_EXTENTS;
	} else {
		out->map = GPUOS_EXT4_MAP_BLOCKMAP;
	}
	return 0;
}

GPUOS_NOINLINE GPUOS_HD int gpuos_ext4_iget(struct gpuos_ext4 *fs, uint32_t ino, struct gpuos_ext4_inode *out)
{
	const uint8_t *raw;
	uint32_t isz, have;
	uint64_t off;
	int r;

	begin(fs);
	if (fs->block_size == 0)
		return fail(fs, -EINVAL, "file system not mounted", 0);
	if (ino == 0 || ino > fs->inodes_count)
		return fail(fs, -EINVAL, "inode number out of range", ino);
	r = inode_locate(fs, ino, &off);
	if (r)
		return r;
	isz = fs->inode_size;
	raw = scratch(fs);
	r = ext4_dev_read(fs, off, isz, scratch(fs));
	if (r)
		return r;

	gpuos_mem_set(out, 0, sizeof(*out));
	out->ino = ino;
	out->disk_off = off;
	if (isz > EXT4_GOOD_OLD_INODE_SIZE) {
		out->extra_isize = IN16(raw, i_extra_isize);
		if (out->extra_isize > isz - EXT4_GOOD_OLD_INODE_SIZE || (out->extra_isize & 3u))
			return fail(fs, -EINVAL, "corrupt inode: bad extra size", ino);
	}
	have = EXT4_GOOD_OLD_INODE_SIZE + out->extra_isize; /* bytes of struct ext4_inode_disk */

	out->generation = IN32(raw, i_generation);
	if (fs->has_csum) {
		r = inode_csum_check(fs, raw, isz, have, ino, out);
		if (r)
			return r;
	}
	r = inode_type(fs, raw, ino, out);
	if (r)
		return r;
	inode_fields(fs, raw, have, out);

	/* sizes: no negative loff_t, nothing past 2^32 blocks */
	if (out->size >> 63 || (out->size >> fs->block_bits) > LBLK_LIMIT)
		return fail(fs, -EINVAL, "corrupt inode: size too large", out->size);
	r = inode_map(fs, raw, isz, ino, out);
	if (r)
		return r;

	/* a directory cannot hold more blocks than the file system: this bounds
	 * every scan of it */
	if (out->type == GPUOS_EXT4_FT_DIR && out->map != GPUOS_EXT4_MAP_INLINE &&
	    (out->size >> fs->block_bits) > fs->blocks_count)
		return fail(fs, -EINVAL, "corrupt inode: directory larger than the file system",
			    out->size);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The file tools: gpuos ls | stat | cat | gguf | model. Each boots a runtime (or
 * attaches to a service with --socket) and asks it through the mailbox; the
 * runtime parses the partition table, ext4 and GGUF itself (on the GPU, or
 * on CPU threads in host mode). Nothing here reads the disk.
 *
 *   gpuos ls   [--json] --device DEV [--part N] PATH
 *   gpuos stat [--json] --device DEV [--part N] PATH
 *   gpuos cat  --device DEV [--part N] PATH [-o FILE]
 *   gpuos gguf [--json] [--shard] --device DEV [--part N] PATH|@BYTEOFFSET
 *   gpuos model [--json] [--shard] --device DEV [--part N] PATH|@BYTEOFFSET
 *
 * Errors: one line "gpuos CMD: PATH: reason" on stderr, exit status 1 (2 for
 * a bad command line).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gguf_json.h"
#include "json.h"
#include "model_json.h"

#define WHY_LEN 256u

struct files {
	const char *cmd;
	struct cli c;
	struct client cl;
	const char *path;
	char *path_h;          /* the path in the client heap (host mapping) */
	char *why_h;           /* a reason buffer in the heap */
	char *buf_h;           /* the rest of the heap */
	uint64_t buf_rt, buf_len;
	int open;
};

static uint64_t rt_of(const struct files *f, const void *host)
{
	return f->cl.heap_rt + (uint64_t)((const char *)host - f->cl.heap);
}

/* Parse the command line, boot or attach, copy the path into the heap.
 * 0, or the exit status (GPUOS_EXIT_USAGE, GPUOS_EXIT_FAIL). */
static int files_begin(struct files *f, const char *cmd, int argc, char **argv)
{
	char err[512];
	size_t n;
	int r;

	memset(f, 0, sizeof(*f));
	f->cmd = cmd;
	if (cli_parse(&f->c, cmd, argc, argv))
		return GPUOS_EXIT_USAGE;
	if (f->c.argc != 1) {
		cli_err(cmd, "give one path (gpuos %s --device DEV PATH)", cmd);
		return GPUOS_EXIT_USAGE;
	}
	f->path = f->c.argv[0];
	n = strlen(f->path);
	if (n + 1 > GPUOS_PATH_MAX) {
		cli_err(cmd, "%.64s...: path too long", f->path);
		return GPUOS_EXIT_USAGE;
	}
	if (f->c.part > 0)
		f->c.boot.part = (uint32_t)f->c.part;
	/* `gguf @OFFSET` and `model @OFFSET` name raw device bytes on purpose: a
	 * runtime booted for this command allows it (a service keeps its own
	 * --allow-raw policy). */
	if ((!strcmp(cmd, "gguf") || !strcmp(cmd, "model")) && f->path[0] == '@')
		f->c.boot.allow_raw = 1;
	if (!f->c.boot.device && !f->c.socket) {
		cli_err(cmd, "give --device DEV (emu:IMAGE, null, pci:...) or --socket PATH");
		return GPUOS_EXIT_USAGE;
	}
	r = client_open(&f->c, &f->cl, err, sizeof(err));
	if (r) {
		cli_err(cmd, "%s", err);
		return GPUOS_EXIT_FAIL;
	}
	f->open = 1;
	if (f->cl.heap_len < (1u << 20)) {
		cli_err(cmd, "client memory of %llu bytes is too small", (unsigned long long)f->cl.heap_len);
		return GPUOS_EXIT_FAIL;
	}
	f->path_h = f->cl.heap;
	f->why_h = f->cl.heap + GPUOS_PATH_MAX;
	f->buf_h = f->cl.heap + 2u * GPUOS_PATH_MAX;
	f->buf_rt = rt_of(f, f->buf_h);
	f->buf_len = f->cl.heap_len - 2u * GPUOS_PATH_MAX;
	memcpy(f->path_h, f->path, n + 1);
	return 0;
}

static int files_end(struct files *f, int rc)
{
	char err[512];
	if (f->open && !strcmp(f->cmd, "cat"))
		cli_counters(f->cmd, &f->c, f->cl.sys);
	if (f->open && f->cl.sys) {
		struct gpuos_stats st;
		gpuos_sys_stats(f->cl.sys, &st);
		if (st.notices & GPUOS_NOTICE_GPT_BACKUP)
			fprintf(stderr, "gpuos %s: note: the primary GPT is corrupt; the backup GPT was used\n", f->cmd);
		if (st.notices & GPUOS_NOTICE_GPT_BACKUP_BAD)
			fprintf(stderr, "gpuos %s: note: the backup GPT is corrupt (the primary is good)\n", f->cmd);
	}
	if (f->open && client_close(&f->cl, err, sizeof(err)) && rc == 0) {
		cli_err(f->cmd, "shutdown: %s", err);
		rc = GPUOS_EXIT_FAIL;
	}
	free(f->c.argv);
	return rc;
}

/* "gpuos CMD: PATH: reason" from a failed request's status and reason text. */
static int fail(struct files *f, uint32_t st, uint16_t nvme, const char *why)
{
	char d[256];
	if (why && why[0]) {
		cli_err(f->cmd, "%s: %s", f->path, why);
	} else {
		describe_status(d, sizeof(d), st, nvme);
		cli_err(f->cmd, "%s: %s", f->path, d);
	}
	return GPUOS_EXIT_FAIL;
}

/* The reason the runtime left in a buffer of the heap (NUL-terminated there). */
static const char *why_in(const char *h, uint64_t cap)
{
	return memchr(h, 0, cap < WHY_LEN ? cap : WHY_LEN) ? h : "";
}

static int do_open(struct files *f, uint32_t flags, uint32_t *h, uint64_t *size)
{
	struct gpuos_result res;
	uint32_t st;
	f->why_h[0] = 0;
	st = gpuos_request(f->cl.mb, GPUOS_OP_OPEN, (uint16_t)flags, 0, 0, WHY_LEN, (void *)(uintptr_t)rt_of(f, f->why_h),
			   rt_of(f, f->path_h), &res);
	if (st != GPUOS_ST_OK)
		return fail(f, st, res.nvme_status, why_in(f->why_h, WHY_LEN));
	*h = (uint32_t)res.result;
	*size = res.result2;
	return 0;
}

static const char *type_name(uint32_t t)
{
	switch (t) {
	case GPUOS_FT_REG: return "regular";
	case GPUOS_FT_DIR: return "directory";
	case GPUOS_FT_SYMLINK: return "symlink";
	case GPUOS_FT_FIFO: return "fifo";
	case GPUOS_FT_SOCK: return "socket";
	case GPUOS_FT_CHR: return "chardev";
	case GPUOS_FT_BLK: return "blockdev";
	default: return "unknown";
	}
}

/* ---- ls ------------------------------------------------------------------------- */

struct ent {
	char *name;
	uint32_t ino;
	uint32_t type;
	int have_size;  /* lstat of the entry answered */
	uint64_t size;
	uint32_t mode;
};

/* Size and mode of each entry: an lstat of DIR/NAME through the runtime
 * (readdir gives names, inodes and types only). An entry whose path does
 * not fit, or whose stat fails, keeps have_size 0. */
static void ls_sizes(struct files *f, struct ent *ents, size_t n)
{
	char *path = f->buf_h;
	struct gpuos_stat *st = (struct gpuos_stat *)(f->buf_h + GPUOS_PATH_MAX);
	size_t dl = strlen(f->path), i;
	int slash = dl && f->path[dl - 1] != '/';

	for (i = 0; i < n; i++) {
		struct gpuos_result res;
		size_t nl = strlen(ents[i].name);
		if (dl + (size_t)slash + nl + 1 > GPUOS_PATH_MAX)
			continue;
		memcpy(path, f->path, dl);
		if (slash)
			path[dl] = '/';
		memcpy(path + dl + slash, ents[i].name, nl + 1);
		if (gpuos_request(f->cl.mb, GPUOS_OP_STAT, GPUOS_OPEN_NOFOLLOW, 0, 0, sizeof(*st),
				  (void *)(uintptr_t)rt_of(f, st), rt_of(f, path), &res) != GPUOS_ST_OK)
			continue;
		ents[i].have_size = 1;
		ents[i].size = st->size;
		ents[i].mode = st->mode;
	}
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

/* The entries (sorted), as text or as JSON. */
static void ls_print(const struct files *f, const struct ent *ents, size_t n)
{
	size_t i;

	if (f->c.json) {
		struct json j;
		json_begin(&j, stdout, "ls");
		json_str(&j, "path", f->path);
		json_arr_lines(&j, "entries");
		for (i = 0; i < n; i++) {
			json_obj(&j, NULL);
			json_str(&j, "name", ents[i].name);
			json_u64(&j, "inode", ents[i].ino);
			json_str(&j, "type", type_name(ents[i].type));
			if (ents[i].have_size) {
				char mode[8];
				snprintf(mode, sizeof(mode), "%04o", ents[i].mode & 07777u);
				json_u64(&j, "size", ents[i].size);
				json_str(&j, "mode", mode);
			} else {
				json_null(&j, "size");
				json_null(&j, "mode");
			}
			json_end(&j);
		}
		json_end(&j);
		json_finish(&j);
	} else {
		for (i = 0; i < n; i++) {
			char h[32] = "?";
			if (ents[i].have_size)
				cli_human(h, sizeof(h), ents[i].size);
			printf("%10u  %-9s  %10s  ", ents[i].ino, type_name(ents[i].type), h);
			cli_put_escaped(stdout, ents[i].name, strlen(ents[i].name));
			putchar('\n');
		}
	}
}

int cmd_ls(int argc, char **argv)
{
	struct files f;
	struct ent *ents = NULL;
	size_t n = 0, cap = 0, i;
	uint64_t cookie = 0, size;
	uint32_t h, cap_ents;
	int rc = 0;

	if ((rc = files_begin(&f, "ls", argc, argv)))
		return files_end(&f, rc);
	if (do_open(&f, 0, &h, &size))
		return files_end(&f, GPUOS_EXIT_FAIL);
	cap_ents = (uint32_t)GPUOS_MIN(f.buf_len / sizeof(struct gpuos_dirent), 4096u);
	while (cookie != GPUOS_DIR_END) {
		struct gpuos_result res;
		struct gpuos_dirent *d = (struct gpuos_dirent *)f.buf_h;
		uint32_t st = gpuos_request(f.cl.mb, GPUOS_OP_READDIR, 0, h, cookie, (uint64_t)cap_ents * sizeof(*d),
					    (void *)(uintptr_t)f.buf_rt, 0, &res);
		if (st != GPUOS_ST_OK) {
			rc = fail(&f, st, res.nvme_status, st == GPUOS_ST_NOTDIR ? "not a directory" : why_in(f.buf_h, f.buf_len));
			break;
		}
		for (i = 0; i < res.result; i++) {
			if (!strcmp(d[i].name, ".") || !strcmp(d[i].name, ".."))
				continue;
			if (n == cap) {
				struct ent *m;
				cap = cap ? cap * 2 : 256;
				m = realloc(ents, cap * sizeof(*ents));
				if (!m) {
					cli_err("ls", "out of memory");
					rc = GPUOS_EXIT_FAIL;
					goto out;
				}
				ents = m;
			}
			memset(&ents[n], 0, sizeof(ents[n]));
			ents[n].name = strdup(d[i].name);
			ents[n].ino = d[i].ino;
			ents[n].type = d[i].type;
			if (!ents[n].name) {
				cli_err("ls", "out of memory");
				rc = GPUOS_EXIT_FAIL;
				goto out;
			}
			n++;
		}
		cookie = res.result2;
	}
	if (!rc) {
		qsort(ents, n, sizeof(*ents), ent_cmp);
		ls_sizes(&f, ents, n);
		ls_print(&f, ents, n);
	}
out:
	gpuos_close(f.cl.mb, h);
	for (i = 0; i < n; i++)
		free(ents[i].name);
	free(ents);
	return files_end(&f, rc);
}

/* ---- stat ----------------------------------------------------------------------- */

/* The inode and its extents, as text or as JSON. */
static void stat_print(const struct files *f, const struct gpuos_stat *st, const struct gpuos_extent *ext,
		       uint64_t total)
{
	uint64_t i;

	if (f->c.json) {
		struct json j;
		char mode[8];
		snprintf(mode, sizeof(mode), "%04o", st->mode & 07777u);
		json_begin(&j, stdout, "stat");
		json_str(&j, "path", f->path);
		json_u64(&j, "inode", st->ino);
		json_str(&j, "type", type_name(st->type));
		json_str(&j, "mode", mode);
		json_u64(&j, "uid", st->uid);
		json_u64(&j, "gid", st->gid);
		json_u64(&j, "size", st->size);
		json_u64(&j, "links", st->links);
		json_i64(&j, "mtime", st->mtime);
		json_u64(&j, "block_size", st->block_size);
		json_u64(&j, "partition_start_lba", st->part_lba);
		json_arr_lines(&j, "extents");
		for (i = 0; i < total; i++) {
			json_obj(&j, NULL);
			json_u64(&j, "logical", ext[i].lblk);
			json_u64(&j, "physical", ext[i].pblk);
			json_u64(&j, "blocks", ext[i].len);
			json_bool(&j, "unwritten", (ext[i].flags & GPUOS_EXTENT_UNWRITTEN) != 0);
			json_end(&j);
		}
		json_end(&j);
		json_finish(&j);
	} else {
		char h[32];
		fputs("  File: ", stdout);
		cli_put_escaped(stdout, f->path, strlen(f->path));
		printf("\n  Type: %s\n  Inode: %u  Links: %u  Mode: %04o  Uid: %u  Gid: %u\n"
		       "  Size: %" PRIu64 " (%s)  Block size: %u  Partition start LBA: %" PRIu64 "\n  Extents: %" PRIu64 "\n",
		       type_name(st->type), st->ino, st->links, st->mode & 07777u, st->uid, st->gid, st->size,
		       cli_human(h, sizeof(h), st->size), st->block_size, st->part_lba, total);
		for (i = 0; i < total; i++)
			printf("    (%" PRIu64 "-%" PRIu64 "): %" PRIu64 "-%" PRIu64 "%s\n", ext[i].lblk,
			       ext[i].lblk + ext[i].len - 1, ext[i].pblk, ext[i].pblk + ext[i].len - 1,
			       (ext[i].flags & GPUOS_EXTENT_UNWRITTEN) ? " [uninit]" : "");
	}
}

int cmd_stat(int argc, char **argv)
{
	struct files f;
	struct gpuos_stat *st;
	struct gpuos_extent *ext = NULL;
	uint64_t total = 0, have = 0, i;
	int rc = 0;

	if ((rc = files_begin(&f, "stat", argc, argv)))
		return files_end(&f, rc);
	st = (struct gpuos_stat *)f.buf_h;
	/* lstat, as stat(1) and debugfs do: a symlink is reported as one. */
	do {
		struct gpuos_result res;
		uint32_t s = gpuos_request(f.cl.mb, GPUOS_OP_STAT, GPUOS_OPEN_NOFOLLOW, 0, have, f.buf_len,
					   (void *)(uintptr_t)f.buf_rt, rt_of(&f, f.path_h), &res);
		struct gpuos_extent *m;
		if (s != GPUOS_ST_OK) {
			rc = fail(&f, s, res.nvme_status, why_in(f.buf_h, f.buf_len));
			goto out;
		}
		total = st->nextents;
		if (!ext) {
			ext = calloc(total ? total : 1, sizeof(*ext));
			if (!ext) {
				cli_err("stat", "out of memory");
				rc = GPUOS_EXIT_FAIL;
				goto out;
			}
		}
		if (st->n == 0 && have < total) {
			cli_err("stat", "%s: the runtime returned no extents from %llu on", f.path, (unsigned long long)have);
			rc = GPUOS_EXIT_FAIL;
			goto out;
		}
		m = st->ext;
		for (i = 0; i < st->n && have < total; i++)
			ext[have++] = m[i];
	} while (have < total);
	stat_print(&f, st, ext, total);
out:
	free(ext);
	return files_end(&f, rc);
}

/* ---- cat ------------------------------------------------------------------------ */

int cmd_cat(int argc, char **argv)
{
	struct files f;
	struct cli_stream s;
	uint64_t size, off;
	uint32_t h;
	int fd = 1, rc = 0;

	if ((rc = files_begin(&f, "cat", argc, argv)))
		return files_end(&f, rc);
	if (do_open(&f, 0, &h, &size))
		return files_end(&f, GPUOS_EXIT_FAIL);
	off = f.c.have_offset ? f.c.offset : 0;
	if (off > size || (f.c.have_length && f.c.length > size - off)) {
		cli_err("cat", "%s: bytes %llu..%llu lie past its end (%llu bytes)", f.path, (unsigned long long)off,
			(unsigned long long)(off + (f.c.have_length ? f.c.length : 0)), (unsigned long long)size);
		gpuos_close(f.cl.mb, h);
		return files_end(&f, GPUOS_EXIT_FAIL);
	}
	if ((rc = cli_output_open("cat", &f.c, &fd))) {
		gpuos_close(f.cl.mb, h);
		return files_end(&f, rc);
	}
	memset(&s, 0, sizeof(s));
	s.mb = f.cl.mb;
	s.op = GPUOS_OP_READ;
	s.handle = h;
	s.off = off;
	s.len = f.c.have_length ? f.c.length : size - off;
	s.buf = f.buf_h;
	s.buf_rt = f.buf_rt;
	s.buf_len = f.buf_len;
	s.fd = fd;
	if (cli_stream(&s)) {
		char d[256];
		if (s.st == GPUOS_ST_OK)
			snprintf(d, sizeof(d), "short read at byte %llu (%llu of %llu bytes)", (unsigned long long)s.done,
				 (unsigned long long)s.got, (unsigned long long)s.want);
		else
			describe_status(d, sizeof(d), s.st, s.nvme);
		if (s.write_err)
			cli_err("cat", "write %s: %s", f.c.out ? f.c.out : "stdout", strerror(-s.write_err));
		else if (s.st == GPUOS_ST_ISDIR)
			cli_err("cat", "%s: %s", f.path, d);
		else
			cli_err("cat", "%s: bytes %llu..%llu: %s", f.path, (unsigned long long)s.done,
				(unsigned long long)(s.done + s.want), d);
		rc = GPUOS_EXIT_FAIL;
	}
	if (fd != 1 && close(fd) && !rc) {
		cli_err("cat", "close %s: %s", f.c.out, strerror(errno));
		rc = GPUOS_EXIT_FAIL;
	}
	gpuos_close(f.cl.mb, h);
	return files_end(&f, rc);
}

/* ---- gguf, model ------------------------------------------------------------------ */

/* The files a split model was read from, by the names the runtime gave them
 * (gpuos/gguf.h): from the path's prefix when it names a shard, else from
 * the base name (less ".gguf"). A shard alone, and a model of one file, is
 * the path itself. A safetensors checkpoint's index names its shards in its
 * weight_map, which the export does not carry: no paths (NULL). */
static int shard_paths(const struct files *f, struct gguf_view *v)
{
	static char names[GPUOS_GGUF_MAX_SHARDS][GPUOS_PATH_MAX];
	static const char *paths[GPUOS_GGUF_MAX_SHARDS];
	uint32_t len = (uint32_t)strlen(f->path), k, n, i;
	int pl = gpuos_gguf_split_parse(f->path, len, &k, &n);
	v->shard_paths = NULL;
	if (v->flags & GPUOS_GGUF_F_ST_INDEX)
		return 0;
	if (!(v->flags & GPUOS_GGUF_F_SPLIT)) {
		paths[0] = f->path;
		v->shard_paths = paths;
		return 0;
	}
	if (pl < 0)
		pl = len > 5 && !strcmp(f->path + len - 5, ".gguf") ? (int)len - 5 : (int)len;
	if (v->shards > GPUOS_GGUF_MAX_SHARDS) {
		cli_err(f->cmd, "%s: %u shards, more than %u", f->path, v->shards, GPUOS_GGUF_MAX_SHARDS);
		return -1;
	}
	for (i = 0; i < v->shards; i++) {
		if (!gpuos_gguf_split_name(names[i], GPUOS_PATH_MAX, f->path, (uint32_t)pl, i + 1u, v->shards)) {
			cli_err(f->cmd, "%s: shard names too long", f->path);
			return -1;
		}
		paths[i] = names[i];
	}
	v->shard_paths = paths;
	return 0;
}

/* Open the model f->path names (a file, or @BYTEOFFSET: a GGUF at that byte
 * of the device; --shard: one gguf-split shard alone) and read its tables
 * into the heap, *v over them. 0 with *h the model's handle (the caller
 * closes it), or the exit status after one line on stderr (nothing left
 * open). */
static int model_tables(struct files *f, uint32_t *h, struct gguf_view *v)
{
	struct gpuos_result res;
	struct gpuos_gguf_export *x;
	uint64_t raw = 0;
	uint32_t st;
	int is_raw = f->path[0] == '@', rc = 0;

	/* a byte offset as --offset takes it (decimal or 0x, K..T) */
	if (is_raw && cli_size(f->path + 1, 1, ~0ull, &raw)) {
		cli_err(f->cmd, "%s: not a byte offset (give PATH or @BYTEOFFSET)", f->path);
		return GPUOS_EXIT_USAGE;
	}
	f->why_h[0] = 0;
	st = gpuos_request(f->cl.mb, GPUOS_OP_GGUF_OPEN, (is_raw ? GPUOS_GGUF_RAW : 0) | (f->c.shard ? GPUOS_GGUF_SHARD : 0),
			   0, raw, WHY_LEN, (void *)(uintptr_t)rt_of(f, f->why_h), is_raw ? 0 : rt_of(f, f->path_h), &res);
	if (st != GPUOS_ST_OK) {
		if (st == GPUOS_ST_DENIED && is_raw && !why_in(f->why_h, WHY_LEN)[0])
			return fail(f, st, 0, "a GGUF at a byte offset of the device needs --allow-raw");
		return fail(f, st, res.nvme_status, why_in(f->why_h, WHY_LEN));
	}
	*h = (uint32_t)res.result;
	x = (struct gpuos_gguf_export *)f->buf_h;
	st = gpuos_request(f->cl.mb, GPUOS_OP_GGUF_INFO, 0, *h, 0, f->buf_len, (void *)(uintptr_t)f->buf_rt, 0, &res);
	if (st != GPUOS_ST_OK) {
		rc = fail(f, st, res.nvme_status, why_in(f->buf_h, f->buf_len));
	} else if (!x->complete) {
		cli_err(f->cmd, "%s: the model's tables need %llu bytes of client memory, %llu available (--heap-mib)",
			f->path, (unsigned long long)x->total, (unsigned long long)f->buf_len);
		rc = GPUOS_EXIT_FAIL;
	} else {
		gguf_view_of_export(v, x);
		if (shard_paths(f, v))
			rc = GPUOS_EXIT_FAIL;
	}
	if (rc)
		gpuos_close(f->cl.mb, *h);
	return rc;
}

int cmd_gguf(int argc, char **argv)
{
	struct files f;
	struct gguf_view v;
	uint32_t h;
	int rc;

	if ((rc = files_begin(&f, "gguf", argc, argv)))
		return files_end(&f, rc);
	if ((rc = model_tables(&f, &h, &v)))
		return files_end(&f, rc);
	/* gpuos.gguf/1 is GGUF's header: versions 2 and 3, KVs with their types */
	if (v.flags & GPUOS_GGUF_F_SAFETENSORS) {
		cli_err("gguf", "%s: a safetensors model, not GGUF (gpuos model lists any model)", f.path);
		rc = GPUOS_EXIT_FAIL;
	} else if (f.c.json) {
		struct json j;
		json_begin(&j, stdout, "gguf");
		json_str(&j, "path", f.path);
		gguf_json_write(&j, &v);
		json_finish(&j);
	} else {
		gguf_text_write(stdout, &v);
	}
	gpuos_close(f.cl.mb, h);
	return files_end(&f, rc);
}

int cmd_model(int argc, char **argv)
{
	struct files f;
	struct gguf_view v;
	uint32_t h;
	int rc;

	if ((rc = files_begin(&f, "model", argc, argv)))
		return files_end(&f, rc);
	if ((rc = model_tables(&f, &h, &v)))
		return files_end(&f, rc);
	if (f.c.json) {
		struct json j;
		json_begin(&j, stdout, "model");
		json_str(&j, "path", f.path);
		model_json_write(&j, &v);
		json_finish(&j);
	} else {
		model_text_write(stdout, &v);
	}
	gpuos_close(f.cl.mb, h);
	return files_end(&f, rc);
}

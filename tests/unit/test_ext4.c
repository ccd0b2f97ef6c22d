/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_ext4.c - the ext4 parser against real images.
 *
 * Images are built at run time by mke2fs -d from source trees the tests
 * write (and by debugfs for what mke2fs cannot make: unwritten extents,
 * fragmented files, crafted inline directories). Expected answers come from
 * the source files themselves and from debugfs (stat, ls -p, ex, bmap,
 * imap), never from the parser under test.
 *
 * Each image is built once per run, on first use, into a directory made by
 * the PRE_ALL hook (Criterion runs tests in child processes; they inherit its
 * path through the environment, and a lock file per image keeps two workers
 * from building the same one); it is on /dev/shm when that has room, as the
 * source trees hold thousands of small files. POST_ALL removes it (set
 * GPUOS_EXT4_KEEP=1 to keep it). Tests skip when e2fsprogs or python3 are
 * missing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../../runtime/crc.h"
#include "../../runtime/fs/ext4/ext4.h"
#include "gpuos/internal/rt.h"

#define ENV_DIR "GPUOS_EXT4_TEST_DIR"

/* ---- run directory ------------------------------------------------------------ */

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	/* tmpfs when it has room: the source trees hold thousands of small files */
	char shm[] = "/dev/shm/gpuos-ext4-test-XXXXXX", tmp[] = "/tmp/gpuos-ext4-test-XXXXXX";
	struct statvfs vfs;

	(void)set;
	if (statvfs("/dev/shm", &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize > (2ull << 30) &&
	    mkdtemp(shm))
		setenv(ENV_DIR, shm, 1);
	else if (mkdtemp(tmp))
		setenv(ENV_DIR, tmp, 1);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	const char *d = getenv(ENV_DIR);

	(void)stats;
	if (d && strstr(d, "/gpuos-ext4-test-") && !getenv("GPUOS_EXT4_KEEP") &&
	    nftw(d, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "could not remove %s\n", d);
}

static const char *run_dir(void)
{
	const char *d = getenv(ENV_DIR);

	cr_assert(d, "no test directory (PRE_ALL hook did not run?)");
	return d;
}

static void need_tools(void)
{
	if (system("{ command -v mke2fs && command -v debugfs && command -v e2fsck && "
		   "command -v python3; } >/dev/null 2>&1") != 0)
		cr_skip_test("mke2fs, debugfs, e2fsck or python3 not installed");
}

/* ---- shell helpers ---------------------------------------------------------------- */

/* Output of a shell command (malloc'd, NUL-terminated). */
static char *sh_out(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	FILE *f;
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	f = popen(cmd, "r");
	cr_assert(f, "popen %s", cmd);
	for (;;) {
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 131072;
			buf = realloc(buf, cap);
			cr_assert(buf);
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		if (n == 0)
			break;
		len += n;
	}
	buf[len] = '\0';
	pclose(f);
	return buf;
}

/* debugfs -R CMD on IMG (read-only). */
static char *dbg(const char *img, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return sh_out("debugfs -R '%s' '%s' 2>/dev/null", cmd, img);
}

/* The number after key in s (base 0: 0x.. hex, else decimal); -1 if absent. */
static long long field(const char *s, const char *key, int base)
{
	const char *p = strstr(s, key);

	if (!p)
		return -1;
	return strtoll(p + strlen(key), NULL, base);
}

/* ---- images ------------------------------------------------------------------------- */

static const char PRELUDE[] =
	"set -eu\n"
	"export LC_ALL=C\n"
	"tree() {\n"
	"  s=$1\n"
	"  mkdir -p $s/sub/dir $s/emptydir\n"
	"  printf 'hello world\\n' > $s/small.txt\n"
	"  : > $s/empty\n"
	"  head -c 300000 /dev/urandom > $s/medium.bin\n"
	"  head -c 5000 /dev/urandom > $s/sub/dir/deep.txt\n"
	"  printf 'in sub\\n' > $s/sub/file\n"
	"  ln -s small.txt $s/fast\n"
	"  ln -s ./././././././././././././././././././././././././././././sub/dir/deep.txt $s/slow\n"
	"  ln -s /sub/dir/deep.txt $s/abs\n"
	"  ln -s nonexistent $s/dangling\n"
	"  ln -s loop2 $s/loop1; ln -s loop1 $s/loop2; ln -s self $s/self\n"
	"  ln -s sub/dir $s/dirlink\n"
	"  ln -s ../.. $s/sub/dir/up\n"
	"  ln -s dir/deep.txt $s/sub/rel\n"
	"  ln -s ../../small.txt $s/sub/dir/rel2\n"
	"  ln -s c1 $s/c0\n"
	"  i=1; while [ $i -lt 40 ]; do ln -s c$((i+1)) $s/c$i; i=$((i+1)); done\n"
	"  ln -s small.txt $s/c40\n"
	"  truncate -s 10M $s/sparse\n"
	"  printf START | dd of=$s/sparse conv=notrunc status=none\n"
	"  printf MIDDLE | dd of=$s/sparse bs=1 seek=4194427 conv=notrunc status=none\n"
	"  printf END | dd of=$s/sparse bs=1 seek=10485750 conv=notrunc status=none\n"
	"  mkfifo $s/fifo\n"
	"  printf 'long\\n' > $s/$(printf 'L%.0s' $(seq 1 255))\n"
	"  printf 'space\\n' > \"$s/with space\"\n"
	"  head -c 1024 /dev/zero | tr '\\0' P > $s/prealloc\n"
	"}\n"
	/* what mke2fs -d cannot do: 32-bit ids, an unwritten extent inside i_size */
	"post() {\n"
	"  debugfs -w -f - $1 >/dev/null 2>&1 <<EOF\n"
	"sif /small.txt uid 123456\n"
	"sif /small.txt gid 654321\n"
	"sif /sub/file mtime_extra 0x12345679\n"
	"fallocate /prealloc 4 11\n"
	"sif /prealloc size $((12 * $2))\n"
	"EOF\n"
	"}\n"
	/* files that need double and triple indirect blocks with 1 KiB blocks */
	"bigfiles() {\n"
	"  head -c 3000000 /dev/urandom > $1/dind\n"
	"  truncate -s 70M $1/tind\n"
	"  printf MID | dd of=$1/tind bs=1 seek=307200 conv=notrunc status=none\n"
	"  printf TAIL | dd of=$1/tind bs=1 seek=$((70*1048576-100)) conv=notrunc status=none\n"
	"}\n"
	/* owners and modes, which mke2fs -d copies from the source tree: one
	 * "path mode uid gid" a line on stdin */
	"owners() {\n"
	"  while read p m u g; do\n"
	"    printf 'sif %s mode %s\\nsif %s uid %s\\nsif %s gid %s\\n' $p $m $p $u $p $g\n"
	"  done | debugfs -w -f - $1 >/dev/null 2>&1\n"
	"}\n"
	"manyfiles() {\n"
	"  mkdir -p $1\n"
	"  python3 -c \"import sys\n"
	"for i in range(int(sys.argv[2])): open('%s/file_%06d_with_a_longer_name' % (sys.argv[1], i), 'w').write(str(i))\" $1 $2\n"
	"}\n";

struct recipe {
	const char *name;
	const char *script; /* $W: work dir (sources in $W/src), $IMG: the image to write */
};

static const struct recipe RECIPES[] = {
	{"base4k", "tree $W/src; mke2fs -q -F -t ext4 -b 4096 -d $W/src $IMG 16M; post $IMG 4096"},
	{"base1k", "tree $W/src; mke2fs -q -F -t ext4 -b 1024 -d $W/src $IMG 16M; post $IMG 1024"},
	{"no64", "tree $W/src; mke2fs -q -F -t ext4 -b 4096 -O ^64bit,^metadata_csum -d $W/src $IMG 16M;"
		 " post $IMG 4096"},
	{"gdtcsum", "tree $W/src; mke2fs -q -F -t ext4 -b 1024 -O ^64bit,^metadata_csum,uninit_bg"
		    " -d $W/src $IMG 16M; post $IMG 1024"},
	{"nocsum64", "tree $W/src; mke2fs -q -F -t ext4 -b 4096 -O 64bit,^metadata_csum -d $W/src $IMG 16M;"
		     " post $IMG 4096"},
	{"csum64", "tree $W/src; mke2fs -q -F -t ext4 -b 4096 -O 64bit,metadata_csum,metadata_csum_seed"
		   " -d $W/src $IMG 16M; post $IMG 4096"},
	{"i128", "tree $W/src; mke2fs -q -F -t ext4 -b 4096 -I 128 -d $W/src $IMG 16M 2>/dev/null;"
		 " post $IMG 4096"},
	{"i1024", "tree $W/src; mke2fs -q -F -t ext4 -b 4096 -I 1024 -d $W/src $IMG 16M; post $IMG 4096"},
	{"bigalloc", "tree $W/src; mke2fs -q -F -t ext4 -b 4096 -O bigalloc -C 16384 -d $W/src $IMG 32M;"
		     " post $IMG 4096"},
	{"b64k", "tree $W/src; manyfiles $W/src/many 300;"
		 " mke2fs -q -F -t ext4 -b 65536 -O ^metadata_csum -d $W/src $IMG 32M 2>/dev/null;"
		 " post $IMG 65536"},
	{"b64kcsum", "tree $W/src; manyfiles $W/src/many 300;"
		     " mke2fs -q -F -t ext4 -b 65536 -d $W/src $IMG 32M 2>/dev/null"},
	{"metabg", "tree $W/src; for i in $(seq 1 40); do mkdir $W/src/g$i; echo $i > $W/src/g$i/f; done;"
		   " mke2fs -q -F -t ext4 -b 1024 -g 512 -N 400 -O meta_bg,^resize_inode -d $W/src $IMG 32M;"
		   " post $IMG 1024"},
	{"ext3", "tree $W/src; bigfiles $W/src; manyfiles $W/src/many 400;"
		 " mke2fs -q -F -t ext3 -b 1024 -d $W/src $IMG 16M; post $IMG 1024;"
		 " e2fsck -fyD $IMG >/dev/null 2>&1 || [ $? -le 1 ]"},
	{"blockmap", "tree $W/src; bigfiles $W/src;"
		     " mke2fs -q -F -t ext4 -b 1024 -O ^extents,^64bit -d $W/src $IMG 16M; post $IMG 1024"},
	{"htree", "mkdir -p $W/src; manyfiles $W/src/big 2600; printf 'x\\n' > $W/src/other;"
		  " mke2fs -q -F -t ext4 -b 1024 -d $W/src $IMG 16M;"
		  " e2fsck -fyD $IMG >/dev/null 2>&1 || [ $? -le 1 ]"},
	{"frag", "mkdir -p $W/src/f; python3 -c \"import os\n"
		 "for i in range(1, 1201): open('$W/src/f/%d' % i, 'wb').write(os.urandom(1000))\";"
		 " mke2fs -q -F -t ext4 -b 1024 -d $W/src $IMG 8M;"
		 " seq 1 2 1200 | sed 's|^|rm /f/|' | debugfs -w -f - $IMG >/dev/null 2>&1;"
		 " head -c 700000 /dev/urandom > $W/src/big;"
		 " debugfs -w -R \"write $W/src/big big\" $IMG >/dev/null 2>&1"},
	{"inline", "mkdir -p $W/src/idir $W/src/bdir; printf tiny > $W/src/t;"
		   " head -c 100 /dev/urandom > $W/src/m100; head -c 150 /dev/urandom > $W/src/m150;"
		   " head -c 5000 /dev/urandom > $W/src/big;"
		   " for i in 1 2 3; do echo $i > $W/src/idir/f$i; done;"
		   " for i in $(seq 1 30); do echo $i > $W/src/bdir/file_name_$i; done;"
		   " ln -s $(printf 'y%.0s' $(seq 1 90)) $W/src/ilink; ln -s t $W/src/fastlink;"
		   " ln -s ../t $W/src/idir/up;"
		   " mke2fs -q -F -t ext4 -O inline_data -b 4096 -d $W/src $IMG 16M;"
		   /* an inline directory using its system.data part too (e2fsprogs never
		    * grows a directory there, the kernel does) */
		   " python3 -c \"import struct\n"
		   "def de(i, n, r): return struct.pack('<IHBB', i, r, len(n), 1) + n + bytes(r - 8 - len(n))\n"
		   "open('$W/ea.bin', 'wb').write(de(0, b'', 12) + de(12, b'xa', 12) + de(13, b'xb_longer', 20))\";"
		   " x=$(debugfs -R 'ls -p /' $IMG 2>/dev/null | awk -F/ '$6==\"big\"{print $2}');"
		   " y=$(debugfs -R 'ls -p /' $IMG 2>/dev/null | awk -F/ '$6==\"t\"{print $2}');"
		   " python3 -c \"import struct\n"
		   "def de(i, n, r): return struct.pack('<IHBB', i, r, len(n), 1) + n + bytes(r - 8 - len(n))\n"
		   "open('$W/ea.bin', 'wb').write(de(0, b'', 12) + de($x, b'xa', 12) + de($y, b'xb_longer', 20))\";"
		   " debugfs -w -R \"ea_set -f $W/ea.bin /idir system.data\" $IMG >/dev/null 2>&1;"
		   " debugfs -w -R 'sif /idir size 104' $IMG >/dev/null 2>&1"},
	{"casefold", "mkdir -p $W/src/ci; printf readme > $W/src/ci/ReadMe.txt; printf x > $W/src/ci/lower;"
		     " mke2fs -q -F -t ext4 -O casefold -E encoding=utf8 -d $W/src $IMG 8M;"
		     " debugfs -w -R 'sif /ci flags 0x40080000' $IMG >/dev/null 2>&1"},
	{"encrypt", "mkdir -p $W/src; printf secret > $W/src/s; printf plain > $W/src/p;"
		    " mke2fs -q -F -t ext4 -O encrypt -d $W/src $IMG 8M;"
		    " debugfs -w -R 'sif /s flags 0x80800' $IMG >/dev/null 2>&1"},
	{"perms", "mkdir -p $W/src/f $W/src/d/closed $W/src/d/xonly $W/src/d/grp $W/src/d/ok;"
		  " for f in owner group other nobody split exec big; do echo $f > $W/src/f/$f; done;"
		  " for d in closed xonly grp; do echo in > $W/src/d/$d/inner; done;"
		  " ln -s ../closed/inner $W/src/d/ok/up; ln -s /d/closed/inner $W/src/d/abs;"
		  " ln -s /closed/inner $W/src/d/rootabs; ln -s d/closed/inner $W/src/link;"
		  " ln -s d/closed $W/src/dirlink;"
		  " mke2fs -q -F -t ext4 -b 1024 -d $W/src $IMG 8M;"
		  " owners $IMG <<EOF\n"
		  "/ 040755 0 0\n"
		  "/f 040755 0 0\n"
		  "/f/owner 0100400 1000 2000\n"
		  "/f/group 0100040 1000 2000\n"
		  "/f/other 0100004 1000 2000\n"
		  "/f/nobody 0100000 1000 2000\n"
		  "/f/split 0100047 1000 2000\n"
		  "/f/exec 0100701 1000 2000\n"
		  "/f/big 0100640 70000 70001\n"
		  "/d 040755 0 0\n"
		  "/d/closed 040600 1000 2000\n"
		  "/d/closed/inner 0100644 1000 2000\n"
		  "/d/xonly 040711 1000 2000\n"
		  "/d/xonly/inner 0100644 1000 2000\n"
		  "/d/grp 040750 1000 2000\n"
		  "/d/grp/inner 0100644 1000 2000\n"
		  "/d/ok 040755 0 0\n"
		  "EOF"},
	{"jdev", "mkdir -p $W/src; mke2fs -q -F -O journal_dev -b 4096 $IMG 8M"},
};

static const struct recipe *find_recipe(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(RECIPES) / sizeof(RECIPES[0]); i++)
		if (strcmp(RECIPES[i].name, name) == 0)
			return &RECIPES[i];
	cr_assert_fail("no recipe %s", name);
	return NULL;
}

struct memdev {
	uint8_t *p;
	uint64_t n;
	uint64_t reads;
};

static int mem_read(void *ctx, uint64_t off, uint32_t len, void *dst)
{
	struct memdev *m = (struct memdev *)ctx;

	if (off > m->n || len > m->n - off)
		return -ERANGE;
	memcpy(dst, m->p + off, len);
	m->reads++;
	return 0;
}

struct img {
	char path[512];   /* the image file */
	char src[512];    /* its source tree */
	struct memdev dev;
	struct gpuos_meta_io io;
	struct gpuos_ext4 *fs;
};

/* Build (once per run) and load image `name`. */
static void img_open(struct img *im, const char *name)
{
	const struct recipe *rc = find_recipe(name);
	const char *d;
	char lock[600], script[700], cmd[1600];
	struct stat st;
	FILE *f;
	int fd;

	need_tools();
	d = run_dir();
	memset(im, 0, sizeof(*im));
	snprintf(im->path, sizeof(im->path), "%s/%s.img", d, name);
	snprintf(im->src, sizeof(im->src), "%s/%s.d/src", d, name);
	if (access(im->path, R_OK) != 0) {
		snprintf(lock, sizeof(lock), "%s/%s.lock", d, name);
		fd = open(lock, O_CREAT | O_RDWR, 0600);
		cr_assert(fd >= 0);
		cr_assert(flock(fd, LOCK_EX) == 0);
		if (access(im->path, R_OK) != 0) {
			snprintf(script, sizeof(script), "%s/%s.sh", d, name);
			f = fopen(script, "w");
			cr_assert(f);
			fprintf(f, "%sW=%s/%s.d\nIMG=%s/%s.tmp\nrm -rf $W $IMG\nmkdir -p $W\n%s\nmv $IMG %s\n",
				PRELUDE, d, name, d, name, rc->script, im->path);
			fclose(f);
			snprintf(cmd, sizeof(cmd), "bash %s > %s/%s.log 2>&1", script, d, name);
			if (system(cmd) != 0) {
				char *log = sh_out("cat %s/%s.log", d, name);

				cr_assert_fail("building image %s failed:\n%s", name, log);
			}
		}
		flock(fd, LOCK_UN);
		close(fd);
	}
	cr_assert(stat(im->path, &st) == 0);
	im->dev.n = (uint64_t)st.st_size;
	im->dev.p = malloc(im->dev.n);
	cr_assert(im->dev.p);
	f = fopen(im->path, "rb");
	cr_assert(f);
	cr_assert(fread(im->dev.p, 1, im->dev.n, f) == im->dev.n);
	fclose(f);
	im->io.read = mem_read;
	im->io.ctx = &im->dev;
	im->io.size = im->dev.n;
	im->fs = calloc(1, sizeof(*im->fs));
	cr_assert(im->fs);
}

static int img_mount(struct img *im, uint32_t flags)
{
	return gpuos_ext4_mount(im->fs, &im->io, flags);
}

/* Build, load and mount; the mount must succeed. */
static void img_mounted(struct img *im, const char *name)
{
	int r;

	img_open(im, name);
	r = img_mount(im, 0);
	cr_assert_eq(r, 0, "mount %s: %d (%s)", name, r, im->fs->why ? im->fs->why : "");
}

static void img_close(struct img *im)
{
	free(im->dev.p);
	free(im->fs);
}

static uint32_t le32_at(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t le16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static char *read_host_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert(f, "open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	cr_assert(buf);
	cr_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static uint64_t data_block(struct img *im, const char *path, uint64_t lblk);
static void put16(struct img *im, uint64_t off, uint16_t v);

/* ---- parser helpers with assertions ------------------------------------------------ */

static uint32_t lookup_ok(struct img *im, const char *path, uint32_t flags,
			  struct gpuos_ext4_inode *in)
{
	int r = gpuos_ext4_lookup_at(im->fs, GPUOS_EXT4_ROOT_INO, GPUOS_EXT4_ROOT_INO, path,
				     flags, in);

	cr_assert_eq(r, 0, "lookup %s: %d (%s)", path, r, im->fs->why ? im->fs->why : "");
	return in->ino;
}

static int lookup_err(struct img *im, const char *path, uint32_t flags)
{
	struct gpuos_ext4_inode in;

	return gpuos_ext4_lookup_at(im->fs, GPUOS_EXT4_ROOT_INO, GPUOS_EXT4_ROOT_INO, path, flags,
				    &in);
}

/* Whole contents of an inode (malloc'd). */
static uint8_t *read_all(struct img *im, const struct gpuos_ext4_inode *in)
{
	uint8_t *buf = malloc(in->size + 1);
	uint64_t off = 0;
	uint32_t got;
	int r;

	cr_assert(buf);
	while (off < in->size) {
		uint32_t chunk = in->size - off > (1u << 20) ? (1u << 20) : (uint32_t)(in->size - off);

		r = gpuos_ext4_read(im->fs, in, off, chunk, buf + off, &got);
		cr_assert_eq(r, 0, "read ino %u at %llu: %d (%s)", in->ino, (unsigned long long)off, r,
			     im->fs->why ? im->fs->why : "");
		cr_assert_eq(got, chunk);
		off += got;
	}
	return buf;
}

/* Compare a file in the image with its source, byte for byte. */
static void check_file(struct img *im, const char *path)
{
	char host[1024];
	struct gpuos_ext4_inode in;
	size_t n;
	char *want;
	uint8_t *got;

	snprintf(host, sizeof(host), "%s%s", im->src, path);
	lookup_ok(im, path, 0, &in);
	want = read_host_file(host, &n);
	cr_assert_eq(in.size, n, "%s: size %llu, source %zu", path, (unsigned long long)in.size, n);
	got = read_all(im, &in);
	cr_assert(memcmp(got, want, n) == 0, "%s: contents differ from the source", path);
	free(got);
	free(want);
}

struct lsent {
	uint32_t ino;
	uint32_t mode;
	uint32_t uid;
	uint32_t gid;
	char name[256];
	int seen;
};

/* debugfs ls -p DIR: /ino/mode/uid/gid/name/size/ per line. */
static struct lsent *debugfs_ls(const char *img, const char *dir, size_t *count)
{
	char *out = dbg(img, "ls -p \"%s\"", dir), *line, *save = NULL;
	struct lsent *v = NULL;
	size_t n = 0;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[7];
		int k = 0;
		char *p = line, *s;

		if (line[0] != '/')
			continue;
		/* fields are separated by '/'; the name has none */
		for (s = p + 1; k < 6; k++) {
			f[k] = s;
			s = strchr(s, '/');
			if (!s)
				break;
			*s++ = '\0';
		}
		if (k < 5)
			continue;
		v = realloc(v, (n + 1) * sizeof(*v));
		cr_assert(v);
		v[n].ino = (uint32_t)strtoul(f[0], NULL, 10);
		if (v[n].ino == 0)
			continue; /* debugfs shows some deleted entries; readdir skips them */
		v[n].mode = (uint32_t)strtoul(f[1], NULL, 8);
		v[n].uid = (uint32_t)strtoul(f[2], NULL, 10);
		v[n].gid = (uint32_t)strtoul(f[3], NULL, 10);
		snprintf(v[n].name, sizeof(v[n].name), "%s", f[4]);
		v[n].seen = 0;
		n++;
	}
	free(out);
	*count = n;
	return v;
}

/* Our readdir of dir against debugfs ls -p, entry for entry; returns the
 * number of entries. */
static size_t check_dir(struct img *im, const char *dir)
{
	struct gpuos_ext4_inode din, in;
	struct gpuos_fs_dirent de;
	uint64_t cookie = 0;
	size_t n, i, got = 0;
	struct lsent *want = debugfs_ls(im->path, dir, &n);
	int r;

	cr_assert(n >= 2, "debugfs ls %s gave %zu entries", dir, n);
	lookup_ok(im, dir, 0, &din);
	for (;;) {
		r = gpuos_ext4_readdir(im->fs, &din, &cookie, &de);
		cr_assert(r >= 0, "readdir %s: %d (%s)", dir, r, im->fs->why ? im->fs->why : "");
		if (r == 0)
			break;
		cr_assert_eq(strlen(de.name), de.name_len);
		for (i = 0; i < n; i++)
			if (!want[i].seen && strcmp(want[i].name, de.name) == 0)
				break;
		cr_assert(i < n, "%s: readdir gave '%s', which debugfs does not list", dir, de.name);
		want[i].seen = 1;
		cr_assert_eq(de.ino, want[i].ino, "%s/%s: ino %u, debugfs %u", dir, de.name, de.ino,
			     want[i].ino);
		r = gpuos_ext4_iget(im->fs, de.ino, &in);
		cr_assert_eq(r, 0, "iget %u: %d (%s)", de.ino, r, im->fs->why ? im->fs->why : "");
		cr_assert_eq(in.mode, want[i].mode, "%s/%s: mode %o, debugfs %o", dir, de.name, in.mode,
			     want[i].mode);
		cr_assert_eq(in.uid, want[i].uid, "%s/%s: uid", dir, de.name);
		cr_assert_eq(in.gid, want[i].gid, "%s/%s: gid", dir, de.name);
		if (im->fs->feature_incompat & GPUOS_EXT4_INCOMPAT_FILETYPE)
			cr_assert_eq(de.type, in.type, "%s/%s: dirent type", dir, de.name);
		got++;
		cr_assert(got <= n, "%s: more entries than debugfs lists", dir);
	}
	for (i = 0; i < n; i++)
		cr_assert(want[i].seen, "%s: '%s' missing from readdir", dir, want[i].name);
	free(want);
	return got;
}

/* Leaf extents from debugfs ex: "L/D e/n lstart - lend pstart - pend len [Uninit]". */
static size_t debugfs_ex(const char *img, const char *path, struct gpuos_fs_extent *v,
			 size_t cap, int *depth)
{
	char *out = dbg(img, "ex \"%s\"", path), *line, *save = NULL;
	size_t n = 0;

	*depth = -1;
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned lv, dp, e, en;
		unsigned long long l0, l1, p0, p1, len;
		char flags[32] = "";
		int k = sscanf(line, " %u/ %u %u/ %u %llu - %llu %llu - %llu %llu %31s", &lv, &dp, &e,
			       &en, &l0, &l1, &p0, &p1, &len, flags);

		if (k < 9 || lv != dp)
			continue;
		*depth = (int)dp;
		cr_assert(n < cap);
		v[n].lblk = l0;
		v[n].pblk = p0;
		v[n].len = (uint32_t)len;
		v[n].flags = strcmp(flags, "Uninit") == 0 ? GPUOS_EXT4_BMAP_UNWRITTEN : 0;
		cr_assert_eq(l1 - l0 + 1, len, "ex line: %s", line);
		n++;
	}
	if (*depth < 0 && strstr(out, "Level Entries")) /* an empty tree */
		*depth = 0;
	free(out);
	return n;
}

/* All extents through the parser, paged with `page` entries per call. */
static size_t our_extents(struct img *im, const struct gpuos_ext4_inode *in,
			  struct gpuos_fs_extent *v, size_t cap, uint32_t page)
{
	uint64_t next = 0;
	size_t n = 0;
	int calls = 0;

	while (next != GPUOS_EXT4_EXTENTS_END) {
		uint32_t got;
		int r;

		cr_assert(n + page <= cap + page);
		r = gpuos_ext4_extents(im->fs, in, next, v + n, (uint32_t)GPUOS_MIN((size_t)page, cap - n),
				       &got, &next);
		cr_assert_eq(r, 0, "extents: %d (%s)", r, im->fs->why ? im->fs->why : "");
		n += got;
		cr_assert(++calls < 100000, "extents paging does not end");
		if (n == cap)
			break;
	}
	return n;
}

static void check_extents(struct img *im, const char *path, int min_depth)
{
	static struct gpuos_fs_extent want[4096], got[4096];
	struct gpuos_ext4_inode in;
	size_t nw, ng, i;
	int depth;

	lookup_ok(im, path, 0, &in);
	cr_assert_eq(in.map, GPUOS_EXT4_MAP_EXTENTS, "%s is not extent-mapped", path);
	nw = debugfs_ex(im->path, path, want, 4096, &depth);
	cr_assert(depth >= min_depth, "%s: depth %d, wanted >= %d", path, depth, min_depth);
	ng = our_extents(im, &in, got, 4096, 4096);
	cr_assert_eq(ng, nw, "%s: %zu extents, debugfs %zu", path, ng, nw);
	for (i = 0; i < nw; i++) {
		cr_assert_eq(got[i].lblk, want[i].lblk, "%s extent %zu lblk", path, i);
		cr_assert_eq(got[i].pblk, want[i].pblk, "%s extent %zu pblk", path, i);
		cr_assert_eq(got[i].len, want[i].len, "%s extent %zu len", path, i);
		cr_assert_eq(got[i].flags, want[i].flags, "%s extent %zu flags", path, i);
	}
	/* paged one at a time: the same list */
	ng = our_extents(im, &in, got, 4096, 1);
	cr_assert_eq(ng, nw);
	for (i = 0; i < nw; i++)
		cr_assert(got[i].lblk == want[i].lblk && got[i].pblk == want[i].pblk &&
			  got[i].len == want[i].len);
}

/* Inode fields against debugfs stat. */
static void check_stat(struct img *im, const char *path)
{
	struct gpuos_ext4_inode in;
	char *out;
	const char *p;

	lookup_ok(im, path, GPUOS_EXT4_LOOKUP_NOFOLLOW, &in);
	out = dbg(im->path, "stat \"%s\"", path);
	cr_assert_eq(in.ino, field(out, "Inode:", 10), "%s: ino", path);
	cr_assert_eq(in.mode & 07777, field(out, "Mode:", 8), "%s: mode", path);
	cr_assert_eq(in.flags, field(out, "Flags:", 16), "%s: flags", path);
	cr_assert_eq(in.uid, field(out, "User:", 10), "%s: uid", path);
	cr_assert_eq(in.gid, field(out, "Group:", 10), "%s: gid", path);
	cr_assert_eq(in.size, field(out, "Size:", 10), "%s: size", path);
	cr_assert_eq(in.links, field(out, "Links:", 10), "%s: links", path);
	cr_assert_eq(in.blocks, field(out, "Blockcount:", 10), "%s: blockcount", path);
	cr_assert_eq(in.generation, field(out, "Generation:", 10), "%s: generation", path);
	/* "mtime: 0xSSSSSSSS:EEEEEEEE" or "mtime: 0xSSSSSSSS" */
	p = strstr(out, "mtime: 0x");
	cr_assert(p);
	{
		uint32_t sec = (uint32_t)strtoul(p + 7, NULL, 16);
		const char *c = p + 17;

		if (*c == ':') {
			uint32_t extra = (uint32_t)strtoul(c + 1, NULL, 16);

			cr_assert_eq(in.mtime, (int64_t)(int32_t)sec + ((int64_t)(extra & 3) << 32));
			cr_assert_eq(in.mtime_ns, extra >> 2);
		} else {
			cr_assert_eq(in.mtime, (int64_t)(int32_t)sec);
		}
	}
	if (strstr(out, "crtime: 0x"))
		cr_assert_eq((uint32_t)in.crtime, (uint32_t)strtoul(strstr(out, "crtime: 0x") + 8, NULL, 16));
	free(out);
}

/* Every directory and file of the source tree against the image. */
static void check_tree_dir(struct img *im, const char *rel)
{
	char host[2048], sub[1024];
	DIR *d;
	struct dirent *e;

	snprintf(host, sizeof(host), "%s%s", im->src, rel);
	check_dir(im, rel[0] ? rel : "/");
	d = opendir(host);
	cr_assert(d, "opendir %s", host);
	while ((e = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", rel, e->d_name);
		snprintf(host, sizeof(host), "%s%s", im->src, sub);
		cr_assert(lstat(host, &st) == 0);
		if (S_ISDIR(st.st_mode)) {
			check_tree_dir(im, sub);
		} else if (S_ISREG(st.st_mode)) {
			if (strcmp(e->d_name, "prealloc") != 0) /* changed after mke2fs */
				check_file(im, sub);
		} else if (S_ISLNK(st.st_mode)) {
			char want[4096], got[4096];
			ssize_t n = readlink(host, want, sizeof(want) - 1);
			struct gpuos_ext4_inode in;
			uint32_t len;
			int r;

			cr_assert(n >= 0);
			want[n] = '\0';
			lookup_ok(im, sub, GPUOS_EXT4_LOOKUP_NOFOLLOW, &in);
			cr_assert_eq(in.type, GPUOS_EXT4_FT_SYMLINK);
			r = gpuos_ext4_readlink(im->fs, &in, got, sizeof(got), &len);
			cr_assert_eq(r, 0, "readlink %s: %d (%s)", sub, r, im->fs->why ? im->fs->why : "");
			cr_assert_str_eq(got, want, "readlink %s", sub);
			cr_assert_eq(len, (uint32_t)n);
		}
	}
	closedir(d);
}

/* What every image made from tree() must show. */
static void check_base_image(const char *name)
{
	struct img im;
	struct gpuos_ext4_inode in, t;
	uint8_t buf[64];
	uint32_t got, run, fl;
	uint64_t pblk;
	uint8_t *data;
	uint64_t i, bs;
	int r;

	img_mounted(&im, name);
	bs = im.fs->block_size;
	check_tree_dir(&im, "");
	check_stat(&im, "/small.txt");
	check_stat(&im, "/sub/file"); /* mtime past 2038, with nanoseconds */
	check_stat(&im, "/sub/dir/deep.txt");
	check_stat(&im, "/sub");
	check_stat(&im, "/slow");
	check_stat(&im, "/fifo");

	/* symlinks of every kind */
	lookup_ok(&im, "/small.txt", 0, &t);
	cr_assert_eq(lookup_ok(&im, "/fast", 0, &in), t.ino);
	cr_assert_eq(lookup_ok(&im, "/c1", 0, &in), t.ino, "40 links are allowed");
	cr_assert_eq(lookup_err(&im, "/c0", 0), -ELOOP, "41 links must give ELOOP");
	cr_assert_eq(lookup_err(&im, "/loop1", 0), -ELOOP);
	cr_assert_eq(lookup_err(&im, "/self", 0), -ELOOP);
	cr_assert_eq(lookup_err(&im, "/dangling", 0), -ENOENT);
	lookup_ok(&im, "/dangling", GPUOS_EXT4_LOOKUP_NOFOLLOW, &in);
	cr_assert_eq(in.type, GPUOS_EXT4_FT_SYMLINK);
	lookup_ok(&im, "/fast", GPUOS_EXT4_LOOKUP_NOFOLLOW, &in);
	cr_assert_eq(in.map, GPUOS_EXT4_MAP_FAST_SYMLINK);
	lookup_ok(&im, "/slow", GPUOS_EXT4_LOOKUP_NOFOLLOW, &in);
	cr_assert(in.size > 60);
	cr_assert(in.map == GPUOS_EXT4_MAP_EXTENTS || in.map == GPUOS_EXT4_MAP_BLOCKMAP);
	lookup_ok(&im, "/sub/dir/deep.txt", 0, &t);
	cr_assert_eq(lookup_ok(&im, "/slow", 0, &in), t.ino);
	cr_assert_eq(lookup_ok(&im, "/abs", 0, &in), t.ino);
	cr_assert_eq(lookup_ok(&im, "/sub/rel", 0, &in), t.ino);
	cr_assert_eq(lookup_ok(&im, "/dirlink/deep.txt", 0, &in), t.ino);
	cr_assert_eq(lookup_ok(&im, "/dirlink/up/sub/dir/deep.txt", 0, &in), t.ino);
	cr_assert_eq(lookup_ok(&im, "/sub/dir/rel2", 0, &in), lookup_ok(&im, "/small.txt", 0, &t));

	/* a file with holes: the contents matched above; the holes map as holes */
	lookup_ok(&im, "/sparse", 0, &in);
	r = gpuos_ext4_bmap(im.fs, &in, (2u << 20) / bs, &pblk, &run, &fl);
	cr_assert_eq(r, 0);
	cr_assert(fl & GPUOS_EXT4_BMAP_HOLE, "2 MiB into /sparse should be a hole");
	cr_assert(in.blocks < (10u << 20) / 512, "/sparse should not be fully allocated");
	r = gpuos_ext4_bmap(im.fs, &in, 0, &pblk, &run, &fl);
	cr_assert(r == 0 && fl == 0 && pblk != 0);
	r = gpuos_ext4_read(im.fs, &in, 0, 5, buf, &got);
	cr_assert(r == 0 && got == 5 && memcmp(buf, "START", 5) == 0);
	r = gpuos_ext4_read(im.fs, &in, in.size - 10, 64, buf, &got);
	cr_assert(r == 0 && got == 10 && memcmp(buf, "END\0\0\0\0\0\0", 10) == 0, "tail read: %d %u", r, got);
	r = gpuos_ext4_read(im.fs, &in, in.size, 64, buf, &got);
	cr_assert(r == 0 && got == 0);
	if (in.map == GPUOS_EXT4_MAP_EXTENTS)
		check_extents(&im, "/sparse", 0);
	if (lookup_ok(&im, "/medium.bin", 0, &in) && in.map == GPUOS_EXT4_MAP_EXTENTS) {
		struct gpuos_fs_extent all[64], mid[64];
		uint32_t na, nm;
		uint64_t next;

		check_extents(&im, "/medium.bin", 0);
		/* listing from inside an extent lists it from there */
		cr_assert_eq(gpuos_ext4_extents(im.fs, &in, 0, all, 64, &na, &next), 0);
		cr_assert(na >= 1 && all[0].len > 2);
		cr_assert_eq(gpuos_ext4_extents(im.fs, &in, all[0].lblk + 2, mid, 64, &nm, &next), 0);
		cr_assert_eq(nm, na);
		cr_assert_eq(mid[0].lblk, all[0].lblk + 2);
		cr_assert_eq(mid[0].pblk, all[0].pblk + 2);
		cr_assert_eq(mid[0].len, all[0].len - 2);
	}

	/* fallocated blocks read as zeros (unwritten extents where there are extents) */
	lookup_ok(&im, "/prealloc", 0, &in);
	cr_assert_eq(in.size, 12 * bs);
	data = read_all(&im, &in);
	for (i = 0; i < in.size; i++)
		cr_assert_eq(data[i], i < 1024 ? 'P' : 0, "/prealloc byte %llu", (unsigned long long)i);
	free(data);
	if (in.map == GPUOS_EXT4_MAP_EXTENTS) {
		r = gpuos_ext4_bmap(im.fs, &in, 5, &pblk, &run, &fl);
		cr_assert(r == 0 && fl == GPUOS_EXT4_BMAP_UNWRITTEN && pblk != 0,
			  "block 5 of /prealloc should be unwritten: %d flags %u", r, fl);
		cr_assert_eq(run, 7);
		r = gpuos_ext4_bmap(im.fs, &in, 2, &pblk, &run, &fl);
		cr_assert(r == 0 && fl == GPUOS_EXT4_BMAP_HOLE && run == 2);
		check_extents(&im, "/prealloc", 0);
	}

	/* a fifo has no data */
	lookup_ok(&im, "/fifo", 0, &in);
	cr_assert_eq(in.type, GPUOS_EXT4_FT_FIFO);
	cr_assert_eq(in.map, GPUOS_EXT4_MAP_NONE);
	img_close(&im);
}

/* ---- images of every kind ---------------------------------------------------------- */

Test(ext4, default_features_4k, .timeout = 60) { check_base_image("base4k"); }
Test(ext4, blocks_1k, .timeout = 60) { check_base_image("base1k"); }
Test(ext4, no_64bit_no_csum, .timeout = 60) { check_base_image("no64"); }
Test(ext4, gdt_csum_crc16, .timeout = 60) { check_base_image("gdtcsum"); }
Test(ext4, bit64_no_csum, .timeout = 60) { check_base_image("nocsum64"); }
Test(ext4, bit64_csum_seed, .timeout = 60) { check_base_image("csum64"); }
Test(ext4, inode_128, .timeout = 60) { check_base_image("i128"); }
Test(ext4, inode_1024, .timeout = 60) { check_base_image("i1024"); }
Test(ext4, bigalloc, .timeout = 60) { check_base_image("bigalloc"); }
Test(ext4, blocks_64k, .timeout = 60)
{
	struct img im;

	check_base_image("b64k");
	img_mounted(&im, "b64k");
	cr_assert_eq(im.fs->block_size, 65536);
	cr_assert_eq(check_dir(&im, "/many"), 302);
	{
		/* rec_len 65536 does not fit in 16 bits: 0 (and 65535) stand for it */
		struct gpuos_ext4_inode in;
		struct gpuos_fs_dirent de;
		uint64_t off = data_block(&im, "/emptydir", 0) * 65536, cookie = 0;

		cr_assert_eq(im.dev.p[off + 4] | im.dev.p[off + 5] << 8, 12);
		put16(&im, off + 4, 0); /* "." now spans the block, hiding ".." */
		lookup_ok(&im, "/emptydir", 0, &in);
		cr_assert_eq(gpuos_ext4_readdir(im.fs, &in, &cookie, &de), 1);
		cr_assert_str_eq(de.name, ".");
		cr_assert_eq(gpuos_ext4_readdir(im.fs, &in, &cookie, &de), 0, "%s", im.fs->why ? im.fs->why : "");
		put16(&im, off + 4, 65535);
		cookie = 0;
		cr_assert_eq(gpuos_ext4_readdir(im.fs, &in, &cookie, &de), 1);
		cr_assert_eq(gpuos_ext4_readdir(im.fs, &in, &cookie, &de), 0);
	}
	img_close(&im);
}
Test(ext4, blocks_64k_csum, .timeout = 60)
{
	struct img im;

	img_mounted(&im, "b64kcsum");
	cr_assert_eq(check_dir(&im, "/many"), 302);
	check_file(&im, "/medium.bin");
	img_close(&im);
}

Test(ext4, meta_bg, .timeout = 60)
{
	struct img im;
	char *out;
	int i, far = 0;

	check_base_image("metabg");
	img_mounted(&im, "metabg");
	cr_assert(im.fs->feature_incompat & GPUOS_EXT4_INCOMPAT_META_BG);
	/* descriptors of groups past the first meta group are found through meta_bg */
	for (i = 1; i <= 40; i++) {
		char p[64];
		struct gpuos_ext4_inode in;

		snprintf(p, sizeof(p), "/g%d/f", i);
		check_file(&im, p);
		lookup_ok(&im, p, 0, &in);
		if ((in.ino - 1) / im.fs->inodes_per_group >= im.fs->block_size / im.fs->desc_size)
			far++;
	}
	out = dbg(im.path, "stats");
	cr_assert(strstr(out, "meta_bg"));
	free(out);
	cr_assert(far > 0, "no file in a group past the first meta group: the test proves nothing");
	img_close(&im);
}

Test(ext4, ext3_blockmap_htree, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in;

	check_base_image("ext3");
	img_mounted(&im, "ext3");
	cr_assert(!(im.fs->feature_incompat & GPUOS_EXT4_INCOMPAT_EXTENTS));
	lookup_ok(&im, "/many", 0, &in);
	cr_assert(in.flags & GPUOS_EXT4_IFL_INDEX, "/many should be an htree directory");
	cr_assert_eq(in.map, GPUOS_EXT4_MAP_BLOCKMAP);
	cr_assert_eq(check_dir(&im, "/many"), 402);
	check_file(&im, "/dind");
	img_close(&im);
}

/* Data runs of a block-mapped file from debugfs stat: "(0-11):1623-1634, (IND):1635, ...". */
static size_t debugfs_blockmap(const char *img, const char *path, struct gpuos_fs_extent *v,
			       size_t cap, int *tind)
{
	char *out = dbg(img, "stat \"%s\"", path);
	char *p = strstr(out, "BLOCKS:");
	size_t n = 0;

	cr_assert(p, "no BLOCKS in stat %s", path);
	*tind = strstr(p, "(TIND)") != NULL;
	while ((p = strchr(p, '(')) != NULL) {
		unsigned long long l0, l1, p0, p1;

		p++;
		if (sscanf(p, "%llu-%llu):%llu-%llu", &l0, &l1, &p0, &p1) == 4) {
		} else if (sscanf(p, "%llu):%llu", &l0, &p0) == 2) {
			l1 = l0;
			p1 = p0;
		} else {
			continue; /* (IND), (DIND), (TIND) */
		}
		cr_assert(n < cap);
		cr_assert_eq(p1 - p0, l1 - l0);
		if (n > 0 && v[n - 1].lblk + v[n - 1].len == l0 && v[n - 1].pblk + v[n - 1].len == p0) {
			v[n - 1].len += (uint32_t)(l1 - l0 + 1);
			continue;
		}
		v[n].lblk = l0;
		v[n].pblk = p0;
		v[n].len = (uint32_t)(l1 - l0 + 1);
		v[n].flags = 0;
		n++;
	}
	free(out);
	return n;
}

static void check_blockmap_file(struct img *im, const char *path, int want_tind)
{
	static struct gpuos_fs_extent want[8192], got[8192];
	struct gpuos_ext4_inode in;
	size_t nw, ng, i;
	int tind;
	char cmd[600];
	FILE *f;
	char *out, *line, *save = NULL;
	uint64_t lblk[64];
	int ns = 0;

	lookup_ok(im, path, 0, &in);
	cr_assert_eq(in.map, GPUOS_EXT4_MAP_BLOCKMAP);
	nw = debugfs_blockmap(im->path, path, want, 8192, &tind);
	cr_assert_eq(tind, want_tind, "%s: triple indirect block %s", path, want_tind ? "expected" : "unexpected");
	ng = our_extents(im, &in, got, 8192, 8192);
	cr_assert_eq(ng, nw, "%s: %zu runs, debugfs %zu", path, ng, nw);
	for (i = 0; i < nw; i++)
		cr_assert(got[i].lblk == want[i].lblk && got[i].pblk == want[i].pblk &&
			  got[i].len == want[i].len && got[i].flags == 0,
			  "%s run %zu: ours %llu+%u@%llu, debugfs %llu+%u@%llu", path, i,
			  (unsigned long long)got[i].lblk, got[i].len, (unsigned long long)got[i].pblk,
			  (unsigned long long)want[i].lblk, want[i].len, (unsigned long long)want[i].pblk);

	/* single blocks through debugfs bmap: mapped ones, holes, level edges */
	snprintf(cmd, sizeof(cmd), "%s.bmap", im->path);
	f = fopen(cmd, "w");
	cr_assert(f);
	{
		uint64_t n = im->fs->block_size / 4, pts[] = {0, 11, 12, 13, 12 + n - 1, 12 + n, 12 + n + 1,
			12 + n + n * n - 1, 12 + n + n * n, 12 + n + n * n + 5, 299, 300, 301, 2929,
			(in.size - 1) / im->fs->block_size, (in.size - 1) / im->fs->block_size - 1};

		for (i = 0; i < sizeof(pts) / sizeof(pts[0]); i++) {
			lblk[ns++] = pts[i];
			fprintf(f, "bmap %s %llu\n", path, (unsigned long long)pts[i]);
		}
	}
	fclose(f);
	out = sh_out("debugfs -f '%s' '%s' 2>/dev/null", cmd, im->path);
	i = 0;
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t pb;
		uint32_t run, fl;
		int r;

		if (strncmp(line, "debugfs:", 8) == 0)
			continue;
		cr_assert(i < (size_t)ns);
		r = gpuos_ext4_bmap(im->fs, &in, lblk[i], &pb, &run, &fl);
		cr_assert_eq(r, 0);
		cr_assert_eq(pb, strtoull(line, NULL, 10), "%s bmap %llu: ours %llu, debugfs %s", path,
			     (unsigned long long)lblk[i], (unsigned long long)pb, line);
		cr_assert_eq(fl, pb ? 0u : GPUOS_EXT4_BMAP_HOLE);
		i++;
	}
	cr_assert_eq(i, (size_t)ns, "debugfs bmap answered %zu of %d", i, ns);
	free(out);
	check_file(im, path);
}

Test(ext4, blockmap_indirect, .timeout = 60)
{
	struct img im;

	check_base_image("blockmap");
	img_mounted(&im, "blockmap");
	check_blockmap_file(&im, "/dind", 0);
	check_blockmap_file(&im, "/tind", 1);
	check_blockmap_file(&im, "/medium.bin", 0);
	img_close(&im);
	img_mounted(&im, "ext3");
	check_blockmap_file(&im, "/tind", 1);
	img_close(&im);
}

Test(ext4, htree_directory, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in;
	char *out;
	const char *names[] = {"/big/file_000000_with_a_longer_name", "/big/file_001299_with_a_longer_name",
			       "/big/file_002599_with_a_longer_name"};
	size_t i;

	img_mounted(&im, "htree");
	lookup_ok(&im, "/big", 0, &in);
	cr_assert(in.flags & GPUOS_EXT4_IFL_INDEX, "/big should be an htree directory");
	out = dbg(im.path, "htree /big");
	cr_assert(field(out, "Indirect levels:", 10) >= 1, "want dx nodes below the root");
	free(out);
	cr_assert_eq(check_dir(&im, "/big"), 2602);
	for (i = 0; i < 3; i++)
		check_file(&im, names[i]);
	cr_assert_eq(lookup_err(&im, "/big/file_002600_with_a_longer_name", 0), -ENOENT);
	check_file(&im, "/other");
	img_close(&im);
}

Test(ext4, fragmented_deep_extent_tree, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in;
	uint64_t pb;
	uint32_t run, fl;

	img_mounted(&im, "frag");
	check_extents(&im, "/big", 2);
	check_file(&im, "/big");
	lookup_ok(&im, "/big", 0, &in);
	cr_assert_eq(gpuos_ext4_bmap(im.fs, &in, 1u << 20, &pb, &run, &fl), 0);
	cr_assert_eq(fl, GPUOS_EXT4_BMAP_HOLE, "past the end is a hole");
	cr_assert_eq(gpuos_ext4_bmap(im.fs, &in, 1ull << 32, &pb, &run, &fl), -EOVERFLOW);
	cr_assert_eq(check_dir(&im, "/f"), 602);
	img_close(&im);
}

Test(ext4, inline_data, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in;
	size_t n;

	img_mounted(&im, "inline");
	lookup_ok(&im, "/t", 0, &in);
	cr_assert_eq(in.map, GPUOS_EXT4_MAP_INLINE);
	lookup_ok(&im, "/m100", 0, &in);
	cr_assert_eq(in.map, GPUOS_EXT4_MAP_INLINE);
	cr_assert_eq(in.inline_len, 40, "100 bytes need the system.data part");
	cr_assert_eq(gpuos_ext4_bmap(im.fs, &in, 0, &(uint64_t){0}, &(uint32_t){0}, &(uint32_t){0}),
		     -EOPNOTSUPP);
	check_file(&im, "/t");
	check_file(&im, "/m100");
	check_file(&im, "/m150");
	check_file(&im, "/big");
	check_file(&im, "/bdir/file_name_7");
	check_file(&im, "/idir/f2");
	check_stat(&im, "/t");
	check_stat(&im, "/ilink");
	lookup_ok(&im, "/idir", 0, &in);
	cr_assert_eq(in.map, GPUOS_EXT4_MAP_INLINE);
	cr_assert_eq(in.inline_len, 44);
	n = check_dir(&im, "/idir"); /* ., .., f1..f3, up, xa, xb_longer */
	cr_assert_eq(n, 8);
	cr_assert_eq(lookup_ok(&im, "/idir/xa", 0, &in), lookup_ok(&im, "/big", 0, &in));
	cr_assert_eq(lookup_ok(&im, "/idir/xb_longer", 0, &in), lookup_ok(&im, "/t", 0, &in));
	cr_assert_eq(lookup_ok(&im, "/idir/up", 0, &in), lookup_ok(&im, "/t", 0, &in));
	cr_assert_eq(lookup_err(&im, "/idir/../idir/./f1/", 0), -ENOTDIR);
	cr_assert_eq(lookup_ok(&im, "/idir/../idir/./f1", 0, &in), lookup_ok(&im, "/idir/f1", 0, &in));
	check_dir(&im, "/");
	check_dir(&im, "/bdir");
	lookup_ok(&im, "/ilink", GPUOS_EXT4_LOOKUP_NOFOLLOW, &in);
	cr_assert_eq(in.map, GPUOS_EXT4_MAP_INLINE);
	{
		char buf[128];
		uint32_t len;

		cr_assert_eq(gpuos_ext4_readlink(im.fs, &in, buf, sizeof(buf), &len), 0);
		cr_assert_eq(len, 90);
		cr_assert(strspn(buf, "y") == 90);
		cr_assert_eq(gpuos_ext4_readlink(im.fs, &in, buf, 90, &len), -ERANGE);
	}
	img_close(&im);
}

Test(ext4, path_edge_cases, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in, sub, small;
	char longp[5000], longname[300];
	int r;

	img_mounted(&im, "base4k");
	lookup_ok(&im, "/small.txt", 0, &small);
	lookup_ok(&im, "/sub", 0, &sub);
	cr_assert_eq(lookup_ok(&im, "/", 0, &in), GPUOS_EXT4_ROOT_INO);
	cr_assert_eq(lookup_ok(&im, "//", 0, &in), GPUOS_EXT4_ROOT_INO);
	cr_assert_eq(lookup_ok(&im, "/.", 0, &in), GPUOS_EXT4_ROOT_INO);
	cr_assert_eq(lookup_ok(&im, "/..", 0, &in), GPUOS_EXT4_ROOT_INO);
	cr_assert_eq(lookup_ok(&im, "/../../small.txt", 0, &in), small.ino);
	lookup_ok(&im, "/sub/file", 0, &sub);
	cr_assert_eq(lookup_ok(&im, "//sub///dir//..//file", 0, &in), sub.ino);
	cr_assert_eq(lookup_ok(&im, "/sub/dir/../../small.txt", 0, &in), small.ino);
	cr_assert_eq(lookup_ok(&im, "/sub/", 0, &in), lookup_ok(&im, "/sub", 0, &sub));
	cr_assert_eq(lookup_ok(&im, "/sub/.", 0, &in), sub.ino);
	cr_assert_eq(lookup_err(&im, "/small.txt/", 0), -ENOTDIR);
	cr_assert_eq(lookup_err(&im, "/small.txt/.", 0), -ENOTDIR);
	cr_assert_eq(lookup_err(&im, "/small.txt/..", 0), -ENOTDIR);
	cr_assert_eq(lookup_err(&im, "/small.txt/x", 0), -ENOTDIR);
	cr_assert_eq(lookup_err(&im, "/fast/", 0), -ENOTDIR, "a trailing slash follows the link to a file");
	cr_assert_eq(lookup_err(&im, "/fast/", GPUOS_EXT4_LOOKUP_NOFOLLOW), -ENOTDIR);
	lookup_ok(&im, "/dirlink/", GPUOS_EXT4_LOOKUP_NOFOLLOW, &in);
	cr_assert_eq(in.type, GPUOS_EXT4_FT_DIR, "a trailing slash follows a link even with NOFOLLOW");
	lookup_ok(&im, "/dirlink", GPUOS_EXT4_LOOKUP_NOFOLLOW, &in);
	cr_assert_eq(in.type, GPUOS_EXT4_FT_SYMLINK);
	cr_assert_eq(lookup_err(&im, "", 0), -ENOENT);
	cr_assert_eq(lookup_err(&im, "/nonexistent", 0), -ENOENT);
	cr_assert_eq(lookup_err(&im, "/nonexistent/x", 0), -ENOENT);
	cr_assert_eq(lookup_err(&im, "/empty/x", 0), -ENOTDIR);

	memset(longname, 'L', 255);
	longname[255] = '\0';
	snprintf(longp, sizeof(longp), "/%s", longname);
	check_file(&im, longp);
	snprintf(longp, sizeof(longp), "/%sL", longname);
	cr_assert_eq(lookup_err(&im, longp, 0), -ENAMETOOLONG);
	memset(longp, '/', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	cr_assert_eq(lookup_err(&im, longp, 0), -ENAMETOOLONG);
	check_file(&im, "/with space");

	/* relative paths from a directory; root as a jail */
	lookup_ok(&im, "/sub", 0, &sub);
	r = gpuos_ext4_lookup_at(im.fs, GPUOS_EXT4_ROOT_INO, sub.ino, "dir/../file", 0, &in);
	cr_assert_eq(r, 0);
	cr_assert_eq(in.ino, lookup_ok(&im, "/sub/file", 0, &small));
	r = gpuos_ext4_lookup_at(im.fs, sub.ino, sub.ino, "../../small.txt", 0, &in);
	cr_assert_eq(r, -ENOENT, "'..' must stop at the root given");
	r = gpuos_ext4_lookup_at(im.fs, sub.ino, sub.ino, "/dir/up/dir/up/file", 0, &in);
	cr_assert_eq(r, 0, "a symlink to ../.. stays inside the root given: %d", r);
	cr_assert_eq(in.ino, small.ino);
	r = gpuos_ext4_lookup_at(im.fs, sub.ino, sub.ino, "/rel", 0, &in);
	cr_assert_eq(r, 0);
	r = gpuos_ext4_lookup_at(im.fs, sub.ino, sub.ino, "/dir/rel2", 0, &in);
	cr_assert_eq(r, -ENOENT, "../../small.txt from inside the root is not there");
	r = gpuos_ext4_lookup_at(im.fs, GPUOS_EXT4_ROOT_INO, lookup_ok(&im, "/small.txt", 0, &small),
				 "x", 0, &in);
	cr_assert_eq(r, -ENOTDIR);

	/* plain lookup */
	{
		uint32_t ino = 0;

		cr_assert_eq(gpuos_ext4_lookup(im.fs, "/c1", &ino), 0);
		cr_assert_eq(ino, lookup_ok(&im, "/small.txt", 0, &small));
	}
	img_close(&im);
}

Test(ext4, casefold_and_encrypt_features, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in;
	uint8_t buf[16];
	uint32_t got;

	img_mounted(&im, "casefold");
	cr_assert(im.fs->feature_incompat & GPUOS_EXT4_INCOMPAT_CASEFOLD);
	cr_assert_eq(lookup_ok(&im, "/ci/README.TXT", 0, &in), lookup_ok(&im, "/ci/ReadMe.txt", 0, &in));
	cr_assert_eq(lookup_ok(&im, "/ci/LOWER", 0, &in), lookup_ok(&im, "/ci/lower", 0, &in));
	cr_assert_eq(lookup_err(&im, "/CI", 0), -ENOENT, "the root is not casefolded");
	img_close(&im);

	img_mounted(&im, "encrypt");
	check_file(&im, "/p");
	lookup_ok(&im, "/s", 0, &in);
	cr_assert(in.flags & GPUOS_EXT4_IFL_ENCRYPT);
	cr_assert_eq(gpuos_ext4_read(im.fs, &in, 0, 6, buf, &got), -EOPNOTSUPP);
	cr_assert(strstr(im.fs->why, "encrypted"));
	img_close(&im);
}

Test(ext4, journal_device_refused, .timeout = 60)
{
	struct img im;

	img_open(&im, "jdev");
	cr_assert_eq(img_mount(&im, 0), -EOPNOTSUPP);
	cr_assert(strstr(im.fs->why, "journal_dev"), "why: %s", im.fs->why);
	img_close(&im);
}

/* ---- permissions ---------------------------------------------------------------------- */

/* Credentials of a client: uid, gid, then ngroups supplementary groups. */
static struct gpuos_rt_client client(uint32_t uid, uint32_t gid, uint32_t ngroups, ...)
{
	struct gpuos_rt_client c;
	va_list ap;
	uint32_t i;

	memset(&c, 0, sizeof(c));
	c.flags = GPUOS_RT_CLIENT_PERMS;
	c.uid = uid;
	c.gid = gid;
	c.ngroups = ngroups;
	va_start(ap, ngroups);
	for (i = 0; i < ngroups && i < GPUOS_RT_CLIENT_GROUPS; i++)
		c.groups[i] = va_arg(ap, uint32_t);
	va_end(ap);
	return c;
}

/* The inode at path, checked to have the owner and mode the recipe gave it
 * (debugfs sif fails silently). */
static void perm_inode(struct img *im, const char *path, uint32_t mode, uint32_t uid, uint32_t gid,
		       struct gpuos_ext4_inode *in)
{
	lookup_ok(im, path, GPUOS_EXT4_LOOKUP_NOFOLLOW, in);
	cr_assert_eq(in->mode, mode, "%s: mode %o, the recipe says %o", path, in->mode, mode);
	cr_assert_eq(in->uid, uid, "%s: uid %u, the recipe says %u", path, in->uid, uid);
	cr_assert_eq(in->gid, gid, "%s: gid %u, the recipe says %u", path, in->gid, gid);
}

/* Short names for the tests' many checks. */
enum { MAY_R = GPUOS_EXT4_MAY_READ, MAY_W = GPUOS_EXT4_MAY_WRITE, MAY_X = GPUOS_EXT4_MAY_EXEC };

static int lookup_as(struct img *im, uint32_t root, const char *path, uint32_t flags,
		     const struct gpuos_rt_client *cred)
{
	struct gpuos_ext4_inode in;

	return gpuos_ext4_lookup_as(im->fs, root, root, path, flags, cred, &in);
}

Test(ext4, perm_owner_group_other_bits, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in;
	struct gpuos_rt_client owner = client(1000, 1, 0), group = client(3000, 2000, 0),
			       other = client(3000, 3000, 0);

	img_mounted(&im, "perms");
	perm_inode(&im, "/f/owner", 0100400, 1000, 2000, &in);
	cr_assert_eq(gpuos_ext4_permission(&in, &owner, MAY_R), 0);
	cr_assert_eq(gpuos_ext4_permission(&in, &owner, MAY_W), -EACCES);
	cr_assert_eq(gpuos_ext4_permission(&in, &owner, MAY_X), -EACCES);
	cr_assert_eq(gpuos_ext4_permission(&in, &owner, MAY_R | MAY_W), -EACCES, "all of want, not any");
	cr_assert_eq(gpuos_ext4_permission(&in, &group, MAY_R), -EACCES);
	cr_assert_eq(gpuos_ext4_permission(&in, &other, MAY_R), -EACCES);

	perm_inode(&im, "/f/group", 0100040, 1000, 2000, &in);
	cr_assert_eq(gpuos_ext4_permission(&in, &owner, MAY_R), -EACCES);
	cr_assert_eq(gpuos_ext4_permission(&in, &group, MAY_R), 0);
	cr_assert_eq(gpuos_ext4_permission(&in, &group, MAY_W), -EACCES);
	cr_assert_eq(gpuos_ext4_permission(&in, &other, MAY_R), -EACCES);

	perm_inode(&im, "/f/other", 0100004, 1000, 2000, &in);
	cr_assert_eq(gpuos_ext4_permission(&in, &owner, MAY_R), -EACCES, "the owner's bits, not the others'");
	cr_assert_eq(gpuos_ext4_permission(&in, &group, MAY_R), -EACCES, "the group's bits, not the others'");
	cr_assert_eq(gpuos_ext4_permission(&in, &other, MAY_R), 0);
	cr_assert_eq(gpuos_ext4_permission(&in, &other, MAY_X), -EACCES);

	perm_inode(&im, "/f/nobody", 0100000, 1000, 2000, &in);
	cr_assert_eq(gpuos_ext4_permission(&in, &owner, MAY_R), -EACCES);
	cr_assert_eq(gpuos_ext4_permission(&in, &owner, 0), 0, "nothing wanted, nothing refused");

	/* ---rwxrwx: the first class that matches decides */
	perm_inode(&im, "/f/split", 0100047, 1000, 2000, &in);
	cr_assert_eq(gpuos_ext4_permission(&in, &owner, MAY_R), -EACCES);
	cr_assert_eq(gpuos_ext4_permission(&in, &group, MAY_R), 0);
	cr_assert_eq(gpuos_ext4_permission(&in, &group, MAY_X), -EACCES);
	cr_assert_eq(gpuos_ext4_permission(&in, &other, MAY_R | MAY_W | MAY_X), 0);

	/* directories: x is search, r is listing */
	perm_inode(&im, "/d/xonly", 040711, 1000, 2000, &in);
	cr_assert_eq(gpuos_ext4_permission(&in, &other, MAY_X), 0);
	cr_assert_eq(gpuos_ext4_permission(&in, &other, MAY_R), -EACCES);
	cr_assert_eq(gpuos_ext4_permission(&in, &owner, MAY_R | MAY_W | MAY_X), 0);
	img_close(&im);
}

Test(ext4, perm_supplementary_groups, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in;
	struct gpuos_rt_client c;

	img_mounted(&im, "perms");
	perm_inode(&im, "/f/group", 0100040, 1000, 2000, &in);
	c = client(3000, 3000, 3, 10u, 11u, 2000u);
	cr_assert_eq(gpuos_ext4_permission(&in, &c, MAY_R), 0, "the last of three groups");
	c.ngroups = 2;
	cr_assert_eq(gpuos_ext4_permission(&in, &c, MAY_R), -EACCES, "groups past ngroups do not count");
	c = client(3000, 3000, 0);
	c.ngroups = 1000;
	c.groups[GPUOS_RT_CLIENT_GROUPS - 1] = 2000;
	cr_assert_eq(gpuos_ext4_permission(&in, &c, MAY_R), 0, "an ngroups past the table reads 16 of them");

	/* a group member that is also the owner gets the owner's bits */
	perm_inode(&im, "/f/split", 0100047, 1000, 2000, &in);
	c = client(1000, 2000, 1, 2000u);
	cr_assert_eq(gpuos_ext4_permission(&in, &c, MAY_R), -EACCES);
	c = client(3000, 3000, 1, 2000u);
	cr_assert_eq(gpuos_ext4_permission(&in, &c, MAY_X), -EACCES, "the group's bits, not the others'");

	/* a directory searchable through a supplementary group only */
	perm_inode(&im, "/d/grp", 040750, 1000, 2000, &in);
	c = client(3000, 3000, 1, 2000u);
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/grp/inner", 0, &c), 0);
	c = client(3000, 3000, 1, 2001u);
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/grp/inner", 0, &c), -EACCES);
	img_close(&im);
}

Test(ext4, perm_root, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in;
	struct gpuos_rt_client root = client(0, 0, 0), user = client(3000, 3000, 0);

	img_mounted(&im, "perms");
	perm_inode(&im, "/f/nobody", 0100000, 1000, 2000, &in);
	cr_assert_eq(gpuos_ext4_permission(&in, &root, MAY_R | MAY_W), 0);
	cr_assert_eq(gpuos_ext4_permission(&in, &root, MAY_X), -EACCES, "no x bit: root may not execute");
	perm_inode(&im, "/f/exec", 0100701, 1000, 2000, &in);
	cr_assert_eq(gpuos_ext4_permission(&in, &root, MAY_X), 0, "some x bit: root may execute");
	cr_assert_eq(gpuos_ext4_permission(&in, &user, MAY_X), 0);
	perm_inode(&im, "/d/closed", 040600, 1000, 2000, &in);
	cr_assert_eq(gpuos_ext4_permission(&in, &root, MAY_R | MAY_X), 0, "root searches any directory");
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/closed/inner", 0, &root), 0);
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/link", 0, &root), 0);
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/closed/inner", 0, &user), -EACCES);
	img_close(&im);
}

Test(ext4, perm_uid_gid_32bit, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in;
	struct gpuos_rt_client c;

	img_mounted(&im, "perms");
	/* 70000 = 0x11170: 0x1170 in i_uid, 1 in l_i_uid_high */
	perm_inode(&im, "/f/big", 0100640, 70000, 70001, &in);
	c = client(70000, 5, 0);
	cr_assert_eq(gpuos_ext4_permission(&in, &c, MAY_R | MAY_W), 0);
	c = client(70000 & 0xffffu, 5, 0);
	cr_assert_eq(gpuos_ext4_permission(&in, &c, MAY_R), -EACCES, "the low half alone is another user");
	c = client(5, 70001, 0);
	cr_assert_eq(gpuos_ext4_permission(&in, &c, MAY_R), 0);
	cr_assert_eq(gpuos_ext4_permission(&in, &c, MAY_W), -EACCES);
	c = client(5, 70001 & 0xffffu, 1, 70001u & 0xffffu);
	cr_assert_eq(gpuos_ext4_permission(&in, &c, MAY_R), -EACCES, "the low half alone is another group");
	c = client(5, 5, 1, 70001u);
	cr_assert_eq(gpuos_ext4_permission(&in, &c, MAY_R), 0);
	img_close(&im);
}

Test(ext4, perm_lookup_search_denied, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in, closed;
	struct gpuos_rt_client owner = client(1000, 2000, 0), other = client(3000, 3000, 0);

	img_mounted(&im, "perms");
	perm_inode(&im, "/d/closed", 040600, 1000, 2000, &closed);
	/* rw- on a directory: its owner may not search it either */
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/closed/inner", 0, &owner), -EACCES);
	cr_assert_eq(im.fs->bad, closed.ino, "the directory refused");
	cr_assert(im.fs->why && strstr(im.fs->why, "permission denied"));
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/closed/inner", 0, &other), -EACCES);
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/closed/nonexistent", 0, &other), -EACCES,
		     "refused before the name is looked for");
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/closed/.", 0, &other), -EACCES);
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/closed/..", 0, &other), -EACCES);
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/closed/../ok", 0, &other), -EACCES);
	/* the last component needs no permission of its own (stat) */
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/closed", 0, &other), 0);
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/closed/", 0, &other), 0);
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/f/nobody", 0, &other), 0);
	/* search without read */
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/xonly/inner", 0, &other), 0);
	/* relative paths start at the directory given, and it is searched */
	cr_assert_eq(gpuos_ext4_lookup_as(im.fs, GPUOS_EXT4_ROOT_INO, closed.ino, "inner", 0, &other, &in),
		     -EACCES);
	cr_assert_eq(gpuos_ext4_lookup_as(im.fs, GPUOS_EXT4_ROOT_INO, closed.ino, "inner", 0, NULL, &in), 0);
	/* the same file system, other credentials: nothing sticks between calls */
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/grp/inner", 0, &owner), 0);
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/grp/inner", 0, &other), -EACCES);
	img_close(&im);
}

Test(ext4, perm_lookup_through_symlinks, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in, d;
	struct gpuos_rt_client other = client(3000, 3000, 0), root = client(0, 0, 0);

	img_mounted(&im, "perms");
	/* each link's own directory is searchable; its target's is not */
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/link", 0, &other), -EACCES, "relative");
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/ok/up", 0, &other), -EACCES, "relative, ..");
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/abs", 0, &other), -EACCES, "absolute");
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/dirlink/inner", 0, &other), -EACCES,
		     "through a link to the directory");
	/* a link that is not followed, or that ends at the closed directory itself */
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/link", GPUOS_EXT4_LOOKUP_NOFOLLOW, &other), 0);
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/dirlink", 0, &other), 0);
	cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, "/d/ok/up", 0, &root), 0);

	/* --root: absolute targets start at the root given, and are checked there */
	perm_inode(&im, "/d", 040755, 0, 0, &d);
	cr_assert_eq(lookup_as(&im, d.ino, "/rootabs", 0, &other), -EACCES);
	cr_assert_eq(lookup_as(&im, d.ino, "/rootabs", 0, &root), 0);
	cr_assert_eq(lookup_as(&im, d.ino, "/rootabs", 0, NULL), 0);
	cr_assert_eq(lookup_as(&im, d.ino, "/ok/up", 0, &other), -EACCES);
	cr_assert_eq(lookup_as(&im, d.ino, "/xonly/../../xonly/inner", 0, &other), 0, "'..' stops at root");
	cr_assert_eq(gpuos_ext4_lookup_as(im.fs, d.ino, d.ino, "/abs", 0, &root, &in), -ENOENT,
		     "/d/closed/inner is not inside root /d: checks do not change what is found");
	img_close(&im);
}

Test(ext4, perm_null_cred_allows_all, .timeout = 60)
{
	static const char *const paths[] = {"/d/closed/inner", "/d/closed/.", "/d/closed/..", "/link",
					    "/d/ok/up", "/d/abs", "/dirlink/inner", "/d/grp/inner"};
	struct img im;
	struct gpuos_ext4_inode in, got;
	struct gpuos_rt_client off = client(3000, 3000, 0);
	size_t i;

	img_mounted(&im, "perms");
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		lookup_ok(&im, paths[i], 0, &in);
		cr_assert_eq(gpuos_ext4_lookup_as(im.fs, GPUOS_EXT4_ROOT_INO, GPUOS_EXT4_ROOT_INO, paths[i], 0,
						  NULL, &got), 0, "%s", paths[i]);
		cr_assert_eq(got.ino, in.ino, "%s: the same inode as without credentials", paths[i]);
		cr_assert_eq(lookup_as(&im, GPUOS_EXT4_ROOT_INO, paths[i], 0, &off), -EACCES, "%s", paths[i]);
	}
	perm_inode(&im, "/f/nobody", 0100000, 1000, 2000, &in);
	cr_assert_eq(gpuos_ext4_permission(&in, NULL, MAY_R | MAY_W | MAY_X), 0);
	img_close(&im);
}

/* ---- corrupted images ------------------------------------------------------------------ */

/* Byte offset of an inode, from debugfs imap. */
static uint64_t inode_offset(struct img *im, const char *path)
{
	char *out = dbg(im->path, "imap \"%s\"", path);
	long long blk = field(out, "located at block", 10);
	const char *p = strstr(out, "offset 0x");
	uint64_t off;

	cr_assert(blk > 0 && p, "imap %s: %s", path, out);
	off = (uint64_t)blk * im->fs->block_size + strtoull(p + 7, NULL, 16);
	free(out);
	return off;
}

/* First data block of a file or directory, from debugfs bmap. */
static uint64_t data_block(struct img *im, const char *path, uint64_t lblk)
{
	char *out = dbg(im->path, "bmap \"%s\" %llu", path, (unsigned long long)lblk);
	uint64_t b = strtoull(out, NULL, 10);

	free(out);
	cr_assert(b > 0);
	return b;
}

static void put16(struct img *im, uint64_t off, uint16_t v)
{
	im->dev.p[off] = (uint8_t)v;
	im->dev.p[off + 1] = (uint8_t)(v >> 8);
}

static void put32(struct img *im, uint64_t off, uint32_t v)
{
	put16(im, off, (uint16_t)v);
	put16(im, off + 2, (uint16_t)(v >> 16));
}

static uint32_t get32(struct img *im, uint64_t off)
{
	const uint8_t *p = im->dev.p + off;

	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Recompute the superblock checksum after editing it. */
static void fix_sb_csum(struct img *im)
{
	put32(im, 1024 + 0x3fc, gpuos_crc32c_raw(~0u, im->dev.p + 1024, 0x3fc));
}

Test(ext4, corrupt_superblock, .timeout = 60)
{
	struct img im;

	img_open(&im, "base4k");
	im.dev.p[1024 + 0x38] ^= 0xff;
	cr_assert_eq(img_mount(&im, 0), -EINVAL);
	cr_assert(strstr(im.fs->why, "magic"), "why: %s", im.fs->why);
	im.dev.p[1024 + 0x38] ^= 0xff;
	cr_assert_eq(img_mount(&im, 0), 0);

	im.dev.p[1024 + 0x78] ^= 1; /* volume name: only the checksum can tell */
	cr_assert_eq(img_mount(&im, 0), -EINVAL);
	cr_assert(strstr(im.fs->why, "superblock: bad checksum"), "why: %s", im.fs->why);
	im.dev.p[1024 + 0x78] ^= 1;

	/* unsupported incompatible features are named */
	put32(&im, 1024 + 0x60, get32(&im, 1024 + 0x60) | GPUOS_EXT4_INCOMPAT_DIRDATA);
	fix_sb_csum(&im);
	cr_assert_eq(img_mount(&im, 0), -EOPNOTSUPP);
	cr_assert(strstr(im.fs->why, "dirdata"), "why: %s", im.fs->why);
	put32(&im, 1024 + 0x60, (get32(&im, 1024 + 0x60) & ~GPUOS_EXT4_INCOMPAT_DIRDATA) |
				GPUOS_EXT4_INCOMPAT_COMPRESSION);
	fix_sb_csum(&im);
	cr_assert_eq(img_mount(&im, 0), -EOPNOTSUPP);
	cr_assert(strstr(im.fs->why, "compression"), "why: %s", im.fs->why);
	put32(&im, 1024 + 0x60, (get32(&im, 1024 + 0x60) & ~GPUOS_EXT4_INCOMPAT_COMPRESSION) |
				0x800000u);
	fix_sb_csum(&im);
	cr_assert_eq(img_mount(&im, 0), -EOPNOTSUPP);
	cr_assert_eq(im.fs->bad, 0x800000u);
	put32(&im, 1024 + 0x60, (get32(&im, 1024 + 0x60) & ~0x800000u) | GPUOS_EXT4_INCOMPAT_RECOVER);
	fix_sb_csum(&im);
	cr_assert_eq(img_mount(&im, 0), -EOPNOTSUPP);
	cr_assert(strstr(im.fs->why, "needs_recovery"), "why: %s", im.fs->why);
	cr_assert_eq(img_mount(&im, GPUOS_EXT4_MOUNT_NORECOVERY), 0);
	put32(&im, 1024 + 0x60, get32(&im, 1024 + 0x60) & ~GPUOS_EXT4_INCOMPAT_RECOVER);
	fix_sb_csum(&im);

	/* geometry */
	put32(&im, 1024 + 0x18, 7); /* 128 KiB blocks */
	fix_sb_csum(&im);
	cr_assert_eq(img_mount(&im, 0), -EINVAL);
	put32(&im, 1024 + 0x18, 2);
	put32(&im, 1024 + 0x28, 0); /* no inodes per group */
	fix_sb_csum(&im);
	cr_assert_eq(img_mount(&im, 0), -EINVAL);
	put32(&im, 1024 + 0x28, get32(&im, 1024) / im.fs->group_count);
	fix_sb_csum(&im);
	cr_assert_eq(img_mount(&im, 0), 0, "%s", im.fs->why ? im.fs->why : "");

	/* an image shorter than the file system says */
	im.io.size = im.dev.n / 2;
	cr_assert_eq(img_mount(&im, 0), -EINVAL);
	cr_assert(strstr(im.fs->why, "end of the device"), "why: %s", im.fs->why);
	im.io.size = 2000;
	cr_assert_eq(img_mount(&im, 0), -EIO);
	img_close(&im);
}

Test(ext4, corrupt_checksums, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in;
	struct gpuos_fs_dirent de;
	uint64_t off, cookie = 0;
	uint32_t bs;
	int r;

	img_open(&im, "base4k");
	cr_assert_eq(img_mount(&im, 0), 0);
	bs = im.fs->block_size;

	/* group descriptor 0 (block 1 with 4 KiB blocks): the root inode is in group 0 */
	im.dev.p[bs + 0x0c] ^= 1;
	cr_assert_eq(img_mount(&im, 0), -EINVAL);
	cr_assert(strstr(im.fs->why, "group descriptor: bad checksum"), "why: %s", im.fs->why);
	im.dev.p[bs + 0x0c] ^= 1;
	cr_assert_eq(img_mount(&im, 0), 0);

	/* an inode */
	off = inode_offset(&im, "/small.txt");
	im.dev.p[off + 0x10] ^= 1; /* mtime */
	r = lookup_err(&im, "/small.txt", 0);
	cr_assert_eq(r, -EINVAL);
	cr_assert(strstr(im.fs->why, "inode: bad checksum"), "why: %s", im.fs->why);
	im.dev.p[off + 0x10] ^= 1;
	lookup_ok(&im, "/small.txt", 0, &in);

	/* a directory leaf block */
	off = data_block(&im, "/sub", 0) * bs;
	im.dev.p[off + 12 + 8] ^= 1; /* the name ".." */
	r = lookup_err(&im, "/sub/file", 0);
	cr_assert_eq(r, -EINVAL);
	cr_assert(strstr(im.fs->why, "directory block: bad checksum"), "why: %s", im.fs->why);
	lookup_ok(&im, "/", 0, &in);
	r = gpuos_ext4_readdir(im.fs, &in, &cookie, &de);
	cr_assert_eq(r, 1, "other directories still read");
	im.dev.p[off + 12 + 8] ^= 1;
	lookup_ok(&im, "/sub/file", 0, &in);
	img_close(&im);

	/* an extent block (the fragmented file has two levels of them) */
	img_open(&im, "frag");
	cr_assert_eq(img_mount(&im, 0), 0);
	lookup_ok(&im, "/big", 0, &in);
	{
		uint64_t blk = ((uint64_t)le16_at(in.i_block + 12 + 8) << 32) |
			       le32_at(in.i_block + 12 + 4);
		uint32_t seed, c;
		uint16_t max;
		uint8_t save;

		bs = im.fs->block_size;
		off = blk * bs;
		cr_assert_eq(get32(&im, off) & 0xffff, 0xF30A);
		save = im.dev.p[off + 12];
		im.dev.p[off + 12] ^= 1;
		r = gpuos_ext4_read(im.fs, &in, 0, 16, &de, &(uint32_t){0});
		cr_assert_eq(r, -EINVAL);
		cr_assert(strstr(im.fs->why, "extent block: bad checksum"), "why: %s", im.fs->why);
		im.dev.p[off + 12] = save;

		/* huge eh_entries with a valid checksum: the bound check must catch it */
		max = (uint16_t)(im.dev.p[off + 4] | im.dev.p[off + 5] << 8);
		put16(&im, off + 2, 0xffff);
		seed = gpuos_crc32c_raw(~0u, im.dev.p + 1024 + 0x68, 16); /* no csum_seed feature */
		seed = gpuos_crc32c_raw(seed, &(uint32_t){in.ino}, 4);
		seed = gpuos_crc32c_raw(seed, &(uint32_t){in.generation}, 4);
		c = gpuos_crc32c_raw(seed, im.dev.p + off, 12 + 12u * max);
		put32(&im, off + 12 + 12u * max, c);
		r = gpuos_ext4_read(im.fs, &in, 0, 16, &de, &(uint32_t){0});
		cr_assert_eq(r, -EINVAL);
		cr_assert(strstr(im.fs->why, "entry count"), "why: %s", im.fs->why);
		cookie = 0;
		cr_assert_eq(gpuos_ext4_extents(im.fs, &in, 0, (struct gpuos_fs_extent *)&de, 1,
						&(uint32_t){0}, &cookie), -EINVAL);
	}
	img_close(&im);
}

Test(ext4, corrupt_structures_no_csum, .timeout = 60)
{
	struct img im;
	struct gpuos_ext4_inode in;
	struct gpuos_fs_dirent de;
	uint64_t off, cookie;
	uint32_t bs, save;
	int r, n;

	img_open(&im, "nocsum64");
	cr_assert_eq(img_mount(&im, 0), 0);
	bs = im.fs->block_size;

	/* extent header in the inode: bad magic, huge eh_entries, bad depth, bad start */
	off = inode_offset(&im, "/medium.bin") + 0x28;
	save = get32(&im, off);
	put16(&im, off, 0x1234);
	cr_assert_eq(lookup_err(&im, "/medium.bin", 0), -EINVAL);
	cr_assert(strstr(im.fs->why, "magic"), "why: %s", im.fs->why);
	put32(&im, off, save);
	put16(&im, off + 2, 0xffff);
	cr_assert_eq(lookup_err(&im, "/medium.bin", 0), -EINVAL);
	cr_assert(strstr(im.fs->why, "entry count"), "why: %s", im.fs->why);
	put32(&im, off, save);
	put16(&im, off + 6, 9);
	cr_assert_eq(lookup_err(&im, "/medium.bin", 0), -EINVAL);
	put16(&im, off + 6, 0);
	lookup_ok(&im, "/medium.bin", 0, &in);
	save = get32(&im, off + 12 + 8);
	put32(&im, off + 12 + 8, 0xfffffff0u); /* ee_start_lo */
	lookup_ok(&im, "/medium.bin", 0, &in);
	r = gpuos_ext4_read(im.fs, &in, 0, 16, &de, &(uint32_t){0});
	cr_assert_eq(r, -EINVAL);
	cr_assert(strstr(im.fs->why, "outside"), "why: %s", im.fs->why);
	put32(&im, off + 12 + 8, save);
	put16(&im, off + 12 + 4, 0); /* ee_len 0 */
	lookup_ok(&im, "/medium.bin", 0, &in);
	cr_assert_eq(gpuos_ext4_read(im.fs, &in, 0, 16, &de, &(uint32_t){0}), -EINVAL);
	cr_assert(strstr(im.fs->why, "zero-length"), "why: %s", im.fs->why);

	/* inode numbers out of range */
	cr_assert_eq(gpuos_ext4_iget(im.fs, 0, &in), -EINVAL);
	cr_assert_eq(gpuos_ext4_iget(im.fs, im.fs->inodes_count + 1, &in), -EINVAL);
	cr_assert_eq(gpuos_ext4_iget(im.fs, UINT32_MAX, &in), -EINVAL);
	r = gpuos_ext4_iget(im.fs, im.fs->inodes_count, &in);
	cr_assert_eq(r, -ENOENT, "the last inode is not in use: %d", r);

	/* directory entries: rec_len 0 (an error, not a hang), inode out of range */
	off = data_block(&im, "/sub", 0) * bs;
	put16(&im, off + 12 + 4, 0);
	lookup_ok(&im, "/sub", 0, &in);
	cookie = 0;
	for (n = 0; n < 10 && (r = gpuos_ext4_readdir(im.fs, &in, &cookie, &de)) == 1; n++)
		;
	cr_assert_eq(r, -EINVAL);
	cr_assert(strstr(im.fs->why, "rec_len smaller"), "why: %s", im.fs->why);
	cr_assert_eq(lookup_err(&im, "/sub/file", 0), -EINVAL);
	put16(&im, off + 12 + 4, 2); /* not a multiple of 4, too small */
	cr_assert_eq(lookup_err(&im, "/sub/file", 0), -EINVAL);
	put16(&im, off + 12 + 4, (uint16_t)(bs + 4)); /* past the block */
	cr_assert_eq(lookup_err(&im, "/sub/file", 0), -EINVAL);
	put16(&im, off + 12 + 4, (uint16_t)(bs - 12)); /* valid: ".." now hides the rest */
	cr_assert_eq(lookup_err(&im, "/sub/file", 0), -ENOENT);
	put32(&im, off + 12, im.fs->inodes_count + 5);
	cr_assert_eq(lookup_err(&im, "/sub/..", 0), -EINVAL);
	cr_assert(strstr(im.fs->why, "out of range"), "why: %s", im.fs->why);
	img_close(&im);

	/* indirect blocks are not checksummed: a pointer out of the file system */
	img_open(&im, "blockmap");
	cr_assert_eq(img_mount(&im, 0), 0);
	lookup_ok(&im, "/dind", 0, &in);
	off = (uint64_t)le32_at(in.i_block + 4 * 12) * im.fs->block_size;
	put32(&im, off + 4 * 3, 0x7ffffff0u);
	r = gpuos_ext4_read(im.fs, &in, 0, 64 * 1024, malloc(64 * 1024), &(uint32_t){0});
	cr_assert_eq(r, -EINVAL);
	cr_assert(strstr(im.fs->why, "outside"), "why: %s", im.fs->why);
	img_close(&im);
}

/* Random damage to the metadata of small images: every call must return,
 * with 0 or a negative errno and a reason, and never read outside the image
 * (the io refuses; the fuzz target checks the same under ASan). */
#define FLIPS 40
static void corrupt_walk(const char *name, int iterations, unsigned seed)
{
	struct img im;
	uint64_t meta_end, hit[FLIPS];
	int iter, k, mounted = 0, found = 0, failed = 0;

	img_open(&im, name);
	/* superblock, descriptors, bitmaps, inode tables and directories are in
	 * the first 2 MiB of these images */
	meta_end = GPUOS_MIN(im.dev.n, (uint64_t)2 << 20);
	for (iter = 0; iter < iterations; iter++) {
		struct gpuos_ext4_inode in;
		struct gpuos_fs_dirent de;
		struct gpuos_fs_extent ex[8];
		static uint8_t buf[1 << 16];
		uint64_t cookie = 0, next;
		uint32_t got, n;
		const char *paths[] = {"/small.txt", "/sub/dir/deep.txt", "/slow", "/abs", "/dirlink/up/c1",
				       "/medium.bin", "/sparse"};
		size_t i;

		for (k = 0; k < FLIPS; k++) {
			seed = seed * 1103515245u + 12345u;
			hit[k] = 1024 + (seed >> 8) % (meta_end - 1024);
			im.dev.p[hit[k]] ^= (uint8_t)(1u << (k & 7));
		}
		if (img_mount(&im, 0) != 0) {
			cr_assert(im.fs->why, "an error comes with a reason");
			goto undo;
		}
		mounted++;
		for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
			int r = gpuos_ext4_lookup_at(im.fs, 2, 2, paths[i], 0, &in);

			if (r != 0) {
				cr_assert(r < 0 && im.fs->why, "an error comes with a reason");
				failed++;
				continue;
			}
			found++;
			gpuos_ext4_read(im.fs, &in, 0, sizeof(buf), buf, &got);
			gpuos_ext4_extents(im.fs, &in, 0, ex, 8, &n, &next);
		}
		if (gpuos_ext4_iget(im.fs, 2, &in) == 0)
			for (k = 0; k < 100 && gpuos_ext4_readdir(im.fs, &in, &cookie, &de) == 1; k++)
				;
undo:
		for (k = FLIPS; k-- > 0;)
			im.dev.p[hit[k]] ^= (uint8_t)(1u << (k & 7));
	}
	cr_assert_eq(img_mount(&im, 0), 0, "the image is whole again");
	/* the damage must reach past the superblock for the test to mean much */
	cr_assert(mounted >= iterations / 3 && found >= iterations && failed >= iterations / 10,
		  "%s: mounted %d found %d failed %d", name, mounted, found, failed);
	img_close(&im);
}

Test(ext4, random_corruption_survives, .timeout = 60)
{
	corrupt_walk("gdtcsum", 2000, 12345); /* 1 KiB blocks, crc16 descriptors */
	corrupt_walk("nocsum64", 2000, 777);  /* 4 KiB blocks, 64-bit, no checksums */
}

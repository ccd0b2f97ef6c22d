/* SPDX-License-Identifier: MIT */
/* What the commands write: untrusted names made safe for a terminal, the
 * output file of cat and read, and the check that stdout took everything. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"

/* ---- names on a terminal -------------------------------------------------------- */

/* The escaped form of the character at s (n >= 1 bytes left) into out,
 * NUL-terminated; returns the input bytes it stands for. As `ls -b`:
 * backslash and the C escapes by name, other control bytes (C0, DEL, and
 * C1 as UTF-8, which terminals may obey too) and bytes that are not
 * UTF-8 as \ooo, one per byte. */
static size_t escape_next(const uint8_t *s, size_t n, char out[16])
{
	static const char named[] = "\\\a\b\t\n\v\f\r", letter[] = "\\abtnvfr";
	const char *k = s[0] ? strchr(named, s[0]) : NULL;
	size_t len, i;

	if (k) {
		out[0] = '\\';
		out[1] = letter[k - named];
		out[2] = 0;
		return 1;
	}
	len = json_utf8_len(s, n);
	if (len == 1 && s[0] >= 0x20 && s[0] != 0x7f) {
		out[0] = (char)s[0];
		out[1] = 0;
		return 1;
	}
	if (len > 1 && !(s[0] == 0xc2 && s[1] < 0xa0)) {
		memcpy(out, s, len);
		out[len] = 0;
		return len;
	}
	len = len ? len : 1;
	for (i = 0; i < len; i++)
		snprintf(out + 4 * i, 5, "\\%03o", s[i]);
	return len;
}

size_t cli_put_escaped(FILE *f, const void *s, size_t n)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0, wrote = 0;
	char e[16];

	while (i < n) {
		i += escape_next(p + i, n - i, e);
		fputs(e, f);
		wrote += strlen(e);
	}
	return wrote;
}

const char *cli_escaped(char *buf, size_t cap, const char *s)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t n = strlen(s), i = 0, o = 0;
	char e[16];

	while (i < n) {
		size_t used = escape_next(p + i, n - i, e), el = strlen(e);
		/* keep room for "..." while more follows */
		if (o + el + (i + used < n ? 4 : 1) > cap) {
			snprintf(buf + o, cap - o, "...");
			return buf;
		}
		memcpy(buf + o, e, el);
		o += el;
		i += used;
	}
	buf[o] = 0;
	return buf;
}

/* ---- where the bytes go --------------------------------------------------------- */

/* The image file that the device string names (emu:PATH[,k=v...]; the
 * path runs to the first comma, as boot/emu/emu_opts.c reads it): 1 with
 * its stat() in *st, 0 when it names none (null, pci:, emu:null). */
static int device_image(const char *dev, struct stat *st)
{
	char path[4096];
	const char *p, *comma;
	size_t n;

	if (!dev || strncmp(dev, "emu:", 4))
		return 0;
	p = dev + 4;
	comma = strchr(p, ',');
	n = comma ? (size_t)(comma - p) : strlen(p);
	if (n == 0 || n >= sizeof(path))
		return 0;
	memcpy(path, p, n);
	path[n] = 0;
	return strcmp(path, "null") && stat(path, st) == 0;
}

int cli_output_open(const char *cmd, const struct cli *c, int *fd)
{
	struct stat out, img;
	int have;

	*fd = 1;
	/* no O_TRUNC: it would empty the image before the check below */
	if (c->out && (*fd = open(c->out, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0) {
		cli_err(cmd, "%s: %s", c->out, strerror(errno));
		return GPUOS_EXIT_FAIL;
	}
	have = fstat(*fd, &out) == 0;
	/* the same file through any name, hard link or symlink: the same inode */
	if (have && device_image(c->boot.device, &img) && out.st_dev == img.st_dev && out.st_ino == img.st_ino) {
		cli_err(cmd, "%s is the device's image (%s): refusing to write over it", c->out ? c->out : "stdout",
			c->boot.device);
		if (*fd != 1)
			close(*fd);
		return GPUOS_EXIT_USAGE;
	}
	if (c->out && have && S_ISREG(out.st_mode) && ftruncate(*fd, 0)) {
		cli_err(cmd, "%s: %s", c->out, strerror(errno));
		close(*fd);
		return GPUOS_EXIT_FAIL;
	}
	return 0;
}

int cli_output_done(const char *cmd, int rc)
{
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	/* stdio keeps what a failed write left in its buffer, so the retry
	 * here says why; after a failed fflush of the command's own, nothing
	 * is left and the reason is gone */
	if (errno)
		cli_err(cmd, "writing the output: %s", strerror(errno));
	else
		cli_err(cmd, "writing the output failed");
	return rc ? rc : GPUOS_EXIT_FAIL;
}

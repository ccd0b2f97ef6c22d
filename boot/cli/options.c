/* SPDX-License-Identifier: MIT */
/* The command line of `gpuos`: every option once, the commands and the
 * options each takes, parsing (getopt_long over the command's own table),
 * numbers and sizes, and the help that is printed from the same tables. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpuos/abi.h"

enum {
	OPT_DEVICE = 'd',
	OPT_OUTPUT = 'o',
	OPT_QUIET = 'q',
	OPT_HOST = 256, OPT_REQUIRE_GPU, OPT_NO_FILES, OPT_NO_ZERO_COPY, OPT_ALLOW_RAW, OPT_FORCE, OPT_JSON,
	OPT_SOCKET, OPT_PART, OPT_OFFSET, OPT_LENGTH, OPT_WARPS, OPT_QUEUES, OPT_DEPTH, OPT_SLOTS, OPT_XFER_KIB,
	OPT_TIMEOUT_MS, OPT_MBOX_SLOTS, OPT_HEAP_MIB, OPT_FILES_MIB, OPT_VRAM_MIB, OPT_MBOX_VRAM, OPT_ENTRY, OPT_GRID, OPT_BLOCK,
	OPT_ARCH, OPT_THREADS, OPT_ITERS, OPT_BYTES, OPT_OP, OPT_STAGES,
	OPT_SOCKET_MODE, OPT_GROUP, OPT_CLIENT_TIMEOUT_MS, OPT_APPS, OPT_ALLOW_HOST_APPS, OPT_ROOT, OPT_NO_PERMS,
	OPT_GPU_CLIENTS, OPT_GPU_CLIENT_MIB, OPT_SHARD, OPT_GPU, OPT_GPUS, OPT_STATS,
	OPT_NO_MPS, OPT_CONFIG,
};

/* How an option's value is read. */
enum { V_NONE, V_TEXT, V_COUNT, V_SIZE };

static const struct cli_option {
	const char *name;
	int id;
	int kind;          /* V_* */
	uint64_t min, max; /* V_COUNT, V_SIZE */
	const char *arg;   /* its value in the help */
	const char *help;  /* option_help adds the limit and default it knows */
} options[] = {
	{ "device", OPT_DEVICE, V_TEXT, 0, 0, "DEV",
	  "the device: emu:IMAGE[,k=v...], null[:SIZE], gpu-null, pci:DDDD:BB:DD.F[+...][,stripe=KiB]" },
	{ "socket", OPT_SOCKET, V_TEXT, 0, 0, "PATH",
	  "the service's control socket (default: $GPUOS_SOCKET; else, but for root, $XDG_RUNTIME_DIR/"
	  GPUOS_SOCKET_NAME " (a client takes it where it exists); else " GPUOS_DEFAULT_SOCKET "). A command "
	  "given neither --device nor --socket uses the service there" },
	{ "json", OPT_JSON, V_NONE, 0, 0, NULL, "JSON on stdout (docs/json.md)" },
	{ "output", OPT_OUTPUT, V_TEXT, 0, 0, "FILE", "write the bytes to FILE instead of stdout" },
	{ "stats", OPT_STATS, V_NONE, 0, 0, NULL,
	  "the runtime's counters on stderr (retries, aborts, resets, strays, duplicates, untrusted, timeouts), "
	  "also as JSON (docs/json.md); without it, only when one is not 0. With --socket: the service's, since it started" },
	{ "shard", OPT_SHARD, V_NONE, 0, 0, NULL,
	  "a gguf-split shard alone (without it, any shard or the base name opens the whole model)" },
	{ "part", OPT_PART, V_COUNT, 1, 128, "N", "GPT partition N (from 1; default: the first holding ext4)" },
	{ "offset", OPT_OFFSET, V_SIZE, 0, ~0ull, "BYTES", "first byte to read: of the device (read), of the file (cat); default 0" },
	{ "length", OPT_LENGTH, V_SIZE, 0, ~0ull, "BYTES",
	  "bytes to read (cat: default to the end of the file; a range past the end is refused, exit 1 with nothing "
	  "written, never cut short)" },
	{ "allow-raw", OPT_ALLOW_RAW, V_NONE, 0, 0, NULL, "allow reads of raw device bytes (clients otherwise see files only)" },
	{ "no-perms", OPT_NO_PERMS, V_NONE, 0, 0, NULL,
	  "serve every client's files whatever their ext4 mode bits (else checked against the client's uid and groups)" },
	{ "root", OPT_ROOT, V_TEXT, 0, 0, "DIR",
	  "clients see only DIR of the file system, as / (.. and symlinks stop there; not with --allow-raw)" },
	{ "entry", OPT_ENTRY, V_TEXT, 0, 0, "NAME", "the app's entry point (default: its only one)" },
	{ "grid", OPT_GRID, V_COUNT, 1, 1u << 30, "G", "blocks of the app's launch" },
	{ "block", OPT_BLOCK, V_COUNT, 1, 1024, "B", "threads per block of the app's launch" },
	{ "arch", OPT_ARCH, V_TEXT, 0, 0, "sm_XY", "the GPU architecture to check the image against" },
	{ "threads", OPT_THREADS, V_COUNT, 1, 1u << 20, "T", "client threads (GPU threads on a GPU; default 1)" },
	{ "iters", OPT_ITERS, V_COUNT, 1, 1u << 30, "N", "requests per thread" },
	{ "bytes", OPT_BYTES, V_SIZE, 1, 16u << 20, "BYTES", "bytes per request" },
	{ "op", OPT_OP, V_TEXT, 0, 0, "read|nop", "what each request does (default read)" },
	{ "stages", OPT_STAGES, V_NONE, 0, 0, NULL, "median time of each stage of a request" },
	/* the runtime's own (commands that boot one) */
	{ "host", OPT_HOST, V_NONE, 0, 0, NULL, "run the runtime on CPU threads (the default without a GPU)" },
	{ "quiet", OPT_QUIET, V_NONE, 0, 0, NULL,
	  "no notices on stderr: host mode, the runtime's plan, an emu: image padded to whole LBAs (also "
	  "before the command: gpuos -q COMMAND; GPUOS_QUIET_HOST=1 in the environment: the host-mode notice "
	  "alone); errors are still said" },
	{ "require-gpu", OPT_REQUIRE_GPU, V_NONE, 0, 0, NULL, "fail rather than run on CPU threads" },
	{ "gpu", OPT_GPU, V_COUNT, 0, 1023, "N", "run the runtime on GPU N, a CUDA device number (default 0)" },
	{ "gpus", OPT_GPUS, V_TEXT, 0, 0, "LIST",
	  "one runtime per GPU of LIST (CUDA device numbers, such as 0,1; a number twice: two runtimes on that GPU), "
	  "all on the device's controllers, with no queue pair shared (boot: runtime i > 0 serves at SOCKET.i)" },
	{ "no-files", OPT_NO_FILES, V_NONE, 0, 0, NULL, "no metadata warp (no file or model requests)" },
	{ "no-zero-copy", OPT_NO_ZERO_COPY, V_NONE, 0, 0, NULL, "every read through the bounce buffers" },
	{ "warps", OPT_WARPS, V_COUNT, 0, 1u << 30, "N", "service warps (default 1)" },
	{ "queues", OPT_QUEUES, V_COUNT, 0, 1u << 30, "N", "I/O queue pairs (default one per warp and controller)" },
	{ "depth", OPT_DEPTH, V_COUNT, 0, 1u << 30, "N", "entries per queue (default 256, capped by MQES)" },
	{ "slots", OPT_SLOTS, V_COUNT, 0, 1u << 30, "N", "commands in flight per warp (default 64)" },
	{ "xfer-kib", OPT_XFER_KIB, V_COUNT, 0, 1u << 30, "N", "KiB per command (default 128, capped by MDTS)" },
	{ "timeout-ms", OPT_TIMEOUT_MS, V_COUNT, 0, 1u << 30, "MS", "per command (default: the controller's CAP.TO)" },
	{ "mbox-slots", OPT_MBOX_SLOTS, V_COUNT, 0, 1u << 30, "N", "mailbox slots (default 1024)" },
	{ "heap-mib", OPT_HEAP_MIB, V_COUNT, 0, 1u << 20, "N", "client memory shared with the host, MiB (default 64)" },
	{ "files-mib", OPT_FILES_MIB, V_COUNT, 1, 4096, "N", "device memory for open files' extent maps, MiB (default 6: 262144 extents)" },
	{ "vram-mib", OPT_VRAM_MIB, V_COUNT, 0, 1u << 20, "N", "client memory in VRAM for GPU clients, MiB" },
	{ "mbox-vram", OPT_MBOX_VRAM, V_NONE, 0, 0, NULL, "the mailbox in VRAM (GPU clients only)" },
	{ "force", OPT_FORCE, V_NONE, 0, 0, NULL, "pci: skip the safety refusals (a mounted or bound device)" },
	/* the service's (docs/security.md) */
	{ "socket-mode", OPT_SOCKET_MODE, V_TEXT, 0, 0, "MODE", "the control socket's permission bits, octal (default 0660)" },
	{ "group", OPT_GROUP, V_TEXT, 0, 0, "NAME", "members of this group may connect (default: gpuos, if it exists)" },
	{ "client-timeout-ms", OPT_CLIENT_TIMEOUT_MS, V_COUNT, 1, 1u << 30, "MS",
	  "disconnect a client stuck mid-request, not reading, or idle without a share (default 10000)" },
	{ "apps", OPT_APPS, V_TEXT, 0, 0, "DIR", "run requests name apps in DIR (root-owned); without it, none run" },
	{ "allow-host-apps", OPT_ALLOW_HOST_APPS, V_NONE, 0, 0, NULL, "also run host-mode apps (.so: code in this process)" },
	{ "gpu-clients", OPT_GPU_CLIENTS, V_COUNT, 0, GPUOS_RT_MAX_CLIENTS - GPUOS_SERVICE_SHARES, "N",
	  "areas in VRAM for N GPU clients (kernels of other processes, under MPS; default 0)" },
	{ "gpu-client-mib", OPT_GPU_CLIENT_MIB, V_COUNT, 2, 1u << 20, "N",
	  "each GPU client's area (its mailbox and share), MiB, rounded up to 2 (default 64)" },
	{ "no-mps", OPT_NO_MPS, V_NONE, 0, 0, NULL,
	  "on a GPU, neither join nor start an MPS daemon (else one at $CUDA_MPS_PIPE_DIRECTORY, default "
	  "/tmp/nvidia-mps, is joined, or started there: GPU clients in other processes need it)" },
	{ "config", OPT_CONFIG, V_TEXT, 0, 0, "FILE",
	  "options from FILE first, one a line: NAME = VALUE, NAME a long option of boot (a flag: yes or no); "
	  "# begins a comment; the command line wins (the systemd unit: /etc/gpuos/gpuos.conf)" },
};
#define NOPTIONS (sizeof(options) / sizeof(options[0]))

/* The runtime's options, for every command that boots one. */
#define RT_OPTS "host quiet require-gpu gpu no-files no-zero-copy warps queues depth slots xfer-kib timeout-ms mbox-slots heap-mib files-mib force"

const struct cli_command cli_commands[] = {
	{ "identify", cmd_identify, "--device DEV", "bring up a controller, print what it is",
	  "device json force quiet" },
	{ "read", cmd_read, "--device DEV --allow-raw [--offset BYTES] --length BYTES", "bytes of the device, through the runtime",
	  "device socket allow-raw offset length output stats " RT_OPTS },
	{ "boot", cmd_boot, "--device DEV | --config FILE", "run the runtime as a service for other processes",
	  "device config socket allow-raw root no-perms mbox-vram vram-mib socket-mode group client-timeout-ms apps "
	  "allow-host-apps gpu-clients gpu-client-mib gpus no-mps " RT_OPTS },
	{ "stop", cmd_stop, "", "stop a running service", "socket quiet" },
	{ "status", cmd_status, "",
	  "a running service: its runtime, device, uptime, MPS, the clients attached, requests, bytes and errors",
	  "socket json quiet" },
	{ "parts", cmd_parts, "--device DEV", "the device's partitions (GPT or MBR) and which hold ext2/3/4",
	  "device socket json " RT_OPTS },
	{ "ls", cmd_ls, "--device DEV PATH", "list a directory of the device's ext4", "device socket part root json " RT_OPTS },
	{ "stat", cmd_stat, "--device DEV PATH", "inode, mode, size and extents of a file",
	  "device socket part root json " RT_OPTS },
	{ "cat", cmd_cat, "--device DEV [--offset BYTES] [--length BYTES] PATH", "a file's bytes",
	  "device socket part root offset length output stats " RT_OPTS },
	{ "gguf", cmd_gguf, "--device DEV [--shard] PATH|@BYTEOFFSET", "a GGUF model's header, KVs and tensors",
	  "device socket part root json shard " RT_OPTS },
	{ "model", cmd_model, "--device DEV [--shard] PATH|@BYTEOFFSET",
	  "any model's tensors (GGUF, gguf-split, safetensors, a checkpoint's index.json): name, dtype, shape, offset, bytes",
	  "device socket part root json shard " RT_OPTS },
	{ "image", cmd_image, "APP.cubin", "inspect an app image: architecture, ABI, entries", "json arch quiet" },
	{ "run", cmd_run, "--device DEV APP.cubin|APP.so [-- ARGS...]",
	  "run an app (APP.so, or --host: its host-mode variant); its output on stdout, the run's on stderr",
	  "device socket part root entry grid block arch vram-mib stats " RT_OPTS },
	{ "bench", cmd_bench, "--device DEV", "requests/s and latency through the whole path",
	  "device threads iters bytes op stages json gpus " RT_OPTS },
	{ NULL, NULL, NULL, NULL, NULL },
};

/* Command lines to copy, after a command's options in its --help. */
static const struct {
	const char *cmd;
	const char *text;
} examples[] = {
	{ "identify",
	  "  gpuos identify --device pci:0000:01:00.0\n"
	  "  gpuos identify --json --device emu:disk.img | jq '.model, .mdts_bytes'\n" },
	{ "read",
	  "  gpuos read --device emu:disk.img --allow-raw --length 1M -o first-mib.bin\n"
	  "  gpuos read --device pci:0000:01:00.0 --allow-raw --offset 4G --length 512 | xxd | head\n" },
	{ "stop",
	  "  gpuos stop\n"
	  "  gpuos stop --socket /tmp/gpuos.sock\n" },
	{ "parts",
	  "  gpuos parts --device emu:disk.img\n"
	  "  gpuos parts --json --device pci:0000:01:00.0\n" },
	{ "ls",
	  "  gpuos ls --device emu:disk.img /models\n"
	  "  gpuos ls --json --socket /tmp/gpuos.sock / | jq -r '.entries[].name'\n" },
	{ "stat",
	  "  gpuos stat --device emu:disk.img /models/m.gguf\n"
	  "  gpuos stat --json --device emu:disk.img --part 2 /etc/hostname\n" },
	{ "cat",
	  "  gpuos cat --device emu:disk.img /etc/hostname\n"
	  "  gpuos cat -q --device emu:disk.img --offset 1M --length 4K /models/m.gguf | xxd | head\n"
	  "  gpuos cat --socket /tmp/gpuos.sock /models/m.gguf -o /dev/null --stats\n" },
	{ "gguf",
	  "  gpuos gguf --device emu:disk.img /models/llama-3-8b.Q4_K_M.gguf\n"
	  "  gpuos gguf --json --device emu:disk.img --shard /models/m-00002-of-00003.gguf\n" },
	{ "image",
	  "  gpuos image build/apps/sha256.cubin\n"
	  "  gpuos image --json --arch sm_90 build/apps/layer_stream.cubin\n" },
	{ "run",
	  "  gpuos run build/apps/sha256.cubin --device emu:disk.img -- /models/m.gguf\n"
	  "  gpuos run build/apps/layer_stream.cubin --device emu:disk.img --grid 8 --block 128 -- /models/m.gguf\n"
	  "  gpuos run build/apps/sha256.cubin --socket /tmp/gpuos.sock -- /etc/hostname\n" },
	{ "bench",
	  "  gpuos bench --device emu:disk.img --threads 64 --iters 1000\n"
	  "  gpuos bench --json --device null --op nop --stages\n" },
	{ "model",
	  "  gpuos model --device emu:disk.img /models/llama-3-8b.Q4_K_M.gguf\n"
	  "  gpuos model --json --device emu:disk.img /models/llama/model.safetensors.index.json\n"
	  "  gpuos model --json --socket " GPUOS_DEFAULT_SOCKET " /models/m.safetensors | jq -r '.tensors[].name'\n"
	  "  gpuos model --device emu:disk.img @1M # a GGUF written with dd at byte 1 MiB of the device\n" },
	{ "boot",
	  "  gpuos boot --device pci:0000:01:00.0 --group gpuos # members of gpuos may attach\n"
	  "  gpuos boot --config /etc/gpuos/gpuos.conf # as the systemd unit gpuos.service does\n"
	  "  gpuos boot --device emu:disk.img --host --socket /tmp/gpuos.sock &\n"
	  "  gpuos cat --socket /tmp/gpuos.sock /models/m.gguf > /dev/null\n" },
	{ "status",
	  "  gpuos status\n"
	  "  gpuos status --socket /tmp/gpuos.sock\n"
	  "  gpuos status --json | jq '.clients[] | {pid, uid, kind}'\n" },
};

const char cli_exit_help[] =
	"exit status: 0 done; 1 the operation failed (a device error, no such file: one line on\n"
	"  stderr); 2 a usage error (an unknown option, a bad value, a missing argument).\n";

const struct cli_command *cli_command(const char *name)
{
	const struct cli_command *c;
	for (c = cli_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* Does the space-separated list `list` name `name`? */
static int listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;
	while ((p = strstr(p, name))) {
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
			return 1;
		p += n;
	}
	return 0;
}

static const struct cli_option *option_named(const char *name)
{
	size_t i;
	for (i = 0; i < NOPTIONS; i++)
		if (!strcmp(options[i].name, name))
			return &options[i];
	return NULL;
}

/* v as the command line would give it: decimal, or for a size with the
 * largest suffix that leaves a whole number ("4K", "16M"). */
static const char *value_text(char *buf, size_t len, const struct cli_option *o, uint64_t v)
{
	static const char suffix[] = " KMGT";
	unsigned u = 0;
	while (o->kind == V_SIZE && v && u + 1 < sizeof(suffix) - 1 && (v & 1023u) == 0) {
		v >>= 10;
		u++;
	}
	snprintf(buf, len, "%llu%.*s", (unsigned long long)v, u ? 1 : 0, suffix + u);
	return buf;
}

/* The value an option has when not given, from the constant the command
 * runs with; 0: none to say (or its help says it in words). */
static uint64_t option_default(const struct cli_option *o)
{
	switch (o->id) {
	case OPT_ITERS: return BENCH_ITERS;
	case OPT_BYTES: return BENCH_BYTES;
	default: return 0;
	}
}

/* o's line of the help: its text, then "(up to MAX, default DFLT)": the
 * limit of a size that has one (the table's max) and the default. */
static void option_help(FILE *f, const struct cli_option *o)
{
	uint64_t dflt = option_default(o);
	char v[24], note[64] = "";
	if (o->kind == V_SIZE && o->max != ~0ull)
		snprintf(note, sizeof(note), "up to %s", value_text(v, sizeof(v), o, o->max));
	if (dflt)
		snprintf(note + strlen(note), sizeof(note) - strlen(note), "%sdefault %s", *note ? ", " : "",
			 value_text(v, sizeof(v), o, dflt));
	fprintf(f, "%s%s%s%s\n", o->help, *note ? " (" : "", note, *note ? ")" : "");
}

void cli_help(FILE *f, const struct cli_command *c)
{
	size_t i;
	int rt = 0;
	fprintf(f, "usage: gpuos %s [OPTIONS] %s\n%s.\n\noptions:\n", c->name, c->synopsis, c->what);
	for (i = 0; i < NOPTIONS; i++) {
		const struct cli_option *o = &options[i];
		char left[64];
		if (!listed(c->options, o->name))
			continue;
		if (o->id == OPT_HOST) {
			fprintf(f, "runtime options:\n");
			rt = 1;
		}
		if (o->id < 256)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", (char)o->id, o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		/* two spaces at least before the text: where the option ends for
		 * scripts/gen-completion.py (--client-timeout-ms MS fills 26) */
		fprintf(f, "  %-26s%s", left, strlen(left) < 26 ? " " : "  ");
		option_help(f, o);
	}
	(void)rt;
	fprintf(f, "  %-26s %s\n\n", "    --help", "this help");
	fprintf(f, "Values: --opt VALUE or --opt=VALUE. BYTES take K, M, G, T (also KiB, MiB, GiB, TiB:\n"
		   "powers of 1024) and 0x; a value that is not such a number, or is out of range, is refused.\n"
		   "%s",
		cli_exit_help);
	/* last, as man pages have them */
	for (i = 0; i < sizeof(examples) / sizeof(examples[0]); i++)
		if (!strcmp(examples[i].cmd, c->name))
			fprintf(f, "\nexamples:\n%s", examples[i].text);
}

int cli_size(const char *v, int suffixes, uint64_t max, uint64_t *out)
{
	static const struct { const char *s; unsigned shift; } units[] = {
		{ "", 0 }, { "K", 10 }, { "k", 10 }, { "KiB", 10 }, { "M", 20 }, { "MiB", 20 },
		{ "G", 30 }, { "GiB", 30 }, { "T", 40 }, { "TiB", 40 },
	};
	int hex = v && v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
	const char *digits = hex ? v + 2 : v;
	char *end;
	unsigned long long x;
	size_t i;
	/* digits first: strtoull would take a sign or spaces */
	if (!v || !(hex ? isxdigit((unsigned char)*digits) : isdigit((unsigned char)*digits)))
		return -EINVAL;
	/* decimal or 0x hex: a leading zero is not octal (010 is ten) */
	errno = 0;
	x = strtoull(digits, &end, hex ? 16 : 10);
	if (errno)
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].s) || (i && !suffixes))
			continue;
		if (units[i].shift && x > (~0ull >> units[i].shift))
			return -ERANGE;
		x <<= units[i].shift;
		if (x > max)
			return -ERANGE;
		*out = x;
		return 0;
	}
	return -EINVAL;
}

/* A value of option o: a count (plain) or bytes (with suffixes), in
 * o->min..o->max; an error, never a smaller number than written. */
static int option_value(const char *cmd, const struct cli_option *o, const char *v, uint64_t *out)
{
	int size = o->kind == V_SIZE;
	if (cli_size(v, size, o->max, out) || *out < o->min) {
		cli_err(cmd, "--%s: '%s' is not a %s in %llu..%llu", o->name, v,
			size ? "size (a number, or with K, M, G, T: KiB, MiB, GiB, TiB)" : "number",
			(unsigned long long)o->min, (unsigned long long)o->max);
		return -1;
	}
	return 0;
}

/* --arch sm_NN[a|f] into c->sm. */
static int take_arch(struct cli *c, const char *cmd, const char *val)
{
	char *end = NULL;
	unsigned long sm = strncmp(val, "sm_", 3) == 0 ? strtoul(val + 3, &end, 10) : 0;
	if (!sm || sm > 999 || (*end && strcmp(end, "a") && strcmp(end, "f"))) {
		cli_err(cmd, "--arch: '%s' is not an SM architecture like sm_90", val);
		return -1;
	}
	c->sm = (int)sm;
	return 0;
}

/* --gpus 0,1,... into c->gpus and c->ngpus. */
static int take_gpus(struct cli *c, const char *cmd, const char *val)
{
	const char *p = val;
	c->ngpus = 0;
	while (*p) {
		char *end = NULL;
		unsigned long g = *p >= '0' && *p <= '9' ? strtoul(p, &end, 10) : 1024;
		if (g > 1023 || c->ngpus == GPUOS_GROUP_MAX || (*end && *end != ',') || (*end == ',' && !end[1])) {
			cli_err(cmd, "--gpus %s: give CUDA device numbers separated by commas, such as 0,1 (at most %u)",
				val, GPUOS_GROUP_MAX);
			return -1;
		}
		c->gpus[c->ngpus++] = (uint32_t)g;
		p = *end ? end + 1 : end;
	}
	if (!c->ngpus) {
		cli_err(cmd, "--gpus: give CUDA device numbers separated by commas, such as 0,1");
		return -1;
	}
	return 0;
}

/* Option o with its value (NULL when it takes none) into *c. */
static int take(struct cli *c, const char *cmd, const struct cli_option *o, const char *val)
{
	uint64_t v = 0;
	if ((o->kind == V_COUNT || o->kind == V_SIZE) && option_value(cmd, o, val, &v))
		return -1;
	switch (o->id) {
	case OPT_DEVICE: c->boot.device = val; break;
	case OPT_SOCKET: c->socket = val; break;
	case OPT_JSON: c->json = 1; break;
	case OPT_STATS: c->stats = 1; break;
	case OPT_SHARD: c->shard = 1; break;
	case OPT_OUTPUT: c->out = val; break;
	case OPT_PART: c->part = (int)v; break;
	case OPT_OFFSET: c->offset = v; c->have_offset = 1; break;
	case OPT_QUIET: c->boot.quiet = 1; break;
	case OPT_LENGTH: c->length = v; c->have_length = 1; break;
	case OPT_ALLOW_RAW: c->boot.allow_raw = 1; break;
	case OPT_ENTRY: c->entry = val; break;
	case OPT_GRID: c->grid = (unsigned)v; break;
	case OPT_BLOCK: c->block = (unsigned)v; break;
	case OPT_ARCH:
		if (take_arch(c, cmd, val))
			return -1;
		break;
	case OPT_THREADS: c->threads = (uint32_t)v; break;
	case OPT_ITERS: c->iters = (uint32_t)v; break;
	case OPT_BYTES: c->bytes = (uint32_t)v; break;
	case OPT_OP:
		if (strcmp(val, "read") && strcmp(val, "nop")) {
			cli_err(cmd, "--op: '%s' is not read or nop", val);
			return -1;
		}
		c->op = val;
		break;
	case OPT_STAGES: c->stages = 1; break;
	case OPT_HOST: c->boot.host_mode = 1; break;
	case OPT_REQUIRE_GPU: c->boot.require_gpu = 1; break;
	case OPT_GPU: c->boot.gpu = (uint32_t)v; break;
	case OPT_GPUS:
		if (take_gpus(c, cmd, val))
			return -1;
		break;
	case OPT_NO_FILES: c->boot.no_files = 1; break;
	case OPT_NO_ZERO_COPY: c->boot.no_zero_copy = 1; break;
	case OPT_WARPS: c->boot.warps = (uint32_t)v; break;
	case OPT_QUEUES: c->boot.queues = (uint32_t)v; break;
	case OPT_DEPTH: c->boot.depth = (uint32_t)v; break;
	case OPT_SLOTS: c->boot.slots = (uint32_t)v; break;
	case OPT_XFER_KIB: c->boot.xfer_kib = (uint32_t)v; break;
	case OPT_TIMEOUT_MS: c->boot.timeout_ms = (uint32_t)v; break;
	case OPT_MBOX_SLOTS: c->boot.mbox_slots = (uint32_t)v; break;
	case OPT_HEAP_MIB: c->boot.heap_bytes = v << 20; break;
	case OPT_VRAM_MIB: c->boot.dev_heap_bytes = v << 20; break;
	case OPT_FILES_MIB: c->boot.files_mib = (uint32_t)v; break;
	case OPT_MBOX_VRAM: c->boot.mbox_vram = 1; break;
	case OPT_GPU_CLIENTS: c->boot.gpu_clients = (uint32_t)v; break;
	case OPT_GPU_CLIENT_MIB: c->boot.gpu_area_bytes = v << 20; break;
	case OPT_FORCE: c->boot.force = 1; break;
	case OPT_SOCKET_MODE: c->socket_mode = val; break;
	case OPT_GROUP: c->group = val; break;
	case OPT_CLIENT_TIMEOUT_MS: c->client_timeout_ms = (uint32_t)v; break;
	case OPT_APPS: c->apps_dir = val; break;
	case OPT_ALLOW_HOST_APPS: c->allow_host_apps = 1; break;
	case OPT_ROOT: c->boot.root = val; break;
	case OPT_NO_PERMS: c->no_perms = 1; break;
	case OPT_NO_MPS: c->no_mps = 1; break;
	case OPT_CONFIG: c->config = val; break;
	}
	return 0;
}

/* getopt_long's tables for command cc's options only (any other is
 * refused): lo (NOPTIONS + 1 entries, the last zero) and shorts (":" first,
 * 8 bytes). */
static void getopt_tables(const struct cli_command *cc, struct option *lo, char *shorts)
{
	size_t i, n = 0;
	for (i = 0; i < NOPTIONS; i++) {
		if (!listed(cc->options, options[i].name))
			continue;
		lo[n].name = options[i].name;
		lo[n].has_arg = options[i].kind == V_NONE ? no_argument : required_argument;
		lo[n].flag = NULL;
		lo[n].val = options[i].id;
		if (options[i].id < 256) {
			size_t l = strlen(shorts);
			shorts[l] = (char)options[i].id;
			shorts[l + 1] = options[i].kind == V_NONE ? 0 : ':'; /* a flag takes no value */
			shorts[l + 2] = 0;
		}
		n++;
	}
	memset(&lo[n], 0, sizeof(lo[n]));
}

/* Why getopt_long refused argument bad ('?' or ':' in id), on stderr. */
static void refused(const struct cli_command *cc, const char *cmd, int id, const char *bad)
{
	char name[64];
	const char *eq = strchr(bad, '=');
	const struct cli_option *o;
	snprintf(name, sizeof(name), "%.*s", (int)(eq && !strncmp(bad, "--", 2) ? eq - bad - 2 : 60),
		 !strncmp(bad, "--", 2) ? bad + 2 : bad);
	o = !strncmp(bad, "--", 2) ? option_named(name) : NULL;
	if (id == ':')
		cli_err(cmd, "%s needs a value", bad);
	else if (o && listed(cc->options, o->name) && eq)
		cli_err(cmd, "--%s takes no value", o->name);
	else if (o)
		cli_err(cmd, "--%s is not an option of %s (gpuos %s --help)", o->name, cmd, cmd);
	else if (optopt && optopt < 256 && strncmp(bad, "--", 2))
		cli_err(cmd, "unknown option -%c (gpuos %s --help)", optopt, cmd);
	else
		cli_err(cmd, "unknown option %s (gpuos %s --help)", bad, cmd);
}

/* The checks of the options together, once all are read: 0, or -1 said. */
static int options_agree(struct cli *c, const struct cli_command *cc, const char *cmd)
{
	if (c->boot.host_mode && c->boot.require_gpu) {
		cli_err(cmd, "--host and --require-gpu ask for opposite things");
		return -1;
	}
	/* a device string that does not parse is a usage error (exit 2), found
	 * before anything is opened */
	if (c->boot.device) {
		char why[600];
		if (gpuos_device_check(c->boot.device, why, sizeof(why))) {
			cli_err(cmd, "%s", why);
			return -1;
		}
	}
	/* A client command given neither --device nor --socket uses the service
	 * at the default socket (boot: the service picks its own). --host asks
	 * for a runtime of the command's own, which needs a device. */
	if (!c->socket && !c->boot.device && c->boot.host_mode && strcmp(cmd, "boot")) {
		cli_err(cmd, "--host runs a runtime for this command: give --device DEV too");
		return -1;
	}
	if (!c->socket && !c->boot.device && strcmp(cmd, "boot") && listed(cc->options, "socket")) {
		static char def[108];
		if (gpuos_service_default_socket(0, def, sizeof(def)) < 0) {
			cli_err(cmd, "$GPUOS_SOCKET is too long for a socket's address");
			return -1;
		}
		c->socket = def;
		c->socket_default = 1;
	}
	return 0;
}

int cli_parse(struct cli *c, const char *cmd, int argc, char **argv)
{
	const struct cli_command *cc = cli_command(cmd);
	struct option lo[NOPTIONS + 1];
	char shorts[8] = ":", **av;
	size_t i;
	int r = 0, k;

	memset(c, 0, sizeof(*c));
	gpuos_boot_opts_default(&c->boot);
	c->part = -1;
	if (!cc)
		return -1;
	getopt_tables(cc, lo, shorts);
	/* getopt wants the program name first; it permutes its own copy. */
	av = calloc((size_t)argc + 2, sizeof(char *));
	c->argv = calloc((size_t)argc + 1, sizeof(char *));
	if (!av || !c->argv) {
		free(av);
		cli_err(cmd, "out of memory");
		return -1;
	}
	av[0] = (char *)cmd;
	for (k = 0; k < argc; k++)
		av[k + 1] = argv[k];
	optind = 0; /* a fresh scan (glibc), whatever ran before */
	opterr = 0;
	while (!r) {
		int li = -1, id = getopt_long(argc + 1, av, shorts, lo, &li);
		if (id == -1)
			break;
		if (id == '?' || id == ':') {
			refused(cc, cmd, id, av[optind - 1]);
			r = -1;
			break;
		}
		for (i = 0; i < NOPTIONS && options[i].id != id; i++)
			;
		r = take(c, cmd, &options[i], options[i].kind == V_NONE ? NULL : optarg);
	}
	for (k = optind; !r && k < argc + 1; k++)
		c->argv[c->argc++] = av[k];
	free(av);
	if (!r)
		r = options_agree(c, cc, cmd);
	if (r) {
		free(c->argv);
		c->argv = NULL;
	}
	return r;
}

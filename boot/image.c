/* SPDX-License-Identifier: MIT */
/*
 * Inspecting GPU app images (ELF cubins) with libelf before they are loaded.
 *
 * What a cubin holds, as nvcc 13.0 writes it (checked on cubins built here
 * with `nvcc -cubin -arch=sm_XX` for sm_75, 80, 86, 87, 89, 90, 90a, 100,
 * 100a, 100f, 103, 110, 120 and 121, read with readelf, and against
 * `cuobjdump -res-usage` and the driver's cuFuncGetAttribute on an H100):
 *
 * - ELF64, little-endian, e_machine EM_CUDA (190), e_ident[EI_OSABI] 0x41,
 *   e_ident[EI_ABIVERSION] 8, e_type ET_EXEC (ET_REL with -rdc=true until
 *   nvlink has linked it; the driver loads only the linked kind).
 * - e_flags, ELF ABI version 8: bits 15:8 hold the SM version as 10 * major
 *   + minor (0x50 sm_80, 0x56 sm_86, 0x57 sm_87, 0x59 sm_89, 0x5a sm_90,
 *   0x64 sm_100, 0x78 sm_120, 0x79 sm_121); bits 7:0 are 0x04 up to sm_90
 *   and 0x02 from sm_100; bits 27:24 are 0x6, 0xf with -G. sm_90a and
 *   sm_90 have the same e_flags: what marks architecture-specific code is
 *   attribute 0x09 = 1 in .nv.compat (sm_90a, sm_100a; 0 otherwise).
 *   Older toolkits (ELF ABI version 7 and below, e_ident[EI_OSABI] 0x33)
 *   kept the SM version in bits 7:0 (EF_CUDA_SM); that is decoded from the
 *   published layout only, nvcc 13 writes no such file to check against.
 * - .note.nv.cuinfo: an "NVIDIA Corp" note of type 1000 whose descriptor
 *   starts with a 16-bit version (2) and the 16-bit SM version again; when
 *   present it must agree with e_flags.
 * - Kernels (__global__) are STT_FUNC symbols with st_other bit 0x10 in a
 *   section .text.NAME; non-inlined __device__ functions are STT_FUNC too
 *   but without that bit.
 * - .nv.info and .nv.info.NAME hold attributes, each a format byte, an
 *   attribute byte and then: nothing but two bytes of padding (1, NVAL),
 *   a byte and a padding byte (2, BVAL), a 16-bit value (3, HVAL), or a
 *   16-bit size and that many bytes (4, SVAL). EIATTR_REGCOUNT (0x2f,
 *   SVAL {symbol index, registers}) is in .nv.info; EIATTR_MAX_THREADS
 *   (0x05, SVAL {x, y, z}, from __launch_bounds__ or .maxntid) and
 *   EIATTR_REQNTID (0x10, the same for .reqntid) are in .nv.info.NAME.
 *   The registers agree with ptxas -v and cuobjdump -res-usage; until
 *   sm_89 bits 31:24 of .text.NAME's sh_info hold them too (a fallback).
 * - Static shared memory is the size of .nv.shared.NAME (NOBITS): what
 *   cuobjdump -res-usage calls SHARED. For sm_90 it includes 1 KiB that the
 *   toolkit reserves (.nv.shared.reserved.0): a kernel with 1200 bytes of
 *   __shared__ arrays has a 2224-byte section, while cuFuncGetAttribute
 *   (SHARED_SIZE_BYTES) says 1200.
 *
 * Every value from the file is checked before use: the headers and every
 * section's bytes are bounds-checked on the raw buffer before libelf sees
 * it, and notes and attributes are walked with their lengths checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuos/app.h"
#include "gpuos/host.h"

#ifndef EM_CUDA
#define EM_CUDA 190
#endif

#define FATBIN_MAGIC         0xba55ed50u /* nvcc -fatbin, .nv_fatbin contents */
#define FATBIN_WRAPPER_MAGIC 0x466243b1u /* the wrapper nvcc puts in host objects */
#define MAX_REGS_PER_THREAD  255u        /* of every architecture since sm_35 */
#define STO_CUDA_ENTRY       0x10u       /* st_other: a __global__ function */

#define EIFMT_NVAL 1
#define EIFMT_BVAL 2
#define EIFMT_HVAL 3
#define EIFMT_SVAL 4

#define EIATTR_MAX_THREADS 0x05
#define EIATTR_REQNTID     0x10
#define EIATTR_REGCOUNT    0x2f
#define NVCOMPAT_ARCH_SPECIFIC 0x09 /* .nv.compat: 1 for sm_XYa */

#define NV_NOTE_CUINFO 1000u

struct ctx {
	const uint8_t *buf;
	size_t len;
	Elf *elf;
	size_t shnum;
	GElf_Shdr *sh;       /* [shnum] */
	const char **names;  /* [shnum], into libelf's copy of .shstrtab */
	uint32_t sm;         /* 10 * major + minor */
	int arch_specific;
	char *err;
	size_t errlen;
};

static int fail(struct ctx *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct ctx *c, int rc, const char *fmt, ...)
{
	va_list ap;
	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static const char *machine_name(unsigned m)
{
	switch (m) {
	case EM_386: return "i386";
	case EM_X86_64: return "x86-64";
	case EM_AARCH64: return "AArch64";
	case EM_ARM: return "ARM";
	case EM_PPC64: return "PowerPC64";
	case EM_RISCV: return "RISC-V";
	case EM_AMDGPU: return "AMDGPU";
	case EM_BPF: return "BPF";
	default: return "not CUDA";
	}
}

/* The ELF header's identity: a little-endian ELF64 executable for
 * EM_CUDA, with a reason for each thing it may be instead. */
static int check_ident(struct ctx *c)
{
	const uint8_t *b = c->buf;
	size_t len = c->len;
	unsigned type, machine;

	if (len == 0)
		return fail(c, -ENOEXEC, "empty file, not a cubin");
	if (len >= 4 && rd32(b) == FATBIN_MAGIC)
		return fail(c, -ENOEXEC, "a fatbin (a container of images), not a cubin: build the app with "
					 "nvcc -cubin -arch=sm_XX, or take one image out with cuobjdump -xelf");
	if (len >= 4 && rd32(b) == FATBIN_WRAPPER_MAGIC)
		return fail(c, -ENOEXEC, "a fatbin wrapper, not a cubin: build the app with nvcc -cubin -arch=sm_XX");
	if (len < 4 || memcmp(b, ELFMAG, SELFMAG) != 0) {
		if ((len >= 2 && b[0] == '/' && b[1] == '/') || (len >= 8 && memcmp(b, ".version", 8) == 0))
			return fail(c, -ENOEXEC, "PTX text, not a cubin: assemble it with ptxas -arch=sm_XX");
		return fail(c, -ENOEXEC, "not an ELF file (no \\177ELF magic), not a cubin");
	}
	if (len < sizeof(Elf64_Ehdr))
		return fail(c, -EINVAL, "truncated: %zu bytes, the ELF header alone takes %zu", len,
			    sizeof(Elf64_Ehdr));
	if (b[EI_CLASS] != ELFCLASS64)
		return fail(c, b[EI_CLASS] == ELFCLASS32 ? -ENOEXEC : -EINVAL,
			    "ELF class %u (%s); a cubin is ELF64", b[EI_CLASS],
			    b[EI_CLASS] == ELFCLASS32 ? "32-bit" : "invalid");
	if (b[EI_DATA] != ELFDATA2LSB)
		return fail(c, -ENOEXEC, "ELF data encoding %u; a cubin is little-endian", b[EI_DATA]);
	machine = rd16(b + offsetof(Elf64_Ehdr, e_machine));
	if (machine != EM_CUDA)
		return fail(c, -ENOEXEC, "an ELF file for machine %u (%s), not a CUDA cubin (EM_CUDA, %u)", machine,
			    machine_name(machine), EM_CUDA);
	type = rd16(b + offsetof(Elf64_Ehdr, e_type));
	if (type == ET_REL)
		return fail(c, -ENOEXEC, "a relocatable cubin (built with -rdc=true): link it first "
					 "(nvlink -arch=sm_XX, or build without -rdc)");
	if (type != ET_EXEC)
		return fail(c, -ENOEXEC, "ELF type %u; a loadable cubin is ET_EXEC (%u)", type, ET_EXEC);
	return 0;
}

/* The program headers (nvcc writes them last) and what they load. */
static int check_segments(struct ctx *c)
{
	const uint8_t *b = c->buf;
	size_t len = c->len, i;
	uint64_t phoff = rd64(b + offsetof(Elf64_Ehdr, e_phoff));
	unsigned phnum = rd16(b + offsetof(Elf64_Ehdr, e_phnum));
	unsigned phentsize = rd16(b + offsetof(Elf64_Ehdr, e_phentsize));

	if (phnum && phentsize != sizeof(Elf64_Phdr))
		return fail(c, -EINVAL, "malformed: program header size %u, ELF64 has %zu", phentsize,
			    sizeof(Elf64_Phdr));
	if (phnum && (phoff > len || (uint64_t)phnum * sizeof(Elf64_Phdr) > len - phoff))
		return fail(c, -EINVAL,
			    "truncated or malformed: %u program headers at offset %llu run past the end of the file "
			    "(%zu bytes)",
			    phnum, (unsigned long long)phoff, len);
	for (i = 0; i < phnum; i++) {
		const uint8_t *p = b + phoff + i * sizeof(Elf64_Phdr);
		uint64_t off = rd64(p + offsetof(Elf64_Phdr, p_offset));
		uint64_t size = rd64(p + offsetof(Elf64_Phdr, p_filesz));
		if (off > len || size > len - off)
			return fail(c, -EINVAL,
				    "truncated or malformed: segment %zu holds bytes %llu..%llu, the file has %zu", i,
				    (unsigned long long)off, (unsigned long long)off + size, len);
	}
	return 0;
}

/* The ELF header and the section header table, on the raw bytes. */
static int check_headers(struct ctx *c)
{
	const uint8_t *b = c->buf;
	size_t len = c->len, i;
	uint64_t shoff;
	unsigned shentsize, shnum, shstrndx;
	int r;

	r = check_ident(c);
	if (r)
		return r;
	shoff = rd64(b + offsetof(Elf64_Ehdr, e_shoff));
	shentsize = rd16(b + offsetof(Elf64_Ehdr, e_shentsize));
	shnum = rd16(b + offsetof(Elf64_Ehdr, e_shnum));
	shstrndx = rd16(b + offsetof(Elf64_Ehdr, e_shstrndx));
	if (shentsize != sizeof(Elf64_Shdr))
		return fail(c, -EINVAL, "malformed: section header size %u, ELF64 has %zu", shentsize,
			    sizeof(Elf64_Shdr));
	if (shnum == 0)
		return fail(c, -EINVAL, "malformed: no section headers (e_shnum 0)");
	if (shoff > len || (uint64_t)shnum * sizeof(Elf64_Shdr) > len - shoff)
		return fail(c, -EINVAL,
			    "truncated or malformed: %u section headers at offset %llu run past the end of the file "
			    "(%zu bytes)",
			    shnum, (unsigned long long)shoff, len);
	if (shstrndx == SHN_UNDEF || shstrndx >= shnum)
		return fail(c, -EINVAL, "malformed: section name table index %u, the file has %u sections", shstrndx,
			    shnum);
	for (i = 1; i < shnum; i++) {
		const uint8_t *s = b + shoff + i * sizeof(Elf64_Shdr);
		uint32_t st = rd32(s + offsetof(Elf64_Shdr, sh_type));
		uint64_t off = rd64(s + offsetof(Elf64_Shdr, sh_offset));
		uint64_t size = rd64(s + offsetof(Elf64_Shdr, sh_size));
		if (st == SHT_NOBITS)
			continue;
		if (off > len || size > len - off)
			return fail(c, -EINVAL,
				    "truncated or malformed: section %zu holds bytes %llu..%llu, the file has %zu", i,
				    (unsigned long long)off, (unsigned long long)off + size, len);
	}
	r = check_segments(c);
	if (r)
		return r;
	if (rd32(b + shoff + shstrndx * sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_type)) != SHT_STRTAB)
		return fail(c, -EINVAL, "malformed: section %u holds the section names but is no string table",
			    shstrndx);
	c->shnum = shnum;
	return 0;
}

/* The bytes of section i (checked in bounds by check_headers). */
static const uint8_t *scn_bytes(const struct ctx *c, size_t i)
{
	return c->buf + c->sh[i].sh_offset;
}

static size_t find_scn(const struct ctx *c, const char *prefix, const char *name)
{
	size_t i, pl = strlen(prefix);
	for (i = 1; i < c->shnum; i++)
		if (!strncmp(c->names[i], prefix, pl) && !strcmp(c->names[i] + pl, name))
			return i;
	return 0;
}

/* Walk the attributes of a .nv.info-style section; fn sees each one.
 * For NVAL vlen is 0, BVAL 1, HVAL 2, SVAL the declared size. */
typedef int (*attr_fn)(struct ctx *c, void *arg, unsigned fmt, unsigned attr, const uint8_t *val, uint32_t vlen);

static int walk_attrs(struct ctx *c, size_t scn, attr_fn fn, void *arg)
{
	const uint8_t *p = scn_bytes(c, scn);
	uint64_t size = c->sh[scn].sh_type == SHT_NOBITS ? 0 : c->sh[scn].sh_size, o = 0;
	int r;

	while (o < size) {
		unsigned fmt, attr;
		uint32_t vlen;
		const uint8_t *val;
		if (size - o < 4)
			return fail(c, -EINVAL, "malformed %s: an attribute cut short at byte %llu of %llu",
				    c->names[scn], (unsigned long long)o, (unsigned long long)size);
		fmt = p[o];
		attr = p[o + 1];
		switch (fmt) {
		case EIFMT_NVAL: val = p + o + 2; vlen = 0; o += 4; break;
		case EIFMT_BVAL: val = p + o + 2; vlen = 1; o += 4; break;
		case EIFMT_HVAL: val = p + o + 2; vlen = 2; o += 4; break;
		case EIFMT_SVAL:
			vlen = rd16(p + o + 2);
			if (vlen > size - o - 4)
				return fail(c, -EINVAL,
					    "malformed %s: attribute 0x%02x at byte %llu claims %u bytes, %llu remain",
					    c->names[scn], attr, (unsigned long long)o, vlen,
					    (unsigned long long)(size - o - 4));
			val = p + o + 4;
			o += 4 + (uint64_t)vlen;
			break;
		default:
			return fail(c, -EINVAL, "malformed %s: unknown attribute format %u at byte %llu", c->names[scn],
				    fmt, (unsigned long long)o);
		}
		r = fn(c, arg, fmt, attr, val, vlen);
		if (r)
			return r;
	}
	return 0;
}

/* Every SHT_NOTE section: lengths in bounds; .note.nv.cuinfo agrees with
 * e_flags. */
static int check_notes(struct ctx *c)
{
	size_t i;
	for (i = 1; i < c->shnum; i++) {
		const uint8_t *p;
		uint64_t size, o = 0;
		if (c->sh[i].sh_type != SHT_NOTE)
			continue;
		p = scn_bytes(c, i);
		size = c->sh[i].sh_size;
		while (o < size) {
			uint64_t namesz, descsz, name_pad, desc_pad, rem = size - o;
			uint32_t type;
			const uint8_t *name, *desc;
			if (rem < 12)
				return fail(c, -EINVAL, "malformed note in %s: %llu bytes left, a note header takes 12",
					    c->names[i], (unsigned long long)rem);
			namesz = rd32(p + o);
			descsz = rd32(p + o + 4);
			type = rd32(p + o + 8);
			name_pad = GPUOS_ALIGN_UP(namesz, 4u);
			desc_pad = GPUOS_ALIGN_UP(descsz, 4u);
			if (name_pad > rem - 12 || descsz > rem - 12 - name_pad)
				return fail(c, -EINVAL,
					    "malformed note in %s: name %llu and descriptor %llu bytes, %llu remain",
					    c->names[i], (unsigned long long)namesz, (unsigned long long)descsz,
					    (unsigned long long)(rem - 12));
			name = p + o + 12;
			desc = name + name_pad;
			if (namesz == 12 && !memcmp(name, "NVIDIA Corp", 12) && type == NV_NOTE_CUINFO && descsz >= 4 &&
			    rd16(desc) == 2 && rd16(desc + 2) != c->sm)
				return fail(c, -EINVAL,
					    "malformed: e_flags say sm_%u, the toolkit's note %s says sm_%u", c->sm,
					    c->names[i], rd16(desc + 2));
			/* the last descriptor may end without its padding */
			o += 12 + name_pad + (desc_pad <= rem - 12 - name_pad ? desc_pad : descsz);
		}
	}
	return 0;
}

static int compat_attr(struct ctx *c, void *arg, unsigned fmt, unsigned attr, const uint8_t *val, uint32_t vlen)
{
	(void)arg;
	if (fmt == EIFMT_BVAL && attr == NVCOMPAT_ARCH_SPECIFIC && vlen == 1)
		c->arch_specific = val[0] == 1;
	return 0;
}

static int check_arch_flags(struct ctx *c, unsigned elf_abi, uint32_t flags)
{
	size_t s;
	c->sm = elf_abi >= 8 ? (flags >> 8) & 0xffu : flags & 0xffu;
	if (c->sm < 10)
		return fail(c, -EINVAL, "malformed: no SM architecture in e_flags 0x%x (ELF ABI version %u)", flags,
			    elf_abi);
	s = find_scn(c, ".nv.compat", "");
	return s ? walk_attrs(c, s, compat_attr, NULL) : 0;
}

/* Per-entry scratch while the attributes are read. */
struct ent {
	size_t sym;         /* symbol index */
	size_t text;        /* section index of .text.NAME */
	const char *name;
	int have_regs;
	uint32_t regs;
	uint32_t maxntid[3], reqntid[3];
	int have_maxntid, have_reqntid;
};

struct ents {
	struct ent *e;
	size_t n;
};

static int regcount_attr(struct ctx *c, void *arg, unsigned fmt, unsigned attr, const uint8_t *val, uint32_t vlen)
{
	struct ents *es = (struct ents *)arg;
	uint32_t sym, regs;
	size_t i;
	if (fmt != EIFMT_SVAL || attr != EIATTR_REGCOUNT)
		return 0;
	if (vlen < 8)
		return fail(c, -EINVAL, "malformed: a register count attribute of %u bytes, it takes 8", vlen);
	sym = rd32(val);
	regs = rd32(val + 4);
	for (i = 0; i < es->n; i++) {
		if (es->e[i].sym != sym)
			continue;
		if (regs > MAX_REGS_PER_THREAD)
			return fail(c, -EOVERFLOW, "malformed: %s uses %u registers per thread, at most %u exist",
				    es->e[i].name, regs, MAX_REGS_PER_THREAD);
		es->e[i].regs = regs;
		es->e[i].have_regs = 1;
	}
	return 0;
}

static int entry_attr(struct ctx *c, void *arg, unsigned fmt, unsigned attr, const uint8_t *val, uint32_t vlen)
{
	struct ent *e = (struct ent *)arg;
	uint32_t *dim;
	uint64_t prod;
	int k;
	if (fmt != EIFMT_SVAL)
		return 0;
	if (attr == EIATTR_REGCOUNT) {
		struct ents one = {e, 1};
		return regcount_attr(c, &one, fmt, attr, val, vlen);
	}
	if (attr != EIATTR_MAX_THREADS && attr != EIATTR_REQNTID)
		return 0;
	if (vlen < 12)
		return fail(c, -EINVAL, "malformed: %s declares a block shape of %u bytes, it takes 12", e->name, vlen);
	dim = attr == EIATTR_REQNTID ? e->reqntid : e->maxntid;
	prod = 1;
	for (k = 0; k < 3; k++) {
		dim[k] = rd32(val + 4 * k);
		prod *= dim[k];
		if (dim[k] == 0 || prod > 65536)
			return fail(c, -EOVERFLOW, "malformed: %s declares a block of %u x %u x %u threads", e->name,
				    rd32(val), rd32(val + 4), rd32(val + 8));
	}
	if (attr == EIATTR_REQNTID)
		e->have_reqntid = 1;
	else
		e->have_maxntid = 1;
	return 0;
}

/* The gpuos_abi_version symbol: 4 bytes at its value in its section. */
static int read_abi(struct ctx *c, const GElf_Sym *s, uint32_t *abi)
{
	size_t i = s->st_shndx;
	if (s->st_size != 4)
		return fail(c, -EINVAL, "malformed ABI note: %s has %llu bytes, it takes 4", GPUOS_APP_ABI_SYMBOL,
			    (unsigned long long)s->st_size);
	if (i == SHN_UNDEF || i >= c->shnum || c->sh[i].sh_type == SHT_NOBITS || c->sh[i].sh_size < 4 ||
	    s->st_value > c->sh[i].sh_size - 4)
		return fail(c, -EINVAL, "malformed ABI note: %s at section %zu offset %llu is not in the file's bytes",
			    GPUOS_APP_ABI_SYMBOL, i, (unsigned long long)s->st_value);
	*abi = rd32(scn_bytes(c, i) + s->st_value);
	return 0;
}

static int is_entry(const struct ctx *c, const GElf_Sym *s, const char *name)
{
	return GELF_ST_TYPE(s->st_info) == STT_FUNC && (s->st_other & STO_CUDA_ENTRY) && s->st_shndx != SHN_UNDEF &&
	       s->st_shndx < c->shnum && !strncmp(c->names[s->st_shndx], ".text.", 6) &&
	       !strcmp(c->names[s->st_shndx] + 6, name) && name[0];
}

/* Every section's header and name, through libelf, into c->sh and
 * c->names; *symscn the symbol table's index (0 when there is none). */
static int read_sections(struct ctx *c, GElf_Ehdr *eh, size_t *symscn)
{
	size_t i, n;

	if (elf_kind(c->elf) != ELF_K_ELF || !gelf_getehdr(c->elf, eh))
		return fail(c, -EINVAL, "malformed ELF: %s", elf_errmsg(-1));
	if (elf_getshdrnum(c->elf, &n) || n != c->shnum)
		return fail(c, -EINVAL, "malformed ELF: section count (%s)", elf_errmsg(-1));
	c->sh = (GElf_Shdr *)calloc(c->shnum, sizeof(*c->sh));
	c->names = (const char **)calloc(c->shnum, sizeof(*c->names));
	if (!c->sh || !c->names)
		return fail(c, -ENOMEM, "out of memory");
	for (i = 0; i < c->shnum; i++) {
		Elf_Scn *scn = elf_getscn(c->elf, i);
		if (!scn || !gelf_getshdr(scn, &c->sh[i]))
			return fail(c, -EINVAL, "malformed ELF: section %zu: %s", i, elf_errmsg(-1));
		c->names[i] = i ? elf_strptr(c->elf, eh->e_shstrndx, c->sh[i].sh_name) : "";
		if (!c->names[i])
			return fail(c, -EINVAL, "malformed: section %zu has a name outside the section name table", i);
		if (c->sh[i].sh_type == SHT_SYMTAB) {
			if (*symscn)
				return fail(c, -EINVAL, "malformed: two symbol tables (sections %zu and %zu)", *symscn, i);
			*symscn = i;
		}
	}
	return 0;
}

/* The symbol table of section symscn: its data and *nsym symbols. */
static int symbol_table(struct ctx *c, size_t symscn, Elf_Data **symdata, size_t *nsym)
{
	if (!symscn)
		return fail(c, -ENOEXEC, "no symbol table, so no entry points: not an app image");
	if (c->sh[symscn].sh_entsize != sizeof(Elf64_Sym) || c->sh[symscn].sh_size % sizeof(Elf64_Sym) ||
	    c->sh[symscn].sh_link == SHN_UNDEF || c->sh[symscn].sh_link >= c->shnum ||
	    c->sh[c->sh[symscn].sh_link].sh_type != SHT_STRTAB)
		return fail(c, -EINVAL, "malformed symbol table (entry size %llu, %llu bytes, strings in section %u)",
			    (unsigned long long)c->sh[symscn].sh_entsize, (unsigned long long)c->sh[symscn].sh_size,
			    c->sh[symscn].sh_link);
	*symdata = elf_getdata(elf_getscn(c->elf, symscn), NULL);
	*nsym = c->sh[symscn].sh_size / sizeof(Elf64_Sym);
	if (!*symdata || (*symdata)->d_size < *nsym * sizeof(Elf64_Sym))
		return fail(c, -EINVAL, "malformed symbol table: %s", elf_errmsg(-1));
	return 0;
}

/* The symbols: the ABI note (one version, this gpuos's) into *abi, and
 * the number of entry points into *nent. */
static int scan_symbols(struct ctx *c, size_t symscn, Elf_Data *symdata, size_t nsym, uint32_t *abi,
			size_t *nent)
{
	size_t i;
	int have_abi = 0, r;

	for (i = 1; i < nsym; i++) {
		GElf_Sym s;
		const char *name;
		if (!gelf_getsym(symdata, (int)i, &s))
			return fail(c, -EINVAL, "malformed symbol %zu: %s", i, elf_errmsg(-1));
		name = elf_strptr(c->elf, c->sh[symscn].sh_link, s.st_name);
		if (!name)
			return fail(c, -EINVAL, "malformed: symbol %zu has a name outside its string table", i);
		if (GELF_ST_TYPE(s.st_info) == STT_OBJECT && !strcmp(name, GPUOS_APP_ABI_SYMBOL)) {
			uint32_t v = 0;
			r = read_abi(c, &s, &v);
			if (r)
				return r;
			if (have_abi && v != *abi)
				return fail(c, -EINVAL, "malformed: two ABI notes, versions %u and %u", *abi, v);
			*abi = v;
			have_abi = 1;
		} else if (is_entry(c, &s, name)) {
			(*nent)++;
		}
	}
	if (!have_abi)
		return fail(c, -EPROTO,
			    "no gpuos ABI note (symbol %s): not built as a gpuos app; add GPUOS_APP_ABI_NOTE from "
			    "gpuos/app.h",
			    GPUOS_APP_ABI_SYMBOL);
	if (*abi != GPUOS_ABI_VERSION)
		return fail(c, -EPROTO, "built for gpuos ABI version %u, this gpuos speaks version %u: rebuild the app "
					"against this gpuos's include/gpuos",
			    *abi, GPUOS_ABI_VERSION);
	if (*nent == 0)
		return fail(c, -ENOEXEC, "no entry points (no __global__ function in the image)");
	if (*nent > GPUOS_IMAGE_MAX_ENTRIES)
		return fail(c, -EOVERFLOW, "%zu entry points, at most %u are taken", *nent, GPUOS_IMAGE_MAX_ENTRIES);
	return 0;
}

/* What the caller is told of each entry: its registers, shared memory
 * and block shape. */
static int fill_entries(struct ctx *c, const struct ents *es, struct gpuos_image_info *out)
{
	size_t i;

	out->entries = (struct gpuos_image_entry *)calloc(es->n, sizeof(*out->entries));
	if (!out->entries)
		return fail(c, -ENOMEM, "out of memory");
	out->nentries = (uint32_t)es->n;
	for (i = 0; i < es->n; i++) {
		const struct ent *e = &es->e[i];
		struct gpuos_image_entry *o = &out->entries[i];
		size_t sh = find_scn(c, ".nv.shared.", e->name);
		const uint32_t *dim = e->have_reqntid ? e->reqntid : e->have_maxntid ? e->maxntid : NULL;

		o->name = strdup(e->name);
		if (!o->name)
			return fail(c, -ENOMEM, "out of memory");
		/* nvcc up to sm_89 also keeps the count in bits 31:24 of sh_info */
		o->registers = e->have_regs ? e->regs : (uint32_t)(c->sh[e->text].sh_info >> 24);
		if (sh) {
			if (c->sh[sh].sh_size > UINT32_MAX)
				return fail(c, -EOVERFLOW, "malformed: %s declares %llu bytes of shared memory", e->name,
					    (unsigned long long)c->sh[sh].sh_size);
			o->shared_bytes = (uint32_t)c->sh[sh].sh_size;
		}
		o->max_threads = GPUOS_IMAGE_DEFAULT_MAX_THREADS;
		if (dim) {
			memcpy(o->block, dim, sizeof(o->block));
			o->max_threads = dim[0] * dim[1] * dim[2];
			o->exact = e->have_reqntid;
		}
	}
	return 0;
}

static int inspect(struct ctx *c, struct gpuos_image_info *out)
{
	GElf_Ehdr eh;
	size_t i, symscn = 0, nsym = 0, nent = 0;
	Elf_Data *symdata = NULL;
	struct ents es = {NULL, 0};
	uint32_t abi = 0;
	int r;

	r = read_sections(c, &eh, &symscn);
	if (!r)
		r = check_arch_flags(c, eh.e_ident[EI_ABIVERSION], eh.e_flags);
	if (!r)
		r = check_notes(c);
	/* symbols: the entries and the ABI note */
	if (!r)
		r = symbol_table(c, symscn, &symdata, &nsym);
	if (!r)
		r = scan_symbols(c, symscn, symdata, nsym, &abi, &nent);
	if (r)
		return r;

	es.e = (struct ent *)calloc(nent, sizeof(*es.e));
	if (!es.e)
		return fail(c, -ENOMEM, "out of memory");
	for (i = 1; i < nsym && es.n < nent; i++) {
		GElf_Sym s;
		const char *name;
		gelf_getsym(symdata, (int)i, &s); /* read once already: cannot fail now */
		name = elf_strptr(c->elf, c->sh[symscn].sh_link, s.st_name);
		if (!name || !is_entry(c, &s, name))
			continue;
		es.e[es.n].sym = i;
		es.e[es.n].text = s.st_shndx;
		es.e[es.n].name = name;
		es.n++;
	}

	/* registers from .nv.info, shapes (and registers where they live there) from .nv.info.NAME */
	i = find_scn(c, ".nv.info", "");
	r = i ? walk_attrs(c, i, regcount_attr, &es) : 0;
	for (i = 0; !r && i < es.n; i++) {
		size_t s = find_scn(c, ".nv.info.", es.e[i].name);
		if (s)
			r = walk_attrs(c, s, entry_attr, &es.e[i]);
	}
	if (!r)
		r = fill_entries(c, &es, out);
	if (!r) {
		out->sm_major = c->sm / 10;
		out->sm_minor = c->sm % 10;
		out->arch_specific = c->arch_specific;
		snprintf(out->arch, sizeof(out->arch), "sm_%u%s", c->sm, c->arch_specific ? "a" : "");
		out->elf_abi = eh.e_ident[EI_ABIVERSION];
		out->abi_version = abi;
	}
	free(es.e);
	return r;
}

void gpuos_image_info_free(struct gpuos_image_info *info)
{
	uint32_t i;
	if (!info)
		return;
	for (i = 0; info->entries && i < info->nentries; i++)
		free(info->entries[i].name);
	free(info->entries);
	memset(info, 0, sizeof(*info));
}

int gpuos_image_inspect(const void *buf, size_t len, struct gpuos_image_info *out, char *err, size_t errlen)
{
	struct ctx c;
	char *copy;
	int r;

	memset(&c, 0, sizeof(c));
	c.buf = (const uint8_t *)buf;
	c.len = buf ? len : 0;
	c.err = err;
	c.errlen = errlen;
	if (err && errlen)
		err[0] = 0;
	memset(out, 0, sizeof(*out));
	r = check_headers(&c);
	if (r)
		return r;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return fail(&c, -EINVAL, "libelf: %s", elf_errmsg(-1));
	/* libelf takes a writable image; it gets its own copy (aligned by malloc) */
	copy = (char *)malloc(len);
	if (!copy)
		return fail(&c, -ENOMEM, "out of memory for a %zu-byte image", len);
	memcpy(copy, buf, len);
	c.elf = elf_memory(copy, len);
	if (!c.elf)
		r = fail(&c, -EINVAL, "malformed ELF: %s", elf_errmsg(-1));
	else
		r = inspect(&c, out);
	if (r)
		gpuos_image_info_free(out);
	if (c.elf)
		elf_end(c.elf);
	free(c.sh);
	free(c.names);
	free(copy);
	return r;
}

int gpuos_image_read_file(const char *path, uint8_t **buf_out, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd, r;

	*buf_out = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st)) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > GPUOS_IMAGE_MAX_BYTES) {
		snprintf(err, errlen, "%s: %s", path,
			 S_ISREG(st.st_mode) ? "larger than 1 GiB, not an app image" : "not a regular file");
		close(fd);
		return S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
	}
	buf = (uint8_t *)malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			snprintf(err, errlen, "%s: read: %s", path, n < 0 ? strerror(errno) : "file shrank");
			free(buf);
			close(fd);
			return r;
		}
		got += (size_t)n;
	}
	close(fd);
	*buf_out = buf;
	*len = got;
	return 0;
}

int gpuos_image_inspect_file(const char *path, struct gpuos_image_info *out, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t got;
	int r;

	memset(out, 0, sizeof(*out));
	r = gpuos_image_read_file(path, &buf, &got, err, errlen);
	if (r)
		return r;
	r = gpuos_image_inspect(buf, got, out, err, errlen);
	free(buf);
	if (r && err && errlen) {
		/* prefix the path: "APP.cubin: why" */
		char tmp[512];
		snprintf(tmp, sizeof(tmp), "%s", err);
		snprintf(err, errlen, "%s: %s", path, tmp);
	}
	return r;
}

/* The machine this program runs on, as ELF names it. */
static unsigned host_machine(void)
{
#if defined(__x86_64__)
	return EM_X86_64;
#elif defined(__aarch64__)
	return EM_AARCH64;
#else
	return EM_NONE;
#endif
}

/* A host-mode variant's gpuos_abi_version, from the file's dynamic symbol
 * table: in an ET_DYN of this machine, 4 bytes at the symbol's address in
 * the section that holds it, read without loading the library. */
static int so_abi(struct ctx *c, uint32_t *abi)
{
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;

	if (!gelf_getehdr(c->elf, &eh))
		return fail(c, -ENOEXEC, "not an ELF file: %s", elf_errmsg(-1));
	if (eh.e_type != ET_DYN || eh.e_machine != host_machine())
		return fail(c, -ENOEXEC, "not a shared library for this machine (ELF type %u, machine %s)",
			    (unsigned)eh.e_type, machine_name(eh.e_machine));
	while ((scn = elf_nextscn(c->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i, n;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		n = d ? d->d_size / sh.sh_entsize : 0;
		for (i = 0; i < n; i++) {
			GElf_Sym sym, *y = gelf_getsym(d, (int)i, &sym);
			const char *name = y ? elf_strptr(c->elf, sh.sh_link, y->st_name) : NULL;
			Elf_Scn *in;
			GElf_Shdr ish;
			if (!name || strcmp(name, GPUOS_APP_ABI_SYMBOL) || y->st_shndx == SHN_UNDEF)
				continue;
			in = elf_getscn(c->elf, y->st_shndx);
			if (y->st_size != 4 || !in || !gelf_getshdr(in, &ish) || ish.sh_type != SHT_PROGBITS ||
			    y->st_value < ish.sh_addr || y->st_value - ish.sh_addr > ish.sh_size - 4 || ish.sh_size < 4 ||
			    ish.sh_offset > c->len || y->st_value - ish.sh_addr > c->len - ish.sh_offset - 4)
				return fail(c, -EPROTO, "malformed ABI note: %s is not 4 bytes of the file",
					    GPUOS_APP_ABI_SYMBOL);
			*abi = rd32(c->buf + ish.sh_offset + (y->st_value - ish.sh_addr));
			return 0;
		}
	}
	return fail(c, -EPROTO, "no gpuos ABI note (GPUOS_APP_ABI_NOTE; symbol %s)", GPUOS_APP_ABI_SYMBOL);
}

int gpuos_image_so_abi(const char *path, uint32_t *abi, char *err, size_t errlen)
{
	struct ctx c;
	uint8_t *buf;
	size_t len;
	int r;

	memset(&c, 0, sizeof(c));
	c.err = err;
	c.errlen = errlen;
	r = gpuos_image_read_file(path, &buf, &len, err, errlen);
	if (r)
		return r;
	c.buf = buf;
	c.len = len;
	if (elf_version(EV_CURRENT) == EV_NONE)
		r = fail(&c, -EINVAL, "libelf: %s", elf_errmsg(-1));
	else if (len < SELFMAG || memcmp(buf, ELFMAG, SELFMAG) || !(c.elf = elf_memory((char *)buf, len)))
		r = fail(&c, -ENOEXEC, "not an ELF file");
	else
		r = so_abi(&c, abi);
	if (c.elf)
		elf_end(c.elf);
	free(buf);
	return r;
}

int gpuos_image_check_arch(const struct gpuos_image_info *info, int sm_major, int sm_minor, char *err, size_t errlen)
{
	unsigned maj = info->sm_major, min = info->sm_minor;
	if (sm_major <= 0 || sm_minor < 0 || sm_minor > 9) {
		snprintf(err, errlen, "no valid GPU architecture given (%d.%d)", sm_major, sm_minor);
		return -EINVAL;
	}
	if (info->arch_specific && (maj != (unsigned)sm_major || min != (unsigned)sm_minor)) {
		snprintf(err, errlen,
			 "the image is built for %s (architecture-specific features), which runs only on sm_%u%u; "
			 "this GPU is sm_%d%d: rebuild the app with -arch=sm_%d%d",
			 info->arch, maj, min, sm_major, sm_minor, sm_major, sm_minor);
		return -ENOEXEC;
	}
	if (maj != (unsigned)sm_major) {
		snprintf(err, errlen,
			 "the image is built for %s, this GPU is sm_%d%d: a cubin runs only on GPUs of its own major "
			 "version (%u.x); rebuild the app with -arch=sm_%d%d",
			 info->arch, sm_major, sm_minor, maj, sm_major, sm_minor);
		return -ENOEXEC;
	}
	if (min > (unsigned)sm_minor) {
		snprintf(err, errlen,
			 "the image is built for %s, newer than this GPU (sm_%d%d): a cubin runs on GPUs of its major "
			 "version with the same or a newer minor version; rebuild the app with -arch=sm_%d%d",
			 info->arch, sm_major, sm_minor, sm_major, sm_minor);
		return -ENOEXEC;
	}
	return 0;
}

const struct gpuos_image_entry *gpuos_image_entry_find(const struct gpuos_image_info *info, const char *name)
{
	uint32_t i;
	for (i = 0; i < info->nentries; i++)
		if (!strcmp(info->entries[i].name, name))
			return &info->entries[i];
	return NULL;
}

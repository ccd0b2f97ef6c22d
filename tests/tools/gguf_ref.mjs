#!/usr/bin/env node
// SPDX-License-Identifier: MIT
//
// tests/tools/gguf_ref.mjs - a reference dump of a GGUF made by a reader
// written by others: the npm package @huggingface/gguf. Prints the JSON shape
// that gguf_compare.py compares with `gpuos gguf --json` and with
// tests/tools/gguf_dump:
//
//   {"version","tensor_count","kv_count","alignment","data_offset",
//    "kv":[{"key","type","value"} | {"key","type":"array","elem_type","count","value":[<=16]}],
//    "tensors":[{"name","type","type_id","dims","rel_offset","abs_offset","byte_size"}]}
//
// Usage: node tests/tools/gguf_ref.mjs [--modules DIR] FILE.gguf > ref.json
//   DIR holds @huggingface/gguf (default: node_modules beside the Makefile,
//   where scripts/deps.sh installs it).
// Exit status: 0 dumped, 1 the package refused the file (its message on
// stderr), 2 usage or the package is missing.
//
// How the package represents things (version 0.4.x, checked when this was
// written):
//  - gguf(path, {allowLocalFile: true, typedMetadata: true}) returns
//    {metadata, typedMetadata, tensorInfos, tensorDataOffset, littleEndian}.
//  - version is a Number; tensor_count, kv_count, tensorDataOffset, every
//    uint64/int64 value, tensor shape dims and tensor offsets are BigInt
//    (JSON.stringify throws on them, hence the serializer below).
//  - uint8..int32 and float32/float64 are Numbers (float32 widened to double),
//    bool is a boolean, strings are decoded as UTF-8 (invalid bytes -> U+FFFD).
//  - typedMetadata[key] = {value, type, subType}: type is the GGUF value type
//    id, subType the element type of an array. Arrays are whole JS arrays
//    (nested arrays as arrays of arrays, their element types not reported).
//  - metadata and typedMetadata are plain objects keyed by the key: KV order
//    is file order except that integer-like keys ("123") come first, a
//    duplicate key keeps the last value, and the header fields version,
//    tensor_count and kv_count share the namespace.
//  - Limits: 1,000,000 array elements, 10 MB per string, 100,000 KVs,
//    10,000,000 tensors, 8 dims, nesting depth 4; it reads v1 files (32-bit
//    counts) and big-endian files, which gpuos refuses.
//  - tensorInfos[i] = {name, n_dims, shape: BigInt[], dtype: Number, offset: BigInt};
//    dtype names come from its GGMLQuantizationType enum. The package does
//    not export per-type block sizes, so byte_size uses the table below
//    (ggml-common.h block layouts).

import { createRequire } from "node:module";
import { resolve, join } from "node:path";
import { existsSync } from "node:fs";

const TYPE_NAMES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
	"string", "array", "uint64", "int64", "float64"];
const QK_K = 256n;
// type id: [elements per block, bytes per block]
const BLOCKS = {
	0: [1n, 4n], 1: [1n, 2n], 2: [32n, 18n], 3: [32n, 20n], 6: [32n, 22n], 7: [32n, 24n],
	8: [32n, 34n], 9: [32n, 36n], 10: [QK_K, 84n], 11: [QK_K, 110n], 12: [QK_K, 144n],
	13: [QK_K, 176n], 14: [QK_K, 210n], 15: [QK_K, 292n], 16: [QK_K, 66n], 17: [QK_K, 74n],
	18: [QK_K, 98n], 19: [QK_K, 50n], 20: [32n, 18n], 21: [QK_K, 110n], 22: [QK_K, 82n],
	23: [QK_K, 136n], 24: [1n, 1n], 25: [1n, 2n], 26: [1n, 4n], 27: [1n, 8n], 28: [1n, 8n],
	29: [QK_K, 56n], 30: [1n, 2n], 34: [QK_K, 54n], 35: [QK_K, 66n], 39: [32n, 17n],
	40: [64n, 36n], 41: [128n, 18n], 42: [64n, 18n],
};
const ITEMS = 16;

function usage(msg) {
	if (msg) process.stderr.write(`gguf_ref: ${msg}\n`);
	process.stderr.write("usage: node gguf_ref.mjs [--modules DIR] FILE.gguf\n");
	process.exit(2);
}

// JSON text with BigInt as exact integers and non-finite floats as strings;
// the top object one field a line, each KV and tensor on a line of its own.
function ser(v, depth = 0) {
	if (typeof v === "bigint") return v.toString();
	if (typeof v === "number") {
		if (Number.isNaN(v)) return '"nan"';
		if (v === Infinity) return '"inf"';
		if (v === -Infinity) return '"-inf"';
		return JSON.stringify(v);
	}
	if (typeof v === "string" || typeof v === "boolean" || v === null) return JSON.stringify(v);
	if (Array.isArray(v)) {
		if (depth === 1 && v.length) return "[\n  " + v.map((x) => ser(x, depth + 1)).join(",\n  ") + "\n ]";
		return "[" + v.map((x) => ser(x, depth + 1)).join(", ") + "]";
	}
	const parts = Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${ser(x, depth + 1)}`);
	if (depth === 0) return "{\n " + parts.join(",\n ") + "\n}";
	return "{" + parts.join(", ") + "}";
}

// Items of a nested array as gguf_compare.py expects them: the arrays inside
// the KV's array (level 1) with their first items, deeper ones count only.
function nested(items, level) {
	return items.slice(0, ITEMS).map((x) => {
		const d = { count: x.length };
		if (level <= 1) d.value = x.length && Array.isArray(x[0]) ? nested(x, level + 1) : x.slice(0, ITEMS);
		return d;
	});
}

async function main() {
	const args = process.argv.slice(2);
	let modules = "node_modules";
	let file = null;
	for (let i = 0; i < args.length; i++) {
		if (args[i] === "--modules") modules = args[++i];
		else if (!file) file = args[i];
		else usage("too many arguments");
	}
	if (!file) usage();
	modules = resolve(modules);
	if (!existsSync(join(modules, "@huggingface", "gguf")))
		usage(`@huggingface/gguf not found under ${modules} (scripts/deps.sh installs it)`);
	const require = createRequire(join(modules, "noop.js"));
	const pkg = require("@huggingface/gguf");

	let r;
	try {
		r = await pkg.gguf(resolve(file), { allowLocalFile: true, typedMetadata: true });
	} catch (e) {
		process.stderr.write(`gguf_ref: ${file}: ${e.message}\n`);
		process.exit(1);
	}
	const tm = r.typedMetadata;
	const alignment = Number(r.metadata["general.alignment"] ?? 32);
	const out = {
		version: tm.version.value,
		tensor_count: tm.tensor_count.value,
		kv_count: tm.kv_count.value,
		alignment,
		data_offset: r.tensorDataOffset,
		kv: [],
		tensors: [],
	};
	for (const key of Object.keys(tm)) {
		if (key === "version" || key === "tensor_count" || key === "kv_count") continue;
		if (/^\d+$/.test(key)) process.stderr.write(`gguf_ref: key "${key}" is integer-like: its position is not file order\n`);
		const e = tm[key];
		const d = { key, type: TYPE_NAMES[e.type] };
		if (e.type === 9) {
			d.elem_type = TYPE_NAMES[e.subType];
			d.count = e.value.length;
			d.value = e.subType === 9 ? nested(e.value, 1) : e.value.slice(0, ITEMS);
		} else {
			d.value = e.value;
		}
		out.kv.push(d);
	}
	for (const t of r.tensorInfos) {
		const b = BLOCKS[t.dtype];
		let n = 1n;
		for (const x of t.shape) n *= BigInt(x);
		const ne0 = t.shape.length ? BigInt(t.shape[0]) : 1n;
		out.tensors.push({
			name: t.name,
			type: pkg.GGMLQuantizationType[t.dtype] ?? `type${t.dtype}`,
			type_id: t.dtype,
			dims: t.shape,
			rel_offset: t.offset,
			abs_offset: r.tensorDataOffset + BigInt(t.offset),
			byte_size: b ? (ne0 / b[0]) * b[1] * (ne0 ? n / ne0 : 0n) : null,
		});
	}
	process.stdout.write(ser(out) + "\n");
}

main();

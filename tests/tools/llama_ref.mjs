#!/usr/bin/env node
// SPDX-License-Identifier: MIT
//
// tests/tools/llama_ref.mjs - the referee of apps/llama: llama.cpp itself,
// through the npm package node-llama-cpp (its prebuilt llama.cpp for
// linux-x64, CPU only; scripts/deps.sh installs it into node_modules/ beside
// the Makefile, without its optional GPU builds and without its install
// script). Nothing here builds llama.cpp or downloads anything: getLlama runs
// with gpu: false, build: "never", skipDownload: true, and fails when the
// prebuilt binary is missing.
//
//   node tests/tools/llama_ref.mjs [--modules DIR] tokenize MODEL.gguf [--bos] [--special] [--text] < lines
//   node tests/tools/llama_ref.mjs [--modules DIR] tokenize --out-dir DIR MODEL.gguf... [options] < lines
//   node tests/tools/llama_ref.mjs [--modules DIR] detokenize MODEL.gguf [--remove-special] [--special] < lines
//   node tests/tools/llama_ref.mjs [--modules DIR] generate MODEL.gguf --prompt TEXT --tokens N [--ignore-eos]
//                                  [--no-flash-attention]
//   node tests/tools/llama_ref.mjs [--modules DIR] generate --each FILE [--ignore-eos] [--no-flash-attention]
//   node tests/tools/llama_ref.mjs [--modules DIR] info MODEL.gguf
//   node tests/tools/llama_ref.mjs [--modules DIR] batch --out-dir DIR --job "NAME|CMD|INPUT|OPTS"... MODEL.gguf...
//
// tokenize: each line of stdin is one JSON string; each line of stdout the
//   JSON array of its token ids. The text goes to llama.cpp's
//   llama_tokenize through node-llama-cpp's model.tokenize(text, special),
//   which calls common_tokenize(vocab, text, add_special = false,
//   parse_special = special). So by default (--no-bos) no BOS or EOS is
//   added and special-token parsing is off: "<s>" is the three characters,
//   as user text is, while user-defined tokens of the vocabulary (neox's
//   runs of spaces, deepseek's "õ") still match before the pre-tokenizer, as
//   in llama.cpp. The SPM space prefix ("Hello" -> "▁Hello") is part of the
//   tokenization itself and is always there. --bos gives llama.cpp's
//   add_special = true: the BOS token first when the vocabulary's add_bos
//   says so (tokenizer.ggml.add_bos_token, default true for "llama" and
//   false for most "gpt2" vocabularies), the EOS token last when its add_eos
//   says so. --special turns special-token parsing on ("<s>" becomes BOS).
//   --text prints {"ids": [...], "text": detokenize(ids)} instead (the
//   detokenizer below, remove_special = --bos, unparse_special = --special,
//   in the same process: one model load for both).
// detokenize: each line a JSON array of ids; each output line the JSON
//   string llama_detokenize(ids, remove_special, unparse_special) gives:
//   node-llama-cpp's model.detokenize passes remove_special = false and
//   unparse_special = --special (default off: control tokens give nothing);
//   --remove-special does here what remove_special = true does in llama.cpp
//   when the vocabulary adds BOS (EOS): the leading BOS (trailing EOS)
//   dropped, and the first piece then keeps its leading space. The text is
//   a JS string: bytes that are not UTF-8 (a partial character) come back
//   as U+FFFD.
// generate: greedy decoding (temperature 0: the most probable token every
//   step; no repeat penalty, no grammar, no chat template) of N tokens after
//   the prompt, tokenized as llama.cpp's completion tools do by default
//   (common_tokenize with add_special = true and parse_special = true: the
//   BOS when add_bos says so, "<s>" in the prompt is the BOS token). It stops
//   early at an end-of-generation token (as llama.cpp does) unless
//   --ignore-eos. Prints {"prompt_tokens": [...], "tokens": [...],
//   "stop": "length" | "eog", "text": detokenize(tokens)}. The context is
//   node-llama-cpp's default (its flash attention setting included) unless
//   --no-flash-attention: attention computed the standard way, as an
//   engine without flash attention does (the last bits of the logits, and
//   so a near tie between two tokens, can differ between the two).
// generate --each FILE: one generate for each line of FILE, a JSON object
//   {"model": PATH, "prompt": TEXT, "tokens": N, "out": PATH}, its answer
//   written to "out", or to "out".err with llama.cpp's reason; one start of
//   llama.cpp, each model loaded once (a start and a load cost about 2 s of
//   CPU: tests/emu/llama.sh asks for 14 answers). The other options are the
//   same for every line; exit status 1 when any was refused.
// info: the vocabulary as llama.cpp loaded it: type, bos, eos, add_bos ...
// batch --out-dir DIR --job "NAME|COMMAND|INPUT|OPTIONS"... MODEL...: each
//   model loaded once for all the jobs (tokenize or detokenize, with their
//   options, on the lines of the file INPUT): DIR/NAME/MODELNAME.jsonl, or
//   .err with llama.cpp's reason; exit status 1 when any was refused.
// --out-dir DIR (tokenize, detokenize): several models in one process (one
//   start of llama.cpp: about a second saved per model), the lines of stdin
//   for each: DIR/NAME.jsonl (NAME: the model's file name without .gguf),
//   or DIR/NAME.err with llama.cpp's reason when it refuses the model; the
//   exit status is 1 when any was refused.
//
// Vocabulary-only GGUFs (no tensors) load with vocabOnly: true for
// tokenize, detokenize and info; llama.cpp still logs "missing tensor
// 'token_embd.weight'" for them (node-llama-cpp's memory estimate loads the
// model's tensors once): its log lines are kept and printed only when a
// command fails, or with --verbose.
//
// Exit status: 0 done, 1 llama.cpp refused the model or a line, 2 usage or
// node-llama-cpp missing.

import { resolve, join, basename } from "node:path";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";

const USAGE = `usage: node llama_ref.mjs [--modules DIR] [--verbose] COMMAND MODEL.gguf [options]
  tokenize [--out-dir DIR] MODEL.gguf... [--bos | --no-bos] [--special] [--text]   (stdin: JSON strings, one a line)
  detokenize [--out-dir DIR] MODEL.gguf... [--remove-special] [--special]          (stdin: JSON arrays of ids)
  generate MODEL.gguf --prompt TEXT --tokens N [--ignore-eos] [--no-flash-attention]
  generate --each FILE [--ignore-eos] [--no-flash-attention]                       (FILE: JSON lines {model, prompt, tokens, out})
  info MODEL.gguf
  batch --out-dir DIR --job "NAME|tokenize or detokenize|INPUT|OPTIONS"... MODEL.gguf...`;

function usage(msg) {
	if (msg) process.stderr.write(`llama_ref: ${msg}\n`);
	process.stderr.write(USAGE + "\n");
	process.exit(2);
}

const logs = [];
let verbose = false;

function fail(msg) {
	for (const l of logs) process.stderr.write(l);
	process.stderr.write(`llama_ref: ${msg}\n`);
	process.exit(1);
}

async function loadPackage(modules) {
	const entry = join(modules, "node-llama-cpp", "dist", "index.js");
	if (!existsSync(entry))
		usage(`node-llama-cpp not found under ${modules} (scripts/deps.sh installs it)`);
	return import(pathToFileURL(entry).href);
}

// One model: its tokens and a detokenizer as the options ask.
async function openModel(llama, path, vocabOnly) {
	const m = await llama.loadModel({ modelPath: resolve(path), vocabOnly, gpuLayers: 0 });
	const tk = m.tokens;
	return {
		m,
		tk,
		// llama.cpp's add_special = true around a tokenization
		addSpecial(ids) {
			const out = [];
			if (tk.shouldPrependBosToken && tk.bos != null) out.push(tk.bos);
			out.push(...ids);
			if (tk.shouldAppendEosToken && tk.eos != null) out.push(tk.eos);
			return out;
		},
		// llama_detokenize(ids, remove_special, unparse_special): node-llama-cpp
		// passes remove_special = false, so it is done here: a trailing EOS
		// dropped; a leading BOS dropped but, as llama.cpp does then, the
		// first piece keeps its leading space (the BOS's own text is cut
		// from the front of the whole text instead).
		detok(ids, special, removeSpecial) {
			let a = ids.slice();
			if (removeSpecial && tk.shouldAppendEosToken && a.length && a[a.length - 1] === tk.eos) a = a.slice(0, -1);
			if (removeSpecial && tk.shouldPrependBosToken && a.length && a[0] === tk.bos) {
				const pre = m.detokenize([tk.bos], special);
				const full = m.detokenize(a, special);
				if (full.startsWith(pre)) return full.slice(pre.length);
				throw new Error("the text of BOS does not start the text (cannot remove it)");
			}
			return m.detokenize(a, special);
		},
	};
}

// The output lines of tokenize or detokenize for one model; throws on a bad line.
function runLines(cmd, mm, lines, o) {
	const out = [];
	let nVocab = 0;
	if (cmd === "detokenize") for (const _ of mm.m.iterateAllTokens()) nVocab++;
	lines.forEach((line, k) => {
		if (line === "") return;
		let v;
		try {
			v = JSON.parse(line);
		} catch (e) {
			throw new Error(`stdin line ${k + 1}: not JSON: ${e.message}`);
		}
		if (cmd === "tokenize") {
			if (typeof v !== "string") throw new Error(`stdin line ${k + 1}: not a JSON string`);
			let ids = mm.m.tokenize(v, o.special);
			if (o.bos) ids = mm.addSpecial(ids);
			out.push(o.text ? JSON.stringify({ ids, text: mm.detok(ids, o.special, o.bos) }) : JSON.stringify(ids));
		} else {
			if (!Array.isArray(v) || !v.every((x) => Number.isInteger(x) && x >= 0 && x < nVocab))
				throw new Error(`stdin line ${k + 1}: not a JSON array of token ids`);
			out.push(JSON.stringify(mm.detok(v, o.special, o.removeSpecial)));
		}
	});
	return out;
}

// llama.cpp's greedy answer to one prompt, as the JSON line generate prints
async function generate(mm, text, tokens, o) {
	const { m } = mm;
	// common_tokenize(ctx, prompt, add_special = true, parse_special = true)
	const prompt = mm.addSpecial(text === "" ? [] : m.tokenize(text, true));
	if (!prompt.length) throw new Error("the prompt has no tokens (and the model adds no BOS)");
	const ctxOpts = { contextSize: Math.max(64, prompt.length + tokens + 8), sequences: 1, threads: 2 };
	if (o.noFlashAttention) ctxOpts.flashAttention = false;
	const ctx = await m.createContext(ctxOpts);
	const seq = ctx.getSequence();
	const out = [], top2 = [];
	let stop = "length";
	if (tokens > 0) {
		const gen = o.top2 ? seq.evaluateWithMetadata(prompt, { probabilities: true }, { temperature: 0 })
			: seq.evaluate(prompt, { temperature: 0 });
		for await (const e of gen) {
			const t = o.top2 ? e.token : e;
			if (!o.ignoreEos && m.isEogToken(t)) {
				stop = "eog";
				break;
			}
			out.push(t);
			if (o.top2) {
				// the two likeliest next tokens at this step, and their probabilities
				const best = [...e.probabilities.entries()].sort((a, b) => b[1] - a[1]).slice(0, 2);
				top2.push(best.map(([tok, p]) => [tok, p]));
			}
			if (out.length >= tokens) break;
		}
	}
	await ctx.dispose();
	return JSON.stringify({ prompt_tokens: prompt, tokens: out, stop, text: m.detokenize(out),
		...(o.top2 ? { top2 } : {}) });
}

// The options of a command (all but the global ones); the rest into pos.
function parseOpts(args, pos, global) {
	const o = { bos: false, special: false, text: false, removeSpecial: false, ignoreEos: false, noFlashAttention: false, prompt: null, tokens: null };
	for (let i = 0; i < args.length; i++) {
		const a = args[i];
		if (global && a === "--modules" && i + 1 < args.length) global.modules = args[++i];
		else if (global && a === "--verbose") verbose = true;
		else if (global && a === "--out-dir" && i + 1 < args.length) global.outDir = args[++i];
		else if (global && a === "--job" && i + 1 < args.length) global.jobs.push(args[++i]);
		else if (global && a === "--each" && i + 1 < args.length) global.each = args[++i];
		else if (a === "--bos") o.bos = true;
		else if (a === "--no-bos") o.bos = false;
		else if (a === "--special") o.special = true;
		else if (a === "--text") o.text = true;
		else if (a === "--remove-special") o.removeSpecial = true;
		else if (a === "--ignore-eos") o.ignoreEos = true;
		else if (a === "--no-flash-attention") o.noFlashAttention = true;
		else if (a === "--top2") o.top2 = true;
		else if (a === "--prompt" && i + 1 < args.length) o.prompt = args[++i];
		else if (a === "--tokens" && i + 1 < args.length) o.tokens = Number(args[++i]);
		else if (a.startsWith("--") || !pos) usage(`unknown option ${a}`);
		else pos.push(a);
	}
	return o;
}

async function main() {
	const g = {
		modules: join(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "..", "..", "node_modules"),
		outDir: null,
		jobs: [],
		each: null,
	};
	const pos = [];
	const o = parseOpts(process.argv.slice(2), pos, g);
	const modules = g.modules, outDir = g.outDir;
	const [cmd, ...models] = pos;
	// generate --each: the models are named in FILE
	let each = null;
	if (g.each !== null) {
		if (cmd !== "generate" || models.length) usage("--each is for generate, without MODEL");
		if (!existsSync(g.each)) usage(`${g.each}: no such file`);
		each = readFileSync(g.each, "utf8").split("\n").filter((l) => l.trim()).map((l, k) => {
			let v;
			try {
				v = JSON.parse(l);
			} catch (e) {
				usage(`${g.each} line ${k + 1}: not JSON: ${e.message}`);
			}
			if (typeof v.model !== "string" || typeof v.prompt !== "string" || typeof v.out !== "string" ||
			    !Number.isInteger(v.tokens) || v.tokens < 0)
				usage(`${g.each} line ${k + 1}: want {"model", "prompt", "tokens", "out"}`);
			return v;
		});
		models.push(...new Set(each.map((j) => j.model)));
	}
	if (!cmd || !models.length) usage();
	if (!["tokenize", "detokenize", "generate", "info", "batch"].includes(cmd)) usage(`unknown command ${cmd}`);
	if (models.length > 1 && !outDir && !each) usage("several models need --out-dir DIR");
	if (outDir && !["tokenize", "detokenize", "batch"].includes(cmd)) usage("--out-dir is for tokenize, detokenize and batch");
	// batch: jobs "NAME|tokenize or detokenize|INPUT FILE|OPTIONS", each into OUT-DIR/NAME/
	const jobs = g.jobs.map((j) => {
		const [name, jcmd, input, opts = ""] = j.split("|");
		if (!name || !["tokenize", "detokenize"].includes(jcmd) || !input || !existsSync(input))
			usage(`--job ${j}: want NAME|tokenize or detokenize|INPUT FILE|OPTIONS`);
		const lines = readFileSync(input, "utf8").split("\n");
		if (lines.length && lines[lines.length - 1] === "") lines.pop();
		return { name, cmd: jcmd, lines, o: parseOpts(opts.split(" ").filter((x) => x), null, null) };
	});
	if (cmd === "batch" && (!outDir || !jobs.length)) usage("batch needs --out-dir DIR and --job ...");
	if (cmd !== "batch" && jobs.length) usage("--job is for batch");
	if (cmd === "generate" && !each && (o.prompt === null || !Number.isInteger(o.tokens) || o.tokens < 0))
		usage("generate needs --prompt TEXT and --tokens N");
	for (const f of models) if (!existsSync(f)) usage(`${f}: no such file`);
	if (outDir && !existsSync(outDir)) usage(`${outDir}: no such directory`);

	const pkg = await loadPackage(resolve(modules));
	const logger = (level, message) => {
		const line = `[llama.cpp ${level}] ${message}${message.endsWith("\n") ? "" : "\n"}`;
		if (verbose) process.stderr.write(line);
		else logs.push(line);
	};
	let llama;
	try {
		llama = await pkg.getLlama({
			gpu: false,
			build: "never",
			skipDownload: true,
			usePrebuiltBinaries: true,
			progressLogs: false,
			logLevel: pkg.LlamaLogLevel.warn,
			logger,
			maxThreads: 2,
		});
	} catch (e) {
		fail(`no usable prebuilt llama.cpp (node-llama-cpp: ${e.message}); run scripts/deps.sh`);
	}

	if (each) {
		let refused = 0;
		for (const f of models) {
			let mm = null;
			try {
				mm = await openModel(llama, f, false);
			} catch (e) {
				for (const j of each.filter((j) => j.model === f))
					writeFileSync(j.out + ".err", `${f}: ${e.message}\n${logs.join("")}`);
				logs.length = 0;
				refused++;
				continue;
			}
			for (const j of each.filter((j) => j.model === f)) {
				try {
					writeFileSync(j.out, await generate(mm, j.prompt, j.tokens, o) + "\n");
				} catch (e) {
					writeFileSync(j.out + ".err", `${e.message}\n${logs.join("")}`);
					refused++;
				}
				logs.length = 0;
			}
			await mm.m.dispose();
		}
		return refused ? 1 : 0;
	}

	if (cmd === "info" || cmd === "generate") {
		let mm;
		try {
			mm = await openModel(llama, models[0], cmd === "info");
		} catch (e) {
			fail(`${models[0]}: ${e.message}`);
		}
		const { m, tk } = mm;
		if (cmd === "info") {
			process.stdout.write(JSON.stringify({
				vocabulary_type: m.vocabularyType,
				bos: tk.bos, eos: tk.eos, eot: tk.eot, nl: tk.nl,
				add_bos: tk.shouldPrependBosToken, add_eos: tk.shouldAppendEosToken,
			}) + "\n");
			return 0;
		}
		try {
			process.stdout.write(await generate(mm, o.prompt, o.tokens, o) + "\n");
		} catch (e) {
			fail(e.message);
		}
		return 0;
	}

	if (cmd === "batch") {
		for (const j of jobs) mkdirSync(join(outDir, j.name), { recursive: true });
		let refused = 0;
		for (const f of models) {
			const name = basename(f).replace(/\.gguf$/, "");
			let mm = null;
			try {
				mm = await openModel(llama, f, true);
			} catch (e) {
				for (const j of jobs) writeFileSync(join(outDir, j.name, name + ".err"), `${e.message}\n${logs.join("")}`);
				logs.length = 0;
				refused++;
				continue;
			}
			for (const j of jobs) {
				try {
					const out = runLines(j.cmd, mm, j.lines, j.o);
					writeFileSync(join(outDir, j.name, name + ".jsonl"), out.map((l) => l + "\n").join(""));
				} catch (e) {
					writeFileSync(join(outDir, j.name, name + ".err"), `${e.message}\n`);
					refused++;
				}
			}
			logs.length = 0;
			await mm.m.dispose();
		}
		return refused ? 1 : 0;
	}

	const lines = [];
	const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
	for await (const line of rl) lines.push(line);
	let refused = 0;
	for (const f of models) {
		const name = basename(f).replace(/\.gguf$/, "");
		let out;
		try {
			const mm = await openModel(llama, f, true);
			out = runLines(cmd, mm, lines, o);
			await mm.m.dispose();
		} catch (e) {
			if (!outDir) fail(`${f}: ${e.message}`);
			writeFileSync(join(outDir, name + ".err"), `${e.message}\n${logs.join("")}`);
			logs.length = 0;
			refused++;
			continue;
		}
		logs.length = 0;
		const text = out.map((l) => l + "\n").join("");
		if (outDir) writeFileSync(join(outDir, name + ".jsonl"), text);
		else process.stdout.write(text);
	}
	return refused ? 1 : 0;
}

main().then(
	(rc) => process.exit(rc),
	(e) => fail(e && e.stack ? e.stack : String(e)),
);

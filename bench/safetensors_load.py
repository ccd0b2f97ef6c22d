#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/safetensors.sh's driver: a safetensors checkpoint into VRAM through
gpuos against the safetensors package, in one process.

  safetensors_load.py write OUT [--layers L --hidden H --inter I --vocab V --seed S]
      a Llama-shaped bf16 checkpoint (7B's shapes by default: hidden 4096,
      ffn 11008, vocabulary 32000; 10 layers, 4.57 GB), Hugging Face names,
      written streaming (a few MiB in memory): one random block, each 4 KiB
      of the data stamped with its own number, so that no two 4 KiB of the
      file are equal and a piece loaded to the wrong place changes a tensor.
  safetensors_load.py run --image IMG --file FILE [--path P] [--rounds R]
                          [--device-opts ,OPTS] [--opts k=v,...] [--json OUT]
      R rounds (3), each: (a) safetensors.torch.load_file(FILE,
      device="cuda") with torch.cuda.synchronize(), the runtime parked (a
      program without gpuos would have the GPU to itself); (b) gpuos
      open_model(P) of the image's copy and load() of every tensor into
      VRAM (synchronous: the data has landed when it returns), the runtime
      running. Round 1 checks that both hold the same bytes, tensor by
      tensor. Between rounds everything is freed (torch's cache emptied,
      parked), so every round of each allocates its VRAM afresh. Prints each
      round and a JSON line: bytes, the median seconds and GB/s of each,
      gpuos over safetensors. Without a GPU, PyTorch or the safetensors
      package (the dry run of GPUOS_BENCH_SMALL=1), (a) reads each tensor
      with numpy from the file instead and (b) runs in host mode into host
      memory, and the JSON says so.
"""
import argparse
import json
import os
import statistics
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# ---- the checkpoint --------------------------------------------------------------------

def layout(layers, hidden, inter, vocab):
    """[(name, shape)] of a Llama-shaped checkpoint, in file order."""
    ts = [("model.embed_tokens.weight", [vocab, hidden])]
    for n in range(layers):
        p = "model.layers.%d." % n
        ts += [(p + "self_attn.q_proj.weight", [hidden, hidden]), (p + "self_attn.k_proj.weight", [hidden, hidden]),
               (p + "self_attn.v_proj.weight", [hidden, hidden]), (p + "self_attn.o_proj.weight", [hidden, hidden]),
               (p + "mlp.gate_proj.weight", [inter, hidden]), (p + "mlp.up_proj.weight", [inter, hidden]),
               (p + "mlp.down_proj.weight", [hidden, inter]), (p + "input_layernorm.weight", [hidden]),
               (p + "post_attention_layernorm.weight", [hidden])]
    ts += [("model.norm.weight", [hidden]), ("lm_head.weight", [vocab, hidden])]
    return ts


def write(a):
    import numpy as np
    ts = layout(a.layers, a.hidden, a.inter, a.vocab)
    hdr, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in ts:
        n = 2
        for d in shape:
            n *= d
        hdr[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    piece = 64 << 20
    rng = np.random.default_rng(a.seed)
    block = np.frombuffer(rng.bytes(piece), dtype=np.uint64).copy()
    salt = int(rng.integers(1 << 40))
    with open(a.out, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        done, k = 0, 0
        while done < off:
            n = min(piece, off - done)
            block[::512] = np.arange(salt + k * (piece // 4096), salt + (k + 1) * (piece // 4096), dtype=np.uint64)
            f.write(block.data.cast("B")[:n])
            done += n
            k += 1
    print("wrote %s: %d tensors, %d bytes of data (%.2f GB)" % (a.out, len(ts), off, off / 1e9))


# ---- the run ---------------------------------------------------------------------------

def parse_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
    hdr.pop("__metadata__", None)
    return 8 + n, {k: v for k, v in hdr.items()}


def run(a):
    sys.path.insert(0, os.path.join(ROOT, "apps", "python"))
    import gpuos        # first: the CUDA rules before CUDA starts
    torch = st = None
    why = ""
    try:
        import torch
        import safetensors.torch as st
        if not torch.cuda.is_available():
            why = "PyTorch sees no GPU"
    except ImportError as e:
        why = str(e)
    gpu = not why
    if gpu:
        torch.zeros(1, device="cuda")       # torch's CUDA up before the runtime
    opts = {}
    for kv in filter(None, a.opts.split(",")):
        k, v = kv.split("=", 1)
        opts[k] = int(v)
    data_off, hdr = parse_header(a.file)
    total = sum(v["data_offsets"][1] - v["data_offsets"][0] for v in hdr.values())
    s = gpuos.System(device="emu:" + a.image + a.device_opts, host=not gpu, **opts)
    where = "cuda" if gpu else "cpu"
    print("# %d tensors, %d bytes; runtime %s%s" % (len(hdr), total, "on the GPU (sm_%d)" % s.sm if s.gpu else
                                                  "in host mode", "" if gpu else " (%s)" % why))
    if gpu:
        print("# torch %s, safetensors %s, %s" % (torch.__version__, sys.modules["safetensors"].__version__,
                                                torch.cuda.get_device_name(0)))
    base_s, ours_s, open_s, equal = [], [], [], None
    for r in range(a.rounds):
        # (a) the safetensors package, the runtime parked
        if gpu:
            with s.parked():
                t0 = time.perf_counter()
                ref = st.load_file(a.file, device="cuda")
                torch.cuda.synchronize()
                t1 = time.perf_counter()
        else:
            import numpy as np
            t0 = time.perf_counter()
            ref = {}
            with open(a.file, "rb") as f:
                for name, v in hdr.items():
                    b, e = v["data_offsets"]
                    f.seek(data_off + b)
                    ref[name] = np.fromfile(f, dtype=np.uint16, count=(e - b) // 2)
            t1 = time.perf_counter()
        base_s.append(t1 - t0)
        # (b) gpuos: the model opened afresh (the binding's own table dropped), every tensor loaded
        s._models.pop(a.path, None)
        t2 = time.perf_counter()
        m = s.open_model(a.path)
        t3 = time.perf_counter()
        ts = m.load(device=where)
        t4 = time.perf_counter()
        ours_s.append(t4 - t2)
        open_s.append(t3 - t2)
        print("round %d: safetensors %.3f s (%.2f GB/s); gpuos %.3f s (%.2f GB/s; open_model %.1f ms)" % (
            r + 1, t1 - t0, total / (t1 - t0) / 1e9, t4 - t2, total / (t4 - t2) / 1e9, (t3 - t2) * 1e3))
        sys.stdout.flush()
        if r == 0:
            bad = sorted(set(hdr) ^ set(ts))
            if gpu:
                with s.parked():
                    for name in hdr:
                        if name in ts and not torch.equal(gpuos.to_torch(ts[name]).view(torch.int16),
                                                          ref[name].view(torch.int16)):
                            bad.append(name)
                    torch.cuda.synchronize()
            else:
                bad += [n for n in hdr if n in ts and ts[n].tobytes() != ref[n].tobytes()]
            equal = not bad
            print("round 1: %s" % ("every tensor equal to the safetensors package's" if equal else
                                   "DIFFERENT: " + ", ".join(bad[:5])))
        del ts, m
        if gpu:
            with s.parked():
                del ref
                torch.cuda.empty_cache()        # cudaFree: only while parked
                torch.cuda.synchronize()
        else:
            del ref
    s.close()
    bs, os_ = statistics.median(base_s), statistics.median(ours_s)
    out = {"bytes": total, "tensors": len(hdr), "rounds": a.rounds, "gpu": gpu,
           "st_seconds": bs, "st_gb_per_s": total / bs / 1e9, "gpuos_seconds": os_,
           "gpuos_gb_per_s": total / os_ / 1e9, "open_ms": statistics.median(open_s) * 1e3,
           "ratio": bs / os_, "equal": bool(equal), "st_all": base_s, "gpuos_all": ours_s,
           "baseline": ("safetensors.torch.load_file(device='cuda'), safetensors %s, torch %s" % (
               sys.modules["safetensors"].__version__, torch.__version__)) if gpu else
           "numpy.fromfile per tensor into host memory (dry run: %s)" % why}
    print("median of %d: safetensors %.2f GB/s, gpuos %.2f GB/s: gpuos %.2fx" % (
        a.rounds, out["st_gb_per_s"], out["gpuos_gb_per_s"], out["ratio"]))
    if a.json:
        with open(a.json, "w") as f:
            f.write(json.dumps(out) + "\n")
    return 0 if equal else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("out")
    w.add_argument("--layers", type=int, default=10)
    w.add_argument("--hidden", type=int, default=4096)
    w.add_argument("--inter", type=int, default=11008)
    w.add_argument("--vocab", type=int, default=32000)
    w.add_argument("--seed", type=int, default=1)
    r = sub.add_parser("run")
    r.add_argument("--image", required=True)
    r.add_argument("--file", required=True)
    r.add_argument("--path", default="/model.safetensors")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--device-opts", default="")
    r.add_argument("--opts", default="")
    r.add_argument("--json")
    a = ap.parse_args()
    if a.cmd == "write":
        write(a)
        return 0
    return run(a)


if __name__ == "__main__":
    sys.exit(main())

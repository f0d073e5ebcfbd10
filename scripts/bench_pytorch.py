#!/usr/bin/python3
"""The lengen benchmark models written in plain PyTorch, for a side-by-side step time.

Same architecture as lengen's decoder (fused qkv projection without bias, pre-LayerNorm,
GELU feed-forward, learned absolute positions, untied head), same batch shapes as
experiments/bench/{small,large}.yaml, AdamW, masked cross-entropy. Prints the median ms per
training step (forward + backward + clip + AdamW) and tokens/s as JSON.

Usage: /usr/bin/python3 scripts/bench_pytorch.py --config small|large|seed001 [--steps 20]
(Debian's python3-torch is the same LibTorch 1.13 as lengen's.)

GPU mode (the counterpart of `lengen bench` on CUDA): `--device cuda` with
`--bf16` (autocast to bfloat16, as lengen's `dtype: bfloat16` on CUDA), `--sdpa` (attention
through torch.nn.functional.scaled_dot_product_attention, the fused kernels; PyTorch >= 2.0)
and `--compile` (torch.compile, where present). `seed001` has the shapes of Cho et al. 2025's
multi-operand baseline (6 layers, d_model 1024, 8 heads of 128, d_ff 2048, batch 400 x 240).
The JSON adds the training TFLOP/s of the same count as lengen's (docs/performance.md).

OpenBLAS kernels: where Debian's OpenBLAS does not know the processor and loads its SSE3
(Prescott) kernels, lengen re-executes itself with OPENBLAS_CORETYPE set to the AVX2 or
AVX-512 set (lengen/core/version.h); this script does the same before importing torch, so
both sides multiply with the same kernels. The JSON names them (`blas_core`).
"""
import argparse
import ctypes
import ctypes.util
import json
import math
import os
import statistics
import sys
import time


def openblas_core():
    """The kernel set OpenBLAS picks for this processor, or None when it is not found."""
    for name in ("libopenblas.so.0", ctypes.util.find_library("openblas")):
        try:
            lib = ctypes.CDLL(name) if name else None
        except OSError:
            continue
        if lib is not None and hasattr(lib, "openblas_get_corename"):
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib.openblas_get_corename().decode()
    return None


def use_native_blas_kernels():
    """lengen's use_native_blas_kernels(): re-exec with OPENBLAS_CORETYPE after a fallback."""
    if "OPENBLAS_CORETYPE" in os.environ or os.environ.get("LENGEN_BLAS_AUTO") == "0":
        return
    core = openblas_core()
    if core is None or core.lower() in ("haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"):
        return
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    if {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"} <= flags:
        wanted = "SkylakeX"
    elif {"avx2", "fma"} <= flags:
        wanted = "Haswell"
    else:
        return
    os.environ["OPENBLAS_CORETYPE"] = wanted
    os.environ["LENGEN_BLAS_FALLBACK"] = core
    os.execv(sys.executable, [sys.executable] + sys.argv)


use_native_blas_kernels()

import torch  # noqa: E402  (after the kernel choice, which OpenBLAS makes when it loads)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CONFIGS = {
    # layers, heads, d_model, d_ff, batch, sequence (inputs per row), vocab
    "small": dict(layers=2, heads=4, d_model=128, d_ff=512, batch=64, seq=64, vocab=14),
    "large": dict(layers=6, heads=8, d_model=512, d_ff=2048, batch=32, seq=127, vocab=14),
    "seed001": dict(layers=6, heads=8, d_model=1024, d_ff=2048, batch=400, seq=240, vocab=20),
}


def training_flops(c):
    """lengen/train/flops.h for this model (decoder, GELU, untied head), one step."""
    C, F_, T, L, V = c["d_model"], c["d_ff"], c["seq"], c["layers"], c["vocab"]
    per_layer = 2 * C * C * 4 * T + 4 * C * T * (T + 1) / 2 + 4 * C * F_ * T
    return 3 * c["batch"] * (L * per_layer + 2 * C * V * T)


class Block(nn.Module):
    def __init__(self, d, h, f, sdpa=False):
        super().__init__()
        self.h = h
        self.sdpa = sdpa
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.up = nn.Linear(d, f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.h)
            s = s.masked_fill(mask, float("-inf"))
            y = s.softmax(-1) @ v
        y = y.transpose(1, 2).reshape(B, T, C)
        x = x + self.out(y)
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class Model(nn.Module):
    def __init__(self, layers, heads, d_model, d_ff, vocab, max_pos, sdpa=False):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_pos, d_model)
        self.blocks = nn.ModuleList(Block(d_model, heads, d_ff, sdpa) for _ in range(layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, x):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        h = self.tok(x) + self.pos(torch.arange(T, device=x.device))
        for b in self.blocks:
            h = b(h, mask)
        return self.head(self.ln(h))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", choices=CONFIGS, default="small")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--bf16", action="store_true", help="autocast to bfloat16 (CUDA)")
    ap.add_argument("--sdpa", action="store_true",
                    help="fused attention (F.scaled_dot_product_attention, PyTorch >= 2.0)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch >= 2.0)")
    ap.add_argument("--batch", type=int, default=None, help="override the config's batch")
    ap.add_argument("--seq", type=int, default=None, help="override the config's sequence length")
    ap.add_argument("--peak-tflops", type=float, default=None,
                    help="the device's peak: adds fraction_of_peak (e.g. 989 for an H100 SXM, bf16)")
    args = ap.parse_args()
    if args.sdpa and not hasattr(F, "scaled_dot_product_attention"):
        ap.error(f"--sdpa needs PyTorch >= 2.0 (this is {torch.__version__})")
    if args.compile and not hasattr(torch, "compile"):
        ap.error(f"--compile needs PyTorch >= 2.0 (this is {torch.__version__})")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    c = dict(CONFIGS[args.config])
    c["batch"] = args.batch or c["batch"]
    c["seq"] = args.seq or c["seq"]
    model = Model(c["layers"], c["heads"], c["d_model"], c["d_ff"], c["vocab"], max(256, c["seq"]),
                  sdpa=args.sdpa).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3,
                            **({"fused": True} if device.type == "cuda" else {}))
    forward = torch.compile(model) if args.compile else model
    x = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), device=device)
    y = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), device=device)
    mask = (torch.rand(c["batch"], c["seq"], device=device) < 0.4).float()

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    times = []
    for step in range(args.warmup + args.steps):
        sync()
        t0 = time.perf_counter()
        opt.zero_grad()
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=args.bf16):
            logits = forward(x)
        loss = (F.cross_entropy(logits.float().reshape(-1, c["vocab"]), y.reshape(-1), reduction="none")
                * mask.reshape(-1)).sum() / mask.sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sync()
        if step >= args.warmup:
            times.append(1000 * (time.perf_counter() - t0))
    med = statistics.median(times)
    tokens = c["batch"] * c["seq"]
    tflops = training_flops(c) / (med / 1000) / 1e12
    out = {"config": args.config, "torch": torch.__version__, "device": str(device),
           "threads": args.threads, "bf16": args.bf16, "sdpa": args.sdpa, "compile": args.compile,
           "batch": c["batch"], "seq": c["seq"],
           "parameters": sum(p.numel() for p in model.parameters()),
           "median_ms_per_step": med, "min_ms_per_step": min(times),
           "tokens_per_s": tokens / (med / 1000), "tflops_per_s": tflops,
           "blas_core": openblas_core()}
    if args.peak_tflops:
        out["fraction_of_peak"] = tflops / args.peak_tflops
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

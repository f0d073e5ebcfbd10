#!/usr/bin/python3
"""The lengen benchmark models written in plain PyTorch, for a side-by-side step time.

Same architecture as lengen's decoder for each config (fused qkv projection without bias, the
config's norm and where it sits, its activation, learned positions looked up by ID, untied
head), same batch shapes as experiments/bench/{small,large}.yaml and the seed001 file, AdamW,
masked cross-entropy. Prints the median ms per
training step (forward + backward + clip + AdamW) and tokens/s as JSON.

Usage: /usr/bin/python3 scripts/bench_pytorch.py --config small|large|seed001 [--steps 20]
(Debian's python3-torch is the same LibTorch 1.13 as lengen's.)

GPU mode (the counterpart of `lengen bench` on CUDA): `--device cuda` with
`--bf16` (autocast to bfloat16, as lengen's `dtype: bfloat16` on CUDA), `--sdpa` (attention
through torch.nn.functional.scaled_dot_product_attention, the fused kernels; PyTorch >= 2.0)
and `--compile` (torch.compile, where present). `seed001` is Cho et al. 2025's multi-operand baseline
(experiments/multi_operand/addition-scratchpad-coupling.yaml: 6 layers, d_model 1024, 8 heads
of 128, GEGLU with d_ff 2048, RMSNorm before and after each residual sum, coupled position IDs
into a learned table; batch 400 x 240).
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

# Each config is its lengen file's model: norm (layernorm: weight and bias; rmsnorm: weight, eps
# 1e-6), norm_position (pre: before each sublayer and at the end; pre_post: also after each
# residual sum), activation (gelu; geglu: one fused up-projection to 2 x d_ff, gelu(gate) x
# linear), positions (sequential: 0..T-1; coupled: an ID per token and level, as bi-level
# position coupling gives, drawn at random here; either way learned tables of lengen's sizes, one
# per level, added to the token embedding), vocabulary (lengen's for the task's format), so that
# the parameter counts are lengen's to the last one.
CONFIGS = {
    "small": dict(layers=2, heads=4, d_model=128, d_ff=512, batch=64, seq=64, vocab=14,
                  norm="layernorm", norm_position="pre", activation="gelu", positions="sequential",
                  tables=[129]),
    "large": dict(layers=6, heads=8, d_model=512, d_ff=2048, batch=32, seq=127, vocab=14,
                  norm="layernorm", norm_position="pre", activation="gelu", positions="sequential",
                  tables=[257]),
    "seed001": dict(layers=6, heads=8, d_model=1024, d_ff=2048, batch=400, seq=240, vocab=15,
                    norm="rmsnorm", norm_position="pre_post", activation="geglu",
                    positions="coupled", tables=[41, 41]),
}


def training_flops(c):
    """lengen/train/flops.h for this model (decoder, untied head), one step: 3x the forward."""
    C, F_, T, L, V = c["d_model"], c["d_ff"], c["seq"], c["layers"], c["vocab"]
    products = 1 + (2 if c["activation"] == "geglu" else 1)  # up (x inputs per unit), down
    per_layer = 2 * C * C * 4 * T + 4 * C * T * (T + 1) / 2 + 2 * products * C * F_ * T
    return 3 * c["batch"] * (L * per_layer + 2 * C * V * T)


class RMSNorm(nn.Module):
    """lengen's rmsnorm: x / sqrt(mean(x^2) + eps) * weight (nn.RMSNorm is PyTorch >= 2.4)."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def make_norm(c):
    return RMSNorm(c["d_model"]) if c["norm"] == "rmsnorm" else nn.LayerNorm(c["d_model"])


class Block(nn.Module):
    def __init__(self, c, sdpa=False):
        super().__init__()
        d, f = c["d_model"], c["d_ff"]
        self.h = c["heads"]
        self.sdpa = sdpa
        self.geglu = c["activation"] == "geglu"
        self.pre_attn, self.pre_ff = make_norm(c), make_norm(c)
        self.post = c["norm_position"] == "pre_post"
        if self.post:
            self.post_attn, self.post_ff = make_norm(c), make_norm(c)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.up = nn.Linear(d, 2 * f if self.geglu else f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def feed_forward(self, x):
        u = self.up(x)
        if self.geglu:
            gate, linear = u.chunk(2, dim=-1)
            return self.down(F.gelu(gate) * linear)
        return self.down(F.gelu(u))

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.qkv(self.pre_attn(x)).view(B, T, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.h)
            s = s.masked_fill(mask, float("-inf"))
            y = s.softmax(-1) @ v
        y = y.transpose(1, 2).reshape(B, T, C)
        x = x + self.out(y)
        if self.post:
            x = self.post_attn(x)
        x = x + self.feed_forward(self.pre_ff(x))
        return self.post_ff(x) if self.post else x


class Model(nn.Module):
    def __init__(self, c, sdpa=False):
        super().__init__()
        self.tok = nn.Embedding(c["vocab"], c["d_model"])
        self.pos = nn.ModuleList(nn.Embedding(rows, c["d_model"]) for rows in c["tables"])
        self.blocks = nn.ModuleList(Block(c, sdpa) for _ in range(c["layers"]))
        self.final = make_norm(c)
        self.head = nn.Linear(c["d_model"], c["vocab"], bias=False)

    def forward(self, x, positions):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        h = self.tok(x)
        for table, ids in zip(self.pos, positions):  # one ID tensor per level
            h = h + table(ids)
        for b in self.blocks:
            h = b(h, mask)
        return self.head(self.final(h))


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
    ap.add_argument("--parameters-only", action="store_true",
                    help="print the model's parameter count and stop (scripts/check-bench-reference.py)")
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
    if c["positions"] == "sequential":
        c["tables"] = [max(c["tables"][0], c["seq"])]
    model = Model(c, sdpa=args.sdpa).to(device)
    if args.parameters_only:
        print(json.dumps({"config": args.config, "parameters": sum(p.numel() for p in model.parameters())}))
        return
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3,
                            **({"fused": True} if device.type == "cuda" else {}))
    forward = torch.compile(model) if args.compile else model
    x = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), device=device)
    y = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), device=device)
    mask = (torch.rand(c["batch"], c["seq"], device=device) < 0.4).float()
    if c["positions"] == "coupled":
        positions = [torch.randint(0, rows, (c["batch"], c["seq"]), device=device) for rows in c["tables"]]
    else:
        positions = [torch.arange(c["seq"], device=device)]

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    times = []
    for step in range(args.warmup + args.steps):
        sync()
        t0 = time.perf_counter()
        opt.zero_grad()
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=args.bf16):
            logits = forward(x, positions)
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
           "batch": c["batch"], "seq": c["seq"], "norm": c["norm"],
           "norm_position": c["norm_position"], "activation": c["activation"],
           "parameters": sum(p.numel() for p in model.parameters()),
           "median_ms_per_step": med, "min_ms_per_step": min(times),
           "tokens_per_s": tokens / (med / 1000), "tflops_per_s": tflops,
           "blas_core": openblas_core()}
    if args.peak_tflops:
        out["fraction_of_peak"] = tflops / args.peak_tflops
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

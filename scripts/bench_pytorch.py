#!/usr/bin/python3
"""The lengen benchmark models written in plain PyTorch, for a side-by-side step time.

Same architecture as lengen's decoder (fused qkv projection without bias, pre-LayerNorm,
GELU feed-forward, learned absolute positions, untied head), same batch shapes as
experiments/bench/{small,large}.yaml, AdamW, masked cross-entropy. Prints the median ms per
training step (forward + backward + clip + AdamW) and tokens/s as JSON.

Usage: /usr/bin/python3 scripts/bench_pytorch.py --config small|large [--steps 20]
(Debian's python3-torch is the same LibTorch 1.13 as lengen's.)
"""
import argparse
import json
import math
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {
    # layers, heads, d_model, d_ff, batch, sequence (inputs per row), vocab
    "small": dict(layers=2, heads=4, d_model=128, d_ff=512, batch=64, seq=64, vocab=14),
    "large": dict(layers=6, heads=8, d_model=512, d_ff=2048, batch=32, seq=127, vocab=14),
}


class Block(nn.Module):
    def __init__(self, d, h, f):
        super().__init__()
        self.h = h
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.up = nn.Linear(d, f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        s = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.h)
        s = s.masked_fill(mask, float("-inf"))
        y = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.out(y)
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class Model(nn.Module):
    def __init__(self, layers, heads, d_model, d_ff, vocab, max_pos):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_pos, d_model)
        self.blocks = nn.ModuleList(Block(d_model, heads, d_ff) for _ in range(layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, x):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        h = self.tok(x) + self.pos(torch.arange(T))
        for b in self.blocks:
            h = b(h, mask)
        return self.head(self.ln(h))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", choices=CONFIGS, default="small")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    c = CONFIGS[args.config]
    model = Model(c["layers"], c["heads"], c["d_model"], c["d_ff"], c["vocab"], 256)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, c["vocab"], (c["batch"], c["seq"]))
    y = torch.randint(0, c["vocab"], (c["batch"], c["seq"]))
    mask = (torch.rand(c["batch"], c["seq"]) < 0.4).float()
    times = []
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        logits = model(x)
        loss = (F.cross_entropy(logits.reshape(-1, c["vocab"]), y.reshape(-1), reduction="none")
                * mask.reshape(-1)).sum() / mask.sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss.item()
        if step >= args.warmup:
            times.append(1000 * (time.perf_counter() - t0))
    med = statistics.median(times)
    tokens = c["batch"] * c["seq"]
    print(json.dumps({"config": args.config, "torch": torch.__version__, "threads": args.threads,
                      "parameters": sum(p.numel() for p in model.parameters()),
                      "median_ms_per_step": med, "min_ms_per_step": min(times),
                      "tokens_per_s": tokens / (med / 1000)}, indent=2))


if __name__ == "__main__":
    main()

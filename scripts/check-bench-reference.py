#!/usr/bin/env python3
"""Checks that scripts/bench_pytorch.py models the same network as lengen for each benchmark
config: the PyTorch reference and `lengen bench` on the config's file must count the same
parameters (the norm, its place, the activation's width, the position tables and the vocabulary
all show in the count). Exits 77 (skipped) where this Python has no torch.

Usage: scripts/check-bench-reference.py --cli build/dev/bin/lengen
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = {
    "small": "experiments/bench/small.yaml",
    "large": "experiments/bench/large.yaml",
    "seed001": "experiments/multi_operand/addition-scratchpad-coupling.yaml",
}


def lengen_parameters(cli, path):
    cmd = [cli, "bench", os.path.join(ROOT, path), "--steps", "1", "--warmup", "0",
           "--set", "train.batch_size=2", "--set", "device=cpu", "--set", "dtype=float32",
           "--set", "threads=1"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["parameters"]


def reference_parameters(config):
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "bench_pytorch.py"), "--config", config,
           "--parameters-only", "--threads", "1"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["parameters"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True, help="the lengen executable")
    args = ap.parse_args()
    if importlib.util.find_spec("torch") is None:
        print(f"skipped: {sys.executable} has no torch (Debian's python3-torch)")
        return 77
    bad = 0
    for config, path in FILES.items():
        ours, theirs = lengen_parameters(args.cli, path), reference_parameters(config)
        same = ours == theirs
        bad += not same
        print(f"{config}: lengen {ours:,} parameters ({path}), PyTorch reference {theirs:,}: "
              f"{'same' if same else 'DIFFERENT'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Where a run's evaluation time went, from eval/summary.json (per-cell tokens and seconds).

Prints the total, the throughput, the slowest cells, and the time the same grid would take
at --samples N per cell (evaluation cost is linear in the number of samples of a cell: the
samples of a cell have one length and are evaluated in batches of eval.batch_size).

Usage: eval_cost.py RUN_DIR [--samples N] [--top K]
"""
import argparse
import json
import os


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--samples", type=int, default=None, help="extrapolate to N samples per cell")
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args()
    with open(os.path.join(args.run_dir, "eval", "summary.json")) as f:
        s = json.load(f)
    cells = s["cells"]
    if not cells or "seconds" not in cells[0]:
        raise SystemExit(f"{args.run_dir}: eval/summary.json has no per-cell timings (evaluate it again)")
    axes = s["axes"]
    secs = sum(c["seconds"] for c in cells)
    toks = sum(c["tokens"] for c in cells)
    n = cells[0]["samples"]
    print(f"{len(cells)} cells x {n} samples: {secs:.1f} s, {toks / 1e6:.2f} M tokens, "
          f"{toks / max(secs, 1e-9) / 1e3:.1f} k tokens/s")
    print("slowest cells:")
    for c in sorted(cells, key=lambda c: -c["seconds"])[: args.top]:
        where = ", ".join(f"{a}={c[a]}" for a in axes)
        print(f"  {where}: {c['seconds']:.2f} s, {c['tokens'] // c['samples']} tokens per sample")
    if args.samples:
        est = secs * args.samples / n
        print(f"at {args.samples} samples per cell: about {est:.0f} s ({est / 3600:.2f} h)")


if __name__ == "__main__":
    main()

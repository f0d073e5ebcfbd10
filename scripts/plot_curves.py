#!/usr/bin/python3
"""Draw evaluation during training (eval_curve.jsonl, written by `train.eval_every`) as PNG.

One line per grid cell: exact-match accuracy against the training step, like the
accuracy-per-length curves of Jelassi et al. 2023 (Figure 3). Cells are coloured along the
first axis (e.g. digits); a second axis gets its own line style.

Usage: plot_curves.py EVAL_CURVE_JSONL OUT_PNG [--title TEXT]
Needs Debian's python3-matplotlib (run with /usr/bin/python3).
"""
import json
import os
import sys

from plot_common import arguments, pyplot, save


def main():
    args = arguments(__doc__, "jsonl")
    plt = pyplot()

    records = []
    with open(args.jsonl) as f:
        for line in f:
            line = line.strip()
            if line:
                records.append(json.loads(line))
    if not records:
        sys.exit(f"{args.jsonl}: no records")
    records.sort(key=lambda r: r["step"])
    series = {}
    for r in records:
        for c in r["cells"]:
            key = tuple(sorted(c["cell"].items()))
            series.setdefault(key, []).append((r["step"], 100.0 * c["accuracy"]))
    keys = sorted(series)
    first = sorted({k[0][1] for k in keys})
    cmap = plt.get_cmap("viridis")
    styles = ["-", "--", ":", "-."]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for key in keys:
        pts = series[key]
        colour = cmap(first.index(key[0][1]) / max(1, len(first) - 1))
        style = styles[(sorted({k[1][1] for k in keys}).index(key[1][1]) if len(key) > 1 else 0) % len(styles)]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=colour, marker=".",
                label=", ".join(f"{k}={v}" for k, v in key))
    ax.set_xlabel("training step")
    ax.set_ylabel("exact-match accuracy (%)")
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2 if len(keys) > 8 else 1, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title(args.title or os.path.basename(os.path.dirname(os.path.abspath(args.jsonl))))
    fig.tight_layout()
    save(fig, args.out_png, dpi=110)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Draw the accuracy breakdown of an evaluation (eval.breakdown) as PNG, like Figure 6 of
Jelassi et al. 2023.

Panels: accuracy by each feature (e.g. number of carries, longest carry chain), one line per
grid cell; the distribution of the number of wrong tokens in wrong responses; the position of
the wrong token where exactly one is wrong; per-position accuracy over all samples.

Usage: plot_breakdown.py SUMMARY_JSON OUT_PNG [--title TEXT] [--cells N]
SUMMARY_JSON is a run's eval/summary.json; --cells keeps the N longest cells (default 6) among
those with accuracy strictly between 2% and 98% (all cells when none is).
Needs Debian's python3-matplotlib (run with /usr/bin/python3).
"""
import argparse
import json
import os
import sys


def cell_label(cell, axes):
    return ", ".join(f"{a}={cell[a]}" for a in axes)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("summary")
    ap.add_argument("out_png")
    ap.add_argument("--title", default=None)
    ap.add_argument("--cells", type=int, default=6)
    args = ap.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(args.summary) as f:
        summary = json.load(f)
    axes = summary["axes"]
    cells = [c for c in summary["cells"] if "analysis" in c]
    if not cells:
        sys.exit(f"{args.summary}: no cell has an analysis (set eval.breakdown)")
    # Cells where the model is neither always right nor always wrong say the most; the longest
    # of those (or, if there are none, the longest cells).
    informative = [c for c in cells if 0.02 < c["accuracy"] < 0.98]
    cells = (informative or cells)[-args.cells:]
    features = sorted({f for c in cells for f in c["analysis"]["by_feature"]})
    panels = len(features) + 3
    fig, axs = plt.subplots(1, panels, figsize=(3.6 * panels, 3.6))
    cmap = plt.get_cmap("viridis")
    colour = {i: cmap(i / max(1, len(cells) - 1)) for i in range(len(cells))}

    for p, feature in enumerate(features):
        ax = axs[p]
        for i, c in enumerate(cells):
            rows = c["analysis"]["by_feature"].get(feature, [])
            ax.plot([r["value"] for r in rows], [100.0 * r["accuracy"] for r in rows], marker=".",
                    color=colour[i], label=cell_label(c, axes))
        ax.set_xlabel(feature)
        ax.set_ylabel("accuracy (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.set_title(f"accuracy by {feature}", fontsize=9)

    def histogram(ax, key, xlabel, title, normalise):
        for i, c in enumerate(cells):
            pairs = c["analysis"][key]
            if not pairs:
                continue
            total = sum(n for _, n in pairs) if normalise == "sum" else c["samples"]
            ax.plot([k for k, _ in pairs], [100.0 * n / max(1, total) for _, n in pairs], marker=".",
                    color=colour[i], label=cell_label(c, axes))
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        ax.set_title(title, fontsize=9)

    histogram(axs[len(features)], "wrong_tokens", "wrong tokens", "wrong responses: wrong tokens (%)", "sum")
    histogram(axs[len(features) + 1], "single_error_position", "position in the response",
              "one wrong token: where (%)", "sum")
    ax = axs[len(features) + 2]
    for i, c in enumerate(cells):
        pairs = c["analysis"]["error_positions"]
        if pairs:
            ax.plot([k for k, _ in pairs], [100.0 * (1 - n / c["samples"]) for _, n in pairs], marker=".",
                    color=colour[i], label=cell_label(c, axes))
    ax.set_xlabel("position in the response")
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    ax.set_title("per-position accuracy (%) where errors occur", fontsize=9)
    axs[-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(args.title or os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(args.summary)))))
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out_png)), exist_ok=True)
    fig.savefig(args.out_png, dpi=110, bbox_inches="tight")


if __name__ == "__main__":
    main()

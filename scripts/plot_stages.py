#!/usr/bin/python3
"""Draw the evaluations of several stages (stages.csv, written by a compare_stages stage) as PNG.

One line per stage: exact-match accuracy along the grid's first axis (e.g. digits), the
stages in the CSV's order coloured from light to dark, as self-improvement papers draw
accuracy per length after every round (Lee et al. 2025, Figure 2). A second axis splits each
stage into lines of their own.

Usage: plot_stages.py STAGES_CSV OUT_PNG [--title TEXT]
Needs Debian's python3-matplotlib (run with /usr/bin/python3).
"""
import os

from plot_common import arguments, csv_rows, pyplot, save


def main():
    args = arguments(__doc__, "csv")
    plt = pyplot()
    rows = csv_rows(args.csv)
    axes = [k for k in rows[0] if k not in ("stage", "samples", "correct", "accuracy")]
    series = {}
    order = []
    for r in rows:
        key = (r["stage"],) + tuple(f"{a}={r[a]}" for a in axes[1:])
        if key not in series:
            series[key] = []
            order.append(key)
        series[key].append((int(r[axes[0]]), 100.0 * float(r["accuracy"])))
    cmap = plt.get_cmap("viridis")
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, key in enumerate(order):
        pts = sorted(series[key])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", color=cmap(0.9 - 0.8 * i / max(1, len(order) - 1)),
                label=", ".join(key))
    ax.set_xlabel(axes[0])
    ax.set_ylabel("exact-match accuracy (%)")
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    ax.set_title(args.title or os.path.basename(os.path.dirname(os.path.abspath(args.csv))))
    fig.tight_layout()
    save(fig, args.out_png, dpi=120)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Plot lengen's figures beside a paper's (paper.csv from `lengen run` or `lengen aggregate`).

One grid axis: a panel per configuration; lengen's median over seeds as a line with the
spread (min to max, and the interquartile range darker) as bands, the paper's numbers as
markers. Two axes: a heatmap of lengen's median per configuration, each cell where the paper
gives a number annotated "lengen/paper".

Usage: plot_paper.py PAPER_CSV OUT_PNG [--title TEXT]
Needs Debian's python3-matplotlib (run with /usr/bin/python3).
"""
import math
import textwrap

from plot_common import arguments, csv_rows, pyplot, save

STATS = ["config", "label", "paper", "seeds", "median", "q25", "q75", "min", "max", "difference",
         "statistic", "lengen", "lengen_difference"]


def number(text):
    return float(text) if text not in ("", None) else math.nan


def main():
    args = arguments(__doc__, "paper_csv")
    plt = pyplot()
    rows = csv_rows(args.paper_csv)
    axes = [k for k in rows[0].keys() if k not in STATS]
    configs = []
    for r in rows:
        key = (r["config"], r["label"])
        if key not in configs:
            configs.append(key)
    n = len(configs)
    cols = min(n, 3)
    nrows = math.ceil(n / cols)
    fig, grid = plt.subplots(nrows, cols, figsize=(5.2 * cols, 3.8 * nrows), squeeze=False)
    for i, (config, label) in enumerate(configs):
        ax = grid[i // cols][i % cols]
        mine = [r for r in rows if (r["config"], r["label"]) == (config, label)]
        seeds = max(int(r["seeds"] or 0) for r in mine)  # per panel: a sweep's points may differ
        heading = config if not label or label == config else f"{config}\n[{label}]"
        if len(axes) == 1:
            mine.sort(key=lambda r: int(r[axes[0]]))
            x = [int(r[axes[0]]) for r in mine]
            med = [number(r["median"]) for r in mine]
            ax.fill_between(x, [number(r["min"]) for r in mine], [number(r["max"]) for r in mine],
                            color="C0", alpha=0.15, lw=0, label="lengen min-max" if seeds > 1 else None)
            if seeds > 2:
                ax.fill_between(x, [number(r["q25"]) for r in mine], [number(r["q75"]) for r in mine],
                                color="C0", alpha=0.3, lw=0, label="lengen IQR")
            ax.plot(x, med, "-", color="C0", lw=2,
                    label=f"lengen median of {seeds} seeds" if seeds > 1 else "lengen")
            px = [int(r[axes[0]]) for r in mine if r["paper"]]
            py = [number(r["paper"]) for r in mine if r["paper"]]
            ax.plot(px, py, "D", color="C3", ms=7, label="paper")
            ax.set_xlabel(axes[0])
            ax.set_ylabel("exact match (%)")
            ax.set_ylim(-3, 103)
            ax.grid(alpha=0.3)
            ax.legend(loc="lower left", fontsize=8)
        else:
            xs = sorted({int(r[axes[0]]) for r in mine})
            ys = sorted({int(r[axes[1]]) for r in mine})
            img = [[math.nan] * len(xs) for _ in ys]
            for r in mine:
                img[ys.index(int(r[axes[1]]))][xs.index(int(r[axes[0]]))] = number(r["median"])
            im = ax.imshow(img, origin="lower", vmin=0, vmax=100, cmap="viridis", aspect="auto",
                           extent=(xs[0] - 0.5, xs[-1] + 0.5, ys[0] - 0.5, ys[-1] + 0.5))
            for r in mine:
                if r["paper"]:
                    ours = "-" if not r["median"] else f"{number(r['median']):.0f}"
                    ax.text(int(r[axes[0]]), int(r[axes[1]]), f"{ours}/{number(r['paper']):.0f}",
                            ha="center", va="center", fontsize=6, color="white")
            ax.set_xlabel(axes[0])
            ax.set_ylabel(axes[1])
            fig.colorbar(im, ax=ax, label="lengen median (%)")
        ax.set_title(heading, fontsize=9)
    for j in range(n, nrows * cols):
        grid[j // cols][j % cols].axis("off")
    title = args.title or "lengen beside the paper"
    if len(axes) == 2:
        title += "  (cells: lengen/paper)"
    fig.suptitle(textwrap.fill(title, width=int(55 * cols)), fontsize=10)
    fig.tight_layout()
    save(fig, args.out_png, dpi=110)


if __name__ == "__main__":
    main()

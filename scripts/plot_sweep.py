#!/usr/bin/python3
"""Draw a lengen sweep's aggregate (aggregate/summary.csv) as heatmaps.

Writes into the aggregate folder:
  panel.png            every configuration side by side: median over seeds, interquartile
                       range, and the fraction of seeds at or above the threshold
  curves.png           one grid axis: median accuracy per configuration against the axis,
                       interquartile band, trained range shaded
  <config>.png         one configuration's three maps (two-axis grids only)
One grid axis (e.g. digits): rows are configurations, columns the axis values; a red line
closes the trained range. Two grid axes (e.g. operand length x operand count): one heatmap per
configuration with the trained region outlined in red (as in Cho et al. 2025, Figs. 1 and 9).

Usage: plot_sweep.py AGGREGATE_DIR
Needs Debian's python3-matplotlib and python3-numpy (run with /usr/bin/python3).
"""
import csv
import json
import os
import re
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    with open(os.path.join(out, "aggregate.json")) as f:
        meta = json.load(f)
    with open(os.path.join(out, "summary.csv")) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return
    axes = meta["cell_axes"]
    configs = meta["configs"]
    threshold = meta["threshold"]
    trained = meta.get("trained", {})
    stats = [("median", "median exact match", "viridis", (0, 1)),
             ("iqr", "interquartile range", "magma", (0, None)),
             ("frac_above", f"fraction of seeds >= {threshold:g}", "viridis", (0, 1))]
    seeds = {}
    for r in rows:
        seeds.setdefault(r["config"], set()).add(int(r["seeds"]))

    if max(max(n) for n in seeds.values()) == 1:
        stats = stats[:1]  # one seed each: spread and fraction say nothing

    def scale_top(m, hi):
        # Spread panels share a floor of 0.5: one seed (IQR 0 everywhere) stays black on a
        # readable scale instead of an autoscaled [0, 1e-9].
        return hi if hi is not None else max(0.5, float(np.nanmax(m)))

    def wrap(c, width=36):
        """A long configuration name on several lines, broken after commas (panel titles)."""
        lines = [""]
        for part in c.split(","):
            piece = part if not lines[-1] else "," + part
            if lines[-1] and len(lines[-1]) + len(piece) > width:
                lines[-1] += ","
                lines.append(part)
            else:
                lines[-1] += piece
        return "\n".join(lines)

    def label(c):
        n = seeds.get(c, {0})
        return f"{c}  (seeds: {min(n)}" + (f"-{max(n)})" if len(n) > 1 else ")")

    if len(axes) == 1:
        a = axes[0]
        xs = sorted({int(r[a]) for r in rows})
        fig, axs = plt.subplots(len(stats), 1, figsize=(max(6, 0.35 * len(xs) + 4),
                                                        1.2 + len(stats) * (0.45 * len(configs) + 0.9)))
        axs = np.atleast_1d(axs)
        for ax, (key, title, cmap, (lo, hi)) in zip(axs, stats):
            m = np.full((len(configs), len(xs)), np.nan)
            for r in rows:
                m[configs.index(r["config"]), xs.index(int(r[a]))] = float(r[key])
            im = ax.imshow(m, aspect="auto", cmap=cmap, vmin=lo, vmax=scale_top(m, hi),
                           interpolation="nearest")
            ax.set_title(title)
            if len(xs) <= 40:
                for (i, j), v in np.ndenumerate(m):
                    if not np.isnan(v):
                        ax.text(j, i, f"{100 * v:.0f}" if key != "frac_above" else f"{v:.2f}".lstrip("0"),
                                ha="center", va="center", fontsize=6,
                                color="white" if v < 0.5 * scale_top(m, hi) else "black")
            if a in trained:
                inside = [i for i, x in enumerate(xs) if trained[a][0] <= x <= trained[a][1]]
                if inside:
                    ax.axvline(inside[-1] + 0.5, color="red", lw=1.5)
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels(xs, fontsize=7)
            ax.set_yticks(range(len(configs)))
            ax.set_yticklabels([label(c) for c in configs], fontsize=8)
            ax.set_xlabel(a)
            fig.colorbar(im, ax=ax, fraction=0.03)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "panel.png"), dpi=110)
        plt.close(fig)
        # Curves (Cho et al. 2025, Fig. 3): median over seeds with the interquartile band, the
        # trained range in grey.
        fig, ax = plt.subplots(figsize=(8, 4.5))
        if a in trained:
            ax.axvspan(trained[a][0] - 0.5, trained[a][1] + 0.5, color="0.85", label="trained")
        for c in configs:
            pts = sorted((int(r[a]), float(r["median"]), float(r["q25"]), float(r["q75"]))
                         for r in rows if r["config"] == c)
            x = [p[0] for p in pts]
            line, = ax.plot(x, [100 * p[1] for p in pts], marker=".", lw=1.2, label=label(c))
            ax.fill_between(x, [100 * p[2] for p in pts], [100 * p[3] for p in pts],
                            color=line.get_color(), alpha=0.2, lw=0)
        ax.set_xlabel(a)
        ax.set_ylabel("median accuracy (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "curves.png"), dpi=110)
        plt.close(fig)
        return

    ax0, ax1 = axes[0], axes[1]
    xs = sorted({int(r[ax0]) for r in rows})
    ys = sorted({int(r[ax1]) for r in rows})

    def grid(config, key):
        m = np.full((len(ys), len(xs)), np.nan)
        for r in rows:
            if r["config"] == config:
                m[ys.index(int(r[ax1])), xs.index(int(r[ax0]))] = float(r[key])
        return m

    def draw(ax, m, key, title, cmap, lo, hi):
        im = ax.imshow(m, origin="lower", cmap=cmap, vmin=lo, vmax=scale_top(m, hi),
                       extent=(xs[0] - 0.5, xs[-1] + 0.5, ys[0] - 0.5, ys[-1] + 0.5), aspect="auto")
        if ax0 in trained and ax1 in trained:
            from matplotlib.patches import Rectangle
            (x0, x1), (y0, y1) = trained[ax0], trained[ax1]
            ax.add_patch(Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0 + 1, y1 - y0 + 1, fill=False,
                                   edgecolor="red", lw=1.5))
        ax.set_title(title, fontsize=8)
        ax.set_xlabel(ax0)
        ax.set_ylabel(ax1)
        return im

    fig, axs = plt.subplots(len(stats), len(configs), figsize=(3.2 * len(configs) + 1, 3.0 * len(stats)),
                            squeeze=False)
    for j, c in enumerate(configs):
        for i, (key, title, cmap, (lo, hi)) in enumerate(stats):
            im = draw(axs[i][j], grid(c, key), key, f"{wrap(c)}\n{title}", cmap, lo, hi)
            fig.colorbar(im, ax=axs[i][j], fraction=0.046)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "panel.png"), dpi=100)
    plt.close(fig)
    for c in configs:
        fig, axs = plt.subplots(1, len(stats), figsize=(4 * len(stats), 3.6), squeeze=False)
        for ax, (key, title, cmap, (lo, hi)) in zip(axs[0], stats):
            im = draw(ax, grid(c, key), key, title, cmap, lo, hi)
            fig.colorbar(im, ax=ax, fraction=0.046)
        fig.suptitle(label(c))
        fig.tight_layout()
        fig.savefig(os.path.join(out, re.sub(r"[^A-Za-z0-9=+,._-]", "_", c) + ".png"), dpi=100)
        plt.close(fig)


if __name__ == "__main__":
    main()

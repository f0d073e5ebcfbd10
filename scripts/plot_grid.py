#!/usr/bin/python3
"""Plot a lengen evaluation grid (eval/grid.csv) as a PNG.

One grid axis: exact-match accuracy against that axis with the 95% interval as a band.
Two axes: a heatmap (first axis on x, second on y).

Several runs of one axis (seeds): every grid as a thin line and their median in bold.

Usage: plot_grid.py GRID_CSV OUT_PNG [--title TEXT] [--train-max N] [--train-box X0,X1,Y0,Y1]
                    [--also GRID_CSV ...] [--labels L1,L2,...]
Needs Debian's python3-matplotlib (run with /usr/bin/python3).
"""
import os
import sys

from plot_common import arguments, csv_rows, pyplot, save


def decorate_accuracy_axes(ax, axis, train_max, fontsize=None):
    """Labels, limits, grid and legend of an accuracy-against-length plot."""
    if train_max:
        ax.axvline(train_max + 0.5, color="gray", ls="--", lw=1, label="trained lengths")
    ax.set_xlabel(axis)
    ax.set_ylabel("exact match (%)")
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=fontsize)


def main():
    def more(ap):
        ap.add_argument("--train-max", type=float, default=None,
                        help="draw a line at the longest trained length")
        ap.add_argument("--train-box", default=None,
                        help="two axes: outline the trained region x0,x1,y0,y1 (inclusive)")
        ap.add_argument("--also", nargs="+", default=[],
                        help="more grids of the same single axis (e.g. other seeds): each is drawn "
                             "thin and their median bold")
        ap.add_argument("--labels", default=None,
                        help="comma-separated labels of GRID_CSV and the --also grids "
                             "(default: the run folder's name)")

    args = arguments(__doc__, "grid_csv", more)
    plt = pyplot()
    rows = csv_rows(args.grid_csv)
    stats = {"samples", "correct", "accuracy", "ci_low", "ci_high"}
    axes = [k for k in rows[0].keys() if k not in stats]
    title = args.title or os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(args.grid_csv))))

    if args.also:
        if len(axes) != 1:
            sys.exit(f"{args.grid_csv}: --also needs grids of one axis, this one has {len(axes)}")
        paths = [args.grid_csv] + args.also
        labels = args.labels.split(",") if args.labels else [
            os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(p)))) for p in paths]
        if len(labels) != len(paths):
            sys.exit(f"--labels gives {len(labels)} labels for {len(paths)} grids")
        a = axes[0]
        curves = []
        for path in paths:
            other = csv_rows(path)
            if a not in other[0]:
                sys.exit(f"{path}: no '{a}' column")
            curves.append({int(r[a]): 100 * float(r["accuracy"]) for r in other})
        xs = sorted(set.intersection(*(set(c) for c in curves)))
        if not xs:
            sys.exit("the grids share no cell")
        fig, ax = plt.subplots(figsize=(7, 3.6))
        for label, c in zip(labels, curves):
            ax.plot(xs, [c[x] for x in xs], marker="o", ms=2, lw=1, alpha=0.6, label=label)
        median = [sorted(c[x] for c in curves)[len(curves) // 2] if len(curves) % 2
                  else sum(sorted(c[x] for c in curves)[len(curves) // 2 - 1:len(curves) // 2 + 1]) / 2
                  for x in xs]
        ax.plot(xs, median, color="black", lw=2.2, label=f"median of {len(curves)}")
        decorate_accuracy_axes(ax, a, args.train_max, fontsize=8)
    elif len(axes) == 1:
        a = axes[0]
        x = [int(r[a]) for r in rows]
        y = [100 * float(r["accuracy"]) for r in rows]
        lo = [100 * float(r["ci_low"]) for r in rows]
        hi = [100 * float(r["ci_high"]) for r in rows]
        fig, ax = plt.subplots(figsize=(7, 3.6))
        ax.fill_between(x, lo, hi, alpha=0.25, label="95% interval")
        ax.plot(x, y, marker="o", ms=3, label="exact match")
        decorate_accuracy_axes(ax, a, args.train_max)
    elif len(axes) == 2:
        import numpy as np
        xa, ya = axes
        xs = sorted({int(r[xa]) for r in rows})
        ys = sorted({int(r[ya]) for r in rows})
        m = np.full((len(ys), len(xs)), np.nan)
        for r in rows:
            m[ys.index(int(r[ya])), xs.index(int(r[xa]))] = 100 * float(r["accuracy"])
        fig, ax = plt.subplots(figsize=(7, 6))
        im = ax.imshow(m, origin="lower", vmin=0, vmax=100, cmap="viridis", aspect="auto",
                       extent=[xs[0] - 0.5, xs[-1] + 0.5, ys[0] - 0.5, ys[-1] + 0.5])
        fig.colorbar(im, ax=ax, label="exact match (%)")
        if len(xs) * len(ys) <= 400:
            for (i, j), v in np.ndenumerate(m):
                if not np.isnan(v):
                    ax.text(xs[j], ys[i], f"{v:.0f}", ha="center", va="center", fontsize=6,
                            color="white" if v < 50 else "black")
        if args.train_box:
            from matplotlib.patches import Rectangle
            x0, x1, y0, y1 = (float(v) for v in args.train_box.split(","))
            ax.add_patch(Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0 + 1, y1 - y0 + 1, fill=False,
                                   edgecolor="red", lw=2, label="trained"))
            ax.legend(loc="upper right", fontsize=8)
        ax.set_xlabel(xa)
        ax.set_ylabel(ya)
    else:
        sys.exit(f"{args.grid_csv}: cannot plot {len(axes)} axes")
    ax.set_title(title)
    fig.tight_layout()
    save(fig, args.out_png, dpi=120)
    print(args.out_png)


if __name__ == "__main__":
    main()

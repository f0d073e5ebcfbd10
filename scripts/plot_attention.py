#!/usr/bin/python3
"""Draw the averaged attention maps written by `lengen attention` (attention.json) as PNG.

One panel per (layer, head): rows are queries, columns keys, both labelled with the tokens of
the first sample; the weights are averaged over the samples of one grid cell (Cho et al. 2025,
Figure 7). Writes attention.png next to the JSON.

Usage: plot_attention.py ATTENTION_JSON
Needs Debian's python3-matplotlib and python3-numpy (run with /usr/bin/python3).
"""
import json
import math
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    with open(path) as f:
        data = json.load(f)
    maps = data["maps"]
    tokens = data["tokens"]
    n = len(maps)
    cols = min(4, n)
    rows = math.ceil(n / cols)
    size = max(3.0, 0.16 * len(tokens) + 1.5)
    fig, axs = plt.subplots(rows, cols, figsize=(size * cols, size * rows), squeeze=False)
    for ax in axs.flat:
        ax.axis("off")
    def labelled(ts):
        return [t if t.strip() else "_" for t in ts]

    for ax, m in zip(axs.flat, maps):
        # Pre-softmax scores carry null where a key is masked (-inf): drawn blank.
        w = np.array([[np.nan if v is None else v for v in row] for row in m["weights"]], dtype=float)
        scores = data.get("pre_softmax", False)
        # Cross-attention and encoder maps carry their own query/key tokens.
        queries = labelled(m.get("queries", tokens))
        keys = labelled(m.get("keys", tokens))
        ax.axis("on")
        finite = w[np.isfinite(w)]
        if scores and finite.size:
            ax.imshow(w, cmap="viridis", vmin=finite.min(), vmax=finite.max(), interpolation="nearest")
        else:
            ax.imshow(w, cmap="viridis", vmin=0, vmax=max(1e-9, np.nanmax(w) if finite.size else 1.0),
                      interpolation="nearest")
        ax.set_title(f"{m.get('name', 'layer ' + str(m['layer']))}, head {m['head']}", fontsize=9)
        fs = 6 if max(len(queries), len(keys)) <= 60 else 4
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels(keys, fontsize=fs)
        ax.set_yticks(range(len(queries)))
        ax.set_yticklabels(queries, fontsize=fs)
        ax.set_xlabel("key")
        ax.set_ylabel("query")
    cell = ", ".join(f"{k}={v}" for k, v in data.get("cell", {}).items())
    what = "pre-softmax scores" if data.get("pre_softmax") else "attention"
    which = " correctly answered" if data.get("correct_only") else ""
    fig.suptitle(f"mean {what} over {data['samples']}{which} samples ({cell})")
    fig.tight_layout()
    fig.savefig(os.path.join(os.path.dirname(path), "attention.png"), dpi=110)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Draw what the `calibrate` stage wrote (abc.json) as PNG, like Duan & Shi 2023's Figures 3-4.

For each attention kind (decoder self-attention, cross-attention) one row of panels per head
pair: the attention averaged over the correctly decoded samples (the rows the statistics
use) and the extended bias at the training sample's full size (blank: -inf, i.e. masked;
an all-zero panel is a transparent head). Writes abc.png (and abc_<kind>.png) next to the JSON.

Usage: plot_abc.py ABC_JSON
Needs Debian's python3-matplotlib and python3-numpy (run with /usr/bin/python3).
"""
import json
import os
import sys


def grid(rows):
    import numpy as np
    return np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)


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
    out_dir = os.path.dirname(path)
    written = []
    # One figure per kind, or per layer and kind where every layer was calibrated (per_layer).
    parts = [(None, data)] if "layers" not in data else [(entry["layer"], entry) for entry in data["layers"]]
    for layer, source in parts:
        for kind in ("cross", "self"):
            if source.get(kind):
                written.append(draw(plt, np, data, source[kind], kind, data.get("layer") if layer is None else layer,
                                    os.path.join(out_dir, f"abc_{kind}.png" if layer is None
                                                 else f"abc_layer{layer}_{kind}.png")))
    if written:
        import shutil
        shutil.copyfile(written[0], os.path.join(out_dir, "abc.png"))


def draw(plt, np, data, part, kind, layer, target):
    """One figure: per head the averaged attention (top) and the extended bias (bottom)."""
    heads = part["heads"]
    n = len(heads)
    fig, axs = plt.subplots(2, n, figsize=(2.6 * n, 5.4), squeeze=False)
    for c, h in enumerate(heads):
        avg = grid(h["average"])
        ext = grid(h["extended"])
        ax = axs[0][c]
        ax.imshow(avg, cmap="viridis", interpolation="nearest", aspect="auto")
        ax.set_title(f"head {h['head']}: mean attention", fontsize=8)
        ax.set_xlabel("key", fontsize=7)
        ax.set_ylabel("output step", fontsize=7)
        ax.tick_params(labelsize=6)
        ax = axs[1][c]
        finite = ext[np.isfinite(ext)]
        transparent = finite.size == ext.size and finite.size > 0 and np.all(finite == 0)
        lo = finite.min() if finite.size else -1.0
        ax.imshow(ext, cmap="magma", vmin=min(lo, -1e-3), vmax=0, interpolation="nearest", aspect="auto")
        kept = ", ".join(f"{d}: {len(v['kept'])}" for d, v in h["lines"].items())
        ax.set_title(("transparent" if transparent else "extended bias") + f"\n{kept}", fontsize=7)
        ax.set_xlabel("key", fontsize=7)
        ax.set_ylabel("output step", fontsize=7)
        ax.tick_params(labelsize=6)
    what = "logits" if data.get("scores") == "logits" else "weights"
    fig.suptitle(f"ABC, {kind}-attention of decoder layer {layer}: mean {what} over "
                 f"{data['samples']} correct samples (first {part['rows']} rows), k = {data.get('sigmas')}",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(target, dpi=100)
    plt.close(fig)
    return target


if __name__ == "__main__":
    main()

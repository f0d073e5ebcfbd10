"""What lengen's plotting scripts share: the command line INPUT OUT_PNG [--title TEXT] (plus a
script's own options), a headless matplotlib, a results CSV's rows, and writing the PNG.

Imported by the plot_*.py scripts beside it (Python puts a script's folder on its path).
"""
import argparse
import csv
import os
import sys


def arguments(doc, input_name, more=None):
    """Parses INPUT OUT_PNG [--title TEXT]; `more(parser)` adds a script's own options."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument(input_name)
    ap.add_argument("out_png")
    ap.add_argument("--title", default=None)
    if more is not None:
        more(ap)
    return ap.parse_args()


def pyplot():
    """matplotlib.pyplot drawing to files only (no display)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def csv_rows(path):
    """The rows of a CSV file as dicts; exits naming the file when it has none."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no rows")
    return rows


def save(fig, out_png, **kwargs):
    """Writes the figure, creating the PNG's folder."""
    os.makedirs(os.path.dirname(os.path.abspath(out_png)), exist_ok=True)
    fig.savefig(out_png, **kwargs)

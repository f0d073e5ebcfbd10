"""Results as pandas DataFrames: a run's grid and a sweep's points and cells (docs/python.md).
pandas is imported when a DataFrame is asked for, so the package imports without it."""
import json
import os

from . import _lengen


def _pandas():
    try:
        import pandas
    except ImportError:
        raise _lengen.Error("lengen's DataFrames need pandas (Debian's python3-pandas)") from None
    return pandas


def _need(path, what):
    if not os.path.exists(path):
        raise _lengen.Error(f"{path}: no such file ({what})")


def read_grid(run_dir, eval_name=None):
    """RUN/eval/grid.csv (or RUN/evals/NAME/eval/grid.csv) with typed columns: the grid's axes
    and samples, correct as integers, accuracy and its interval as floats, first errors as text."""
    pd = _pandas()
    paths = _lengen.run_paths(os.fspath(run_dir), eval_name or "")
    path, summary = paths["grid"], paths["summary"]
    _need(path, "evaluate the run first: lengen eval RUN")
    axes = []
    if os.path.exists(summary):
        with open(summary) as f:
            axes = json.load(f).get("axes", [])
    frame = pd.read_csv(path, dtype={a: "int64" for a in axes}, keep_default_na=False)
    for column in ("samples", "correct", "tokens"):
        if column in frame:
            frame[column] = frame[column].astype("int64")
    for column in frame.columns:
        if column.startswith("accuracy") or column.startswith("ci") or column == "seconds":
            frame[column] = pd.to_numeric(frame[column])
    return frame


def read_sweep(sweep_dir, eval_name=None):
    """Every point and cell of a sweep (SWEEP/aggregate/results.csv, written by `lengen sweep` and
    `lengen aggregate`): point, config, seed, the varied keys as columns, the grid's axes,
    samples, correct, accuracy, ci_low, ci_high; with the paper's figure (`paper`, in percent, and
    its statistic) beside each cell of a configuration the sweep's `paper:` block gives.
    A data set collected into the repository (docs/data/NAME: results.csv beside source.yaml,
    `lengen report --collect`) reads the same way, with the columns it kept."""
    pd = _pandas()
    folder = os.fspath(sweep_dir)
    base = os.path.join(folder, "aggregate")
    if eval_name:
        base = os.path.join(base, "evals", eval_name)
    results = os.path.join(base, "results.csv")
    if not os.path.exists(os.path.join(folder, "sweep.json")):
        if os.path.exists(os.path.join(folder, "results.csv")) and os.path.exists(os.path.join(folder, "source.yaml")):
            base, results = folder, os.path.join(folder, "results.csv")
        else:
            raise _lengen.Error(f"{sweep_dir}: not a sweep folder (no sweep.json) nor a collected data set "
                                "(results.csv and source.yaml)")
    _need(results, f"aggregate it first: lengen aggregate {sweep_dir}")
    frame = pd.read_csv(results, keep_default_na=False)
    for column in ("seed", "samples", "correct"):
        if column in frame:
            frame[column] = frame[column].astype("int64")
    for column in ("accuracy", "ci_low", "ci_high"):
        if column in frame:
            frame[column] = pd.to_numeric(frame[column])
    paper = os.path.join(base, "paper.csv")
    if os.path.exists(paper):
        figures = pd.read_csv(paper, keep_default_na=False)
        axes = [c for c in figures.columns if c in frame.columns and c not in ("config",)]
        keep = figures[["config", *axes, "paper", "statistic"]].copy()
        keep["paper"] = pd.to_numeric(keep["paper"], errors="coerce")
        for a in axes:
            keep[a] = keep[a].astype(frame[a].dtype)
        frame = frame.merge(keep, on=["config", *axes], how="left")
    return frame

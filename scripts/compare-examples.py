#!/usr/bin/env python3
"""Compares two evaluations of the same model on the same samples, sample by sample: two
eval/examples.jsonl written with eval.examples = eval.samples (every sample kept), e.g. float32
and bfloat16 autocast (scripts/gpu-session.sh). Prints how many samples were compared, how many
verdicts and how many responses differ, and each cell whose accuracy differs.

Usage: scripts/compare-examples.py A/eval/examples.jsonl B/eval/examples.jsonl
Exit status: 0 when every verdict is the same, 1 when some differ, 2 when the files do not hold
the same samples.
"""
import json
import sys
from collections import defaultdict


def read(path):
    """(cell, prompt) -> (correct, response), in file order; fails naming the line."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                key = (json.dumps(row["cell"], sort_keys=True), row["prompt"])
                # Two samples with the same prompt in a cell: keep both, numbered.
                while key in out:
                    key = key + ("again",)
                out[key] = (bool(row["correct"]), row["response"])
            except (ValueError, KeyError, TypeError) as e:
                sys.exit(f"{path}:{number}: expected a JSON object with cell, prompt, correct and "
                         f"response ({e})")
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-4], file=sys.stderr)
        return 2
    a, b = read(argv[1]), read(argv[2])
    if a.keys() != b.keys():
        only_a, only_b = len(a.keys() - b.keys()), len(b.keys() - a.keys())
        print(f"not the same samples: {only_a} only in {argv[1]}, {only_b} only in {argv[2]}")
        return 2
    verdicts = responses = 0
    per_cell = defaultdict(lambda: [0, 0, 0])  # samples, right in a, right in b
    for key, (right_a, response_a) in a.items():
        right_b, response_b = b[key]
        verdicts += right_a != right_b
        responses += response_a != response_b
        cell = per_cell[key[0]]
        cell[0] += 1
        cell[1] += right_a
        cell[2] += right_b
    print(f"{len(a)} samples in {len(per_cell)} cells: {verdicts} verdicts differ, "
          f"{responses} responses differ")
    for cell, (n, right_a, right_b) in sorted(per_cell.items()):
        if right_a != right_b:
            print(f"  cell {cell}: {100 * right_a / n:.1f}% against {100 * right_b / n:.1f}% "
                  f"({n} samples)")
    return 1 if verdicts else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/python3
"""Accuracy of an evaluation's kept samples by which operands reach the cell's length.

Reads eval/examples.jsonl (eval.examples) of a two-operand task whose prompt writes each
operand's digits as tokens, `<PAD>` past its end (padded_arithmetic, in either digit order):
`$ a1 a2 ... + b1 b2 ... =`. For each cell it splits the samples into "both operands have n
digits", "only the first", "only the second" and "neither", n being the cell's `digits`, and
prints how many each group holds and how many of them are right. With every sample kept
(eval.examples = eval.samples) the groups add up to the cell's accuracy.

--position K adds, per group, how often the response's token K (0 = the first answer token)
equals the reference's there, and how often it equals the first or the second operand's
token K (a copy; units first, token K of an operand is its digit of weight 10^K).

Usage: examples_by_length.py RUN/eval/examples.jsonl [more files...] [--position K]
"""
import argparse
import collections

from examples_jsonl import ExamplesError, read_examples

GROUPS = ["both", "only the first", "only the second", "neither"]


def operands(prompt):
    """The two operands' token lists of `$ a... + b... =`."""
    tokens = prompt.split()
    if tokens and tokens[0] == "$":
        tokens = tokens[1:]
    if tokens and tokens[-1] == "=":
        tokens = tokens[:-1]
    if tokens.count("+") != 1:
        raise ValueError(f"not a two-operand sum: {prompt!r}")
    plus = tokens.index("+")
    return tokens[:plus], tokens[plus + 1:]


def token(tokens, k):
    return tokens[k] if k < len(tokens) else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--position", type=int, default=None, metavar="K",
                    help="also compare the response's answer token K with the reference and the operands")
    args = ap.parse_args()
    k = args.position
    for path in args.files:
        # (cell, group) -> [samples, correct, token K right, = first operand's, = second's]
        counts = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
        cells = []
        try:
            samples = read_examples(path)
        except ExamplesError as e:
            raise SystemExit(f"examples_by_length.py: {e}")
        for number, sample in enumerate(samples, 1):
            n = sample["cell"].get("digits")
            if n is None:
                raise SystemExit(f"{path}:{number}: the cell has no 'digits' (a two-operand task's grid expected)")
            try:
                first, second = operands(sample["prompt"])
            except ValueError as e:
                raise SystemExit(f"{path}:{number}: {e}")
            a, b = (sum(t != "<PAD>" for t in side) for side in (first, second))
            group = GROUPS[{(True, True): 0, (True, False): 1, (False, True): 2, (False, False): 3}[(a >= n, b >= n)]]
            if n not in cells:
                cells.append(n)
            c = counts[n, group]
            c[0] += 1
            c[1] += sample["correct"]
            if k is not None:
                got = token(sample["response"].split(), k)
                c[2] += got is not None and got == token(sample["reference"].split(), k)
                c[3] += got is not None and got == token(first, k)
                c[4] += got is not None and got == token(second, k)
        print(path)
        extra = f"  {'token ' + str(k) + ' right':>13}  {'= first op':>10}  {'= second op':>11}" if k is not None else ""
        print(f"  {'digits':>6}  {'operands with n digits':<22}  {'samples':>7}  {'right':>5}  {'accuracy':>8}{extra}")
        for n in cells:
            for group in GROUPS:
                samples, right, tok, same_first, same_second = counts[n, group]
                if not samples:
                    continue
                line = f"  {n:>6}  {group:<22}  {samples:>7}  {right:>5}  {100 * right / samples:>7.1f}%"
                if k is not None:
                    line += f"  {100 * tok / samples:>12.1f}%  {100 * same_first / samples:>9.1f}%  {100 * same_second / samples:>10.1f}%"
                print(line)


if __name__ == "__main__":
    main()

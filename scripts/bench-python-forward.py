#!/usr/bin/python3
"""Speed of lengen's Python package against the C++ forward it wraps: run.forward on a batch of
N queries (tokenising, position IDs, the pass, the probe-free return) against the same forward
called from C++ on tensors built beforehand, which is what `lengen logits` and the evaluator run.
Prints the median of R alternating rounds of each and their ratio (docs/performance.md, "Python").

  PYTHONPATH=build/dev/python python3 scripts/bench-python-forward.py RUN [--batch 256] [--digits 30] [--rounds 7]
"""
import argparse
import random
import statistics
import time

import lengen
import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--digits", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=0, help="LibTorch threads (0: as configured)")
    args = ap.parse_args()
    run = lengen.load_run(args.run)  # sets the run's own thread count
    if args.threads:
        torch.set_num_threads(args.threads)
    rng = random.Random(0)
    number = lambda: str(rng.randint(10 ** (args.digits - 1), 10 ** args.digits - 1))  # noqa: E731
    queries = [f"{number()}+{number()}" for _ in range(args.batch)]
    # The C++ forward alone, on the tensors run.forward builds.
    tokens, ids, _ = run._core.query_batch(queries)
    T = tokens.shape[1]
    python_s, core_s = [], []
    run.forward(queries, capture=())  # warm-up
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        out = run.forward(queries, capture=())
        python_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        logits, _ = run._core.forward(tokens, ids, False, None)
        core_s.append(time.perf_counter() - t0)
    assert torch.equal(out.logits, logits)
    p, c = statistics.median(python_s), statistics.median(core_s)
    print(f"batch {args.batch} x {args.digits}-digit sums ({T} tokens), {torch.get_num_threads()} threads, "
          f"{args.rounds} rounds: run.forward {1000 * p:.1f} ms, the C++ forward {1000 * c:.1f} ms, ratio {p / c:.3f}")


if __name__ == "__main__":
    main()

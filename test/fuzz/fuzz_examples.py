#!/usr/bin/python3
"""Fuzzing the reader of eval/examples.jsonl (scripts/examples_jsonl.py) with Hypothesis.

The file is only written by lengen's C++ code and only read from Python (scripts/
examples_by_length.py now, the Python package later), so its reader is fuzzed in Python:
libFuzzer cannot drive it. Three properties, each over generated files:
  bytes      any bytes: the reader returns samples of the documented shape, or raises
             ExamplesError naming the file and a line that exists; nothing else, no hang
  mutated    a valid file with one line damaged (a key dropped, a value of another type, bytes
             cut or inserted): refused at that line, or read with that line still well-formed
  roundtrip  samples written as the evaluator writes them read back equal
and the analysis script on the same files: a clean one-line exit or its table, never a traceback.

  fuzz_examples.py --examples N [--seed S]   N inputs a property, derandomized by S (CTest)
  fuzz_examples.py --minutes M --out DIR     a campaign: rounds of fresh randomness until M
                                             minutes are up; counts in DIR/stats.txt, a failing
                                             input in DIR/crash-* (scripts/fuzz.sh examples M)
"""
import argparse
import contextlib
import io
import json
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))

try:
    from hypothesis import HealthCheck, given, settings, strategies as st
except ImportError:
    print("fuzz_examples.py: skipped: Hypothesis is not installed (Debian's python3-hypothesis)")
    sys.exit(77)

import examples_by_length  # noqa: E402
from examples_jsonl import ExamplesError, read_examples  # noqa: E402

TMP = tempfile.mkdtemp(prefix="lengen-fuzz-examples-")
PATH = os.path.join(TMP, "examples.jsonl")
COUNTS = {"inputs": 0, "read": 0, "refused": 0}


def write(data):
    with open(PATH, "wb") as f:
        f.write(data)


def well_formed(sample):
    return (isinstance(sample, dict)
            and all(isinstance(sample[k], str) for k in ("prompt", "reference", "response"))
            and isinstance(sample["correct"], bool)
            and all(isinstance(sample[m], dict) and all(type(v) is int for v in sample[m].values())
                    for m in ("cell", "features")))


def check_reader(data):
    """The reader's contract on one file; returns its samples or None when refused."""
    write(data)
    COUNTS["inputs"] += 1
    lines = data.split(b"\n")
    try:
        samples = read_examples(PATH)
    except ExamplesError as e:
        message = str(e)
        assert message.startswith(PATH + ":"), message
        number = int(message[len(PATH) + 1:].split(":", 1)[0])
        assert 1 <= number <= len(lines), message
        COUNTS["refused"] += 1
        return None
    assert all(well_formed(s) for s in samples)
    assert len(samples) == len(lines) - (lines[-1] == b"")
    COUNTS["read"] += 1
    return samples


def check_script(data):
    """examples_by_length.py on the file: its table, or an exit with one line naming the file."""
    write(data)
    out = io.StringIO()
    sys.argv = ["examples_by_length.py", PATH, "--position", "1"]
    try:
        with contextlib.redirect_stdout(out):
            examples_by_length.main()
    except SystemExit as e:
        assert isinstance(e.code, str) and PATH in e.code and "\n" not in e.code, repr(e.code)
        return
    assert out.getvalue().startswith(PATH + "\n")


names = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
tokens = st.lists(st.sampled_from(["0", "1", "9", "<PAD>", "+", "$", "=", "x"]), max_size=12)
prompts = st.one_of(texts, st.builds(lambda a, b: " ".join(["$", *a, "+", *b, "="]), tokens, tokens))
samples = st.fixed_dictionaries({
    "cell": st.dictionaries(st.sampled_from(["digits", "operands", "x"]), ints, max_size=3),
    "correct": st.booleans(),
    "prompt": prompts,
    "reference": st.builds(" ".join, tokens),
    "response": st.builds(" ".join, tokens),
    "features": st.dictionaries(names, ints, max_size=3),
})
json_values = st.recursive(
    st.none() | st.booleans() | ints | st.floats(allow_nan=False) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=10)


def dump(sample):
    return json.dumps(sample, ensure_ascii=False).encode("utf-8") + b"\n"


def prop_bytes(data):
    check_reader(data)
    check_script(data)


def prop_mutated(records, draw):
    lines = [dump(r) for r in records]
    i = draw.draw(st.integers(0, len(lines) - 1))
    record = dict(records[i])
    how = draw.draw(st.sampled_from(["drop", "retype", "cut", "insert", "whole"]))
    if how == "drop":
        record.pop(draw.draw(st.sampled_from(sorted(record))))
        lines[i] = dump(record)
    elif how == "retype":
        record[draw.draw(st.sampled_from(sorted(record)))] = draw.draw(json_values)
        lines[i] = dump(record)
    elif how == "cut":
        at = draw.draw(st.integers(0, len(lines[i]) - 1))
        lines[i] = lines[i][:at] + b"\n"
    elif how == "insert":
        at = draw.draw(st.integers(0, len(lines[i]) - 1))
        lines[i] = lines[i][:at] + draw.draw(st.binary(min_size=1, max_size=8)) + lines[i][at:]
    else:
        lines[i] = draw.draw(json_values.map(lambda v: json.dumps(v).encode() + b"\n"))
    data = b"".join(lines)
    got = check_reader(data)
    if got is not None:
        assert got[:i] == records[:i]
    check_script(data)


def prop_roundtrip(records):
    assert check_reader(b"".join(dump(r) for r in records)) == records


# Inputs that broke the contract once, checked before every run (a regression each).
REGRESSIONS = [
    # A key with a newline in it was echoed raw: a two-line error (the examples campaign, 9th minute).
    b'{"cell": {"\\n": null}, "correct": false, "prompt": "", "reference": "", "response": "", "features": {}}\n',
]


def check_regressions():
    for data in REGRESSIONS:
        check_reader(data)
        check_script(data)


# Each property with the strategies of its arguments.
PROPERTIES = [(prop_bytes, (st.binary(max_size=2048),)),
              (prop_mutated, (st.lists(samples, min_size=1, max_size=6), st.data())),
              (prop_roundtrip, (st.lists(samples, max_size=8),))]


def run(examples, seed, derandomize):
    """One round: each property on `examples` inputs (a fresh Hypothesis test each round)."""
    config = settings(max_examples=examples, deadline=None, database=None, derandomize=derandomize,
                      suppress_health_check=list(HealthCheck), print_blob=True)
    random.seed(seed)
    for prop, strategies in PROPERTIES:
        config(given(*strategies)(prop))()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=1000, help="inputs a property (a fixed seed)")
    ap.add_argument("--minutes", type=float, default=None, help="run rounds until this many minutes are up")
    ap.add_argument("--out", default=None, help="where a campaign writes stats.txt and a failing input")
    args = ap.parse_args()
    start = time.monotonic()
    rounds = 0
    try:
        check_regressions()
        if args.minutes is None:
            run(args.examples, 0, True)
            rounds = 1
        else:
            while time.monotonic() - start < 60 * args.minutes:
                run(args.examples, rounds, False)
                rounds += 1
    except Exception:
        if args.out:
            with open(PATH, "rb") as f, open(os.path.join(args.out, f"crash-{int(time.time())}"), "wb") as c:
                c.write(f.read())
        raise
    seconds = time.monotonic() - start
    stats = (f"stat::rounds: {rounds}\nstat::number_of_executed_units: {COUNTS['inputs']}\n"
             f"stat::read: {COUNTS['read']}\nstat::refused: {COUNTS['refused']}\n"
             f"stat::executions_per_second: {COUNTS['inputs'] / max(seconds, 1e-9):.0f}\n"
             f"stat::seconds: {seconds:.0f}\n")
    print(stats, end="")
    if args.out:
        with open(os.path.join(args.out, "stats.txt"), "w") as f:
            f.write(stats)


if __name__ == "__main__":
    main()

"""The reader of eval/examples.jsonl, the samples `eval.examples` keeps of each grid cell.

One JSON object a line, as lengen's evaluator writes it (framework/src/eval/grid_results.cpp):

    {"cell": {"digits": 12}, "correct": false, "features": {"carries": 3},
     "prompt": "$ 1 2 + 3 4 =", "reference": "4 6 $", "response": "4 7 $"}

`cell` and `features` map names to integers, `correct` is a boolean and the three texts are
strings. Other keys are kept as they are (a later writer may add some). Anything else is refused
with an ExamplesError that names the file, the line and what is wrong; the reader raises nothing
else, whatever the bytes (test/fuzz/fuzz_examples.py holds it to that).
"""
import json

TEXTS = ("prompt", "reference", "response")
INT_MAPS = ("cell", "features")


class ExamplesError(ValueError):
    """A malformed examples.jsonl: the message starts with `FILE:LINE:`."""


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _show(value):
    """A value as JSON, cut to 60 characters, for an error message."""
    try:
        return json.dumps(value)[:60]
    except (ValueError, RecursionError):
        return type(value).__name__


def _key(name):
    """A key as it can be printed on one line (a newline in it escaped)."""
    return json.dumps(name, ensure_ascii=False)[1:-1]


def parse_sample(text):
    """One line's sample as a dict, or ValueError saying what is wrong with it."""
    try:
        sample = json.loads(text)
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError, as is an integer too long to convert
        raise ValueError(f"not JSON: {e}") from None
    if not isinstance(sample, dict):
        raise ValueError(f"expected a JSON object, got {type(sample).__name__}")
    for key in INT_MAPS:
        value = sample.get(key)
        if not isinstance(value, dict):
            raise ValueError(f"'{key}' must be an object of integers, got {_show(value)}")
        for name, v in value.items():
            if not _is_int(v):
                raise ValueError(f"'{key}.{_key(name)}' must be an integer, got {_show(v)}")
    if not isinstance(sample.get("correct"), bool):
        raise ValueError(f"'correct' must be true or false, got {_show(sample.get('correct'))}")
    for key in TEXTS:
        if not isinstance(sample.get(key), str):
            raise ValueError(f"'{key}' must be a string, got {_show(sample.get(key))}")
    return sample


def read_examples(path):
    """Every sample of the file, in order; ExamplesError naming the file and line otherwise."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ExamplesError(f"{path}: cannot read: {e.strerror or e}") from None
    samples = []
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline that ends the last line
    for number, raw in enumerate(lines, 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ExamplesError(f"{path}:{number}: not UTF-8 at byte {e.start} of the line") from None
        if not text.strip():
            raise ExamplesError(f"{path}:{number}: an empty line (one sample a line expected)")
        try:
            samples.append(parse_sample(text))
        except ValueError as e:
            raise ExamplesError(f"{path}:{number}: {e}") from None
    return samples

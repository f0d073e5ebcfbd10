#!/usr/bin/env python3
"""Sizes the house style sets (docs/architecture.md, "Layers"): no C++ function over 120 lines
and no source file over 400 lines in framework/, plugins/ and tasks/, except those listed in
ALLOWED below with the reason they stay. Exits 1 naming each file (and function, with its
first line) over its limit, or a listed exception that is no longer needed; 0 otherwise.
CTest `unit.sizes` runs it on the tree.

    scripts/check-sizes.py [--root DIR] [--list] [--no-allowed]   # --list: the 20 longest

A function is a brace block whose enclosing blocks are only namespaces, classes, structs and
`extern "C"`: a free function, a member function defined in or out of its class, or a
namespace-scope lambda. Its length runs from the line its signature starts on to its closing
brace. Strings, characters and comments are skipped when braces are counted.
"""
import argparse
import os
import re
import sys

MAX_FUNCTION = 120
MAX_FILE = 400

# path (relative to the root) or "path:function" -> (the most lines it may have, why it is
# over the limit). A listed one that grows past its number fails too: the list only shrinks.
ALLOWED = {
    "plugins/abc/test_lines.cpp": (414, "the unit tests of one component, a case per property"),
}

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cxx_scan import functions  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--list", action="store_true", help="print the 20 longest functions")
    parser.add_argument("--no-allowed", action="store_true", help="ignore ALLOWED (the self-test's fixture)")
    args = parser.parse_args()
    if args.no_allowed:
        ALLOWED.clear()
    problems, used, files, every = [], set(), 0, []
    for top in ("framework", "plugins", "tasks"):
        for folder, _, names in os.walk(os.path.join(args.root, top)):
            for name in sorted(names):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, args.root)
                files += 1
                with open(path, encoding="utf-8") as f:
                    count = sum(1 for _ in f)
                if count > MAX_FILE:
                    if rel in ALLOWED and count <= ALLOWED[rel][0]:
                        used.add(rel)
                    elif rel in ALLOWED:
                        used.add(rel)
                        problems.append(f"{rel}: {count} lines, more than the {ALLOWED[rel][0]} "
                                        "scripts/check-sizes.py allows it: split it")
                    else:
                        problems.append(f"{rel}: {count} lines (over {MAX_FILE}): split it, or list it in "
                                        "scripts/check-sizes.py with the reason it stays whole")
                for fn, first, last in functions(path):
                    length = last - first + 1
                    every.append((length, f"{rel}:{first}: {fn}"))
                    if length > MAX_FUNCTION:
                        key = f"{rel}:{fn}"
                        if key in ALLOWED and length <= ALLOWED[key][0]:
                            used.add(key)
                        elif key in ALLOWED:
                            used.add(key)
                            problems.append(f"{rel}:{first}: {fn} is {length} lines, more than the "
                                            f"{ALLOWED[key][0]} scripts/check-sizes.py allows it: split it")
                        else:
                            problems.append(f"{rel}:{first}: {fn} is {length} lines (over {MAX_FUNCTION}): "
                                            "split it along its own steps")
    for key in sorted(set(ALLOWED) - used):
        problems.append(f"{key}: listed in scripts/check-sizes.py but within its limit now: drop it")
    if args.list:
        for length, where in sorted(every, reverse=True)[:20]:
            print(f"{length:5d}  {where}")
    for p in problems:
        print(p, file=sys.stderr)
    print(f"check-sizes: {files} files, {len(problems)} over the limits "
          f"(functions {MAX_FUNCTION} lines, files {MAX_FILE})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

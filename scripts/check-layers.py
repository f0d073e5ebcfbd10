#!/usr/bin/env python3
"""The include ladder of docs/architecture.md, checked: no file of a layer includes a header of
a higher layer (`#include "lengen/<layer>/..."`). Layers are the folders of
framework/include/lengen/ and framework/src/, and framework/apps/ on top. Exits 1 naming each
file and line that breaks the ladder, 0 when none does. A CTest unit test (unit.layers) runs
it on the tree, and once on a fixture that breaks it (it must fail there).

    scripts/check-layers.py [--root DIR]    # DIR holds framework/ (default: this repository)
"""
import argparse
import os
import re
import sys

# Lowest first; layers on one line are one level and may include each other.
LADDER = [
    ["core"],
    ["config"],
    ["registry", "plugin"],
    ["position", "task"],
    ["model"],
    ["eval"],
    ["train"],
    ["experiment"],
    ["taotp"],
    ["report", "analysis"],
    ["stage"],
    ["sweep"],
    ["apps"],
]
LEVEL = {layer: level for level, layers in enumerate(LADDER) for layer in layers}

# Known breaks, each with why it is still there; a break not listed
# here fails the check, and a listed one that no longer happens is reported so it is dropped.
ALLOWED = {}

INCLUDE = re.compile(r'^\s*#\s*include\s+"lengen/([a-z_]+)/')


def layer_of(root, path):
    rel = os.path.relpath(path, root).split(os.sep)
    if rel[:2] == ["framework", "apps"]:
        return "apps"
    if rel[:3] == ["framework", "include", "lengen"] and len(rel) > 4:
        return rel[3]
    if rel[:2] == ["framework", "src"] and len(rel) > 3:
        return rel[2]
    return None  # top-level files (pch, the umbrella header) belong to no layer


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = parser.parse_args()
    breaks, seen_allowed, files = [], set(), 0
    for top in ("framework/include/lengen", "framework/src", "framework/apps"):
        for folder, _, names in os.walk(os.path.join(args.root, top)):
            for name in sorted(names):
                if not name.endswith((".h", ".hpp", ".cpp")):
                    continue
                path = os.path.join(folder, name)
                layer = layer_of(args.root, path)
                if layer is None:
                    continue
                files += 1
                if layer not in LEVEL:
                    breaks.append(f"{path}: layer '{layer}' is not on the ladder (scripts/check-layers.py, "
                                  "docs/architecture.md): place it")
                    continue
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        if target not in LEVEL:
                            breaks.append(f"{path}:{number}: includes lengen/{target}/, which is not on the ladder")
                        elif LEVEL[target] > LEVEL[layer]:
                            if (layer, target) in ALLOWED:
                                seen_allowed.add((layer, target))
                                continue
                            breaks.append(f"{path}:{number}: {layer}/ includes lengen/{target}/, a higher layer "
                                          f"({target} is level {LEVEL[target]}, {layer} level {LEVEL[layer]})")
    for pair in sorted(set(ALLOWED) - seen_allowed):
        print(f"check-layers: the allowed break {pair[0]} -> {pair[1]} no longer happens; remove it from ALLOWED")
    for b in breaks:
        print(b)
    print(f"check-layers: {files} files, {len(breaks)} break(s) of the include ladder"
          + (f", {len(seen_allowed)} known one(s) allowed" if seen_allowed else ""))
    return 1 if breaks else 0


if __name__ == "__main__":
    sys.exit(main())

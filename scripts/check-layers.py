#!/usr/bin/env python3
"""The include ladder of docs/architecture.md, checked: no file of a layer includes a header of
a higher layer (`#include "lengen/<layer>/..."`), and none declares a function that only a
higher layer defines (a prototype at namespace scope, `void run_stage(Context&);`, which would
let a lower layer call up without including anything; read by scripts/cxx_scan.py). Layers are the folders of
framework/include/lengen/ and framework/src/, and framework/apps/ on top. Exits 1 naming each
file and line that breaks the ladder, 0 when none does. A CTest unit test (unit.layers) runs
it on the tree, and once on a fixture that breaks it (it must fail there).

    scripts/check-layers.py [--root DIR]    # DIR holds framework/ (default: this repository)
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cxx_scan import scan  # noqa: E402

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

# Known declarations of a higher layer's function, "file:function" (relative to the root) ->
# why it is still there. The same rules as ALLOWED.
ALLOWED_DECLARATIONS = {}

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
    defined = {}  # function name -> layers that define one of that name
    declared = []  # (path, line, layer, name) of each prototype
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
                functions, prototypes = scan(path)
                for fn, _, _ in functions:
                    defined.setdefault(fn.split("::")[-1], set()).add(layer)
                for fn, number in prototypes:
                    declared.append((path, number, layer, fn))
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
    for path, number, layer, fn in declared:
        where = defined.get(fn, set()) - {"apps"} if layer != "apps" else set()
        where = {w for w in where if w in LEVEL}
        if layer in LEVEL and where and all(LEVEL[w] > LEVEL[layer] for w in where):
            key = f"{os.path.relpath(path, args.root)}:{fn}"
            if key in ALLOWED_DECLARATIONS:
                seen_allowed.add(key)
                continue
            above = ", ".join(sorted(where))
            breaks.append(f"{path}:{number}: {layer}/ declares {fn}(), which only {above}/ defines, a higher "
                          "layer: a call up the ladder through a declaration")
    for pair in sorted(set(ALLOWED) - seen_allowed):
        print(f"check-layers: the allowed break {pair[0]} -> {pair[1]} no longer happens; remove it from ALLOWED")
    for key in sorted(set(ALLOWED_DECLARATIONS) - seen_allowed):
        if os.path.exists(os.path.join(args.root, key.split(":")[0])):
            print(f"check-layers: the allowed declaration {key} no longer happens; remove it from "
                  "ALLOWED_DECLARATIONS")
    for b in breaks:
        print(b)
    print(f"check-layers: {files} files, {len(declared)} declarations, {len(breaks)} break(s) of the ladder"
          + (f", {len(seen_allowed)} known one(s) allowed" if seen_allowed else ""))
    return 1 if breaks else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The plugin surface, held still: the headers a plugin may include (ENTRY below, and every
header they include in turn) are recorded with a hash of their code in
framework/plugin-surface.txt, together with the plugin ABI and API numbers of
lengen/plugin/abi.h. The check fails when

  * a surface header's code changed (comments and spacing aside), or a header joined or left
    the surface, while LENGEN_PLUGIN_API is still the recorded one: bump it (and
    LENGEN_PLUGIN_ABI where a layout or a vtable changed), say so in abi.h and CHANGELOG.md,
    then record the new surface with --update;
  * the numbers were bumped but the surface not recorded again (--update);
  * an in-tree plugin (plugins/, tasks/, test/plugin/) or a walk-through's example
    (docs/*.md, the blocks marked `<!-- file: NAME -->`) includes a lengen header that is not on
    the surface.

A change inside the core (a field added to the experiment, the trainer, a stage entry) touches
no surface header and passes; the extension test shows that a stage plugin built before such a
change still loads and runs (test/extension/run_extension_test.cmake). Exits 1 naming each
problem, 0 otherwise. CTest runs it (unit.plugin_surface) and runs --selftest, which checks on
a copy of the tree that a surface change without a bump fails and a core-only change passes.

    scripts/check-surface.py [--root DIR] [--update] [--selftest]
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

# What a plugin includes: its one macro, the registrar and option schemas, the kinds it may
# add (positions, tasks, architectures, norms, activations, optimizers, decays, stages), and
# the libraries built for plugins (checkpoints and weights by name, the attention analysis,
# plots). Everything these include is on the surface too.
ENTRY = [
    "lengen/plugin/plugin.h",
    "lengen/registry/registry.h",
    "lengen/config/schema.h",
    "lengen/core/error.h",
    "lengen/core/file.h",
    "lengen/core/log.h",
    "lengen/core/rng.h",
    "lengen/core/run_dir.h",
    "lengen/core/version.h",
    "lengen/position/scheme.h",
    "lengen/position/sourced_scheme.h",
    "lengen/position/relative_vectors.h",
    "lengen/position/memo.h",
    "lengen/position/tables.h",
    "lengen/task/task.h",
    "lengen/task/decimal.h",
    "lengen/model/architecture.h",
    "lengen/model/norm.h",
    "lengen/model/activation.h",
    "lengen/train/optimizer.h",
    "lengen/train/schedule.h",
    "lengen/train/checkpoint.h",
    "lengen/train/weights.h",
    "lengen/stage/stage.h",
    "lengen/analysis/attention.h",
    "lengen/report/plot.h",
]

RECORD = "framework/plugin-surface.txt"
INCLUDE = re.compile(r'^\s*#\s*include\s+"(lengen/[^"]+)"', re.M)
NUMBER = re.compile(r"^#define LENGEN_PLUGIN_(ABI|API) (\d+)$", re.M)


def code_of(text):
    """The header without comments and with spacing collapsed: what a compiler sees."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    # Spacing only matters between two words: "f(a, b)" and "f(a,b)" are the same code.
    return re.sub(r" ?([^\w ]) ?", r"\1", " ".join(text.split()))


def surface(root):
    inc = os.path.join(root, "framework", "include")
    found, todo, problems = {}, list(ENTRY), []
    while todo:
        h = todo.pop()
        if h in found:
            continue
        path = os.path.join(inc, h)
        if not os.path.exists(path):
            problems.append(f"{RECORD}: the surface names {h}, which does not exist")
            continue
        text = open(path, encoding="utf-8").read()
        found[h] = hashlib.sha256(code_of(text).encode()).hexdigest()[:16]
        todo.extend(INCLUDE.findall(text))
    return found, problems


def numbers(root):
    text = open(os.path.join(root, "framework", "include", "lengen", "plugin", "abi.h")).read()
    return {k.lower(): int(v) for k, v in NUMBER.findall(text)}


def read_record(root):
    path = os.path.join(root, RECORD)
    if not os.path.exists(path):
        return None, None
    nums, files = {}, {}
    for line in open(path, encoding="utf-8"):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if parts[0] in ("abi", "api"):
            nums[parts[0]] = int(parts[1])
        else:
            files[parts[0]] = parts[1]
    return nums, files


def write_record(root, nums, files):
    with open(os.path.join(root, RECORD), "w", encoding="utf-8") as f:
        f.write("# The plugin surface: the headers a plugin may include and a hash of each one's code\n"
                "# (comments and spacing aside), for the ABI and API below. Written by\n"
                "# `scripts/check-surface.py --update`; checked by unit.plugin_surface.\n")
        f.write(f"abi {nums['abi']}\napi {nums['api']}\n")
        for h in sorted(files):
            f.write(f"{h} {files[h]}\n")


def plugin_sources(root):
    """(file, text) of every in-tree plugin source and every example a walk-through marks."""
    for top in ("plugins", "tasks", os.path.join("test", "plugin")):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith((".cpp", ".h")) and not n.startswith("test_"):
                    p = os.path.join(dirpath, n)
                    yield os.path.relpath(p, root), open(p, encoding="utf-8").read()
    docs = os.path.join(root, "docs")
    for n in sorted(os.listdir(docs)) if os.path.isdir(docs) else []:
        if n.endswith(".md"):
            text = open(os.path.join(docs, n), encoding="utf-8").read()
            for m in re.finditer(r"<!-- file: (\S+) -->\s*```[a-z]*\n(.*?)\n```", text, re.S):
                if m.group(1).endswith((".cpp", ".h")):
                    yield f"docs/{n} ({m.group(1)})", m.group(2)


def check(root, update):
    files, problems = surface(root)
    nums = numbers(root)
    rec_nums, rec_files = read_record(root)
    if update:
        changelog = open(os.path.join(root, "CHANGELOG.md"), encoding="utf-8").read()
        if rec_files is not None and rec_files != files and f"API {nums['api']}" not in changelog:
            problems.append(f"CHANGELOG.md does not mention plugin API {nums['api']}: say what changed")
        else:
            write_record(root, nums, files)
            print(f"check-surface: recorded {len(files)} headers for ABI {nums['abi']}, API {nums['api']}")
    elif rec_files is None:
        problems.append(f"{RECORD} is missing: scripts/check-surface.py --update")
    elif rec_nums != nums:
        problems.append(f"abi.h gives ABI {nums['abi']}, API {nums['api']}; {RECORD} records "
                        f"ABI {rec_nums.get('abi')}, API {rec_nums.get('api')}: record the surface "
                        "of the new numbers with scripts/check-surface.py --update")
    elif rec_files != files:
        changed = sorted(h for h in files if h in rec_files and rec_files[h] != files[h])
        added = sorted(set(files) - set(rec_files))
        gone = sorted(set(rec_files) - set(files))
        what = "; ".join(x for x in (
            "changed: " + ", ".join(changed) if changed else "",
            "joined the surface: " + ", ".join(added) if added else "",
            "left the surface: " + ", ".join(gone) if gone else "") if x)
        problems.append(f"the plugin surface changed under API {nums['api']} ({what}): bump "
                        "LENGEN_PLUGIN_API (and LENGEN_PLUGIN_ABI where a layout or a vtable "
                        "changed) in lengen/plugin/abi.h, say what changed there and in "
                        "CHANGELOG.md, then scripts/check-surface.py --update; or keep the change "
                        "out of these headers")
    for name, text in plugin_sources(root):
        for m in INCLUDE.finditer(text):
            if m.group(1) not in files:
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{name}:{line}: includes {m.group(1)}, which is not on the plugin "
                                "surface (scripts/check-surface.py ENTRY)")
    for p in problems:
        print(f"check-surface: {p}")
    if not problems:
        print(f"check-surface: {len(files)} surface headers as recorded for API {nums['api']}; "
              "in-tree plugins and examples include only them")
    return 1 if problems else 0


def selftest(root):
    """On a copy: the tree passes; a core-only change passes; a surface change fails."""
    me = os.path.abspath(__file__)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for part in ("framework/include", RECORD, "plugins", "tasks", "test/plugin", "docs",
                     "CHANGELOG.md"):
            src, dst = os.path.join(root, part), os.path.join(tmp, part)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, dst)

        def run(expect, why):
            nonlocal ok
            r = subprocess.run([sys.executable, me, "--root", tmp], capture_output=True, text=True)
            good = (r.returncode == 0) == expect
            ok = ok and good
            print(f"selftest: {why}: exit {r.returncode} ({'as expected' if good else 'WRONG'})")
            if not good:
                print(r.stdout)
            return r.stdout

        def edit(rel, old, new):
            p = os.path.join(tmp, "framework", "include", rel)
            text = open(p).read()
            assert old in text, (rel, old)
            open(p, "w").write(text.replace(old, new, 1))

        run(True, "the tree as it is")
        edit("lengen/experiment/experiment.h", "struct LENGEN_API Experiment {",
             "struct LENGEN_API Experiment {\n  int added_by_the_selftest = 0;")
        run(True, "a field added to Experiment (core-only)")
        edit("lengen/stage/stage.h", "  bool resume_, implicit_;", "  bool resume_, implicit_;\n  int added = 0;")
        out = run(False, "a field added to StageContext (the surface) without a bump")
        ok = ok and "changed: lengen/stage/stage.h" in out
        edit("lengen/stage/stage.h", "/// RUN, the run directory.", "/// RUN, the run folder.")
        edit("lengen/stage/stage.h", "  int added = 0;\n", "")
        run(True, "a comment changed on the surface")
        p = os.path.join(tmp, "plugins", "construct", "construct.cpp")
        open(p, "a").write('#include "lengen/experiment/experiment.h"\n')
        out = run(False, "a plugin that includes the experiment")
        ok = ok and "construct.cpp" in out and "not on the plugin" in out
    print("selftest: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--update", action="store_true", help="record the surface as it is now")
    ap.add_argument("--selftest", action="store_true", help="check the check on a copy")
    a = ap.parse_args()
    sys.exit(selftest(a.root) if a.selftest else check(a.root, a.update))


if __name__ == "__main__":
    main()

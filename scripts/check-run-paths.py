#!/usr/bin/env python3
"""One owner of the run folder's layout, checked: outside lengen/core/run_dir.{h,cpp}, no file of
the framework, its plugins or tasks builds a path of a run folder by hand (`dir / "checkpoints"`,
`"{}/eval/grid.csv"`, ...); they ask RunDir (docs/architecture.md, "The run folder"). Tests are
not checked. Prints each file and line that does, and exits 1; 0 when none does.

  check-run-paths.py [--root DIR]    DIR: the tree to check (default: the repository)
"""
import argparse
import os
import re
import sys

NAMES = (r"checkpoints|eval|evals|plots|stages|tensorboard|config\.yaml|metrics\.jsonl|"
         r"eval_curve\.jsonl|stage\.json|labels\.jsonl|summary\.json|grid\.csv|breakdown\.csv|"
         r"examples\.jsonl|lengen\.lock|attention|sweep\.log|sweep-[a-z]+\.json|step-[^\"]*")
# A name joined to a path with `/`, appended as "/name", or spelled inside a format string after
# a folder: "{}/eval/".
PATTERNS = [re.compile(r'/\s*"(' + NAMES + r')"'),
            re.compile(r'"/(' + NAMES + r')(/|")'),
            re.compile(r'\{\}/(' + NAMES + r')(/|")')]
OWNERS = {os.path.join("framework", "include", "lengen", "core", "run_dir.h"),
          os.path.join("framework", "src", "core", "run_dir.cpp"),
          # the lock file's own name, which sweep folders share (RunDir::lock_file asks it)
          os.path.join("framework", "src", "core", "lock.cpp")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    root = os.path.abspath(ap.parse_args().root)
    found, files = [], 0
    for top in ("framework", "plugins", "tasks"):
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith((".cpp", ".h")) or name.startswith("test_"):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)
                if rel in OWNERS:
                    continue
                files += 1
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        if any(p.search(line) for p in PATTERNS):
                            found.append(f"{rel}:{number}: builds a run folder's path by hand; ask RunDir "
                                         f"(lengen/core/run_dir.h): {line.strip()}")
    for line in found:
        print(line)
    print(f"check-run-paths: {files} files, {len(found)} path(s) built outside RunDir")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

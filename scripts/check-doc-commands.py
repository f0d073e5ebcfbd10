#!/usr/bin/env python3
"""Every `lengen run` and `lengen sweep` command the documentation shows still resolves: the file
exists, and the experiment with its `--set` overrides loads and validates (`lengen config FILE
--set ...`), or the sweep plans every point (`lengen sweep FILE --set ... [--only ...] --status`). Nothing is
trained. Commands are read from README.md, docs/*.md and the comments of experiments/**/*.yaml:
inline code spans and code-block lines. Exits 1 naming each document and command that no longer
resolves, with lengen's message; 0 when all do. A CTest unit test (unit.doc_commands) runs it on
the tree, and once on a fixture with broken commands (it must fail there).

    scripts/check-doc-commands.py --lengen build/dev/bin/lengen [--root DIR] [--verbose]

Placeholders the documents use for "any seed" (`--set seed=S`, `runs/NAME/S/`) are read as seed
0. Commands written as templates (a shell variable `$X`, `<file>`, `...`, `FILE`) and commands
that need a plugin built out of tree (`--plugin-path`: the extension test builds and runs those)
are skipped and counted.
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys

COMMAND = re.compile(r"\blengen (run|sweep) (.*)")
# Flags of `lengen run` / `lengen sweep` that take no value, and those that take one; a token
# that is neither ends the command (a following shell command, a comment, prose).
FLAGS = {"--fresh", "--resume", "--no-eval", "--status", "--cancel", "--dry-run", "--debug"}
FLAGS_WITH_VALUE = {"-j", "--executor", "--plugin-path", "--workers"}
SEED_PLACEHOLDER = [(re.compile(r"\bseed=S\b"), "seed=0"), (re.compile(r"/S/"), "/0/")]
TEMPLATE = re.compile(r"\$[A-Za-z_{(]|<[^>]*>|\.\.\.|\bFILE\b|\bEXP\b")


def documents(root):
    """(path, text) of every document, YAML files reduced to their comments."""
    paths = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    for path in paths:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                yield path, f.read()
    for path in sorted(glob.glob(os.path.join(root, "experiments", "**", "*.yaml"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            comments = [line.strip().lstrip("#").strip() for line in f if line.strip().startswith("#")]
        yield path, "\n".join(comments)


def commands(text):
    """The `lengen run|sweep ...` command lines of one document: inline code spans (which may
    wrap across lines) and lines of code blocks, shell continuations joined."""
    text = re.sub(r"\\\n\s*", " ", text)
    # Inline spans are searched outside fenced blocks: a fence's backticks would otherwise open a
    # "span" that runs over the whole block (its lines are read one by one below).
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    found = [" ".join(span.split()) for span in re.findall(r"`([^`]*\blengen (?:run|sweep) [^`]*)`", prose)]
    for line in text.split("\n"):
        if "`" not in line and COMMAND.search(line):
            found.append(line.split(" #")[0].strip())
    return found


def parse(command):
    """(kind, file, [(--set or --only, value)]) of a command; "template" for one that cannot be checked here (see the
    module's notes); None when it names no YAML file."""
    m = COMMAND.search(command)
    if not m:
        return None
    rest = m.group(2)
    for pattern, value in SEED_PLACEHOLDER:
        rest = pattern.sub(value, rest)
    try:
        tokens = shlex.split(rest)
    except ValueError:
        tokens = rest.split()
    if not tokens or not tokens[0].endswith(".yaml"):
        return None
    sets, i, external = [], 1, False
    while i < len(tokens):
        token = tokens[i]
        if token in ("--set", "--only") and i + 1 < len(tokens):
            sets.append((token, tokens[i + 1]))
            i += 2
        elif token.startswith("--set="):
            sets.append(("--set", token[len("--set="):]))
            i += 1
        elif token in FLAGS:
            i += 1
        elif token in FLAGS_WITH_VALUE:
            external = external or token == "--plugin-path"
            i += 2
        else:
            break
    if external or TEMPLATE.search(" ".join([tokens[0]] + [v for _, v in sets])):
        return "template"
    return m.group(1), tokens[0], sets


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengen", required=True, help="the lengen executable")
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the folder holding README.md, docs/ and experiments/ (commands' paths are relative to it)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    lengen = os.path.abspath(args.lengen)
    seen, failures, checked, templates = set(), [], 0, 0
    for doc, text in documents(args.root):
        for command in commands(text):
            parsed = parse(command)
            if parsed is None:
                continue
            if parsed == "template":
                templates += 1
                continue
            kind, file, sets = parsed
            if (kind, file, tuple(sets)) in seen:
                continue
            seen.add((kind, file, tuple(sets)))
            rel_doc = os.path.relpath(doc, args.root)
            checked += 1
            if not os.path.exists(os.path.join(args.root, file)):
                failures.append(f"{rel_doc}: `lengen {kind} {file}`: no such file")
                continue
            argv = [lengen, "config", file] if kind == "run" else [lengen, "sweep", file, "--status"]
            for flag, value in sets:
                argv += [flag, value]
            if args.verbose:
                print(" ".join(shlex.quote(a) for a in argv[1:]), flush=True)
            r = subprocess.run(argv, cwd=args.root, capture_output=True, text=True)
            if r.returncode != 0:
                message = (r.stderr.strip() or r.stdout.strip()).splitlines()
                failures.append(f"{rel_doc}: `lengen {kind} {file}{''.join(f' {flag} {value}' for flag, value in sets)}`: "
                                f"{message[-1] if message else f'exit {r.returncode}'}")
    for f in failures:
        print(f)
    print(f"{checked} documented commands checked ({templates} templates or out-of-tree skipped): "
          f"{len(failures)} do not resolve")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())

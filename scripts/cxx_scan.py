"""Scanning C++ sources without a compiler, for the repository's checks (check-sizes.py,
check-layers.py): comments and literals blanked, then brace blocks classified. Good enough for
the house style's clang-formatted code, not for C++ at large.
"""
import re

SCOPE = re.compile(r'^\s*(template\s*<.*>\s*)?(namespace\b|class\b|struct\b|union\b|enum\b|extern\s+"C"|extern\s+"C\+\+")')
NAMESPACE = re.compile(r'^\s*(namespace\b|extern\s+"C"|extern\s+"C\+\+")')


def strip(text):
    """`text` with comments, string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(n, j + 1)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


PROTOTYPE = re.compile(r"(?:^|[\s*&>:])((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)\s*\([^=]*\)\s*(?:const\s*)?(?:noexcept\s*)?$")
NOT_A_PROTOTYPE = re.compile(r"^\s*(return|using|typedef|static_assert|friend|template\s*<[^>]*>\s*class|#|[A-Z_]+\()")


def scan(path):
    """(functions, declarations) of a C++ file. functions: (name, first line, last line) of each
    brace block whose enclosing blocks are only namespaces, classes, structs and `extern "C"`
    (free functions, member functions defined in or out of their class, namespace-scope
    lambdas); a function starts on the line its signature does. declarations: (name, line) of
    each function declared without a body at namespace scope (a prototype: `void f(int);`)."""
    with open(path, encoding="utf-8") as f:
        text = strip(f.read())
    lines = text.split("\n")
    stack = []  # per open brace: "ns", "class", "function" or "block"
    found, declared = [], []
    statement_start = 0  # the line the current statement began on (for a signature's start)
    pending = ""

    def at_scope():
        return all(k in ("ns", "class") for k in stack)

    for number, line in enumerate(lines, 1):
        for k, ch in enumerate(line):
            if ch == "{":
                head = (pending + line[:k]).strip()
                if at_scope():
                    if SCOPE.match(head):
                        kind = "ns" if NAMESPACE.match(head) else "class"
                    elif head.endswith("=") or head == "":
                        kind = "block"  # aggregate initialisers, stray blocks
                    else:
                        kind = "function"
                        m = re.findall(r"([~A-Za-z_][\w:~<>]*)\s*\(", head)
                        name = m[0] if m else head[:40]
                        if name in ("operator",) and len(m) > 1:
                            name = m[1]
                        found.append([name, statement_start or number, None])
                else:
                    kind = "block"
                stack.append(kind)
                pending = ""
                statement_start = 0
            elif ch == "}":
                if stack:
                    kind = stack.pop()
                    if kind == "function":
                        for fn in reversed(found):
                            if fn[2] is None:
                                fn[2] = number
                                break
                pending = ""
                statement_start = 0
            elif ch == ";":
                head = (pending + line[:k]).strip()
                if all(kind == "ns" for kind in stack) and head and not NOT_A_PROTOTYPE.match(head):
                    m = PROTOTYPE.search(head)
                    if m and "(" in head and "=" not in head.split("(")[0]:
                        declared.append((m.group(1).split("::")[-1], statement_start or number))
                pending = ""
                statement_start = 0
        if at_scope():
            rest = line
            if "{" in line or "}" in line or ";" in line:
                rest = re.split(r"[{};]", line)[-1]
            if rest.strip():
                if not pending.strip():
                    statement_start = number
                pending += " " + rest
            if re.match(r"^\s*(public|private|protected)\s*:", line) or line.strip().startswith("#"):
                pending = ""
                statement_start = 0
    return [(f[0], f[1], f[2]) for f in found if f[2] is not None], declared


def functions(path):
    """(name, first line, last line) of each function in a C++ file (see scan)."""
    return scan(path)[0]

#!/usr/bin/env python3
"""Fails on a function in src/ longer than the limit (#54 item 4: 80 lines, signature to closing brace).

usage: check_function_length.py REPO_ROOT [--limit N] [--list]   (--self-test: checks the parser on samples)

A C++ function body is a `{` at namespace or class depth whose header ends in `)` (after qualifiers such as const,
override, noexcept, a trailing return type) or is a constructor's initialiser list. Comments and literals are blanked
first. Exempt: the metrics table's visit (a table, one row a metric), named in EXEMPT."""
import os
import re
import sys

EXEMPT = {("src/gspo/train/metrics/metrics.h", "visit")}
KEYWORDS = ("namespace", "class", "struct", "enum", "union", "extern")


def blank(text):
    """Comments, string and char literals replaced by spaces (newlines kept), raw strings included."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            k = text.find("(", i)
            delim = text[i + 2:k]
            j = text.find(")" + delim + '"', k)
            j = n if j < 0 else j + len(delim) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j])); i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator 1'000
                out.append(c); i += 1; continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


def functions(text):
    """(name, first line, last line) of every function body at namespace/class depth."""
    s = blank(text)
    found, stack = [], []  # stack: (kind, start offset of header) per open brace; kind 'scope' or 'body' or 'other'
    header_start = 0
    i = 0
    while i < len(s):
        c = s[i]
        if c == "{":
            inside_body = any(k == "body" for k, _, _ in stack)
            header = s[header_start:i]
            kind = "other"
            if not inside_body:
                h = " ".join(header.split())
                h = re.sub(r"^(template\s*<[^{]*?>\s*)", "", h)
                first = h.split(" ", 1)[0] if h else ""
                if re.search(r"\)\s*(noexcept\s*)?:[^:].*[\w>]\s*$", h) and not re.search(r"\b(if|for|while|switch)\s*\(", h):
                    kind = "init"  # a member's brace initialiser in a constructor's list: the header goes on
                elif first in KEYWORDS or re.match(r"^(\w+\s+)*(class|struct|enum|union)\b", h):
                    kind = "scope"
                elif re.search(r"\)\s*(const|override|final|noexcept|mutable|&|&&|\s)*(->\s*[\w:<>,\s\*&]+)?$", h) \
                        or re.search(r"\)\s*:\s*[\w:]+\s*[({].*[)}]\s*$", h):
                    if not re.search(r"=\s*$|\b(if|for|while|switch|catch)\s*\(", h.split("(")[0] + "("):
                        kind = "body"
            stack.append((kind, header_start, header))
            if kind != "init":
                header_start = i + 1
        elif c == "}":
            if stack:
                kind, start, header = stack.pop()
                if kind == "body" and not any(k == "body" for k, _, _ in stack):
                    m = re.search(r"([~\w:]+|operator\s*\S+)\s*\(", header)
                    name = m.group(1).split("::")[-1] if m else "?"
                    first_line = s.count("\n", 0, start + len(header) - len(header.lstrip())) + 1
                    found.append((name, first_line, s.count("\n", 0, i) + 1))
                if kind == "init":
                    i += 1
                    continue
            header_start = i + 1
        elif c == ";" :
            header_start = i + 1
        i += 1
    return found


def check(root, limit, listing):
    bad = []
    for base, _, files in os.walk(os.path.join(root, "src")):
        for f in sorted(files):
            if not f.endswith((".h", ".cpp")):
                continue
            path = os.path.join(base, f)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as fh:
                for name, a, b in functions(fh.read()):
                    length = b - a + 1
                    if listing and length > limit // 2:
                        print(f"{length:5d} {rel}:{a} {name}")
                    if length > limit and (rel, name) not in EXEMPT:
                        bad.append(f"{rel}:{a}: {name} is {length} lines (limit {limit}): split it into named steps")
    return bad


def self_test():
    sample = '''namespace a {
struct S { int f() const { return 1; } };
int g(int x) {
  auto l = [&](int y) { return y; };
  if (x) { return l(x); }
  const char* s = "}{";
  return 0;
}
S::S(int v) : v_(v), w_{2} {
  v_ = 1;
}
}  // namespace a
'''
    got = [(n, a, b) for n, a, b in functions(sample)]
    want = [("f", 2, 2), ("g", 3, 8), ("S", 9, 11)]
    assert got == want, f"parser: got {got}, want {want}"
    print("self-test: ok")


def main():
    args = sys.argv[1:]
    if "--self-test" in args:
        self_test()
        return 0
    self_test()  # a parser that stopped finding functions would pass everything
    limit = int(args[args.index("--limit") + 1]) if "--limit" in args else 80
    root = args[0] if args and not args[0].startswith("--") else "."
    bad = check(root, limit, "--list" in args)
    for line in bad:
        print(line)
    if bad:
        print(f"{len(bad)} function(s) over {limit} lines")
        return 1
    print(f"function length: every function in src/ is at most {limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())

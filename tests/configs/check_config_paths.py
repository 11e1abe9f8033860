#!/usr/bin/env python3
"""Fails when a shipped config names a file or directory that a clone of the project does not have.

Walks every .yaml under configs/ and checks, relative to the repository root (gspo opens relative paths as written,
relative to the directory it runs in, and the README runs it from the root), every value that names a file:
- values of keys whose name ends in path, paths, file, files, dir or dirs, and list items under such keys;
- values of the keys in PATH_KEYS, which name files without saying so (eval.datasets);
- the relative paths in commands (tools.list[].command, reward.external_command: `sh scripts/tools/lookup.sh`);
- any other value that looks like a relative file name (a known extension such as .jsonl, .pt, .sh).
Outputs are not checked (OUTPUT_KEYS, anything under runs/). Files a user makes or downloads before running a config
are listed in GENERATED (with the script that makes them, which must exist) and DOWNLOADED (with the doc that says where
they come from, which must say it); an entry no config uses any more fails, so the lists cannot rot.
Any '../shared' in a file under configs/ fails: that folder sits beside a development checkout only.

Standard library only (no PyYAML): the configs are read by a small parser of the YAML they use (block mappings, block
sequences, flow sequences and mappings, quoted scalars); a line it does not understand fails the test rather than being
skipped.

usage: check_config_paths.py SOURCE_DIR        exit 0 when every path exists; 1 with each problem listed."""
import json
import pathlib
import re
import shlex
import sys

# Keys that name files or folders though their names do not say so.
PATH_KEYS = {"eval.datasets", "algorithm.reference_model", "distill.teacher"}
# Where runs write: never expected to exist.
OUTPUT_KEYS = {"train.output_dir", "output_dir"}
OUTPUT_PREFIXES = ("runs/",)
# Made by the user from the project's scripts before the config runs (models/ is not in git): path -> the script.
GENERATED = {
    "models/tiny_demo.pt": "scripts/make_tiny_model.py",      # scripts/demo.sh runs it (README)
    "models/tiny_tools.pt": "scripts/make_tiny_model.py",     # --warm data/tools_warm.txt (configs/tiny-tools.yaml)
    "models/tiny_warm.pt": "scripts/make_warm_base.sh",       # configs/tiny-lora.yaml's base (scripts/compare_lora.sh)
    "models/tiny_rm.pt": "scripts/make_tiny_reward_model.py",  # configs/tiny-rm.yaml's learned reward model
    "models/qwen3-0.6b.pt": "scripts/export_hf.py",           # from a Hugging Face Qwen3-0.6B checkout (README)
    "models/qwen3-30b-a3b.pt": "scripts/export_hf.py",        # from Qwen3-30B-A3B (its config's header)
    "models/qwen3-8b-judge.pt": "scripts/export_hf.py",       # from Qwen3-8B: configs/qwen3-0.6b-judge.yaml's judge
    "models/qwen3-1.7b.pt": "scripts/export_hf.py",           # from Qwen3-1.7B: configs/qwen3-1.7b-distill.yaml's student
    "models/qwen3-8b.pt": "scripts/export_hf.py",             # from Qwen3-8B: configs/qwen3-1.7b-distill.yaml's teacher
}
# Public data too large to ship, downloaded by the user: path -> (the doc that says where from, what it must say).
DOWNLOADED = {
    "data/livecodebench/test5.jsonl": ("docs/evaluation.md", "livecodebench/code_generation_lite"),
    "data/codeforces/codeforces.jsonl": ("docs/evaluation.md", "open-r1/codeforces"),
}
PATH_KEY_SUFFIX = re.compile(r"(path|paths|file|files|dir|dirs)$")
FILE_LIKE = re.compile(r"^[\w.\-/]+\.(jsonl|json|pt|txt|yaml|yml|sh|py|bin|model|safetensors|gguf)$")
COMMAND_KEY = re.compile(r"(^|_)command$")


class ParseError(Exception):
    pass


def strip_comment(line):
    """The line without its comment: a '#' outside quotes, at the start or after whitespace."""
    quote = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote == '"':
            if c == "\\":
                i += 1
            elif c == '"':
                quote = None
        elif quote == "'":
            if c == "'":
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
        i += 1
    if quote:
        raise ParseError("unterminated quoted string")
    return line.rstrip()


class Flow:
    """Recursive-descent reader of one line's scalar or flow collection ([..], {..})."""

    def __init__(self, text):
        self.s, self.i = text, 0

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def value(self, stops):
        self.ws()
        if self.i >= len(self.s):
            return ""
        c = self.s[self.i]
        if c == "[":
            self.i += 1
            items = []
            self.ws()
            if self.s[self.i:self.i + 1] == "]":
                self.i += 1
                return items
            while True:
                items.append(self.value(",]"))
                self.ws()
                c = self.s[self.i:self.i + 1]
                self.i += 1
                if c == "]":
                    return items
                if c != ",":
                    raise ParseError("expected ',' or ']' in a flow sequence (multi-line flow collections are not read)")
        if c == "{":
            self.i += 1
            pairs = {}
            self.ws()
            if self.s[self.i:self.i + 1] == "}":
                self.i += 1
                return pairs
            while True:
                key = self.value(":,}")
                self.ws()
                if self.s[self.i:self.i + 1] != ":":
                    raise ParseError("expected ':' in a flow mapping")
                self.i += 1
                pairs[str(key)] = self.value(",}")
                self.ws()
                c = self.s[self.i:self.i + 1]
                self.i += 1
                if c == "}":
                    return pairs
                if c != ",":
                    raise ParseError("expected ',' or '}' in a flow mapping")
        if c == '"':
            j = self.i + 1
            while j < len(self.s) and self.s[j] != '"':
                j += 2 if self.s[j] == "\\" else 1
            raw = self.s[self.i:j + 1]
            self.i = j + 1
            try:
                return json.loads(raw)
            except ValueError:  # a YAML escape JSON lacks: keep the text between the quotes
                return raw[1:-1]
        if c == "'":
            j = self.i + 1
            while True:
                j = self.s.index("'", j)
                if self.s[j + 1:j + 2] == "'":
                    j += 2
                    continue
                break
            out = self.s[self.i + 1:j].replace("''", "'")
            self.i = j + 1
            return out
        if c in "|>":
            raise ParseError("block scalars (| and >) are not read")
        j = self.i
        while j < len(self.s) and self.s[j] not in stops:
            if stops == ":,}" and self.s[j] == ":" and self.s[j + 1:j + 2] not in (" ", ""):
                j += 1  # a ':' inside a plain key ("a:b") does not end it
                continue
            j += 1
        out = self.s[self.i:j].strip()
        self.i = j
        return out

    def whole(self):
        v = self.value("")
        self.ws()
        if self.i != len(self.s):
            raise ParseError(f"unexpected text after the value: {self.s[self.i:]!r}")
        return v


def split_key(content):
    """'key: value' -> (key, value text); None when the line is not a key line."""
    m = re.match(r"""^("[^"]*"|'[^']*'|[^\s:#'"\[\]{},][^:#]*?)\s*:(\s+(.*))?$""", content)
    if not m:
        return None
    return m.group(1).strip("\"'"), (m.group(3) or "").strip()


def leaves(value, path, line, out):
    if isinstance(value, list):
        for k, v in enumerate(value):
            leaves(v, f"{path}[{k}]", line, out)
    elif isinstance(value, dict):
        for k, v in value.items():
            leaves(v, f"{path}.{k}", line, out)
    else:
        out.append((path, str(value), line))


def read_config(text):
    """Every scalar of a config: [(key path such as 'eval.datasets[0]', value, line number)]."""
    out = []
    frames = []  # (indent, path, kind): kind 'map' for a key awaiting nested content, 'item' for a sequence item
    counters = {}
    for n, raw in enumerate(text.splitlines(), 1):
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise ParseError(f"line {n}: tab in indentation")
        try:
            line = strip_comment(raw)
        except ParseError as e:
            raise ParseError(f"line {n}: {e}")
        if not line.strip() or line.strip() in ("---", "..."):
            continue
        col = len(line) - len(line.lstrip(" "))
        content = line.strip()
        try:
            if content == "-" or content.startswith("- "):
                while frames and (frames[-1][0] > col or (frames[-1][0] == col and frames[-1][2] == "item")):
                    frames.pop()
                if not frames or frames[-1][2] != "map":
                    raise ParseError("a sequence item outside a key")
                parent = frames[-1][1]
                k = counters.get(parent, 0)
                counters[parent] = k + 1
                item = f"{parent}[{k}]"
                rest = content[1:].strip()
                kv = split_key(rest) if rest else None
                if kv:
                    frames.append((col, item, "item"))
                    key, value = kv
                    if value:
                        leaves(Flow(value).whole(), f"{item}.{key}", n, out)
                    else:  # the item's first key, at its own column: its nested content lies deeper
                        key_col = col + 1 + len(content[1:]) - len(content[1:].lstrip())
                        frames.append((key_col, f"{item}.{key}", "map"))
                else:
                    leaves(Flow(rest).whole(), item, n, out)
                continue
            kv = split_key(content)
            if not kv:
                raise ParseError(f"not a key line: {content!r}")
            while frames and frames[-1][0] >= col:
                frames.pop()
            key, value = kv
            path = f"{frames[-1][1]}.{key}" if frames else key
            if value:
                leaves(Flow(value).whole(), path, n, out)
            else:
                frames.append((col, path, "map"))
        except ParseError as e:
            raise ParseError(f"line {n}: {e}")
    return out


def key_name(path):
    """The last named key of a path: 'tools.list[0].command' -> 'command', 'eval.datasets[1]' -> 'datasets'."""
    return re.sub(r"\[\d+\]", "", path).split(".")[-1]


def without_indexes(path):
    return re.sub(r"\[\d+\]", "", path)


def file_values(path, value):
    """The relative or absolute file names a (key path, value) leaf names, to check for existence."""
    name, plain = key_name(path), without_indexes(path)
    if not value:
        return []
    if plain in OUTPUT_KEYS or name in OUTPUT_KEYS or value.startswith(OUTPUT_PREFIXES):
        return []
    if COMMAND_KEY.search(name):
        try:
            words = shlex.split(value)
        except ValueError:
            return []
        return [w for w in words if "/" in w and "://" not in w and re.match(r"^[\w.\-/]+$", w) and w[0] not in "-$~"]
    if plain in PATH_KEYS or PATH_KEY_SUFFIX.search(name) or FILE_LIKE.match(value):
        return [value]
    return []


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    configs = sorted((root / "configs").rglob("*.yaml"))
    problems, checked, used_generated, used_downloaded = [], 0, set(), set()
    if not configs:
        problems.append("no .yaml files under configs/")
    for f in sorted(p for p in (root / "configs").rglob("*") if p.is_file()):
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if "../shared" in line:
                problems.append(f"{f.relative_to(root)}:{n}: mentions ../shared (beside a development checkout only, "
                                f"not in a clone): {line.strip()}")
    for f in configs:
        rel = f.relative_to(root)
        try:
            values = read_config(f.read_text())
        except ParseError as e:
            problems.append(f"{rel}: cannot read it ({e}); teach tests/configs/check_config_paths.py this YAML")
            continue
        for key, value, line in values:
            for p in file_values(key, value):
                checked += 1
                where = f"{rel}:{line}: {key}: {p}"
                norm = p[2:] if p.startswith("./") else p
                if norm in GENERATED:
                    used_generated.add(norm)
                    continue
                if norm in DOWNLOADED:
                    used_downloaded.add(norm)
                    continue
                if pathlib.PurePath(p).is_absolute():
                    problems.append(f"{where} is an absolute path, which a clone elsewhere does not have")
                elif not (root / p).exists():
                    problems.append(f"{where} does not exist relative to the repository root")
    for p, script in sorted(GENERATED.items()):
        if p not in used_generated:
            problems.append(f"GENERATED lists {p}, which no config uses: remove it")
        if not (root / script).is_file():
            problems.append(f"{p} is made by {script}, which does not exist")
    for p, (doc, says) in sorted(DOWNLOADED.items()):
        if p not in used_downloaded:
            problems.append(f"DOWNLOADED lists {p}, which no config uses: remove it")
        if not (root / doc).is_file() or says not in (root / doc).read_text():
            problems.append(f"{p} is downloaded, but {doc} does not say from where ('{says}')")
    if checked == 0:
        problems.append("no path values found in configs/: the reader or the key rules are broken")
    for p in problems:
        print("FAIL", p)
    print(f"{len(configs)} configs, {checked} paths checked ({len(used_generated)} made by scripts, "
          f"{len(used_downloaded)} downloaded): {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

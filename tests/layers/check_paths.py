#!/usr/bin/env python3
"""Fails when a comment of src/, a doc under docs/ or README.md names a repository path that does not exist.

Where it looks: the comments (// and /* */; not string literals, not code such as #include lines) of src/**/*.h and
src/**/*.cpp, every line of docs/**/*.md (code blocks included: their commands run from the repository root) and of
README.md.

What counts as a path: a token of the text (split at spaces, quotes, backticks, brackets, commas, '=' and '|'), after
dropping markdown emphasis, a trailing '.', ',', ';', ':', '!' or '?' and a line suffix (':412', ':40-60'):
- a token with a '/' whose first part is a known root: a top-level entry of the repository (TOP_LEVEL: src/, apps/,
  tests/, scripts/, configs/, docs/, bench/, data/, cmake/, .ci/, CMakeLists.txt, README.md), 'gspo' (include style:
  gspo/core/log.h is src/gspo/core/log.h), a layer folder of src/gspo/ (model/lora.h is src/gspo/model/lora.h), '.' or
  '..', or, in a markdown file, an entry of the file's own folder (img/x.png in docs/). It must end in a file extension
  (x.h, x.md, x.jsonl) or '/', except under a top-level folder, where any token is a path and may also name a file by
  its stem (src/gspo/train, .ci/run, bench/bench_rollout for the target of bench/bench_rollout.cpp). Slashed tokens
  with another first part (Qwen/Qwen3-0.6B, rollout/reward, and/or) are prose, not paths.
- a bare file name with a source extension (BARE_EXTENSIONS: step.h, trainer.cpp:412, config.md). The rule: it passes
  when a file of that name exists anywhere in the repository (one such file: it resolves; several: it names one of
  them, so it is not stale, only ambiguous), or, in a markdown file, beside that file; a bare name that no file in the
  repository has fails, as it resolves to nothing. Bare data and output names (metrics.jsonl, model.pt, config.json)
  are not checked: they name files of a run or of a model folder, not of the repository.
- the target of a markdown link [text](target), anchor dropped, resolved relative to the markdown file's folder.
A path passes when one of its readings exists: from the repository root, under src/ ('gspo/...'), under src/gspo/ (a
layer), or relative to the file's own folder.

Not checked (each list below says why): ALLOWED_PREFIXES (../shared/ and build outputs), URLs, globs and placeholders
(is_placeholder), absolute paths (/tmp/x: not the repository's), CREATED (files a program, a script or the user makes)
and EXTERNAL (names from outside the repository).

usage: check_paths.py SOURCE_DIR     exit 0 when every reference resolves; 1 with each offending `file:line: path`.
       check_paths.py --self-test    runs the checker over a tiny temporary tree with one good and one bad reference;
                                     exit 1 unless it flags exactly the bad one.
Given SOURCE_DIR, the self-test runs first, so a checker that stopped flagging anything fails too."""
import os
import pathlib
import re
import sys
import tempfile

# First parts of a path that name the repository's own top-level entries.
TOP_LEVEL = {"src", "apps", "tests", "scripts", "configs", "docs", "bench", "data", "cmake", ".ci",
             "CMakeLists.txt", "README.md"}
# Extensions a bare file name must have to be checked: the repository's source and doc files. Data and output files
# (.jsonl, .json, .pt, .txt, .yaml) are named bare mostly as files of a run or a model folder, which no clone has.
BARE_EXTENSIONS = {".h", ".cpp", ".cu", ".cuh", ".py", ".sh", ".md", ".cmake", ".sbatch"}
# Paths not checked, by their beginning:
ALLOWED_PREFIXES = (
    "../shared/",  # the sibling folder CI provides beside a development checkout (design notes, data, wheels); a
                   # clone has none, so it cannot be checked from here
    "build/",      # build outputs and run folders: generated, git-ignored, absent in a clone
    "runs/",
    "models/",
    ".gpu/",
    ".deps/",
)
# Files a program or script of the repository creates, or the user downloads, so no clone has them: name -> the file
# that makes them or says where they come from. That file must exist and mention the name, and an entry no comment or
# doc names any more fails, so the list cannot rot. Keep it short.
CREATED = {
    "main.py": "src/gspo/env/tools.cpp",         # the python tool's program, written into its sandbox directory
    "solution.py": "src/gspo/reward/code/code.cpp",  # the code verifier's program, written into its sandbox directory
    "tables.md": "scripts/gpu_check.sh",          # the GPU check's result tables, written into its OUT folder
    "trl_table.md": "scripts/gpu_check.sh",
    "data/livecodebench/": "docs/evaluation.md",  # LiveCodeBench's rows, downloaded by the user as the doc says
    "data/codeforces/": "docs/evaluation.md",     # competition rows the user converts (scripts/convert_codeforces.py)
}
# Names that look like the repository's files but are the outside world's.
EXTERNAL = {
    "nccl.h",     # NCCL's header, from the nvidia-nccl wheel
    "llama.cpp",  # a project's name, not a file
    "testlib.h",  # Codeforces' checker library (MikeMirzayanov/testlib), supplied by the user to the converter
}
# A part whose stem is all capitals stands for a name the reader fills in (PATH, DIR, X, N, MODEL.pt, RUN/x, P.md);
# these all-capitals names are real.
REAL_CAPITALS = {"README", "LICENSE"}
# Folders never walked for file names: git's, and the generated ones.
PRUNE = {".git", "build", "runs", "models", ".deps", ".gpu", "__pycache__"}

TOKEN = re.compile(r"[^\s`'\"()\[\]{},;|=]+")
MD_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
LINE_SUFFIX = re.compile(r"(?::\d+(?:-\d+)?)+$")
EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")


def is_url(token):
    return "://" in token or token.startswith(("www.", "mailto:"))


def is_placeholder(token):
    """A glob or a name the reader fills in: *, ?, <...>, {...}, $VAR, ~, ..., or a part with an all-capitals stem."""
    if any(c in token for c in "*?<>{}$~"):
        return True
    for part in token.strip("/").split("/"):
        stem = part.split(".")[0]
        if part == "..." or (re.fullmatch(r"[A-Z][A-Z0-9_]*", stem) and stem not in REAL_CAPITALS):
            return True
    return False


def comment_lines(text):
    """(line number, comment text) for each line holding part of a // or /* */ comment; strings and chars skipped."""
    out = {}
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.setdefault(line, []).append(text[i + 2:j])
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, piece in enumerate(text[i + 2:j].split("\n")):
                out.setdefault(line + k, []).append(piece)
            line += text.count("\n", i, j)
            i = j + 2
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            end = n if end < 0 else end + len(m.group(1)) + 2
            line += text.count("\n", i, end)
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator (1'000'000)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return sorted((k, " ".join(v)) for k, v in out.items())


class Repo:
    def __init__(self, root):
        self.root = root
        self.names = set()  # every file name in the repository (generated folders pruned)
        for _, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if x not in PRUNE]
            self.names.update(files)
        src = root / "src" / "gspo"
        self.layers = {p.name for p in src.iterdir() if p.is_dir()} if src.is_dir() else set()

    def exists(self, rel, base):
        """Whether rel names an entry: from the root, under src/ (gspo/...), under src/gspo/ (a layer), or under base."""
        want_dir = rel.endswith("/")
        rel = rel.rstrip("/")
        first = rel.split("/")[0]
        candidates = [base / rel]
        if first in TOP_LEVEL or first in (".", ".."):
            candidates.append(self.root / rel)
        if first == "gspo":
            candidates.append(self.root / "src" / rel)
        if first in self.layers:
            candidates.append(self.root / "src" / "gspo" / rel)
        return any(c.is_dir() if want_dir else c.exists() for c in candidates)


def references(text_line, markdown):
    """(token, is a markdown link target) for each token of one line."""
    found = []
    if markdown:
        found += [(m.group(1), True) for m in MD_LINK.finditer(text_line)]
        text_line = MD_LINK.sub("] ", text_line)
    found += [(m.group(0), False) for m in TOKEN.finditer(text_line)]
    return found


def clean(token):
    token = token.strip("*_").rstrip(".,;:!?")
    return LINE_SUFFIX.sub("", token).rstrip(".,;:")


def created(rel):
    """The CREATED entry rel is, or lies under; None if none."""
    for c in CREATED:
        if rel == c or (c.endswith("/") and rel.startswith(c)):
            return c
    return None


def classify(token, is_link, path, repo):
    """None when the token is not a path to check, else (reference, whether it resolves)."""
    if is_url(token):
        return None
    if is_link:
        token = token.split("#")[0]
    token = clean(token)
    if not token or token.startswith("/") or is_placeholder(token):
        return None  # empty (a link to an anchor of this page), absolute (not the repository's), or a placeholder
    base = path.parent
    rel = token.removeprefix("./")
    if rel.startswith(ALLOWED_PREFIXES) or rel in EXTERNAL or created(rel):
        return None
    if is_link:
        return token, repo.exists(rel, base)
    if "/" in rel:
        first, last = rel.split("/")[0], rel.rstrip("/").split("/")[-1]
        top_folder = first in TOP_LEVEL and (repo.root / first).is_dir()
        if top_folder and not (rel.endswith("/") or EXTENSION.search(last)):
            # src/gspo/train, .ci/run, bench/bench_rollout: a folder, a file without extension, or a stem (a target)
            return token, repo.exists(rel, base) or any(repo.root.glob(rel + ".*"))
        if not (rel.endswith("/") or EXTENSION.search(last)):
            return None
        known = (first in TOP_LEVEL or first in ("gspo", ".", "..") or first in repo.layers
                 or (path.suffix == ".md" and (base / first).exists()))
        return (token, repo.exists(rel, base)) if known else None
    # A bare name.
    ext = EXTENSION.search(rel)
    if not ext or ext.group(0) not in BARE_EXTENSIONS or rel.startswith("."):
        return None
    if rel in TOP_LEVEL:
        return token, (repo.root / rel).exists()
    return token, (path.suffix == ".md" and (base / rel).exists()) or rel in repo.names


def files_to_scan(root):
    src, docs = root / "src", root / "docs"
    code = sorted(p for p in src.rglob("*") if p.suffix in (".h", ".cpp") and p.is_file()) if src.is_dir() else []
    md = sorted(docs.rglob("*.md")) if docs.is_dir() else []
    if (root / "README.md").is_file():
        md.append(root / "README.md")
    return code, md


def check(root):
    """(problems, references checked, CREATED entries named) over the tree at root."""
    repo = Repo(root)
    code, md = files_to_scan(root)
    problems, checked, used = [], 0, set()
    for path in code + md:
        text = path.read_text(errors="replace")
        markdown = path.suffix == ".md"
        lines = enumerate(text.splitlines(), 1) if markdown else comment_lines(text)
        for n, line in lines:
            for token, is_link in references(line, markdown):
                c = created(clean(token.split("#")[0]).removeprefix("./"))
                if c:
                    used.add(c)
                r = classify(token, is_link, path, repo)
                if r is None:
                    continue
                checked += 1
                if not r[1]:
                    problems.append(f"{path.relative_to(root)}:{n}: {r[0]}")
    return problems, checked, used


def check_created(root, used):
    """Each CREATED entry is still named somewhere, and its maker exists and still mentions it."""
    problems = []
    for c, source in CREATED.items():
        if c not in used:
            problems.append(f"CREATED[{c!r}]: no comment or doc names it any more; drop it")
        f = root / source
        if not f.is_file():
            problems.append(f"CREATED[{c!r}] names {source}, which does not exist")
        elif c.rstrip("/") not in f.read_text(errors="replace"):
            problems.append(f"CREATED[{c!r}] names {source}, which does not mention it")
    return problems


def self_test():
    """A tiny tree with one good and one bad reference (and some that are not checked): exactly the bad one fails."""
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        (root / "src" / "gspo" / "core").mkdir(parents=True)
        (root / "docs").mkdir()
        (root / "src" / "gspo" / "core" / "log.h").write_text(
            '#include "gspo/core/gone.h"  // "code, not a comment": not checked\n'
            "// See docs/guide.md, and build/gspo (generated), ../shared/x.md, RUN/y.md, main.py: allowed.\n"
            "/* The retired docs/old_guide.md:12 */\n")
        (root / "docs" / "guide.md").write_text("See https://example.org/a.md and `/tmp/b.md`.\n")
        problems, checked, _ = check(root)
    want = ["src/gspo/core/log.h:3: docs/old_guide.md"]
    if problems != want or checked != 2:
        print(f"FAIL self-test: expected {want} of 2 references, got {problems} of {checked}")
        return 1
    return 0


def main():
    if len(sys.argv) != 2:
        print("usage: check_paths.py SOURCE_DIR | --self-test")
        return 2
    if sys.argv[1] == "--self-test":
        rc = self_test()
        if rc == 0:
            print("self-test passed: of a good and a bad reference, exactly the bad one was flagged")
        return rc
    if self_test():
        return 1
    root = pathlib.Path(sys.argv[1]).resolve()
    problems, checked, used = check(root)
    problems += check_created(root, used)
    for p in problems:
        print("FAIL", p)
    print(f"{checked} path references checked in the comments of src/ and in docs/ and README.md: "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

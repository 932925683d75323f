#!/usr/bin/env bash
# The "docs" step of tests/run.sh: keeps the references between the code and docs/ honest.
# Fails (exit 1, one line per problem) when
#   - a source or doc file cites `docs/<name>.md §N` (or a further `§M` later on the same line)
#     and <name>.md has no numbered heading N (headings look like `## 2.` or `### 2.8 Title`);
#   - a file outside docs/ still cites the old out-of-tree design notes (COMPACTION.md,
#     DESIGN.md), which are not in the repository;
#   - a relative Markdown link in README.md or docs/*.md names a file that does not exist, or
#     an `#anchor` that none of that file's headings produces (GitHub's heading slugs).
# Reads only tracked-looking source files (no target/, node_modules/, .venv/, .git/); writes
# nothing. Needs bash and python3. This script itself is not scanned.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
exec python3 - "$@" <<'PY'
import os
import re
import sys

SKIP_DIRS = {"target", "node_modules", ".venv", ".git", "__pycache__", ".m2"}
EXTS = (".rs", ".py", ".sh", ".md", ".toml", ".go", ".js", ".mjs", ".ts", ".java", ".yaml", ".yml")
# Built from pieces so this script does not cite the old files itself.
OLD = re.compile(r"\b(" + "COMPACTION" + r"|" + "DESIGN" + r")\.md\b")
CITE = re.compile(r"docs/([A-Za-z0-9_-]+\.md)")
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?(?:\s|$)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def source_files():
    for dirpath, dirnames, filenames in os.walk("."):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            if name.endswith(EXTS) and os.path.join(dirpath, name) != "./tests/docs_links.sh":
                yield os.path.normpath(os.path.join(dirpath, name))


def headings(path):
    """(section numbers, GitHub anchors) of a Markdown file's headings."""
    numbers, anchors, seen = set(), set(), {}
    in_code = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                in_code = not in_code
                continue
            m = None if in_code else HEADING.match(line.rstrip("\n"))
            if not m:
                continue
            title = m.group(2)
            n = NUMBERED.match(title)
            if n:
                numbers.add(n.group(1))
            slug = re.sub(r"[^\w\- ]", "", title.lower().replace("`", "")).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    return numbers, anchors


cache = {}


def doc(path):
    if path not in cache:
        cache[path] = headings(path) if os.path.isfile(path) else None
    return cache[path]


problems = []
cited = 0
for path in source_files():
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except (UnicodeDecodeError, OSError):
        continue
    in_docs = path.startswith("docs" + os.sep)
    for no, line in enumerate(lines, 1):
        where = f"{path}:{no}"
        if not in_docs and OLD.search(line):
            problems.append(f"{where}: cites {OLD.search(line).group(0)}, which is not in the "
                            f"repository; cite docs/<file>.md instead")
        # Each `docs/x.md` starts a run; `§N` after it (until the next `docs/`) refer to it.
        cites = list(CITE.finditer(line))
        for i, c in enumerate(cites):
            end = cites[i + 1].start() if i + 1 < len(cites) else len(line)
            target = os.path.join("docs", c.group(1))
            info = doc(target)
            for s in SECTION.finditer(line, c.end(), end):
                cited += 1
                if info is None:
                    problems.append(f"{where}: cites {target} §{s.group(1)}, and {target} does not exist")
                elif s.group(1) not in info[0]:
                    problems.append(f"{where}: cites {target} §{s.group(1)}, which has no such "
                                    f"section (sections: {', '.join(sorted(info[0], key=lambda v: [int(x) for x in v.split('.')]))})")

md_files = ["README.md"] + [os.path.join("docs", n) for n in sorted(os.listdir("docs")) if n.endswith(".md")]
links = 0
for md in md_files:
    base = os.path.dirname(md)
    with open(md, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for m in LINK.finditer(text):
        href = m.group(1)
        if re.match(r"^[a-z]+:", href):
            continue
        file_part, _, anchor = href.partition("#")
        target = os.path.normpath(os.path.join(base, file_part)) if file_part else md
        links += 1
        if not os.path.exists(target):
            problems.append(f"{md}: link to {href}: {target} does not exist")
            continue
        if anchor and target.endswith(".md"):
            info = doc(target)
            if info is not None and anchor not in info[1]:
                problems.append(f"{md}: link to {href}: no heading in {target} has anchor #{anchor}")

for p in problems:
    print(p)
print(f"docs links: {cited} section references and {links} Markdown links checked, "
      f"{len(problems)} problem(s)")
sys.exit(1 if problems else 0)
PY

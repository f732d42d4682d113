#!/usr/bin/env python3
"""The documents the code and the docs point to exist (issue 23: comments cited a DESIGN.md
the repository does not have).

  * every "docs/NAME.md" named in a source, script, CMake or Markdown file exists;
  * every relative Markdown link ](path) in README.md, docs/*.md and the other READMEs
    resolves to a file or folder (anchors and web links are not checked);
  * nothing names DESIGN.md.

Usage: doc_links_test.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

src = os.path.abspath(sys.argv[1])
SKIP_DIRS = {".git", "out", "third_party"}
EXTS = (".cpp", ".h", ".hpp", ".cu", ".cuh", ".c", ".py", ".sh", ".cmake", ".txt", ".md", ".in")


def files():
    try:
        out = subprocess.run(["git", "-C", src, "ls-files"], check=True, capture_output=True, text=True).stdout
        names = [n for n in out.splitlines() if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for root, dirs, fs in os.walk(src):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
            names += [os.path.relpath(os.path.join(root, f), src) for f in fs]
    return [n for n in names if n.endswith(EXTS) and os.path.isfile(os.path.join(src, n))]


problems = []
me = os.path.relpath(os.path.abspath(__file__), src)
for name in files():
    if name == me:
        continue
    text = open(os.path.join(src, name), encoding="utf-8", errors="replace").read()
    for lineno, line in enumerate(text.splitlines(), 1):
        if "DESIGN.md" in line:
            problems.append("%s:%d names DESIGN.md, which is not in the repository: cite the doc under docs/ that says it" % (name, lineno))
        for m in re.finditer(r"(?<![\w./-])docs/([\w-]+\.md)", line):
            if not os.path.isfile(os.path.join(src, "docs", m.group(1))):
                problems.append("%s:%d names docs/%s, which does not exist" % (name, lineno, m.group(1)))
        if name.endswith(".md"):
            for m in re.finditer(r"\]\(([^)\s]+)\)", line):
                target = m.group(1).split("#", 1)[0]
                if not target or re.match(r"^[a-z]+:", target):
                    continue
                path = os.path.normpath(os.path.join(src, os.path.dirname(name), target))
                if not os.path.exists(path):
                    problems.append("%s:%d links %s, which does not exist" % (name, lineno, m.group(1)))

if problems:
    print("FAIL: %d reference(s) to documents that do not exist:" % len(problems))
    print("\n".join(problems))
    sys.exit(1)
print("ok: every docs/*.md named and every relative Markdown link exists; nothing names DESIGN.md")

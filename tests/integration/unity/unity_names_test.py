#!/usr/bin/env python3
"""Unity builds stay correct: no two files of one unity-built target define a file-local
function of the same name (cmake/EdoUnity.cmake).

In a unity batch the files' anonymous namespaces and static functions share one scope. Two
helpers of one name and signature fail the build, but two of one name and different
signatures overload each other, and a call in one file may silently resolve to the other
file's helper (or a file's helper may hide a function of the same name declared in the
target's headers). Batches change when files are added, so the check is per target, not per
batch.

Usage: unity_names_test.py BUILD_DIR      (reads BUILD_DIR/unity-targets.txt)
It first checks itself on two made-up files with a clash, so that it cannot pass by reading
nothing.
"""
import os
import re
import sys
import tempfile

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "decltype", "alignof", "catch",
            "static_assert", "defined", "operator", "new", "delete", "throw", "case"}
# `type name(` at the start of a line: the return type (or a variable's type) and the name.
HEAD = re.compile(r"^(?:template\s*<.*>\s*)?(?:(?:static|inline|constexpr|consteval|constinit|"
                  r"\[\[[\w:]+\]\])\s+)*(?:[\w:]+(?:<.*>)?[\s\*&]+)+(~?\w+)\s*\(")


def strip(text):
    """The text without comments, string and character literals (kept as "" and '')."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            out.append("\n" * text.count("\n", i, n if j < 0 else j))
            i = n if j < 0 else j + 2
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + (m.group(1) if m else "") + '"', i)
            out.append('""' + "\n" * text.count("\n", i, n if end < 0 else end))
            i = n if end < 0 else end + len(m.group(1) if m else "") + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def names(path):
    """{(namespace, name)} of the file-local functions defined in path, and of the others (not
    members: qualified names are left out). namespace is the named namespaces around it ("edo::tuner"),
    the anonymous ones left out: a unity batch merges a namespace's anonymous namespaces."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = strip(f.read()).split("\n")
    local, public = set(), set()
    stack = []  # (name, "" when anonymous; brace depth outside it) of each open namespace
    depth = 0
    for line in lines:
        if line.startswith("#"):
            continue
        opens_ns = re.match(r"^\s*(?:inline\s+)?namespace\b\s*([\w:]*)\s*\{", line)
        if depth == len(stack) and line[:1].isalpha() and not opens_ns:
            m = HEAD.match(line)
            if m and m.group(1) not in KEYWORDS and not line.startswith(("using ", "typedef ", "return ")):
                scope = "::".join(n for n, _ in stack if n)
                in_anon = any(not n for n, _ in stack)
                (local if in_anon or line.startswith("static ") else public).add((scope, m.group(1)))
        if opens_ns:
            stack.append((opens_ns.group(1), depth))
        for ch in line:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                while stack and depth <= stack[-1][1]:
                    stack.pop()
    return local, public


def clashes(target, sources):
    found = {s: names(s) for s in sources}
    problems = []
    for s, (local, _) in found.items():
        for key in sorted(local):
            for other, (olocal, opublic) in found.items():
                if other != s and (key in olocal or key in opublic):
                    if key in olocal and other < s:
                        continue  # reported once, from the first file
                    name = "::".join(k for k in key if k)
                    problems.append("%s: %s defines the file-local function '%s', and %s defines '%s' too: in a unity "
                                    "batch a call may mean the other one; rename one, or share it through a header"
                                    % (target, os.path.relpath(s), name, os.path.relpath(other), name))
    return problems


def self_check():
    with tempfile.TemporaryDirectory() as d:
        a, b, c = (os.path.join(d, n) for n in ("a.cpp", "b.cpp", "c.cpp"))
        with open(a, "w") as f:
            f.write("namespace edo {\nnamespace {\n\nstd::string number(double v) {\n  return \"{\";\n}\n\n}  // namespace\n"
                    "void uses() { number(1); }\n}  // namespace edo\n")
        with open(b, "w") as f:
            f.write("namespace edo {\n// number( in a comment\nstd::string number(double x, const char* fmt) {\n  return {};\n}\n"
                    "}  // namespace edo\n")
        with open(c, "w") as f:
            f.write("namespace edo {\nstruct S { void number(int); };\nvoid S::number(int) {}\n}  // namespace edo\n"
                    "namespace edo::other {\nnamespace {\nstatic int number(int x) { return x; }\n}  // namespace\n"
                    "}  // namespace edo::other\n")
        assert names(a) == ({("edo", "number")}, {("edo", "uses")}), names(a)
        assert names(b) == (set(), {("edo", "number")}), names(b)
        assert names(c) == ({("edo::other", "number")}, set()), names(c)
        p = clashes("t", [a, b, c])
        assert len(p) == 1 and "'edo::number'" in p[0] and "a.cpp" in p[0] and "b.cpp" in p[0], p
        assert clashes("t", [a, c]) == []


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: unity_names_test.py BUILD_DIR")
    self_check()
    manifest = os.path.join(sys.argv[1], "unity-targets.txt")
    if not os.path.exists(manifest):
        sys.exit("%s not found: configure the build with cmake first" % manifest)
    problems, targets, files = [], 0, 0
    with open(manifest) as f:
        for line in f:
            if not line.strip():
                continue
            target, sources = line.rstrip("\n").split("\t")
            sources = [s for s in sources.split(";") if s]
            targets += 1
            files += len(sources)
            problems += clashes(target, sources)
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    if targets == 0:
        print("no unity-built targets (EDO_UNITY_BUILD=OFF): nothing to check")
    else:
        print("ok: %d unity-built targets, %d files, no file-local function defined twice in a target" % (targets, files))


if __name__ == "__main__":
    main()

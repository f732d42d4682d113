#!/usr/bin/env python3
"""Lists the C++/CUDA functions longer than N lines (issue 36: no product function over 100).

    scripts/function-lengths.py [--min N] [--check] [PATH ...]

PATHs are files or folders; by default the product folders of the repository this script is in
(core profiler db kernels collector tuner cli gui). Prints one line per function over N lines
(default 100), longest first: `LINES  path:line  name`. With --check the exit status is 1 when
any is listed (0 otherwise), so a CI step can hold the line.

A function's length runs from the line of its name to the line of its closing brace. The scan
matches braces after blanking comments, string and character literals (raw strings too) and
preprocessor lines, so a brace in any of them does not count. Only bodies at namespace or class
scope are functions: a lambda or a local class inside a function counts as part of it, and a
brace initializer (`T x{...}`, `= {...}`, a constructor's `member_{...}`) is not a body.
"""
import argparse
import os
import re
import sys

PRODUCT_FOLDERS = ["core", "profiler", "db", "kernels", "collector", "tuner", "cli", "gui"]
SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".h", ".hh", ".hpp", ".cuh")
CHAR_PREFIXES = {"L", "u", "U", "u8"}


def _literal_end(text, i):
    """Index just past the string or character literal that starts at text[i] (a quote)."""
    quote = text[i]
    j = i + 1
    while j < len(text) and text[j] != quote:
        if text[j] == "\\":
            j += 1
        elif text[j] == "\n":  # unterminated: stop at the line's end
            return j
        j += 1
    return j + 1


def _word_before(text, i):
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
        j -= 1
    return text[j:i]


def blank(text):
    """`text` with comments, literals and preprocessor lines replaced by spaces (newlines kept,
    so line numbers and columns stay where they were)."""
    out = list(text)
    n = len(text)
    i = 0
    line_start = True

    def wipe(a, b):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c in " \t":
            i += 1
            continue
        if line_start and c == "#":  # a directive, with its continuation lines
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                if text.startswith("/*", j):  # a block comment inside the directive
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                    continue
                j += 1
            wipe(i, j)
            i = j
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif c == '"':
            word = _word_before(text, i)
            if word.endswith("R") and word[:-1] in ("", "L", "u", "U", "u8"):
                paren = text.find("(", i)
                delim = text[i + 1:paren]
                end = text.find(")" + delim + '"', paren)
                j = n if end < 0 else end + len(delim) + 2
            else:
                j = _literal_end(text, i)
            wipe(i, j)
            i = j
        elif c == "'":
            word = _word_before(text, i)
            if word and word[0].isdigit():  # a digit separator: 1'000'000
                i += 1
                continue
            if word and word not in CHAR_PREFIXES:
                i += 1
                continue
            j = _literal_end(text, i)
            wipe(i, j)
            i = j
        else:
            i += 1
    return "".join(out)


SCOPE_KEYWORD = re.compile(r"\b(class|struct|union|enum)\b")
TEMPLATE_HEAD = re.compile(r"^\s*template\s*<")
# What may follow a function's parameter list before its body.
AFTER_PARAMS = re.compile(
    r"^(\s|const\b|volatile\b|noexcept\b(\s*\([^)]*\))?|override\b|final\b|mutable\b|&|&&|try\b|"
    r"->[^{;=]*|requires\b[^{;]*)*$", re.S)
# A constructor's initializer list after its parameters (`) : a_(x), b_{y}`), not a `::`.
INIT_LIST = re.compile(r"^\s*(noexcept\b\s*|try\b\s*)*:(?!:)", re.S)
NAME = re.compile(r"((?:[\w~]+\s*(?:<[^<>]*>)?\s*::\s*)*(?:operator\s*(?:\(\s*\)|[^\s(]+)|~?\w+))\s*$")


def _strip_template_heads(header):
    """Drops leading `template <...>` clauses (their `class T` is not a class)."""
    while True:
        m = TEMPLATE_HEAD.match(header)
        if not m:
            return header
        depth, j = 0, m.end() - 1
        while j < len(header):
            depth += {"<": 1, ">": -1}.get(header[j], 0)
            j += 1
            if depth == 0:
                break
        header = header[j:]


def _top_level_parens(header):
    """(start, end) of each parenthesised group at depth 0 in `header`."""
    groups, depth, start = [], 0, 0
    for k, c in enumerate(header):
        if c == "(":
            if depth == 0:
                start = k
            depth += 1
        elif c == ")" and depth > 0:
            depth -= 1
            if depth == 0:
                groups.append((start, k))
    return groups


def _function_name(h):
    """(name, offset of the name in h) when h, the text before a `{`, ends a function's
    declarator; else None. The parameter list is the first top-level `(...)` that only
    qualifiers, a trailing return type or an initializer list follow (an attribute or a
    macro before the name has its own parentheses)."""
    for start, end in _top_level_parens(h):
        name_part, rest = h[:start], h[end + 1:]
        if not (AFTER_PARAMS.match(rest) or INIT_LIST.match(rest)):
            continue
        # `auto f = [](...) {` or `x = g(...)`: an initializer, not a definition.
        if re.search(r"(^|[^=!<>])=([^=]|$)", re.sub(r"operator\s*\S+", "", name_part)):
            return None
        m = NAME.search(name_part)
        return (re.sub(r"\s+", "", m.group(1)), m.start(1)) if m else None
    return None


def classify(header):
    """What a `{` at namespace or class scope opens, from the text since the previous statement
    at that scope: ('scope', ...) for a namespace, class or linkage block (functions live
    inside), ('function', name, offset of the name in header), or ('other', ...) for an
    initializer or an enum's list."""
    h = _strip_template_heads(header)
    base = len(header) - len(h)
    found = _function_name(h)
    if found:
        return "function", found[0], base + found[1]
    stripped = h.strip()
    if not stripped or stripped == "extern" or re.match(r"^(inline\s+)?namespace\b", stripped):
        return "scope", None, 0
    key = SCOPE_KEYWORD.search(stripped)
    if key and key.group(1) != "enum" and "=" not in stripped:
        return "scope", None, 0
    return "other", None, 0


def _member_init_brace(code, header_start, i):
    """True when the `{` at i initialises a member in a constructor's initializer list
    (`: a_{x}`): it follows a name, where the body follows `)`, `}` or a qualifier."""
    j = i - 1
    while j >= header_start and code[j].isspace():
        j -= 1
    if j < header_start or not (code[j].isalnum() or code[j] in "_>"):
        return False
    if _word_before(code, j + 1) in ("const", "noexcept", "override", "final", "mutable", "try"):
        return False
    header = code[header_start:i]
    groups = _top_level_parens(header)
    return bool(groups) and INIT_LIST.match(header[groups[0][1] + 1:]) is not None


def functions(text):
    """(name, first line, last line) of each function body at namespace or class scope."""
    code = blank(text)
    found = []
    # One entry per open brace: 'scope', 'other' (an initializer at scope), 'inner' (any brace
    # inside a body or initializer), or (name, first line) for a function's body.
    stack = []
    header_start = 0  # where the text before the next `{` at scope level begins

    def line_of(pos):
        return code.count("\n", 0, pos) + 1

    for i, c in enumerate(code):
        at_scope = not stack or stack[-1] == "scope"
        if c == ";" and at_scope:
            header_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else None
            if isinstance(kind, tuple):
                found.append((kind[0], kind[1], line_of(i)))
            # After a body or a block the next header starts; after an initializer's `}` (a
            # constructor's `a_{x}`) the same header goes on.
            if kind != "other" and (not stack or stack[-1] == "scope"):
                header_start = i + 1
        elif c == "{" and not at_scope:
            stack.append("inner")
        elif c == "{":
            kind, name, offset = classify(code[header_start:i])
            if kind == "function" and not _member_init_brace(code, header_start, i):
                stack.append((name, line_of(header_start + offset)))
            elif kind == "scope":
                stack.append("scope")
                header_start = i + 1
            else:
                stack.append("other")
    return found


def source_files(paths):
    for path in paths:
        if os.path.isfile(path):
            yield path
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "build")
            for f in sorted(files):
                if f.endswith(SUFFIXES):
                    yield os.path.join(root, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min", type=int, default=100, help="list functions longer than this (default 100)")
    parser.add_argument("--check", action="store_true", help="exit 1 when any function is listed")
    parser.add_argument("paths", nargs="*", help="files or folders (default: the product folders)")
    args = parser.parse_args()
    if args.min < 0:
        sys.exit("function-lengths.py: --min must be a whole number of lines, 0 or more")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = args.paths or [os.path.relpath(os.path.join(root, f)) for f in PRODUCT_FOLDERS]
    for p in paths:
        if not os.path.exists(p):
            sys.exit(f"function-lengths.py: {p}: no such file or folder; name C++ sources or folders")
    long_ones = []
    for path in source_files(paths):
        with open(path, encoding="utf-8", errors="replace") as f:
            for name, first, last in functions(f.read()):
                if last - first + 1 > args.min:
                    long_ones.append((last - first + 1, path, first, name))
    long_ones.sort(key=lambda f: (-f[0], f[1], f[2]))
    for lines, path, first, name in long_ones:
        print(f"{lines:5d}  {path}:{first}  {name}")
    print(f"{len(long_ones)} function(s) over {args.min} lines", file=sys.stderr)
    return 1 if args.check and long_ones else 0


if __name__ == "__main__":
    sys.exit(main())

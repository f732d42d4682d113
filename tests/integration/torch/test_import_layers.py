#!/usr/bin/env python3
"""The edo package's modules import each other one way: no import circle (issue 36, point 6).

Every ``import`` / ``from ... import`` of a module of the package counts, at module level and
inside functions alike (an import deferred into a function is still a circle: the two modules
depend on each other and neither can be read, tested or moved alone). The package's own
``__init__`` (``import edo``, ``from edo import x``) counts as a module too. A circle fails the
test, named module by module; so does a checker that finds no circle in a package built with one.

    test_import_layers.py [--source REPO] [--package DIR]

Needs only the standard library (it reads the sources with ``ast``; nothing is imported).
"""

import argparse
import ast
import os
import sys
import tempfile

PACKAGE = "edo"


def imports_of(path, modules):
    """The package modules a source file imports (names without the package: "_state",
    "__init__" for the package itself), at any depth of the file."""
    tree = ast.parse(open(path).read(), filename=path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:              # from . import a, b / from .a import x
                names = [node.module] if node.module else [a.name for a in node.names]
            elif node.level == 0 and node.module == PACKAGE:   # from edo import a (or a name)
                names = [a.name if a.name in modules else "__init__" for a in node.names]
            elif node.level == 0 and node.module and node.module.startswith(PACKAGE + "."):
                names = [node.module.split(".")[1]]
            else:
                continue
            found.update(n.split(".")[0] for n in names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == PACKAGE:
                    found.add("__init__")
                elif a.name.startswith(PACKAGE + "."):
                    found.add(a.name.split(".")[1])
    return found & modules


def import_graph(package_dir):
    modules = {f[:-3] for f in os.listdir(package_dir) if f.endswith(".py")}
    return {m: sorted(imports_of(os.path.join(package_dir, m + ".py"), modules) - {m})
            for m in sorted(modules)}


def cycles(graph):
    """One circle per back edge of a depth-first walk (each as [a, b, ..., a], from its
    smallest module name); [] when the imports form layers."""
    state, path, out = {}, [], []

    def visit(m):
        state[m] = "open"
        path.append(m)
        for dep in graph[m]:
            if state.get(dep) == "open":
                ring = path[path.index(dep):]
                first = ring.index(min(ring))   # named from its smallest module: stable output
                ring = ring[first:] + ring[:first]
                out.append(ring + [ring[0]])
            elif dep not in state:
                visit(dep)
        path.pop()
        state[m] = "done"

    for m in graph:
        if m not in state:
            visit(m)
    return out


def self_check():
    """The checker finds a circle closed by an import inside a function, and the package's
    own __init__ in one; and none in a package whose imports point one way."""
    with tempfile.TemporaryDirectory() as d:
        files = {"__init__.py": "def f():\n    from . import _top\n",
                 "_top.py": "from . import _mid\n",
                 "_mid.py": "from ._base import X\n\ndef g():\n    from edo import _top\n",
                 "_base.py": "import os\nX = 1\n",
                 "_late.py": "def h():\n    import edo\n    return edo\n"}
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        found = sorted(" -> ".join(c) for c in cycles(import_graph(d)))
        if found != ["_mid -> _top -> _mid"]:
            return "the checker found %s in a package with exactly one circle, _mid -> _top -> _mid" % found
        with open(os.path.join(d, "_mid.py"), "w") as f:
            f.write("from ._base import X\n")
        with open(os.path.join(d, "_base.py"), "w") as f:
            f.write("def k():\n    import edo\n")
        found = sorted(" -> ".join(c) for c in cycles(import_graph(d)))
        if found != ["__init__ -> _top -> _mid -> _base -> __init__"]:
            return "the checker found %s where `import edo` inside a function closes one circle" % found
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
    ap.add_argument("--package", help="the package folder (default: SOURCE/profiler/python/edo)")
    ap.add_argument("--build", help=argparse.SUPPRESS)
    a = ap.parse_args()
    problem = self_check()
    if problem:
        print("FAIL: " + problem)
        return 1
    package = a.package or os.path.join(a.source, "profiler", "python", PACKAGE)
    graph = import_graph(package)
    found = cycles(graph)
    for c in found:
        print("FAIL: import circle in %s: %s" % (package, " -> ".join(c)))
    if found:
        print("Restructure so that imports point one way (shared state at the bottom, _state).")
        return 1
    print("ok: %d modules of %s import one way" % (len(graph), package))
    return 0


if __name__ == "__main__":
    sys.exit(main())

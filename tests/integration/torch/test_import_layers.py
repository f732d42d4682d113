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


def module_name(package_dir, path):
    """A source file's module, dotted from the package ("hooks._counting"); a package's own
    __init__ is "__init__" (the top) or "hooks.__init__"."""
    return os.path.relpath(path, package_dir)[:-3].replace(os.sep, ".")


def resolve(parts, names, modules):
    """The modules that ``from <parts> import <names>`` reads (``parts``: the dotted package
    or module below edo, [] for edo itself). A name that is a module is that module; any other
    name comes from ``parts`` itself: its module, or its package's __init__ (``from .. import
    lookup`` in edo/plan reads edo's __init__, relative or not)."""
    base = ".".join(parts)
    found = set()
    for name in names:
        sub = base + "." + name if base else name
        if sub in modules:
            found.add(sub)
        elif base in modules:
            found.add(base)
        else:                                   # a name defined by a package's __init__
            found.add(base + ".__init__" if base else "__init__")
    return found


def imports_of(path, modules, package_dir):
    """The package modules a source file imports (dotted below the package: "runtime._state",
    "__init__" for the package itself), at any depth of the file. The parent packages' __init__
    that Python runs on the way to a sub-module are not counted: every module would import edo's."""
    tree = ast.parse(open(path).read(), filename=path)
    me = module_name(package_dir, path)
    here = me.split(".")[:-1]                   # the package the file lies in
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level >= 1:                 # from . import a / from ..b import c / from .a import x
                up = node.level - 1
                if up > len(here):
                    continue
                parts = here[:len(here) - up] + (node.module.split(".") if node.module else [])
                found |= resolve(parts, [a.name for a in node.names], modules)
            elif node.module == PACKAGE or (node.module or "").startswith(PACKAGE + "."):
                parts = node.module.split(".")[1:]     # from edo import a / from edo.b import c
                found |= resolve(parts, [a.name for a in node.names], modules)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == PACKAGE:
                    found.add("__init__")
                elif a.name.startswith(PACKAGE + "."):
                    parts = a.name.split(".")[1:]
                    found |= resolve(parts[:-1], parts[-1:], modules)
    return found & modules


def import_graph(package_dir):
    paths = {}
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                paths[module_name(package_dir, path)] = path
    modules = set(paths)
    return {m: sorted(imports_of(paths[m], modules, package_dir) - {m}) for m in sorted(modules)}


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
    own __init__ in one; none in a package whose imports point one way; one between modules
    of two sub-packages; and one closed by a name of edo's __init__ imported relatively."""
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
    with tempfile.TemporaryDirectory() as d:
        files = {"__init__.py": "", "low/__init__.py": "", "high/__init__.py": "",
                 "low/_x.py": "def f():\n    from ..high._y import Y\n",
                 "high/_y.py": "from ..low import _x\nY = 1\n",
                 "high/_z.py": "import edo.low._x\nfrom . import _y\n"}
        for name, text in files.items():
            os.makedirs(os.path.join(d, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        found = sorted(" -> ".join(c) for c in cycles(import_graph(d)))
        if found != ["high._y -> low._x -> high._y"]:
            return "the checker found %s where two sub-packages' modules import each other" % found
        # A name that edo's __init__ defines, imported relatively from a sub-package
        # (`from .. import lookup`), reads the __init__: the circle plan/_apply once closed.
        with open(os.path.join(d, "low/_x.py"), "w") as f:
            f.write("def f():\n    from .. import lookup\n")
        with open(os.path.join(d, "__init__.py"), "w") as f:
            f.write("def lookup():\n    from .low import _x\n")
        found = sorted(" -> ".join(c) for c in cycles(import_graph(d)))
        if found != ["__init__ -> low._x -> __init__"]:
            return "the checker found %s where `from .. import lookup` reads edo's __init__" % found
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
    ap.add_argument("--package", help="the package folder, sub-packages included (default: SOURCE/profiler/python/edo)")
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

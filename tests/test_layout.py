"""The package's layout is its architecture: subsystems as folders, and imports that point one way only.

    tools  →  the public face (__init__)  →  interop, passes  →  modules  →  derivatives  →  analysis | coloring
    →  lattice | ir | kernels  →  errors, dtypes, _compat

(``a | b``: side by side, neither imports the other.)  Every ``import`` of every module (at the top or inside a
function: a lazy import is still a dependency) is resolved and checked against that order, so an arrow that runs
back up, or across between two side-by-side folders, fails here, naming the two files.  The root holds the public
face and at most a few entry points.  Each folder's ``__init__.py`` opens with its map: a
docstring naming every module and sub-folder in it and stating the folder's rank below."""

from __future__ import annotations

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = "stablehlo_sparsity"

#: Each subsystem's rank: a module may import its own subsystem and any of a lower rank, never a higher one.
LAYERS = {
    "errors": 0, "_compat": 0, "examples": 0, "_version": 0, "dtypes": 0,
    "lattice": 1, "ir": 1, "kernels": 1,
    "analysis": 2, "coloring": 2,
    "derivatives": 3,
    "modules": 4,
    "interop": 5,
    "passes": 5,
    "__init__": 6, "_legacy_paths": 6,
    "tools": 7, "launch": 7,
}
#: Subsystems that sit side by side (neither imports the other).
SIDE_BY_SIDE = [("interop", "passes"), ("interop", "modules"), ("lattice", "ir"), ("lattice", "kernels"),
                ("ir", "kernels"), ("analysis", "coloring")]
MAX_ROOT_MODULES = 8


def _modules():
    """(dotted name, path, is_package) of every module of the package (``passes/`` is ``stablehlo_sparsity.passes``)."""
    for base, dotted in ((os.path.join(ROOT, PKG), PKG), (os.path.join(ROOT, "passes"), PKG + ".passes")):
        for dirpath, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            rel = os.path.relpath(dirpath, base)
            pkg = dotted if rel == "." else dotted + "." + rel.replace(os.sep, ".")
            for fn in files:
                if fn.endswith(".py"):
                    name = pkg if fn == "__init__.py" else pkg + "." + fn[:-3]
                    yield name, os.path.join(dirpath, fn), fn == "__init__.py"


def _imports(name: str, path: str, is_pkg: bool):
    tree = ast.parse(open(path, encoding="utf-8").read())
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(PKG):
                    yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith(PKG):
                continue
            for a in node.names:  # `from pkg import module` depends on that module
                yield target + "." + a.name, node.lineno


def subsystem(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


MODULES = {name: (path, is_pkg) for name, path, is_pkg in _modules()}


def _edges():
    for name, (path, is_pkg) in MODULES.items():
        for target, line in _imports(name, path, is_pkg):
            while target not in MODULES and "." in target:  # an attribute of a module
                target = target.rsplit(".", 1)[0]
            yield name, target, f"{os.path.relpath(path, ROOT)}:{line}"


def test_every_subsystem_has_a_rank():
    assert {subsystem(m) for m in MODULES} <= set(LAYERS)


def test_imports_point_down():
    up = []
    for src, dst, where in _edges():
        a, b = subsystem(src), subsystem(dst)
        if a == b or dst == PKG + ".errors" or b in ("errors", "_compat"):
            continue
        if LAYERS[b] > LAYERS[a] or (a, b) in SIDE_BY_SIDE or (b, a) in SIDE_BY_SIDE:
            up.append(f"{where}: {src} imports {dst} ({a} → {b})")
    assert not up, "imports that run against the layering:\n" + "\n".join(up)


def test_no_import_cycle_between_modules():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for src, dst, _ in _edges():
        if dst in graph and dst != src and not MODULES[dst][1]:  # a package's face is not a dependency of its own
            graph[src].add(dst)
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(n):
        color[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if color.get(m) == 1:
                raise AssertionError("import cycle: " + " → ".join(stack[stack.index(m):] + [m]))
            if m not in color:
                visit(m)
        stack.pop()
        color[n] = 2

    for n in sorted(graph):
        if n not in color:
            visit(n)


def test_the_root_holds_the_public_face_and_few_modules():
    flat = sorted(f for f in os.listdir(os.path.join(ROOT, PKG)) if f.endswith(".py"))
    assert len(flat) <= MAX_ROOT_MODULES, flat


@pytest.mark.parametrize("core", ["lattice", "ir", "kernels", "analysis", "coloring", "derivatives", "modules"])
def test_no_core_module_imports_a_pass_or_an_interop_module(core):
    bad = [f"{where}: {src} imports {dst}" for src, dst, where in _edges()
           if subsystem(src) == core and subsystem(dst) in ("passes", "interop", "tools")]
    assert not bad, "\n".join(bad)


def test_the_analysis_has_no_service_locator():
    """Every dependency of the analysis is an import the order above checks (issue 50: ``analysis/hooks.py``, a
    string-keyed registry the public face filled with the passes and the importer, is gone)."""
    assert PKG + ".analysis.hooks" not in MODULES
    bad = [f"{where}: {src} imports {dst}" for src, dst, where in _edges() if dst.endswith(".hooks")]
    assert not bad, "\n".join(bad)


#: Modules a folder's map may leave out, per folder (none: every module is named).
NOT_IN_MAP: dict[str, set[str]] = {}
_RANK = re.compile(r"\bRank (\d+)\b[^:]*in ``tests/test_layout.py``")


def _folders() -> list[tuple[str, str]]:
    """(dotted name, directory) of every package folder but the root (``passes/`` is ``stablehlo_sparsity.passes``)."""
    return sorted((name, os.path.dirname(path)) for name, (path, is_pkg) in MODULES.items() if is_pkg and name != PKG)


@pytest.mark.parametrize("folder, path", _folders(), ids=[name for name, _ in _folders()])
def test_every_folder_opens_with_its_map(folder, path):
    """The ``__init__`` docstring names every module and sub-folder (``:mod:`.name```) and states the rank."""
    with open(os.path.join(path, "__init__.py"), encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    members = {fn[:-3] for fn in os.listdir(path) if fn.endswith(".py") and fn != "__init__.py"}
    members |= {d for d in os.listdir(path) if os.path.isfile(os.path.join(path, d, "__init__.py"))}
    named = set(re.findall(r":mod:`~?(?:\.|" + re.escape(folder) + r"\.)(\w+)`", doc))
    missing = sorted(members - named - NOT_IN_MAP.get(folder, set()))
    assert not missing, f"{os.path.relpath(path, ROOT)}/__init__.py: its docstring names no :mod:`.x` for {missing}"
    rank = _RANK.search(doc)
    assert rank, f"{os.path.relpath(path, ROOT)}/__init__.py: its docstring states no 'Rank N in ``tests/test_layout.py``'"
    assert int(rank.group(1)) == LAYERS[subsystem(folder)], \
        f"{os.path.relpath(path, ROOT)}/__init__.py says rank {rank.group(1)}; LAYERS says {LAYERS[subsystem(folder)]}"

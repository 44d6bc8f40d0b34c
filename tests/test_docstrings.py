"""Docstrings (issue 33, item 5): every public function and class carries an example that runs, and every public
function says what it raises.

1. The examples run with :mod:`doctest`, one test per documented object, in every module that defines a public name
   and every module of the package whose docstrings hold an example.  They run as a user runs them: with
   ``jax_enable_x64`` off, the default of a fresh process (this suite's ``conftest`` turns it on for the soundness
   checks), and with ``ELLIPSIS`` / ``NORMALIZE_WHITESPACE``, the options the docs site's reader needs none of.
2. Every public function and class of ``stablehlo_sparsity.__all__`` (errors, warnings and ``__version__`` aside)
   and of the public submodules (:data:`SUBMODULES`, the pass entry points) has a ``>>>`` example; every public
   function has a ``Raises:`` section (but those of :data:`RAISES_NOTHING`), and a function that raises an error
   class itself names it there.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import pathlib
import re
import textwrap

import jax
import pytest

import stablehlo_sparsity as ss
import stablehlo_sparsity.passes  # noqa: F401  (its folder is walked below)

#: The public submodules whose public functions and classes the API reference documents too.
SUBMODULES = (
    "stablehlo_sparsity.interop.scipy",
    "stablehlo_sparsity.interop.ipopt",
    "stablehlo_sparsity.interop.lineax",
    "stablehlo_sparsity.derivatives.saved",
    "stablehlo_sparsity.derivatives.distributed",
    "stablehlo_sparsity.derivatives.prepared.sharding",
    "stablehlo_sparsity.passes",
)
#: Public entry points of :mod:`stablehlo_sparsity.passes` beyond its ``__all__``.
PASS_ENTRY_POINTS = ("inject_jacobian", "inject_hessian", "read_pattern")
#: Optional libraries: a submodule that needs one is skipped without it (the ``test`` and ``docs`` extras have them).
OPTIONAL = ("lineax", "optimistix", "diffrax", "equinox")
#: Public functions that raise none of the library's errors (only what JAX, SciPy or MLIR raise on misuse).
RAISES_NOTHING = {
    "jacobian_operator", "global_mesh", "replicate", "to_host", "process_row_range", "sharded_call",
    "format_sets", "summarize", "make_context", "fold_constants", "strip",
}

_OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
_RAISES = re.compile(r"^\s*Raises:\s*$", re.M)


def _import(name: str):
    """The module, or ``None`` when an optional library it needs is missing."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        if getattr(e, "name", None) in OPTIONAL:
            return None
        raise


def _is_error(obj) -> bool:
    return inspect.isclass(obj) and issubclass(obj, (BaseException, Warning))


def _public() -> dict[str, object]:
    """Every public function and class by its reference name (``ss.sparse_jacobian``, ``scipy.jac_sparsity`` …);
    ``None`` for the names of a submodule that cannot be imported here."""
    out: dict[str, object] = {}
    for name in ss.__all__:
        obj = getattr(ss, name)
        if callable(obj) and not _is_error(obj):
            out[f"stablehlo_sparsity.{name}"] = obj
    for mod_name in SUBMODULES:
        mod = _import(mod_name)
        names = list(getattr(mod, "__all__", [])) if mod is not None else []
        if mod_name == "stablehlo_sparsity.passes":
            names += PASS_ENTRY_POINTS
        if mod is None:
            out[mod_name] = None
        for name in names:
            obj = getattr(mod, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and not _is_error(obj):
                out[f"{mod_name}.{name}"] = obj
    return out


PUBLIC = _public()


def _modules_with_examples() -> list[str]:
    """The package's modules whose source holds a ``>>>`` example (read as text, imported later)."""
    roots = [(pathlib.Path(ss.__file__).parent, "stablehlo_sparsity"),
             (pathlib.Path(ss.passes.__file__).parent, "stablehlo_sparsity.passes")]
    found = []
    for root, prefix in roots:
        for path in sorted(root.rglob("*.py")):
            if not re.search(r"^\s*>>> ", path.read_text(encoding="utf-8"), re.M):
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append(".".join([prefix, *parts]))
    return found


def _doctests() -> list:
    names = set(_modules_with_examples())
    names |= {obj.__module__ for obj in PUBLIC.values() if obj is not None}
    params = []
    finder = doctest.DocTestFinder(exclude_empty=True)
    for name in sorted(names):
        mod = _import(name)
        if mod is None:
            params.append(pytest.param(None, id=name, marks=pytest.mark.skip(reason=f"{name}: optional library")))
            continue
        for test in sorted(finder.find(mod, name), key=lambda t: t.name):
            if test.examples:
                params.append(pytest.param(test, id=test.name))
    return params


@pytest.mark.parametrize("test", _doctests())
def test_docstring_examples_run(test):
    """The examples of one docstring give the output they show (float64 off, as in a fresh process)."""
    runner = doctest.DocTestRunner(optionflags=_OPTIONS)
    report: list[str] = []
    with jax.enable_x64(False):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def _doc(obj) -> str:
    return inspect.getdoc(obj) or ""


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_names_have_examples(name):
    obj = PUBLIC[name]
    if obj is None:
        pytest.skip(f"{name}: optional library")
    assert ">>>" in _doc(obj), f"{name}: no >>> example in its docstring"


def _raised_errors(func) -> set[str]:
    """The error classes a function raises itself (``raise XxxError(...)`` in its own body)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError):
        return set()
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = exc.id if isinstance(exc, ast.Name) else exc.attr if isinstance(exc, ast.Attribute) else ""
            if name.endswith("Error"):
                out.add(name)
    return out


@pytest.mark.parametrize("name", sorted(n for n, o in PUBLIC.items() if o is None or inspect.isfunction(o)))
def test_public_functions_say_what_they_raise(name):
    func = PUBLIC[name]
    if func is None:
        pytest.skip(f"{name}: optional library")
    doc = _doc(func)
    if func.__name__ in RAISES_NOTHING:
        assert not _raised_errors(func), f"{name} raises {_raised_errors(func)}: take it off RAISES_NOTHING"
        return
    match = _RAISES.search(doc)
    assert match, f"{name}: no 'Raises:' section in its docstring"
    section = doc[match.end():]
    missing = {e for e in _raised_errors(func) if e not in section}
    assert not missing, f"{name} raises {sorted(missing)} but its 'Raises:' section does not name them"

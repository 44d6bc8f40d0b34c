"""Submodules of other packages that the containers' import loads but a derivative never uses, loaded on first use.

``jax.experimental.sparse`` (the ``BCOO`` and ``BCSR`` containers) imports its ``linalg`` submodule, which imports
``scipy.sparse.linalg`` for one host fallback of ``spsolve``: 0.2 s of a fresh process, most of what the first
``BCOO`` costs after the preparation and the compilation, for code no derivative calls.  Before that import,
:func:`defer` puts a :class:`DeferredModule` in ``sys.modules`` in the submodule's place: the package's import
binds it as usual, and the first attribute read from it (``sparse.linalg.spsolve``, ``from
jax.experimental.sparse.linalg import lobpcg_standard``) imports the real module, binds it in ``sys.modules`` and
in its package, and answers from it.  Nothing is deferred when the submodule or its package is imported already,
when it cannot be found, or with ``SHS_EAGER_IMPORTS=1``.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import threading
import types

__all__ = ["DEFERRED", "DeferredModule", "defer"]

#: For a container's module, the submodules its import loads that no derivative uses.
DEFERRED = {"jax.experimental.sparse": ("jax.experimental.sparse.linalg",)}

_LOCK = threading.RLock()


class DeferredModule(types.ModuleType):
    """A module not imported yet: its spec and name are there (so the import system takes it for a loaded module),
    and any other attribute read imports the real module first."""

    def __getattr__(self, attr: str):
        if attr == "__path__":  # a plain module, not a package (asked by the import system: no import)
            raise AttributeError(attr)
        return getattr(load(self), attr)

    def __dir__(self):
        return dir(load(self))


def load(stub: DeferredModule) -> types.ModuleType:
    """The real module behind ``stub``, imported on the first call; then bound in ``sys.modules``, in its package,
    and into the stub's own namespace (references to the stub keep working without another look-up)."""
    name = stub.__name__
    with _LOCK:
        if sys.modules.get(name) is stub:
            del sys.modules[name]
            try:
                real = importlib.import_module(name)
            except BaseException:
                sys.modules[name] = stub
                raise
            parent, _, child = name.rpartition(".")
            if parent in sys.modules:
                setattr(sys.modules[parent], child, real)
            vars(stub).update(vars(real))
        return sys.modules[name]


def _spec_without_import(name: str):
    """The spec of the submodule ``name``, found without importing its package (``importlib.util.find_spec``
    would import it: the very import this module defers from)."""
    parent = name.rpartition(".")[0]
    try:
        spec = importlib.util.find_spec(parent)   # imports the grandparent only
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return importlib.machinery.PathFinder.find_spec(name, list(spec.submodule_search_locations))


def defer(package: str) -> None:
    """Put a :class:`DeferredModule` in place of each of ``DEFERRED[package]`` before ``package`` is imported."""
    if os.environ.get("SHS_EAGER_IMPORTS") == "1" or package in sys.modules:
        return
    with _LOCK:
        for name in DEFERRED.get(package, ()):
            if name in sys.modules:
                continue
            spec = _spec_without_import(name)
            if spec is None:
                continue
            stub = DeferredModule(name)
            stub.__spec__ = spec
            stub.__loader__ = spec.loader
            stub.__file__ = spec.origin
            stub.__package__ = name.rpartition(".")[0]
            sys.modules[name] = stub

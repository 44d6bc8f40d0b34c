"""The analysis's plug-in points for the layers above it, which it never imports.

Two services of the public API need code that lives above the analysis:

* ``"annotate"`` — ``lower_and_analyze(..., annotate=True)`` returns a module annotated by the
  ``sparsity-annotate`` pass (:mod:`stablehlo_sparsity.passes`);
* ``"module_local_analysis"`` — ``analyze_module(..., local_point=...)`` replays the module in JAX through the
  importer (:mod:`stablehlo_sparsity.modules`).

The package's public face (``stablehlo_sparsity/__init__.py``, the top of the import order) provides both, so
they are there whenever ``stablehlo_sparsity`` is imported — which importing any of its submodules does first.
"""

from __future__ import annotations

from typing import Callable

from ..errors import SparsityError

__all__ = ["provide", "provided", "SERVICES"]

#: The services and the layer that provides each.
SERVICES = {"annotate": "stablehlo_sparsity.passes", "module_local_analysis": "stablehlo_sparsity.modules"}

_PROVIDERS: dict[str, Callable] = {}


def provide(name: str, fn: Callable) -> None:
    """Register ``fn`` as the provider of the service ``name`` (one of :data:`SERVICES`)."""
    if name not in SERVICES:
        raise ValueError(f"unknown analysis service {name!r}; known: {', '.join(sorted(SERVICES))}")
    _PROVIDERS[name] = fn


def provided(name: str) -> Callable:
    """The provider of the service ``name``; a clear error when its layer has not registered it."""
    fn = _PROVIDERS.get(name)
    if fn is None:
        raise SparsityError(f"the analysis service {name!r} is provided by {SERVICES[name]}, which has not "
                            "registered it (import stablehlo_sparsity first)")
    return fn

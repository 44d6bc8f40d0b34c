"""Old module paths, for pickles only: before the package took its subsystem folders (analysis/, derivatives/,
modules/, interop/, tools/), its modules sat flat at the root, and until the IR toolkit left ``analysis/`` (issue
50) ``SparsityPattern`` sat there; a pickle names the module of every class it holds
(``stablehlo_sparsity.jacobian.SparseJacobian``).  :func:`install` lets those names resolve to the modules'
new homes, so a pickle made before the move keeps loading.  Code imports the new paths; nothing else reads these.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["MOVED", "install"]

#: The old path of each moved module whose classes or functions a pickle can name, and its new path.
MOVED = {
    "stablehlo_sparsity.jacobian": "stablehlo_sparsity.derivatives.jacobian",
    "stablehlo_sparsity.hessian": "stablehlo_sparsity.derivatives.hessian",
    "stablehlo_sparsity.prepared": "stablehlo_sparsity.derivatives.prepared",
    "stablehlo_sparsity.prepared.base": "stablehlo_sparsity.derivatives.prepared.base",
    "stablehlo_sparsity.prepared.inputs": "stablehlo_sparsity.derivatives.prepared.inputs",
    "stablehlo_sparsity.prepared.modes": "stablehlo_sparsity.derivatives.prepared.modes",
    "stablehlo_sparsity.prepared.outputs": "stablehlo_sparsity.derivatives.prepared.outputs",
    "stablehlo_sparsity.prepared.seeds": "stablehlo_sparsity.derivatives.prepared.seeds",
    "stablehlo_sparsity.evaluation": "stablehlo_sparsity.derivatives.prepared.evaluation",
    "stablehlo_sparsity.sharding": "stablehlo_sparsity.derivatives.prepared.sharding",
    "stablehlo_sparsity.blocked": "stablehlo_sparsity.derivatives.blocked",
    "stablehlo_sparsity.checks": "stablehlo_sparsity.derivatives.checks",
    "stablehlo_sparsity.module_derivatives": "stablehlo_sparsity.modules.module_derivatives",
    "stablehlo_sparsity.injected": "stablehlo_sparsity.modules.injected",
    "stablehlo_sparsity.pattern": "stablehlo_sparsity.lattice.pattern",
    "stablehlo_sparsity.api": "stablehlo_sparsity.analysis.api",
    "stablehlo_sparsity.interpreter": "stablehlo_sparsity.analysis.interpreter",
    "stablehlo_sparsity.options": "stablehlo_sparsity.analysis.options",
    "stablehlo_sparsity.scipy_interop": "stablehlo_sparsity.interop.scipy",
    "stablehlo_sparsity.ipopt": "stablehlo_sparsity.interop.ipopt",
    "stablehlo_sparsity.lineax_interop": "stablehlo_sparsity.interop.lineax",
    # the IR toolkit, the kernels and SparsityPattern left analysis/ (issue 50)
    "stablehlo_sparsity.analysis.pattern": "stablehlo_sparsity.lattice.pattern",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves an old path of :data:`MOVED` to the module at its new path (the same module object)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module):
        pass  # the module ran at its new path; the import system files it under the old name as well


_FINDER = _Alias()


def install() -> None:
    """Put the alias finder on ``sys.meta_path`` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)

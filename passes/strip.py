"""The ``sparsity-strip`` pass: remove every ``sparsity.*`` attribute, so ``annotate`` + ``strip`` gives back
the module text it started from.

It removes discardable attributes of every op, and ``sparsity.*`` entries of function argument/result
attribute dictionaries (``arg_attrs``/``res_attrs``); a list left with only empty dictionaries is dropped,
as the ``func.func`` parser would never have created it from the custom form — unless the function's
``sparsity.keep`` names it (``sparsity-annotate`` found it there, as JAX emits such lists).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from stablehlo_sparsity.ir.annotations import PREFIX, strip

from .base import SparsityPass

__all__ = ["strip", "StripPass", "PREFIX"]

# strip itself is the IR toolkit's (stablehlo_sparsity.ir.annotations), which the analysis uses to re-annotate;
# this module is the pass.


@dataclass(frozen=True)
class StripPass(SparsityPass):
    """Remove every sparsity.* attribute.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import run_pipeline
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.reverse %x, dims = [0] : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }''')
        >>> run_pipeline(module, "builtin.module(sparsity-annotate,sparsity-strip)")
        >>> "sparsity." in str(module)
        False
    """

    argument: ClassVar[str] = "sparsity-strip"

    def run(self, module_op) -> None:
        strip(module_op)

"""The ``sparsity-strip`` pass: remove every ``sparsity.*`` attribute, so ``annotate`` + ``strip`` gives back
the module text it started from.

It removes discardable attributes of every op, and ``sparsity.*`` entries of function argument/result
attribute dictionaries (``arg_attrs``/``res_attrs``); a list left with only empty dictionaries is dropped,
as the ``func.func`` parser would never have created it from the custom form — unless the function's
``sparsity.keep`` names it (``sparsity-annotate`` found it there, as JAX emits such lists).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Iterable

from .base import SparsityPass

__all__ = ["strip", "StripPass", "PREFIX"]

PREFIX = "sparsity."
KEEP = "sparsity.keep"  # lists of empty dictionaries that existed before annotation (see annotate.py)
_FUNC_LISTS = ("arg_attrs", "res_attrs")


def _drop(name: str, names: Iterable[str] | None) -> bool:
    return name.startswith(PREFIX) and (names is None or name in names)


def _strip_func_list(op, list_name: str, names, keep: bool) -> int:
    from jaxlib.mlir import ir

    if list_name not in op.attributes:
        return 0
    removed = 0
    dicts = []
    for a in ir.ArrayAttr(op.attributes[list_name]):
        d = ir.DictAttr(a)
        kept = {}
        for j in range(len(d)):
            na = d[j]
            if _drop(na.name, names):
                removed += 1
            else:
                kept[na.name] = na.attr
        dicts.append(ir.DictAttr.get(kept))
    if removed:
        if all(len(d) == 0 for d in dicts) and not keep:
            del op.attributes[list_name]
        else:
            op.attributes[list_name] = ir.ArrayAttr.get(dicts)
    return removed


def strip(module, names: Iterable[str] | None = None) -> int:
    """Remove the ``sparsity.*`` attributes (only those in ``names`` if given) from every op nested in
    ``module`` (an ``ir.Module``, an operation or an op view), in place.  Returns how many were removed.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import annotate, strip
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.reverse %x, dims = [0] : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }''')
        >>> before = str(module)
        >>> _ = annotate(module)
        >>> strip(module), str(module) == before
        (5, True)
    """
    from jaxlib.mlir import ir

    names = None if names is None else frozenset(names)
    root = module.operation
    count = 0

    def visit(op):
        nonlocal count
        op = op.operation
        keep = ()
        if op.name == "func.func" and KEEP in op.attributes:
            keep = [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes[KEEP])]
        doomed = [name for name in op.attributes.keys() if _drop(name, names)]
        for name in doomed:
            del op.attributes[name]
        count += len(doomed)
        if op.name == "func.func":
            for list_name in _FUNC_LISTS:
                count += _strip_func_list(op, list_name, names, list_name in keep)
        return ir.WalkResult.ADVANCE

    with root.context:
        root.walk(visit)
    return count


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

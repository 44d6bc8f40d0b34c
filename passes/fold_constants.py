"""``sparsity-fold-constants``: show what the constant lattice resolves, in the IR itself.

Runs the interpreter's constant lattice over every function (arguments unknown; see
:mod:`stablehlo_sparsity.analysis.constant_lattice`) and then either

* annotates each op whose results are known constants with the discardable attribute ``sparsity.const``
  (a ``DenseElementsAttr`` for small or splat values, a short summary string for big ones; an array of
  them, with ``unit`` for unknown results, on multi-result ops), or
* with ``materialize=True``, replaces every use of a folded value by a new ``stablehlo.constant`` and erases
  the ops (and original constants) left dead.  Only values every backend computes bit for bit are
  rewritten (no rounded float, no NaN), and only where a literal cannot change how XLA evaluates the
  users (see :func:`_rewritable`): the rewritten module computes exactly the same bits as the original.

``stablehlo.constant`` ops themselves are not counted.  Usable from Python (:func:`fold_constants`) and as
a Python-defined MLIR pass (:class:`FoldConstantsPass`)::

    pm = PassManager("builtin.module")
    FoldConstantsPass(materialize=True).add_to(pm)
    pm.run(module.operation)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from stablehlo_sparsity.analysis.constant_lattice import observe_constants
from stablehlo_sparsity.ir.helpers import nested_ops

from .base import SparsityPass, option

__all__ = ["fold_constants", "FoldConstantsPass", "ATTR", "ANNOTATE_MAX_ELEMENTS"]

#: The discardable attribute carrying a folded value.
ATTR = "sparsity.const"
_DEAD = "sparsity.fold_dead"  # temporary marker of fully materialized ops
#: Non-splat values above this many elements are annotated with a summary instead of their elements.
ANNOTATE_MAX_ELEMENTS = 16


def _module_op(module):
    from jaxlib.mlir import ir

    if isinstance(module, ir.Module):
        return module.operation
    return module.operation if hasattr(module, "operation") else module


def _dense_attr(arr: np.ndarray, mlir_type):
    """A ``DenseElementsAttr`` of exactly the result's type, or ``None`` if the bindings cannot build it."""
    from jaxlib.mlir import ir

    try:
        rt = ir.RankedTensorType(mlir_type)
        attr = cast(Any, ir.DenseElementsAttr).get(np.ascontiguousarray(arr), type=rt.element_type,
                                                   shape=list(rt.shape))
    except Exception:  # noqa: BLE001 — e.g. element types the bindings cannot encode
        return None
    return attr if attr.type == mlir_type else None


def _summary(arr: np.ndarray, mlir_type) -> str:
    text = f"{mlir_type}"
    if arr.size and arr.dtype.kind in "iufb":
        text += f" min={arr.min()} max={arr.max()}"
    if arr.size and arr.dtype.kind in "iuf":
        text += f" nonzeros={int(np.count_nonzero(arr))}"
    return text


def _annotation(arr: np.ndarray, mlir_type):
    from jaxlib.mlir import ir

    attr = _dense_attr(arr, mlir_type)
    if attr is not None and (arr.size <= ANNOTATE_MAX_ELEMENTS or attr.is_splat):
        return attr
    return ir.StringAttr.get(_summary(arr, mlir_type))


def fold_constants(module, *, materialize: bool = False, max_elements: int = 10_000_000) -> int:
    """Fold every value the constant lattice resolves; returns how many values were folded.

    module: an ``ir.Module`` or a ``builtin.module`` operation (changed in place).
    materialize: replace folded values by ``stablehlo.constant`` ops and erase dead ops, instead of
        annotating them with ``sparsity.const``.
    max_elements: values larger than this are not folded.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import fold_constants
        >>> text = '''func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
        ...   %c = stablehlo.constant dense<2.0> : tensor<2xf32>
        ...   %d = stablehlo.add %c, %c : tensor<2xf32>
        ...   %y = stablehlo.multiply %x, %d : tensor<2xf32>
        ...   func.return %y : tensor<2xf32>
        ... }'''
        >>> module = ss.parse_module(text)
        >>> fold_constants(module, materialize=True), "stablehlo.add" in str(module)    # 2 + 2 is now a constant
        (1, False)
    """
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    mop = _module_op(module)
    lattice = observe_constants(mop, max_elements=max_elements)
    ops: list = nested_ops(mop)
    count = 0
    rewritable = _rewritable(ops, lattice) if materialize else None
    with mop.context:
        for op in ops:
            if op.name == "stablehlo.constant" or len(op.results) == 0:
                continue
            consts = [lattice.value(r) for r in op.results]
            if materialize:
                assert rewritable is not None
                consts = [c if r in rewritable else None for r, c in zip(op.results, consts)]
            if all(c is None for c in consts):
                continue
            if materialize:
                replaced = 0
                for r, c in zip(op.results, consts):
                    if c is None:
                        continue
                    attr = _dense_attr(c, r.type)
                    if attr is None:
                        continue
                    replaced += 1
                    if list(r.uses):
                        with ir.InsertionPoint(op), op.location:
                            new = stablehlo.ConstantOp(attr)
                        r.replace_all_uses_with(new.result)
                count += replaced
                if replaced == len(op.results):
                    op.attributes[_DEAD] = ir.UnitAttr.get()
            else:
                items = [(_annotation(c, r.type) if c is not None else ir.UnitAttr.get())
                         for r, c in zip(op.results, consts)]
                op.attributes[ATTR] = items[0] if len(items) == 1 else ir.ArrayAttr.get(items)
                count += sum(c is not None for c in consts)
        if materialize:
            _erase_dead(mop)
    return count


#: Ops whose operand positions take integers that only select elements (indices, starts, predicates):
#: a literal there lets XLA simplify the data movement, never change a rounding.
_INDEX_OPERANDS = {"stablehlo.gather": 1, "stablehlo.dynamic_slice": 1, "stablehlo.dynamic_update_slice": 2,
                   "stablehlo.select": 0}


def _safe_use(use, rewritable: set) -> bool:
    """Whether turning the used value into a literal cannot change what XLA computes for this user.

    A literal can change XLA's evaluation of a *rounding* user: XLA folds constant subexpressions with its
    own evaluator (``c / 500`` divides, the runtime multiplies by ``1/500``), rewrites ``x / c`` as
    ``x · (1/c)`` only when ``c`` is a constant, reassociates with constants.  Safe users: ones removed as
    well (every result rewritten), ``func.return``, integer/boolean computations (exact, however
    evaluated), and element-selecting operands (indices, starts, predicates)."""
    from stablehlo_sparsity.analysis.folding.exactness import is_float
    from stablehlo_sparsity.analysis.values import tensor_type

    user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
    name = user.name
    if name == "func.return":
        return True
    if len(user.results) and all(r in rewritable for r in user.results):
        return True
    if _INDEX_OPERANDS.get(name, -1) >= 0 and use.operand_number >= _INDEX_OPERANDS[name] and \
            (name != "stablehlo.select" or use.operand_number == 0):
        return True
    if user.regions or name == "func.call":
        return False
    try:
        return not any(is_float(tensor_type(r.type).dtype) for r in user.results)
    except Exception:  # noqa: BLE001 — tokens, tuples …
        return False


#: Sources XLA does not constant-fold (cheap to compute, large as literals), and ops whose folding XLA
#: leaves to run time.
_NOT_FOLDED_BY_XLA = frozenset({"stablehlo.iota", "stablehlo.rng", "stablehlo.rng_bit_generator",
                                "stablehlo.custom_call", "func.call"})


def _literal_rooted(ops) -> set:
    """Values computed from literals alone, by ops XLA constant-folds itself (no iota, call or region):
    XLA already sees them as constants, so a literal in their place changes nothing it does."""
    rooted: set = set()
    for op in ops:  # pre-order: definitions come before uses
        if op.regions or op.name in _NOT_FOLDED_BY_XLA:
            continue
        if op.name == "stablehlo.constant" or all(v in rooted for v in op.operands):
            rooted.update(op.results)
    return rooted


def _rewritable(ops, lattice) -> set:
    """The folded values a materializing pass may turn into literals without changing any bit XLA computes:
    trusted constants (constant_lattice.py) that XLA would fold itself (:func:`_literal_rooted`) or all of
    whose uses are safe (:func:`_safe_use`), to a fixed point (a use by an op rewritten itself is safe)."""
    rooted = _literal_rooted(ops)
    values = {r for op in ops if op.name != "stablehlo.constant" for r in op.results
              if lattice.value(r) is not None}
    changed = True
    while changed:
        changed = False
        for v in list(values):
            if v not in rooted and not all(_safe_use(u, values) for u in v.uses):
                values.discard(v)
                changed = True
    return values


def _erase_dead(mop) -> None:
    """Erase folded ops and constants whose results have no uses left.

    In reverse pre-order users go before the values they use, so one sweep erases whole dead chains
    (including the constants just created for uses by ops that are themselves folded).
    """
    ops: list = nested_ops(mop)
    for op in reversed(ops):
        marked = _DEAD in op.attributes
        if not marked and op.name != "stablehlo.constant":
            continue
        if any(True for r in op.results for _ in r.uses):
            if marked:
                del op.attributes[_DEAD]
            continue
        op.erase()


@dataclass(frozen=True)
class FoldConstantsPass(SparsityPass):
    """Evaluate ops whose operands are all known constants (NumPy, StableHLO semantics); annotate the folded
    values (sparsity.const) or materialize them as stablehlo.constant ops.

    Only values every XLA backend computes bit for bit are shown or rewritten (see :func:`fold_constants`).

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import FoldConstantsPass, run_pipeline
        >>> text = '''func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
        ...   %c = stablehlo.constant dense<2.0> : tensor<2xf32>
        ...   %d = stablehlo.add %c, %c : tensor<2xf32>
        ...   %y = stablehlo.multiply %x, %d : tensor<2xf32>
        ...   func.return %y : tensor<2xf32>
        ... }'''
        >>> module = ss.parse_module(text)
        >>> run_pipeline(module, "builtin.module(sparsity-fold-constants)")    # annotate: sparsity.const
        >>> "sparsity.const = dense<4.000000e+00>" in str(module), FoldConstantsPass.from_options("materialize")
        (True, FoldConstantsPass(materialize=True, max_elements=10000000))
    """

    argument: ClassVar[str] = "sparsity-fold-constants"
    materialize: bool = option(False, "replace folded values by stablehlo.constant (where the module provably "
                                      "computes the same bits)")
    max_elements: int = option(10_000_000, "do not fold values with more elements")

    def run(self, module_op) -> None:
        fold_constants(module_op, materialize=self.materialize, max_elements=self.max_elements)

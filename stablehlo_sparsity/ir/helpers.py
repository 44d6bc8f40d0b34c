"""The IR toolkit: the few things every part of the analysis needs from jaxlib's MLIR bindings, once.

* walks — :func:`nested_ops` (pre-order, on top of ``Operation.walk``), :func:`region_ops`;
* :func:`region_captures` — the values a region (or an op's regions) reads from the enclosing scope
  (StableHLO regions are not isolated from above);
* functions — :func:`functions`, :func:`sym_name`, :func:`is_public`;
* rewriting — :func:`without_common_subexpressions`, a copy of a module cleared by MLIR's ``cse``;
* sizes — :func:`num_elements` (index dtypes: :mod:`stablehlo_sparsity.dtypes`; memory limits:
  :mod:`stablehlo_sparsity.lattice.budget`).

Nothing here interprets ops; the interpreter and the rules build on these.
"""

from __future__ import annotations

import math
from typing import Iterable, Iterator


__all__ = ["nested_ops", "region_ops", "region_captures", "functions", "sym_name", "is_public", "num_elements",
           "without_common_subexpressions"]



# ---------------------------------------------------------------------------------------------- walks
def _operation(op):
    return op.operation if hasattr(op, "operation") else op


def nested_ops(op) -> list:
    """Every op nested in ``op`` (not ``op`` itself), in pre-order: definitions before uses."""
    from jaxlib.mlir import ir

    root = _operation(op)
    out: list = []

    def visit(o):
        out.append(o)
        return ir.WalkResult.ADVANCE

    root.walk(visit, walk_order=ir.WalkOrder.PRE_ORDER)
    return out[1:] if out and out[0] == root else out


def contains_op(op, name: str) -> bool:
    """Whether an op named ``name`` is nested in ``op`` (the walk stops at the first)."""
    from jaxlib.mlir import ir

    found = []

    def visit(o):
        if o.name == name:
            found.append(o)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    _operation(op).walk(visit, walk_order=ir.WalkOrder.PRE_ORDER)
    return bool(found)


def region_ops(region) -> Iterator:
    """Every op inside ``region`` (nested regions included), in pre-order."""
    for block in region.blocks:
        for op in block.operations:
            o = op.operation
            yield o
            for r in o.regions:  # (a recursion over the blocks, as _defined_and_used: no walk callback per op)
                yield from region_ops(r)


def region_captures(regions) -> list:
    """The SSA values that ops inside ``regions`` (one region, or an op: all its regions) use but that are
    defined outside them — in first-use order, without repeats."""
    if hasattr(regions, "regions"):
        regions = list(_operation(regions).regions)
    elif not isinstance(regions, (list, tuple)):
        regions = [regions]
    inside: set = set()
    used: list = []
    for region in regions:
        _defined_and_used(region, inside, used)
    out, seen = [], set()
    for v in used:
        if v not in inside and v not in seen:
            seen.add(v)
            out.append(v)
    return out


def _defined_and_used(region, inside: set, used: list) -> None:
    """Add the values defined in ``region`` (block arguments, op results, nested regions included) to ``inside``
    and the operands its ops read to ``used``, in pre-order (a recursion over the blocks: no walk callbacks)."""
    for block in region.blocks:
        inside.update(block.arguments)
        for op in block.operations:
            o = op.operation
            inside.update(o.results)
            used.extend(o.operands)
            for r in o.regions:
                _defined_and_used(r, inside, used)


# ---------------------------------------------------------------------------------------------- functions
def sym_name(op) -> str:
    from jaxlib.mlir import ir

    return ir.StringAttr(_operation(op).attributes["sym_name"]).value


def is_public(fn) -> bool:
    """A ``func.func`` without ``sym_visibility = "private"`` (or ``"nested"``)."""
    attrs = _operation(fn).attributes
    return "sym_visibility" not in attrs or str(attrs["sym_visibility"]).strip('"') == "public"


def functions(module) -> dict:
    """``name -> func.func`` op of a module (an ``ir.Module``, a ``builtin.module`` op, or anything with
    ``.body``)."""
    body = getattr(module, "body", None)  # (one read: the bindings build a new block object at every read)
    if body is None:
        body = _operation(module).regions[0].blocks[0]
    return {sym_name(op): op for op in body.operations if op.operation.name == "func.func"}


# ---------------------------------------------------------------------------------------------- rewriting
def without_common_subexpressions(module):
    """A copy of ``module`` (a ``builtin.module``, in its context) over which MLIR's ``cse`` pass ran — every
    ``func.func``, nested regions included — or ``module`` itself when this jaxlib's pass registry has no ``cse``.

    A copy, because JAX caches the modules it lowers (lowering the same function again returns the same object):
    the caller's module is never edited.  Two ops of the same name, attributes, operands and result types that
    have no memory effects compute the same value, and the pass keeps the first.  The index sets do not change: a
    rule's answer is a function of its op's attributes and its operands' abstract values, so the two would have
    had the same.  A program written out term by term repeats its ``x[i]`` slices, reshapes and literals in every
    term that reads them: about half its ops or more go, at about 0.4 µs an op for the copy and 1 µs for the
    pass in C++, against 10-20 µs an op of analysis."""
    from jaxlib.mlir import passmanager

    with module.context:
        try:
            pipeline = passmanager.PassManager.parse("builtin.module(func.func(cse))")
        except Exception:  # (every supported jaxlib has it; a build without it only loses the speed)
            return module
        copy = _operation(module).clone()
        pipeline.run(copy.operation)
    return copy


# ---------------------------------------------------------------------------------------------- sizes
def num_elements(shape: Iterable[int]) -> int:
    """The number of elements of a shape (exact Python integers: no overflow)."""
    return math.prod(int(d) for d in shape)

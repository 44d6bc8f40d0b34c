"""Recognizing the small computations regions hold (a reduction's ``add``, a scatter's "replace", a
comparator's ``GE``), so that the importer can pick the ``jax.lax`` primitive that has derivative rules."""

from __future__ import annotations

from typing import Any

__all__ = ["body_ops", "binary_body", "returns_argument", "captures"]


def body_ops(region: Any) -> list[Any]:
    """The ops of a single-block region (terminator last)."""
    return list(list(region.blocks)[0].operations)


def _arg_index(block: Any, v: Any) -> int | None:
    for i, a in enumerate(block.arguments):
        if a == v:
            return i
    return None


def binary_body(region: Any, result: int = 0) -> tuple[str, int, int, Any] | None:
    """``(op name, i, j)`` when result ``result`` of the region is ``op(arg_i, arg_j)`` for a single op whose
    operands are both block arguments, else ``None``."""
    block = list(region.blocks)[0]
    ops = list(block.operations)
    term = ops[-1]
    if result >= len(term.operands):
        return None
    v = term.operands[result]
    for op in ops[:-1]:
        if any(r == v for r in op.results):
            if len(op.operands) != 2 or op.regions and len(op.regions):
                return None
            i, j = _arg_index(block, op.operands[0]), _arg_index(block, op.operands[1])
            if i is None or j is None:
                return None
            return op.operation.name, i, j, op
    return None


def returns_argument(region: Any, result: int = 0) -> int | None:
    """The index of the block argument result ``result`` of the region returns directly, else ``None``."""
    block = list(region.blocks)[0]
    term = list(block.operations)[-1]
    if result >= len(term.operands):
        return None
    return _arg_index(block, term.operands[result])


def captures(region: Any) -> bool:
    """True when ops in ``region`` use values defined outside it."""
    from ...ir.helpers import region_captures

    return bool(region_captures(region))

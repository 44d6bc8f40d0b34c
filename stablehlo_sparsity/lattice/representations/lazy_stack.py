"""The lazy vstack: rows of several values one after the other, nothing copied until read.

``Deps.vstack`` of values that are not all empty keeps its items — ``Deps._stack``, with ``_parts`` ``None`` —
instead of building stacked parts: a written-out program stacks thousands of scalars (``jnp.stack`` of the
residuals lowers to concatenations of concatenations), and each would otherwise copy everything stacked so far.

Invariants of a lazy vstack: ``_stack`` holds at least two items of the same ``n`` whose row counts add up to
``rows``, not all empty (so the value is never empty); its items are never written (nested stacks are read
through, :func:`_stack_leaves`).

Conversions: to lazy parts (:func:`_stacked_parts`: part ``j`` of every item into one stacked part — index
parts stay index parts, CSR parts are written into one CSR), done once when a move needs the parts; to CSR
(:func:`stack_csr`: lane items straight from their sets, :func:`_stack_of_scalars`; any items by writing
every item's rows straight into one output, :func:`~.materialize.materialize` of their row sources).
"""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ..budget import check_nnz
from .csr import CsrPart, _col_dtype, make_csr
from .index_parts import IndexPart
from . import materialize as materialization
from .materialize import _PartsRows, materialize
from .value import Value

__all__ = ["stack_csr", "stack_to_parts", "stack_to_csr"]


def stack_csr(items: Sequence[Value], n: int) -> sp.csr_array:
    """The CSR of a lazy vstack of ``items``: every item's rows written straight into one output."""
    stacked = _stack_of_scalars(_stack_leaves(items), n)
    return stacked if stacked is not None else materialize([s for d in items for s in d._sources()], n)


def stack_to_parts(d: Value) -> tuple:
    """A lazy vstack's parts, stacked once; the items are let go (their arrays were copied)."""
    assert d._stack is not None
    d._parts = tuple(_stacked_parts(d._stack, d.rows, d.n))
    d._stack = None
    return d._parts


def stack_to_csr(d: Value) -> sp.csr_array:
    """A lazy vstack's CSR (:func:`stack_csr`), kept as its only part; the items are let go."""
    assert d._stack is not None
    m = stack_csr(d._stack, d.n)
    d._parts = (CsrPart(m),) if m.nnz else ()
    d._stack = None
    return m


def _stack_of_scalars(items, n: int) -> sp.csr_array | None:
    """The CSR of a lazy vstack of one-row values of the scalar lane and empty values (of a few rows), straight
    from their sets (a written-out program's output: one scalar per residual); ``None`` for any other
    stack."""
    if not items:
        return None
    rows: list = []
    for d in items:
        if d._row is not None:
            rows.append(sorted(d._row))
        elif d.is_empty and len(rows) + d.rows <= materialization.SMALL_MATERIALIZE_ROWS:
            # (a few empty rows, not a block)
            rows.extend([()] * d.rows)
        else:
            return None
    counts = np.fromiter((len(r) for r in rows), np.int64, len(rows))
    indptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    total = int(indptr[-1])
    check_nnz(total)
    return make_csr(indptr, np.fromiter(itertools.chain.from_iterable(rows), np.int64, total), len(rows), n)


def _stack_leaves(items: Sequence[Value]) -> Sequence[Value]:
    """The items of a lazy vstack with nested lazy vstacks flattened into theirs (``jnp.stack`` of many scalars
    lowers to concatenations of concatenations); the items themselves when none is nested."""
    if all(d._stack is None for d in items):
        return items
    out: list[Value] = []
    todo = list(reversed(items))
    while todo:
        d = todo.pop()
        if d._stack is not None:
            todo.extend(reversed(d._stack))
        else:
            out.append(d)
    return out


def _stacked_parts(items: Sequence[Value], total: int, n: int) -> list:
    """The parts of a vstack: part ``j`` of every operand in one stacked part."""
    idx_lists = [[p for p in d.parts if isinstance(p, IndexPart)] for d in items]
    csr_lists = [[p for p in d.parts if isinstance(p, CsrPart)] for d in items]
    parts: list = []
    dt = _col_dtype(n)
    for j in range(max(len(l) for l in idx_lists)):
        cols = [l[j].cols if j < len(l) else np.full(d.rows, -1, dt) for l, d in zip(idx_lists, items)]
        parts.append(IndexPart(np.concatenate(cols).astype(dt, copy=False)))
    if any(csr_lists):
        sources = [_PartsRows(l, d.rows, n) if l else _PartsRows([], d.rows, n) for l, d in zip(csr_lists, items)]
        parts.append(CsrPart(materialize(sources, n)))
    return parts

"""The one-row lane: a scalar's columns as a Python set.

A written-out program (a CUTEst-style residual: ``x[i]`` indexing and scalar arithmetic, thousands of ops)
unions a few columns at a time, where NumPy's per-call cost (a microsecond or more per array) dominates the
work.  So a one-row value of at most :data:`ROW_LANE_ENTRIES` columns is kept as a ``frozenset`` of them —
``Deps._row`` — and its parts and CSR are built only when a move other than a union needs them.

Invariants of a lane value: ``rows == 1``; ``_row`` non-empty (an empty one-row value is ``Deps.empty``), every
column in ``[0, n)``, at most :data:`ROW_LANE_ENTRIES` of them, within the nonzero budget when formed;
``_parts``/``_csr`` are ``None`` until :meth:`~..core.Deps.to_csr` or :attr:`~..core.Deps.parts` builds them
from the set (:func:`lane_csr`), after which the value is a lane value and a one-part value at once.

Conversions: into the lane from index and CSR parts (:func:`_parts_row_set`, used by ``take_row`` and by the
union of one-row values: :func:`_row_lane_union`); out of it to CSR (:func:`lane_csr`); a lazy vstack of lane
values straight to CSR (:func:`~.lazy_stack._stack_of_scalars`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ..budget import check_nnz
from .csr import CsrPart, _row_csr
from .index_parts import IndexPart
from .small_unions import _part_row
from .value import V, Value

__all__ = ["ROW_LANE_ENTRIES", "TAKE_ROW_LANE", "lane_size", "row_columns", "lane_csr", "pair_union", "lane_to_parts",
           "lane_to_csr", "parts_to_lane"]

#: The scalar lane (:meth:`Deps.union` of one-row values) keeps rows of at most this many columns as Python
#: sets: a written-out program's scalars union a few columns at a time, where NumPy's per-call cost dominates.
ROW_LANE_ENTRIES = 2048
#: :meth:`Deps.take_row` gives a lane value when the row has at most this many columns (a set of a few
#: integers costs less than the arrays of a one-row part; a long row stays arrays).
TAKE_ROW_LANE = 64


def _row_set(d: Value) -> frozenset[int] | None:
    """The columns of a non-empty one-row value as a set, when that is cheap (``None``: not cheap)."""
    if d._row is not None:
        return d._row
    parts = d._parts
    if parts is None:  # a lazy vstack
        return None
    return _parts_row_set(parts, 0, ROW_LANE_ENTRIES)


def _parts_row_set(parts, i: int, limit: int) -> frozenset[int] | None:
    """The columns of row ``i`` of index and CSR parts as a set; ``None`` when a part is of another kind (runs:
    the general union) or the row has more than ``limit`` columns."""
    out: list[int] = []
    for p in parts:
        if type(p) is not IndexPart and type(p) is not CsrPart:
            return None
        row = _part_row(p, i)
        if row is not None:
            if len(row) + len(out) > limit:
                return None
            out.extend(row.tolist())
    return frozenset(out)


def lane_size(d: Value) -> int | None:
    """How many columns a value of the scalar lane holds (``None``: not a lane value)."""
    return None if d._row is None else len(d._row)


def row_columns(d: Value) -> frozenset[int] | None:
    """The columns of a one-row value as a Python set when that is cheap (the scalar lane: at most
    :data:`ROW_LANE_ENTRIES` of them), else ``None``; an empty value gives the empty set."""
    if d.rows != 1:
        return None
    if d.is_empty:
        return frozenset()
    return _row_set(d)


def _row_lane_union(items: Sequence[Value]) -> frozenset[int] | None:
    """The union of non-empty one-row values as a set, or ``None`` when one of them is not cheap as a set or
    the union would pass :data:`ROW_LANE_ENTRIES`."""
    sets = []
    total = 0
    for d in items:
        row = _row_set(d)
        if row is None:
            return None
        total += len(row)
        sets.append(row)
    if total > 2 * ROW_LANE_ENTRIES:
        return None
    out = sets[0].union(*sets[1:])
    if not out or len(out) > ROW_LANE_ENTRIES:
        return None
    check_nnz(len(out))  # (the array path would refuse it too)
    return out


def pair_union(a: V | None, b: V | None) -> V | None:
    """The union of two lane values as a lane value (a written-out program's ``x[i] * x[j]``, ``t + x[k]``:
    most of its unions) — one set union, without the general checks; ``None`` when either is not a lane value
    or the union outgrows the lane."""
    if a is None or b is None:
        return None
    ra, rb = a._row, b._row
    if ra is None or rb is None or a.n != b.n:
        return None
    if rb <= ra:
        return a
    if ra <= rb:
        return b
    joined = ra | rb
    if len(joined) > ROW_LANE_ENTRIES:
        return None
    check_nnz(len(joined))
    return a._of_row(a.n, joined)


def lane_csr(row: frozenset[int], n: int) -> sp.csr_array:
    """The ``(1, n)`` canonical CSR of a lane value's columns."""
    return _row_csr(np.fromiter(sorted(row), np.int64, len(row)), n)


def lane_to_parts(d: Value) -> tuple:
    """A lane value's parts — one CSR part — and its CSR, built from its set (once; the set stays)."""
    assert d._row is not None
    d._csr = m = lane_csr(d._row, d.n)
    d._parts = (CsrPart(m),)
    return d._parts


def lane_to_csr(d: Value) -> sp.csr_array:
    """A lane value's CSR (:func:`lane_to_parts`)."""
    lane_to_parts(d)
    assert d._csr is not None
    return d._csr


def parts_to_lane(d: Value) -> frozenset[int] | None:
    """A non-empty one-row value's columns as a set, when that is cheap: a lane value's own set, or the row of
    index and CSR parts of at most :data:`ROW_LANE_ENTRIES` columns (``None``: a lazy vstack, a run part, or a
    longer row)."""
    return _row_set(d)

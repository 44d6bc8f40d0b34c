"""Lazy parts: a value as the union of a few parts, none materialized — the general representation.

A :class:`~..core.Deps` in this form holds a tuple of parts of its row count, each an
:class:`~.index_parts.IndexPart`, a :class:`~.csr.CsrPart` (rows of a CSR through a row map) or a
:class:`~..runs.RunPart` (a few column intervals per row); its sets are their row-wise union.  An elementwise
union concatenates part lists (O(#parts), independent of the tensor size) and a structural move maps every
part (O(rows) integer work each), so nothing of size ``rows × n`` is built until a rule needs whole rows.

Invariants:

* at most :data:`MAX_LAZY_PARTS` parts (a union past it is materialized into one CSR part);
* a value of at most :data:`SMALL_ROWS` rows holds one part, except a union of at most
  :data:`LAZY_INDEX_PARTS` index parts within the nonzero budget (a stencil: materialized when read) and the
  lazy unions of ``Deps.union(..., eager=False)`` within the budget (:func:`materialize_now`);
* no part appears twice (:func:`distinct_parts`); parts are never written after construction and may be
  shared by many values.

Conversion to CSR: :func:`csr_from_parts` — one part as it is, a small value by :mod:`.small_unions`, anything
else by the blocks of :mod:`.materialize`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ...dtypes import index_dtype
from ..budget import _NNZ_BUDGET, check_nnz
from .csr import CsrPart, _empty_csr, make_csr
from .group_parts import combine_group_parts
from .index_parts import IndexPart
from .materialize import _PartsRows, materialize
from .small_unions import _small_union
from .value import Value

__all__ = ["MAX_LAZY_PARTS", "SMALL_ROWS", "LAZY_INDEX_PARTS", "COMPACT_MOVES", "register_compact_moves",
           "csr_from_parts", "gather_csr_rows", "distinct_parts", "materialize_now", "parts_to_csr"]

#: Above this many parts a union is materialized into a single CSR part, to bound the cost of later moves.
MAX_LAZY_PARTS = 24

#: Unions of values with at most this many rows are materialized at once: it is cheap, and lazy parts of a
#: small value (a loop's hidden state) otherwise multiply into everything built from it (2x on a scan).
SMALL_ROWS = 64

#: A small value's union of at most this many index parts (shifted slices of the inputs: a stencil) stays lazy:
#: later moves gather index parts cheaply, and it is materialized once, when something needs its matrix.
LAZY_INDEX_PARTS = 8

#: Moves in a compact form another module knows, registered with :func:`register_compact_moves` (the
#: package's ``__init__`` registers :mod:`..runs`' run-length rows):
#: ``"union": fn(parts, rows, n, materializing) -> part | None`` (one part equal to the union of several;
#: ``materializing``: called by :func:`parts_to_csr`, which keeps that part) and
#: ``"vstack": fn(items) -> Deps | None``.  ``None`` leaves the move to the general code.
COMPACT_MOVES: dict = {}


def register_compact_moves(*, union=None, vstack=None) -> None:
    """Plug a compact representation's ``union`` and ``vstack`` into the lattice (see :data:`COMPACT_MOVES`)."""
    if union is not None:
        COMPACT_MOVES["union"] = union
    if vstack is not None:
        COMPACT_MOVES["vstack"] = vstack


def gather_csr_rows(m: sp.csr_array, idx: np.ndarray) -> sp.csr_array:
    """Rows of ``m`` by an index map: ``out[i] = m[idx[i]]`` and ``out[i] = {}`` where ``idx[i] < 0``."""
    return csr_from_parts([CsrPart(m, np.asarray(idx))], len(idx), m.shape[1])


def csr_from_parts(parts: Sequence[IndexPart | CsrPart], k: int, n: int) -> sp.csr_array:
    """Materialize a union of parts into one canonical bool CSR matrix."""
    if not parts:
        return _empty_csr(k, n)
    if len(parts) == 1:
        (p,) = parts
        if isinstance(p, CsrPart) and p.rowmap is None:
            return p.base
        if isinstance(p, IndexPart) and len(p.cols) and int(p.cols.min()) >= 0:
            # one dependency per row: the columns are the CSR's indices as they are (shared, not copied)
            check_nnz(k)
            return make_csr(np.arange(k + 1, dtype=index_dtype(n, k)), np.ascontiguousarray(p.cols), k, n)
    if k <= SMALL_ROWS:
        small = _small_union(parts, k, n)
        if small is not None:
            return small
    return materialize([_PartsRows(parts, k, n)], n)


def _within_budget(parts) -> bool:
    """The entries of index and CSR parts together fit the active nonzero budget, and so does their union: a
    lazy union (``Deps.union(..., eager=False)``) stays lazy only then — else it is materialized, and refused at
    once exactly when an eager union would be."""
    limit = _NNZ_BUDGET.get()
    if limit is None:
        return True
    total = 0
    for p in parts:
        if type(p) is IndexPart:
            total += len(p.cols)
        elif type(p) is CsrPart:
            rm = p.rowmap
            total += p.base.nnz if rm is None else int(np.diff(p.base.indptr)[rm[rm >= 0]].sum())
        else:
            return False
    return total <= limit


def _stays_lazy(parts) -> bool:
    """A small value's union that need not be materialized now: a few index parts, whose entries (at most one
    per row and part) fit the active nonzero budget — so a value too large for it is still refused at once."""
    if len(parts) > LAZY_INDEX_PARTS or not all(type(p) is IndexPart for p in parts):
        return False
    return _within_budget(parts)  # (an index part holds at most one entry a row)



def distinct_parts(values) -> list:
    """The parts of the values, each part once (the same part shared by two operands is not repeated; lazy group
    unions of one source joined: :func:`~.group_parts.combine_group_parts`)."""
    parts: list = []
    seen: set[int] = set()
    for d in values:
        for p in d.parts:
            if id(p) not in seen:
                seen.add(id(p))
                parts.append(p)
    return combine_group_parts(parts)


def materialize_now(parts, rows: int, eager: bool) -> bool:
    """Whether a lazy union of ``parts`` is materialized when it is formed: past :data:`MAX_LAZY_PARTS` parts,
    or a small value's union of several parts that does not stay lazy (:func:`_stays_lazy`) and is either
    ``eager`` or past the nonzero budget."""
    if len(parts) > MAX_LAZY_PARTS:
        return True
    return rows <= SMALL_ROWS and len(parts) > 1 and not _stays_lazy(parts) and (eager or not _within_budget(parts))


def parts_to_csr(d: Value) -> sp.csr_array:
    """The CSR of a value of lazy parts.  A union of several parts is first offered to the compact move
    (run-length rows keep a widening band compact), then materialized; either way its one part replaces the
    lazy union, so later moves work on one matrix."""
    parts = d._parts
    assert parts is not None
    if len(parts) > 1 and "union" in COMPACT_MOVES:
        part = COMPACT_MOVES["union"](parts, d.rows, d.n, True)
        if part is not None:
            d._parts = parts = (part,)
    m = csr_from_parts(parts, d.rows, d.n)
    if len(parts) > 1:
        d._parts = (CsrPart(m),) if m.nnz else ()
    return m

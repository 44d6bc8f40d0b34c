"""The group union: each output row unions a known group of input rows (``R @ S`` for a 0/1 matrix ``R``).

Reductions, contractions, convolutions, windows, scatters with combiners, batch statistics and factorization
blocks are all this one move; they differ only in how their groups are described, so :class:`Groups` takes
every description the rules have at hand and :func:`group_union` picks the cheapest way to compute it::

    S = [{0}, {1}, {2}]
    group_union(S, Groups.table([[0, 1], [2, -1]]))     = [{0, 1}, {2}]          (-1: no member)
    group_union(S, Groups.lists([0, 3, 3], [0, 1, 2]))  = [{0, 1, 2}, {}]
    group_union(S, Groups.pairs(rows=[1, 0], members=[0, 2], k_out=2)) = [{2}, {0}]

Strategies (all vectorized; the result is the same):

* **lazy** — narrow groups of uniform width ``g``: the union of ``g`` row maps, kept lazy (a 3×3 convolution
  costs nine row maps and nothing is materialized);
* **index table** — every part an index part: a ``(rows, g·parts)`` column table sorted per row;
* **gather** — any groups: the members' entries gathered in one pass and merged per output row, linear in
  the gathered entries (no ``R @ S`` product); many members over many rows (a scatter-add) are kept as a lazy
  group part (:mod:`.representations.group_parts`), built only when a move reads its rows — the full reduction
  and the second-order first-order projection read its groups instead;
* **compose** (on request) — ``R`` composed with each part's row map first, so a lazily broadcast matrix (one
  base row) or a factor's few distinct rows are merged once, not once per reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .core import (MAX_LAZY_PARTS, CsrPart, Deps, IndexPart, RowSource, _dedup_sorted_rows,
                   check_nnz, materialize)
from .representations import group_parts
from .representations.group_parts import GroupPart, GroupRows, merge_rows

__all__ = ["Groups", "group_union", "merge_rows"]

#: A single group over a value of at least this many rows is one reduction (:func:`_one_group`); a smaller value
#: (a written-out program's scalars and short vectors, often of the scalar lane) takes the paths below, which
#: keep its form.
ONE_GROUP_ROWS = 256

#: Dense 0/1 products are used by the compose strategy below this many cells per matrix (float32).
DENSE_CELLS = 25_000_000


def _from_csr(m: sp.csr_array) -> Deps:
    return Deps(m.shape[0], m.shape[1], [CsrPart(m)] if m.nnz else [])


@dataclass(frozen=True, eq=False)
class Groups:
    """Which input rows each of ``k_out`` output rows unions.  Either a uniform ``(k_out, g)`` table
    (``table``), or CSR-like lists (``indptr``, ``members``); ``-1`` members are skipped."""

    k_out: int
    table: np.ndarray | None = None
    indptr: np.ndarray | None = None
    members: np.ndarray | None = None

    @classmethod
    def from_table(cls, table) -> "Groups":
        """Row ``i`` unions the rows ``table[i, :]``."""
        table = np.asarray(table, np.int64)
        if table.ndim != 2:
            raise ValueError("a group table is 2-D")
        return cls(table.shape[0], table=table)

    @classmethod
    def member_major(cls, members) -> "Groups":
        """Row ``i`` unions the rows ``members[:, i]`` (a ``(g, k_out)`` table: member ``j`` of every group
        is one contiguous row map)."""
        members = np.asarray(members, np.int64)
        return cls(members.shape[1], table=members.T)

    @classmethod
    def from_lists(cls, indptr, members) -> "Groups":
        """Row ``i`` unions the rows ``members[indptr[i]:indptr[i+1]]`` (groups of varying size)."""
        indptr = np.asarray(indptr, np.int64)
        return cls(len(indptr) - 1, indptr=indptr, members=np.asarray(members, np.int64))

    @classmethod
    def from_pairs(cls, rows, members, k_out: int) -> "Groups":
        """Row ``r`` unions ``members[t]`` over the pairs with ``rows[t] = r`` (any order)."""
        rows = np.asarray(rows, np.int64)
        order = np.argsort(rows, kind="stable")
        indptr = np.zeros(k_out + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=k_out), out=indptr[1:])
        return cls.from_lists(indptr, np.asarray(members, np.int64)[order])

    @classmethod
    def from_matrix(cls, matrix) -> "Groups":
        """Row ``i`` unions the rows ``j`` with ``matrix[i, j] ≠ 0`` (the ``R`` of ``R @ S``)."""
        m = sp.csr_array(matrix)
        m.sum_duplicates()
        return cls.from_lists(np.asarray(m.indptr, np.int64), np.asarray(m.indices, np.int64))

    def as_lists(self) -> tuple[np.ndarray, np.ndarray]:
        if self.table is None:
            assert self.indptr is not None and self.members is not None
            return self.indptr, self.members
        k, g = self.table.shape
        return np.arange(k + 1, dtype=np.int64) * g, np.ascontiguousarray(self.table).ravel()

    def as_matrix(self, k_in: int) -> sp.csr_array:
        """The 0/1 ``(k_out, k_in)`` matrix ``R``."""
        indptr, members = self.as_lists()
        rows = np.repeat(np.arange(self.k_out, dtype=np.int64), np.diff(indptr))
        valid = members >= 0
        m = sp.csr_array((np.ones(int(valid.sum()), bool), (rows[valid], members[valid])), shape=(self.k_out, k_in))
        m.sum_duplicates()
        return m


def group_union(deps: Deps, groups: Groups, strategy: str = "auto") -> Deps:
    """Each output row ``i`` is the union of the rows of ``deps`` in group ``i`` (see the module docstring);
    ``strategy="compose"`` composes the groups with the parts' row maps first."""
    k_out, n = groups.k_out, deps.n
    if deps.is_empty or k_out == 0 or deps.rows == 0:  # (a value of no rows: every member is -1, every row empty)
        return Deps.empty(k_out, n)
    if strategy == "compose":
        return _composed(deps, groups.as_matrix(deps.rows))
    if strategy != "auto":
        raise ValueError(f"unknown group-union strategy {strategy!r}")
    if k_out == 1 and deps.rows >= ONE_GROUP_ROWS:
        return _one_group(deps, groups)
    if groups.table is not None:
        table = groups.table
        g = table.shape[1]
        if g == 0:
            return Deps.empty(k_out, n)
        if g == 1:
            return deps.gather_rows(table[:, 0])
        if g * len(deps.parts) <= MAX_LAZY_PARTS:
            return Deps.union(*[deps.gather_rows(table[:, j]) for j in range(g)])
        if all(isinstance(p, IndexPart) for p in deps.parts):
            return _index_table(deps, table)
    indptr, members = groups.as_lists()
    return _gathered(deps, indptr, members)


def _one_group(deps: Deps, groups: Groups) -> Deps:
    """One output row (a contraction to a scalar: ``x · y``): the union of its members' rows by
    :meth:`Deps.reduce_all` of their gather — a mark vector, or for the second-order lattice's wide rows its
    distinct-columns pass — instead of merging one row of every member's entries by a sort."""
    if groups.table is not None:
        members = groups.table[0]
    else:
        _, members = groups.as_lists()
    members = members[members >= 0]
    if len(members) == 0:
        return Deps.empty(1, deps.n)
    if any(type(p) is GroupPart and not p.built for p in deps.parts):
        keep = np.zeros(deps.rows, bool)  # (a mask keeps a lazy group union lazy; a gather would build it)
        keep[members] = True
        return deps.mask_rows(keep).reduce_all()
    return deps.gather_rows(members).reduce_all()


def _index_table(deps: Deps, table: np.ndarray) -> Deps:
    """Index parts only: per output row, the ``g·parts`` columns its group reaches, sorted and de-duplicated
    (block by block: temporaries of a block's size, the output allocated once)."""
    return _from_csr(materialize([_TableRows(deps.parts, table)], deps.n))


class _TableRows(RowSource):
    """Row ``i``: the union of index parts' columns at the rows ``table[i, :]`` (``-1`` = no member)."""

    def __init__(self, parts, table: np.ndarray):
        super().__init__(table.shape[0])
        self.parts, self.table = parts, table

    def bounds(self, lo, hi):
        t = self.table[lo:hi]
        return (t >= 0).sum(axis=1).astype(np.int64) * len(self.parts)

    def block(self, lo, hi):
        t = self.table[lo:hi]
        b, g = t.shape
        valid = t >= 0
        safe = np.where(valid, t, 0)
        mat = np.empty((b, g * len(self.parts)), np.result_type(*(p.cols for p in self.parts)))
        for i, p in enumerate(self.parts):  # a loop over parts (few), each a vectorized gather
            mat[:, i * g:(i + 1) * g] = np.where(valid, p.cols[safe], -1)
        mat.sort(axis=1)
        return _dedup_sorted_rows(mat, np.zeros(b + 1, np.int64))


def _gathered(deps: Deps, indptr: np.ndarray, members: np.ndarray) -> Deps:
    """Gather the member rows' entries, then merge repeats per output row — block by block, so the gathered
    entries (often several times the result) never exist all at once; a large union is a lazy group part that
    does so when its rows are read."""
    k_out = len(indptr) - 1
    if len(members) == 0:
        return Deps.empty(k_out, deps.n)
    if len(members) >= group_parts.LAZY_GROUP_MEMBERS and k_out >= group_parts.LAZY_GROUP_ROWS:
        return Deps(k_out, deps.n, [GroupPart(deps, np.asarray(indptr, np.int64), np.asarray(members, np.int64))])
    return _from_csr(materialize([GroupRows(deps.to_csr(), indptr, members)], deps.n))


def _composed(deps: Deps, groups: sp.csr_array) -> Deps:
    """``R @ S`` without materializing ``S``: each part's row map is composed with ``R`` first.

    A part ``CsrPart(base, rowmap)`` contributes ``(R @ P_rowmap) @ base``; the first product merges the
    repeated base rows a group reaches (a lazily broadcast matrix has one base row, an LU factor one per
    column), so the cost is that of the distinct base rows, not of the materialized value."""
    groups = sp.csr_array(groups, dtype=bool)
    k_out, k_in = groups.shape
    n = deps.n
    if groups.nnz == 0:
        return Deps.empty(k_out, n)
    mats = []
    for part in deps.parts:
        if isinstance(part, IndexPart):
            cols = np.asarray(part.cols, np.int64)
            ok = cols >= 0
            sel = sp.csr_array((np.ones(int(ok.sum()), bool), (np.flatnonzero(ok), cols[ok])), shape=(k_in, n))
            mats.append(groups @ sel)
        elif part.rowmap is None:
            mats.append(groups @ part.base)
        else:
            rm = np.asarray(part.rowmap, np.int64)
            ok = rm >= 0
            sel = sp.csr_array((np.ones(int(ok.sum()), bool), (np.flatnonzero(ok), rm[ok])),
                               shape=(k_in, part.base.shape[0]))
            reach = sp.csr_array((groups @ sel).astype(bool))
            mats.append(_union_of_rows(reach, part.base))
    for m in mats:
        check_nnz(int(m.nnz))
    total = mats[0]
    for m in mats[1:]:
        total = total + m
    total = sp.csr_array(total.astype(bool))
    total.sum_duplicates()
    total.sort_indices()
    total.eliminate_zeros()
    return _from_csr(total)


def _union_of_rows(reach: sp.csr_array, base: sp.csr_array) -> sp.csr_array:
    """Row ``i`` = ∪ of the ``base`` rows that ``reach[i]`` selects.  When the selected rows overlap heavily
    (nested prefixes of a factorization: the work of a sparse product far exceeds the result) and both
    sides fit, one dense BLAS product of 0/1 matrices is much faster than merging the same entries again
    and again."""
    k_out, n = reach.shape[0], base.shape[1]
    row_sizes = np.diff(np.asarray(base.indptr, np.int64)).astype(np.float64)
    work = float((reach.astype(np.float64) @ row_sizes).sum())  # entries a sparse product would merge
    if work > 4.0 * k_out * n and k_out * n <= DENSE_CELLS and base.shape[0] * n <= DENSE_CELLS:
        dense = (reach.astype(np.float32) @ base.astype(np.float32).toarray()) > 0
        check_nnz(int(np.count_nonzero(dense)))
        return sp.csr_array(dense)
    return sp.csr_array(reach @ base)

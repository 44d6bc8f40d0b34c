"""Group parts: a large group union kept lazy until a move needs its rows.

Row ``i`` of a :class:`GroupPart` is the union of the rows ``members[indptr[i]:indptr[i + 1]]`` of a *source*
value (``-1`` members are skipped): a scatter-add's result, each element the union of the updates that land on it.
It is a :class:`~.csr.CsrPart` whose ``base`` is materialized on first use (:class:`GroupRows`, block by block),
so every move that reads rows sees the same canonical CSR as an eager union.  Two moves do not need the rows and
read the groups instead:

* the **full reduction** (:meth:`~..core.Deps.reduce_all`): the union of every row of a group union is the union of
  the source rows its groups reach (:func:`expand_group_parts`) — a scatter-add summed to a scalar (``x · div``)
  never builds its per-element unions, and several group parts of one source are read once;
* a **projection that commutes with the union**, such as the second-order lattice's first-order columns
  (:meth:`GroupPart.regroup`): the groups applied to the projected source rows.

A mask of rows (``mask_rows``: a scatter's written rows) keeps the part lazy by dropping groups; any other gather
materializes it once and shares it through a row map (a stencil over the result reads one union, not one per
shift).  Only unions of at least :data:`LAZY_GROUP_MEMBERS` members and :data:`LAZY_GROUP_ROWS` rows are kept
lazy (:func:`~..groups.group_union`): below that the union is cheap and an eager result keeps every small program's
path as it was.  Unions of group parts of one source are one group part (:func:`combine_group_parts`, called by
the lazy union): ``div = zeros.at[src].add(flux).at[dst].add(-flux)`` holds one set of groups over ``flux``.

Invariants: ``indptr`` is ``int64`` of ``rows + 1`` entries from 0; ``members`` are ``int64`` rows of the source or
``-1``; the source is never written (values are immutable), so the part may be shared.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from ...dtypes import index_dtype
from .csr import CsrPart, _gather_block, _rowmap_lengths
from .materialize import RowSource, materialize

__all__ = ["GroupPart", "GroupRows", "combine_group_parts", "expand_group_parts", "merge_rows", "LAZY_GROUP_MEMBERS",
           "LAZY_GROUP_ROWS"]

#: :func:`~..groups.group_union` keeps a union of groups lazy (a :class:`GroupPart`) from this many members on,
#: over at least :data:`LAZY_GROUP_ROWS` rows (a smaller value is materialized at once, as the lazy parts' own
#: ``SMALL_ROWS`` rule has it).  Tests lower both to zero to run every law with lazy unions.
LAZY_GROUP_MEMBERS = 1 << 12
LAZY_GROUP_ROWS = 65


def merge_rows(indptr, indices, k: int, n: int) -> sp.csr_array:
    """A canonical bool CSR from rows that may hold repeats or be unsorted (SciPy's per-row C++ pass)."""
    dt = index_dtype(n, len(indices))
    m = sp.csr_array((k, n), dtype=bool)
    m.indptr = np.asarray(indptr, dt)
    m.indices = np.asarray(indices, dt)
    m.data = np.ones(len(indices), bool)
    m.has_sorted_indices = False
    m.has_canonical_format = False
    m.sum_duplicates()
    return m


class GroupRows(RowSource):
    """Row ``i``: the union of the rows ``members[indptr[i]:indptr[i + 1]]`` of a canonical CSR ``m`` of ``n``
    columns — or of a ``(k, w)`` column table (``table``: row ``r`` holds the columns ``table[r]``, ``-1`` for none;
    the first-order columns of a gather's index parts, ``{src, dst}`` of an edge), which a block reads by whole
    rows, with no per-entry index arithmetic.  A CSR whose rows all have one length is read as such a table."""

    def __init__(self, m: sp.csr_array | None, indptr: np.ndarray, members: np.ndarray,
                 table: np.ndarray | None = None, n: int | None = None):
        super().__init__(len(indptr) - 1)
        self.m, self.indptr, self.members = m, indptr, members
        self.n = m.shape[1] if m is not None else int(n)  # type: ignore[arg-type]
        if table is None and m is not None and len(members) and int(members.min()) >= 0:
            k, nnz = m.shape[0], len(m.indices)
            if k and nnz % k == 0 and nnz and \
                    np.array_equal(m.indptr, np.arange(0, nnz + 1, nnz // k, dtype=m.indptr.dtype)):
                table = m.indices.reshape(k, nnz // k)
        self.table = table
        self._lengths: np.ndarray | None = None

    def _member_lengths(self, a: int, b: int) -> np.ndarray:
        """The lengths of the member rows ``a:b`` (computed once for every member: the counting pass and the
        writing pass both read them)."""
        if self._lengths is None:
            assert self.m is not None
            self._lengths = _rowmap_lengths(self.m.indptr, self.members)
        return self._lengths[a:b]

    def bounds(self, lo, hi):
        if self.table is not None:
            return np.diff(self.indptr[lo:hi + 1]) * self.table.shape[1]
        a, b = int(self.indptr[lo]), int(self.indptr[hi])
        lengths = self._member_lengths(a, b)
        cs = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=cs[1:])
        g = self.indptr[lo:hi + 1] - a
        return cs[g[1:]] - cs[g[:-1]]

    def block(self, lo, hi):
        a, b = int(self.indptr[lo]), int(self.indptr[hi])
        g = self.indptr[lo:hi + 1] - a
        if self.table is not None:
            members = self.members[a:b]
            got = np.take(self.table, np.maximum(members, 0), axis=0)  # (6× faster than ``table[members]``)
            keep = (got >= 0) & (members >= 0)[:, None]
            if keep.all():
                ptr, ind = g * self.table.shape[1], got.ravel()
            else:
                per = np.zeros(len(members) + 1, np.int64)
                np.cumsum(keep.sum(axis=1), out=per[1:])
                ptr, ind = per[g], got[keep]
        else:
            assert self.m is not None
            mptr, ind = _gather_block(self.m, self.members[a:b], self._member_lengths(a, b))
            ptr = mptr[g]
        merged = merge_rows(ptr, ind, hi - lo, self.n)
        return merged.indptr.astype(np.int64), merged.indices


def _is_mask(idx: np.ndarray, rows: int) -> bool:
    """``idx[i]`` is ``i`` or ``-1`` for every row (:meth:`~..core.Deps.mask_rows`)."""
    return len(idx) == rows and bool(np.all((idx == np.arange(rows, dtype=idx.dtype)) | (idx < 0)))


class GroupPart(CsrPart):
    """The union of groups of a source value's rows, materialized on first use of :attr:`base` (see the module
    docstring).  A :class:`~.csr.CsrPart` without a row map."""

    source: Any
    indptr: np.ndarray
    members: np.ndarray
    _csr: sp.csr_array | None

    def __init__(self, source, indptr: np.ndarray, members: np.ndarray):
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "indptr", indptr)
        object.__setattr__(self, "members", members)
        object.__setattr__(self, "_csr", None)

    # ------------------------------------------------------------------ the CsrPart interface
    @property
    def base(self) -> sp.csr_array:
        if self._csr is None:
            object.__setattr__(self, "_csr", self.regroup(self.source.to_csr()))
            # built: read as a CSR from now on, so the source and the groups are let go (as an eager union would)
            object.__setattr__(self, "source", None)
            object.__setattr__(self, "members", None)
        return self._csr

    @property
    def rowmap(self):
        return None

    @property
    def built(self) -> bool:
        """Whether the rows have been materialized (then every move reads :attr:`base`)."""
        return self._csr is not None

    def to_csr(self) -> sp.csr_array:
        return self.base

    def gather(self, idx: np.ndarray, has_neg: bool = True) -> CsrPart:
        if self._csr is None and _is_mask(idx, self.rows):
            keep = idx >= 0
            lengths = np.where(keep, np.diff(self.indptr), 0)
            indptr = np.zeros(len(lengths) + 1, np.int64)
            np.cumsum(lengths, out=indptr[1:])
            starts = np.repeat(self.indptr[:-1] - indptr[:-1], lengths)
            starts += np.arange(int(indptr[-1]), dtype=np.int64)
            return GroupPart(self.source, indptr, self.members[starts])
        return CsrPart(self.base, idx)

    def nnz_upper(self) -> int:
        return self.base.nnz

    @property
    def rows(self) -> int:
        return len(self.indptr) - 1

    def __repr__(self) -> str:
        members = "built" if self.members is None else f"members={len(self.members)}, lazy"
        return f"GroupPart(rows={self.rows}, {members})"

    # ------------------------------------------------------------------ the moves that read the groups
    def regroup(self, m: sp.csr_array | None = None, table: np.ndarray | None = None,
                n: int | None = None) -> sp.csr_array:
        """The same groups over the rows of ``m`` — the source's rows, or a projection of them that commutes with
        the union — or of a ``(source rows, w)`` column ``table`` of ``n`` columns (``-1``: none): one canonical
        CSR of :attr:`rows` rows."""
        rows = m.shape[0] if m is not None else (table.shape[0] if table is not None else -1)
        if rows != self.source.rows:
            raise ValueError("regroup needs one row per source row")
        source = GroupRows(m, self.indptr, self.members, table, n)
        return materialize([source], source.n)

    def reached(self) -> np.ndarray:
        """Boolean mask of the source rows some group reaches."""
        used = np.zeros(self.source.rows + 1, bool)  # (a ``-1`` member lands on the extra flag)
        used[self.members] = True
        return used[:-1]


def _concatenated(parts: list[GroupPart]) -> GroupPart:
    """One group part of one source whose row ``i`` unions the groups ``i`` of every part."""
    lengths = np.stack([np.diff(p.indptr) for p in parts], axis=1)           # (rows, parts)
    indptr = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths.sum(axis=1), out=indptr[1:])
    at = indptr[:-1, None] + np.cumsum(lengths, axis=1) - lengths             # where each piece starts
    members = np.empty(int(indptr[-1]), np.int64)
    for j, p in enumerate(parts):                                             # (a loop over the few parts)
        dest = np.repeat(at[:, j] - p.indptr[:-1], lengths[:, j])
        dest += np.arange(len(p.members), dtype=np.int64)
        members[dest] = p.members
    return GroupPart(parts[0].source, indptr, members)


def combine_group_parts(parts: list) -> list:
    """``parts`` with the lazy group parts of one source joined into one (the union of two group unions of one
    source is one group union: a scatter-add of updates onto an earlier scatter of the same updates, ``div``
    of a graph's edges).  Later moves then read the source through one set of groups."""
    lazy = [p for p in parts if type(p) is GroupPart and not p.built]
    if len(lazy) < 2 or len({id(p.source) for p in lazy}) == len(lazy):
        return parts
    by_source: dict[int, list[GroupPart]] = {}
    for p in lazy:
        by_source.setdefault(id(p.source), []).append(p)
    out = []
    for p in parts:
        if type(p) is GroupPart and not p.built:
            same = by_source.pop(id(p.source), None)
            if same is not None:
                out.append(same[0] if len(same) == 1 else _concatenated(same))
        else:
            out.append(p)
    return out


def expand_group_parts(parts: Sequence) -> Sequence:
    """Parts whose rows, all together, have the union of ``parts``' rows: each lazy :class:`GroupPart` replaced by
    the parts of the source rows its groups reach (several group parts of one source read it once; a source that is
    itself a group union is expanded in turn).  For the full reduction, which needs no row by itself."""
    if not any(type(p) is GroupPart and not p.built for p in parts):
        return parts  # (the common case, on the reduction's path: no copy)
    out: list = []
    seen: set[int] = set()
    sources: dict[int, tuple[Any, np.ndarray]] = {}
    for p in parts:
        if type(p) is GroupPart and not p.built:
            key = id(p.source)
            if key in sources:
                src, used = sources[key]
                sources[key] = (src, used | p.reached())
            else:
                sources[key] = (p.source, p.reached())
        elif id(p) not in seen:
            seen.add(id(p))
            out.append(p)
    for src, used in sources.values():
        if not used.any():
            continue
        reached = src.mask_rows(used)  # (a mask keeps a source that is a group union lazy in turn)
        for q in expand_group_parts(reached.parts):
            if id(q) not in seen:
                seen.add(id(q))
                out.append(q)
    return out


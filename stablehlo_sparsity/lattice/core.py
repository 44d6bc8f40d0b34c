"""The index-set lattice, vectorized: :class:`Deps`, the value every rule reads and writes.

For a value with ``k`` elements in a program with ``n`` flat inputs, its index sets form one sparse boolean
matrix ``S`` of shape ``(k, n)``: row ``e`` holds the inputs that element ``e`` may depend on.  The join is
the elementwise union (``S_a ∨ S_b``), the bottom is the empty matrix, and every rule is monotone.

Worked examples (one row per element, columns are inputs)::

    S_a = [{0}, {1}]          S_b = [{1}, {}]
    S_a ∨ S_b            = [{0, 1}, {1}]
    gather_rows(S_a, [1, -1, 0]) = [{1}, {}, {0}]          (-1 ⇒ empty row)
    group_union(S_a ∨ S_b, [[0, 1]]) = [{0, 1}]             (each output unions a group of rows, groups.py)

Representations.  A :class:`Deps` is in one of three forms, each a module of :mod:`.representations` with its
invariants: the *row lane* (a scalar's columns as a Python set: :mod:`~.representations.row_lane`), the *lazy
stack* (the items of a ``vstack``: :mod:`~.representations.lazy_stack`) and *lazy parts* (a union of a few
parts, the general form: :mod:`~.representations.lazy_parts`).  A part is an index part (one column per row:
:mod:`~.representations.index_parts`), a CSR part (rows of a canonical CSR through a row map:
:mod:`~.representations.csr`) or a run part (a few column intervals per row: :mod:`.runs`).  Elementwise
unions concatenate part lists (O(#parts)) and structural ops compose row maps (O(k) integer work per part);
the matrix is only materialized when a rule needs whole rows or at the end — vectorized NumPy, no Python loop
over elements (:mod:`~.representations.small_unions`, :mod:`~.representations.materialize`).

The methods dispatch over two tables: :data:`~.representations.CONVERSIONS` (form to form: ``to_csr``,
``parts``) and :data:`UNION_ROUTES` (how :meth:`Deps.union` joins values, by their row count).  Rules build on
the moves and never on the representation.

This module re-exports the representations' names (``from stablehlo_sparsity.lattice.core import IndexPart``,
``make_csr``, ``check_nnz``, … keep working); the knobs of the representations (``BLOCK_ENTRIES``,
``ROW_LANE_ENTRIES``, …) are read where they are defined, so a test that changes one changes it there.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from .budget import _NNZ_BUDGET, check_nnz, nnz_budget  # noqa: F401
from .representations import CONVERSIONS, CSR, LAZY_PARTS, LAZY_STACK, ROW_LANE
from .representations.csr import (LONG_ROW, CsrPart, _bare_csr, _col_dtype, _empty_csr, _FAST_SHELL,  # noqa: F401
                                  _gather_block, _row_csr, _rowmap_lengths, _shell_works, _sorted_unique, csr_of_keys,
                                  distinct_sorted, make_csr, rows_of_keys)
from .representations.group_parts import GroupPart, expand_group_parts  # noqa: F401
from .representations.index_parts import (SORTING_NETWORKS, IndexPart, _dedup_sorted_rows,  # noqa: F401
                                          _index_block, _index_columns, _index_counts, distinct_entries,
                                          sorted_columns)
from .representations.lazy_parts import (COMPACT_MOVES, LAZY_INDEX_PARTS, MAX_LAZY_PARTS, SMALL_ROWS,  # noqa: F401
                                         _stays_lazy, _within_budget, csr_from_parts, distinct_parts,
                                         gather_csr_rows, materialize_now, register_compact_moves)
from .representations.lazy_stack import _stack_leaves, _stack_of_scalars, _stacked_parts  # noqa: F401
from .representations.materialize import (BLOCK_ENTRIES, CACHED_BLOCK_ENTRIES, PLAN_ROWS, ROW_UNIONS,  # noqa: F401
                                          SMALL_MATERIALIZE_ROWS, SMALL_MERGE_ENTRIES, RowSource, _merge_blocks,
                                          _PartsRows, _plan_blocks, _small_materialized, _stack_materialized,
                                          materialize, merge_smallest_first)
from .representations.row_lane import (ROW_LANE_ENTRIES, TAKE_ROW_LANE, _parts_row_set,  # noqa: F401
                                       _row_lane_union, _row_set, lane_csr, lane_size, pair_union, row_columns)
from .representations.small_unions import (MAX_INSERTED, SMALL_UNION_ENTRIES, _one_large_row,  # noqa: F401
                                           _part_entries, _part_row, _scalar_union, _small_union, insert_sorted)

__all__ = ["Deps", "IndexPart", "CsrPart", "csr_from_parts", "gather_csr_rows", "make_csr", "materialize", "RowSource",
           "BLOCK_ENTRIES", "MAX_LAZY_PARTS", "SMALL_ROWS", "nnz_budget", "check_nnz", "is_arange", "as_index",
           "COMPACT_MOVES", "register_compact_moves", "SORTING_NETWORKS", "sorted_columns", "distinct_entries",
           "UNION_ROUTES", "ROW_UNIONS", "merge_smallest_first"]

#: Above this many columns, and 16 per entry, :meth:`Deps.reduce_all` sorts the entries instead of marking a
#: vector of ``n`` flags (the second-order lattice has ``n + n²`` columns).
SPARSE_REDUCE_COLUMNS = 1 << 22

#: Faster ways to the sorted distinct columns of a wide column space, tried in order by the sorted
#: :meth:`Deps.reduce_all`: ``fn(columns int64, n, overwrite) -> sorted distinct columns | None`` (``None``:
#: not applicable; ``overwrite``: the columns may be reordered in place).  The second-order lattice registers one
#: that knows its pair encoding.
WIDE_DISTINCT: list = []

#: Tried before :data:`WIDE_DISTINCT` by the sorted :meth:`Deps.reduce_all`, on the parts' column arrays as they
#: lie (no buffer of all the entries): ``fn(arrays, n) -> sorted distinct columns | None``; the arrays are only
#: read, and ``-1`` (an index part's "none") is no column.  The second-order lattice registers one.
WIDE_DISTINCT_OF_ARRAYS: list = []


def as_index(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


class Deps:
    """The index sets of one value: a ``(rows, n)`` boolean relation, in one of the representations of
    :mod:`.representations` (the row lane, a lazy vstack, lazy parts: :meth:`form`).

    Instances are immutable; every move returns a new instance (or the same one when nothing changes).

    Examples:
        >>> from stablehlo_sparsity import Deps
        >>> d = Deps.identity(3, 4, 1)                   # element i depends on input i + 1
        >>> d.to_csr().toarray().astype(int).tolist()
        [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
        >>> Deps.union(d, Deps.identity(3, 4, 0)).nnz, d.reduce_all().nnz
        (6, 3)
    """

    __slots__ = ("rows", "n", "_parts", "_stack", "_csr", "_row", "__weakref__")

    def __init__(self, rows: int, n: int, parts: Iterable[IndexPart | CsrPart] = ()):
        self.rows = int(rows)
        self.n = int(n)
        self._parts: tuple[IndexPart | CsrPart, ...] | None = tuple(parts)
        self._stack: tuple[Deps, ...] | None = None  # a lazy vstack: its items (see :meth:`vstack`)
        self._csr: sp.csr_array | None = None
        #: the scalar lane: a one-row value's columns as a Python set (:meth:`union` of scalars), its parts
        #: built only when a move needs them
        self._row: frozenset[int] | None = None

    @classmethod
    def of_row(cls, n: int, row: frozenset[int]) -> "Deps":
        """A one-row value with the columns ``row`` (all in ``[0, n)``; checked by the caller), kept as a set
        (the scalar lane) while it holds at most :data:`ROW_LANE_ENTRIES` of them."""
        if not row:
            return cls.empty(1, n)
        if len(row) > ROW_LANE_ENTRIES:
            return cls._materialized(lane_csr(row, n))
        check_nnz(len(row))
        return cls._of_row(int(n), row)

    @classmethod
    def _of_row(cls, n: int, row: frozenset[int]) -> "Deps":
        """A one-row value of the scalar lane (``row`` non-empty, at most :data:`ROW_LANE_ENTRIES` columns)."""
        d = object.__new__(cls)  # (every slot set here: the constructor's conversions are not needed)
        d.rows, d.n, d._parts, d._stack, d._csr, d._row = 1, n, None, None, None, row
        return d

    def form(self) -> str:
        """Which representation holds the value: ``"row lane"``, ``"lazy stack"`` or ``"lazy parts"`` (see
        :mod:`.representations`; a materialized value is lazy parts of one CSR part, its CSR cached)."""
        if self._row is not None:
            return ROW_LANE
        return LAZY_STACK if self._parts is None else LAZY_PARTS

    @property
    def parts(self) -> tuple[IndexPart | CsrPart, ...]:
        """The lazy union, as parts (the row lane and a lazy vstack build theirs on first use)."""
        parts = self._parts
        if parts is None:
            parts = CONVERSIONS[self.form(), LAZY_PARTS](self)
        return parts

    @parts.setter
    def parts(self, value) -> None:
        self._parts = tuple(value)

    def leaf_parts(self) -> Iterator[IndexPart | CsrPart]:
        """The parts this value is made of, without building anything (a lazy vstack: its items' parts)."""
        if self._parts is not None or self._row is not None:
            yield from self.parts
        else:
            assert self._stack is not None
            for d in self._stack:
                yield from d.leaf_parts()

    # ----------------------------------------------------------------- construction
    @classmethod
    def empty(cls, rows: int, n: int) -> "Deps":
        """⊥: no element depends on anything (constants, integer values, zero derivatives)."""
        return cls(rows, n)

    @classmethod
    def identity(cls, rows: int, n: int, offset: int) -> "Deps":
        """Element ``e`` depends on input column ``offset + e`` (a function argument)."""
        return cls(rows, n, [IndexPart(np.arange(offset, offset + rows, dtype=_col_dtype(n)))])

    @classmethod
    def from_csr(cls, m: sp.spmatrix | sp.sparray) -> "Deps":
        m = sp.csr_array(m, dtype=bool)
        m.sum_duplicates()
        m.sort_indices()
        m.eliminate_zeros()
        d = cls(m.shape[0], m.shape[1], [CsrPart(m)] if m.nnz else [])
        d._csr = m if m.nnz else None
        return d

    @classmethod
    def _materialized(cls, m: sp.csr_array) -> "Deps":
        """A value whose index sets are the canonical bool CSR ``m`` (ours: no checks, no copies)."""
        d = cls(m.shape[0], m.shape[1], [CsrPart(m)] if m.nnz else [])
        d._csr = m
        return d

    @classmethod
    def full(cls, rows: int, n: int) -> "Deps":
        """⊤: every element depends on every input (the conservative fallback)."""
        if rows == 0 or n == 0:
            return cls.empty(rows, n)
        row = make_csr(np.array([0, n], np.int64), np.arange(n, dtype=np.int64), 1, n)
        return cls(rows, n, [CsrPart(row, np.zeros(rows, np.int64))])

    # ----------------------------------------------------------------- queries
    @property
    def is_empty(self) -> bool:
        # (a lazy vstack is never empty: see vstack; nor is the scalar lane)
        return self._stack is None and self._row is None and not self._parts

    def to_csr(self) -> sp.csr_array:
        """The materialized ``(rows, n)`` canonical bool CSR matrix (cached; a union of several parts or a lazy
        vstack keeps it as its only part, so later moves work on one matrix)."""
        m = self._csr
        if m is None:
            self._csr = m = CONVERSIONS[self.form(), CSR](self)
        return m

    def _sources(self) -> list[RowSource]:
        """The rows as materialization sources (a lazy vstack: one per item, flattened)."""
        if self._row is not None:
            self.to_csr()
        if self._csr is not None:
            return [_PartsRows([CsrPart(self._csr)], self.rows, self.n)]
        if self._parts is None:
            assert self._stack is not None
            return [s for d in self._stack for s in d._sources()]
        return [_PartsRows(self._parts, self.rows, self.n)]

    @property
    def nnz(self) -> int:
        return int(self.to_csr().nnz)

    def row_nonempty(self) -> np.ndarray:
        """Boolean mask of the rows that have at least one dependency."""
        return np.diff(self.to_csr().indptr) > 0

    def __eq__(self, other) -> bool:
        if not isinstance(other, Deps):
            return NotImplemented
        if self is other:
            return True
        if (self.rows, self.n) != (other.rows, other.n):
            return False
        a, b = self.to_csr(), other.to_csr()
        return a.nnz == b.nnz and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Deps(rows={self.rows}, n={self.n}, parts={len(self.parts)})"

    # ----------------------------------------------------------------- the four moves
    def gather_rows(self, idx) -> "Deps":
        """Rows by index map: ``out[i] = self[idx[i]]``; ``idx[i] = -1`` gives an empty row."""
        idx = as_index(idx).ravel()
        if self.is_empty or self.rows == 0:  # (from zero rows every index is -1: e.g. padding an empty tensor)
            return Deps.empty(len(idx), self.n)
        if len(idx) == self.rows and is_arange(idx):
            return self
        has_neg = bool(len(idx)) and int(idx.min()) < 0
        return Deps(len(idx), self.n, [p.gather(idx, has_neg) for p in self.parts])

    def take_row(self, i: int) -> "Deps":
        """Row ``i`` alone, as a one-row value (``gather_rows([i])`` without the index-map checks: a written-out
        program reads its inputs one element at a time)."""
        if not 0 <= i < self.rows:
            raise IndexError(f"row {i} of a value with {self.rows} rows")
        if self.rows == 1:
            return self
        if self.is_empty:
            return Deps.empty(1, self.n)
        # ``x[i]`` of a written-out program: a row of few columns becomes a lane value at once, which the unions
        # of its scalar arithmetic and the release of dead values read without NumPy
        lane = _parts_row_set(self.parts, i, TAKE_ROW_LANE)
        if lane is not None:
            return Deps.of_row(self.n, lane)
        return self.row_range(i, i + 1)

    def row_range(self, start: int, stop: int, step: int = 1) -> "Deps":
        """Rows ``start, start + step, …`` below ``stop`` (``0 <= start < stop <= rows``, ``step >= 1``):
        ``gather_rows(np.arange(start, stop, step))`` without an index map to build and check — an index part
        is a view of its columns, a CSR part's row map one ``arange`` (a slice of a vectorized program)."""
        if not (0 <= start < stop <= self.rows and step >= 1):
            raise IndexError(f"rows {start}:{stop}:{step} of a value with {self.rows} rows")
        count = (stop - start + step - 1) // step
        if count == self.rows:
            return self
        if self.is_empty:
            return Deps.empty(count, self.n)
        parts: list = []
        for p in self.parts:
            if isinstance(p, IndexPart):
                parts.append(IndexPart(p.cols[start:stop] if step == 1 else p.cols[start:stop:step].copy()))
            elif p.rowmap is None:
                parts.append(CsrPart(p.base, np.arange(start, stop, step, dtype=np.int64)))
            else:
                rowmap = p.rowmap[start:stop] if step == 1 else p.rowmap[start:stop:step].copy()
                parts.append(CsrPart(p.base, rowmap))
        return Deps(count, self.n, parts)

    def mask_rows(self, keep) -> "Deps":
        """Drop: rows where ``keep`` is False become empty (a zero derivative there)."""
        keep = np.asarray(keep, dtype=bool).ravel()
        if keep.all() or self.is_empty:
            return self
        if not keep.any():
            return Deps.empty(self.rows, self.n)
        return self.gather_rows(np.where(keep, np.arange(self.rows, dtype=np.int64), -1))

    @staticmethod
    def union(*items: "Deps", eager: bool = True) -> "Deps":
        """Join ``S_a ∨ S_b ∨ …`` of values of the same number of rows (elementwise ops).

        Dispatches over :data:`UNION_ROUTES`: two values of the row lane take one set union; otherwise the
        routes of the operands' row count are tried in order, on the values, then on their distinct parts.  A
        small value's union (at most :data:`SMALL_ROWS` rows) is materialized at once unless ``eager`` is False:
        the second-order walk adds a product's pair term to its first-order rows lazily, and the op that reads
        them next materializes both in one union instead of two."""
        if len(items) == 2:
            joined = pair_union(items[0], items[1])
            if joined is not None:
                return joined
        values, trivial = _union_operands(items)
        if trivial is not None:
            return trivial
        rows, n = values[0].rows, values[0].n
        value_routes, part_routes = UNION_ROUTES[rows == 1]
        for route in value_routes:
            out = route(values, n)
            if out is not None:
                return out
        parts = distinct_parts(values)
        for route in part_routes:
            out = route(parts, rows, n, eager)
            if out is not None:
                return out
        raise AssertionError("the lazy union answers every union")  # pragma: no cover

    @staticmethod
    def vstack(items: Sequence["Deps"]) -> "Deps":
        """Rows of several values one after the other (a concatenation along the outermost dimension).

        Lazy: nothing is copied until a move needs the parts — then part ``j`` of every operand shares one
        stacked part (an operand with fewer parts contributes empty rows; index parts stay index parts) — or
        until :meth:`to_csr`, which writes every item's rows straight into one output.
        """
        items = list(items)
        if not items:
            raise ValueError("vstack of nothing")
        n = items[0].n
        total = sum(d.rows for d in items)
        if all(d.is_empty for d in items):
            return Deps.empty(total, n)
        if len(items) == 1:
            return items[0]
        # (a scalar of the lane is one CSR part, which the one compact move, the runs' stack, declines: asking
        # would build that part)
        if "vstack" in COMPACT_MOVES and not any(d._row is not None for d in _stack_leaves(items)):
            compact = COMPACT_MOVES["vstack"](items)
            if compact is not None:
                return compact
        out = Deps(total, n)
        out._parts = None
        out._stack = tuple(items)
        return out

    def reduce_all(self) -> "Deps":
        """One row: the union of every row (the full reduction), in O(entries + n) with a mark vector.

        Reads the parts directly, so nothing of size ``rows × n`` is materialized: index parts contribute
        their columns, CSR parts the entries of the base rows their row map reaches."""
        n = self.n
        if not self.parts:
            return Deps.empty(1, n)
        parts = expand_group_parts(self.parts)  # (a lazy group union: the source rows its groups reach)
        if n > SPARSE_REDUCE_COLUMNS and n > 16 * sum(len(p.cols) if isinstance(p, IndexPart) else p.base.nnz
                                                      for p in parts):
            return self._reduce_all_sorted(parts)
        mark = np.zeros(n + 1, bool)  # (one flag more, at ``-1``: an index part's "none" lands there)
        index_cols = [p.cols for p in parts if type(p) is IndexPart]
        if index_cols:  # (one scatter for every index part: a second-order value holds several)
            mark[index_cols[0] if len(index_cols) == 1 else np.concatenate(index_cols)] = True
        for p in parts:
            if isinstance(p, IndexPart):
                continue
            if p.rowmap is None:
                mark[p.base.indices] = True
            else:
                rows = p.base.shape[0]
                used = np.zeros(rows + 1, bool)  # (a row map's ``-1`` lands on the extra flag)
                used[p.rowmap] = True
                mark[p.base.indices[np.repeat(used[:rows], np.diff(p.base.indptr))]] = True
        cols = mark[:n].nonzero()[0]
        return Deps(1, n, [CsrPart(make_csr(np.array([0, len(cols)], np.int64), cols, 1, n))] if len(cols) else [])

    def _reduce_all_sorted(self, parts: Sequence[IndexPart | CsrPart]) -> "Deps":
        """:meth:`reduce_all` of ``parts`` (the value's, group unions expanded) by sorting the entries: for column
        spaces too wide for a mark vector (the second-order lattice's ``n + n²`` pair columns,
        :mod:`~stablehlo_sparsity.analysis.second_order`)."""
        n = self.n
        # every part's columns go straight into one buffer (no list of copies to concatenate: at 10⁷ entries
        # each copy is 80 MB of fresh pages)
        sources: list = []
        for p in parts:
            if isinstance(p, IndexPart):
                sources.append(p.cols)  # (its "none", -1, is dropped below, once for every part)
                continue
            if p.rowmap is not None:
                used = np.zeros(p.base.shape[0], bool)
                rm = p.rowmap
                used[rm[rm >= 0]] = True
                if not used.all():
                    sources.append(p.base.indices[np.repeat(used, np.diff(p.base.indptr))])
                    continue
            # every base row reached (no row map, a slice's or a permutation's map): all entries
            sources.append(p.base)
        arrays = [src if isinstance(src, np.ndarray) else src.indices for src in sources]
        c = None
        for distinct in WIDE_DISTINCT_OF_ARRAYS:
            c = distinct(arrays, n)
            if c is not None:
                break
        if c is None:
            c = _distinct_of_buffer(sources, arrays, any(isinstance(p, IndexPart) for p in parts), n)
        return Deps(1, n, [CsrPart(make_csr(np.array([0, len(c)], np.int64), c, 1, n))] if len(c) else [])

    def broadcast_row(self, rows: int) -> "Deps":
        """A one-row lattice repeated ``rows`` times (a scalar broadcast)."""
        if self.rows != 1:
            raise ValueError("broadcast_row needs a single row")
        return self.gather_rows(np.zeros(rows, np.int64))


def _distinct_of_buffer(sources: list, arrays: list, has_index_part: bool, n: int) -> np.ndarray:
    """Sorted distinct columns of ``sources`` (index parts' columns and CSRs, ``arrays`` their column arrays) copied
    into one buffer — CSRs entry-major (:func:`_entry_major`) — and handed to :data:`WIDE_DISTINCT`, else sorted."""
    sizes = [len(a) for a in arrays]
    flat = np.empty(sum(sizes), np.int64)
    at = 0
    for src, size in zip(sources, sizes):
        if isinstance(src, np.ndarray):
            flat[at:at + size] = src
        else:
            _entry_major(src, flat[at:at + size])
        at += size
    if len(flat) and has_index_part and np.min(flat) < 0:
        flat = flat[flat >= 0]  # (only an index part holds -1: a CSR part's columns need no scan)
    for distinct in WIDE_DISTINCT:
        c = distinct(flat, n, overwrite=True)  # (``flat`` is this call's own array)
        if c is not None:
            return c
    return _sorted_unique(flat)


def _entry_major(m: sp.csr_array, out: np.ndarray) -> None:
    """The columns of a CSR into ``out`` (``int64``, ``nnz`` long), in an order that keeps them in few sorted
    runs: rows of one length ``L`` (an elementwise op's pair rows) are read entry-major — the first entry of
    every row, then the second … — since entry ``j`` of consecutive stencil rows increases with the row, which
    gives ``L`` sorted runs where the row-major order has one per row.  Rows of up to
    :data:`ENTRY_MAJOR_LENGTHS` lengths (a stencil's rows, and the shorter rows at its boundary) are read so
    group by group, each group's rows in order: ``Σ L`` runs.  Other CSRs: row-major, as stored.  (Only the
    order changes: the sorted :meth:`Deps.reduce_all` wants the set of columns.)"""
    k = m.shape[0]
    ind = m.indices
    if k < 2 or len(ind) < 2 * k:
        out[:] = ind
        return
    ptr = m.indptr
    if not len(ind) % k:
        length = len(ind) // k
        if np.array_equal(ptr[::max(1, k // 64)], np.arange(0, k + 1, max(1, k // 64)) * length) and \
                np.all(np.diff(ptr) == length):
            out.reshape(length, k)[...] = ind.reshape(k, length).T
            return
    lengths = np.diff(ptr)
    present = np.flatnonzero(np.bincount(lengths))
    if len(present) > ENTRY_MAJOR_LENGTHS:
        out[:] = ind
        return
    at = 0
    for length in present.tolist():
        if length == 0:
            continue
        rows = np.flatnonzero(lengths == length)
        if rows[-1] - rows[0] + 1 == len(rows):     # one range of rows (a stencil's interior): a view
            block = ind[ptr[rows[0]]:ptr[rows[-1] + 1]].reshape(len(rows), length)
        else:
            block = ind[ptr[rows][:, None] + np.arange(length, dtype=ptr.dtype)[None, :]]
        out[at:at + block.size].reshape(length, len(rows))[...] = block.T
        at += block.size


#: :func:`_entry_major` reads rows of up to this many distinct lengths entry-major, group by group.
ENTRY_MAJOR_LENGTHS = 8


def is_arange(idx: np.ndarray) -> bool:
    if len(idx) == 0:
        return True
    if idx[0] != 0 or idx[-1] != len(idx) - 1:
        return False
    if len(idx) <= 2:
        return True
    return bool(np.all(np.diff(idx) == 1))


# ------------------------------------------------------------------------------------------------ union routes
def _union_operands(items: Sequence[Deps | None]) -> tuple[list[Deps], Deps | None]:
    """The non-empty operands of a union (``None`` items skipped, shapes checked), and the union itself when it
    is trivial: every operand empty (the first), or every non-empty operand one and the same value.  (One pass:
    this runs for every union of three or more scalars of a written-out program.)"""
    vals = [d for d in items if d is not None]
    if not vals:
        raise ValueError("union of nothing")
    rows, n = vals[0].rows, vals[0].n
    nonempty: list[Deps] = []
    same = True
    for d in vals:
        if d.rows != rows or d.n != n:
            raise ValueError(f"union of mismatched lattices {(d.rows, d.n)} vs {(rows, n)}")
        if not d.is_empty:
            if nonempty and d is not nonempty[0]:
                same = False
            nonempty.append(d)
    if not nonempty:
        return nonempty, vals[0]
    return nonempty, nonempty[0] if same else None


def _lane_route(values: Sequence[Deps], n: int) -> Deps | None:
    """One-row values that are cheap as sets: their union in the row lane (:mod:`~.representations.row_lane`)."""
    lane = _row_lane_union(values)
    return None if lane is None else Deps._of_row(n, lane)


def _one_row_route(parts: list, rows: int, n: int, eager: bool) -> Deps | None:
    """One-row index and CSR parts past the lane: straight to their one-row CSR
    (:func:`~.representations.small_unions._scalar_union`) — what materializing the lazy union would do, without
    the compact-move and lazy-union rounds."""
    if len(parts) < 2 or not all(type(p) is IndexPart or type(p) is CsrPart for p in parts):
        return None
    row = _scalar_union(parts, n)
    return None if row is None else Deps._materialized(row)


def _compact_route(parts: list, rows: int, n: int, eager: bool) -> Deps | None:
    """Several parts the registered compact move keeps as one part (run-length rows: :mod:`.runs`)."""
    if len(parts) < 2 or "union" not in COMPACT_MOVES:
        return None
    part = COMPACT_MOVES["union"](parts, rows, n, False)
    return None if part is None else Deps(rows, n, [part])


def _lazy_route(parts: list, rows: int, n: int, eager: bool) -> Deps:
    """The general union: the parts as a lazy union, materialized at once when
    :func:`~.representations.lazy_parts.materialize_now` says so (many parts; a small value)."""
    out = Deps(rows, n, parts)
    if materialize_now(parts, rows, eager):
        out.to_csr()
    return out


#: :meth:`Deps.union`'s routes by ``rows == 1``: ``(value routes, part routes)``, tried in order until one
#: answers.  A value route reads the operands (``fn(values, n) -> Deps | None``: the row lane must see the sets
#: before any parts are built), a part route their distinct parts (``fn(parts, rows, n, eager) -> Deps |
#: None``); the last, the lazy union, always answers.
UNION_ROUTES: dict = {
    True: ((_lane_route,), (_one_row_route, _compact_route, _lazy_route)),
    False: ((), (_compact_route, _lazy_route)),
}

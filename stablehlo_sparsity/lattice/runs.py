"""Run-length rows: index sets that are a few intervals of columns per row.

A stencil applied ``k`` times — explicit time stepping, a smoother, a loop that rolls its carry — makes every
row depend on a band of ``2k + 1`` consecutive inputs: ``O(k)`` columns per row, but only one or two
*intervals* (two where a periodic band wraps around).  Kept as CSR, each step of such a loop rewrites the whole
band (a cost of iterations × pattern); kept as intervals, a step costs the same whatever the band's width::

    rows as runs [start, end):        row 0: [0, 3) ∪ [9, 10)       = {0, 1, 2, 9}
    union with {3} and {8}:           row 0: [0, 4) ∪ [8, 10)       (touching runs merge)

:class:`RunPart` is a part of :class:`~.core.Deps` (a :class:`~.core.CsrPart` whose CSR is built only when a
move needs it), so every move accepts it.  Row maps (``gather_rows``, ``mask_rows``) move its runs,
:func:`stack_runs` stacks them (``vstack``: concatenations), and :func:`compact_union` — both registered
in :data:`~.core.COMPACT_MOVES` by the package's ``__init__`` — unions runs and index parts into runs again,
in ``O(rows × runs)``, independent of the band's width.  A union is kept as runs only while that is compact: at most
:data:`MAX_RUNS` runs per row and no more run slots than nonzeros; otherwise it becomes CSR.

Runs are canonical (per row: sorted, disjoint, not touching; unused slots ``[n, n)`` at the end; no slot
column that is unused in every row), so two run parts hold the same sets iff their arrays are equal
(:func:`same_runs`), which loops use to compare carries without materializing them.
"""

from __future__ import annotations

import weakref

import numpy as np
import scipy.sparse as sp

from ..dtypes import index_dtype
from .core import SMALL_ROWS, CsrPart, Deps, IndexPart, check_nnz, gather_csr_rows, make_csr

__all__ = ["RunPart", "MAX_RUNS", "compact_union", "stack_runs", "merge_runs", "compacted", "csr_runs", "same_runs",
           "runs_of", "cheap_nnz", "deps_equal"]

#: Most runs per row a :class:`RunPart` keeps (wider unions become CSR).
MAX_RUNS = 64

#: Parts a merged run part remembers containing.
MAX_COVERS = 8


class RunPart(CsrPart):
    """Row ``i`` depends on the columns ``⋃_j [starts[j, i], ends[j, i])`` (canonical, see the module
    docstring).  Slot-major ``(runs, rows)`` arrays: every move works on whole slot columns at once.  A
    :class:`CsrPart` without a row map whose ``base`` is built on first use."""

    starts: np.ndarray
    ends: np.ndarray
    n: int
    covers: tuple
    _csr: sp.csr_array | None
    _nnz: int | None

    def __init__(self, starts: np.ndarray, ends: np.ndarray, n: int, covers: tuple = ()):
        object.__setattr__(self, "starts", starts)
        object.__setattr__(self, "ends", ends)
        object.__setattr__(self, "n", int(n))
        object.__setattr__(self, "_csr", None)
        object.__setattr__(self, "_nnz", None)
        # weak references to parts merged into this one (so contained in it): a later union with one of
        # them is this part itself, without a merge — ``u + dt·(roll(u) − 2u + roll(u)) − dt·u³`` merges
        # twice, not four times
        object.__setattr__(self, "covers", covers)

    def contains_part(self, other) -> bool:
        return any(r() is other for r in self.covers)

    # ------------------------------------------------------------------ the CsrPart interface
    @property
    def base(self) -> sp.csr_array:
        return self.to_csr()

    @property
    def rowmap(self):
        return None

    def to_csr(self) -> sp.csr_array:
        if self._csr is None:
            object.__setattr__(self, "_csr", _runs_to_csr(self.starts, self.ends, self.n))
        return self._csr

    def gather(self, idx: np.ndarray, has_neg: bool = True) -> "RunPart":
        if not has_neg:
            return RunPart(self.starts[:, idx], self.ends[:, idx], self.n)
        ok = idx >= 0
        safe = np.where(ok, idx, 0)
        return _canonical(np.where(ok, self.starts[:, safe], self.n), np.where(ok, self.ends[:, safe], self.n),
                          self.n)

    def nnz_upper(self) -> int:
        return self.nnz

    @property
    def nnz(self) -> int:
        nnz = self._nnz
        if nnz is None:
            nnz = int((self.ends - self.starts).sum(dtype=np.int64))
            object.__setattr__(self, "_nnz", nnz)
        return nnz

    @property
    def rows(self) -> int:
        return self.starts.shape[1]

    def __repr__(self) -> str:
        return f"RunPart(rows={self.rows}, runs per row={self.starts.shape[0]}, n={self.n})"


def _canonical(starts, ends, n) -> RunPart:
    """Drop trailing slots unused in every row (after a gather some may be)."""
    k = starts.shape[0]
    while k and not (starts[k - 1] < n).any():
        k -= 1
    if k < starts.shape[0]:
        starts, ends = starts[:k], ends[:k]
    return RunPart(starts, ends, n)


def _runs_to_csr(starts: np.ndarray, ends: np.ndarray, n: int) -> sp.csr_array:
    """Every run written out: ``O(nnz)``, sorted by construction (runs are sorted and disjoint)."""
    rows = starts.shape[1]
    lengths = (ends - starts).T.astype(np.int64)           # (rows, runs): row-major order of the output
    indptr = np.zeros(rows + 1, np.int64)
    np.cumsum(lengths.sum(axis=1), out=indptr[1:])
    total = int(indptr[-1])
    check_nnz(total)
    flat_len = lengths.ravel()
    live = flat_len > 0
    run_len = flat_len[live]
    run_start = starts.T.ravel()[live].astype(np.int64, copy=False)
    first = np.zeros(len(run_len) + 1, np.int64)
    np.cumsum(run_len, out=first[1:])
    cols = np.arange(total, dtype=np.int64) - np.repeat(first[:-1] - run_start, run_len)
    return make_csr(indptr, cols, rows, n)


def runs_of(part, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(starts, ends)`` slot-major arrays of any part, or ``None`` when a CSR part has rows of more than
    :data:`MAX_RUNS` runs."""
    if isinstance(part, RunPart):
        return part.starts, part.ends
    if isinstance(part, IndexPart):
        c = part.cols
        return np.where(c >= 0, c, n)[None, :], np.where(c >= 0, c + 1, n)[None, :]
    base = csr_runs(part.base, n)
    if base is None or part.rowmap is None:
        return base
    rm = part.rowmap
    ok = rm >= 0
    safe = np.where(ok, rm, 0)
    return np.where(ok, base[0][:, safe], n), np.where(ok, base[1][:, safe], n)


def csr_runs(m: sp.csr_array, n: int):
    """The runs of every row of a canonical CSR matrix (slot-major), ``None`` past :data:`MAX_RUNS` runs in a
    row.  ``O(nnz)``; cached on the matrix, which the row maps of many parts share."""
    cached = getattr(m, "_runs_cache", False)
    if cached is not False:
        return cached
    rows = m.shape[0]
    indptr = np.asarray(m.indptr, np.int64)
    idx = np.asarray(m.indices, np.int64)
    dt = index_dtype(n + 1)
    out = None
    if len(idx) == 0:
        out = (np.full((0, rows), n, dt), np.full((0, rows), n, dt))
    else:
        begin = np.ones(len(idx), bool)
        begin[1:] = idx[1:] != idx[:-1] + 1
        lengths = np.diff(indptr)
        begin[indptr[:-1][lengths > 0]] = True            # a row's first entry begins a run
        last = np.empty(len(idx), bool)
        last[:-1] = begin[1:]
        last[-1] = True
        row_of = np.repeat(np.arange(rows, dtype=np.int64), lengths)[begin]
        counts = np.bincount(row_of, minlength=rows)
        r = int(np.max(counts))
        if r <= MAX_RUNS:
            slot = np.arange(len(row_of)) - np.repeat(np.cumsum(counts) - counts, counts)
            starts = np.full((r, rows), n, dt)
            ends = np.full((r, rows), n, dt)
            starts[slot, row_of] = idx[begin]
            ends[slot, row_of] = idx[last] + 1
            out = (starts, ends)
    try:
        m._runs_cache = out
    except AttributeError:  # pragma: no cover - a matrix type without a __dict__
        pass
    return out


def _batcher(w: int) -> list[tuple[int, int]]:
    """Batcher's odd-even merge sort: compare-exchange pairs sorting ``w`` wires (a power of two)."""
    pairs = []
    p = 1
    while p < w:
        k = p
        while k >= 1:
            for j in range(k % p, w - k, 2 * k):
                for i in range(min(k, w - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p):
                        pairs.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return pairs


#: Sorting networks by wire count (powers of two up to 8; wider merges sort rows with NumPy).
_NETWORKS = {1 << k: _batcher(1 << k) for k in range(4)}

#: Most run slots one merge takes (e.g. 24 parts of 4 runs); past it a union stays lazy or becomes CSR.
MAX_MERGE_SLOTS = 128

#: Unions of at most this many run and index parts stay lazy.  Merging two parts at once is cheaper than
#: merging many later: a merge costs a fixed number of NumPy calls per slot, and a row map applied to a lazy
#: union is applied to every part of it.
LAZY_RUN_PARTS = 1

#: Rows sampled to decide whether a union of index or CSR parts is worth keeping as runs.
SAMPLE_ROWS = 256
_LOW32 = np.int64(0xFFFFFFFF)

#: Column spaces at least this wide are never kept as runs (the second-order lattice's ``n + n²`` columns):
#: :func:`merge_runs` packs a run's start and end into one ``int64`` key.
PACKED_COLUMNS = 1 << 31


def merge_runs(pieces: list[tuple[np.ndarray, np.ndarray]], rows: int, n: int):
    """Union of slot-major run arrays (each ``(r_i, rows)``): ``(starts, ends, nnz)``, canonical; ``None``
    past :data:`MAX_MERGE_SLOTS` slots.

    Vectorized over rows, one slot column at a time: a sorting network orders each row's runs by
    ``(start, end)`` (packed in one ``int64`` key), then a run begins where its start lies beyond every
    earlier end (a running maximum), and ends at the running maximum of its group's last slot.  The cost is
    ``O(rows × slots · log² slots)``, independent of how many columns the runs cover."""
    dt = index_dtype(n + 1)
    keys = [(s.astype(np.int64) << 32) | e for S, E in pieces for s, e in zip(S, E)]
    w = len(keys)
    if w > MAX_MERGE_SLOTS:
        return None
    if w == 0 or rows == 0:
        return np.full((0, rows), n, dt), np.full((0, rows), n, dt), 0
    width = 1
    while width < w:
        width *= 2
    if width <= 8:
        if width > w:
            empty = np.int64((int(n) << 32) | int(n))
            keys += [np.full(rows, empty, np.int64)] * (width - w)
        for i, j in _NETWORKS[width]:
            lo = np.minimum(keys[i], keys[j])
            keys[j] = np.maximum(keys[i], keys[j])
            keys[i] = lo
    else:  # many slots: NumPy's row sort on a (rows, slots) matrix beats a deep network
        mat = np.stack(keys, axis=1)
        mat.sort(axis=1)
        keys = list(np.ascontiguousarray(mat.T))
    S = [k >> 32 for k in keys[:w]]                       # the padding sorted last: drop it
    E = [k & _LOW32 for k in keys[:w]]
    # Empty slots [n, n) sort after every run of their row; their end n may raise the running maximum
    # only past the row's last run, where nothing reads it.
    live = [S[0] < E[0]]
    begins, reach = [live[0]], [E[0]]
    cont: list = [None]
    for c in range(1, w):
        live.append(S[c] < E[c])
        b = live[c] & (S[c] > reach[-1])
        begins.append(b)
        cont.append(live[c] & ~b)                         # continues the group of the slot before
        reach.append(np.maximum(reach[-1], E[c]))
    count = begins[0].astype(np.int16 if w < 32000 else np.int64)
    out = []
    for c in range(w):
        if c:
            count = count + begins[c]
        last = live[c] & ~cont[c + 1] if c + 1 < w else live[c]
        out.append((c, count - 1, last))
    r_out = int(count.max())
    out_s: np.ndarray = np.full((r_out, rows), n, dt)
    out_e: np.ndarray = np.full((r_out, rows), n, dt)
    for c, slot, last in out:
        r = np.flatnonzero(begins[c])
        out_s[slot[r], r] = S[c][r]
        r = np.flatnonzero(last)
        out_e[slot[r], r] = reach[c][r]
    nnz = int((out_e - out_s).sum(dtype=np.int64))
    return out_s, out_e, nnz


#: A union of at most this many entries stays CSR (runs save memory on large values; on small ones the sample
#: that decides costs more than it can save).
SMALL_RUNS = 4096


def compact_union(parts, rows: int, n: int, materializing: bool = False):
    """The compact union of :meth:`Deps.union` and :meth:`Deps.to_csr` (:data:`~.core.COMPACT_MOVES`).

    A union that involves a :class:`RunPart` is merged into runs at once (cheap, and later moves then touch
    one part).  A union of index and CSR parts only, when it is being materialized anyway, becomes runs if
    a sample of its rows says runs are at least twice as compact as the nonzeros (a widening band: yes; a
    2-D stencil: no).  Returns the single part of the union, or ``None`` to leave it as it is."""
    if n >= PACKED_COLUMNS:  # merge_runs packs (start, end) into one int64: columns must fit in 31 bits
        return None
    has_run = any(isinstance(p, RunPart) for p in parts)
    if has_run:
        parts = _uncovered(parts)
        if len(parts) == 1:
            return parts[0]
        if not materializing and _lazy_runs(parts):
            return None  # a few parts stay a lazy union: merged when more arrive, or when compared
    elif not _worth_runs(parts, rows, n, materializing):
        return None
    pieces: list = [runs_of(p, n) for p in parts]
    if any(p is None for p in pieces):
        return None
    merged = merge_runs(pieces, rows, n)
    if merged is None:  # too many slots to merge as runs
        return None
    return _merged_part(merged, parts, rows, n, has_run)


def _uncovered(parts) -> list:
    """The parts no run part among them contains (a run part remembers the parts merged into it)."""
    return [p for p in parts if not any(isinstance(q, RunPart) and q is not p and q.contains_part(p) for q in parts)]


def _lazy_runs(parts) -> bool:
    """A union of at most :data:`LAZY_RUN_PARTS` run and index parts: left lazy until more arrive."""
    return len(parts) <= LAZY_RUN_PARTS and all(isinstance(p, (RunPart, IndexPart)) for p in parts)


def _worth_runs(parts, rows: int, n: int, materializing: bool) -> bool:
    """Whether a union of index and CSR parts only is kept as runs: when it is materialized anyway, is larger
    than :data:`SMALL_ROWS` rows and :data:`SMALL_RUNS` entries, and a sample of its rows looks compact as runs."""
    return (materializing and rows > SMALL_ROWS and sum(p.nnz_upper() for p in parts) > SMALL_RUNS
            and _sample_says_runs(parts, rows, n))


def _merged_part(merged, parts, rows: int, n: int, has_run: bool):
    """The part of a merged union: a :class:`RunPart` while runs are compact (at most :data:`MAX_RUNS` a row, no
    more run slots than nonzeros), else its CSR part (a union with runs) or ``None`` (leave it as it is)."""
    s, e, nnz = merged
    r_out = s.shape[0]
    slots = 2 * rows * r_out  # two integers per run slot, against one per nonzero in CSR
    if r_out <= MAX_RUNS and slots <= nnz + rows:
        covers = [weakref.ref(p) for p in parts]
        for p in parts:
            if isinstance(p, RunPart):
                covers.extend(r for r in p.covers if r() is not None)
        part = RunPart(s, e, n, tuple(covers[:MAX_COVERS]))
        object.__setattr__(part, "_nnz", nnz)
        return part
    return CsrPart(_runs_to_csr(s, e, n)) if has_run else None


def _sample_says_runs(parts, rows: int, n: int) -> bool:
    """Whether the union of ``parts`` looks at least twice as compact as runs, judged on a few rows."""
    sample = np.unique(np.linspace(0, rows - 1, min(rows, SAMPLE_ROWS)).astype(np.int64))
    pieces: list = []
    for p in parts:
        if isinstance(p, IndexPart):
            pieces.append(runs_of(IndexPart(p.cols[sample]), n))
        else:
            m = p.to_csr() if p.rowmap is None else None
            m = gather_csr_rows(m if m is not None else p.base, sample if p.rowmap is None else p.rowmap[sample])
            piece = csr_runs(m, n)
            if piece is None:
                return False
            pieces.append(piece)
    merged = merge_runs(pieces, len(sample), n)
    if merged is None:
        return False
    s, _, nnz = merged
    return 4 * len(sample) * s.shape[0] <= nnz


def stack_runs(items):
    """Rows of several values one after the other (:meth:`Deps.vstack`), kept as runs when some item is a
    run part and every item is runs or index parts; ``None`` otherwise."""
    n = items[0].n
    has_run = False
    for d in items:
        for p in d.leaf_parts():  # (a lazy vstack is looked into, not built)
            if isinstance(p, RunPart):
                has_run = True
            elif not isinstance(p, IndexPart):
                return None
    if not has_run:
        return None
    # Part j of every item goes into layer j (an item with fewer parts leaves empty rows there): the result
    # is a lazy union of stacked layers, merged by the next union that needs it.
    layers = []
    dt = index_dtype(n + 1)
    total = sum(d.rows for d in items)
    for j in range(max(len(d.parts) for d in items)):
        pieces = [runs_of(d.parts[j], n) if j < len(d.parts) else None for d in items]
        width = max(p[0].shape[0] for p in pieces if p is not None)
        starts = np.full((width, total), n, dt)
        ends = np.full((width, total), n, dt)
        at = 0
        for d, p in zip(items, pieces):
            if p is not None:
                w = p[0].shape[0]
                starts[:w, at:at + d.rows] = p[0]
                ends[:w, at:at + d.rows] = p[1]
            at += d.rows
        layers.append(_canonical(starts, ends, n))
    return Deps(total, n, layers)




# ---------------------------------------------------------------------- cheap queries for loops
def same_runs(a: RunPart, b: RunPart) -> bool:
    return a is b or (a.n == b.n and a.starts.shape == b.starts.shape and np.array_equal(a.starts, b.starts)
                      and np.array_equal(a.ends, b.ends))


def compacted(d: Deps) -> Deps:
    """``d`` with a lazy union of run parts merged into one run part, in place (the same sets, as
    :meth:`Deps.to_csr` keeps its materialized form); other values unchanged."""
    if len(d.parts) > 1 and any(isinstance(p, RunPart) for p in d.parts):
        part = compact_union(d.parts, d.rows, d.n, True)
        if isinstance(part, RunPart):
            d.parts = (part,)
    return d


def _single_run_part(d: Deps):
    compacted(d)
    return d.parts[0] if len(d.parts) == 1 and isinstance(d.parts[0], RunPart) else None


def cheap_nnz(d: Deps) -> int:
    """``d.nnz`` without writing out a run part's columns."""
    r = _single_run_part(d)
    return r.nnz if r is not None else d.nnz


def deps_equal(a: Deps, b: Deps) -> bool:
    """``a == b``, comparing run parts as runs (no materialization) when both are one run part."""
    if a is b:
        return True
    if (a.rows, a.n) != (b.rows, b.n):
        return False
    if a.is_empty and b.is_empty:
        return True
    if a.is_empty or b.is_empty:
        return cheap_nnz(a) == 0 and cheap_nnz(b) == 0
    if len(a.parts) == len(b.parts) and all(p is q for p, q in zip(a.parts, b.parts)):
        return True
    ra, rb = _single_run_part(a), _single_run_part(b)
    if ra is not None and rb is not None:
        return same_runs(ra, rb)
    return a == b

"""Sorted distinct columns of second-order rows by marks on a few diagonals, read where the rows lie
(:func:`distinct_by_marks`): a compiled kernel with a C twin.

The pairs ``{u, v}`` (codes ``n + u·n + v``, :mod:`.encoding`) of a local objective lie on a few diagonals
``d = v - u``: a 1-D stencil's band ``0 … b``, a 2-D stencil's ``0, 1, side, side ± 1``.  Their union (a sum's
reduction of millions of pair rows) is then a set of ``(u, rank of d)`` marks: one pass over the codes, one
mark each, and the marks read back in order are the sorted distinct codes.  The pass reads every part's columns
where they lie — no buffer of all the entries (at 1.5·10⁷ codes, 120 MB of fresh pages), no transposition into
sorted runs, no sort; a sort of those codes and its buffers cost more than the pass, and their page faults made the
time of one call vary by 2×.

Which diagonals: those of one code in :data:`SAMPLE`, drawn at random positions.  A code on another diagonal (a
periodic stencil's wrap-around pair, which a sample may miss) is set aside, up to one in :data:`SPILL_FRACTION`,
and merged in sorted; more, or diagonals too many for the marks' budget, and :func:`distinct_by_marks` declines
(``None``) and the caller sorts.
"""

from __future__ import annotations

import numpy as np

from ...kernels.compiled import kernels_start_free, njit

__all__ = ["distinct_by_marks", "codes_of_marks", "columns_of_marks", "MIN_MARK_CODES", "SAMPLE", "SPILL_FRACTION"]

#: Fewer codes than this are left to the caller's sort (the pass's marks cost more to clear and read).
MIN_MARK_CODES = 1 << 14

#: The diagonals marked are those of one code in this many (drawn at random positions).
SAMPLE = 64

#: Codes off the sampled diagonals are set aside up to one in this many (more: :func:`distinct_by_marks` declines).
SPILL_FRACTION = 16

#: Codes off the diagonals are set aside up to ``entries / SPILL_FRACTION`` and at least this many.
SPILL_FLOOR = 1024

#: Status of :func:`_mark_codes`: the codes set aside filled their buffer.
SPILL_FULL = -1

#: Status of :func:`_mark_codes`: a code outside ``[-1, n + n²)`` (never one of the lattice's).
OUT_OF_RANGE = -2


@njit
def _mark_codes(code, n, rank, k, first, mark, spill, at):
    """Marks the columns of ``code``: a first-order column ``c < n`` in ``first[c]``; a pair ``(u, v)`` whose
    ``d = v - u`` has ``rank[d] ≥ 0`` in ``mark[u·k + rank[d]]``; any other pair code into ``spill[at], …``;
    ``-1`` (an index part's "none") is skipped.  Returns the next free slot of ``spill``, :data:`SPILL_FULL` when
    it is full, :data:`OUT_OF_RANGE` for a code outside ``[-1, n + n²)``."""
    end = n + n * n
    ranks = len(rank)
    for i in range(len(code)):
        c = code[i]
        if c < n:
            if c >= 0:
                first[c] = True
            elif c != -1:
                return OUT_OF_RANGE
            continue
        if c >= end:
            return OUT_OF_RANGE
        u = (c - n) // n
        d = c - n - u * n - u
        if d < ranks and rank[d] >= 0:
            mark[u * k + rank[d]] = True
        else:
            if at == len(spill):
                return SPILL_FULL
            spill[at] = c
            at += 1
    return at


#: :func:`columns_of_marks` reads the marks this many at a time (its temporaries are of this size, not the codes').
MARK_CHUNK = 1 << 18


def codes_of_marks(at: np.ndarray, n: int, offsets: np.ndarray, k: int) -> np.ndarray:
    """The pair codes ``n + u·n + u + offsets[r]`` of the marks at ``at = u·k + r`` (``k`` marks a ``u``, one per
    offset of the sorted ``offsets``), written over ``at`` (``int64``, sorted) and returned: code order.  A band
    (``offsets`` = ``0 … k - 1``) is ``u·(n + 1 - k) + at + n``."""
    u = at // k                            # (``//`` by a scalar: NumPy's ``divmod`` has no fast path for one)
    if len(offsets) == k and int(offsets[-1]) == k - 1:
        u *= n + 1 - k
    else:
        at -= u * k
        np.take(offsets, at, out=at)
        u *= n + 1
    at += u
    at += n
    return at


def columns_of_marks(first: np.ndarray | None, mark: np.ndarray, n: int, offsets: np.ndarray, k: int,
                     room: int = 0) -> np.ndarray:
    """The sorted columns the marks hold — the first-order columns ``c`` with ``first[c]``, then the pair codes of
    ``mark`` (:func:`codes_of_marks`) — in one array of exactly their number plus ``room`` entries at its end (left
    for the caller).  The marks are read :data:`MARK_CHUNK` at a time, so nothing of the codes' size is allocated
    but the result: at 3·10⁶ codes, ``flatnonzero`` and the code arithmetic over the whole array wrote 48 MB of
    fresh pages before the result's 24 MB."""
    n_first = 0 if first is None else int(np.count_nonzero(first))
    out = np.empty(n_first + int(np.count_nonzero(mark)) + room, np.int64)
    if first is not None:
        out[:n_first] = np.flatnonzero(first)   # (n booleans: at most n columns)
    at = n_first
    for lo in range(0, len(mark), MARK_CHUNK):
        idx = np.flatnonzero(mark[lo:lo + MARK_CHUNK])
        idx += lo
        out[at:at + len(idx)] = codes_of_marks(idx, n, offsets, k)
        at += len(idx)
    return out


def _sampled_offsets(arrays, n: int) -> np.ndarray:
    """The sorted distinct diagonals ``v - u`` of one pair code in :data:`SAMPLE` of ``arrays``, drawn at random
    positions (a fixed seed): a stride aliases with rows that repeat their codes (dense 8×8 blocks: each of a block's
    rows holds its 36 pairs, and every 64th code saw 9 of them), and the codes of the missed diagonals overflowed
    the spill after a pass that was then thrown away."""
    rng = np.random.default_rng(0)
    sample = np.concatenate([a[rng.integers(0, len(a), len(a) // SAMPLE + 1)] for a in arrays if len(a)]
                            or [np.zeros(0, np.int64)]).astype(np.int64, copy=False)
    code = sample[(sample >= n) & (sample < n + n * n)] - n   # (one out of range is the kernel's to refuse)
    u = code // n
    return np.unique(code - u * n - u)


def distinct_by_marks(arrays, n: int, budget: int) -> np.ndarray | None:
    """The sorted distinct columns of ``arrays`` (each a row's or a part's columns of a second-order lattice over
    ``n`` inputs, any order, ``-1`` allowed for none), by marks on the sampled diagonals (the module docstring), the
    arrays only read; ``None`` when it does not apply: fewer than :data:`MIN_MARK_CODES` codes, the kernel would
    cost numba's start (:func:`~stablehlo_sparsity.kernels.compiled.kernels_start_free`), more than ``budget``
    marks, or too many codes off the sampled diagonals."""
    entries = sum(len(a) for a in arrays)
    if entries < MIN_MARK_CODES or not kernels_start_free():
        return None
    offsets = _sampled_offsets(arrays, n)
    k = max(len(offsets), 1)
    if n * k > budget or (len(offsets) and int(offsets[-1]) >= budget):
        return None
    rank = np.full(int(offsets[-1]) + 1 if len(offsets) else 0, -1, np.int64)
    rank[offsets] = np.arange(len(offsets))
    first = np.zeros(n, bool)
    mark = np.zeros(n * k, bool)
    spill = np.empty(max(entries // SPILL_FRACTION, SPILL_FLOOR), np.int64)
    at = 0
    for a in arrays:
        at = _mark_codes(np.ascontiguousarray(a, np.int64), np.int64(n), rank, np.int64(k), first, mark, spill,
                         np.int64(at))
        if at == OUT_OF_RANGE:
            raise ValueError(f"second-order columns out of range for {n} inputs")
        if at < 0:
            return None
    off = np.unique(spill[:at]) if at else spill[:0]   # (codes no mark holds: disjoint from the marks')
    cols = columns_of_marks(first, mark, n, offsets, k, room=len(off))
    if len(off):
        cols[len(cols) - len(off):] = off
        pairs = cols[int(cols.searchsorted(n)):]   # (the first-order columns, below n, come first)
        pairs.sort(kind="stable")          # (two sorted runs: one merge, in place)
    return cols

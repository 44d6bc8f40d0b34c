"""Column and row coloring from a stream of row blocks, in memory ``O(n + m + window)`` instead of ``O(nnz)``.

The input is what a blocked detection produces: an iterable of ``(r0, block)`` pairs in row order, ``block``
the CSR pattern of rows ``r0 … r0 + rows - 1`` (any SciPy sparse matrix or :class:`SparsityPattern` of shape
``(rows, n)``).  The output is the :class:`~.result.Coloring` that :func:`~.distance2.color_columns` /
:func:`~.distance2.color_rows` return, valid for the whole pattern (:func:`~.check.check_coloring`).

The algorithm, and why.  A partial distance-2 coloring needs each vertex's neighbourhood: a column conflicts
with every column that shares one of its rows, and those rows may arrive in any later block.  Coloring a
column when it is first seen is therefore unsound (a later row can put two columns of one color together,
and fixing that would need rows already discarded).  Coloring on disk (a column→row incidence written in
buckets, then read back per column range) is general but costs a full extra write and read of ``nnz``
indices.  The patterns this is for — PDE stencils, Brusselator-like reaction–diffusion, anything where an
output depends on nearby inputs — are *local*: every column's rows lie within a bounded span.  So:

* each column ``j`` has a *horizon* ``h[j]``, the last row that may hold it.  With a re-iterable source, a first
  pass over the blocks measures it exactly (``h[j]`` = its last row, ``O(n)`` memory); with a one-shot
  iterator the caller promises a ``span`` and ``h[j]`` = first row seen + ``span``;
* a *window* keeps the rows that may still matter: for columns, the rows that hold an uncolored column; for
  rows, the rows that hold a column whose horizon has not passed;
* after each block, the columns whose horizon has passed are *complete* — every row holding them is in the
  window — and are colored greedily (the smallest color not taken in their distance-2 neighbourhood) in
  column order, up to the first column that is not complete yet: two-pass, that is exactly the natural-order
  greedy pass of the in-memory coloring (one-pass, a column first seen late is colored late); for rows, each
  row of the new block is complete on arrival and is colored against the window rows sharing one of its
  columns (the natural order again).

On a stencil the window is the band (``2·(L² + L + 1)`` rows for a 3-D 27-point stencil on ``L³`` points)
plus one block.

Quality.  Two-pass, the colors are those of the in-memory natural-order greedy pass, color for color: the lower
bound on 1-D stencils, on the 2-D 9-point and the 3-D 27-point stencils (9 and 27); 7 on the 2-D 5-point
stencil and 12 on the periodic 2-D Brusselator, where the in-memory ``color_columns`` (DSATUR, then tabu
recoloring over the whole graph) finds 5 and 7.  Those improvements walk the whole graph again and again, which
a stream cannot; a DSATUR order within each block's complete columns was tried and did worse than the natural
order on the stencils (8, 10 and 28 colors), so it is not offered.

Soundness guards.  A column reaching farther than ``max_span`` rows (two-pass mode) would keep the window
open over all of them; it is instead given a color of its own (no other column has it, so no row can hold
two columns of that color) — and for row coloring, every row holding such a column gets a color of its own.
That is sound, costs one color per far column (a dense row needs that many anyway), and is reported in
``order``.  An entry below a column's horizon that breaks the promise — a column seen again more than
``span`` rows after its first row (one-pass), or a second pass that does not match the first — raises
:class:`~stablehlo_sparsity.errors.InputError`: never a coloring that could be wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from ..dtypes import index_dtype
from ..errors import InputError
from ..kernels.compiled import njit
from .kinds import ColoringKind
from .policy import reporter
from .result import Coloring, canonical

__all__ = ["color_columns_streamed", "color_rows_streamed", "stencil27_blocks", "DEFAULT_MAX_SPAN"]

#: Two-pass mode: a column whose rows span more than this many rows gets a color of its own (see above), so the
#: window never holds more than about this many rows plus one block.  A 3-D 27-point stencil on 334³ points
#: spans 2.2·10⁵ rows.
DEFAULT_MAX_SPAN = 1 << 21

_UNCOLORED = -1
_OWN = -2  # a color of its own, numbered after the greedy colors at the end


# ----------------------------------------------------------------------------------------------- kernels
@njit
def _first_last(r0, indptr, indices, first, last):
    """Pass 1: the first and last row of every column (``first`` starts at ``-1``)."""
    for i in range(len(indptr) - 1):
        r = r0 + i
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if first[j] < 0:
                first[j] = r
            last[j] = r


@njit
def _see(r0, indptr, indices, first, horizon, span, lo_bad, m, new):
    """One-pass mode: record the first row of new columns (horizon = first + span) and list them in ``new``;
    check every entry against the horizon (and, two-pass, against the measured first row).  Returns the first
    bad entry's flat position, or -1, and the number of new columns.  ``span < 0``: two-pass (horizons
    already known)."""
    nnew = 0
    for i in range(len(indptr) - 1):
        r = r0 + i
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            if first[j] < 0:
                if span < 0:
                    return p, nnew  # a column the first pass never saw
                first[j] = r
                horizon[j] = min(r + span, m)
                new[nnew] = j
                nnew += 1
            if r > horizon[j] or (lo_bad and r < first[j]):
                return p, nnew
    return -1, nnew


@njit
def _window_rows_by_slot(w_ptr, w_idx, slot, count):
    """For the ``count`` columns that ``slot`` numbers (``slot[j] = t``; ``-1`` elsewhere), the window rows
    holding each, as CSR: rows ``rows[cnt[t]:cnt[t + 1]]`` hold slot ``t``'s column, in window order."""
    cnt = np.zeros(count + 1, np.int64)
    nw = len(w_ptr) - 1
    for i in range(nw):
        for p in range(w_ptr[i], w_ptr[i + 1]):
            t = slot[w_idx[p]]
            if t >= 0:
                cnt[t + 1] += 1
    for t in range(count):
        cnt[t + 1] += cnt[t]
    rows = np.empty(cnt[count], np.int64)
    fill = cnt[:count].copy()
    for i in range(nw):
        for p in range(w_ptr[i], w_ptr[i + 1]):
            t = slot[w_idx[p]]
            if t >= 0:
                rows[fill[t]] = i
                fill[t] += 1
    return cnt, rows


@njit
def _smallest_free(forbidden, s):
    """The smallest color not stamped ``s`` in ``forbidden``; ``len(forbidden)`` when every one is (the
    caller then grows ``forbidden`` and resumes)."""
    c = 0
    while c < len(forbidden) and forbidden[c] == s:
        c += 1
    return c


@njit
def _color_columns_step(w_ptr, w_idx, ready, colors, slot, forbidden, stamp0):
    """Greedy colors for the columns ``ready`` (in that order), whose rows are all in the window ``(w_ptr,
    w_idx)``: each takes the smallest color no column of its rows holds.  ``slot`` (``-1`` everywhere, restored
    on return) maps a column to its place in ``ready``.  Returns the next stamp."""
    nr = len(ready)
    for t in range(nr):
        slot[ready[t]] = t
    cnt, rows = _window_rows_by_slot(w_ptr, w_idx, slot, nr)
    s = stamp0
    for t in range(nr):
        s += 1
        for q in range(cnt[t], cnt[t + 1]):
            i = rows[q]
            for p in range(w_ptr[i], w_ptr[i + 1]):
                c = colors[w_idx[p]]
                if c >= 0:
                    forbidden[c] = s
        c = _smallest_free(forbidden, s)
        if c == len(forbidden):  # out of stamps: the caller grows ``forbidden`` and resumes at ``t``
            for u in range(nr):
                slot[ready[u]] = -1
            return s, t
        colors[ready[t]] = c
    for t in range(nr):
        slot[ready[t]] = -1
    return s, nr


@njit
def _color_rows_step(w_ptr, w_idx, w_color, first_new, own, slot, forbidden, stamp0):
    """Greedy colors for the window rows ``first_new …`` (the new block, in order; ``own[i]``: a color of its
    own): each takes the smallest color no earlier window row sharing a column holds.  ``slot`` is ``-1``
    everywhere (a scratch map from column to its list of window rows; restored on return)."""
    nw = len(w_ptr) - 1
    # columns of the new rows, then for each one the window rows holding it
    ncols = 0
    cols = np.empty(w_ptr[nw] - w_ptr[first_new], np.int64)
    for i in range(first_new, nw):
        for p in range(w_ptr[i], w_ptr[i + 1]):
            j = w_idx[p]
            if slot[j] < 0:
                slot[j] = ncols
                cols[ncols] = j
                ncols += 1
    cnt, rows = _window_rows_by_slot(w_ptr, w_idx, slot, ncols)
    s = stamp0
    for i in range(first_new, nw):
        if own[i - first_new]:
            w_color[i] = _OWN
            continue
        s += 1
        for p in range(w_ptr[i], w_ptr[i + 1]):
            t = slot[w_idx[p]]
            for q in range(cnt[t], cnt[t + 1]):
                c = w_color[rows[q]]
                if c >= 0:
                    forbidden[c] = s
        c = _smallest_free(forbidden, s)
        if c == len(forbidden):  # out of stamps: the caller grows ``forbidden`` and resumes at row ``i``
            for t in range(ncols):
                slot[cols[t]] = -1
            return s, i
        w_color[i] = c
    for t in range(ncols):
        slot[cols[t]] = -1
    return s, nw


@njit
def _rows_with_uncolored(w_ptr, w_idx, colors):
    nw = len(w_ptr) - 1
    keep = np.zeros(nw, np.bool_)
    for i in range(nw):
        for p in range(w_ptr[i], w_ptr[i + 1]):
            if colors[w_idx[p]] == -1:
                keep[i] = True
                break
    return keep


@njit
def _rows_reaching(w_ptr, w_idx, horizon, far, r1):
    """Window rows holding a (not far) column that may appear again at or after row ``r1``; and, for the new
    rows, whether they hold a far column."""
    nw = len(w_ptr) - 1
    keep = np.zeros(nw, np.bool_)
    has_far = np.zeros(nw, np.bool_)
    for i in range(nw):
        for p in range(w_ptr[i], w_ptr[i + 1]):
            j = w_idx[p]
            if far[j]:
                has_far[i] = True
            elif horizon[j] >= r1:
                keep[i] = True
    return keep, has_far


# ----------------------------------------------------------------------------------------------- the stream
def _as_block(item, n: int, expect_r0: int, m: int):
    """``(r0, indptr, indices)`` of one ``(r0, block)`` item, checked: in row order, ``n`` columns, in range."""
    import scipy.sparse as sp

    from .graph import as_csr

    try:
        r0, block = item
    except (TypeError, ValueError):
        raise InputError(f"a row block must be a pair (r0, csr_block), got {type(item).__name__}") from None
    if isinstance(block, (sp.csr_array, sp.csr_matrix)) and block.data.all():
        csr = block  # used as is: the kernels need neither sorted nor unique column indices
    else:
        csr = as_csr(block)
    r0 = int(r0)
    rows, cols = csr.shape
    if cols != n:
        raise InputError(f"the row block at row {r0} has {cols} columns; the pattern has {n}")
    if r0 < expect_r0:
        raise InputError(f"row blocks must come in row order without overlap: a block starts at row {r0}, "
                         f"but rows up to {expect_r0 - 1} were already given")
    if r0 + rows > m:
        raise InputError(f"the row block at row {r0} has {rows} rows; the pattern has only {m}")
    indptr, indices = np.asarray(csr.indptr, np.int64), np.asarray(csr.indices, np.int64)
    if len(indices) and (indices.min() < 0 or indices.max() >= n):  # the kernels index per-column arrays
        raise InputError(f"the row block at row {r0} has a column index outside [0, {n})")
    return r0, indptr, indices, rows


def _iterate(blocks):
    return blocks() if callable(blocks) else iter(blocks)


def _shape(shape) -> tuple[int, int]:
    try:
        m, n = (int(s) for s in shape)
    except (TypeError, ValueError):
        raise InputError(f"shape must be (rows, columns), got {shape!r}") from None
    if m < 0 or n < 0:
        raise InputError(f"shape must be non-negative, got {shape!r}")
    return m, n


class _Horizons:
    """Per column: its first row, its horizon (the last row that may hold it), and whether it is *far* (its own
    color).  Two-pass: measured by a first pass; one-pass: first row + ``span`` as columns appear."""

    def __init__(self, blocks, m: int, n: int, span: int | None, max_span: int, report):
        # int32 per-column arrays while rows fit: they are the O(n) part of the memory
        dtype = index_dtype(m)
        self.m = m
        self.first: np.ndarray = np.full(n, -1, dtype)
        self.span = -1 if span is None else int(span)
        if span is not None:
            if self.span < 0:
                raise InputError(f"span must be a non-negative number of rows, got {span}")
            self.horizon: np.ndarray = np.full(n, -1, dtype)
            self.far = np.zeros(n, np.bool_)
            return
        last: np.ndarray = np.full(n, -1, dtype)
        end = 0
        self.digest = (0, 0)  # (nonzeros, sum of their column indices): the second pass must give the same
        for item in _iterate(blocks):
            r0, indptr, indices, rows = _as_block(item, n, end, m)
            _first_last(r0, indptr, indices, self.first, last)
            end = r0 + rows
            self.digest = (self.digest[0] + len(indices), self.digest[1] + int(indices.sum()))
        self.horizon = last
        self.far = (last - self.first) > int(max_span)
        nfar = int(self.far.sum())
        if nfar:
            report(f"{nfar:,} columns span more than {max_span:,} rows: each gets a color of its own")

    def see(self, r0: int, indptr, indices) -> np.ndarray:
        """Record and check the entries of one block against the horizons; one-pass, return the columns seen
        for the first time (sorted)."""
        new = np.empty(len(indices) if self.span >= 0 else 0, np.int64)
        bad, nnew = _see(r0, indptr, indices, self.first, self.horizon, self.span, self.span < 0, self.m, new)
        if bad < 0:
            return np.sort(new[:nnew])
        j = int(indices[bad])
        row = r0 + int(np.searchsorted(indptr, bad, side="right")) - 1
        if self.span >= 0:
            raise InputError(f"column {j} appears in row {row}, more than span={self.span} rows after its first "
                             f"row {int(self.first[j])}: pass a larger span, or a re-iterable source (a callable "
                             f"returning the blocks) so that the spans are measured")
        raise InputError(f"the second pass over the row blocks differs from the first (column {j} in row {row}): "
                         f"the blocks must be the same each time they are iterated")


class _Stamps:
    """The greedy kernels' ``forbidden`` stamps: one slot per color, grown (doubled) when a vertex needs a color
    beyond them — the number of colors, not the window, sets its size."""

    def __init__(self):
        self.forbidden = np.zeros(64, np.int64)
        self.stamp = 0

    def _grow(self) -> None:
        self.forbidden = np.zeros(2 * len(self.forbidden), np.int64)
        self.stamp = 0

    def color_columns(self, w_ptr, w_idx, ready, colors, slot) -> None:
        while len(ready):
            self.stamp, done = _color_columns_step(w_ptr, w_idx, ready, colors, slot, self.forbidden, self.stamp)
            if done == len(ready):
                return
            ready = ready[done:]
            self._grow()

    def color_rows(self, w_ptr, w_idx, w_color, first_new, own, slot) -> None:
        nw = len(w_ptr) - 1
        while first_new < nw:
            self.stamp, done = _color_rows_step(w_ptr, w_idx, w_color, first_new, own, slot, self.forbidden,
                                                self.stamp)
            if done == nw:
                return
            own = own[done - first_new:]
            first_new = done
            self._grow()


def _complete_prefix(cols: np.ndarray, horizon: np.ndarray, end: int) -> int:
    """How many of ``cols`` (in order) are complete — their horizon is before row ``end`` — before the first
    that is not: coloring stops there, so columns are colored in column order (the natural greedy order of
    the in-memory coloring), not in the order their last rows happen to arrive."""
    width = 4096
    start = 0
    while start < len(cols):
        later = horizon[cols[start:start + width]] >= end
        if later.any():
            return start + int(np.argmax(later))
        start += width
        width *= 2
    return len(cols)


def _window_append(w, r0, indptr, indices):
    """The window ``(row ids, ptr, idx)`` with the rows of one block appended."""
    rows_ids, w_ptr, w_idx = w
    nr = len(indptr) - 1
    return (np.concatenate([rows_ids, np.arange(r0, r0 + nr, dtype=np.int64)]),
            np.concatenate([w_ptr, w_ptr[-1] + indptr[1:]]), np.concatenate([w_idx, indices]))


def _window_keep(w, keep):
    rows_ids, w_ptr, w_idx = w
    lengths = np.diff(w_ptr)[keep]
    starts = w_ptr[:-1][keep]
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    # the kept rows' entries: one gather (a ragged concatenation done with a repeat of offsets)
    pos = np.repeat(starts - ptr[:-1], lengths) + np.arange(ptr[-1], dtype=np.int64)
    return rows_ids[keep], ptr, w_idx[pos]


def _empty_window():
    return np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int64)


def _finish(colors: np.ndarray, side: ColoringKind, shape, order: str, lb: int, nfar_note: str) -> Coloring:
    """The result (``colors`` is reused): colors of their own numbered after the greedy ones."""
    k_local = int(colors.max()) + 1 if len(colors) and colors.max() >= 0 else 0
    colors[colors == _UNCOLORED] = 0  # vertices in no nonzero: any color
    own = np.flatnonzero(colors == _OWN)
    colors[own] = k_local + np.arange(len(own), dtype=np.int32)
    k = k_local + len(own)
    return Coloring(canonical(colors), k, side, shape, order + nfar_note, lb)


def color_columns_streamed(blocks: Iterable | Callable[[], Iterable], shape, *, span: int | None = None,
                           max_span: int = DEFAULT_MAX_SPAN, progress=None) -> Coloring:
    """Partial distance-2 coloring of the columns (columns sharing a row differ) of a pattern given as row
    blocks, in memory ``O(n + window)`` (see the module docstring for the algorithm).

    ``blocks``: ``(r0, csr_block)`` pairs in row order — a re-iterable (a list, a shard directory reader) or a
    callable returning a fresh iterator; it is read twice (the first pass measures each column's rows).
    ``span``: read the blocks once instead, on the promise that every column's rows lie within ``span`` rows
    of its first row (a stencil's band); a broken promise raises :class:`InputError`.  ``shape``: ``(m, n)``.
    ``max_span`` (two-pass): columns reaching farther get a color of their own.  Returns a column
    :class:`Coloring` (``order`` names the streamed greedy order).
    """
    return _color_streamed(blocks, shape, ColoringKind.COLUMN, span, max_span, progress)


def color_rows_streamed(blocks: Iterable | Callable[[], Iterable], shape, *, span: int | None = None,
                        max_span: int = DEFAULT_MAX_SPAN, progress=None) -> Coloring:
    """Partial distance-2 coloring of the rows (rows sharing a column differ) from row blocks; options as for
    :func:`color_columns_streamed` (rows holding a column that reaches farther than ``max_span`` get a color
    of their own)."""
    return _color_streamed(blocks, shape, ColoringKind.ROW, span, max_span, progress)


def _color_streamed(blocks, shape, side: ColoringKind, span, max_span, progress) -> Coloring:
    m, n = _shape(shape)
    if span is None and not callable(blocks) and iter(blocks) is blocks:
        raise InputError("a one-shot iterator of row blocks can be read only once: pass span= (every column's "
                         "rows within span rows of its first), or a callable returning a fresh iterator")
    report = reporter(progress, side.value + "s (streamed)")
    hz = _Horizons(blocks, m, n, span, max_span, report)
    nfar = int(hz.far.sum())
    note = f", {nfar} far columns on colors of their own" if nfar else ""
    order = "streamed natural" + ("" if span is None else f" (span {int(span)})")
    slot: np.ndarray = np.full(n, -1, index_dtype(n))
    stamps = _Stamps()
    window = _empty_window()
    end = 0
    lb = 0
    max_window = 0
    if side == ColoringKind.COLUMN:
        colors = np.full(n, _UNCOLORED, np.int32)
        colors[hz.far] = _OWN
        pending = np.zeros(0, np.int64)
        order_cols = np.flatnonzero((hz.first >= 0) & ~hz.far).astype(slot.dtype)
        next_col = 0
    else:
        colors = np.full(m, _UNCOLORED, np.int32)
        col_count = np.zeros(n, np.int32)
    nblocks = nnz = index_sum = 0
    for item in _iterate(blocks):
        r0, indptr, indices, rows = _as_block(item, n, end, m)
        end = r0 + rows
        nblocks += 1
        nnz += len(indices)
        index_sum += int(indices.sum())
        new = hz.see(r0, indptr, indices)
        window = _window_append(window, r0, indptr, indices)
        w_ids, w_ptr, w_idx = window
        if side == ColoringKind.COLUMN:
            if rows:
                lb = max(lb, int(np.diff(indptr).max()))
            if span is not None:  # one pass: the columns seen and not colored yet
                pending = np.concatenate([pending, new])
                pending.sort()
                q = _complete_prefix(pending, hz.horizon, end)
                ready, pending = pending[:q], pending[q:]
            else:  # two passes: every column that has a nonzero (and is not far), in column order
                q = _complete_prefix(order_cols[next_col:], hz.horizon, end)
                ready = order_cols[next_col:next_col + q]
                next_col += q
            stamps.color_columns(w_ptr, w_idx, ready, colors, slot)
            max_window = max(max_window, len(w_idx))
            window = _window_keep(window, _rows_with_uncolored(w_ptr, w_idx, colors))
        else:
            np.add.at(col_count, indices, 1)
            keep, has_far = _rows_reaching(w_ptr, w_idx, hz.horizon, hz.far, end)
            first_new = len(w_ids) - rows
            w_color = np.concatenate([colors[w_ids[:first_new]], np.full(rows, _UNCOLORED, np.int32)])
            stamps.color_rows(w_ptr, w_idx, w_color, first_new, has_far[first_new:], slot)
            colors[r0:end] = w_color[first_new:]
            max_window = max(max_window, len(w_idx))
            window = _window_keep(window, keep & (w_color != _OWN))
    if span is None and (nnz, index_sum) != hz.digest:
        raise InputError(f"the second pass over the row blocks differs from the first ({nnz:,} nonzeros, "
                         f"{hz.digest[0]:,} before): the blocks must be the same each time they are iterated")
    if side == ColoringKind.COLUMN:
        rest = pending if span is not None else order_cols[next_col:]
        w_ids, w_ptr, w_idx = window
        stamps.color_columns(w_ptr, w_idx, rest, colors, slot)
    if side == ColoringKind.ROW:
        lb = int(np.max(col_count)) if n else 0
    report(f"{nblocks} blocks, largest window {max_window:,} nonzeros")
    if nnz == 0:  # nothing to evaluate, as for the in-memory coloring
        return Coloring(np.zeros(len(colors), np.int32), 0, side, (m, n), "empty", 0)
    return _finish(colors, side, (m, n), order, lb, note)


def stencil27_blocks(L: int, block_rows: int):
    """The pattern of a 3-D 27-point stencil on ``L³`` points (zero Dirichlet boundary: a point's row holds its
    ``3 × 3 × 3`` neighbours that exist), as ``(r0, csr_block)`` pairs of ``block_rows`` rows, built with NumPy
    block by block — a reference source of row blocks (``nnz ≈ 27 L³``; ``1.0·10⁹`` at ``L = 334``).  Returns
    a callable, so the blocks can be read twice."""
    import scipy.sparse as sp

    L, block_rows = int(L), int(block_rows)
    if L < 1 or block_rows < 1:
        raise InputError(f"L and block_rows must be positive, got {L} and {block_rows}")
    n = L ** 3
    offsets = [(da, db, dc) for da in (-1, 0, 1) for db in (-1, 0, 1) for dc in (-1, 0, 1)]  # sorted flat offsets
    dtype = index_dtype(n)

    def block(r0: int) -> sp.csr_array:
        r = np.arange(r0, min(n, r0 + block_rows), dtype=np.int64)
        coord = (r // (L * L), (r // L) % L, r % L)
        cols: np.ndarray = np.empty((len(r), 27), dtype)
        ok = np.empty((len(r), 27), np.bool_)
        for t, d in enumerate(offsets):
            inside = np.ones(len(r), np.bool_)
            for x, dx in zip(coord, d):
                inside &= (x + dx >= 0) & (x + dx < L)
            ok[:, t] = inside
            cols[:, t] = r + (d[0] * L + d[1]) * L + d[2]
        indptr: np.ndarray = np.zeros(len(r) + 1, dtype)
        np.cumsum(ok.sum(axis=1), out=indptr[1:])
        return sp.csr_array((np.ones(int(indptr[-1]), np.bool_), cols[ok], indptr), shape=(len(r), n))

    return lambda: ((r0, block(r0)) for r0 in range(0, n, block_rows))

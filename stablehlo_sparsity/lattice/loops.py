"""Loop moves: iterating a ``while`` body's *summary* instead of the body (§while).

A body summary is the body run once on **symbols**: every element the body reads — of a carried value, of a
value captured from outside, of the slice a scan reads — is a column of its own, so the index set of each
result element names the symbols it reaches.  That is a relation ``R`` (body outputs × symbols).  Every
index-set rule is a union over groups fixed by constants (a row map, a group union, a mask), so with the
same constants one iteration on real index sets is the group union ``S' = R ⊗ S``: row ``e`` of the result
unions the real rows of the symbols ``R[e]`` names::

    R = [{h0, h1, x0}, {h1}]      S(h0) = {0, 1}   S(h1) = {2}   S(x0) = {7}
    R ⊗ S = [{0, 1, 2, 7}, {2}]

The moves here apply such relations, one block of symbols at a time (:class:`Relation`), for any number of
iterations and as cheaply as the structure allows:

* :func:`apply` — one iteration as lattice moves (row maps and group unions: run-length rows stay runs);
* :class:`SmallState` — one iteration for small carries (an RNN's hidden state), each row a sorted array,
  each distinct group of symbols unioned once: a step costs a few NumPy calls, not a few dozen;
* :func:`row_map_power` — a relation where every row reads at most one symbol of the carry (a roll, a
  flip, a permutation of the carry, elementwise ops) is a row map ``P``; ``k`` iterations are ``P^k``,
  by repeated squaring in ``O(rows · log k)``;
* :func:`assemble_writes` — an accumulator written slot by slot (a scan's stacked outputs): every row takes
  the index set of its last write, placed once at the end, in ``O(pattern)``;
* :class:`CycleCheck` — Brent's cycle detection on the carried index sets: a loop whose pattern cycles with
  period ``p`` is recognized after ``O(μ + p)`` iterations and the remaining trips are skipped modulo ``p``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dtypes import index_dtype
from .core import CsrPart, Deps, IndexPart, check_nnz, make_csr
from .groups import Groups, group_union
from .runs import cheap_nnz, deps_equal

__all__ = ["Relation", "apply", "SmallState", "row_map_power", "assemble_writes", "assemble_rows", "CycleCheck",
           "symbols", "folded_symbols", "rows_of", "deps_of_rows", "union_rows", "MAX_TABLE_WIDTH"]

#: Relations whose rows name at most this many symbols of a block apply as a padded table (lazy row maps).
MAX_TABLE_WIDTH = 8


# ---------------------------------------------------------------------- symbols
def symbols(rows: int, width: int, offset: int) -> Deps:
    """Element ``e`` is symbol ``offset + e`` of a ``width``-symbol space."""
    return Deps.identity(rows, width, offset)


def folded_symbols(shape, dims, width: int, offset: int) -> tuple[Deps, np.ndarray]:
    """Symbols of an array read one coordinate at a time along ``dims`` (a scanned array): every element
    is the symbol of its coordinates along the *other* dims, so any such read gives the same symbols.
    Returns the symbols and ``inner`` — the flat index, in the array, of each symbol's element at coordinate
    0 along ``dims`` (add the offset of the coordinates along ``dims`` to find the element a read takes)."""
    shape = tuple(int(s) for s in shape)
    rest = [s if d not in dims else 1 for d, s in enumerate(shape)]
    k = int(np.prod(rest, dtype=np.int64))
    sym = np.broadcast_to(np.arange(k, dtype=np.int64).reshape(rest), shape).ravel() + offset
    inner = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    inner = inner[tuple(slice(0, 1) if d in dims else slice(None) for d in range(len(shape)))].ravel()
    return Deps(len(sym), width, [IndexPart(sym.astype(index_dtype(width)))]), inner


# ---------------------------------------------------------------------- relations
@dataclass
class Relation:
    """A relation (output rows × symbols) split by blocks of symbols: ``groups[b]`` holds, for each output
    row, the rows of block ``b`` it names (``None``: none)."""

    rows: int
    groups: list
    identity_of: int | None = None  #: the block this relation copies row for row, if it is just that

    @classmethod
    def split(cls, rel: Deps, blocks: list[tuple[int, int]]) -> "Relation":
        """``rel`` over a symbol space laid out as ``blocks`` of ``(offset, size)``."""
        m = rel.to_csr()
        rows = rel.rows
        indptr = np.asarray(m.indptr, np.int64)
        cols = np.asarray(m.indices, np.int64)
        row_of = np.repeat(np.arange(rows, dtype=np.int64), np.diff(indptr))
        groups: list[Groups | None] = []
        for off, size in blocks:
            sel = (cols >= off) & (cols < off + size)
            if not sel.any():
                groups.append(None)
                continue
            r, c = row_of[sel], cols[sel] - off
            counts = np.bincount(r, minlength=rows)
            g = int(np.max(counts))
            if g <= MAX_TABLE_WIDTH:
                table = np.full((rows, g), -1, np.int64)
                start = np.cumsum(counts) - counts
                table[r, np.arange(len(r)) - start[r]] = c
                groups.append(Groups.from_table(table))
            else:
                gi = np.zeros(rows + 1, np.int64)
                np.cumsum(counts, out=gi[1:])
                groups.append(Groups.from_lists(gi, c))
        out = cls(rows, groups)
        live = [b for b, g in enumerate(groups) if g is not None]
        if len(live) == 1 and blocks[live[0]][1] == rows:
            only = groups[live[0]]
            if only is not None and only.table is not None and only.table.shape[1] == 1 \
                    and np.array_equal(only.table[:, 0], np.arange(rows)):
                out.identity_of = live[0]
        return out


def apply(rel: Relation, block_deps: list, n: int) -> Deps:
    """One iteration: ``R ⊗ S`` with ``block_deps[b]`` the real index sets of block ``b``'s symbols."""
    if rel.identity_of is not None:
        return block_deps[rel.identity_of]
    parts = [group_union(block_deps[b], g) for b, g in enumerate(rel.groups) if g is not None]
    if not parts:
        return Deps.empty(rel.rows, n)
    return parts[0] if len(parts) == 1 else Deps.union(*parts)


def row_map_power(p: np.ndarray, k: int) -> np.ndarray:
    """``P^k`` for the row map ``S'[i] = S[P[i]]`` (``-1``: empty): ``S_k[i] = S_0[P^k[i]]``, by squaring."""
    p = np.asarray(p, np.int64)
    result = np.arange(len(p), dtype=np.int64)
    base = p
    while k:
        if k & 1:
            result = np.where(result >= 0, base[np.maximum(result, 0)], -1)
        k >>= 1
        if k:
            base = np.where(base >= 0, base[np.maximum(base, 0)], -1)
    return result


# ---------------------------------------------------------------------- small states: rows as arrays
def rows_of(d: Deps) -> list:
    """The index sets of ``d``, one sorted ``int32``/``int64`` array per row (views into one CSR)."""
    m = d.to_csr()
    indptr = np.asarray(m.indptr, np.int64)
    idx = m.indices
    return [idx[indptr[i]:indptr[i + 1]] for i in range(d.rows)]


def union_rows(arrays: list) -> np.ndarray:
    """The sorted union of sorted arrays (each distinct array object counted once)."""
    uniq = list({id(a): a for a in arrays if len(a)}.values())
    if not uniq:
        return arrays[0][:0] if arrays else np.zeros(0, np.int32)
    if len(uniq) == 1:
        return uniq[0]
    a = np.concatenate(uniq)
    a.sort(kind="stable")  # runs of sorted input: a merge
    keep = np.empty(len(a), bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def deps_of_rows(rows: list, n: int) -> Deps:
    """A :class:`Deps` from one sorted array per row."""
    lengths = np.fromiter((len(r) for r in rows), np.int64, len(rows))
    indptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    total = int(indptr[-1])
    check_nnz(total)
    if total == 0:
        return Deps.empty(len(rows), n)
    live = [r for r in rows if len(r)]
    m = make_csr(indptr, np.concatenate(live), len(rows), n)
    return Deps(len(rows), n, [CsrPart(m)])


class SmallState:
    """A relation applied to rows kept as sorted arrays: each distinct group of symbols is unioned once per
    iteration (the rows of an RNN's hidden state all name the same symbols: one union per step)."""

    def __init__(self, rels: list[Relation], blocks: list[tuple[int, int]]):
        self.width = sum(size for _, size in blocks)
        self.blocks = blocks
        self.keys: list = []          # per relation: the group id of each output row
        self.groups: list = []        # group id -> the global symbols it unions
        index: dict = {}
        for rel in rels:
            members: list[list[int]] = [[] for _ in range(rel.rows)]
            for (off, _), g in zip(blocks, rel.groups):
                if g is None:
                    continue
                indptr, mem = g.as_lists()
                for r in range(rel.rows):
                    members[r].extend(int(off + c) for c in mem[indptr[r]:indptr[r + 1]] if c >= 0)
            ids = []
            for m in members:
                key = tuple(sorted(set(m)))
                if key not in index:
                    index[key] = len(self.groups)
                    self.groups.append(key)
                ids.append(index[key])
            self.keys.append(ids)

    def step(self, symbol_rows: list) -> list:
        """``symbol_rows[s]``: the real index set of symbol ``s``; returns each relation's output rows."""
        empty = symbol_rows[0][:0] if symbol_rows else np.zeros(0, np.int32)
        vals = [union_rows([symbol_rows[s] for s in g]) if g else empty for g in self.groups]
        return [[vals[i] for i in ids] for ids in self.keys]


# ---------------------------------------------------------------------- accumulators
def assemble_writes(initial: Deps, writes: list) -> Deps:
    """An accumulator after writes ``(rows, deps)`` in order: row ``rows[j]`` takes row ``j`` of ``deps``,
    later writes replacing earlier ones; rows never written keep ``initial``."""
    if not writes:
        return initial
    items = [initial] + [w for _, w in writes]
    offsets = np.cumsum([0] + [d.rows for d in items[:-1]])
    where = np.concatenate([np.asarray(r, np.int64) for r, _ in writes])
    src = np.concatenate([off + np.arange(len(r), dtype=np.int64) for off, (r, _) in zip(offsets[1:], writes)])
    # the last write of every row: unique over the writes taken back to front
    last_rows, first_from_end = np.unique(where[::-1], return_index=True)
    rowmap = np.arange(initial.rows, dtype=np.int64)
    rowmap[last_rows] = src[::-1][first_from_end]
    return Deps.vstack(items).gather_rows(rowmap)


def assemble_rows(initial_rows: list, writes: list, n: int) -> Deps:
    """:func:`assemble_writes` for rows kept as arrays: ``writes`` is a list of ``(rows, arrays)``."""
    out = list(initial_rows)
    for rows, arrays in writes:  # one Python step per write (a scan writes once per iteration)
        for r, a in zip(rows, arrays):
            out[r] = a
    return deps_of_rows(out, n)


# ---------------------------------------------------------------------- cycles
class CycleCheck:
    """Brent's cycle detection on a sequence of carried index sets.

    ``see(t, state)`` after every iteration ``t``; it answers the period ``p`` once ``state_t = state_{t-p}``
    (the carry then repeats with period ``p``, as the iterations apply the same relation).  Memory: one saved
    state.  Comparisons are cheap when the patterns grow (their sizes differ) and compare run-length rows
    without writing them out."""

    def __init__(self):
        self.saved = None
        self.saved_at = 0
        self.power = 1

    def see(self, t: int, state: list) -> int | None:
        if self.saved is not None and _same_state(self.saved, state):
            return t - self.saved_at
        if t - self.saved_at >= self.power:
            self.saved, self.saved_at = state, t
            self.power *= 2
        return None


def _same_state(a: list, b: list) -> bool:
    if any(cheap_nnz(x) != cheap_nnz(y) for x, y in zip(a, b)):
        return False
    return all(deps_equal(x, y) for x, y in zip(a, b))

"""The building blocks of local terms (:mod:`.registry`): none, full, cross."""

from __future__ import annotations

import numpy as np

from ...lattice import Deps
from ...lattice.core import ROW_LANE_ENTRIES, row_columns
from .encoding import elementwise_pairs, full_rows, pair_rows

__all__ = ["no_term", "full_term", "cross_rows", "full_of"]


def no_term(ctx, op, args, results):
    """Linear or piecewise linear: the first-order rule already passed every interaction on."""
    return [None] * len(results)


def _scalar_pairs(ctx, a, b, square: bool):
    """The term of one-element operands from their column sets (the scalar lane of the lattice): the pairs
    ``{u, v}``, ``u ∈ S_a``, ``v ∈ S_b``, as codes ``n + min·n + max`` (empty when there are none); ``None`` when a
    set is not at hand cheaply or the term is too large for the lane."""
    ra = row_columns(a.deps)
    rb = ra if square else row_columns(b.deps)
    if ra is None or rb is None:
        return None
    n = ctx.n_first
    sa = [c for c in ra if c < n]
    sb = sa if square else [c for c in rb if c < n]
    if len(sa) * len(sb) > ROW_LANE_ENTRIES:
        return None
    codes = frozenset(n + u * n + v if u <= v else n + v * n + u for u in sa for v in sb)
    return Deps.of_row(ctx.n, codes)


def full_of(ctx, av):
    """``S_e × S_e`` for every element of ``av`` (None when it depends on nothing)."""
    if av.deps.is_empty:
        return None
    if av.size == 1:
        lane = _scalar_pairs(ctx, av, av, True)
        if lane is not None:
            return lane
    return full_rows(ctx.first_order(av), ctx.n_first)


def full_term(ctx, op, args, results):
    """Nonlinear (or unknown): every pair of inputs each result element depends on."""
    return [full_of(ctx, r) for r in results]


def cross_rows(ctx, a, b, size: int):
    """Elementwise ``S_a,e × S_b,e`` (and its transpose) for operands of the result's size (scalars repeat)."""
    if a.deps.is_empty or b.deps.is_empty:
        return None
    if size == 1 and a.size == 1 and b.size == 1:
        lane = _scalar_pairs(ctx, a, b, False)
        if lane is not None:
            return lane
    sa, sb = ctx.first_order(a), ctx.first_order(b)
    if a.size == size and b.size == size:
        fast = elementwise_pairs(sa, sb, ctx.n_first)
        if fast is not None:
            return fast
    e = np.arange(size, dtype=np.int64)
    ia = e if a.size == size else np.zeros(size, np.int64)
    ib = e if b.size == size else np.zeros(size, np.int64)
    return pair_rows(e, size, sa, ia, sb, ib, ctx.n_first, one_per_row=True)

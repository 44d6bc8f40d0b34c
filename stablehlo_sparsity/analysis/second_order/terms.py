"""The building blocks of local terms (:mod:`.registry`): none, full, cross."""

from __future__ import annotations

import numpy as np

from .encoding import elementwise_pairs, full_rows, pair_rows

__all__ = ["no_term", "full_term", "cross_rows", "full_of"]


def no_term(ctx, op, args, results):
    """Linear or piecewise linear: the first-order rule already passed every interaction on."""
    return [None] * len(results)


def full_of(ctx, av):
    """``S_e × S_e`` for every element of ``av`` (None when it depends on nothing)."""
    if av.deps.is_empty:
        return None
    return full_rows(ctx.first_order(av), ctx.n_first)


def full_term(ctx, op, args, results):
    """Nonlinear (or unknown): every pair of inputs each result element depends on."""
    return [full_of(ctx, r) for r in results]


def cross_rows(ctx, a, b, size: int):
    """Elementwise ``S_a,e × S_b,e`` (and its transpose) for operands of the result's size (scalars repeat)."""
    if a.deps.is_empty or b.deps.is_empty:
        return None
    sa, sb = ctx.first_order(a), ctx.first_order(b)
    if a.size == size and b.size == size:
        fast = elementwise_pairs(sa, sb, ctx.n_first)
        if fast is not None:
            return fast
    e = np.arange(size, dtype=np.int64)
    ia = e if a.size == size else np.zeros(size, np.int64)
    ib = e if b.size == size else np.zeros(size, np.int64)
    return pair_rows(e, size, sa, ia, sb, ib, ctx.n_first, one_per_row=True)

"""Seeds and decompression plans: which one-hot seed each product gets, and from which product and entry
each nonzero of the pattern is read back.

With a column coloring ``c`` the seed matrix ``S`` (``n × k``, ``S[j, c[j]] = 1``) compresses the Jacobian
into ``B = J S`` and ``J[i, j] = B[i, c[j]]``; with a row coloring ``r``, ``C = W J`` and ``J[i, j] = C[r[i],
j]``; a bicoloring reads each nonzero from one side (:class:`~stablehlo_sparsity.coloring.DecompressionPlan`).
A star coloring of a symmetric pattern reads ``H[i, j]`` from ``B[i, c[j]]`` or ``B[j, c[i]]``
(:func:`~stablehlo_sparsity.coloring.star_sources`).  The sources are flat indices into the stacked products
(``color · length + entry``), the layout :class:`~stablehlo_sparsity.derivatives.prepared.evaluation.EvaluationPlan`
computes.
"""

from __future__ import annotations

import numpy as np

from ...coloring.kinds import ColoringKind
from ...errors import InputError
from .evaluation import Side, colors_constant, seed_leaves
from .modes import JacobianMode

__all__ = ["SEED_CONSTANT_LIMIT", "seed_factory", "constant_seeds", "jacobian_decompression",
           "hessian_decompression"]

#: With ``constant_seeds=None`` (auto), seed matrices up to this many entries (colors × seed length) are
#: embedded as literal constants (as bytes beyond 65,536 entries, converted in the program): XLA then folds the
#: tangents of the linear parts of ``f`` at compile time and fuses each product into the gather that reads it
#: (2–4× faster warm evaluation on stencils — the 2-D Brusselator at 2·512² inputs in reverse mode: 28 ms
#: instead of 65 — for a longer first compilation, 7 s instead of 0.5 s there).  Larger ones are built in
#: the program from the color vector, which keeps the module O(n) and the compilation short;
#: ``constant_seeds=False`` asks for that at any size.
SEED_CONSTANT_LIMIT = 1 << 25


def constant_seeds(constant: bool | None, k: int, size: int) -> bool:
    """Literal seeds (``constant=True``) or seeds computed from the color vector; ``None`` decides by size."""
    return k * size <= SEED_CONSTANT_LIMIT if constant is None else bool(constant)


def seed_factory(colors: np.ndarray, k: int, leaves, tree, default_constant: bool | None):
    """``seeds(first, count, constant)``: the seed tree (``tree`` of ``leaves``' shapes) of colors
    ``first .. first + count`` of one side, as literal constants or computed in the program — the color table
    built once, on first need (``constant=None``: ``default_constant``)."""
    import jax
    import jax.numpy as jnp

    store: list = []
    shapes = [tuple(np.shape(x)) for x in leaves]
    dts = [jnp.result_type(x) for x in leaves]

    def seeds(first, count, constant):
        const = default_constant if constant is None else constant
        literal = constant_seeds(const, k, len(colors))
        if not store and not literal:
            store.append(colors_constant(colors, k, shapes))
        return jax.tree_util.tree_unflatten(tree, seed_leaves(
            colors, k, shapes, dts, first=first, count=count,
            constant=literal and isinstance(first, (int, np.integer)), color_consts=store[0] if store else None))
    return seeds


def jacobian_decompression(pattern, coloring, rows: np.ndarray, cols: np.ndarray):
    """``(mode, sides, source)`` of a Jacobian coloring: the products it asks for (:class:`JacobianMode`), one
    :class:`Side` per direction, and per nonzero in CSR order its flat index in the stacked products."""
    m, n = pattern.shape
    kind = ColoringKind(coloring.kind)
    if kind is ColoringKind.BIDIRECTIONAL:
        from ...coloring import DecompressionPlan

        sides = [Side(coloring.column_colors.astype(np.int32), coloring.num_column_colors, m, "jvp"),
                 Side(coloring.row_colors.astype(np.int32), coloring.num_row_colors, n, "vjp")]
        return JacobianMode.BIDIRECTIONAL, sides, DecompressionPlan(pattern, coloring).source
    k = coloring.num_colors
    c = coloring.colors.astype(np.int64)
    if kind is ColoringKind.COLUMN:
        # compressed Bᵀ is (k, m): J[i, j] = Bᵀ[c[j], i]
        return JacobianMode.FORWARD, [Side(coloring.colors.astype(np.int32), k, m, "jvp")], c[cols] * m + rows
    if kind is not ColoringKind.ROW:
        raise InputError(f"a Jacobian needs a column, row or bidirectional coloring, got {kind}")
    # compressed C is (k, n): J[i, j] = C[r[i], j]
    return JacobianMode.REVERSE, [Side(coloring.colors.astype(np.int32), k, n, "vjp")], c[rows] * n + cols


def hessian_decompression(pattern, coloring):
    """``(sides, source)`` of a star coloring of a symmetric pattern (direct recovery): one Hessian-vector
    product per color, each nonzero read from one of them."""
    from ...coloring import star_sources

    n = pattern.shape[0]
    k = coloring.num_colors
    src = star_sources(pattern, coloring)
    if (src < 0).any():
        raise InputError("the star coloring does not allow direct recovery of every Hessian entry")
    # star_sources indexes B (n × k) as r·k + c; the program computes Bᵀ (k × n): c·n + r.
    r, c = np.divmod(src, max(k, 1))
    return [Side(coloring.colors.astype(np.int32), k, n, "hvp")], c * n + r

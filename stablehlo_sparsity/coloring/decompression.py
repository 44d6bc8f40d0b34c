"""Seed matrices and decompression for every coloring kind, whoever computes the products.

    >>> import numpy as np, scipy.sparse as sp
    >>> from stablehlo_sparsity.coloring import color_columns, seed_matrix, decompress
    >>> J = sp.csr_array(np.array([[1., 2, 0, 0], [0, 3, 4, 0], [0, 0, 5, 6]]))
    >>> c = color_columns(J)
    >>> B = J @ seed_matrix(c)                  # the JVPs: from AD, finite differences, another device …
    >>> decompress(B, J, c).toarray().tolist() == J.toarray().tolist()
    True

The products each kind asks for (``J`` is ``m × n``, ``H`` symmetric ``n × n``):

======================  ==========================  ================================================
kind                    seed (``seed_matrix``)      compressed products (``decompress``'s input)
======================  ==========================  ================================================
``"column"``            ``S``, ``n × k``            ``B = J S``, ``m × k`` (one JVP per column of ``S``)
``"row"``               ``S``, ``m × k``            ``C = Sᵀ J``, ``k × n`` (one VJP per column of ``S``)
``"star"``              ``S``, ``n × k``            ``B = H S``, ``n × k`` (one HVP per column), direct
``"acyclic"``           ``S``, ``n × k``            ``B = H S``, ``n × k``, recovered by substitution
``"bidirectional"``     ``(S_c, S_r)``              ``(B, C) = (J S_c, S_rᵀ J)``: ``kc`` JVPs and ``kr`` VJPs
======================  ==========================  ================================================

``S[v, c] = 1`` iff vertex ``v`` has color ``c`` (a bidirectional coloring leaves vertices of color ``-1``
out of every seed).  ``jax.vmap`` over the seeds gives the products one per *row*: transpose ``B`` (not
``C``) before decompressing.

A :class:`DecompressionPlan` holds the static index arrays (build it once, apply it to many products); the
result lists the nonzeros of the pattern in CSR order (for ``"star"`` / ``"acyclic"`` of the symmetrized
pattern ``P ∪ Pᵀ``).  Direct kinds gather; substitution is a gather, a prefix sum segmented per two-colored
tree and a difference of two gathers (see :mod:`.acyclic`), on the host or inside a JAX program
(:meth:`DecompressionPlan.jax_values`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..dtypes import index_dtype
from .check import InvalidColoringError, bidirectional_sources, check_coloring, star_sources
from .graph import adjacency, as_csr, symmetrize
from .kinds import ColoringKind

__all__ = ["KINDS", "seed_matrix", "compress", "decompress", "DecompressionPlan"]

#: The coloring kinds, each with its own seeds and decompression.
KINDS = (ColoringKind.COLUMN, ColoringKind.ROW, ColoringKind.STAR, ColoringKind.ACYCLIC, ColoringKind.BIDIRECTIONAL)


def _kind_of(coloring, kind: str | None) -> str:
    k = kind or getattr(coloring, "kind", None)
    if k not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)} (or given by a Coloring), got {k!r}")
    return k


def _one_hot(colors: np.ndarray, k: int, dtype, sparse: bool):
    colors = np.asarray(colors, np.int64)
    on = np.flatnonzero((colors >= 0) & (colors < k))  # an empty pattern has colors but no products
    if sparse:
        return sp.csr_array((np.ones(len(on), dtype), (on, colors[on])), shape=(len(colors), k))
    s = np.zeros((len(colors), k), dtype=dtype)
    s[on, colors[on]] = 1
    return s


def _split_colors(coloring):
    """``(column_colors, row_colors, kc, kr)`` of a bidirectional coloring (a Bicoloring or a pair)."""
    if hasattr(coloring, "column_colors"):
        cc, rc = np.asarray(coloring.column_colors), np.asarray(coloring.row_colors)
    else:
        cc, rc = (np.asarray(a) for a in coloring)
    kc = int(cc.max()) + 1 if len(cc) else 0
    kr = int(rc.max()) + 1 if len(rc) else 0
    return cc, rc, max(kc, 0), max(kr, 0)


def _plain_colors(coloring) -> tuple[np.ndarray, int]:
    c = np.asarray(getattr(coloring, "colors", coloring))
    k = getattr(coloring, "num_colors", None)
    if k is None:
        k = int(c.max()) + 1 if len(c) else 0
    return c, int(k)


def seed_matrix(coloring, kind: str | None = None, dtype=np.float64, sparse: bool = False):
    """The seed matrix of ``coloring``: ``S`` (``n × k`` for column, star and acyclic colorings, ``m × k``
    for row colorings), or the pair ``(S_c, S_r)`` (``n × kc``, ``m × kr``) for a bidirectional coloring.
    ``sparse=True`` gives SciPy ``csr_array``\\ s.  ``coloring``: a :class:`~.Coloring` (or a color array
    with ``kind``; a ``(column_colors, row_colors)`` pair for ``"bidirectional"``).

    Raises:
        ValueError: ``kind`` is missing (for a plain color array) or unknown.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity import color_columns, seed_matrix
        >>> seed_matrix(color_columns(np.array([[1, 1, 0], [0, 1, 1]]))).tolist()
        [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
        >>> seed_matrix(np.array([0, 1, 0]), kind="column", dtype=np.int8).tolist()
        [[1, 0], [0, 1], [1, 0]]
    """
    kind = _kind_of(coloring, kind)
    if kind == ColoringKind.BIDIRECTIONAL:
        cc, rc, kc, kr = _split_colors(coloring)
        return _one_hot(cc, kc, dtype, sparse), _one_hot(rc, kr, dtype, sparse)
    c, k = _plain_colors(coloring)
    return _one_hot(c, k, dtype, sparse)


def compress(matrix, coloring, kind: str | None = None):
    """The compressed products ``coloring`` asks for, computed from a known ``matrix`` (the layouts of the
    module table) — what JVPs/VJPs/HVPs would return; for tests and for checking a product code."""
    kind = _kind_of(coloring, kind)
    a = sp.csr_array(matrix) if sp.issparse(matrix) else np.asarray(matrix)
    if kind == ColoringKind.BIDIRECTIONAL:
        s_c, s_r = seed_matrix(coloring, kind, dtype=a.dtype if a.dtype.kind == "f" else np.float64)
        return np.asarray(a @ s_c), np.asarray((a.T @ s_r).T)
    s = seed_matrix(coloring, kind, dtype=a.dtype if a.dtype.kind == "f" else np.float64)
    if kind == ColoringKind.ROW:
        return np.asarray((a.T @ s).T)
    return np.asarray(a @ s)


class DecompressionPlan:
    """The static part of decompression: index arrays from ``pattern`` and ``coloring`` to the nonzeros.

    ``plan.values(compressed)`` returns the nonzeros (CSR order of :attr:`pattern`), ``plan(compressed)``
    the SciPy ``csr_array``; ``compressed`` in the layout of the module table.  ``kind`` overrides the
    coloring's own (a star coloring is also acyclic: ``kind="acyclic"`` recovers it by substitution).
    The coloring is checked first (:class:`~.InvalidColoringError` if it cannot recover the pattern).

    Internally products are *stacked*, one product per row (as ``jax.vmap`` returns them): the forward
    block ``kc × m`` (``k × n`` for Hessians), then the reverse block ``kr × n``, flattened.

    Raises:
        InvalidColoringError: ``coloring`` cannot recover ``pattern`` (a ``ValueError``).
        ValueError: an unknown ``kind``.

    Examples:
        >>> import numpy as np, scipy.sparse as sp
        >>> from stablehlo_sparsity import DecompressionPlan, color_columns, seed_matrix
        >>> J = sp.csr_array(np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 4.0]]))
        >>> plan = DecompressionPlan(J, color_columns(J))
        >>> plan.num_products, plan.values(J @ seed_matrix(color_columns(J))).tolist()
        (2, [1.0, 2.0, 3.0, 4.0])
    """

    def __init__(self, pattern, coloring, kind: str | None = None):
        kind = _kind_of(coloring, kind)
        csr = as_csr(pattern)
        if kind in (ColoringKind.STAR, ColoringKind.ACYCLIC):
            csr = symmetrize(csr)
        self.kind = kind
        self.pattern: sp.csr_array = csr
        m, n = csr.shape
        rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(csr.indptr))
        cols = csr.indices.astype(np.int64)
        self.substitution = None
        if kind == ColoringKind.BIDIRECTIONAL:
            check_coloring(csr, coloring, "bidirectional", raise_on_error=True)
            cc, rc, kc, kr = _split_colors(coloring)
            src = bidirectional_sources(csr, coloring)
            fwd = src < m * kc
            self.blocks: tuple[tuple[int, int], ...] = ((kc, m), (kr, n))
            self.source: np.ndarray | None = np.where(fwd, (src % max(kc, 1)) * m + src // max(kc, 1), src)
            return
        c, k = _plain_colors(coloring)
        if kind in (ColoringKind.COLUMN, ColoringKind.ROW, ColoringKind.STAR):
            check_coloring(csr, c, kind, raise_on_error=True)
        c = c.astype(np.int64)
        if kind == ColoringKind.COLUMN:
            self.blocks = ((k, m),)
            self.source = c[cols] * m + rows
        elif kind == ColoringKind.ROW:
            self.blocks = ((k, n),)
            self.source = c[rows] * n + cols
        elif kind == ColoringKind.STAR:
            s = star_sources(csr, c)
            self.blocks = ((k, n),)
            self.source = (s % max(k, 1)) * n + s // max(k, 1)
        else:
            self.blocks = ((k, n),)
            self.source = None
            self.substitution = self._substitution_arrays(csr, c, k, rows, cols)

    @staticmethod
    def _substitution_arrays(csr, c, k, rows, cols):
        from .acyclic import two_colored_forest
        from .check import acyclic_violation

        n = csr.shape[0]
        if len(c) != n or (n and c.min() < 0):
            check_coloring(csr, c, "acyclic", raise_on_error=True)  # names the problem
        g = adjacency(csr)
        forest = two_colored_forest(g.nv, g.ptr, g.nbr, c)
        if forest is None:  # not acyclic: the independent checker names an edge or a cycle
            raise InvalidColoringError(f"acyclic coloring: {acyclic_violation(csr, c)}")
        pre = forest.preorder
        nt = len(pre)
        b_index = forest.other[pre] * n + forest.vertex[pre]
        b_sign = np.where(forest.parity[pre] == 0, 1, -1).astype(np.int8)
        starts = forest.parent[pre] < 0
        # Every entry reads Z = [P (nt), products (k·n), 0] as sign · (Z[hi] − Z[lo]).
        zero = nt + k * n
        hi = np.empty(len(cols), np.int64)
        lo = np.full(len(cols), zero, np.int64)
        sign = np.ones(len(cols), np.int8)
        diag = rows == cols
        hi[diag] = nt + c[rows[diag]] * n + rows[diag]
        off = ~diag  # the adjacency entries, in CSR order
        q = forest.entry_child
        hi[off] = forest.position[q] + forest.size[q] - 1
        lo[off] = forest.position[q] - 1
        sign[off] = np.where(forest.parity[q] == 0, 1, -1)
        return {"b_index": b_index, "b_sign": b_sign, "starts": starts, "hi": hi, "lo": lo, "sign": sign,
                "longest_chain": forest.max_subtree}

    # ------------------------------------------------------------------ shapes and layouts
    @property
    def shape(self) -> tuple[int, int]:
        m, n = self.pattern.shape
        return int(m), int(n)

    @property
    def nnz(self) -> int:
        return int(self.pattern.nnz)

    @property
    def num_products(self) -> int:
        return sum(b[0] for b in self.blocks)

    def _stack(self, compressed) -> np.ndarray:
        """The flat stacked products from the public layout, shapes checked."""
        if self.kind == ColoringKind.BIDIRECTIONAL:
            if not isinstance(compressed, (tuple, list)) or len(compressed) != 2:
                raise ValueError("bidirectional decompression takes a pair (B, C): B = J S_c (JVPs), "
                                 "C = S_rᵀ J (VJPs)")
            b, cmat = compressed
            (kc, m), (kr, n) = self.blocks
            b = np.zeros((m, 0)) if b is None else np.asarray(b)
            cmat = np.zeros((0, n)) if cmat is None else np.asarray(cmat)
            self._expect(b, (m, kc), "B = J S_c")
            self._expect(cmat, (kr, n), "C = S_rᵀ J")
            dt = np.result_type(b, cmat)
            return np.concatenate([b.T.ravel(), cmat.ravel()]).astype(dt, copy=False)
        a = np.asarray(compressed)
        ((k, w),) = self.blocks[:1]
        if self.kind == ColoringKind.ROW:
            self._expect(a, (k, w), "C = Sᵀ J")
            return a.ravel()
        self._expect(a, (w, k), "B = J S" if self.kind == ColoringKind.COLUMN else "B = H S")
        return a.T.ravel()

    def _expect(self, a, shape, what):
        if a.shape != tuple(shape):
            raise ValueError(f"{self.kind} decompression: {what} must have shape {tuple(shape)}, got {a.shape}")

    # ------------------------------------------------------------------ evaluation
    def values_from_stacked(self, flat: np.ndarray) -> np.ndarray:
        """The nonzeros from the flat stacked products (host, NumPy)."""
        flat = np.asarray(flat)
        if self.substitution is None:
            return flat[self.source] if self.nnz else np.zeros(0, flat.dtype)
        s = self.substitution
        from ..dtypes import is_float  # (bfloat16 products are floats too: NumPy kind "V")

        dt = flat.dtype if is_float(flat.dtype) else np.dtype(np.float64)
        # accumulate in at least double precision; the result keeps the products' dtype
        acc = np.result_type(dt, np.float64)
        v = flat[s["b_index"]].astype(acc) * s["b_sign"]
        from .acyclic import segmented_cumsum

        p = segmented_cumsum(v, s["starts"]) if len(v) else v
        z = np.concatenate([p, flat.astype(acc), np.zeros(1, acc)])
        return (s["sign"] * (z[s["hi"]] - z[s["lo"]])).astype(dt, copy=False)

    def values(self, compressed) -> np.ndarray:
        """The nonzeros (CSR order of :attr:`pattern`) from ``compressed`` in the public layout."""
        return self.values_from_stacked(self._stack(compressed))

    def __call__(self, compressed) -> sp.csr_array:
        return sp.csr_array((self.values(compressed), self.pattern.indices.copy(), self.pattern.indptr.copy()),
                            shape=self.shape)

    def jax_values_from_stacked(self, flat):
        """The nonzeros from the flat stacked products inside a JAX program (jit/vmap-compatible): static
        gathers, and for substitution one segmented prefix sum (``lax.associative_scan``, logarithmic depth
        whatever the height of the trees), in the products' dtype."""
        import jax.numpy as jnp
        from jax import lax

        def gather(x, idx):
            idx = np.asarray(idx)
            t = index_dtype(x.shape[0]) if len(x.shape) == 1 else np.int64
            dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
            return lax.gather(x, idx.astype(t)[:, None], dn, slice_sizes=(1,),
                              mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)

        if self.nnz == 0:
            return jnp.zeros((0,), flat.dtype)
        if self.substitution is None:
            return gather(flat, self.source)
        s = self.substitution
        v = gather(flat, s["b_index"]) * jnp.asarray(s["b_sign"], flat.dtype)
        if v.shape[0]:
            starts = jnp.asarray(s["starts"])

            def seg_add(a, b):
                fa, va = a
                fb, vb = b
                return jnp.logical_or(fa, fb), jnp.where(fb, vb, va + vb)

            v = lax.associative_scan(seg_add, (starts, v))[1]
        z = jnp.concatenate([v, flat, jnp.zeros((1,), flat.dtype)])
        return jnp.asarray(s["sign"], flat.dtype) * (gather(z, s["hi"]) - gather(z, s["lo"]))

    def jax_values(self, compressed):
        """:meth:`values` inside a JAX program: ``compressed`` in the public layout, as JAX arrays."""
        import jax.numpy as jnp

        if self.kind == ColoringKind.BIDIRECTIONAL:
            b, c = compressed
            flat = jnp.concatenate([jnp.ravel(jnp.transpose(b)), jnp.ravel(c)])
        elif self.kind == ColoringKind.ROW:
            flat = jnp.ravel(compressed)
        else:
            flat = jnp.ravel(jnp.transpose(compressed))
        return self.jax_values_from_stacked(flat)

    @property
    def longest_chain(self) -> int:
        """Substitution only: the most products summed for one entry (1 for direct kinds) — the error of a
        substituted entry grows with it."""
        return self.substitution["longest_chain"] if self.substitution is not None else 1

    def __repr__(self) -> str:
        m, n = self.shape
        how = "substitution" if self.substitution is not None else "direct"
        return (f"DecompressionPlan({self.kind}, {m}×{n}, nnz={self.nnz}, {self.num_products} products, "
                f"{how})")


def decompress(compressed, pattern, coloring, kind: str | None = None) -> sp.csr_array:
    """The sparse matrix (SciPy ``csr_array`` on ``pattern``, symmetrized for ``"star"`` / ``"acyclic"``)
    from the compressed products of ``coloring`` (layouts in the module docstring).  For many evaluations
    build a :class:`DecompressionPlan` once.

    Raises:
        InvalidColoringError: ``coloring`` cannot recover ``pattern`` (a ``ValueError``).
        ValueError: an unknown ``kind``, or ``compressed`` of another shape than the coloring's products.

    Examples:
        >>> import numpy as np, scipy.sparse as sp
        >>> from stablehlo_sparsity import color_columns, decompress, seed_matrix
        >>> J = sp.csr_array(np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 4.0]]))
        >>> c = color_columns(J)
        >>> decompress(J @ seed_matrix(c), J, c).toarray().tolist()     # J S: 2 products instead of 3 columns
        [[1.0, 2.0, 0.0], [0.0, 3.0, 4.0]]
    """
    return DecompressionPlan(pattern, coloring, kind)(compressed)

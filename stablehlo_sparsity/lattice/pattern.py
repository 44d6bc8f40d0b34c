"""``SparsityPattern``: the detected (m × n) Jacobian/Hessian pattern as a canonical boolean CSR matrix."""

from __future__ import annotations

from typing import cast

import numpy as np
import scipy.sparse as sp

__all__ = ["SparsityPattern"]

#: :meth:`SparsityPattern.picture` bins this many nonzeros at a time.
PICTURE_CHUNK = 1 << 20


class SparsityPattern:
    """A boolean ``(m, n)`` pattern: entry ``(i, j)`` is True iff output ``i`` may depend on input ``j``.

    Rows are the flattened outputs (pytree leaves in order, each row-major), columns the flattened selected
    inputs — the same convention as ``asdex``, so patterns compare one to one.

    Examples:
        >>> import numpy as np
        >>> import stablehlo_sparsity as ss
        >>> p = ss.SparsityPattern(np.array([[1, 1, 0], [0, 1, 1]]))
        >>> p.shape, p.nnz, p.density
        ((2, 3), 4, 0.6666666666666666)
        >>> p
        SparsityPattern(2×3, nnz=4, density=0.667)
        ●●⋅
        ⋅●●
    """

    __slots__ = ("_csr", "_method", "_method_reason")

    def __init__(self, matrix, method: str | None = None, method_reason: str | None = None):
        m = matrix if isinstance(matrix, sp.csr_array) else sp.csr_array(matrix)
        if m.dtype != bool:
            m = m.astype(bool)
        if not m.has_canonical_format:
            m = m.copy()
            m.sum_duplicates()
            m.eliminate_zeros()
            m.sort_indices()
        self._csr = m
        self._method = method
        self._method_reason = method_reason

    @property
    def method(self) -> str | None:
        """How a Hessian pattern was found: ``"direct"`` (the second-order analysis of the primal program) or
        ``"via-gradient"`` (the Jacobian pattern of the gradient program); what ``hessian_sparsity(method="auto")``
        chose is recorded here.  ``None`` for a Jacobian pattern."""
        return getattr(self, "_method", None)  # (patterns pickled before this field have none)

    @property
    def method_reason(self) -> str | None:
        """Why :attr:`method` ran, in one line: the ``method`` asked for, or what ``method="auto"`` decided on (the
        cost model's score and counts, a custom derivative rule, the nonzero budget).  ``None`` for a Jacobian
        pattern."""
        return getattr(self, "_method_reason", None)  # (patterns pickled before this field have none)

    # ------------------------------------------------------------------ basics
    @property
    def shape(self) -> tuple[int, int]:
        return cast("tuple[int, int]", tuple(int(s) for s in self._csr.shape))

    @property
    def nnz(self) -> int:
        """The number of nonzeros.

        Examples:
            >>> import numpy as np
            >>> import stablehlo_sparsity as ss
            >>> ss.SparsityPattern(np.eye(3)).nnz
            3
        """
        return int(self._csr.nnz)

    @property
    def indptr(self) -> np.ndarray:
        return self._csr.indptr

    @property
    def indices(self) -> np.ndarray:
        return self._csr.indices

    def to_scipy(self) -> sp.csr_array:
        """The pattern as a ``scipy.sparse.csr_array`` of bool (shared, do not mutate).

        Examples:
            >>> import numpy as np
            >>> import stablehlo_sparsity as ss
            >>> m = ss.SparsityPattern(np.array([[1, 1, 0], [0, 1, 1]])).to_scipy()
            >>> type(m).__name__, m.dtype, m.indptr.tolist(), m.indices.tolist()
            ('csr_array', dtype('bool'), [0, 2, 4], [0, 1, 1, 2])
        """
        return self._csr

    def todense(self) -> np.ndarray:
        return self._csr.toarray()

    def to_coo(self) -> tuple[np.ndarray, np.ndarray]:
        """Row and column indices of the nonzeros, in CSR order.

        Examples:
            >>> import numpy as np
            >>> import stablehlo_sparsity as ss
            >>> rows, cols = ss.SparsityPattern(np.array([[1, 1, 0], [0, 1, 1]])).to_coo()
            >>> rows.tolist(), cols.tolist()
            ([0, 0, 1, 1], [0, 1, 1, 2])
        """
        rows = np.repeat(np.arange(self.shape[0]), np.diff(self._csr.indptr))
        return rows, self._csr.indices.astype(np.int64)

    def to_bcoo(self):
        """The pattern as a ``jax.experimental.sparse.BCOO`` of ones (float32)."""
        from jax.experimental import sparse as jsparse
        import jax.numpy as jnp

        r, c = self.to_coo()
        idx = jnp.asarray(np.stack([r, c], axis=1))
        return jsparse.BCOO((jnp.ones(self.nnz), idx), shape=self.shape)

    def row_counts(self) -> np.ndarray:
        return np.diff(self._csr.indptr)

    def col_counts(self) -> np.ndarray:
        return np.bincount(self._csr.indices, minlength=self.shape[1])

    @property
    def density(self) -> float:
        m, n = self.shape
        return self.nnz / (m * n) if m * n else 0.0

    # ------------------------------------------------------------------ comparisons
    def __eq__(self, other) -> bool:
        if isinstance(other, SparsityPattern):
            o = other._csr
        elif sp.issparse(other) or isinstance(other, np.ndarray):
            o = SparsityPattern(other)._csr
        else:
            return NotImplemented
        a = self._csr
        return (a.shape == o.shape and a.nnz == o.nnz and np.array_equal(a.indptr, o.indptr)
                and np.array_equal(a.indices, o.indices))

    __hash__ = None  # type: ignore[assignment]

    def issuperset(self, other) -> bool:
        """True iff every nonzero of ``other`` is a nonzero here (soundness of a detected pattern).

        Examples:
            >>> import numpy as np
            >>> import stablehlo_sparsity as ss
            >>> p = ss.SparsityPattern(np.array([[1, 1, 0], [0, 1, 1]]))
            >>> p.issuperset(np.eye(2, 3)), p.issuperset(np.ones((2, 3)))
            (True, False)
        """
        o = other._csr if isinstance(other, SparsityPattern) else SparsityPattern(other)._csr
        if o.shape != self._csr.shape:
            return False
        return (o.astype(np.int8) - o.astype(np.int8).multiply(self._csr.astype(np.int8))).nnz == 0

    def missing(self, other) -> "SparsityPattern":
        """The nonzeros of ``other`` that this pattern lacks (empty iff sound w.r.t. ``other``).

        Examples:
            >>> import numpy as np
            >>> import stablehlo_sparsity as ss
            >>> p = ss.SparsityPattern(np.array([[1, 1, 0], [0, 1, 1]]))
            >>> [c.tolist() for c in p.missing(np.ones((2, 3))).to_coo()]
            [[0, 1], [2, 0]]
        """
        o = other._csr if isinstance(other, SparsityPattern) else SparsityPattern(other)._csr
        d = o.astype(np.int8) - o.astype(np.int8).multiply(self._csr.astype(np.int8))
        d.eliminate_zeros()
        return SparsityPattern(d.astype(bool))

    # ------------------------------------------------------------------ display
    def binned(self, max_rows: int, max_cols: int) -> tuple[np.ndarray, int, int]:
        """``(grid, rb, cb)``: a boolean grid of at most ``max_rows × max_cols`` cells, cell ``(a, b)`` True when
        some nonzero lies in rows ``a·rb …`` and columns ``b·cb …`` (binned in chunks: no per-nonzero copy).

        Examples:
            >>> import numpy as np
            >>> import stablehlo_sparsity as ss
            >>> grid, rb, cb = ss.SparsityPattern(np.eye(4)).binned(2, 2)
            >>> grid.tolist(), rb, cb
            ([[True, False], [False, True]], 2, 2)
        """
        m, n = self.shape
        rb = max(1, -(-m // max_rows))
        cb = max(1, -(-n // max_cols))
        grid = np.zeros((-(-m // rb), -(-n // cb)), dtype=bool)
        indptr = np.asarray(self._csr.indptr, np.int64)
        step = PICTURE_CHUNK  # rows of about a million nonzeros at a time: no per-nonzero copy of the pattern
        lo = 0
        while lo < m:
            hi = int(np.searchsorted(indptr, indptr[lo] + step, side="right")) - 1
            hi = min(m, max(hi, lo + 1))
            r = np.repeat(np.arange(lo, hi, dtype=np.int64) // rb, np.diff(indptr[lo:hi + 1]))
            grid[r, self._csr.indices[indptr[lo]:indptr[hi]] // cb] = True
            lo = hi
        return grid, rb, cb

    def picture(self, max_rows: int = 32, max_cols: int = 64) -> str:
        """A small text picture: ``●`` for a nonzero, ``⋅`` for a zero; large patterns are binned.

        Examples:
            >>> import numpy as np
            >>> import stablehlo_sparsity as ss
            >>> print(ss.SparsityPattern(np.eye(4)).picture(max_rows=2, max_cols=2))
            ●⋅
            ⋅●
            (each character covers 2×2 entries)
        """
        m, n = self.shape
        if m == 0 or n == 0:
            return "(empty)"
        grid, rb, cb = self.binned(max_rows, max_cols)
        lines = ["".join("●" if v else "⋅" for v in row) for row in grid]
        if rb > 1 or cb > 1:
            lines.append(f"(each character covers {rb}×{cb} entries)")
        return "\n".join(lines)

    def to_png(self, max_pixels: int = 256) -> bytes:
        """The pattern as a black-on-white PNG of at most ``max_pixels`` a side (binned like :meth:`picture`,
        scaled up to at least 64 pixels a side); no plotting library needed.

        Examples:
            >>> import numpy as np
            >>> import stablehlo_sparsity as ss
            >>> png = ss.SparsityPattern(np.eye(4)).to_png()
            >>> png[1:4], int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")   # width, height
            (b'PNG', 64, 64)
        """
        m, n = self.shape
        grid, _, _ = self.binned(max_pixels, max_pixels) if m and n else (np.zeros((1, 1), bool), 1, 1)
        scale = max(1, 64 // max(grid.shape))
        img = np.where(np.kron(grid, np.ones((scale, scale), bool)), 0, 255).astype(np.uint8)
        return _png_gray(img)

    def _repr_html_(self) -> str:
        """Jupyter: the pattern as an image (:meth:`to_png`) with its shape, nonzeros and density."""
        import base64
        import html

        m, n = self.shape
        head = html.escape(f"SparsityPattern({m}×{n}, nnz={self.nnz}, density={self.density:.3g})")
        data = base64.b64encode(self.to_png()).decode("ascii")
        return (f'<div><div style="font-family: monospace">{head}</div>'
                f'<img alt="{head}" style="image-rendering: pixelated; border: 1px solid #888; width: 256px" '
                f'src="data:image/png;base64,{data}"/></div>')

    def spy(self, ax=None, markersize: float | None = None, **kwargs):
        """Plot the pattern with matplotlib (``Axes.spy``; the ``plot`` extra): one marker per nonzero,
        row 0 at the top.  Returns the ``Axes``.  For a terminal, ``print(pattern)`` or :meth:`picture`.

        Raises:
            InputError: matplotlib is not installed (the ``plot`` extra).
        """
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            from ..errors import InputError

            raise InputError("SparsityPattern.spy() needs matplotlib: pip install 'stablehlo_sparsity[plot]' "
                             "(or use .picture() for a text picture)") from None
        if ax is None:
            _, ax = plt.subplots()
        m, n = self.shape
        if markersize is None:  # about a pixel per entry on a default figure, at least a dot
            markersize = max(0.5, min(6.0, 300.0 / max(m, n, 1)))
        if self.nnz:
            ax.spy(self._csr, markersize=markersize, **kwargs)
        else:
            ax.set_xlim(-0.5, n - 0.5)
            ax.set_ylim(m - 0.5, -0.5)
        ax.set_title(f"{m}×{n}, nnz={self.nnz}")
        return ax

    def __repr__(self) -> str:
        m, n = self.shape
        head = f"SparsityPattern({m}×{n}, nnz={self.nnz}, density={self.density:.3g})"
        return head + "\n" + self.picture(16, 48)


def _png_gray(img: np.ndarray) -> bytes:
    """An 8-bit grayscale PNG of ``img`` (uint8, rows top to bottom): the format's minimal chunks, zlib only."""
    import struct
    import zlib

    h, w = img.shape
    raw = np.concatenate([np.zeros((h, 1), np.uint8), img], axis=1).tobytes()  # filter byte 0 on every row

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))

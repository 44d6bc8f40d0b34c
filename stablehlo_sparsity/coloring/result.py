"""What a coloring is: :class:`Coloring` (one kind of products) and :class:`Bicoloring` (JVPs and VJPs
together), and the canonical relabelling of colors by first appearance."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .kinds import ColoringKind

__all__ = ["Coloring", "Bicoloring", "canonical", "canonical_partial"]


@dataclass(frozen=True)
class Coloring:
    """A coloring of the columns (``kind="column"``), rows (``"row"``) or variables (``"star"``) of a pattern.

    colors: ``int32`` array, one color in ``[0, num_colors)`` per vertex.
    num_colors: the number of products (JVPs, VJPs or HVPs) one compressed evaluation needs; ``0`` when the
        pattern has no nonzeros (nothing to evaluate).
    order: how it was found (the winning ordering, plus ``+iterated`` / ``+tabu``).
    lower_bound: no valid coloring of this kind has fewer colors.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity import Coloring
        >>> c = Coloring(np.array([0, 1, 0], np.int32), 2, "column", (2, 3))
        >>> [g.tolist() for g in c.groups()], c.seed_matrix().tolist()
        ([[0, 2], [1]], [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    """

    colors: np.ndarray
    num_colors: int
    kind: ColoringKind  #: a member; a string naming one is accepted and converted
    shape: tuple[int, int]
    order: str = "natural"
    lower_bound: int = 0
    tried: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ColoringKind.parse(self.kind))

    def __len__(self) -> int:
        return len(self.colors)

    def groups(self) -> list[np.ndarray]:
        """The vertices of each color."""
        if self.num_colors == 0:
            return []
        order = np.argsort(self.colors, kind="stable")
        bounds = np.searchsorted(self.colors[order], np.arange(self.num_colors + 1))
        return [order[bounds[c]:bounds[c + 1]] for c in range(self.num_colors)]

    def seed_matrix(self, dtype=np.float64) -> np.ndarray:
        """The ``(len(colors), num_colors)`` 0/1 seed matrix ``S`` with ``S[v, colors[v]] = 1``."""
        s = np.zeros((len(self.colors), self.num_colors), dtype=dtype)
        if self.num_colors:
            s[np.arange(len(self.colors)), self.colors] = 1
        return s

    def __repr__(self) -> str:
        m, n = self.shape
        what = {ColoringKind.COLUMN: "columns", ColoringKind.ROW: "rows", ColoringKind.STAR: "variables (star)",
                ColoringKind.ACYCLIC: "variables (acyclic)"}[self.kind]
        return (f"Coloring({self.num_colors} colors for {len(self.colors)} {what} of a {m}×{n} pattern, "
                f"order={self.order!r}, lower bound {self.lower_bound})")


@dataclass(frozen=True)
class Bicoloring(Coloring):
    """A bidirectional coloring of an ``m × n`` pattern: forward and reverse products together.

    column_colors: ``int32`` ``(n,)``, a color in ``[0, num_column_colors)`` or ``-1`` (in no seed);
    row_colors: ``int32`` ``(m,)``, a color in ``[0, num_row_colors)`` or ``-1``.
    One evaluation takes ``num_column_colors`` JVPs (``B = J S_c``) and ``num_row_colors`` VJPs
    (``C = S_rᵀ J``): :attr:`num_colors` is their sum.  Every nonzero is read directly from one side (see
    :func:`~.check.bidirectional_sources`).  :attr:`colors` lists the columns' colors then the rows' shifted
    by ``num_column_colors`` (``-1`` kept): one color space of ``num_colors`` products over the ``n + m``
    vertices of the bipartite graph.  :meth:`seed_matrix` returns the pair ``(S_c, S_r)``.

    Examples:
        >>> from stablehlo_sparsity import Bicoloring
        >>> b = Bicoloring.from_sides([0, -1, 0], [-1, 0], (2, 3))   # columns 0 and 2 by a JVP, row 1 by a VJP
        >>> b.num_colors, b.mode, b.colors.tolist()
        (2, 'bidirectional', [0, -1, 0, -1, 1])
        >>> [s.shape for s in b.seed_matrix()]
        [(3, 1), (2, 1)]
    """

    column_colors: np.ndarray = None  # type: ignore[assignment]  # always given (from_sides)
    row_colors: np.ndarray = None  # type: ignore[assignment]
    num_column_colors: int = 0
    num_row_colors: int = 0

    @classmethod
    def from_sides(cls, column_colors, row_colors, shape, order: str = "given", lower_bound: int = 0,
                   tried: dict | None = None) -> "Bicoloring":
        """A Bicoloring from the two color arrays (``-1``: in no seed); colors are relabelled by first
        appearance on each side, so unused colors cost no product."""
        cc = canonical_partial(np.asarray(column_colors))
        rc = canonical_partial(np.asarray(row_colors))
        kc = int(cc.max()) + 1 if len(cc) else 0
        kr = int(rc.max()) + 1 if len(rc) else 0
        kc, kr = max(kc, 0), max(kr, 0)
        both = np.concatenate([cc, np.where(rc >= 0, rc + kc, -1)]).astype(np.int32)
        m, n = shape
        return cls(both, kc + kr, ColoringKind.BIDIRECTIONAL, (int(m), int(n)), order, lower_bound,
                   tried or {}, cc, rc, kc, kr)

    @property
    def mode(self) -> str:
        """``"forward"`` (no VJP), ``"reverse"`` (no JVP) or ``"bidirectional"``."""
        if self.num_row_colors == 0:
            return "forward"
        return "reverse" if self.num_column_colors == 0 else "bidirectional"

    def seed_matrix(self, dtype=np.float64):
        """``(S_c, S_r)``: ``n × num_column_colors`` and ``m × num_row_colors`` 0/1 seeds."""
        from .decompression import seed_matrix

        return seed_matrix(self, dtype=dtype)

    def __repr__(self) -> str:
        m, n = self.shape
        return (f"Bicoloring({self.num_colors} products for a {m}×{n} pattern: {self.num_column_colors} JVPs "
                f"over {int((self.column_colors >= 0).sum())} columns + {self.num_row_colors} VJPs over "
                f"{int((self.row_colors >= 0).sum())} rows, order={self.order!r}, lower bound {self.lower_bound})")


def canonical_partial(colors: np.ndarray) -> np.ndarray:
    """:func:`canonical` on the colored vertices; ``-1`` (in no seed) stays."""
    out = np.full(len(colors), -1, np.int32)
    on = colors >= 0
    out[on] = canonical(colors[on])
    return out


def canonical(colors: np.ndarray) -> np.ndarray:
    """Relabel colors by first appearance (vertex 0 gets color 0, …): same classes, a reproducible form."""
    if len(colors) == 0:
        return np.zeros(0, np.int32)
    top = int(colors.max())
    if top < 64 and int(colors.min()) >= 0:  # few colors: one vectorized scan per color beats a sort
        first = np.array([int(np.argmax(colors == c)) if (colors == c).any() else len(colors) for c in range(top + 1)])
        rank = np.empty(top + 1, np.int32)
        rank[np.argsort(first, kind="stable")] = np.arange(top + 1, dtype=np.int32)
        return rank[colors]
    labels, first = np.unique(colors, return_index=True)
    rank = np.empty(int(labels.max()) + 1, np.int32)
    rank[labels[np.argsort(first)]] = np.arange(len(labels), dtype=np.int32)
    return rank[colors]

"""The graphs behind the colorings, as flat CSR index arrays.

A Jacobian pattern ``J`` (m × n) is a bipartite graph: rows on one side, columns on the other, one edge per
nonzero.  Two columns *conflict* (may not share a color in a column coloring) when they are at distance 2,
i.e. share a row; two rows conflict when they share a column.  The kernels walk these distance-2
neighbourhoods on the fly through two CSR structures — ``(ptr, nbr)`` from a vertex to its incident
vertices on the other side, and ``(optr, onbr)`` back — so the column intersection graph ``JᵀJ`` (which can
have far more edges than ``J``) is never built.

A symmetric Hessian pattern ``H`` (n × n) is an adjacency graph: one vertex per variable, one edge per
off-diagonal nonzero pair; the diagonal is not an edge.

Index arrays are ``int32`` (``int64`` only beyond 2³¹ nonzeros): the kernels are memory-bound walks, and
one dtype for every array of a graph keeps one compiled signature per kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..dtypes import index_dtype
__all__ = ["as_csr", "Bipartite", "Adjacency", "bipartite", "adjacency"]


def as_csr(pattern) -> sp.csr_array:
    """A canonical boolean ``csr_array`` from a :class:`~stablehlo_sparsity.SparsityPattern`, any SciPy sparse
    matrix or array, or a dense array (nonzero ⇒ True)."""
    from ..lattice.pattern import SparsityPattern

    if isinstance(pattern, SparsityPattern):
        return pattern.to_scipy()
    if sp.issparse(pattern):
        m = sp.csr_array(pattern)
    else:
        a = np.asarray(pattern)
        if a.ndim != 2:
            raise ValueError(f"a sparsity pattern must be 2-D, got shape {a.shape}")
        m = sp.csr_array(a != 0)
    return SparsityPattern(m).to_scipy()


def _index_dtype(csr) -> type:
    return index_dtype(csr.nnz, *csr.shape)


def _idx(a, dtype) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=dtype)


@dataclass(frozen=True)
class Bipartite:
    """Vertices to color (``nv`` of them) and the other side: ``nbr[ptr[v]:ptr[v+1]]`` are the other-side
    vertices incident to ``v``; ``onbr[optr[w]:optr[w+1]]`` the to-color vertices incident to ``w``."""

    nv: int
    ptr: np.ndarray
    nbr: np.ndarray
    optr: np.ndarray
    onbr: np.ndarray

    @property
    def lower_bound(self) -> int:
        """Largest number of to-color vertices sharing one other-side vertex: they pairwise conflict."""
        return int(np.diff(self.optr).max()) if len(self.optr) > 1 else 0


def bipartite(pattern, side: str = "column", csc=None) -> Bipartite:
    """The bipartite graph of ``pattern`` with its columns (``side="column"``) or rows (``"row"``) to color
    (``csc``: the pattern's CSC form, when the caller has it)."""
    csr = as_csr(pattern)
    if csc is None:
        csc = csr.tocsc()
    t = _index_dtype(csr)
    if side == "column":
        return Bipartite(csr.shape[1], _idx(csc.indptr, t), _idx(csc.indices, t), _idx(csr.indptr, t),
                         _idx(csr.indices, t))
    if side == "row":
        return Bipartite(csr.shape[0], _idx(csr.indptr, t), _idx(csr.indices, t), _idx(csc.indptr, t),
                         _idx(csc.indices, t))
    raise ValueError(f"side must be 'column' or 'row', got {side!r}")


@dataclass(frozen=True)
class Adjacency:
    """The adjacency graph of a symmetric pattern: ``nbr[ptr[v]:ptr[v+1]]`` are the neighbours of ``v``
    (no self-loops)."""

    nv: int
    ptr: np.ndarray
    nbr: np.ndarray

    @property
    def max_degree(self) -> int:
        return int(np.diff(self.ptr).max()) if self.nv else 0


def symmetrize(pattern) -> sp.csr_array:
    """``P ∪ Pᵀ`` of a square pattern, canonical bool CSR: ``P`` itself when it is symmetric already (a Hessian
    pattern handed to a coloring, the gradient program's Jacobian nearly always), which two comparisons of index
    arrays tell (both canonical: sorted, no duplicates) at a fraction of the sum's cost."""
    csr = as_csr(pattern)
    if csr.shape[0] != csr.shape[1]:
        raise ValueError(f"a symmetric pattern must be square, got shape {csr.shape}")
    transposed = csr.T.tocsr()  # (SciPy's conversion writes each row's columns in order)
    if np.array_equal(transposed.indptr, csr.indptr) and np.array_equal(transposed.indices, csr.indices):
        return csr
    return as_csr((csr + transposed).astype(bool))


def adjacency(pattern) -> Adjacency:
    """The adjacency graph of the symmetrized square ``pattern`` (diagonal dropped)."""
    sym = symmetrize(pattern)
    n = sym.shape[0]
    t = _index_dtype(sym)
    rows = np.repeat(np.arange(n, dtype=t), np.diff(sym.indptr))
    cols = sym.indices.astype(t, copy=False)
    off = rows != cols
    indptr = np.zeros(n + 1, t)
    np.cumsum(np.bincount(rows[off], minlength=n), out=indptr[1:])
    return Adjacency(n, indptr, _idx(cols[off], t))

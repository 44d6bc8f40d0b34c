"""What :func:`~stablehlo_sparsity.check_jacobian` / :func:`~stablehlo_sparsity.check_hessian` check: any
matrix a user holds, sorted into three kinds.

* a **prepared** object (public ``values``, ``pattern``, ``argnums``, ``shape``) — evaluated at every point;
* a **wrapper** that says what it wraps through the protocol method ``__sparse_derivative__()`` (returning a
  :class:`WrappedDerivative`: :class:`~stablehlo_sparsity.interop.scipy.ScipyJacobian`, the IPOPT triplet
  callables, whose coordinates are fixed and whose Lagrangian Hessian holds the lower triangle) — called as its
  consumer calls it.  The checks know no wrapper class: interop sits above them and implements the protocol;
* a **matrix** (SciPy sparse, JAX ``BCOO``/``BCSR``, dense NumPy/JAX, ``jax.jacfwd``'s ``output + input`` shape,
  a lineax operator) — a value at ``args`` only.

Each becomes a float64 SciPy CSR matrix and the structure it claims (``None`` for dense arrays).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from ..errors import InputError

__all__ = ["Candidate", "WrappedDerivative", "WrongShape", "candidate_of", "to_csr"]


@dataclass(frozen=True)
class WrappedDerivative:
    """What a wrapper of a prepared derivative says of itself (its ``__sparse_derivative__()``): the prepared
    object it wraps and how its consumer calls it.

    ``coordinates``: ``None`` when a call returns a matrix (SciPy); else the ``(rows, cols)`` of the flat value
    vector a call returns (IPOPT's triplets), with ``lower_triangle`` when they hold the lower triangle of a
    symmetric matrix (IPOPT's Lagrangian Hessian)."""

    prepared: Any
    call: Callable
    coordinates: tuple[np.ndarray, np.ndarray] | None = None
    lower_triangle: bool = False


# --------------------------------------------------------------------------------------- candidates
@dataclass
class Candidate:
    """What is checked: its matrix at a point (float64 CSR ``(m, n)`` and the dtype it came in), the pattern it
    claims (or ``None``), whether it is a value at ``args`` only, and the selection it was prepared for."""

    describe: str
    at: Callable[[tuple], Any]
    pattern: Any = None
    fixed: bool = False
    argnums: tuple | None = None
    has_aux: bool | None = None
    num_colors: int = 0
    shape: tuple | None = None


def _split_shape(shape, m: int, n: int):
    """``(m, n)`` for an array whose leading dims flatten to ``m`` and trailing dims to ``n``
    (``jax.jacfwd``'s ``output shape + input shape``), else ``None``."""
    shape = tuple(int(s) for s in shape)
    for k in range(len(shape) + 1):
        if int(np.prod(shape[:k], dtype=np.int64)) == m and int(np.prod(shape[k:], dtype=np.int64)) == n:
            return m, n
    return None


def _matrix_shape(shape, m: int, n: int) -> tuple[int, int]:
    if len(shape) == 2:
        return int(shape[0]), int(shape[1])
    got = _split_shape(shape, m, n)
    if got is None:
        raise WrongShape(tuple(int(s) for s in shape))
    return got


class WrongShape(Exception):
    def __init__(self, shape):
        self.shape = shape


def to_csr(obj, m: int, n: int):
    """``(matrix as float64 CSR, pattern CSR or None, dtype)`` of a plain matrix container."""
    import jax

    from jax.experimental import sparse as jsparse

    if sp.issparse(obj):
        csr = sp.csr_array(obj).astype(np.float64)
        csr.sum_duplicates()
        return csr, csr, obj.dtype
    if isinstance(obj, jsparse.BCSR):
        if not obj.n_batch and not obj.n_dense and len(obj.shape) == 2:  # (read as is: to_bcoo compiles)
            csr = sp.csr_array((np.asarray(obj.data, np.float64), np.asarray(obj.indices), np.asarray(obj.indptr)),
                               shape=tuple(int(d) for d in obj.shape))
            csr.sum_duplicates()
            return csr, csr, obj.dtype
        obj = obj.to_bcoo()
    if isinstance(obj, jsparse.BCOO):
        if obj.n_batch or obj.n_dense:
            obj = jsparse.bcoo_update_layout(obj, n_batch=0, n_dense=0)
        mm, nn = _matrix_shape(obj.shape, m, n)
        idx = np.asarray(obj.indices).reshape(-1, len(obj.shape))
        flat = np.ravel_multi_index(tuple(idx.T), obj.shape) if idx.size else np.zeros(0, np.int64)
        rows, cols = np.divmod(flat, nn) if nn else (flat, flat)
        csr = sp.csr_array((np.asarray(obj.data, np.float64).ravel(), (rows, cols)), shape=(mm, nn))
        csr.sum_duplicates()  # (duplicates add, as BCOO's own todense does)
        return csr, csr, obj.dtype
    if hasattr(obj, "csr") and hasattr(obj, "in_structure"):  # lineax_interop.SparseJacobianOperator
        data, indices, indptr = obj.csr()
        mm = len(indptr) - 1
        csr = sp.csr_array((np.asarray(data, np.float64), np.asarray(indices), np.asarray(indptr)),
                           shape=(mm, _lineax_cols(obj)))
        return csr, csr, np.asarray(data).dtype
    if hasattr(obj, "as_matrix") and hasattr(obj, "in_structure"):  # any other lineax operator
        obj = obj.as_matrix()
    if isinstance(obj, (np.ndarray, jax.Array)) or np.ndim(obj):
        a = np.asarray(obj)
        if not np.issubdtype(a.dtype, np.number) and a.dtype.name != "bfloat16":
            raise InputError(f"a matrix must hold numbers, got dtype {a.dtype}")
        mm, nn = _matrix_shape(a.shape, m, n)
        return sp.csr_array(a.astype(np.float64).reshape(mm, nn)), None, a.dtype
    raise InputError(f"cannot check a {type(obj).__name__}: expected a prepared Jacobian/Hessian, a JAX BCOO/BCSR, "
                     "a SciPy sparse matrix, a dense array, a lineax operator or a SciPy/IPOPT wrapper")


def _lineax_cols(op) -> int:
    import jax

    return int(sum(np.size(x) for x in jax.tree_util.tree_leaves(op.in_structure())))


def wrapped_of(obj) -> WrappedDerivative | None:
    """What a wrapper says it wraps (the ``__sparse_derivative__`` protocol), or ``None`` for anything else."""
    method = getattr(type(obj), "__sparse_derivative__", None)
    if method is None:
        return None
    wrapped = method(obj)
    if not isinstance(wrapped, WrappedDerivative):
        raise InputError(f"{type(obj).__name__}.__sparse_derivative__() returned {type(wrapped).__name__}, "
                         "not a WrappedDerivative")
    return wrapped


def candidate_of(obj, kind: str) -> Candidate:
    """Sort what the user passed into one of the three kinds (prepared, wrapper, matrix)."""
    name = type(obj).__name__
    wrapped = wrapped_of(obj)
    if wrapped is not None and wrapped.coordinates is not None:  # triplets in fixed coordinates (IPOPT)
        inner, call = wrapped.prepared, wrapped.call
        rows, cols = (np.asarray(a, np.int64) for a in wrapped.coordinates)
        shape = tuple(inner.shape)
        lower = wrapped.lower_triangle

        def ipopt_at(pt):
            raw = np.asarray(call(*pt))
            v = raw.astype(np.float64)
            if lower:  # IPOPT holds the lower triangle: mirror it
                off = rows != cols
                r, c, v = np.r_[rows, cols[off]], np.r_[cols, rows[off]], np.r_[v, v[off]]
            else:
                r, c = rows, cols
            return sp.csr_array((v, (r, c)), shape=shape), raw.dtype

        pattern = _ipopt_pattern(rows, cols, shape, lower)
        return Candidate(f"{name} triplets", ipopt_at, pattern, False, tuple(inner.argnums), inner.has_aux,
                          int(getattr(inner, "num_colors", 0)), shape)
    if all(hasattr(obj, a) for a in ("values", "pattern", "argnums", "shape")) and callable(obj.values):
        csr = obj.pattern.to_scipy()
        shape = tuple(csr.shape)

        def prepared_at(pt):
            values = np.asarray(obj.values(*pt))
            return sp.csr_array((values.astype(np.float64), csr.indices, csr.indptr), shape=shape), values.dtype

        return Candidate(f"prepared {kind}", prepared_at, csr, False, tuple(obj.argnums),
                          bool(getattr(obj, "has_aux", False)), int(getattr(obj, "num_colors", 0)), shape)
    if wrapped is not None:  # a wrapper called as its consumer calls it (ScipyJacobian …), returning a matrix
        inner, call = wrapped.prepared, wrapped.call
        pat = inner.pattern.to_scipy()
        shape = tuple(pat.shape)

        def wrapper_at(pt):
            csr, _, dtype = to_csr(call(*pt), *shape)
            return csr, dtype

        return Candidate(f"{name} wrapper", wrapper_at, pat, False, tuple(inner.argnums),
                          bool(getattr(inner, "has_aux", False)), int(getattr(inner, "num_colors", 0)), shape)
    return Candidate(f"{name} matrix", lambda pt: None, None, True)


def _ipopt_pattern(rows, cols, shape, lower):
    if lower:
        off = rows != cols
        rows, cols = np.r_[rows, cols[off]], np.r_[cols, rows[off]]
    p = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=shape)
    p.sum_duplicates()
    return p

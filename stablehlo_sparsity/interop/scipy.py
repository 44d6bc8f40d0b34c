"""SciPy: ready ``jac=`` callables, ``jac_sparsity=`` patterns and matrix-free ``LinearOperator`` s.

    >>> import numpy as np, jax.numpy as jnp
    >>> from scipy.optimize import least_squares
    >>> from stablehlo_sparsity.interop.scipy import least_squares_jacobian
    >>> def residual(x):
    ...     return x ** 2 + 0.5 * jnp.roll(x, 1) - 1.5
    >>> x0 = np.full(6, 0.5, np.float32)
    >>> sol = least_squares(residual, x0, jac=least_squares_jacobian(residual, x0))
    >>> bool(np.allclose(sol.x, 1, atol=1e-3))
    True

SciPy calls ``fun`` and ``jac`` with NumPy arrays on the host: each call here runs the prepared, compiled
compressed Jacobian (``num_colors`` JVPs or VJPs in one XLA program) and wraps its nonzeros around the
pattern's static index arrays, so a call costs one device round trip and no Python loop.

* :func:`least_squares_jacobian` — ``jac(x, *args)`` for :func:`scipy.optimize.least_squares` (CSR);
* :func:`ivp_jacobian` — ``jac(t, y)`` for :func:`scipy.integrate.solve_ivp` with ``method="BDF"`` /
  ``"Radau"`` (CSC, what their sparse LU factorizes);
* :func:`jac_sparsity` — the pattern as a SciPy matrix for ``jac_sparsity=`` (SciPy then estimates the
  values by grouped finite differences: the pattern alone, no AD);
* :func:`jacobian_operator` — a matrix-free :class:`scipy.sparse.linalg.LinearOperator` of the Jacobian at a
  point (``matvec`` by one JVP, ``rmatvec`` by one VJP), for Krylov solvers.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from ..derivatives.check_candidates import WrappedDerivative
from ..errors import InputError
from ..ir.keywords import refuse_library_keywords

__all__ = ["ScipyJacobian", "least_squares_jacobian", "ivp_jacobian", "jac_sparsity", "jacobian_operator"]


class ScipyJacobian:
    """A host-side Jacobian callable for SciPy around a prepared :class:`~stablehlo_sparsity.SparseJacobian`.

    ``signature="x"``: ``jac(x, *args)`` differentiates ``f(x, *args)`` in ``x`` (``least_squares``);
    ``signature="t,y"``: ``jac(t, y)`` differentiates ``f(t, y)`` in ``y`` (``solve_ivp``).
    Returns a ``scipy.sparse`` matrix in ``format`` (``"csr"`` or ``"csc"``) whose structure is the detected
    pattern (explicit zeros included: the structure never changes between calls, so SciPy's symbolic work
    can be reused).  ``sparse_jacobian`` is the prepared object (its ``pattern``, ``coloring`` …).

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity.interop.scipy import least_squares_jacobian
        >>> jac = least_squares_jacobian(lambda x: x[1:] * x[:-1], np.ones(4, np.float32))   # a ScipyJacobian
        >>> J = jac(np.arange(4, dtype=np.float32))
        >>> type(J).__name__, J.nnz, jac.sparse_jacobian.num_colors, jac.nfev
        ('csr_matrix', 6, 2, 1)
    """

    def __init__(self, sparse_jacobian, signature: str, format: str):
        if format not in ("csr", "csc"):
            raise InputError(f"format must be 'csr' or 'csc', got {format!r}")
        self.sparse_jacobian = sparse_jacobian
        self.signature = signature
        self.format = format
        csr = sparse_jacobian.pattern.to_scipy()
        self._indices = csr.indices.astype(np.int32, copy=True)
        self._indptr = csr.indptr.astype(np.int32, copy=True)
        self.shape = csr.shape
        if format == "csc":
            # CSR order → CSC order of the same nonzeros: one static permutation of the value vector
            perm = sp.csr_array((np.arange(csr.nnz, dtype=np.float64), self._indices, self._indptr),
                                shape=csr.shape).tocsc()
            perm.sort_indices()
            self._perm = perm.data.astype(np.int64)
            self._csc_indices, self._csc_indptr = perm.indices.astype(np.int32), perm.indptr.astype(np.int32)
        self.nfev = 0

    @property
    def pattern(self):
        return self.sparse_jacobian.pattern

    def __sparse_derivative__(self) -> WrappedDerivative:
        """For :func:`~stablehlo_sparsity.check_jacobian`: the prepared Jacobian, called as SciPy calls it."""
        return WrappedDerivative(self.sparse_jacobian, self)

    def values(self, *args) -> np.ndarray:
        """The nonzeros (CSR order of :attr:`pattern`) as a NumPy array."""
        self.nfev += 1
        return np.asarray(self.sparse_jacobian.values(*args))

    def __call__(self, *args):
        if self.signature == "t,y":
            t, y = args
            y = np.asarray(y)
            v = self.values(np.asarray(t, dtype=y.dtype), y)
        else:
            v = self.values(*args)
        if self.format == "csr":
            return sp.csr_matrix((v, self._indices, self._indptr), shape=self.shape)
        return sp.csc_matrix((v[self._perm], self._csc_indices, self._csc_indptr), shape=self.shape)

    def __repr__(self) -> str:
        return f"ScipyJacobian({self.signature}: {self.sparse_jacobian!r}, format={self.format!r})"


def _prepare(f, args, argnums, options, prepare_kwargs, what: str):
    from ..derivatives.jacobian import sparse_jacobian

    refuse_library_keywords(what, prepare_kwargs)
    return sparse_jacobian(f, *args, argnums=argnums, output="values", options=options, **prepare_kwargs)


def least_squares_jacobian(fun: Callable, x0, *args, format: str = "csr", options=None,
                           **prepare_kwargs) -> ScipyJacobian:
    """``jac=`` for :func:`scipy.optimize.least_squares` (also ``root(..., method="krylov")`` style users):
    ``jac(x, *args)`` returns the sparse Jacobian of ``fun(x, *args)`` at ``x`` as a ``csr_matrix``.

    ``fun`` is a JAX-traceable function of the same arguments; ``x0`` and ``args`` give shapes and dtypes
    (pass ``float32`` arrays unless ``jax_enable_x64`` is on).  Pass the same ``args`` to
    ``least_squares(..., args=args)``.  ``prepare_kwargs`` go to :func:`~stablehlo_sparsity.sparse_jacobian`
    (``mode``, ``order`` …); ``options`` is an :class:`~stablehlo_sparsity.AnalysisOptions`.

    Raises:
        InputError: the errors of ``sparse_jacobian`` (bad arguments or options; ``LoweringError`` when JAX cannot
            lower the function), an unknown ``format``, or a library keyword it does not take.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity.interop.scipy import least_squares_jacobian
        >>> jac = least_squares_jacobian(lambda x, c: x[1:] * x[:-1] - c, np.ones(4, np.float32), np.float32(1))
        >>> jac(np.arange(4, dtype=np.float32), np.float32(1)).toarray().tolist()
        [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0], [0.0, 0.0, 3.0, 2.0]]
    """
    return ScipyJacobian(_prepare(fun, (x0, *args), 0, options, prepare_kwargs, "least_squares_jacobian"), "x", format)


def ivp_jacobian(rhs: Callable, t0, y0, *, format: str = "csc", options=None, **prepare_kwargs) -> ScipyJacobian:
    """``jac=`` for :func:`scipy.integrate.solve_ivp` (``"BDF"``, ``"Radau"``, ``"LSODA"`` takes dense):
    ``jac(t, y)`` returns ∂rhs/∂y at ``(t, y)`` as a ``csc_matrix`` (the format SciPy's sparse LU uses).

    ``rhs(t, y)`` is JAX-traceable; ``t`` is passed as a 0-d array of ``y``'s dtype.

    Raises:
        InputError: the errors of ``sparse_jacobian`` (bad arguments or options; ``LoweringError`` when JAX cannot
            lower the function), an unknown ``format``, or a library keyword it does not take.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity.interop.scipy import ivp_jacobian
        >>> jac = ivp_jacobian(lambda t, y: -t * y ** 2, 0.0, np.ones(3, np.float32))
        >>> J = jac(2.0, np.ones(3, np.float32))
        >>> J.format, J.toarray().tolist()
        ('csc', [[-4.0, 0.0, 0.0], [0.0, -4.0, 0.0], [0.0, 0.0, -4.0]])
    """
    y0 = np.asarray(y0)
    t0 = np.asarray(t0, dtype=y0.dtype)
    return ScipyJacobian(_prepare(rhs, (t0, y0), 1, options, prepare_kwargs, "ivp_jacobian"), "t,y", format)


def jac_sparsity(f: Callable, *args, argnums: int | Sequence[int] = 0, format: str = "csr", options=None,
                 on_unknown: str = "error", derivatives: str = "auto", **kwargs):
    """The detected pattern as a SciPy matrix (``jac_sparsity=`` of ``least_squares`` and ``solve_ivp``):
    ones at the nonzeros.  SciPy then groups columns and estimates the Jacobian by finite differences.

    Raises:
        InputError: the errors of ``jacobian_sparsity`` (bad arguments or options; ``LoweringError`` when JAX
            cannot lower ``f``), or a library keyword this function does not take.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.
        ValueError: an unknown ``format`` or ``derivatives``.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity.interop.scipy import jac_sparsity
        >>> jac_sparsity(lambda x: x[1:] * x[:-1], np.ones(4, np.float32)).toarray().astype(int).tolist()
        [[1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    """
    from ..analysis.api import jacobian_sparsity

    refuse_library_keywords("jac_sparsity", kwargs, f)
    p = jacobian_sparsity(f, *args, argnums=argnums, options=options, on_unknown=on_unknown,
                          derivatives=derivatives, **kwargs).to_scipy()
    m = sp.csr_matrix((np.ones(p.nnz), p.indices, p.indptr), shape=p.shape)
    return m.asformat(format)


def jacobian_operator(f: Callable, x, *args, dtype=None):
    """A matrix-free :class:`scipy.sparse.linalg.LinearOperator` of ``∂f/∂x`` at ``(x, *args)``:
    ``matvec`` is one JVP, ``rmatvec`` one VJP, both jitted (compiled once per operator).  No pattern is
    needed: for Krylov solvers (``gmres``, ``lsmr`` …) when even the sparse Jacobian is too large.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity.interop.scipy import jacobian_operator
        >>> op = jacobian_operator(lambda x: x[1:] * x[:-1], np.arange(4, dtype=np.float32))
        >>> op.shape, op.matvec(np.ones(4)).tolist(), op.rmatvec(np.ones(3)).tolist()
        ((3, 4), [1.0, 3.0, 5.0], [1.0, 2.0, 4.0, 2.0])
    """
    import jax
    import jax.numpy as jnp
    from scipy.sparse.linalg import LinearOperator

    x = jnp.asarray(x)
    y, pullback = jax.vjp(lambda v: f(v, *args), x)
    m, n = int(np.size(y)), int(x.size)
    jvp = jax.jit(lambda v: jnp.ravel(jax.jvp(lambda u: f(u, *args), (x,), (v.reshape(x.shape),))[1]))
    vjp = jax.jit(lambda u: jnp.ravel(pullback(u.reshape(jnp.shape(y)))[0]))
    dt = np.dtype(dtype or x.dtype)
    return LinearOperator((m, n), matvec=lambda v: np.asarray(jvp(jnp.asarray(np.ravel(v), x.dtype))),
                          rmatvec=lambda u: np.asarray(vjp(jnp.asarray(np.ravel(u), jnp.result_type(y)))),
                          dtype=dt)

"""IPOPT (through ``cyipopt``): sparse constraint Jacobians and Lagrangian Hessians in IPOPT's layout.

IPOPT asks for derivatives as triplets: a fixed structure ``(rows, cols)`` once, then the values in the
same order at every iterate.  The constraint Jacobian is every nonzero of ``∂c/∂x``; the Hessian of the
Lagrangian ``L(x, λ, σ) = σ f(x) + λᵀ c(x)`` is its **lower triangle** (``row ≥ col``), since it is
symmetric.

    >>> import numpy as np, jax.numpy as jnp
    >>> from stablehlo_sparsity.interop.ipopt import sparse_lagrangian_hessian
    >>> f = lambda x: jnp.sum((x[1:] - x[:-1] ** 2) ** 2)
    >>> c = lambda x: x[:2] ** 2
    >>> H = sparse_lagrangian_hessian(f, c, np.ones(4, np.float32))
    >>> rows, cols = H.structure()
    >>> bool((rows >= cols).all()), len(rows)
    (True, 7)

* :func:`sparse_constraint_jacobian` — ``structure()`` and ``__call__(x)`` (values in that order);
* :func:`sparse_lagrangian_hessian` — ``structure()`` (lower triangle) and ``__call__(x, lagrange,
  obj_factor)``, one compiled program: ``num_colors`` Hessian-vector products of the Lagrangian;
* :class:`IpoptProblem` — the methods ``cyipopt.Problem(..., problem_obj=...)`` calls (objective, gradient,
  constraints, jacobian, jacobianstructure, hessian, hessianstructure).

The Lagrangian's pattern is detected once for unknown multipliers, so it holds for every ``λ`` and ``σ``:
the union of the objective's and every constraint's Hessian patterns.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..ir.keywords import refuse_library_keywords
from ..derivatives.check_candidates import WrappedDerivative
from ..derivatives.prepared.inputs import flat

__all__ = ["ConstraintJacobian", "LagrangianHessian", "sparse_constraint_jacobian", "sparse_lagrangian_hessian",
           "IpoptProblem"]


class ConstraintJacobian:
    """``∂c/∂x`` as IPOPT triplets: :meth:`structure` gives ``(rows, cols)``, a call gives the values.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity.interop.ipopt import sparse_constraint_jacobian
        >>> J = sparse_constraint_jacobian(lambda x: x[1:] * x[:-1], np.ones(4, np.float32))   # a ConstraintJacobian
        >>> [a.tolist() for a in J.structure()], J(np.arange(4.0)).tolist()
        ([[0, 0, 1, 1, 2, 2], [0, 1, 1, 2, 2, 3]], [1.0, 0.0, 2.0, 1.0, 3.0, 2.0])
    """

    def __init__(self, constraints: Callable, x0, options=None, **prepare_kwargs):
        from ..derivatives.jacobian import sparse_jacobian

        self.sparse_jacobian = sparse_jacobian(lambda x: flat(constraints(x)), x0, output="values",
                                               options=options, **prepare_kwargs)
        rows, cols = self.sparse_jacobian.pattern.to_coo()
        self._rows, self._cols = rows.astype(np.int32), cols.astype(np.int32)

    @property
    def pattern(self):
        return self.sparse_jacobian.pattern

    @property
    def nnz(self) -> int:
        return len(self._rows)

    def structure(self) -> tuple[np.ndarray, np.ndarray]:
        """Row and column indices of the nonzeros (0-based, CSR order); IPOPT's ``jacobianstructure``."""
        return self._rows, self._cols

    def __sparse_derivative__(self) -> WrappedDerivative:
        """For :func:`~stablehlo_sparsity.check_jacobian`: the prepared Jacobian and the triplets a call returns."""
        return WrappedDerivative(self.sparse_jacobian, self, (self._rows, self._cols))

    def __call__(self, x) -> np.ndarray:
        """The nonzeros at ``x`` in :meth:`structure` order; IPOPT's ``jacobian``."""
        return np.asarray(self.sparse_jacobian.values(np.asarray(x, self.sparse_jacobian.example_args[0].dtype)))


class LagrangianHessian:
    """The lower triangle of ``∇²ₓ (σ f + λᵀ c)`` as IPOPT triplets.

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from stablehlo_sparsity.interop.ipopt import sparse_lagrangian_hessian
        >>> H = sparse_lagrangian_hessian(lambda x: jnp.sum(x ** 2), lambda x: x[:1] * x[1:2], np.ones(3, np.float32))
        >>> [a.tolist() for a in H.structure()], H(np.ones(3), lagrange=[3.0], obj_factor=0.5).tolist()
        ([[0, 1, 1, 2], [0, 0, 1, 2]], [1.0, 3.0, 1.0, 1.0])
    """

    def __init__(self, objective: Callable, constraints: Callable | None, x0, options=None, **prepare_kwargs):
        import jax
        import jax.numpy as jnp

        from ..derivatives.hessian import sparse_hessian

        x0 = np.asarray(x0)
        m = (int(np.prod(jax.eval_shape(lambda x: flat(constraints(x)), jnp.asarray(x0)).shape))
             if constraints is not None else 0)

        def lagrangian(x, lagrange, obj_factor):
            val = obj_factor * objective(x)
            if constraints is not None:
                val = val + jnp.vdot(lagrange, flat(constraints(x)))
            return val

        self.m = m
        self._dtype = x0.dtype
        self.sparse_hessian = sparse_hessian(lagrangian, x0, np.ones(m, x0.dtype), np.asarray(1.0, x0.dtype),
                                             output="values", options=options, **prepare_kwargs)
        rows, cols = self.sparse_hessian.pattern.to_coo()
        lower = rows >= cols
        self._pos = np.flatnonzero(lower)
        self._rows, self._cols = rows[lower].astype(np.int32), cols[lower].astype(np.int32)

    @property
    def pattern(self):
        """The full (symmetric) Hessian pattern; :meth:`structure` is its lower triangle."""
        return self.sparse_hessian.pattern

    @property
    def nnz(self) -> int:
        return len(self._rows)

    def structure(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows and columns of the lower triangle (``row ≥ col``); IPOPT's ``hessianstructure``."""
        return self._rows, self._cols

    def __sparse_derivative__(self) -> WrappedDerivative:
        """For :func:`~stablehlo_sparsity.check_hessian`: the prepared Hessian and the lower-triangle triplets."""
        return WrappedDerivative(self.sparse_hessian, self, (self._rows, self._cols), lower_triangle=True)

    def __call__(self, x, lagrange=None, obj_factor=1.0) -> np.ndarray:
        """The lower-triangle values at ``x`` for multipliers ``lagrange`` and objective factor
        ``obj_factor``, in :meth:`structure` order; IPOPT's ``hessian``."""
        dt = self._dtype
        lam = np.zeros(self.m, dt) if lagrange is None else np.asarray(lagrange, dt)
        v = np.asarray(self.sparse_hessian.values(np.asarray(x, dt), lam, np.asarray(obj_factor, dt)))
        return v[self._pos]


def sparse_constraint_jacobian(constraints: Callable, x0, *, options=None, **prepare_kwargs) -> ConstraintJacobian:
    """Prepare ``∂c/∂x`` of ``constraints(x)`` (any pytree of arrays, flattened in leaf order) at the shape
    of ``x0`` for IPOPT; see :class:`ConstraintJacobian`.

    Raises:
        InputError: the errors of ``sparse_jacobian`` (bad arguments or options; ``LoweringError`` when JAX cannot
            lower ``constraints``), or a library keyword it does not take.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity.interop.ipopt import sparse_constraint_jacobian
        >>> J = sparse_constraint_jacobian(lambda x: {"a": x[:2] ** 2, "b": x.sum()}, np.ones(3, np.float32))
        >>> J.nnz, J(np.arange(3.0)).tolist()
        (5, [0.0, 2.0, 1.0, 1.0, 1.0])
    """
    refuse_library_keywords("sparse_constraint_jacobian", prepare_kwargs)
    return ConstraintJacobian(constraints, x0, options=options, **prepare_kwargs)


def sparse_lagrangian_hessian(objective: Callable, constraints: Callable | None, x0, *, options=None,
                              **prepare_kwargs) -> LagrangianHessian:
    """Prepare the Hessian of the Lagrangian ``σ objective(x) + λᵀ constraints(x)`` at the shape of ``x0``
    for IPOPT (lower triangle); ``constraints=None`` for an unconstrained problem.

    Raises:
        InputError: the errors of ``sparse_hessian`` (an objective that is not scalar, bad arguments or options;
            ``LoweringError`` when JAX cannot lower the Lagrangian), or a library keyword it does not take.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from stablehlo_sparsity.interop.ipopt import sparse_lagrangian_hessian
        >>> H = sparse_lagrangian_hessian(lambda x: jnp.sum(x[1:] * x[:-1]), None, np.ones(3, np.float32))
        >>> [a.tolist() for a in H.structure()], H(np.ones(3)).tolist()
        ([[1, 2], [0, 1]], [1.0, 1.0])
    """
    refuse_library_keywords("sparse_lagrangian_hessian", prepare_kwargs)
    return LagrangianHessian(objective, constraints, x0, options=options, **prepare_kwargs)


class IpoptProblem:
    """The callbacks ``cyipopt.Problem(n, m, problem_obj=IpoptProblem(f, c, x0), lb=…, ub=…, cl=…, cu=…)``
    needs, with exact sparse first and second derivatives (objective and constraint values and the
    gradient are jitted JAX functions).

    Raises:
        InputError: the errors of ``sparse_constraint_jacobian`` and ``sparse_lagrangian_hessian``.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.

    Examples:
        >>> import numpy as np, jax.numpy as jnp
        >>> from stablehlo_sparsity.interop.ipopt import IpoptProblem
        >>> prob = IpoptProblem(lambda x: jnp.sum(x ** 2), lambda x: x[1:] * x[:-1], np.ones(3, np.float32))
        >>> prob.n, prob.m, prob.objective(np.ones(3)), prob.constraints(np.arange(3.0)).tolist()
        (3, 2, 3.0, [0.0, 2.0])
        >>> [a.tolist() for a in prob.hessianstructure()]
        [[0, 1, 1, 2, 2], [0, 0, 1, 1, 2]]
    """

    def __init__(self, objective: Callable, constraints: Callable, x0, *, options=None):
        import jax
        import jax.numpy as jnp

        x0 = np.asarray(x0)
        self._dtype = x0.dtype
        self._objective = jax.jit(objective)
        self._gradient = jax.jit(jax.grad(objective))
        self._constraints = jax.jit(lambda x: flat(constraints(x)))
        self.jacobian_ = sparse_constraint_jacobian(constraints, x0, options=options)
        self.hessian_ = sparse_lagrangian_hessian(objective, constraints, x0, options=options)
        self.n = int(x0.size)
        self.m = int(np.prod(jax.eval_shape(self._constraints, jnp.asarray(x0)).shape))

    def _x(self, x):
        return np.asarray(x, self._dtype)

    def objective(self, x):
        return float(self._objective(self._x(x)))

    def gradient(self, x):
        return np.asarray(self._gradient(self._x(x)), np.float64)

    def constraints(self, x):
        return np.asarray(self._constraints(self._x(x)), np.float64)

    def jacobianstructure(self):
        return self.jacobian_.structure()

    def jacobian(self, x):
        return np.asarray(self.jacobian_(x), np.float64)

    def hessianstructure(self):
        return self.hessian_.structure()

    def hessian(self, x, lagrange, obj_factor):
        return np.asarray(self.hessian_(x, lagrange, obj_factor), np.float64)

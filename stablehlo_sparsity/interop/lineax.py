"""lineax, optimistix and diffrax with the library's sparse Jacobians (optional: the ``examples`` extra).

Newton-type solvers in the Kidger stack (optimistix's ``Newton``/``Chord``, diffrax's implicit solvers such
as ``Kvaerno5`` through their ``VeryChord`` root finder) build the Jacobian of the residual as a dense
``lineax`` operator — ``n`` JVPs — and factorize it densely, ``O(n³)``.  For a sparse system that is the
bottleneck (diffrax issue #545: a stiff block-diagonal system of 10,000 unknowns).  Here:

* :class:`SparseJacobianOperator` — a ``lineax`` operator holding the nonzeros of a detected pattern:
  ``mv`` is one sparse product (``segment_sum``), ``as_matrix`` the dense matrix, ``transpose`` free;
* :func:`sparse_jacobian_operator` — that operator for ``fn(y, args)`` at ``(y, args)``: the pattern is
  detected and colored when ``fn`` is traced (once per function and shapes: cached), the values are
  ``num_colors`` JVPs;
* :class:`SparseDirect` — a ``lineax`` solver for it: SciPy's sparse LU through host callbacks on CPU
  (factorized once per operator, reused by every solve), ``jax.experimental.sparse.linalg.spsolve``
  (cuSOLVER) elsewhere;
* :class:`SparseNewton`, :class:`SparseChord` (optimistix root finders) and :class:`SparseVeryChord` (for
  diffrax: ``diffrax.Kvaerno5(root_finder=diffrax.with_stepsize_controller_tols(SparseVeryChord)())``) —
  the stock solvers with the Jacobian and the linear solve replaced, everything else unchanged.

    >>> import jax.numpy as jnp, optimistix as optx
    >>> from stablehlo_sparsity.interop.lineax import SparseNewton
    >>> fn = lambda y, args: y ** 3 + jnp.roll(y, 1) - args
    >>> sol = optx.root_find(fn, SparseNewton(rtol=1e-6, atol=1e-6), jnp.ones(8), jnp.full(8, 3.0))
    >>> bool(jnp.allclose(fn(sol.value, jnp.full(8, 3.0)), 0, atol=1e-5))
    True
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any, Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import jax.flatten_util  # noqa: F401  (ravel_pytree)
import numpy as np
import optimistix as optx
from jax import lax

__all__ = ["SparseJacobianOperator", "sparse_jacobian_operator", "operator_from_prepared", "SparseDirect",
           "SparseNewton", "SparseChord", "SparseVeryChord"]


class _PatternRef:
    """Static pattern data of an operator, compared by content (shape and index arrays), so operators built
    from two preparations of the same function have the same pytree structure (``cond``/``while`` carry)."""

    __slots__ = ("pattern", "_key", "_coo", "_transposed_csr")

    def __init__(self, pattern):
        self.pattern = pattern
        h = hashlib.blake2b(digest_size=16)
        h.update(np.asarray(pattern.indptr).tobytes())
        h.update(np.asarray(pattern.indices).tobytes())
        self._key = (pattern.shape, h.hexdigest())
        self._coo = None
        self._transposed_csr = None

    def __eq__(self, other):
        return isinstance(other, _PatternRef) and other._key == self._key

    def __hash__(self):
        return hash(self._key)

    def coo(self):
        if self._coo is None:
            r, c = self.pattern.to_coo()
            t = np.int32 if max(self.pattern.shape) < 2**31 - 1 else np.int64
            self._coo = (r.astype(t), c.astype(t))
        return self._coo

    def transposed_csr(self):
        """CSR of the transpose: ``(permutation of the values, indices, indptr)``."""
        if self._transposed_csr is None:
            import scipy.sparse as sp

            csr = self.pattern.to_scipy()
            t = sp.csr_array((np.arange(csr.nnz, dtype=np.float64), csr.indices, csr.indptr),
                             shape=csr.shape).T.tocsr()
            t.sort_indices()
            self._transposed_csr = (t.data.astype(np.int64), t.indices.astype(np.int32), t.indptr.astype(np.int32))
        return self._transposed_csr


class SparseJacobianOperator(lx.AbstractLinearOperator):
    """A ``lineax`` operator for a sparse matrix with a static pattern: ``values`` are its nonzeros in the
    CSR order of the pattern (what :meth:`SparseJacobian.values` returns).  Inputs and outputs are pytrees
    (``in_struct`` / ``out_struct``), flattened in leaf order as the pattern's columns and rows.

    Examples:
        >>> import jax.numpy as jnp
        >>> from stablehlo_sparsity.interop.lineax import sparse_jacobian_operator
        >>> op = sparse_jacobian_operator(lambda y, args: y[1:] * y[:-1] - args, jnp.arange(4.0), 1.0)
        >>> op.mv(jnp.ones(4)).tolist(), op.T.mv(jnp.ones(3)).tolist()
        ([1.0, 3.0, 5.0], [1.0, 2.0, 4.0, 2.0])
        >>> op.as_matrix().tolist()
        [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0], [0.0, 0.0, 3.0, 2.0]]
    """

    values: jax.Array
    ref: _PatternRef = eqx.field(static=True)
    in_struct: Any = eqx.field(static=True)
    out_struct: Any = eqx.field(static=True)
    transposed: bool = eqx.field(static=True, default=False)
    tags: frozenset = eqx.field(static=True, default=frozenset())

    @property
    def pattern(self):
        return self.ref.pattern

    def _rows_cols(self):
        r, c = self.ref.coo()
        return (c, r) if self.transposed else (r, c)

    def mv(self, vector):
        flat, _ = jax.flatten_util.ravel_pytree(vector)
        rows, cols = self._rows_cols()
        m = self.ref.pattern.shape[1] if self.transposed else self.ref.pattern.shape[0]
        dt = jnp.result_type(self.values, flat)
        out = jax.ops.segment_sum(self.values.astype(dt) * flat.astype(dt)[cols], rows, num_segments=m,
                                  indices_are_sorted=not self.transposed)
        return _unravel(out, self.out_structure())

    def as_matrix(self):
        rows, cols = self._rows_cols()
        m, n = self.ref.pattern.shape
        shape = (n, m) if self.transposed else (m, n)
        return jnp.zeros(shape, self.values.dtype).at[rows, cols].set(self.values)

    def transpose(self):
        return SparseJacobianOperator(self.values, self.ref, self.out_struct, self.in_struct, not self.transposed,
                                      lx.transpose_tags(self.tags) if hasattr(lx, "transpose_tags") else self.tags)

    def in_structure(self):
        return self.in_struct

    def out_structure(self):
        return self.out_struct

    def csr(self):
        """``(data, indices, indptr)`` of the operator's matrix in CSR form (static index arrays)."""
        csr = self.ref.pattern.to_scipy()
        if not self.transposed:
            return self.values, csr.indices.astype(np.int32), csr.indptr.astype(np.int32)
        perm, indices, indptr = self.ref.transposed_csr()
        return self.values[perm], indices, indptr


def _unravel(flat, struct):
    leaves, tree = jax.tree_util.tree_flatten(struct)
    out, o = [], 0
    for leaf in leaves:
        size = int(np.prod(leaf.shape, dtype=np.int64))
        out.append(jnp.reshape(flat[o:o + size], leaf.shape).astype(leaf.dtype))
        o += size
    return jax.tree_util.tree_unflatten(tree, out)


def _has(tags, *names):
    return any(getattr(lx, n) in tags for n in names)


@lx.linearise.register(SparseJacobianOperator)
def _(operator):
    return operator


@lx.materialise.register(SparseJacobianOperator)
def _(operator):
    return operator


@lx.diagonal.register(SparseJacobianOperator)
def _(operator):
    rows, cols = operator._rows_cols()
    n = min(operator.ref.pattern.shape)
    on = np.flatnonzero(rows == cols)
    return jnp.zeros((n,), operator.values.dtype).at[rows[on]].set(operator.values[on])


@lx.tridiagonal.register(SparseJacobianOperator)
def _(operator):
    m = operator.as_matrix()
    return jnp.diagonal(m), jnp.diagonal(m, -1), jnp.diagonal(m, 1)


@lx.is_symmetric.register(SparseJacobianOperator)
def _(operator):
    return _has(operator.tags, "symmetric_tag", "positive_semidefinite_tag", "negative_semidefinite_tag")


@lx.is_diagonal.register(SparseJacobianOperator)
def _(operator):
    return _has(operator.tags, "diagonal_tag")


@lx.is_tridiagonal.register(SparseJacobianOperator)
def _(operator):
    return _has(operator.tags, "diagonal_tag", "tridiagonal_tag")


@lx.has_unit_diagonal.register(SparseJacobianOperator)
def _(operator):
    return _has(operator.tags, "unit_diagonal_tag")


@lx.is_lower_triangular.register(SparseJacobianOperator)
def _(operator):
    return _has(operator.tags, "lower_triangular_tag", "diagonal_tag")


@lx.is_upper_triangular.register(SparseJacobianOperator)
def _(operator):
    return _has(operator.tags, "upper_triangular_tag", "diagonal_tag")


@lx.is_positive_semidefinite.register(SparseJacobianOperator)
def _(operator):
    return _has(operator.tags, "positive_semidefinite_tag")


@lx.is_negative_semidefinite.register(SparseJacobianOperator)
def _(operator):
    return _has(operator.tags, "negative_semidefinite_tag")


if hasattr(lx, "conj"):
    @lx.conj.register(SparseJacobianOperator)
    def _(operator):
        return operator  # real values (complex Jacobians are refused at preparation)


def operator_from_prepared(prepared, *args, tags=frozenset()) -> SparseJacobianOperator:
    """A :class:`SparseJacobianOperator` from a prepared :class:`~stablehlo_sparsity.SparseJacobian` at
    ``args``: the values are one call of the compressed program.

    Raises:
        InputError: ``args`` of another structure, shape or kind of dtype than ``prepared`` was prepared for.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.interop.lineax import operator_from_prepared
        >>> jac = ss.sparse_jacobian(lambda y: y[1:] * y[:-1], jnp.ones(4), output="values")
        >>> operator_from_prepared(jac, jnp.arange(4.0)).as_matrix().tolist()
        [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0], [0.0, 0.0, 3.0, 2.0]]
    """
    sel = tuple(args[i] for i in prepared.argnums)
    in_struct = jax.eval_shape(lambda: sel[0] if len(sel) == 1 else sel)
    out_struct = jax.tree_util.tree_unflatten(prepared.out_tree, [
        jax.ShapeDtypeStruct(s, jnp.result_type(*jax.tree_util.tree_leaves(sel))) for s in prepared.out_shapes])
    return SparseJacobianOperator(prepared.values(*args), _PatternRef(prepared.pattern), in_struct, out_struct,
                                  False, frozenset(tags))


#: Prepared Jacobians by function, argument structure and shapes (detection and coloring run once per key,
#: even when a solver traces the same residual several times).
_CACHE: "OrderedDict[Any, Any]" = OrderedDict()
_CACHE_SIZE = 64


def _static_key(leaf):
    try:
        hash(leaf)
        return ("v", leaf)
    except TypeError:
        return ("id", id(leaf))


def sparse_jacobian_operator(fn: Callable, y, args=None, *, tags=frozenset(), options=None,
                             **prepare_kwargs) -> SparseJacobianOperator:
    """The sparse Jacobian of ``fn(y, args)`` in ``y`` at ``(y, args)`` as a :class:`SparseJacobianOperator`.

    Works on traced values (inside ``jit``, ``while_loop`` …): array leaves of ``args`` are arguments of the
    analyzed program (unknown values, so the pattern holds for all of them); other leaves (functions, Python
    numbers) are static.  Preparation is cached by ``fn``'s code, the static leaves and the shapes.

    Raises:
        InputError: the errors of ``sparse_jacobian`` (bad arguments or options; ``LoweringError`` when JAX cannot
            lower ``fn``), or a library keyword it does not take.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from stablehlo_sparsity.interop.lineax import sparse_jacobian_operator
        >>> fn = lambda y, args: y ** 2 - args["c"] * jnp.roll(y, 1)
        >>> matrix = jax.jit(lambda y: sparse_jacobian_operator(fn, y, {"c": 2.0}).as_matrix())   # under jit
        >>> matrix(jnp.arange(3.0)).tolist()
        [[0.0, 0.0, -2.0], [-2.0, 2.0, 0.0], [0.0, -2.0, 4.0]]
    """
    from ..derivatives.jacobian import sparse_jacobian
    from ..ir.keywords import refuse_library_keywords

    refuse_library_keywords("sparse_jacobian_operator", prepare_kwargs)
    dyn, static = eqx.partition(args, eqx.is_array)
    code = getattr(fn, "__code__", None)
    key: tuple[Any, ...]
    key = (code if code is not None else _static_key(fn),
           jax.tree_util.tree_structure((y, dyn)),
           tuple((tuple(np.shape(a)), str(jnp.result_type(a))) for a in jax.tree_util.tree_leaves((y, dyn))),
           jax.tree_util.tree_structure(static),
           tuple(_static_key(s) for s in jax.tree_util.tree_leaves(static)),
           tuple(sorted(prepare_kwargs.items())) if prepare_kwargs else (), id(options) if options else None)
    if code is not None and fn.__closure__:
        key += (tuple(_static_key(c.cell_contents) if not eqx.is_array(c.cell_contents) else id(c.cell_contents)
                      for c in fn.__closure__),)
    prepared = _CACHE.get(key)
    if prepared is None:
        def g(yy, dd):
            return fn(yy, eqx.combine(dd, static))

        prepared = sparse_jacobian(g, y, dyn, output="values", options=options, **prepare_kwargs)
        _CACHE[key] = prepared
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return operator_from_prepared(prepared, y, dyn, tags=tags)


#: Host-side sparse LU factorizations (SciPy ``splu``) made by :class:`SparseDirect` on CPU, by key.  A chord
#: iteration factorizes once and solves many times; the oldest entries are dropped beyond the limit (a solve
#: whose factorization was dropped factorizes again from the values it carries).
_LU_CACHE: "OrderedDict[int, Any]" = OrderedDict()
_LU_CACHE_SIZE = 16
_LU_COUNTER = [0]


def _host_factorize(data, indices, indptr, shape):
    import scipy.sparse as sp
    from scipy.sparse.linalg import splu

    a = sp.csc_matrix(sp.csr_matrix((np.asarray(data), np.asarray(indices), np.asarray(indptr)), shape=shape))
    return splu(a)


def _factorize_callback(shape):
    def run(data, indices, indptr):
        _LU_COUNTER[0] += 1
        key = _LU_COUNTER[0]
        try:
            _LU_CACHE[key] = _host_factorize(data, indices, indptr, shape)
        except RuntimeError:  # singular: the solve reports it (NaNs), as spsolve does
            _LU_CACHE[key] = None
        while len(_LU_CACHE) > _LU_CACHE_SIZE:
            _LU_CACHE.popitem(last=False)
        return np.asarray(key % (2**31 - 1), np.int32)

    return run


def _solve_callback(shape, trans):
    def run(key, data, indices, indptr, b):
        lu = _LU_CACHE.get(int(key), "missing")
        if isinstance(lu, str):
            try:
                lu = _host_factorize(data, indices, indptr, shape)
            except RuntimeError:
                lu = None
        b = np.asarray(b)
        if lu is None:
            return np.full_like(b, np.nan)
        return np.asarray(lu.solve(b, trans="T" if trans else "N"), b.dtype)

    return run


class _LUState(eqx.Module):
    """The state of :class:`SparseDirect`: the operator (its values and static pattern), the key of its host
    factorization (CPU; ``None`` elsewhere), and whether solves are with the transpose."""

    operator: SparseJacobianOperator
    key: Any
    transposed: bool = eqx.field(static=True)


class SparseDirect(lx.AbstractLinearSolver):
    """Sparse direct solve of a square :class:`SparseJacobianOperator`.

    On CPU: SciPy's sparse LU (``splu``) through host callbacks, factorized once in ``init`` and reused by
    every solve with the same operator (a chord iteration's many solves cost one factorization).  On other
    backends: ``jax.experimental.sparse.linalg.spsolve`` (cuSOLVER's sparse QR on GPU) per solve.  Not
    batchable with ``vmap``.

    Raises:
        ValueError: the operator is not a square ``SparseJacobianOperator`` (raised by ``init``).

    Examples:
        >>> import jax.numpy as jnp, lineax as lx
        >>> from stablehlo_sparsity.interop.lineax import SparseDirect, sparse_jacobian_operator
        >>> op = sparse_jacobian_operator(lambda y, args: 2 * y + jnp.roll(y, 1), jnp.ones(3))
        >>> sol = lx.linear_solve(op, jnp.full(3, 3.0), SparseDirect())
        >>> sol.value.tolist()
        [1.0, 1.0, 1.0]
    """

    def init(self, operator, options):
        del options
        if not isinstance(operator, SparseJacobianOperator):
            raise ValueError("SparseDirect solves SparseJacobianOperator systems (stablehlo_sparsity."
                             f"lineax_interop.sparse_jacobian_operator), got {type(operator).__name__}")
        if operator.in_size() != operator.out_size():
            raise ValueError("SparseDirect needs a square operator")
        key = None
        if jax.default_backend() == "cpu":
            data, indices, indptr = operator.csr()
            shape = (operator.out_size(), operator.in_size())
            key = jax.pure_callback(_factorize_callback(shape), jax.ShapeDtypeStruct((), jnp.int32),
                                    data, jnp.asarray(indices), jnp.asarray(indptr))
        return _LUState(operator, key, False)

    def compute(self, state, vector, options):
        del options
        operator, key, transposed = state.operator, state.key, state.transposed
        flat, _ = jax.flatten_util.ravel_pytree(vector)
        data, indices, indptr = operator.csr()
        if key is None:
            from jax.experimental.sparse.linalg import spsolve

            x = spsolve(data.astype(flat.dtype), jnp.asarray(indices), jnp.asarray(indptr), flat)
        else:
            # ``operator`` is the un-transposed matrix the factorization was made from: solve with Aᵀ if asked
            shape = (operator.out_size(), operator.in_size())
            x = jax.pure_callback(_solve_callback(shape, transposed), jax.ShapeDtypeStruct(flat.shape, flat.dtype),
                                  key, data, jnp.asarray(indices), jnp.asarray(indptr), flat)
        target = operator.out_structure() if transposed else operator.in_structure()
        return _unravel(x, target), lx.RESULTS.successful, {}

    def transpose(self, state, options):
        if state.key is None:
            return _LUState(state.operator.transpose(), None, False), options
        return _LUState(state.operator, state.key, not state.transposed), options

    def conj(self, state, options):
        return state, options

    def assume_full_rank(self):
        return True

    # lineax versions before assume_full_rank
    def allow_dependent_columns(self, operator):
        return False

    def allow_dependent_rows(self, operator):
        return False


class _NoFactorization(lx.AbstractLinearSolver):
    """Stands in for the linear solver while the stock ``init`` builds its state (the dense Jacobian it would
    factorize is replaced right after, so nothing is factorized)."""

    def init(self, operator, options):
        return None

    def compute(self, state, vector, options):  # pragma: no cover - never called
        raise NotImplementedError

    def transpose(self, state, options):  # pragma: no cover
        raise NotImplementedError

    def conj(self, state, options):  # pragma: no cover
        raise NotImplementedError

    def assume_full_rank(self):  # pragma: no cover
        return True

    def allow_dependent_columns(self, operator):  # pragma: no cover
        return False

    def allow_dependent_rows(self, operator):  # pragma: no cover
        return False


def _no_aux(fn):
    return lambda y, args: fn(y, args)[0]


def _with_sparse_jacobian(solver, state, fn, y, args, tags):
    op = sparse_jacobian_operator(_no_aux(fn), y, args, tags=tags)
    linear_state = lax.stop_gradient(solver.linear_solver.init(op, options={}))
    return eqx.tree_at(lambda s: s.linear_state, state, (op, linear_state), is_leaf=lambda x: x is None)


class _SparseInit:
    """``init`` of a chord-type root finder with the Jacobian from :func:`sparse_jacobian_operator` (the stock
    ``init`` builds every other part of the state)."""

    def init(self, fn, y, args, options, f_struct, aux_struct, tags):
        if "init_state" in options:
            return super().init(fn, y, args, options, f_struct, aux_struct, tags)
        stand_in = eqx.tree_at(lambda s: s.linear_solver, self, _NoFactorization())
        state = super(_SparseInit, stand_in).init(fn, y, args, options, f_struct, aux_struct, tags)
        return _with_sparse_jacobian(self, state, fn, y, args, tags)


class SparseChord(_SparseInit, optx.Chord):
    """``optimistix.Chord`` with the sparse Jacobian (at the initial point) and :class:`SparseDirect`.

    Raises:
        InputError: (when ``fn`` is first traced) the errors of ``sparse_jacobian`` for ``fn``.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.

    Examples:
        >>> import jax.numpy as jnp, optimistix as optx
        >>> from stablehlo_sparsity.interop.lineax import SparseChord
        >>> fn = lambda y, args: 2 * y + jnp.roll(y, 1) - args
        >>> sol = optx.root_find(fn, SparseChord(rtol=1e-6, atol=1e-6), jnp.zeros(4), jnp.full(4, 3.0))
        >>> jnp.round(sol.value, 4).tolist()
        [1.0, 1.0, 1.0, 1.0]
    """

    linear_solver: lx.AbstractLinearSolver = SparseDirect()


class SparseNewton(_SparseInit, optx.Chord):
    """Newton's method (``optimistix.Chord`` refreshing the sparse Jacobian at every step) with
    :class:`SparseDirect`: each step costs ``num_colors`` JVPs and one sparse factorization instead of
    ``n`` JVPs and a dense one.

    Raises:
        InputError: (when ``fn`` is first traced) the errors of ``sparse_jacobian`` for ``fn``.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.

    Examples:
        >>> import jax.numpy as jnp, optimistix as optx
        >>> from stablehlo_sparsity.interop.lineax import SparseNewton
        >>> fn = lambda y, args: y ** 3 - args
        >>> sol = optx.root_find(fn, SparseNewton(rtol=1e-6, atol=1e-6), jnp.ones(4), jnp.full(4, 8.0))
        >>> jnp.round(sol.value, 4).tolist()
        [2.0, 2.0, 2.0, 2.0]
    """

    linear_solver: lx.AbstractLinearSolver = SparseDirect()

    def step(self, fn, y, args, options, state, tags):
        state = _with_sparse_jacobian(self, state, fn, y, args, tags)
        return super().step(fn, y, args, options, state, tags)


try:  # diffrax is optional
    import diffrax as _diffrax

    class SparseVeryChord(_SparseInit, _diffrax.VeryChord):
        """diffrax's ``VeryChord`` (the root finder of its implicit solvers) with the sparse Jacobian and
        :class:`SparseDirect`: ``diffrax.Kvaerno5(root_finder=diffrax.with_stepsize_controller_tols(
        SparseVeryChord)())``.

        Raises:
            InputError: (when ``fn`` is first traced) the errors of ``sparse_jacobian`` for ``fn``.
            UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
            UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
            PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.

        Examples:
            >>> import diffrax
            >>> from stablehlo_sparsity.interop.lineax import SparseVeryChord
            >>> solver = diffrax.Kvaerno5(root_finder=diffrax.with_stepsize_controller_tols(SparseVeryChord)())
            >>> type(solver.root_finder).__name__
            'SparseVeryChord'
        """

        linear_solver: lx.AbstractLinearSolver = SparseDirect()
except ImportError:  # pragma: no cover
    SparseVeryChord = None  # type: ignore[assignment,misc]

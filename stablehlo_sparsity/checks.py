"""Check a sparse Jacobian or Hessian against dense automatic differentiation.

    >>> import jax.numpy as jnp
    >>> from stablehlo_sparsity import check_jacobian
    >>> check_jacobian(lambda x: jnp.sin(x[1:]) * x[:-1], jnp.ones(6)).ok
    True

**What is checked.**  ``jacobian=`` (``hessian=``) may be any matrix a user holds:

* a prepared object (:class:`~stablehlo_sparsity.SparseJacobian`, :class:`~stablehlo_sparsity.SparseHessian`,
  the module ones, a restored one) — evaluated at every compared point through its public ``values``;
* a callable wrapper that returns a matrix at a point: :func:`~stablehlo_sparsity.scipy_interop.least_squares_jacobian`
  and :func:`~stablehlo_sparsity.scipy_interop.ivp_jacobian` (called as SciPy calls them, with the check's
  arguments), the IPOPT triplet callables of :mod:`stablehlo_sparsity.ipopt` (their ``structure()`` gives the
  coordinates; the Lagrangian Hessian's lower triangle is mirrored);
* a plain matrix — a JAX ``BCOO``/``BCSR``, a SciPy sparse matrix or array, a dense NumPy/JAX array (also in
  ``jax.jacfwd``'s ``output shape + input shape`` layout), a ``lineax`` operator of
  :mod:`stablehlo_sparsity.lineax_interop`.  A matrix is a value **at ``args`` only**: it is compared there
  and nowhere else (the report says ``points=1``; asking for more points is an error).

Without ``jacobian=`` the check prepares one itself.  The reference is always dense AD of the given ``f``.

**Where.**  ``points`` (default 3): an int ``k`` compares at ``args`` and at ``k - 1`` seeded random points
near them (every floating-point array in ``args`` moved by about 5 % of its magnitude), so that a derivative
of another function that happens to agree at ``args`` — ``f(x) + ½‖x - x₀‖²`` prepared at ``x₀`` — fails; or a
list of argument tuples to compare at exactly those points.  A random point where ``f`` or its dense
derivative is not finite is moved closer to ``args`` (twice), then skipped (``skipped`` in the report).  At
``args`` or an explicit point, a function or dense derivative that is not finite is a failed check whose
message says so: nothing can be compared there, and a non-finite comparison never passes.

**How.**  ``method="dense"`` (``m·n ≤ dense_limit``): the full Jacobian by ``n`` batched JVPs (the Hessian
by ``n`` Hessian-vector products) compared entry by entry; entries of dense AD outside the candidate's
pattern are also reported as ``missing`` (a detection failure).  ``"probes"``: ``probes`` random products
``J v`` (JVP) and ``uᵀ J`` (VJP) — ``H v`` for Hessians — against the candidate applied to the same vectors.

**Tolerances** estimate the rounding error of the two computations being compared, from the dtype and the
magnitudes met, not a fixed fraction of ``√eps``.  A compressed product sums the columns (rows) of one color,
and dense AD of a row computes the same partial derivatives; both round at the scale of the largest entries
of that row and column.  An entry passes when

    ``|candidate - dense| ≤ atol + rtol·max(|dense|, max|row|, max|column|) + 4·spread``

with ``rtol = 64·eps`` (7.6e-6 for float32, 1.4e-14 for float64; ``eps`` of the coarser of the argument
and candidate dtypes), ``atol = eps·max|J|``, and ``spread`` the disagreement of dense AD with itself: forward
against reverse mode for a Jacobian (when ``f`` has a reverse derivative), ``|H - Hᵀ|`` for a Hessian — a
measured estimate of the reference's own rounding error that widens the tolerance where the computation
cancels (capped at ``√eps`` of the magnitudes: never looser than that).  A 1e-3 relative error on a
well-scaled float32 problem is ~100 times the tolerance.  Probes:
``|Δ(Jv)_i| ≤ atol + rtol·(|J| |v|)_i``.

On a mismatch the functions raise :class:`DerivativeMismatchError` (a
:class:`~stablehlo_sparsity.SparsityError` carrying the report as ``.report``), or with
``raise_on_error=False`` return the report, whose truth value is ``ok``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import scipy.sparse as sp

from .errors import InputError, SparsityError

__all__ = ["check_jacobian", "check_hessian", "CheckReport", "DerivativeMismatchError"]

#: ``rtol = RTOL_EPS · eps``: the per-entry rounding allowance (in units of the dtype's epsilon) relative to the
#: magnitudes of the entry's row and column.  Measured worst ratio of correct float32 Jacobians/Hessians on the
#: soundness suite: see ``tests/test_checks.py::test_correct_derivatives_pass_with_margin``.
RTOL_EPS = 64.0
#: The dense-AD spread (forward vs reverse, or ``|H - Hᵀ|``) is multiplied by this in the tolerance (and capped
#: at ``√eps`` of the entry's magnitudes).
SPREAD_FACTOR = 4.0
#: Random points near ``args`` move each float entry by ``NEAR_RADIUS · (|x_i| + mean |x|)`` (standard normal).
NEAR_RADIUS = 0.05


@dataclass
class CheckReport:
    """The outcome of :func:`check_jacobian` / :func:`check_hessian` (at the worst compared point).

    ok: every compared quantity is within tolerance, no nonzero lies outside the pattern, and ``f`` and its
    dense derivative were finite at every compared point.  method: ``"dense"``, ``"probes"`` or ``"shape"``.
    max_error: the largest absolute difference.  worst: the largest ``difference / tolerance`` (≤ 1 passes).
    missing: nonzeros of dense AD outside the candidate's pattern (dense method only; ``missing_examples``
    lists a few ``(row, col)``).  points: how many points were compared; point: the index of the reported one
    (0 is ``args``) and where: what it is; skipped: random points skipped because ``f`` is not finite there.
    finite: ``False`` when ``f`` or its dense derivative is not finite at the reported point (then nothing was
    compared).
    candidate: what was checked (``"prepared Jacobian"``, ``"BCOO matrix"`` …).
    """

    ok: bool
    kind: str
    method: str
    shape: tuple[int, int]
    dtype: str
    num_colors: int
    rtol: float
    atol: float
    max_error: float
    worst: float
    probes: int = 0
    missing: int = 0
    missing_examples: list = field(default_factory=list)
    message: str = ""
    points: int = 1
    point: int = 0
    skipped: int = 0
    finite: bool = True
    candidate: str = ""
    where: str = ""

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        m, n = self.shape
        where = f"{self.points} point{'s' if self.points != 1 else ''}"
        if self.skipped:
            where += f" ({self.skipped} random point{'s' if self.skipped != 1 else ''} skipped: f not finite there)"
        what = f" ({self.candidate})" if self.candidate else ""
        if not self.finite:
            at = self.where or "args"
            return f"{self.kind} check NOT FINITE: {m}×{n} {self.dtype}{what}, at {at}: {self.message}"
        if self.method == "shape":
            return f"{self.kind} check WRONG SHAPE: {self.message}"
        state = "OK" if self.ok else "MISMATCH"
        how = f"{self.probes} probes" if self.method == "probes" else f"{self.method} comparison"
        s = (f"{self.kind} check {state}: {m}×{n} {self.dtype}{what}, {how} at {where}, "
             f"max |error| {self.max_error:.3g}, worst error/tolerance {self.worst:.3g}"
             f" (rtol {self.rtol:.2g}, atol {self.atol:.2g})")
        if not self.ok and self.points > 1:
            s += f", worst at {self.where or f'point {self.point}'}"
        if self.missing:
            where = "the stored entries" if self.candidate.endswith("matrix") else "the detected pattern"
            s += f"; {self.missing} nonzeros outside {where}, e.g. {self.missing_examples[:3]}"
        if self.message:
            s += f"; {self.message}"
        return s


class DerivativeMismatchError(SparsityError):
    """A sparse Jacobian/Hessian that disagrees with dense AD (``.report`` holds the details)."""

    def __init__(self, report: CheckReport):
        super().__init__(str(report))
        self.report = report


# --------------------------------------------------------------------------------------- tolerances
def _eps(*dtypes) -> float:
    """The coarsest epsilon among the floating dtypes (the precision the comparison can expect)."""
    import jax.numpy as jnp

    out = 0.0
    for d in dtypes:
        if d is not None and jnp.issubdtype(d, jnp.inexact):
            out = max(out, float(jnp.finfo(d).eps))
    return out or float(np.finfo(np.float64).eps)


def _tolerances(eps: float, scale: float, rtol, atol) -> tuple[float, float]:
    r = RTOL_EPS * eps if rtol is None else float(rtol)
    a = eps * scale if atol is None else float(atol)
    return r, max(a, np.finfo(np.float64).tiny)


# --------------------------------------------------------------------------------------- batched products
def _split(v, leaves, tree):
    """Rows of ``v`` (``(p, n)``) as a batched pytree shaped like ``leaves``."""
    import jax
    import jax.numpy as jnp

    p = v.shape[0]
    out, o = [], 0
    for leaf in leaves:
        size = int(np.prod(np.shape(leaf), dtype=np.int64))
        out.append(jnp.reshape(v[:, o:o + size], (p,) + tuple(np.shape(leaf))).astype(jnp.result_type(leaf)))
        o += size
    return jax.tree_util.tree_unflatten(tree, out)


def _join(tree, p):
    import jax
    import jax.numpy as jnp

    parts = [jnp.reshape(d, (p, -1)) for d in jax.tree_util.tree_leaves(tree)]
    return jnp.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]


def _flat(tree):
    import jax
    import jax.numpy as jnp

    parts = [jnp.ravel(d) for d in jax.tree_util.tree_leaves(tree)]
    return jnp.concatenate(parts) if len(parts) > 1 else parts[0] if parts else jnp.zeros((0,))


def _jvps(h, sel, v):
    """``(p, m)``: row ``q`` is ``J v_q`` for the rows ``v_q`` of ``v`` (``(p, n)``)."""
    import jax

    leaves, tree = jax.tree_util.tree_flatten(sel)
    t = _split(v, leaves, tree)
    ydot = jax.vmap(lambda tq: jax.jvp(h, sel, tq)[1])(t)
    return _join(ydot, v.shape[0])


def _vjps(h, sel, u):
    """``(p, n)``: row ``q`` is ``u_qᵀ J``."""
    import jax

    y, vjp_fn = jax.vjp(h, *sel)
    leaves, tree = jax.tree_util.tree_flatten(y)
    cts = jax.vmap(vjp_fn)(_split(u, leaves, tree))
    return _join(cts, u.shape[0])


def _hvps(h, sel, v):
    """``(p, n)``: row ``q`` is ``H v_q`` (forward over reverse)."""
    import jax

    g = jax.grad(h, argnums=tuple(range(len(sel))))
    leaves, tree = jax.tree_util.tree_flatten(sel)
    t = _split(v, leaves, tree)
    gdot = jax.vmap(lambda tq: jax.jvp(g, sel, tq)[1])(t)
    return _join(gdot, v.shape[0])


# --------------------------------------------------------------------------------------- the user's function
def _float_outputs(out, like_dtype):
    """Integer/bool output leaves as floats (their derivative is zero); complex outputs are refused."""
    import jax
    import jax.numpy as jnp

    leaves = jax.tree_util.tree_leaves(out)
    floats = [jnp.result_type(o) for o in leaves if jnp.issubdtype(jnp.result_type(o), jnp.inexact)]
    if any(jnp.issubdtype(d, jnp.complexfloating) for d in floats):
        raise InputError("complex outputs are not supported; split them into real and imaginary parts")
    target = jnp.result_type(*floats) if floats else like_dtype
    return jax.tree_util.tree_map(
        lambda o: o if jnp.issubdtype(jnp.result_type(o), jnp.inexact) else jnp.asarray(o).astype(target), out)


def _scalar(y):
    import jax.numpy as jnp

    y = jnp.asarray(y)
    if y.size != 1:
        raise InputError(f"a Hessian needs a scalar function; f returns shape {y.shape}")
    return jnp.reshape(y, ())


def _is_array(leaf) -> bool:
    import jax

    return isinstance(leaf, (np.ndarray, np.generic, jax.Array))


class _Programs:
    """Dense AD of ``f`` for one argument structure, as jitted programs of the array leaves of the arguments
    (the other leaves are static).  Kept in a small cache (:func:`_programs`): checking several candidates
    against the same ``f``, or at several points, compiles dense AD once per shape."""

    def __init__(self, f, kind: str, argnums: tuple, has_aux: bool, tree, layout: tuple, static: tuple):
        self.f, self.kind, self.argnums, self.has_aux = f, kind, argnums, has_aux
        self.tree, self.layout, self.static = tree, layout, static  # layout: which leaves are arrays
        self.reverse_ok: bool | None = None  # (known after the first try: a while loop has no reverse mode)
        self.forward_ok: bool | None = None  # (a custom_vjp has no forward mode)

    def rebuild(self, dyn) -> list:
        import jax

        it_dyn, it_static = iter(dyn), iter(self.static)
        leaves = [next(it_dyn) if is_array else next(it_static) for is_array in self.layout]
        return jax.tree_util.tree_unflatten(self.tree, leaves)

    def selected(self, a):
        """``(h, sel)``: ``h(*sel)`` is ``f`` at ``a`` as a function of the selected arguments, its
        differentiated output flattened (float) for a Jacobian, a scalar for a Hessian."""
        import jax
        import jax.numpy as jnp

        sel = tuple(a[i] for i in self.argnums)
        sel_leaves = jax.tree_util.tree_leaves(sel)
        x_dtype = jnp.result_type(*sel_leaves) if sel_leaves else jnp.float32

        def h(*s):
            b = list(a)
            for i, v in zip(self.argnums, s):
                b[i] = v
            y = self.f(*b)
            y = y[0] if self.has_aux else y
            return _scalar(y) if self.kind == "Hessian" else _flat(_float_outputs(y, x_dtype))

        return h, sel

    @staticmethod
    def _x_dtype(sel):
        import jax
        import jax.numpy as jnp

        leaves = jax.tree_util.tree_leaves(sel)
        return jnp.result_type(*leaves) if leaves else jnp.float32

    def _eye(self, sel):
        import jax
        import jax.numpy as jnp

        n = int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(sel)))
        return jnp.eye(n, dtype=self._x_dtype(sel))

    @functools.cached_property
    def dense(self):
        """``dyn -> (f, Jᵀ (n, m))`` or ``(f, H)`` by ``n`` batched JVPs (Hessian-vector products)."""
        import jax

        def run(dyn):
            h, sel = self.selected(self.rebuild(dyn))
            if self.kind == "Hessian":
                return h(*sel), _hvps(h, sel, self._eye(sel))
            return h(*sel), _jvps(h, sel, self._eye(sel))

        return jax.jit(run)

    @functools.cached_property
    def reverse(self):
        """``dyn -> (f, J (m, n))`` by ``m`` batched VJPs; for a Hessian ``(f, H)`` by reverse over reverse
        (the reference of a function with a ``custom_vjp``, which has no forward derivative)."""
        import jax
        import jax.numpy as jnp

        def run(dyn):
            h, sel = self.selected(self.rebuild(dyn))
            y = h(*sel)
            if self.kind == "Hessian":
                g = jax.grad(h, argnums=tuple(range(len(sel))))
                return y, _vjps(lambda *s: _flat(g(*s)), sel, self._eye(sel))
            return y, _vjps(h, sel, jnp.eye(y.size, dtype=y.dtype))

        return jax.jit(run)

    @functools.cached_property
    def forward_probes(self):
        """``(dyn, v) -> (f, (J vᵀ)ᵀ)`` (``H v`` for a Hessian)."""
        import jax

        def run(dyn, v):
            h, sel = self.selected(self.rebuild(dyn))
            x_dtype = self._x_dtype(sel)
            if self.kind == "Hessian":
                return h(*sel), _hvps(h, sel, v.astype(x_dtype))
            return h(*sel), _jvps(h, sel, v.astype(x_dtype))

        return jax.jit(run)

    @functools.cached_property
    def reverse_probes(self):
        """``(dyn, u) -> u J`` (Jacobians only)."""
        import jax

        def run(dyn, u):
            h, sel = self.selected(self.rebuild(dyn))
            return _vjps(h, sel, u.astype(jax.eval_shape(h, *sel).dtype))

        return jax.jit(run)


_PROGRAMS: dict = {}
_PROGRAMS_SIZE = 16


def _programs(f, kind, argnums, has_aux, tree, layout, static) -> _Programs:
    key = (f, kind, argnums, has_aux, str(tree), layout, static)
    try:
        hit = _PROGRAMS.pop(key, None)
    except TypeError:  # an unhashable static argument: no reuse
        return _Programs(f, kind, argnums, has_aux, tree, layout, static)
    if hit is None:
        hit = _Programs(f, kind, argnums, has_aux, tree, layout, static)
    _PROGRAMS[key] = hit  # (most recent last)
    while len(_PROGRAMS) > _PROGRAMS_SIZE:
        _PROGRAMS.pop(next(iter(_PROGRAMS)))
    return hit


class _Reference:
    """Dense AD of the user's ``f`` at any point with the structure of ``args``."""

    def __init__(self, f, args, argnums, has_aux: bool, kind: str):
        import jax
        import jax.numpy as jnp

        leaves, self.tree = jax.tree_util.tree_flatten(list(args))
        layout = tuple(_is_array(leaf) for leaf in leaves)
        static = tuple(leaf for leaf, is_array in zip(leaves, layout) if not is_array)
        self.argnums, self.kind = tuple(argnums), kind
        self.programs = _programs(f, kind, self.argnums, bool(has_aux), self.tree, layout, static)
        sel_leaves = jax.tree_util.tree_leaves(tuple(args[i] for i in self.argnums))
        self.x_dtype = jnp.result_type(*sel_leaves) if sel_leaves else jnp.float32
        self.n = int(sum(np.size(leaf) for leaf in sel_leaves))

    def point(self, args) -> list:
        """The array leaves of ``args`` (which must have the structure of the check's arguments)."""
        import jax

        leaves, tree = jax.tree_util.tree_flatten(list(args))
        if str(tree) != str(self.tree):
            raise InputError(f"a point has the argument structure {tree}, the check's arguments have {self.tree}")
        return [leaf for leaf in leaves if _is_array(leaf)]

    def out_size(self, args) -> int:
        import jax

        h, sel = self.programs.selected(list(args))
        return int(np.prod(jax.eval_shape(h, *sel).shape, dtype=np.int64))

    def dense(self, dyn):
        """``(value, J or H as float64 (m, n), spread or None)``; the spread is dense AD's disagreement with
        itself (forward vs reverse; ``|H - Hᵀ|``)."""
        if self.programs.forward_ok is not False:
            try:
                y, d = self.programs.dense(dyn)
                self.programs.forward_ok = True
            except TypeError as e:
                if "custom_vjp" not in str(e):
                    raise
                self.programs.forward_ok = False  # a custom_vjp: reverse mode is the only derivative
        if self.programs.forward_ok is False:
            y, d = self.programs.reverse(dyn)
            d = np.asarray(d, np.float64)
            return np.asarray(y, np.float64), d, (np.abs(d - d.T) if self.kind == "Hessian" else None)
        y = np.asarray(y, np.float64)
        d = np.asarray(d, np.float64).T
        if self.kind == "Hessian":
            return y, d, np.abs(d - d.T)
        spread = None
        if self.programs.reverse_ok is not False:
            try:
                rev = np.asarray(self.programs.reverse(dyn)[1], np.float64)
                self.programs.reverse_ok = True
                with np.errstate(invalid="ignore"):
                    spread = np.abs(rev - d)
            except (TypeError, ValueError, NotImplementedError):
                # no reverse derivative (a while loop with a dynamic trip count, a callback): forward only
                self.programs.reverse_ok = False
        return y, d, spread

    def probes(self, dyn, v, u):
        """``(f, (J vᵀ)ᵀ or H vᵀ, u J or an empty array)``: without a reverse derivative (a while loop) the
        probes are JVPs only."""
        try:
            y, jv = self.programs.forward_probes(dyn, v)
        except TypeError as e:
            if "custom_vjp" not in str(e):
                raise
            raise InputError("f has a custom_vjp, so no forward-mode products: check it with method='dense' "
                             f"(dense_limit=… above {len(v[0]) * len(u[0])})") from None
        uj = np.zeros((0, 0))
        if self.kind == "Jacobian" and self.programs.reverse_ok is not False:
            try:
                uj = np.asarray(self.programs.reverse_probes(dyn, u), np.float64)
                self.programs.reverse_ok = True
            except (TypeError, ValueError, NotImplementedError):
                self.programs.reverse_ok = False  # (a while loop with a dynamic trip count, a callback)
        return np.asarray(y, np.float64), np.asarray(jv, np.float64), uj


# --------------------------------------------------------------------------------------- candidates
@dataclass
class _Candidate:
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
        raise _WrongShape(tuple(int(s) for s in shape))
    return got


class _WrongShape(Exception):
    def __init__(self, shape):
        self.shape = shape


def _to_csr(obj, m: int, n: int):
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


def _prepared_of(obj):
    """The prepared object inside a wrapper (``ScipyJacobian.sparse_jacobian`` …), or ``obj`` itself."""
    for name in ("sparse_jacobian", "sparse_hessian"):
        inner = getattr(obj, name, None)
        if inner is not None and hasattr(inner, "argnums") and hasattr(inner, "pattern"):
            return inner
    return obj


def _candidate(obj, kind: str) -> _Candidate:
    """Sort what the user passed into one of the three kinds (prepared, wrapper, matrix)."""
    from .ipopt import ConstraintJacobian, LagrangianHessian

    name = type(obj).__name__
    if isinstance(obj, (ConstraintJacobian, LagrangianHessian)):
        inner = _prepared_of(obj)
        rows, cols = (np.asarray(a, np.int64) for a in obj.structure())
        shape = tuple(inner.shape)
        lower = isinstance(obj, LagrangianHessian)

        def ipopt_at(pt):
            raw = np.asarray(obj(*pt))
            v = raw.astype(np.float64)
            if lower:  # IPOPT holds the lower triangle: mirror it
                off = rows != cols
                r, c, v = np.r_[rows, cols[off]], np.r_[cols, rows[off]], np.r_[v, v[off]]
            else:
                r, c = rows, cols
            return sp.csr_array((v, (r, c)), shape=shape), raw.dtype

        pattern = _ipopt_pattern(rows, cols, shape, lower)
        return _Candidate(f"IPOPT {name}", ipopt_at, pattern, False, tuple(inner.argnums), inner.has_aux,
                          int(getattr(inner, "num_colors", 0)), shape)
    if all(hasattr(obj, a) for a in ("values", "pattern", "argnums", "shape")) and callable(obj.values):
        csr = obj.pattern.to_scipy()
        shape = tuple(csr.shape)

        def prepared_at(pt):
            values = np.asarray(obj.values(*pt))
            return sp.csr_array((values.astype(np.float64), csr.indices, csr.indptr), shape=shape), values.dtype

        return _Candidate(f"prepared {kind}", prepared_at, csr, False, tuple(obj.argnums),
                          bool(getattr(obj, "has_aux", False)), int(getattr(obj, "num_colors", 0)), shape)
    inner = _prepared_of(obj)
    if inner is not obj and callable(obj):  # a wrapper called as its consumer calls it (ScipyJacobian …)
        pat = inner.pattern.to_scipy()
        shape = tuple(pat.shape)

        def wrapper_at(pt):
            csr, _, dtype = _to_csr(obj(*pt), *shape)
            return csr, dtype

        return _Candidate(f"{name} wrapper", wrapper_at, pat, False, tuple(inner.argnums),
                          bool(getattr(inner, "has_aux", False)), int(getattr(inner, "num_colors", 0)), shape)
    return _Candidate(f"{name} matrix", lambda pt: None, None, True)


def _ipopt_pattern(rows, cols, shape, lower):
    if lower:
        off = rows != cols
        rows, cols = np.r_[rows, cols[off]], np.r_[cols, rows[off]]
    p = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=shape)
    p.sum_duplicates()
    return p


# --------------------------------------------------------------------------------------- points
def _near(args, rng, radius: float):
    """``args`` with every floating-point array moved by ``radius · (|x_i| + mean|x|) · N(0, 1)``."""
    import jax
    import jax.numpy as jnp

    def move(leaf):
        if not _is_array(leaf) or not jnp.issubdtype(jnp.result_type(leaf), jnp.floating):
            return leaf
        a = np.asarray(leaf, np.float64)
        base = float(np.mean(np.abs(a))) if a.size else 0.0
        scale = np.abs(a) + (base if base > 0 else 1.0)
        moved = a + radius * scale * rng.standard_normal(a.shape)
        if isinstance(leaf, jax.Array):
            return jnp.asarray(moved, dtype=leaf.dtype)
        return np.asarray(moved, dtype=np.asarray(leaf).dtype)

    return tuple(jax.tree_util.tree_map(move, list(args), is_leaf=_is_array))


def _point_list(args, points, fixed: bool, seed: int):
    """``[(index, args, tries)]``: the points to compare; ``tries`` are closer replacements of a random point
    (``None`` for points that must be compared as they are)."""
    if points is None:
        points = 1 if fixed else 3
    if isinstance(points, (int, np.integer)) and not isinstance(points, bool):
        if points < 1:
            raise InputError(f"points must be at least 1 (args itself), got {points}")
        if fixed and points > 1:
            raise InputError("a matrix is the derivative at args only: it can be compared there and nowhere else "
                             "(points=1); pass a prepared object or a wrapper to compare at several points")
        rng = np.random.default_rng(seed)
        out: list = [(0, tuple(args), None)]
        for k in range(1, int(points)):
            tries = [_near(args, np.random.default_rng(rng.integers(2**63)), NEAR_RADIUS / 4 ** t) for t in range(3)]
            out.append((k, tries[0], tries[1:]))
        return out
    if fixed:
        raise InputError("a matrix is the derivative at args only: explicit points need a prepared object")
    pts = [tuple(p) for p in points]
    if not pts:
        raise InputError("points is an empty list")
    return [(k, p, None) for k, p in enumerate(pts)]


def _points_as_count(points) -> bool:
    return points is None or (isinstance(points, (int, np.integer)) and not isinstance(points, bool))


# --------------------------------------------------------------------------------------- comparison
def _not_finite(kind, shape, dtype, y, d, point, candidate, num_colors) -> CheckReport | None:
    bad_y = int(np.size(y) - np.count_nonzero(np.isfinite(y)))
    bad_d = int(np.size(d) - np.count_nonzero(np.isfinite(d)))
    if not bad_y and not bad_d:
        return None
    if bad_y:
        msg = f"the function is not finite there ({bad_y} of {np.size(y)} outputs NaN or inf)"
    else:
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(d))[0])
        msg = (f"the dense {kind} of the function is not finite there ({bad_d} of {np.size(d)} entries NaN or "
               f"inf, e.g. {where})")
    msg += "; nothing can be compared: check at points where the function is defined (args=/points=)"
    return CheckReport(False, kind, "dense", shape, dtype, num_colors, 0.0, 0.0, float("nan"), float("inf"),
                       message=msg, point=point, finite=False, candidate=candidate)


def _compare_dense(kind, dense, spread, approx, pattern, num_colors, eps, rtol, atol, dtype) -> CheckReport:
    absd = np.abs(dense)
    r, a = _tolerances(eps, float(absd.max(initial=0.0)), rtol, atol)
    row_scale = absd.max(axis=1, initial=0.0)[:, None]
    col_scale = absd.max(axis=0, initial=0.0)[None, :]
    scale = np.maximum(np.maximum(absd, row_scale), col_scale)
    tol = a + r * scale
    if spread is not None:
        # the spread widens the tolerance where dense AD disagrees with itself, but never beyond √eps of the
        # magnitudes (a reference that uncertain could not tell right from wrong anyway)
        tol = tol + np.minimum(SPREAD_FACTOR * spread, np.sqrt(eps) * scale)
    got = approx.toarray()
    diff = np.abs(got - dense)
    ratio = np.where(np.isfinite(diff), diff / tol, np.inf)
    if pattern is not None:
        outside = (pattern.toarray() == 0) & (ratio > 1)
        miss = np.argwhere(outside)
    else:
        miss = np.zeros((0, 2), np.int64)
    worst = float(ratio.max(initial=0.0))
    max_err = float(np.where(np.isfinite(diff), diff, np.inf).max(initial=0.0))
    ok = worst <= 1.0
    msg = ""
    if not ok:
        i, j = (int(t) for t in np.unravel_index(np.argmax(ratio), ratio.shape))
        msg = f"worst entry ({i}, {j}): {got[i, j]:.6g}, dense AD {dense[i, j]:.6g}"
    return CheckReport(ok, kind, "dense", tuple(dense.shape), str(np.dtype(dtype)), num_colors, r, a, max_err,
                       worst, 0, int(len(miss)), [tuple(int(i) for i in e) for e in miss[:5]], msg)


def _compare_probes(kind, pairs, amax, num_colors, shape, eps, rtol, atol, dtype, probes) -> CheckReport:
    """``pairs``: list of (reference (p, L), candidate (p, L), scale (p, L)) float64 arrays."""
    r, a = _tolerances(eps, amax, rtol, atol)
    worst, max_err = 0.0, 0.0
    for ref, approx, sc in pairs:
        diff = np.abs(ref - approx)
        tol = a + r * np.maximum(sc, np.abs(ref))
        ratio = np.where(np.isfinite(diff), diff / tol, np.inf)
        worst = max(worst, float(ratio.max(initial=0.0)))
        max_err = max(max_err, float(np.where(np.isfinite(diff), diff, np.inf).max(initial=0.0)))
    return CheckReport(worst <= 1.0, kind, "probes", shape, str(np.dtype(dtype)), num_colors, r, a, max_err,
                       worst, probes)


def _finish(report: CheckReport, raise_on_error: bool) -> CheckReport:
    if not report.ok and raise_on_error:
        raise DerivativeMismatchError(report)
    return report


def _method(method: str, m: int, n: int, dense_limit: int) -> str:
    if method not in ("auto", "dense", "probes"):
        raise InputError(f"method must be 'auto', 'dense' or 'probes', got {method!r}")
    if method == "auto":
        return "dense" if m * n <= dense_limit else "probes"
    return method


def _norm_argnums(argnums, nargs: int) -> tuple[int, ...]:
    items = (argnums,) if isinstance(argnums, (int, np.integer)) else tuple(argnums)
    out = []
    for i in items:
        if not isinstance(i, (int, np.integer)) or not -nargs <= int(i) < nargs:
            raise InputError(f"argnums {argnums!r} out of range for {nargs} arguments")
        out.append(int(i) % nargs)
    return tuple(dict.fromkeys(out))


def _selection(cand: _Candidate, args, argnums, has_aux, kind: str) -> tuple[tuple[int, ...], bool]:
    """A prepared object is checked for the arguments it differentiates; explicit ``argnums`` / ``has_aux``
    must agree with it (else the comparison would be between different derivatives)."""
    if cand.argnums is not None:
        if argnums is not None and _norm_argnums(argnums, len(args)) != cand.argnums:
            raise InputError(f"argnums={argnums!r} differs from the prepared {kind}'s argnums {cand.argnums}")
        if has_aux is not None and bool(has_aux) != bool(cand.has_aux):
            raise InputError(f"has_aux={has_aux} differs from the prepared {kind}'s has_aux={cand.has_aux}")
        return cand.argnums, bool(cand.has_aux)
    return _norm_argnums(0 if argnums is None else argnums, len(args)), bool(has_aux)


def _shape_mismatch(kind, want, got, cand: _Candidate, dtype) -> CheckReport:
    return CheckReport(False, kind, "shape", tuple(got), str(np.dtype(dtype)), cand.num_colors, 0.0, 0.0,
                       float("inf"), float("inf"), candidate=cand.describe,
                       message=f"the {cand.describe} is {'×'.join(map(str, got))}, the function's {kind} is "
                               f"{want[0]}×{want[1]}")


def _check(kind: str, f, args, obj, argnums, has_aux, method, probes, rtol, atol, seed, dense_limit, points,
           raise_on_error) -> CheckReport:
    """The comparison shared by :func:`check_jacobian` and :func:`check_hessian` once ``obj`` (the candidate)
    exists."""
    cand = _candidate(obj, kind)
    argnums, has_aux = _selection(cand, args, argnums, has_aux, kind)
    ref = _Reference(f, args, argnums, has_aux, kind)
    n = ref.n
    m = ref.out_size(args) if kind == "Jacobian" else n
    if cand.fixed:  # a matrix: its value is known now, at args
        try:
            approx, pattern, cdtype = _to_csr(obj, m, n)
        except _WrongShape as e:
            return _finish(_shape_mismatch(kind, (m, n), e.shape, cand, ref.x_dtype), raise_on_error)
        cand.at, cand.pattern, cand.shape = (lambda pt: (approx, cdtype)), pattern, approx.shape
    if cand.shape is None or tuple(cand.shape) != (m, n):
        return _finish(_shape_mismatch(kind, (m, n), tuple(cand.shape or ()), cand, ref.x_dtype), raise_on_error)
    dtype = ref.x_dtype
    how = _method(method, m, n, dense_limit)
    plan = _point_list(args, points, cand.fixed, seed)
    reports, skipped = [], 0
    for index, pt, closer in plan:
        for candidate_pt in [pt] + list(closer or []):
            dyn = ref.point(candidate_pt)
            if how == "dense":
                y, d, spread = ref.dense(dyn)
                bad = _not_finite(kind, (m, n), str(np.dtype(dtype)), y, d, index, cand.describe, cand.num_colors)
            else:
                rng = np.random.default_rng([seed, index])
                v = rng.standard_normal((probes, n))
                u = rng.standard_normal((probes, m))
                y, jv, uj = ref.probes(dyn, v, u)
                bad = _not_finite(kind, (m, n), str(np.dtype(dtype)), y, np.concatenate([jv.ravel(), uj.ravel()]),
                                  index, cand.describe, cand.num_colors)
            if bad is None or closer is None:
                break
        if bad is not None:
            if closer is not None:  # a random point where f is undefined even close to args: skip it
                skipped += 1
                continue
            reports.append(bad)
            break
        approx, cdtype = cand.at(candidate_pt)
        eps = _eps(ref.x_dtype, cdtype)
        if how == "dense":
            rep = _compare_dense(kind, d, spread, approx, cand.pattern, cand.num_colors, eps, rtol, atol, dtype)
        else:
            aj = abs(approx)
            pairs = [(jv, (approx @ v.T).T, (aj @ np.abs(v).T).T)]
            if uj.size:
                pairs.append((uj, (approx.T @ u.T).T, (aj.T @ np.abs(u).T).T))
            amax = float(np.abs(approx.data).max(initial=0.0)) if approx.nnz else 0.0
            rep = _compare_probes(kind, pairs, amax, cand.num_colors, (m, n), eps, rtol, atol, dtype, probes)
        rep.point, rep.candidate = index, cand.describe
        reports.append(rep)
    for rep in reports:
        rep.where = "args" if rep.point == 0 and _points_as_count(points) else \
            f"random point {rep.point} near args" if _points_as_count(points) else f"points[{rep.point}]"
    worst = max(reports, key=lambda rep: (not rep.ok, not rep.finite, rep.missing, rep.worst))
    worst.points, worst.skipped = len(reports), skipped  # (a point that is not finite ends the comparison)
    if cand.fixed:
        worst.message = "; ".join(s for s in (worst.message, "a matrix is a value at args only: compared there")
                                  if s)
    return _finish(worst, raise_on_error)


# --------------------------------------------------------------------------------------- public API
def check_jacobian(f: Callable, *args, argnums: int | Sequence[int] | None = None, has_aux: bool | None = None,
                   mode: str = "auto", method: str = "auto", probes: int = 4, rtol: float | None = None,
                   atol: float | None = None, seed: int = 0, dense_limit: int = 1_000_000,
                   raise_on_error: bool = True, jacobian=None, on_unknown: str = "error",
                   options=None, points: int | Sequence | None = None, **kwargs) -> CheckReport:
    """Compare a sparse Jacobian of ``f`` with dense AD of ``f`` at ``args`` and at random points near them.

    ``jacobian``: what to check — a prepared :class:`~stablehlo_sparsity.SparseJacobian` (also a module or a
    restored one), a SciPy/IPOPT wrapper, or a matrix (BCOO, BCSR, SciPy sparse, dense NumPy/JAX array, a
    lineax operator; compared at ``args`` only); default: prepare one with ``mode``, ``on_unknown``,
    ``options`` and ``kwargs``.  The reference is always dense AD of ``f`` itself (with ``kwargs`` bound):
    a Jacobian of another function, or of another shape, is a mismatch.  ``argnums`` / ``has_aux`` default to
    ``0`` / ``False``, or to the prepared object's.  ``points``: an int count (default 3: ``args`` and two
    seeded random points near them) or a list of argument tuples.  Tolerances: see the module docstring.
    Raises :class:`DerivativeMismatchError` on a mismatch (and when ``f`` is not finite at a compared point),
    or returns the :class:`CheckReport` (falsy) when ``raise_on_error=False``.
    """
    from .jacobian import SparseJacobian

    if jacobian is None:
        jacobian = SparseJacobian(f, args, argnums=0 if argnums is None else argnums, has_aux=bool(has_aux),
                                  mode=mode, output="values", kwargs=kwargs, on_unknown=on_unknown, options=options)
    fn = functools.partial(f, **kwargs) if kwargs else f
    return _check("Jacobian", fn, args, jacobian, argnums, has_aux, method, probes, rtol, atol, seed, dense_limit,
                  points, raise_on_error)


def check_hessian(f: Callable, *args, argnums: int | Sequence[int] | None = None, has_aux: bool | None = None,
                  method: str = "auto", probes: int = 4, rtol: float | None = None, atol: float | None = None,
                  seed: int = 0, dense_limit: int = 1_000_000, raise_on_error: bool = True, hessian=None,
                  on_unknown: str = "error", options=None, points: int | Sequence | None = None,
                  **kwargs) -> CheckReport:
    """Compare a sparse Hessian of the scalar ``f`` with dense AD of ``f`` (see :func:`check_jacobian`;
    ``hessian`` is a prepared :class:`~stablehlo_sparsity.SparseHessian`, an IPOPT
    :class:`~stablehlo_sparsity.ipopt.LagrangianHessian` or a matrix)."""
    from .hessian import SparseHessian

    if hessian is None:
        hessian = SparseHessian(f, args, argnums=0 if argnums is None else argnums, has_aux=bool(has_aux),
                                output="values", kwargs=kwargs, on_unknown=on_unknown, options=options)
    fn = functools.partial(f, **kwargs) if kwargs else f
    return _check("Hessian", fn, args, hessian, argnums, has_aux, method, probes, rtol, atol, seed, dense_limit,
                  points, raise_on_error)

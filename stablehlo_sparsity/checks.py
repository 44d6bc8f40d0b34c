"""Check a sparse Jacobian or Hessian against dense automatic differentiation.

    >>> import jax.numpy as jnp
    >>> from stablehlo_sparsity import check_jacobian
    >>> check_jacobian(lambda x: jnp.sin(x[1:]) * x[:-1], jnp.ones(6)).ok
    True

Two methods, picked by size (``method="auto"``):

* ``"dense"`` (``m·n ≤ dense_limit``): the full Jacobian by ``n`` batched JVPs (the Hessian by ``n``
  Hessian-vector products) compared entry by entry; entries outside the detected pattern are reported
  separately as ``missing`` — a detection (soundness) failure rather than an evaluation one;
* ``"probes"``: ``probes`` random matrix-vector products ``J v`` (JVP) and ``uᵀ J`` (VJP) — ``H v`` for
  Hessians — compared with the sparse matrix applied to the same vectors.

Tolerances are dtype-aware.  The compressed evaluation sums several columns (or rows) in one product, so its
rounding error scales with the magnitudes met along a row or column, not with the entry itself: an entry
passes when ``|sparse - dense| ≤ atol + rtol·max(|dense|, row scale, column scale)`` (for probes
``|Δ(Jv)_i| ≤ atol + rtol·(|J| |v|)_i``).  Defaults: ``rtol = 16·√eps`` (≈ 5.5e-3 for float32,
2.4e-7 for float64), ``atol = 16·eps·max|J|`` — loose enough for float32 round-off (a float32 Brusselator
passes), tight enough that a wrong or missing entry (an O(1) relative error) fails.

On a mismatch the functions raise :class:`DerivativeMismatchError` (a :class:`~stablehlo_sparsity.SparsityError`
carrying the report as ``.report``), or with ``raise_on_error=False`` return the report, whose truth value
is ``ok``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from .errors import InputError, SparsityError

__all__ = ["check_jacobian", "check_hessian", "CheckReport", "DerivativeMismatchError"]


@dataclass
class CheckReport:
    """The outcome of :func:`check_jacobian` / :func:`check_hessian`.

    ok: every compared quantity is within tolerance and no nonzero lies outside the pattern.
    method: ``"dense"`` or ``"probes"``.  max_error: the largest absolute difference.
    worst: the largest ``difference / tolerance`` (≤ 1 passes).  missing: nonzeros of the dense reference
    outside the detected pattern (dense method only; ``missing_examples`` lists a few ``(row, col)``).
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

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        state = "OK" if self.ok else "MISMATCH"
        m, n = self.shape
        how = f"{self.probes} probes" if self.method == "probes" else "dense comparison"
        s = (f"{self.kind} check {state}: {m}×{n} {self.dtype}, {how}, max |error| {self.max_error:.3g}, "
             f"worst error/tolerance {self.worst:.3g} (rtol {self.rtol:.2g}, atol {self.atol:.2g})")
        if self.missing:
            s += f"; {self.missing} nonzeros outside the detected pattern, e.g. {self.missing_examples[:3]}"
        if self.message:
            s += f"; {self.message}"
        return s


class DerivativeMismatchError(SparsityError):
    """A sparse Jacobian/Hessian that disagrees with dense AD (``.report`` holds the details)."""

    def __init__(self, report: CheckReport):
        super().__init__(str(report))
        self.report = report


def _tolerances(dtype, scale: float, rtol, atol) -> tuple[float, float]:
    eps = float(np.finfo(np.dtype(dtype)).eps)
    r = 16 * np.sqrt(eps) if rtol is None else float(rtol)
    a = 16 * eps * max(scale, np.finfo(np.dtype(dtype)).tiny) if atol is None else float(atol)
    return r, a


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


# --------------------------------------------------------------------------------------- comparison
def _compare_dense(kind, dense, sparse_csr, pattern_csr, num_colors, rtol, atol, dtype) -> CheckReport:
    dense = np.asarray(dense, dtype=np.float64)
    approx = sparse_csr.toarray().astype(np.float64)
    absd = np.abs(dense)
    finite = np.isfinite(dense)
    scale = float(absd[finite].max()) if finite.any() else 0.0
    r, a = _tolerances(dtype, scale, rtol, atol)
    absd_f = np.where(finite, absd, 0.0)
    row_scale = absd_f.max(axis=1, initial=0.0)[:, None]
    col_scale = absd_f.max(axis=0, initial=0.0)[None, :]
    tol = a + r * np.maximum(np.maximum(absd_f, row_scale), col_scale)
    diff = np.abs(approx - dense)
    same_nan = np.isnan(approx) & np.isnan(dense)
    diff = np.where(same_nan, 0.0, diff)
    ratio = np.where(np.isnan(diff), np.inf, diff / np.maximum(tol, np.finfo(np.float64).tiny))
    in_pattern = pattern_csr.toarray().astype(bool)
    outside = ~in_pattern & (ratio > 1)
    miss = np.argwhere(outside)
    worst = float(ratio.max()) if ratio.size else 0.0
    max_err = float(np.nanmax(diff)) if diff.size else 0.0
    ok = worst <= 1.0
    msg = "" if ok else f"worst entry {tuple(int(i) for i in np.unravel_index(np.argmax(ratio), ratio.shape))}"
    return CheckReport(ok, kind, "dense", tuple(dense.shape), str(np.dtype(dtype)), num_colors, r, a, max_err,
                       worst, 0, int(len(miss)), [tuple(int(i) for i in e) for e in miss[:5]], msg)


def _compare_probes(kind, pairs, sparse_abs_scale, num_colors, shape, rtol, atol, dtype, probes) -> CheckReport:
    """``pairs``: list of (reference (p, L), sparse (p, L), scale (p, L)) float64 arrays."""
    scale = max((float(np.nanmax(np.abs(ref))) if ref.size else 0.0) for ref, _, _ in pairs)
    r, a = _tolerances(dtype, max(scale, sparse_abs_scale), rtol, atol)
    worst, max_err = 0.0, 0.0
    for ref, approx, sc in pairs:
        diff = np.abs(ref - approx)
        diff = np.where(np.isnan(ref) & np.isnan(approx), 0.0, diff)
        tol = a + r * np.maximum(sc, np.abs(ref))
        ratio = np.where(np.isnan(diff), np.inf, diff / np.maximum(tol, np.finfo(np.float64).tiny))
        if ratio.size:
            worst = max(worst, float(ratio.max()))
            max_err = max(max_err, float(np.nanmax(diff)))
    ok = worst <= 1.0
    return CheckReport(ok, kind, "probes", shape, str(np.dtype(dtype)), num_colors, r, a, max_err, worst, probes)


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


def _same_selection(prepared, args, argnums, has_aux, what: str) -> None:
    """A prepared object is checked for the arguments it differentiates; explicit ``argnums`` / ``has_aux``
    must agree with it (else the comparison would be between different derivatives)."""
    from .api import _norm_argnums

    if argnums is not None and tuple(dict.fromkeys(_norm_argnums(argnums, len(args)))) != tuple(prepared.argnums):
        raise InputError(f"argnums={argnums!r} differs from the prepared {what}'s argnums {prepared.argnums}")
    if has_aux is not None and bool(has_aux) != prepared.has_aux:
        raise InputError(f"has_aux={has_aux} differs from the prepared {what}'s has_aux={prepared.has_aux}")


def _shape_mismatch(kind, want, got, num_colors, dtype) -> CheckReport:
    return CheckReport(False, kind, "shape", tuple(got), str(np.dtype(dtype)), num_colors, 0.0, 0.0,
                       float("inf"), float("inf"),
                       message=f"the prepared {kind} is {got[0]}×{got[1]}, the function's is {want[0]}×{want[1]}")


# --------------------------------------------------------------------------------------- public API
def check_jacobian(f: Callable, *args, argnums: int | Sequence[int] | None = None, has_aux: bool | None = None,
                   mode: str = "auto", method: str = "auto", probes: int = 4, rtol: float | None = None,
                   atol: float | None = None, seed: int = 0, dense_limit: int = 1_000_000,
                   raise_on_error: bool = True, jacobian=None, on_unknown: str = "error",
                   options=None, **kwargs) -> CheckReport:
    """Compare the sparse Jacobian of ``f`` at ``args`` with dense AD of ``f``.

    ``jacobian``: an already prepared :class:`~stablehlo_sparsity.SparseJacobian` to check against ``f``
    (default: prepare one with ``mode``, ``on_unknown``, ``options`` and ``kwargs``).  The reference is
    always dense AD of ``f`` itself (with ``kwargs`` bound), never of the function the Jacobian was prepared
    from: a Jacobian of another function, or of another output shape, is a mismatch.  ``argnums`` /
    ``has_aux`` default to ``0`` / ``False``, or to the prepared Jacobian's.  Raises
    :class:`DerivativeMismatchError` on a mismatch, or returns the :class:`CheckReport` (falsy) when
    ``raise_on_error=False``.
    """
    import functools

    import jax
    import jax.numpy as jnp

    from .jacobian import SparseJacobian, _bind_selected, _float_outputs
    from .keywords import refuse_library_keywords

    refuse_library_keywords("check_jacobian", kwargs)

    if jacobian is None:
        sj = SparseJacobian(f, args, argnums=0 if argnums is None else argnums, has_aux=bool(has_aux), mode=mode,
                            output="values", kwargs=kwargs, on_unknown=on_unknown, options=options)
    else:
        sj = jacobian
        _same_selection(sj, args, argnums, has_aux, "Jacobian")
    m, n = sj.shape
    values = np.asarray(sj.values(*args))
    csr = sj.pattern.to_scipy()
    jac = sp.csr_array((values, csr.indices, csr.indptr), shape=(m, n))
    sel = tuple(args[i] for i in sj.argnums)
    sel_leaves = jax.tree_util.tree_leaves(sel)
    x_dtype = jnp.result_type(*sel_leaves)
    # The reference is the user's f (issue 11: not the function the prepared Jacobian holds).
    fn = functools.partial(f, **kwargs) if kwargs else f
    h0 = _bind_selected(fn, args, sj.argnums)

    def h(*s):
        y = h0(*s)
        return _float_outputs(y[0] if sj.has_aux else y, x_dtype)

    out_size = sum(int(np.prod(o.shape, dtype=np.int64)) for o in jax.tree_util.tree_leaves(jax.eval_shape(h, *sel)))
    if out_size != m or sum(int(np.size(leaf)) for leaf in sel_leaves) != n:
        return _finish(_shape_mismatch("Jacobian", (out_size, int(sum(np.size(l) for l in sel_leaves))), (m, n),
                                       sj.num_colors, x_dtype), raise_on_error)
    dtype = jnp.result_type(x_dtype, values.dtype) if values.size else x_dtype
    how = _method(method, m, n, dense_limit)
    if how == "dense":
        dense_t = (np.asarray(jax.jit(lambda s: _jvps(h, s, jnp.eye(n, dtype=x_dtype)))(sel)) if n
                   else np.zeros((0, m)))
        return _finish(_compare_dense("Jacobian", dense_t.T, jac, csr, sj.num_colors, rtol, atol, dtype),
                       raise_on_error)
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((probes, n))
    u = rng.standard_normal((probes, m))
    out_leaves = jax.tree_util.tree_leaves(jax.eval_shape(h, *sel))
    y_dtype = jnp.result_type(*out_leaves) if out_leaves else x_dtype
    jv, uj = jax.jit(lambda s, vv, uu: (_jvps(h, s, vv), _vjps(h, s, uu)))(
        sel, jnp.asarray(v, x_dtype), jnp.asarray(u, y_dtype))
    jv, uj = np.asarray(jv, dtype=np.float64), np.asarray(uj, dtype=np.float64)
    ajac = abs(jac)
    jv_s = (jac @ v.T).T
    uj_s = (jac.T @ u.T).T
    sc_v = (ajac @ np.abs(v).T).T
    sc_u = (ajac.T @ np.abs(u).T).T
    amax = float(np.abs(values).max()) if values.size else 0.0
    rep = _compare_probes("Jacobian", [(jv, jv_s, sc_v), (uj, uj_s, sc_u)], amax, sj.num_colors, (m, n),
                          rtol, atol, dtype, probes)
    return _finish(rep, raise_on_error)


def check_hessian(f: Callable, *args, argnums: int | Sequence[int] | None = None, has_aux: bool | None = None,
                  method: str = "auto", probes: int = 4, rtol: float | None = None, atol: float | None = None,
                  seed: int = 0, dense_limit: int = 1_000_000, raise_on_error: bool = True, hessian=None,
                  on_unknown: str = "error", options=None, mode: str = "direct", **kwargs) -> CheckReport:
    """Compare the sparse Hessian of the scalar ``f`` at ``args`` with dense AD of ``f`` (see
    :func:`check_jacobian`; ``hessian`` is an already prepared :class:`~stablehlo_sparsity.SparseHessian`;
    ``mode`` is the recovery of the Hessian prepared when ``hessian`` is not given)."""
    import functools

    import jax
    import jax.numpy as jnp

    from .hessian import SparseHessian, _scalar
    from .jacobian import _bind_selected
    from .keywords import refuse_library_keywords

    refuse_library_keywords("check_hessian", kwargs)
    if hessian is None:
        sh = SparseHessian(f, args, argnums=0 if argnums is None else argnums, has_aux=bool(has_aux),
                           output="values", kwargs=kwargs, on_unknown=on_unknown, options=options, mode=mode)
    else:
        sh = hessian
        _same_selection(sh, args, argnums, has_aux, "Hessian")
    n = sh.shape[0]
    values = np.asarray(sh.values(*args))
    csr = sh.pattern.to_scipy()
    hess = sp.csr_array((values, csr.indices, csr.indptr), shape=(n, n))
    sel = tuple(args[i] for i in sh.argnums)
    sel_leaves = jax.tree_util.tree_leaves(sel)
    x_dtype = jnp.result_type(*sel_leaves)
    # The reference is the user's f (issue 11: not the function the prepared Hessian holds).
    fn = _scalar(functools.partial(f, **kwargs) if kwargs else f, sh.has_aux)
    h0 = _bind_selected(fn, args, sh.argnums)

    def h(*s):
        y = h0(*s)
        return y[0] if sh.has_aux else y

    n_sel = int(sum(np.size(leaf) for leaf in sel_leaves))
    if n_sel != n:
        return _finish(_shape_mismatch("Hessian", (n_sel, n_sel), (n, n), sh.num_colors, x_dtype), raise_on_error)
    how = _method(method, n, n, dense_limit)
    if how == "dense":
        dense = (np.asarray(jax.jit(lambda s: _hvps(h, s, jnp.eye(n, dtype=x_dtype)))(sel)) if n
                 else np.zeros((0, 0)))
        return _finish(_compare_dense("Hessian", dense.T, hess, csr, sh.num_colors, rtol, atol, x_dtype),
                       raise_on_error)
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((probes, n))
    hv = np.asarray(jax.jit(lambda s, vv: _hvps(h, s, vv))(sel, jnp.asarray(v, x_dtype)), dtype=np.float64)
    hv_s = (hess @ v.T).T
    sc = (abs(hess) @ np.abs(v).T).T
    amax = float(np.abs(values).max()) if values.size else 0.0
    rep = _compare_probes("Hessian", [(hv, hv_s, sc)], amax, sh.num_colors, (n, n), rtol, atol, x_dtype, probes)
    return _finish(rep, raise_on_error)

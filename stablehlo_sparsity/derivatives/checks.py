"""Check a sparse Jacobian or Hessian against dense automatic differentiation.

    >>> import jax.numpy as jnp
    >>> from stablehlo_sparsity import check_jacobian
    >>> check_jacobian(lambda x: jnp.sin(x[1:]) * x[:-1], jnp.ones(6)).ok
    True

**What is checked.**  ``jacobian=`` (``hessian=``) may be any matrix a user holds:

* a prepared object (:class:`~stablehlo_sparsity.SparseJacobian`, :class:`~stablehlo_sparsity.SparseHessian`,
  the module ones, a restored one) — evaluated at every compared point through its public ``values``;
* a callable wrapper that returns a matrix at a point: :func:`~stablehlo_sparsity.interop.scipy.least_squares_jacobian`
  and :func:`~stablehlo_sparsity.interop.scipy.ivp_jacobian` (called as SciPy calls them, with the check's
  arguments), the IPOPT triplet callables of :mod:`stablehlo_sparsity.interop.ipopt` (their ``structure()`` gives the
  coordinates; the Lagrangian Hessian's lower triangle is mirrored);
* a plain matrix — a JAX ``BCOO``/``BCSR``, a SciPy sparse matrix or array, a dense NumPy/JAX array (also in
  ``jax.jacfwd``'s ``output shape + input shape`` layout), a ``lineax`` operator of
  :mod:`stablehlo_sparsity.interop.lineax`.  A matrix is a value **at ``args`` only**: it is compared there
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
from typing import Callable, Sequence

import numpy as np

from .check_candidates import Candidate, WrongShape, candidate_of, to_csr
from .check_reference import DenseReference, is_array
from ..errors import InputError, SparsityError
from ..ir.keywords import parse_indices, refuse_library_keywords
from ..analysis.arguments import check_function_and_arguments

__all__ = ["check_jacobian", "check_hessian", "CheckReport", "DerivativeMismatchError"]

#: ``rtol = RTOL_EPS · eps``: the per-entry rounding allowance (in units of the dtype's epsilon) relative to the
#: magnitudes of the entry's row and column.  Measured worst ratio of correct float32 Jacobians/Hessians on the
#: soundness suite: see ``tests/derivatives/test_checks.py::test_correct_derivatives_pass_with_margin``.
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

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> rep = ss.check_jacobian(lambda x: x ** 2, jnp.ones(3), jacobian=jnp.eye(3), raise_on_error=False)
        >>> bool(rep), rep.method, rep.max_error, rep.worst > 1
        (False, 'dense', 1.0, True)
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


    def _repr_html_(self) -> str:
        """Jupyter: the verdict in colour, then the report's fields as a table."""
        import html

        color = "#1a7f37" if self.ok else "#cf222e"
        verdict = "OK" if self.ok else ("NOT FINITE" if not self.finite else "MISMATCH")
        rows = [("what", f"{self.kind} {self.shape[0]}×{self.shape[1]} {self.dtype} ({self.candidate or '—'})"),
                ("method", self.method if self.method != "probes" else f"{self.probes} probes"),
                ("points", str(self.points)), ("max |error|", f"{self.max_error:.3g}"),
                ("worst error / tolerance", f"{self.worst:.3g}"), ("rtol, atol", f"{self.rtol:.2g}, {self.atol:.2g}")]
        if self.missing:
            rows.append(("nonzeros outside the pattern", f"{self.missing}, e.g. {self.missing_examples[:3]}"))
        if self.message:
            rows.append(("message", self.message))
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                       for k, v in rows)
        return (f'<div><b style="color:{color}">{self.kind} check {verdict}</b>'
                f"<table>{body}</table></div>")


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


# --------------------------------------------------------------------------------------- points
def _near(args, rng, radius: float):
    """``args`` with every floating-point array moved by ``radius · (|x_i| + mean|x|) · N(0, 1)``."""
    import jax
    import jax.numpy as jnp

    def move(leaf):
        if not is_array(leaf) or not jnp.issubdtype(jnp.result_type(leaf), jnp.floating):
            return leaf
        a = np.asarray(leaf, np.float64)
        base = float(np.mean(np.abs(a))) if a.size else 0.0
        scale = np.abs(a) + (base if base > 0 else 1.0)
        moved = a + radius * scale * rng.standard_normal(a.shape)
        if isinstance(leaf, jax.Array):
            return jnp.asarray(moved, dtype=leaf.dtype)
        return np.asarray(moved, dtype=np.asarray(leaf).dtype)

    return tuple(jax.tree_util.tree_map(move, list(args), is_leaf=is_array))


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


def _selection(cand: Candidate, args, argnums, has_aux, kind: str) -> tuple[tuple[int, ...], bool]:
    """A prepared object is checked for the arguments it differentiates; explicit ``argnums`` / ``has_aux``
    must agree with it (else the comparison would be between different derivatives)."""
    if cand.argnums is not None:
        if argnums is not None and parse_indices(argnums, len(args), unique=True) != cand.argnums:
            raise InputError(f"argnums={argnums!r} differs from the prepared {kind}'s argnums {cand.argnums}")
        if has_aux is not None and bool(has_aux) != bool(cand.has_aux):
            raise InputError(f"has_aux={has_aux} differs from the prepared {kind}'s has_aux={cand.has_aux}")
        return cand.argnums, bool(cand.has_aux)
    return parse_indices(argnums, len(args), unique=True), bool(has_aux)


def _shape_mismatch(kind, want, got, cand: Candidate, dtype) -> CheckReport:
    return CheckReport(False, kind, "shape", tuple(got), str(np.dtype(dtype)), cand.num_colors, 0.0, 0.0,
                       float("inf"), float("inf"), candidate=cand.describe,
                       message=f"the {cand.describe} is {'×'.join(map(str, got))}, the function's {kind} is "
                               f"{want[0]}×{want[1]}")


def _check(kind: str, f, args, obj, argnums, has_aux, method, probes, rtol, atol, seed, dense_limit, points,
           raise_on_error) -> CheckReport:
    """The comparison shared by :func:`check_jacobian` and :func:`check_hessian` once ``obj`` (the candidate)
    exists."""
    cand = candidate_of(obj, kind)
    argnums, has_aux = _selection(cand, args, argnums, has_aux, kind)
    ref = DenseReference(f, args, argnums, has_aux, kind)
    n = ref.n
    m = ref.out_size(args) if kind == "Jacobian" else n
    if cand.fixed:  # a matrix: its value is known now, at args
        try:
            approx, pattern, cdtype = to_csr(obj, m, n)
        except WrongShape as e:
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


def _candidate_request(entry: str, f, args, kwargs, argnums, has_aux, mode, on_unknown, options):
    """The request of the candidate a check prepares when none is given: the check's ``argnums`` (``None``: 0),
    ``has_aux``, ``mode``, ``on_unknown`` and ``options``, every value output (the check's own ``method`` is no
    Hessian method)."""
    from .request import derivative_request

    given = dict(argnums=0 if argnums is None else argnums, has_aux=bool(has_aux), mode=mode,
                 on_unknown=on_unknown, options=options, output="values")
    return derivative_request(entry, f, args, kwargs, given)


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

    Raises:
        DerivativeMismatchError: the candidate disagrees with dense AD, misses a nonzero of it, or ``f`` is not
            finite at a compared point (unless ``raise_on_error=False``).
        InputError: an unknown ``method``, bad ``points`` (fewer than 1, an empty list, or explicit points with a
            matrix), ``argnums`` / ``has_aux`` that differ from the prepared object's, a ``jacobian`` of a kind
            that cannot be checked, a library keyword this function does not take, or the errors of
            ``sparse_jacobian`` when it prepares the candidate (``LoweringError`` when JAX cannot lower ``f``).
        UnsupportedOpError: (preparing the candidate) an op without a sparsity rule (with ``on_unknown="error"``).
        UnsupportedTypeError: (preparing the candidate) an element type the analysis cannot represent.
        PatternTooLargeError: (preparing the candidate) an intermediate pattern above ``max_pattern_nnz``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> f = lambda x: jnp.sin(x[1:]) * x[:-1]
        >>> report = ss.check_jacobian(f, jnp.ones(5))
        >>> report.ok, report.method, report.points
        (True, 'dense', 3)
        >>> ss.check_jacobian(f, jnp.ones(5), jacobian=jnp.zeros((4, 5)), raise_on_error=False).ok
        False
    """
    from .jacobian import SparseJacobian

    if jacobian is None:  # prepared here, in the name of this function (its argnums / has_aux, parsed once)
        req = _candidate_request("check_jacobian", f, args, kwargs, argnums, has_aux, mode, on_unknown, options)
        jacobian, argnums, has_aux = SparseJacobian.from_request(req), None, None
    else:
        refuse_library_keywords("check_jacobian", kwargs, f)
        check_function_and_arguments("check_jacobian", f, args)
    fn = functools.partial(f, **kwargs) if kwargs else f
    return _check("Jacobian", fn, args, jacobian, argnums, has_aux, method, probes, rtol, atol, seed, dense_limit,
                  points, raise_on_error)


def check_hessian(f: Callable, *args, argnums: int | Sequence[int] | None = None, has_aux: bool | None = None,
                  method: str = "auto", probes: int = 4, rtol: float | None = None, atol: float | None = None,
                  seed: int = 0, dense_limit: int = 1_000_000, raise_on_error: bool = True, hessian=None,
                  on_unknown: str = "error", options=None, points: int | Sequence | None = None,
                  mode: str = "direct", **kwargs) -> CheckReport:
    """Compare a sparse Hessian of the scalar ``f`` with dense AD of ``f`` (see :func:`check_jacobian`;
    ``hessian`` is a prepared :class:`~stablehlo_sparsity.SparseHessian`, an IPOPT
    :class:`~stablehlo_sparsity.interop.ipopt.LagrangianHessian` or a matrix; ``mode`` is the recovery of the Hessian
    prepared when ``hessian`` is not given).

    Raises:
        DerivativeMismatchError: the candidate disagrees with dense AD, misses a nonzero of it, or ``f`` is not
            finite at a compared point (unless ``raise_on_error=False``).
        InputError: ``f`` does not return a scalar, an unknown ``method``, bad ``points``, ``argnums`` /
            ``has_aux`` that differ from the prepared object's, a ``hessian`` of a kind that cannot be checked, a
            library keyword this function does not take, or the errors of ``sparse_hessian`` when it prepares the
            candidate (``LoweringError`` when JAX cannot lower ``f``).
        UnsupportedOpError: (preparing the candidate) an op without a sparsity rule (with ``on_unknown="error"``).
        UnsupportedTypeError: (preparing the candidate) an element type the analysis cannot represent.
        PatternTooLargeError: (preparing the candidate) an intermediate pattern above ``max_pattern_nnz``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> f = lambda x: jnp.sum(x[1:] * x[:-1])
        >>> report = ss.check_hessian(f, jnp.ones(4))
        >>> report.ok, report.kind, report.num_colors
        (True, 'Hessian', 3)
    """
    from .hessian import SparseHessian

    if hessian is None:  # prepared here, in the name of this function (its argnums / has_aux, parsed once)
        req = _candidate_request("check_hessian", f, args, kwargs, argnums, has_aux, mode, on_unknown, options)
        hessian, argnums, has_aux = SparseHessian.from_request(req), None, None
    else:
        refuse_library_keywords("check_hessian", kwargs, f)
        check_function_and_arguments("check_hessian", f, args)
    fn = functools.partial(f, **kwargs) if kwargs else f
    return _check("Hessian", fn, args, hessian, argnums, has_aux, method, probes, rtol, atol, seed, dense_limit,
                  points, raise_on_error)

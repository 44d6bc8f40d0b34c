"""Linear algebra: §triangular_solve, §cholesky, §fft with ``jax.lax``, and JAX transcriptions of LAPACK's
Householder QR steps (:func:`geqrf_reference`, :func:`orgqr_reference`), through which :mod:`.custom_call`
differentiates the ``geqrf`` / ``orgqr`` kernels (JAX has no derivative of its own for them)."""

from __future__ import annotations

from typing import Any


from ...ir.attrs import bool_attr, enum_or, enum_text, i64_list
from .core import ImportContext, Op, Values, import_rule, jax_lax


@import_rule("stablehlo.triangular_solve")
def _triangular_solve(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§triangular_solve: ``lax.linalg.triangular_solve`` with ``left_side``, ``lower``, ``unit_diagonal`` and
    ``transpose_a`` (``TRANSPOSE`` / ``ADJOINT``)."""
    from jax.lax import linalg

    a, b = args
    ta = enum_or(op, "transpose_a", "NO_TRANSPOSE")
    return [linalg.triangular_solve(a, b, left_side=bool_attr(op, "left_side"), lower=bool_attr(op, "lower"),
                                    transpose_a=ta != "NO_TRANSPOSE", conjugate_a=ta == "ADJOINT",
                                    unit_diagonal=bool_attr(op, "unit_diagonal"))]


def sym_from(x: Any, lower: bool) -> Any:
    """The Hermitian matrix a kernel reading one triangle sees: that triangle, mirrored."""
    import jax.numpy as jnp

    if not lower:
        x = jnp.swapaxes(x, -1, -2).conj()
    low = jnp.tril(x)
    return low + jnp.swapaxes(jnp.tril(x, -1), -1, -2).conj()


@import_rule("stablehlo.cholesky")
def _cholesky(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§cholesky of the ``lower`` (or upper) triangle: ``lax.linalg.cholesky`` of that triangle mirrored
    (the spec leaves the other triangle of the result implementation-defined; here it is zero)."""
    import jax.numpy as jnp
    from jax.lax import linalg

    (a,) = args
    lower = bool_attr(op, "lower")
    L = linalg.cholesky(sym_from(a, lower), symmetrize_input=False)
    return [L if lower else jnp.swapaxes(L, -1, -2).conj()]


@import_rule("stablehlo.fft")
def _fft(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§fft: ``lax.fft`` with ``fft_type`` and ``fft_length``."""
    lax = jax_lax()
    kind = enum_text(op, "fft_type")
    return [lax.fft(args[0], getattr(lax.FftType, kind), tuple(i64_list(op, "fft_length")))]


def _householder_vector(col: Any, j: Any, rows: Any) -> tuple[Any, Any, Any]:
    """The reflector of column ``col`` at step ``j`` with LAPACK's ``?larfg`` conventions: ``(v, beta, tau)``
    with ``v[j] = 1``, ``v[:j] = 0``, ``H = I - tau v vᴴ``, ``Hᴴ col = beta e_j`` (``beta`` real, of the
    opposite sign to ``Re col[j]``); ``tau = 0`` when there is nothing to annihilate."""
    import jax.numpy as jnp

    below = rows > j
    alpha = jnp.sum(jnp.where(rows == j, col, 0), axis=-1)
    xnorm2 = jnp.sum(jnp.where(below, jnp.abs(col) ** 2, 0), axis=-1)
    trivial = (xnorm2 == 0) & (jnp.imag(alpha) == 0)
    safe2 = jnp.where(trivial, 1, jnp.abs(alpha) ** 2 + xnorm2)
    beta = jnp.where(jnp.real(alpha) >= 0, -1, 1) * jnp.sqrt(safe2)
    tau = jnp.where(trivial, 0, (beta - alpha) / beta).astype(col.dtype)
    scale = jnp.where(trivial, 1, alpha - beta)
    v = jnp.where(below, col / scale[..., None], jnp.where(rows == j, 1, 0)).astype(col.dtype)
    return v, jnp.where(trivial, alpha, beta).astype(col.dtype), tau


def geqrf_reference(a: Any) -> tuple[Any, Any]:
    """LAPACK's ``?geqrf`` (unblocked ``?geqr2``) in JAX: ``R`` on and above the diagonal, the reflectors
    below it, and ``tau``.  Differentiable; the importer evaluates its derivative at the module's operand."""
    import jax.numpy as jnp
    from jax import lax

    m, n = a.shape[-2:]
    k = min(m, n)
    rows = jnp.arange(m)
    cols = jnp.arange(n)

    def step(j: Any, carry: tuple[Any, Any]) -> tuple[Any, Any]:
        x, taus = carry
        col = jnp.sum(jnp.where(cols == j, x, 0), axis=-1)  # x[..., :, j]
        v, diag, tau = _householder_vector(col, j, rows)
        w = jnp.sum(v.conj()[..., :, None] * x, axis=-2)  # vᴴ x
        applied = x - (tau.conj()[..., None, None] * v[..., :, None]) * w[..., None, :]
        newcol = jnp.where(rows > j, v, jnp.where(rows == j, diag[..., None], col))
        x = jnp.where(cols > j, applied, jnp.where(cols == j, newcol[..., :, None], x))
        taus = jnp.where(jnp.arange(k) == j, tau[..., None], taus)
        return x, taus

    r, taus = lax.fori_loop(0, k, step, (a, jnp.zeros(a.shape[:-2] + (k,), a.dtype)))
    return r, taus


def orgqr_reference(a: Any, taus: Any) -> Any:
    """LAPACK's ``?orgqr`` / ``?ungqr`` in JAX: the first ``n`` columns of ``H_0 ⋯ H_(k-1)`` from the
    reflectors below the diagonal of ``a`` (``m × n``) and ``taus`` (``k``).  Differentiable."""
    import jax.numpy as jnp
    from jax import lax

    m, n = a.shape[-2:]
    k = taus.shape[-1]
    rows = jnp.arange(m)
    cols = jnp.arange(n)
    q0 = jnp.broadcast_to(jnp.eye(m, n, dtype=a.dtype), a.shape)

    def step(i: Any, q: Any) -> Any:
        j = k - 1 - i  # Q = H_0 (H_1 (⋯ (H_(k-1) I)))
        col = jnp.sum(jnp.where(cols == j, a, 0), axis=-1)
        v = jnp.where(rows > j, col, jnp.where(rows == j, 1, 0)).astype(a.dtype)
        tau = jnp.sum(jnp.where(jnp.arange(k) == j, taus, 0), axis=-1)
        w = jnp.sum(v.conj()[..., :, None] * q, axis=-2)
        return q - (tau[..., None, None] * v[..., :, None]) * w[..., None, :]

    return lax.fori_loop(0, k, step, q0)



"""Linear algebra: §triangular_solve, §cholesky, §fft, and ``stablehlo.custom_call`` (§custom_call).

Custom calls are re-emitted verbatim (:mod:`.replay`) so that the LAPACK / cuSOLVER kernel the module calls
computes the primal, with the derivative of the ``jax.lax.linalg`` function that computes the same
factorization (:data:`LAPACK_JVPS`): ``getrf`` → ``lu``, ``potrf`` → ``cholesky``, ``trsm`` →
``triangular_solve``, ``syevd`` / ``heevd`` → ``eigh``.  The other factorizations (QR's ``geqrf`` /
``orgqr``, SVD, Schur …) replay faithfully but have no derivative rule here: differentiating them is an
error naming the op and its target.  Sharding markers are the identity (a shape-changing one —
``SPMDFullToShardShape`` of a sharded program — is refused, as the analysis does); Python callbacks belong to
the process that exported the module and cannot be replayed.
"""

from __future__ import annotations

import re

import numpy as np

from .core import import_rule
from .replay import REPLAY_JVPS, replay


def _lax():
    from jax import lax

    return lax


def _enum(op, name):
    return str(op.attributes[name]).rstrip(">").split()[-1]


def _bool(op, name, default=False) -> bool:
    from jaxlib.mlir import ir

    if name not in op.attributes:
        return default
    return bool(ir.BoolAttr(op.attributes[name]).value)


@import_rule("stablehlo.triangular_solve")
def _triangular_solve(ctx, op, args):
    """§triangular_solve: ``lax.linalg.triangular_solve`` with ``left_side``, ``lower``, ``unit_diagonal`` and
    ``transpose_a`` (``TRANSPOSE`` / ``ADJOINT``)."""
    from jax.lax import linalg

    a, b = args
    ta = _enum(op, "transpose_a") if "transpose_a" in op.attributes else "NO_TRANSPOSE"
    return [linalg.triangular_solve(a, b, left_side=_bool(op, "left_side"), lower=_bool(op, "lower"),
                                    transpose_a=ta != "NO_TRANSPOSE", conjugate_a=ta == "ADJOINT",
                                    unit_diagonal=_bool(op, "unit_diagonal"))]


def _tril(x, k=0):
    import jax.numpy as jnp

    return jnp.tril(x, k)


def _sym_from(x, lower: bool):
    """The Hermitian matrix a kernel reading one triangle sees: that triangle, mirrored."""
    import jax.numpy as jnp

    if not lower:
        x = jnp.swapaxes(x, -1, -2).conj()
    low = jnp.tril(x)
    return low + jnp.swapaxes(jnp.tril(x, -1), -1, -2).conj()


@import_rule("stablehlo.cholesky")
def _cholesky(ctx, op, args):
    """§cholesky of the ``lower`` (or upper) triangle: ``lax.linalg.cholesky`` of that triangle mirrored
    (the spec leaves the other triangle of the result implementation-defined; here it is zero)."""
    import jax.numpy as jnp
    from jax.lax import linalg

    (a,) = args
    lower = _bool(op, "lower")
    L = linalg.cholesky(_sym_from(a, lower), symmetrize_input=False)
    return [L if lower else jnp.swapaxes(L, -1, -2).conj()]


@import_rule("stablehlo.fft")
def _fft(ctx, op, args):
    """§fft: ``lax.fft`` with ``fft_type`` and ``fft_length``."""
    from ..attrs import i64_list

    lax = _lax()
    kind = _enum(op, "fft_type")
    return [lax.fft(args[0], getattr(lax.FftType, kind), tuple(i64_list(op, "fft_length")))]


# ---------------------------------------------------------------------- custom_call
def _backend_config(op) -> dict:
    from ..attrs import dict_attr

    return dict_attr(op, "mhlo.backend_config")


def _getrf_jvp(primals, tangents, attrs, out):
    import jax
    from jax.lax import linalg

    return [jax.jvp(lambda a: linalg.lu(a)[0], primals[:1], tangents[:1])[1], None, None][:len(out)]


def _potrf_jvp(primals, tangents, attrs, out):
    """LAPACK ``potrf`` writes the factor into the ``uplo`` triangle and leaves the other one as it was."""
    import jax
    import jax.numpy as jnp
    from jax.lax import linalg

    lower = "uplo = 76" in attrs.get("mhlo.backend_config", "uplo = 76")
    (a,), (da,) = primals[:1], tangents[:1]

    def factor(x):
        L = linalg.cholesky(_sym_from(x, lower), symmetrize_input=False)
        return L if lower else jnp.swapaxes(L, -1, -2).conj()

    dL = jax.jvp(factor, (a,), (da,))[1]
    keep = jnp.tril(da, -1) if not lower else jnp.triu(da, 1)  # the untouched triangle
    tri = jnp.tril(dL) if lower else jnp.triu(dL)
    return [tri + keep, None][:len(out)]


def _trsm_jvp(primals, tangents, attrs, out):
    import jax
    from jax.lax import linalg

    cfg = attrs.get("mhlo.backend_config", "")

    def letter(key, default):
        m = re.search(key + r" = (\d+)", cfg)
        return chr(int(m.group(1))) if m else default

    side, uplo, trans, diag = letter("side", "L"), letter("uplo", "L"), letter("trans_x", "N"), letter("diag", "N")

    def solve(a, b):
        return linalg.triangular_solve(a, b, left_side=side == "L", lower=uplo == "L", transpose_a=trans != "N",
                                       conjugate_a=trans == "C", unit_diagonal=diag == "U")

    return [jax.jvp(solve, tuple(primals[:2]), tuple(tangents[:2]))[1]]


def _syevd_jvp(primals, tangents, attrs, out):
    import jax
    from jax.lax import linalg

    lower = "uplo = 76" in attrs.get("mhlo.backend_config", "uplo = 76")
    v, w = jax.jvp(lambda a: linalg.eigh(_sym_from(a, lower), lower=True, symmetrize_input=False),
                   primals[:1], tangents[:1])[1]
    return [v, w] + [None] * (len(out) - 2)


REPLAY_JVPS.update({"getrf": _getrf_jvp, "potrf": _potrf_jvp, "trsm": _trsm_jvp, "syevd": _syevd_jvp})

_ROUTINE = re.compile(r"^(?:lapack_[sdcz]|cusolver_|hipsolver_)([a-z0-9]+?)(?:_ffi)?$")
_JVP_OF_ROUTINE = {"getrf": "getrf", "potrf": "potrf", "trsm": "trsm", "syevd": "syevd", "heevd": "syevd"}
_IDENTITY_TARGETS = {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement"}


def custom_call_jvp_key(target: str) -> str | None:
    m = _ROUTINE.match(target)
    return _JVP_OF_ROUTINE.get(m.group(1)) if m else None


@import_rule("stablehlo.custom_call")
def _custom_call(ctx, op, args):
    """§custom_call: the targets the analysis knows (``rules.custom_call.CUSTOM_CALL_TARGETS``), re-emitted;
    identity markers pass their operands through; unknown targets and Python callbacks are refused."""
    from jaxlib.mlir import ir

    from ..rules.custom_call import CUSTOM_CALL_TARGETS

    target = ir.StringAttr(op.attributes["call_target_name"]).value
    if target in _IDENTITY_TARGETS:
        rtypes = ctx.result_types(op)
        if len(rtypes) > len(args) or any(tuple(t.shape) != tuple(np.shape(a)) for t, a in zip(rtypes, args)):
            raise ctx.error(op, f"custom_call target '{target}' changes shapes (a sharded program); import the "
                                "single-device program instead")
        return list(args)[:len(op.results)]
    if target == "shape_assertion":
        return []
    if "callback" in target:
        raise ctx.error(op, f"custom_call target '{target}' is a Python callback of the process that wrote the "
                            "module; it cannot be replayed")
    if target not in CUSTOM_CALL_TARGETS:
        raise ctx.error(op, f"unknown custom_call target '{target}'")
    return replay(ctx, op, args, jvp=custom_call_jvp_key(target))

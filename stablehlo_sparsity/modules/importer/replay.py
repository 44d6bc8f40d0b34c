"""Ops with no ``jax.lax`` twin, re-emitted verbatim: one JAX primitive, ``shs_replay``, whose lowering
creates the original op (name, attributes, result types) again, so the module's own semantics carry over
bit for bit (LAPACK ``custom_call``s with their backend config, ``rng_bit_generator``'s algorithm,
``chlo.mulhi`` …).

Derivatives: an op whose results are all integers or booleans has a zero derivative.  A floating-point op
needs a JVP from :data:`REPLAY_JVPS` (keyed by what the importer registered, e.g. a LAPACK routine, which
differentiates the ``jax.lax.linalg`` function computing the same factorization); without one,
differentiating it raises :class:`~stablehlo_sparsity.modules.importer.core.ImportError_` naming the op and its
location and, for a ``custom_call``, its target.  Batching (``jax.vmap``) maps the op over the batch with
``lax.map``.  A replayed ``lapack_*`` call first registers jaxlib's LAPACK kernels
(:func:`~.platforms.ensure_lapack_kernels`): JAX does it only when it lowers its own linear algebra, and XLA
running the call against the empty kernel table crashes the process.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ...dtypes import is_float
from .platforms import ensure_lapack_kernels

__all__ = ["replay", "REPLAY_JVPS", "replay_p", "JvpRule"]

#: What a replayed op's derivative is: ``fn(primals, tangents, attrs, out) -> tangents_out`` (``attrs``: the op's
#: attributes as printed text by name; ``out``: the primal outputs, computed by the replayed op itself).
JvpRule = Callable[[Sequence[Any], Sequence[Any], dict[str, str], Sequence[Any]], Sequence[Any]]

#: jvp key -> :data:`JvpRule`.
REPLAY_JVPS: dict[str, JvpRule] = {}

_PRIM = None


def _prim():
    global _PRIM
    if _PRIM is not None:
        return _PRIM
    from jax._src.interpreters import mlir
    from jax.extend.core import Primitive
    from jax.interpreters import ad, batching

    p = Primitive("shs_replay")
    p.multiple_results = True

    def impl(*args, **params):
        from jax._src import dispatch

        return dispatch.apply_primitive(p, *args, **params)

    p.def_impl(impl)
    p.def_abstract_eval(lambda *args, out_avals, **_: list(out_avals))

    def lowering(ctx, *operands, op_name, attrs, out_avals, jvp, location):
        from jaxlib.mlir import ir

        if op_name == "stablehlo.custom_call" and attrs_target(attrs).startswith("lapack_"):
            ensure_lapack_kernels()  # JAX fills the kernel table only when it lowers its own linalg
        types = [mlir.aval_to_ir_type(ctx.module_context, a) for a in ctx.avals_out]
        attributes = {k: ir.Attribute.parse(v) for k, v in attrs}
        op = ir.Operation.create(op_name, results=types, operands=list(operands), attributes=attributes)
        return list(op.results)

    mlir.register_lowering(p, lowering)

    def jvp_rule(primals, tangents, *, op_name, attrs, out_avals, jvp, location):
        out = p.bind(*primals, op_name=op_name, attrs=attrs, out_avals=out_avals, jvp=jvp, location=location)
        if not any(is_float(a.dtype) for a in out_avals):
            tans = [ad.Zero(a.to_tangent_aval()) for a in out_avals]
            return out, tans
        if jvp is None or jvp not in REPLAY_JVPS:
            from .core import ImportError_

            target = attrs_target(attrs)
            what = f"custom_call target '{target}'" if target else "this op"
            raise ImportError_(op_name, location, f"the importer replays {what} verbatim and has no derivative "
                                                  "rule for it")
        tangents = [ad.instantiate_zeros(t) for t in tangents]
        tans = REPLAY_JVPS[jvp](tuple(primals), tuple(tangents), dict(attrs), out)
        tans = [ad.Zero(a.to_tangent_aval()) if t is None else t for a, t in zip(out_avals, tans)]
        return out, tans

    ad.primitive_jvps[p] = jvp_rule

    def batch_rule(args, dims, **params):
        from jax import lax

        size = next(a.shape[d] for a, d in zip(args, dims) if d is not batching.not_mapped)
        moved = []
        for a, d in zip(args, dims):
            if d is batching.not_mapped:
                moved.append(lax.broadcast(a, (size,)))
            else:
                moved.append(batching.moveaxis(a, d, 0))
        outs = lax.map(lambda xs: p.bind(*xs, **params), tuple(moved))
        return list(outs), [0] * len(outs)

    batching.primitive_batchers[p] = batch_rule
    _PRIM = p
    return p


def attrs_target(attrs) -> str:
    """The ``call_target_name`` among a replayed op's ``(name, attribute text)`` pairs ("" if none)."""
    for name, text in attrs:
        if name == "call_target_name":
            return text.strip('"')
    return ""


def replay_p():
    return _prim()


def replay(ctx, op, args, jvp: str | None = None, drop_attrs=()) -> list:
    """Re-emit ``op`` (no regions) on ``args`` with its attributes and result types."""
    from jax.core import ShapedArray

    if len(op.regions):
        raise ctx.error(op, "an op with regions cannot be re-emitted")
    attrs = []
    for i in range(len(op.attributes)):
        na = op.attributes[i]
        if na.name in drop_attrs:
            continue
        attrs.append((na.name, str(na.attr)))
    out_avals = tuple(ShapedArray(t.shape, t.dtype) for t in ctx.result_types(op))
    args = [np.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    return list(_prim().bind(*args, op_name=op.operation.name, attrs=tuple(attrs), out_avals=out_avals, jvp=jvp,
                             location=ctx.location(op)))

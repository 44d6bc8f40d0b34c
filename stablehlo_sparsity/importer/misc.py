"""The long tail: §batch_norm_* (the spec's decompositions), §rng / §rng_bit_generator (re-emitted), CHLO,
Shardy markers, and collectives of a single-device program (the identity, as in the analysis)."""

from __future__ import annotations

import numpy as np

from ..attrs import dense_array, i64_list, int_attr
from .core import import_rule
from .elementwise import BINARY, compare
from .replay import REPLAY_JVPS, replay


def _lax():
    from jax import lax

    return lax


# ---------------------------------------------------------------------- batch norm
def _feature_view(op, x, v):
    """A per-feature vector ``v`` broadcast along ``feature_index`` to ``x``'s shape."""
    return _lax().broadcast_in_dim(v, np.shape(x), (int_attr(op, "feature_index"),))


def _reduce_dims(op, x):
    fi = int_attr(op, "feature_index")
    return tuple(d for d in range(np.ndim(x)) if d != fi)


def _epsilon(op, dtype):
    from jaxlib.mlir import ir

    return np.asarray(ir.FloatAttr(op.attributes["epsilon"]).value, dtype)


@import_rule("stablehlo.batch_norm_inference")
def _batch_norm_inference(ctx, op, args):
    """§batch_norm_inference: ``scale·(x − mean)/sqrt(variance + ε) + offset`` per feature."""
    lax = _lax()
    x, scale, offset, mean, var = args
    f = lambda v: _feature_view(op, x, v)  # noqa: E731
    eps = _epsilon(op, x.dtype)
    return [f(scale) * (x - f(mean)) / lax.sqrt(f(var) + eps) + f(offset)]


@import_rule("stablehlo.batch_norm_training")
def _batch_norm_training(ctx, op, args):
    """§batch_norm_training: batch mean and (biased) variance per feature, then the normalization."""
    lax = _lax()
    import jax.numpy as jnp

    x, scale, offset = args
    dims = _reduce_dims(op, x)
    mean = jnp.mean(x, axis=dims)
    centered = x - _feature_view(op, x, mean)
    var = jnp.mean(centered * centered, axis=dims)
    eps = _epsilon(op, x.dtype)
    y = (_feature_view(op, x, scale) * centered / lax.sqrt(_feature_view(op, x, var) + eps)
         + _feature_view(op, x, offset))
    return [y, mean, var]


@import_rule("stablehlo.batch_norm_grad")
def _batch_norm_grad(ctx, op, args):
    """§batch_norm_grad: the spec's decomposition (gradients of operand, scale and offset)."""
    lax = _lax()
    import jax.numpy as jnp

    x, scale, mean, var, gy = args
    dims = _reduce_dims(op, x)
    n = np.asarray(max(int(np.prod([np.shape(x)[d] for d in dims], dtype=np.int64)), 1), x.dtype)
    eps = _epsilon(op, x.dtype)
    stddev = lax.sqrt(var + eps)
    normalized = (x - _feature_view(op, x, mean)) / _feature_view(op, x, stddev)
    grad_offset = jnp.sum(gy, axis=dims)
    grad_scale = jnp.sum(gy * normalized, axis=dims)
    grad_x = (_feature_view(op, x, scale / stddev)
              * (gy * n - _feature_view(op, x, grad_offset) - normalized * _feature_view(op, x, grad_scale)) / n)
    return [grad_x, grad_scale, grad_offset]


# ---------------------------------------------------------------------- random numbers
def _rng_jvp(primals, tangents, attrs, out):
    """§rng: ``UNIFORM`` is ``a + (b − a)·u``, ``NORMAL`` ``a + b·z`` for hidden ``u``, ``z``."""
    a, b = primals[0], primals[1]
    da, db = tangents[0], tangents[1]
    (y,) = out
    if "UNIFORM" in attrs.get("rng_distribution", ""):
        u = (y - a) / (b - a)
        return [da + (db - da) * u]
    return [da + db * (y - a) / b]


REPLAY_JVPS["rng"] = _rng_jvp


@import_rule("stablehlo.rng")
def _rng(ctx, op, args):
    """§rng (implementation-defined numbers): re-emitted; the derivative in ``a`` and ``b`` as for an affine map
    of hidden standard numbers."""
    return replay(ctx, op, args, jvp="rng")


@import_rule("stablehlo.rng_bit_generator", "stablehlo.replica_id", "stablehlo.partition_id", "chlo.mulhi")
def _reemit(ctx, op, args):
    """Integer-valued ops re-emitted verbatim (§rng_bit_generator's algorithm, §replica_id, §partition_id,
    ``chlo.mulhi``): the same bits, a zero derivative."""
    return replay(ctx, op, args)


@import_rule("chlo._asin_acos_kernel")
def _asin_acos_kernel(ctx, op, args):
    """JAX's internal complex ``asin``/``acos`` kernel: re-emitted (no derivative rule here)."""
    return replay(ctx, op, args)


# ---------------------------------------------------------------------- sharding markers and collectives
@import_rule("sdy.sharding_constraint", "sdy.reshard", "sdy.propagation_barrier")
def _sdy_identity(ctx, op, args):
    """Shardy markers: the identity on a single device."""
    return list(args)


@import_rule("sdy.sharding_group")
def _sdy_group(ctx, op, args):
    """``sdy.sharding_group`` has no results."""
    return []


@import_rule("stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter", "stablehlo.all_to_all",
             "stablehlo.collective_broadcast", "stablehlo.cross-replica-sum")
def _collective(ctx, op, args):
    """Collectives over process groups of one member (§all_reduce, §all_gather, …): each result is its
    operand.  Real communication is refused, as by the analysis."""
    from ..attrs import replica_group_sizes

    sizes = replica_group_sizes(op)
    if sizes and max(sizes) > 1:
        raise ctx.error(op, "cross-device communication; import the single-device program")
    rtypes = ctx.result_types(op)
    if len(rtypes) != len(args) or any(t.shape != tuple(np.shape(a)) for t, a in zip(rtypes, args)):
        raise ctx.error(op, "changes shapes across devices")
    return list(args)


@import_rule("stablehlo.collective_permute")
def _collective_permute(ctx, op, args):
    """§collective_permute: with pairs ``[[0, 0]]`` the identity; a process no pair targets gets zeros."""
    pairs = dense_array(op.attributes["source_target_pairs"])
    pairs = np.asarray(pairs).reshape(-1, 2) if pairs is not None else np.zeros((0, 2))
    (t,) = ctx.result_types(op)
    if len(pairs) == 0:
        return [np.zeros(t.shape, t.dtype)]
    if not np.all(pairs == 0):
        raise ctx.error(op, "cross-device communication; import the single-device program")
    return [args[0]]


# ---------------------------------------------------------------------- CHLO
CHLO_UNARY = {
    "acos": "acos", "acosh": "acosh", "asin": "asin", "asinh": "asinh", "atan": "atan", "atanh": "atanh",
    "cosh": "cosh", "sinh": "sinh", "tan": "tan", "erf": "erf", "erfc": "erfc", "erf_inv": "erf_inv",
    "lgamma": "lgamma", "digamma": "digamma", "bessel_i1e": "bessel_i1e", "conj": "conj", "square": "square",
}


def _chlo_unary(name: str):
    def rule(ctx, op, args):
        """``chlo.<op>``: the ``jax.lax`` function of the same name (JAX lowers it to that CHLO op)."""
        return [getattr(_lax(), name)(args[0])]

    return rule


for _op, _fn in CHLO_UNARY.items():
    import_rule("chlo." + _op)(_chlo_unary(_fn))


@import_rule("chlo.is_inf", "chlo.is_pos_inf", "chlo.is_neg_inf")
def _is_inf(ctx, op, args):
    """``chlo.is_inf`` / ``is_pos_inf`` / ``is_neg_inf``: comparisons with ±∞."""
    lax = _lax()
    (x,) = args
    inf = np.asarray(np.inf, x.dtype)
    name = op.operation.name
    if name == "chlo.is_inf":
        return [lax.eq(lax.abs(x), inf)]
    return [lax.eq(x, inf if name == "chlo.is_pos_inf" else -inf)]


CHLO_BINARY = {"next_after": "nextafter", "polygamma": "polygamma", "zeta": "zeta"}


def _chlo_binary(name: str):
    def rule(ctx, op, args):
        """``chlo.<op>``: the ``jax.lax`` function of :data:`CHLO_BINARY`."""
        return [getattr(_lax(), name)(args[0], args[1])]

    return rule


for _op, _fn in CHLO_BINARY.items():
    import_rule("chlo." + _op)(_chlo_binary(_fn))


def _chlo_broadcast(op, args, out_shape):
    """Operands of ``chlo.broadcast_<op>`` broadcast to the result shape (``broadcast_dimensions`` if given, else
    NumPy's rules)."""
    lax = _lax()
    out = []
    for a in args:
        shape = np.shape(a)
        if tuple(shape) == tuple(out_shape):
            out.append(a)
            continue
        if "broadcast_dimensions" in op.attributes and len(shape) < len(out_shape):
            dims = tuple(i64_list(op, "broadcast_dimensions"))
        else:
            dims = tuple(range(len(out_shape) - len(shape), len(out_shape)))
        out.append(lax.broadcast_in_dim(a, tuple(out_shape), dims))
    return out


def _chlo_broadcast_rule(name: str):
    def rule(ctx, op, args):
        """``chlo.broadcast_<op>``: broadcast the operands, then the StableHLO op (or its CHLO twin)."""
        (t,) = ctx.result_types(op)
        xs = _chlo_broadcast(op, args, t.shape)
        if name == "compare":
            ctype = str(op.attributes["compare_type"]).rstrip(">").split()[-1] if "compare_type" in op.attributes \
                else None
            direction = str(op.attributes["comparison_direction"]).rstrip(">").split()[-1]
            return [compare(xs[0], xs[1], direction, ctype)]
        if name == "select":
            return [_lax().select(*xs)]
        if name in CHLO_BINARY:
            return [getattr(_lax(), CHLO_BINARY[name])(*xs)]
        lax_name, bool_name = BINARY[name]
        if bool_name and np.dtype(xs[0].dtype) == np.bool_:
            lax_name = bool_name
        return [getattr(_lax(), lax_name)(*xs)]

    return rule


for _op in ("add", "atan2", "complex", "divide", "maximum", "minimum", "multiply", "next_after", "polygamma",
            "power", "remainder", "subtract", "zeta", "select", "and", "or", "xor", "compare", "shift_left",
            "shift_right_arithmetic", "shift_right_logical"):
    import_rule("chlo.broadcast_" + _op)(_chlo_broadcast_rule(_op))


@import_rule("chlo.constant_like")
def _constant_like(ctx, op, args):
    """``chlo.constant_like``: a splat of ``value`` with the operand's shape."""
    from ..attrs import scalar_attr

    (t,) = ctx.result_types(op)
    return [np.broadcast_to(np.asarray(scalar_attr(op.attributes["value"]), t.dtype), t.shape)]


@import_rule("chlo.constant")
def _chlo_constant(ctx, op, args):
    """``chlo.constant``: the literal."""
    from .structural import constant_value

    (t,) = ctx.result_types(op)
    return [constant_value(ctx, op, "value", t)]

"""Batch normalization: §batch_norm_inference, §batch_norm_training, §batch_norm_grad, replayed as the spec's
decompositions into elementwise ops and reductions (so JAX differentiates them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.attrs import float_attr, int_attr
from .core import ImportContext, Op, Values, import_rule, jax_lax


# ---------------------------------------------------------------------- batch norm
def _feature_view(op: Op, x: Any, v: Any) -> Any:
    """A per-feature vector ``v`` broadcast along ``feature_index`` to ``x``'s shape."""
    return jax_lax().broadcast_in_dim(v, np.shape(x), (int_attr(op, "feature_index"),))


def _reduce_dims(op: Op, x: Any) -> tuple[int, ...]:
    fi = int_attr(op, "feature_index")
    return tuple(d for d in range(np.ndim(x)) if d != fi)


def _epsilon(op: Op, dtype: Any) -> np.ndarray:
    return np.asarray(float_attr(op, "epsilon"), dtype)


@import_rule("stablehlo.batch_norm_inference")
def _batch_norm_inference(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§batch_norm_inference: ``scale·(x − mean)/sqrt(variance + ε) + offset`` per feature."""
    lax = jax_lax()
    x, scale, offset, mean, var = args
    f = lambda v: _feature_view(op, x, v)  # noqa: E731
    eps = _epsilon(op, x.dtype)
    return [f(scale) * (x - f(mean)) / lax.sqrt(f(var) + eps) + f(offset)]


@import_rule("stablehlo.batch_norm_training")
def _batch_norm_training(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§batch_norm_training: batch mean and (biased) variance per feature, then the normalization."""
    lax = jax_lax()
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
def _batch_norm_grad(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§batch_norm_grad: the spec's decomposition (gradients of operand, scale and offset)."""
    lax = jax_lax()
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

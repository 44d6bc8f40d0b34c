"""What a prepared derivative does with its user's function and arguments: the example structures, the
checks that the differentiated arguments are real floating point (at preparation and at every call), the
binding of the selected arguments, integer outputs cast to float, and auxiliary data that is not an array
(passed through untouched, never traced)."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ...analysis.auxiliary import AuxSplit  # noqa: F401  (prepared objects and their pickles hold one)
from ...errors import InputError, SparsityWarning, warn

__all__ = ["struct", "check_differentiable", "check_call_arguments", "Float64Warning", "warn_float64",
           "float_outputs", "bind_selected", "flat", "AuxSplit"]


def struct(a):
    """The ``jax.ShapeDtypeStruct`` of an argument leaf."""
    import jax
    import jax.numpy as jnp

    return jax.ShapeDtypeStruct(np.shape(a), jnp.result_type(a))


def check_differentiable(selected_leaves, what: str = "sparse_jacobian") -> None:
    """Differentiated arguments must be real floating point (JAX would need ``float0`` tangents otherwise)."""
    import jax.numpy as jnp

    for leaf in selected_leaves:
        dt = jnp.result_type(leaf)
        if not jnp.issubdtype(dt, jnp.floating):
            raise InputError(f"{what}: differentiated arguments must be real floating point, got {dt} "
                             f"(pass integer arguments through argnums you do not select)")


def _kind(dtype) -> str:
    """``"float"``, ``"complex"``, ``"int"`` or ``"bool"``: what may be passed where the prepared dtype was."""
    import jax.numpy as jnp

    if jnp.issubdtype(dtype, jnp.floating):
        return "float"
    if jnp.issubdtype(dtype, jnp.complexfloating):
        return "complex"
    if jnp.issubdtype(dtype, jnp.bool_):
        return "bool"
    return "int"


def check_call_arguments(leaves, examples, what: str) -> list:
    """A call's argument leaves against the prepared ones: same shapes, and values of the same kind (a float
    argument stays float — an ``int32`` array where ``float32`` was prepared would reach JAX's JVP as a
    ``float0`` tangent error).  Returns the leaves, another float width converted to the prepared dtype with a
    :class:`~stablehlo_sparsity.errors.SparsityWarning` (the rule: a prepared derivative computes in the dtype it
    was prepared for, and says so when it converts)."""
    import jax.numpy as jnp

    out = list(leaves)
    for i, (got, want) in enumerate(zip(leaves, examples)):
        try:
            dt = jnp.result_type(got)
        except TypeError:
            raise InputError(f"argument leaf {i} is a {type(got).__name__}, not an array: the {what} was prepared "
                             f"for {want.dtype}{list(want.shape)}") from None
        if np.shape(got) != tuple(want.shape):
            raise InputError(f"argument shape {np.shape(got)} differs from the prepared shape {tuple(want.shape)}; "
                             f"prepare a new sparse {what} for new shapes")
        if _kind(dt) != _kind(want.dtype):
            raise InputError(f"argument leaf {i} has dtype {dt}, the {what} was prepared for {want.dtype}: "
                             f"convert it (x.astype({str(want.dtype)!r}))")
        if dt != want.dtype:
            if _kind(dt) == "float":
                warn(f"argument leaf {i} has dtype {dt}, the {what} was prepared for {want.dtype}: it is converted to "
                     f"{want.dtype} (prepare a new sparse {what} to compute in {dt})")
            out[i] = jnp.asarray(got, want.dtype)
    return out


class Float64Warning(SparsityWarning):
    """float64 input while ``jax_enable_x64`` is off: JAX computes in float32 (warned once per process)."""


_WARNED_FLOAT64: list = []


def warn_float64(leaves) -> None:
    """Warn once when a float64 NumPy (or SciPy) input meets ``jax_enable_x64=False``: JAX silently casts it to
    float32, and so the derivative would be float32 (issue 11)."""
    if _WARNED_FLOAT64:
        return
    import jax

    if cast(Any, jax.config).jax_enable_x64:
        return
    if any(getattr(leaf, "dtype", None) == np.float64 for leaf in leaves if not isinstance(leaf, jax.Array)):
        _WARNED_FLOAT64.append(True)
        warn("float64 input, but jax_enable_x64 is off: JAX computes in float32, so derivatives are float32. Enable "
             "float64 with jax.config.update('jax_enable_x64', True) before creating arrays, or pass float32 arrays to "
             "silence this warning (shown once)", Float64Warning)


def float_outputs(out, like_dtype):
    """Cast integer/bool output leaves to a float dtype (their derivative is zero); refuse complex ones."""
    import jax
    import jax.numpy as jnp

    leaves = jax.tree_util.tree_leaves(out)
    floats = [jnp.result_type(o) for o in leaves if jnp.issubdtype(jnp.result_type(o), jnp.inexact)]
    if any(jnp.issubdtype(d, jnp.complexfloating) for d in floats):
        raise InputError("complex outputs are not supported; split them into real and imaginary parts")
    target = jnp.result_type(*floats) if floats else like_dtype

    def cast(o):
        o = jnp.asarray(o)
        return o if jnp.issubdtype(o.dtype, jnp.inexact) else o.astype(target)

    return jax.tree_util.tree_map(cast, out)


def bind_selected(fn, args, argnums):
    """``h(*selected) = fn(*args with args[argnums] replaced)``."""

    def h(*sel):
        a = list(args)
        for i, v in zip(argnums, sel):
            a[i] = v
        return fn(*a)

    return h


def flat(tree):
    """The leaves of ``tree`` flattened and laid out one after another (one product as a vector)."""
    import jax
    import jax.numpy as jnp

    parts = [jnp.ravel(leaf) for leaf in jax.tree_util.tree_leaves(tree)]
    return jnp.concatenate(parts) if len(parts) > 1 else parts[0] if parts else jnp.zeros((0,))



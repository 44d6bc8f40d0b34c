"""The long tail: batch normalization, random numbers, composites, CHLO ops, dynamic-shape ops, sharding
markers, and collectives of a single-device program.

* §batch_norm_inference: elementwise per feature — exact.  §batch_norm_training / §batch_norm_grad: the
  spec's decompositions written as unions over each feature's batch/spatial elements plus that feature's
  scale / offset / mean / variance — exact at generic points.
* §rng: ``UNIFORM`` draws from ``[a, b)`` and ``NORMAL`` has mean ``a`` and deviation ``b``: the numbers are
  ``a + (b − a)·u`` / ``a + b·z`` for hidden ``u``, ``z``, so every element depends on the (scalar) ``a`` and
  ``b`` — not on nothing.  §rng_bit_generator: bits of an integer state, no dependence.
* §composite: the op means its ``decomposition`` function, analyzed through the call machinery.
* §map: elementwise; the union over the operands its computation reaches (read off the body once).
* CHLO (``chlo.*``, JAX's ``lax.erf_inv``, ``lgamma``, ``digamma``, ``bessel_i1e``, ``polygamma``, ``zeta``,
  ``top_k`` …): elementwise ops take the *union* move (NumPy folding, none for special functions), the
  ``broadcast_*`` family maps its operands through NumPy-style (or ``broadcast_dimensions``) broadcasting
  first.  (``chlo.top_k`` lives with §sort in :mod:`.sorting`.)
* Dynamic-shape ops (§dynamic_broadcast_in_dim, §dynamic_reshape, §dynamic_iota, §dynamic_pad,
  §real_dynamic_slice, §get_dimension_size …): with static result types and known shape operands they are
  their static twins; otherwise :class:`~stablehlo_sparsity.errors.DynamicShapeError` (a dynamic result type
  is already refused when its type is read).
* Sharding (``sdy.sharding_constraint``, ``sdy.reshard``, ``sdy.propagation_barrier``): identity.
* Collectives (§all_reduce, §all_gather, §reduce_scatter, §all_to_all, §collective_permute,
  §collective_broadcast): identity when every process group has a single member (a single-device
  program, e.g. ``shard_map`` on a 1-device mesh); real cross-device communication is refused.

Tuples (§tuple, §get_tuple_element), tokens (§after_all, §create_token, §infeed, §outfeed, §send, §recv)
and quantized types (§uniform_quantize, §uniform_dequantize) are not analyzed: reading their types raises
:class:`~stablehlo_sparsity.errors.UnsupportedTypeError` naming the type and location.
"""

from __future__ import annotations

import numpy as np

from ..irtools import num_elements
from ..attrs import dense_array, i64_list, int_attr, positions
from ..errors import DynamicShapeError, UnsupportedOpError
from ..lattice import Deps
from ..values import AbstractValue
from ..folding.exactness import error_array, finalize, literal_uncertainty, unknown_float
from .structural import moved_uncertainty
from .registry import DEPS_RULES, FOLD_RULES, deps_rule, error_rule, fold_rule

S = "stablehlo."
C = "chlo."


def _register_if_free(name: str, rule=None, fold=None) -> None:
    """A fallback registration for an op no family module has claimed (the family module wins)."""
    if rule is not None and name not in DEPS_RULES:
        deps_rule(name)(rule)
    if fold is not None and name not in FOLD_RULES:
        fold_rule(name)(fold)


def _feature_of(shape, feature_index: int) -> np.ndarray:
    """The feature (coordinate along ``feature_index``) of every element, in row-major order."""
    stride = num_elements(shape[feature_index + 1:])
    return (np.arange(num_elements(shape), dtype=np.int64) // max(stride, 1)) % max(int(shape[feature_index]), 1)


def _feature_groups(x, feature_index: int) -> Deps:
    """One row per feature: the union of the operand's elements of that feature."""
    import scipy.sparse as sp

    F = int(x.shape[feature_index])
    if x.deps.is_empty or x.size == 0:
        return Deps.empty(F, x.deps.n)
    f = _feature_of(x.shape, feature_index)
    order = np.argsort(f, kind="stable")
    per = x.size // F
    groups = sp.csr_array((np.ones(x.size, bool), order, np.arange(F + 1, dtype=np.int64) * per), shape=(F, x.size))
    return x.deps.group_union(groups)


def _per_feature(ctx, *vals) -> Deps:
    """The union of per-feature operands (scale, offset, mean, variance: ``F`` elements each)."""
    return Deps.union(*[v.deps for v in vals])


# ====================================================================== batch norm
@deps_rule(S + "batch_norm_inference")
def _batch_norm_inference(ctx, op, args):
    """§batch_norm_inference: ``scale·(x − mean)/sqrt(variance + ε) + offset`` per element — exact."""
    x, scale, offset, mean, variance = args
    fi = int_attr(op, "feature_index")
    f = _feature_of(x.shape, fi)
    params = _per_feature(ctx, scale, offset, mean, variance)
    return [Deps.union(x.deps, params.gather_rows(f))]


@deps_rule(S + "batch_norm_training")
def _batch_norm_training(ctx, op, args):
    """§batch_norm_training: mean and variance of a feature depend on all of its elements; the normalized
    output on those, plus that feature's scale and offset."""
    x, scale, offset = args
    fi = int_attr(op, "feature_index")
    f = _feature_of(x.shape, fi)
    G = _feature_groups(x, fi)
    out = Deps.union(G, scale.deps, offset.deps).gather_rows(f)
    return [out, G, G]


@deps_rule(S + "batch_norm_grad")
def _batch_norm_grad(ctx, op, args):
    """§batch_norm_grad (its spec decomposition): ``grad_operand`` depends on the feature's operand and
    ``grad_output`` elements and its scale, mean, variance; ``grad_scale`` on all but scale;
    ``grad_offset`` on the feature's ``grad_output`` only."""
    x, scale, mean, variance, gy = args
    fi = int_attr(op, "feature_index")
    f = _feature_of(x.shape, fi)
    Gx, Gy = _feature_groups(x, fi), _feature_groups(gy, fi)
    grad_scale = Deps.union(Gx, Gy, mean.deps, variance.deps)
    grad_operand = Deps.union(grad_scale, scale.deps).gather_rows(f)
    return [grad_operand, grad_scale, Gy]


# ====================================================================== random numbers
@deps_rule(S + "rng")
def _rng(ctx, op, args):
    """§rng: ``a + (b − a)·u`` (UNIFORM) or ``a + b·z`` (NORMAL): every element depends on ``a`` and ``b``."""
    a, b = args[0], args[1]
    (t,) = ctx.result_types(op)
    parts = [v.deps.reduce_all().broadcast_row(t.size) for v in (a, b) if not v.deps.is_empty]
    return [Deps.union(*parts) if parts else ctx.empty(t.size)]


@deps_rule(S + "rng_bit_generator")
def _rng_bit_generator(ctx, op, args):
    """§rng_bit_generator: a new state and random bits from an integer state — no dependence."""
    return [ctx.empty(t.size) for t in ctx.result_types(op)]


# ====================================================================== composite
@deps_rule(S + "composite")
def _composite(ctx, op, args):
    """§composite: the op *is* its ``decomposition`` function."""
    from jaxlib.mlir import ir

    callee = ir.FlatSymbolRefAttr(op.attributes["decomposition"]).value
    return ctx.call(callee, args)


# ====================================================================== map
def _map(ctx, op, args):
    """§map: ``result[e] = computation(inputs…[e])`` — the union over the operands the computation reaches
    (found by running it once on symbolic scalars: operand ``i`` is column ``i`` of a ``k + 1``-column
    lattice, the last column standing for values captured from the enclosing region)."""
    from ..values import tensor_type
    from ..irtools import region_captures
    from .reduction import symbolic_captures, union_all_rows

    (t,) = ctx.result_types(op)
    region = op.regions[0]
    k = len(args)
    width = k + 1
    outer_env, captured = symbolic_captures(ctx, region_captures(region), width)
    block = list(region.blocks)[0]
    sym = []
    for i, ba in enumerate(block.arguments):
        bt = tensor_type(ba.type)
        sym.append(AbstractValue(bt, Deps.identity(1, width, i).broadcast_row(bt.size)))
    (res,) = ctx.interpret_symbolically(region, sym, outer_env, width)
    reach = set(union_all_rows(res.deps).to_csr().indices.tolist()) if not res.deps.is_empty else set()
    parts = [args[i].deps for i in range(k) if i in reach and not args[i].deps.is_empty]
    if k in reach:
        parts += [c.deps.reduce_all().broadcast_row(t.size) for c in captured if not c.deps.is_empty]
    return [Deps.union(*parts) if parts else ctx.empty(t.size)]


# ====================================================================== CHLO
def _union_rule(ctx, op, args):
    (t,) = ctx.result_types(op)
    rows = [a.deps if a.size == t.size else a.deps.broadcast_row(t.size) for a in args if not a.deps.is_empty]
    return [Deps.union(*rows) if rows else ctx.empty(t.size)]


def _drop_rule(ctx, op, args):
    return [ctx.empty(t.size) for t in ctx.result_types(op)]


def _np(fn):
    def f(*xs):
        with np.errstate(all="ignore"):
            return fn(*xs)

    return f


#: chlo elementwise op -> (derivative kind, NumPy folder or None)
CHLO_ELEMENTWISE = {
    "acos": ("all", _np(np.arccos)), "acosh": ("all", _np(np.arccosh)), "asin": ("all", _np(np.arcsin)),
    "asinh": ("all", _np(np.arcsinh)), "atan": ("all", _np(np.arctan)), "atanh": ("all", _np(np.arctanh)),
    "cosh": ("all", _np(np.cosh)), "sinh": ("all", _np(np.sinh)), "tan": ("all", _np(np.tan)),
    "square": ("all", _np(lambda x: x * x)), "conj": ("all", np.conj),
    # Special functions are not folded: XLA's approximations and SciPy's differ in the last bits, and a
    # folded constant must be the value the program computes.
    "erf": ("all", None), "erfc": ("all", None), "erf_inv": ("all", None), "lgamma": ("all", None),
    "digamma": ("all", None), "bessel_i1e": ("all", None), "polygamma": ("all", None), "zeta": ("all", None),
    "next_after": ("all", _np(np.nextafter)),
    "_asin_acos_kernel": ("all", None),
    "is_inf": ("none", np.isinf), "is_neg_inf": ("none", lambda x: np.isneginf(x)),
    "is_pos_inf": ("none", lambda x: np.isposinf(x)),
    "mulhi": ("none", None),
}


def _chlo_folder(fn):
    def fold(ctx, op, consts):
        (t,) = ctx.result_types(op)
        return [np.asarray(fn(*consts)).astype(t.dtype, copy=False)]

    return fold


for _name, (_kind, _fn) in CHLO_ELEMENTWISE.items():
    if C + _name in DEPS_RULES:  # claimed by the elementwise family (with its own folding policy)
        continue
    _register_if_free(C + _name, _union_rule if _kind == "all" else _drop_rule,
                      _chlo_folder(_fn) if _fn is not None else None)


def _chlo_broadcast_map(shape, out_shape, op) -> np.ndarray:
    """Index map of a ``chlo.broadcast_*`` operand: ``broadcast_dimensions`` if given, else NumPy rules."""
    pos = positions(shape)
    if "broadcast_dimensions" in op.attributes:
        dims = i64_list(op, "broadcast_dimensions")
        expanded = [1] * len(out_shape)
        for d, rd in enumerate(dims):
            expanded[rd] = shape[d]
        pos = pos.transpose(np.argsort(dims, kind="stable")) if len(dims) > 1 else pos
        return np.broadcast_to(pos.reshape(expanded), out_shape).ravel()
    return np.broadcast_to(pos, out_shape).ravel()


def _chlo_broadcast_rule(ctx, op, args):
    """``chlo.broadcast_<op>``: broadcast each operand to the result shape, then the union move."""
    (t,) = ctx.result_types(op)
    rows = [a.deps.gather_rows(_chlo_broadcast_map(a.shape, t.shape, op)) for a in args if not a.deps.is_empty]
    return [Deps.union(*rows) if rows else ctx.empty(t.size)]


for _name in ("add", "atan2", "complex", "divide", "maximum", "minimum", "multiply", "next_after", "polygamma",
              "power", "remainder", "subtract", "zeta", "select"):
    _register_if_free(C + "broadcast_" + _name, _chlo_broadcast_rule)
for _name in ("and", "or", "xor", "compare", "shift_left", "shift_right_arithmetic", "shift_right_logical"):
    _register_if_free(C + "broadcast_" + _name, _drop_rule)


def _attr_scalar(attr):
    """A scalar from a ``FloatAttr`` / ``IntegerAttr`` / splat ``DenseElementsAttr``."""
    from jaxlib.mlir import ir

    for cast in (lambda a: ir.FloatAttr(a).value, lambda a: ir.IntegerAttr(a).value):
        try:
            return cast(attr)
        except (ValueError, TypeError):
            pass
    arr = dense_array(attr)
    if arr is not None and arr.size == 1:
        return arr.reshape(()).item()
    return None


def _constant_like(ctx, op, args):
    """``chlo.constant_like``: a splat of ``value`` with the operand's shape — a known constant."""
    (t,) = ctx.result_types(op)
    v = _attr_scalar(op.attributes["value"])
    const = None if v is None else np.full(t.shape, v, dtype=t.dtype)
    return [AbstractValue(t, ctx.empty(t.size), const, None if const is None else literal_uncertainty(const))]


def _chlo_constant(ctx, op, args):
    (t,) = ctx.result_types(op)
    arr = dense_array(op.attributes["value"])
    const = None if arr is None else np.asarray(arr).reshape(t.shape).astype(t.dtype)
    return [AbstractValue(t, ctx.empty(t.size), const, None if const is None else literal_uncertainty(const))]


# ====================================================================== dynamic shapes
def _dynamic_error(ctx, op, what: str):
    raise DynamicShapeError(f"{op.operation.name}: {what}; sparsity patterns need static shapes (try the "
                            "'stablehlo-refine-shapes' and 'stablehlo-canonicalize-dynamism' passes)",
                            ctx.location(op))


def _const_ints(ctx, op, arg, what: str) -> list[int]:
    if arg.const is None:
        _dynamic_error(ctx, op, f"{what} is not a known constant")
    return [int(v) for v in np.asarray(arg.const).ravel()]


@deps_rule(S + "dynamic_broadcast_in_dim")
def _dynamic_broadcast_in_dim(ctx, op, args):
    """§dynamic_broadcast_in_dim with a static result type: §broadcast_in_dim to that shape."""
    from .structural import broadcast_in_dim_np

    (t,) = ctx.result_types(op)
    x = args[0]
    return [x.deps.gather_rows(np.ascontiguousarray(broadcast_in_dim_np(positions(x.shape), op, t.shape)).ravel())]


@fold_rule(S + "dynamic_broadcast_in_dim")
def _dynamic_broadcast_in_dim_fold(ctx, op, consts):
    from .structural import broadcast_in_dim_np

    (t,) = ctx.result_types(op)
    return [np.ascontiguousarray(broadcast_in_dim_np(consts[0], op, t.shape))]


@deps_rule(S + "dynamic_reshape")
def _dynamic_reshape(ctx, op, args):
    """§dynamic_reshape with a static result type: §reshape (row-major order kept)."""
    return [args[0].deps]


@fold_rule(S + "dynamic_reshape")
def _dynamic_reshape_fold(ctx, op, consts):
    (t,) = ctx.result_types(op)
    return [consts[0].reshape(t.shape)]


@deps_rule(S + "dynamic_iota")
def _dynamic_iota(ctx, op, args):
    (t,) = ctx.result_types(op)
    dim = int_attr(op, "iota_dimension")
    shape = [1] * len(t.shape)
    shape[dim] = t.shape[dim]
    const = np.broadcast_to(np.arange(t.shape[dim]).reshape(shape), t.shape).astype(t.dtype)
    return [AbstractValue(t, ctx.empty(t.size), const)]


@deps_rule(S + "dynamic_pad")
def _dynamic_pad(ctx, op, args):
    """§dynamic_pad with known padding amounts: §pad."""
    from .structural import pad_np

    x, fill, lo_a, hi_a, in_a = args
    lo = _const_ints(ctx, op, lo_a, "edge_padding_low")
    hi = _const_ints(ctx, op, hi_a, "edge_padding_high")
    interior = _const_ints(ctx, op, in_a, "interior_padding")
    idx = pad_np(positions(x.shape), -1, lo, hi, interior).ravel()
    parts = [x.deps.gather_rows(idx)]
    if not fill.deps.is_empty:
        parts.append(fill.deps.gather_rows(np.where(idx < 0, 0, -1)))
    return [Deps.union(*parts)]


@deps_rule(S + "real_dynamic_slice")
def _real_dynamic_slice(ctx, op, args):
    """§real_dynamic_slice with known start / limit / strides: §slice."""
    x, start_a, limit_a, strides_a = args
    start = _const_ints(ctx, op, start_a, "start_indices")
    limit = _const_ints(ctx, op, limit_a, "limit_indices")
    strides = _const_ints(ctx, op, strides_a, "strides")
    idx = positions(x.shape)[tuple(slice(s, l, st) for s, l, st in zip(start, limit, strides))]
    return [x.deps.gather_rows(np.ascontiguousarray(idx).ravel())]


@deps_rule(S + "dynamic_gather", S + "dynamic_conv")
def _dynamic_unsupported(ctx, op, args):
    _dynamic_error(ctx, op, "its sizes are runtime operands")


@deps_rule(S + "get_dimension_size")
def _get_dimension_size(ctx, op, args):
    """§get_dimension_size: a known constant (shapes are static here)."""
    (t,) = ctx.result_types(op)
    dim = int_attr(op, "dimension")
    return [AbstractValue(t, ctx.empty(t.size), np.asarray(args[0].shape[dim], dtype=t.dtype).reshape(t.shape))]


@deps_rule(S + "set_dimension_size")
def _set_dimension_size(ctx, op, args):
    """``set_dimension_size`` to a static result type is the identity; a bounded-dynamic result is refused
    when its type is read."""
    (t,) = ctx.result_types(op)
    x = args[0]
    if tuple(t.shape) != tuple(x.shape):
        _dynamic_error(ctx, op, "the result shape differs from the operand's")
    return [x.deps]


# ====================================================================== sharding markers (Shardy)
def _identity(ctx, op, args):
    rtypes = ctx.result_types(op)
    if len(rtypes) != len(args) or any(t.shape != tuple(a.shape) for t, a in zip(rtypes, args)):
        raise UnsupportedOpError(op.operation.name, ctx.location(op), "changes shapes")
    return [a.deps for a in args]


for _name in ("sdy.sharding_constraint", "sdy.reshard", "sdy.propagation_barrier"):
    deps_rule(_name)(_identity)


@deps_rule("sdy.sharding_group")
def _sharding_group(ctx, op, args):
    return []


# ====================================================================== collectives (single-device programs)
def _group_sizes(op) -> list[int]:
    """Sizes of the process groups in ``replica_groups`` (``-1`` entries are padding)."""
    if "replica_groups" not in op.attributes:
        return []
    groups = dense_array(op.attributes["replica_groups"])
    if groups is None:
        return []
    groups = np.asarray(groups).reshape(-1, groups.shape[-1] if groups.ndim else 1)
    return [int((g >= 0).sum()) for g in groups]


def _single_participant(ctx, op) -> bool:
    sizes = _group_sizes(op)
    if sizes:
        return max(sizes) <= 1
    if "source_target_pairs" in op.attributes:
        return True  # collective_permute: checked by its rule
    # no groups: every process of the grid takes part; fine only on a 1 x 1 grid
    attrs = ctx.module.operation.attributes
    try:
        reps = int(str(attrs["mhlo.num_replicas"]).split(":")[0])
        parts = int(str(attrs["mhlo.num_partitions"]).split(":")[0])
    except (KeyError, ValueError):
        return False
    return reps * parts == 1


def _collective_identity(ctx, op, args):
    """A collective over process groups of one member: each result is its operand."""
    if not _single_participant(ctx, op):
        raise UnsupportedOpError(op.operation.name, ctx.location(op),
                                 "cross-device communication; analyze the single-device program")
    rtypes = ctx.result_types(op)
    live = [a for a in args if "token" not in str(a.type)]
    if len(rtypes) != len(live) or any(t.shape != tuple(a.shape) for t, a in zip(rtypes, live)):
        raise UnsupportedOpError(op.operation.name, ctx.location(op), "changes shapes across devices")
    return [a.deps for a in live]


@deps_rule(S + "collective_permute")
def _collective_permute(ctx, op, args):
    """§collective_permute: with pairs ``[[0, 0]]`` the identity; a process no pair targets gets zeros."""
    pairs = dense_array(op.attributes["source_target_pairs"])
    pairs = np.asarray(pairs).reshape(-1, 2) if pairs is not None else None
    (t,) = ctx.result_types(op)
    if pairs is None or len(pairs) == 0:
        return [ctx.empty(t.size)]
    if not np.all(pairs == 0):
        raise UnsupportedOpError(op.operation.name, ctx.location(op),
                                 "cross-device communication; analyze the single-device program")
    return [args[0].deps]


for _name in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_broadcast",
              "cross-replica-sum"):
    _register_if_free(S + _name, _collective_identity)


@deps_rule(S + "replica_id", S + "partition_id")
def _process_id(ctx, op, args):
    return [ctx.empty(t.size) for t in ctx.result_types(op)]


# ====================================================================== late registrations
def _broadcast(ctx, op, args):
    """``stablehlo.broadcast`` (legacy): ``broadcast_sizes`` prepended to the operand's shape."""
    (t,) = ctx.result_types(op)
    x = args[0]
    return [x.deps.gather_rows(np.broadcast_to(positions(x.shape), t.shape).ravel())]


def _broadcast_fold(ctx, op, consts):
    (t,) = ctx.result_types(op)
    return [np.ascontiguousarray(np.broadcast_to(consts[0], t.shape))]


_register_if_free(S + "broadcast", _broadcast, _broadcast_fold)
_register_if_free(S + "map", _map)
_register_if_free(C + "constant_like", _constant_like)
_register_if_free(C + "constant", _chlo_constant)


# ====================================================================== trust (folding/exactness.py)
error_rule(S + "dynamic_broadcast_in_dim", S + "dynamic_reshape", S + "broadcast")(
    lambda ctx, op, args, consts: moved_uncertainty(ctx, op, args, data=(0,)))


def _chlo_trust_rules():
    """Error rules of the folded CHLO elementwise ops (the model is in :mod:`.elementwise_trust`)."""
    from .elementwise_trust import is_finite_rule, product_rule, transcendental_rule

    monotone = {"acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
                "atan": np.arctan, "atanh": np.arctanh, "sinh": np.sinh}
    rules = {name: transcendental_rule(fn, floor=1.0) for name, fn in monotone.items()}
    rules["cosh"] = transcendental_rule(None)
    rules["tan"] = transcendental_rule(None, floor="x")
    rules["square"] = lambda ctx, op, args, consts: product_rule(ctx, op, [args[0], args[0]], consts)
    rules["conj"] = lambda ctx, op, args, consts: [finalize(consts[0], error_array(args[0]))]
    rules["next_after"] = lambda ctx, op, args, consts: [
        finalize(consts[0], 0.0) if all(a.is_exact for a in args) else unknown_float(consts[0])]
    for name in ("is_inf", "is_neg_inf", "is_pos_inf"):
        rules[name] = is_finite_rule
    for name, rule in rules.items():
        if C + name in FOLD_RULES:
            error_rule(C + name)(rule)


_chlo_trust_rules()

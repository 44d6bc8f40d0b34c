"""CHLO (``chlo.*``): the client HLO ops JAX emits for special functions (``lax.erf_inv``, ``lgamma``,
``digamma``, ``bessel_i1e``, ``polygamma``, ``zeta``), hyperbolic and inverse trigonometric functions,
broadcasting binary ops and constants.  (``chlo.top_k`` lives with §sort in :mod:`.sorting`.)

Elementwise ops take the *union* move (NumPy folding, none for special functions: XLA's approximations and
SciPy's differ in the last bits); the ``broadcast_*`` family maps its operands through NumPy-style (or
``broadcast_dimensions``) broadcasting first.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import dense_attr, i64_list, scalar_of
from ...lattice.windows import positions
from ..folding.exactness import error_array, finalize, literal_uncertainty, unknown_float
from ...lattice import Deps
from ..values import AbstractValue
from .registry import EXACT, ZERO, deps_rule, error_rule, fold_rule
from .registry import RuleContext, Op, DepsResult, FoldResult  # the rule contract


def _union_rule(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    (t,) = ctx.result_types(op)
    rows = [a.deps if a.size == t.size else a.deps.broadcast_row(t.size) for a in args if not a.deps.is_empty]
    return [Deps.union(*rows) if rows else ctx.empty(t.size)]


def _drop_rule(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    return [ctx.empty(t.size) for t in ctx.result_types(op)]


def _np(fn):
    def f(*xs):
        with np.errstate(all="ignore"):
            return fn(*xs)

    return f


#: chlo elementwise op -> (derivative kind, NumPy folder or None)
CHLO_ELEMENTWISE = {
    "chlo.acos": ("all", _np(np.arccos)), "chlo.acosh": ("all", _np(np.arccosh)),
    "chlo.asin": ("all", _np(np.arcsin)), "chlo.asinh": ("all", _np(np.arcsinh)),
    "chlo.atan": ("all", _np(np.arctan)), "chlo.atanh": ("all", _np(np.arctanh)),
    "chlo.cosh": ("all", _np(np.cosh)), "chlo.sinh": ("all", _np(np.sinh)), "chlo.tan": ("all", _np(np.tan)),
    "chlo.square": ("all", _np(lambda x: x * x)), "chlo.conj": ("all", np.conj),
    # Special functions are not folded: XLA's approximations and SciPy's differ in the last bits, and a
    # folded constant must be the value the program computes.
    "chlo.erf": ("all", None), "chlo.erfc": ("all", None), "chlo.erf_inv": ("all", None),
    "chlo.lgamma": ("all", None), "chlo.digamma": ("all", None), "chlo.bessel_i1e": ("all", None),
    "chlo.polygamma": ("all", None), "chlo.zeta": ("all", None),
    "chlo.next_after": ("all", _np(np.nextafter)),
    "chlo._asin_acos_kernel": ("all", None),
    "chlo.is_inf": ("none", np.isinf), "chlo.is_neg_inf": ("none", lambda x: np.isneginf(x)),
    "chlo.is_pos_inf": ("none", lambda x: np.isposinf(x)),
    "chlo.mulhi": ("none", None),
}


def _chlo_folder(fn):
    def fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
        (t,) = ctx.result_types(op)
        return [np.asarray(fn(*consts)).astype(t.dtype, copy=False)]

    return fold


for _name, (_kind, _fn) in CHLO_ELEMENTWISE.items():
    if _kind == "all":
        deps_rule(_name, kind=EXACT, note="elementwise union")(_union_rule)
    else:
        deps_rule(_name, kind=ZERO, note="boolean or integer")(_drop_rule)
    if _fn is not None:
        fold_rule(_name)(_chlo_folder(_fn))


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


def _chlo_broadcast_rule(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """``chlo.broadcast_<op>``: broadcast each operand to the result shape, then the union move."""
    (t,) = ctx.result_types(op)
    rows = [a.deps.gather_rows(_chlo_broadcast_map(a.shape, t.shape, op)) for a in args if not a.deps.is_empty]
    return [Deps.union(*rows) if rows else ctx.empty(t.size)]


deps_rule(*(f"chlo.broadcast_{name}" for name in (
    "add", "atan2", "complex", "divide", "maximum", "minimum", "multiply", "next_after", "polygamma", "power",
    "remainder", "subtract", "zeta", "select")), kind=EXACT,
    note="broadcasting, then elementwise union")(_chlo_broadcast_rule)
deps_rule(*(f"chlo.broadcast_{name}" for name in (
    "and", "or", "xor", "compare", "shift_left", "shift_right_arithmetic", "shift_right_logical")),
    kind=ZERO, note="broadcasting; boolean or integer")(_drop_rule)


@deps_rule("chlo.constant_like", kind=ZERO, note="a constant")
def _constant_like(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """``chlo.constant_like``: a splat of ``value`` with the operand's shape — a known constant."""
    (t,) = ctx.result_types(op)
    v = scalar_of(op, "value")
    const = None if v is None else np.full(t.shape, v, dtype=t.dtype)
    return [AbstractValue(t, ctx.empty(t.size), const, None if const is None else literal_uncertainty(const))]


@deps_rule("chlo.constant", kind=ZERO, note="a constant")
def _chlo_constant(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    (t,) = ctx.result_types(op)
    arr = dense_attr(op, "value")
    const = None if arr is None else np.asarray(arr).reshape(t.shape).astype(t.dtype)
    return [AbstractValue(t, ctx.empty(t.size), const, None if const is None else literal_uncertainty(const))]


# ---------------------------------------------------------------- trust (folding/exactness.py)
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
        error_rule(f"chlo.{name}")(rule)


_chlo_trust_rules()

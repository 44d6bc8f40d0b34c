"""Elementwise ops (StableHLO spec §add … §tanh, CHLO's special functions): their second derivatives.

Per op, ``∂²y/∂a²``, ``∂²y/∂a∂b``, ``∂²y/∂b²`` of ``y = op(a, b)`` decide the local term::

    add, subtract, negate, real, imag, complex, convert   linear            nothing
    abs, max, min, clamp, select, remainder, sign          piecewise linear  nothing (real operands)
    multiply, fma (a·b + c)                                a·b              S_a × S_b (cross only)
    divide                                                 a/b              S_a × S_b ∪ S_b × S_b
    exp, log, sin, tanh, power, atan2, sqrt, erf …         nonlinear        (S_a ∪ S_b)² (full)

Ops with a zero first derivative (floor, compare, bit operations …) have empty first-order sets, so the
default full term adds nothing for them either.  A known (constant) operand has no first-order set: ``x * c``
adds nothing, and the first-order rule's value-aware masks (``x * 0``) already dropped what a zero kills.
"""

from __future__ import annotations

import numpy as np

from ...lattice import Deps
from .registry import CROSS, FULL, ZERO, local_term
from .terms import cross_rows, full_of, full_term, no_term

LINEAR = ("stablehlo.add", "stablehlo.subtract", "stablehlo.negate", "stablehlo.real", "stablehlo.imag",
          "stablehlo.complex", "stablehlo.convert", "stablehlo.reduce_precision", "chlo.conj",
          "chlo.broadcast_add", "chlo.broadcast_subtract", "chlo.broadcast_complex")
PIECEWISE_LINEAR = ("stablehlo.maximum", "stablehlo.minimum", "stablehlo.clamp", "stablehlo.select",
                    "stablehlo.remainder", "chlo.broadcast_maximum", "chlo.broadcast_minimum",
                    "chlo.broadcast_select", "chlo.broadcast_remainder", "chlo.next_after",
                    "chlo.broadcast_next_after")
local_term(*LINEAR, kind=ZERO, note="linear")(no_term)
local_term(*PIECEWISE_LINEAR, kind=ZERO, note="piecewise linear (real operands)")(no_term)


@local_term("stablehlo.abs", "stablehlo.sign", kind=ZERO, note="piecewise linear for real operands; full for complex")
def _abs_sign(ctx, op, args, results):
    """|x| and sign(x) of a real x are piecewise linear; of a complex z, |z| = √(re² + im²) is not."""
    if args[0].dtype.kind == "c":
        return full_term(ctx, op, args, results)
    return [None]


@local_term("stablehlo.multiply", kind=CROSS, note="S_a × S_b ∪ S_b × S_a")
def _multiply(ctx, op, args, results):
    """§multiply: ``∂²(ab)/∂a∂b = 1``, ``∂²/∂a² = ∂²/∂b² = 0`` (complex too: the product is bilinear)."""
    (t,) = ctx.result_types(op)
    return [cross_rows(ctx, args[0], args[1], t.size)]


@local_term("stablehlo.fma", kind=CROSS, note="S_a × S_b ∪ S_b × S_a (linear in the addend)")
def _fma(ctx, op, args, results):
    """§fma ``a·b + c`` (JAX 0.12.1): the product's cross term; the addend enters linearly."""
    (t,) = ctx.result_types(op)
    return [cross_rows(ctx, args[0], args[1], t.size)]


@local_term("stablehlo.divide", kind=CROSS, note="S_a × S_b ∪ S_b × S_b (linear in the dividend)")
def _divide(ctx, op, args, results):
    """§divide: ``∂²(a/b)/∂a² = 0``, ``∂²/∂a∂b = -1/b²``, ``∂²/∂b² = 2a/b³``."""
    (t,) = ctx.result_types(op)
    a, b = args
    cross = cross_rows(ctx, a, b, t.size)
    bb = None
    if not b.deps.is_empty:
        bb = full_of(ctx, b)
        if b.size != t.size:
            bb = bb.broadcast_row(t.size)
        # a known zero dividend makes the quotient a constant zero there (its first-order row is empty)
        bb = bb.mask_rows(np.diff(ctx.first_order(results[0]).indptr) > 0)
    parts = [p for p in (cross, bb) if p is not None]
    return [Deps.union(*parts) if parts else None]


NONLINEAR = ("stablehlo.exponential", "stablehlo.exponential_minus_one", "stablehlo.log", "stablehlo.log_plus_one",
             "stablehlo.exp2", "stablehlo.log2",
             "stablehlo.logistic", "stablehlo.sine", "stablehlo.cosine", "stablehlo.tan", "stablehlo.tanh",
             "stablehlo.sqrt", "stablehlo.rsqrt", "stablehlo.cbrt", "stablehlo.power", "stablehlo.atan2",
             "chlo.acos", "chlo.acosh", "chlo.asin", "chlo.asinh", "chlo.atan", "chlo.atanh", "chlo.cosh",
             "chlo.sinh", "chlo.tan", "chlo.square", "chlo.erf", "chlo.erfc", "chlo.erf_inv", "chlo.lgamma",
             "chlo.digamma", "chlo.bessel_i1e", "chlo.polygamma", "chlo.zeta", "chlo._asin_acos_kernel",
             "chlo.broadcast_multiply", "chlo.broadcast_divide", "chlo.broadcast_power", "chlo.broadcast_atan2",
             "chlo.broadcast_polygamma", "chlo.broadcast_zeta")
local_term(*NONLINEAR, kind=FULL, note="nonlinear: every pair of the result's inputs")(full_term)

#: Every op of this file: each result element is computed from the same element of each operand (the
#: ``chlo.broadcast_*`` twins too, on operands of the result's shape), so its first-order row is the union of
#: some of its operands' rows, pairs included (:mod:`.closure` relies on it).
ELEMENTWISE = frozenset(LINEAR + PIECEWISE_LINEAR + NONLINEAR + (
    "stablehlo.abs", "stablehlo.sign", "stablehlo.multiply", "stablehlo.fma", "stablehlo.divide"))

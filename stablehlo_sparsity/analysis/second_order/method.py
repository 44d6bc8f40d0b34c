"""Which Hessian method ``hessian_sparsity(method="auto")`` takes: a cost model of the program, fitted on
measurements (``benchmarks/hessian_method.py``).

The two methods pay for different things.  The direct walk (:mod:`.interpreter`) reads the primal program
once, but every nonlinear op writes each element's interaction pairs, ``|S|²/2`` codes an element.  The
gradient path first traces and lowers the gradient program (two to four times the primal's ops: on a program
written out scalar by scalar that lowering alone costs more than the whole direct walk), then runs the
first-order analysis over it, which moves ``|S|`` columns an element.  So the direct walk wins on programs
of many small ops, and the gradient path can win on a few wide nonlinear ops over large arrays.

The model reads three counts off the traced jaxpr, before anything is lowered: equations, the elements they
produce, and the elements produced by nonlinear equations.  It scores a program by a linear function of their
logarithms,

    score = w₀ + w₁·log(eqns) + w₂·log(elements) + w₃·log(1 + nonlinear elements),

and ``auto`` takes the gradient path where the score is below 0.  The score is a decision, not a time ratio: the
weights are a logistic regression of which method was faster (``benchmarks/hessian_method.py --fit``), each
problem weighted by ``|log(t_via-gradient / t_direct)|`` — what a wrong pick costs there — so near ties decide
little and wide wins much.  (A least-squares fit of the log time ratio, the earlier model, spends its freedom on
the written-out programs, where direct wins by 4–7×, and misplaces the boundary among the large vectorized ones.)
The data are two regimes: each problem in a fresh process, and every problem in one long process, whose grown
heap spares the direct walk's short-lived arrays the page faults a fresh process pays.  The data, the fit and the
leave-one-out check are in ``docs/benchmarks/index.md`` ("Choosing the Hessian method").

How far it carries (issue 48): on 30 families it was never fitted on (``benchmarks/hessian_held_out.py``) it was
within 1.25× of the faster method on all 104 problems on two machines of one kind (worst 1.25× on each; the latest
run on the current code, 2026-12-07, where it also took the faster method on all 75 of its own) and on 103 on a
third (worst 1.83×: an Allen–Cahn energy at n = 10⁶, whose direct calls in one process took 64 to 364 ms by how
much memory they mapped afresh, before the direct walk mapped less of it). Where the two methods are close, the
two lattices' costs per element and the machine decide, and no count of the primal program shows them (refits,
richer counts and budgeted walks were measured and do not fix it: ``docs/benchmarks/index.md``, "Held-out
objectives"). :func:`explain` is the one-line reason ``pattern.method_reason`` records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Sequence

from ..program import jaxpr_equations
from ...errors import InputError

__all__ = ["HessianMethod", "parse_method", "ProgramFeatures", "program_features", "score", "choose_method",
           "explain", "WEIGHTS"]


class HessianMethod(StrEnum):
    """How a Hessian pattern is found (``hessian_sparsity(method=...)``; a ``str`` enum: ``"direct"`` compares
    equal to :attr:`DIRECT_ANALYSIS`).  Not to be confused with the *recovery* of a prepared Hessian,
    ``mode="direct"`` (:class:`~stablehlo_sparsity.derivatives.prepared.modes.HessianMode`), which shares the
    string ``"direct"`` but not the name."""

    #: the method the cost model predicts to be faster (:func:`choose_method`)
    AUTO = "auto"
    #: the second-order analysis of the primal program (:mod:`.interpreter`): no gradient program is built
    DIRECT_ANALYSIS = "direct"
    #: the Jacobian pattern of the lowered gradient program, symmetrized
    VIA_GRADIENT = "via-gradient"


def parse_method(value) -> HessianMethod:
    """The :class:`HessianMethod` named by ``value`` (a member or its string), or an ``InputError`` naming the
    choices."""
    try:
        return HessianMethod(value)
    except ValueError:
        raise InputError(f"method must be 'auto', 'direct' or 'via-gradient', got {value!r}") from None

#: Primitives whose second derivative is zero (linear in their differentiable operands, or piecewise
#: constant): they write no interaction pairs.  Every other primitive counts as nonlinear.
LINEAR_PRIMITIVES = frozenset({
    "add", "add_any", "sub", "neg", "reshape", "broadcast_in_dim", "squeeze", "expand_dims", "slice",
    "dynamic_slice", "dynamic_update_slice", "concatenate", "pad", "transpose", "rev", "gather", "scatter-add",
    "scatter_add", "select_n", "convert_element_type", "reduce_sum", "cumsum", "copy", "copy_p", "real", "imag",
    "complex", "conj", "stop_gradient", "iota", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not",
    "floor", "ceil", "round", "sign", "reduce_max", "reduce_min", "argmax", "argmin", "max", "min", "abs",
    "clamp", "pjit", "jit", "closed_call", "custom_jvp_call", "custom_vjp_call", "while", "scan", "cond",
    "fori_loop", "split", "rem",
})


@dataclass(frozen=True)
class ProgramFeatures:
    """What the cost model reads of a program (nested jaxprs counted once each)."""

    eqns: int
    elements: int
    nonlinear_elements: int

    def as_row(self) -> tuple[float, float, float, float]:
        """The regression row of the cost model: ``(1, log eqns, log elements, log(1 + nonlinear))``."""
        return (1.0, math.log(max(self.eqns, 1)), math.log(max(self.elements, 1)), math.log1p(self.nonlinear_elements))


def program_features(jaxpr) -> ProgramFeatures:
    """Equations, output elements, and output elements of nonlinear equations of a (closed) jaxpr."""
    eqns = elements = nonlinear = 0
    for eqn in jaxpr_equations(jaxpr):
        size = 0
        for v in eqn.outvars:
            shape = getattr(getattr(v, "aval", None), "shape", ())
            size += math.prod(shape)
        eqns += 1
        elements += size
        if eqn.primitive.name not in LINEAR_PRIMITIVES:
            nonlinear += size
    return ProgramFeatures(eqns, elements, nonlinear)


#: ``w`` of the module docstring: fitted by ``python benchmarks/hessian_method.py --fit`` (2026-11-29, jax 0.11.2;
#: 75 problems, each in a fresh process and all in one process: 150 rows), refitted after the direct walk's
#: vectorized terms got cheaper (``conv_energy`` at n = 10⁵ moved to direct).  Every pick of the fit is within
#: 1.00× of the faster method; the gradient path wins on two problems only (``separable`` and ``periodic_chain`` at
#: n = 10⁵), so a fit that leaves one of them out has a single example of that side and picks direct for the other
#: (2.07× there).  More equations favour direct (the gradient program's lowering grows with them); more elements
#: favour the gradient path, the less so the more of them are nonlinear (every element the direct walk moves carries
#: its interaction pairs, and a linear op's gradient is cheap).
WEIGHTS: tuple[float, float, float, float] = (-2.40132, 4.28353, -2.87966, 2.58852)


def score(features: ProgramFeatures, weights: Sequence[float] | None = None) -> float:
    """The model's score of a program (with :data:`WEIGHTS`, or the ``weights`` of a refit): below 0, the
    gradient path is predicted faster."""
    return sum(w * v for w, v in zip(WEIGHTS if weights is None else weights, features.as_row()))


def choose_method(features: ProgramFeatures, weights: Sequence[float] | None = None) -> HessianMethod:
    """:attr:`~HessianMethod.DIRECT_ANALYSIS` (``"direct"``) or :attr:`~HessianMethod.VIA_GRADIENT`
    (``"via-gradient"``): the one predicted faster (direct on a tie)."""
    return HessianMethod.VIA_GRADIENT if score(features, weights) < 0.0 else HessianMethod.DIRECT_ANALYSIS


def explain(features: ProgramFeatures) -> str:
    """Why ``auto`` took the method :func:`choose_method` gives, in one line (``pattern.method_reason``): the
    score, its sign and the counts it was computed from."""
    s = score(features)
    method = choose_method(features)
    side = "< 0" if method is HessianMethod.VIA_GRADIENT else ">= 0"
    return (f"method='auto': the cost model predicts {method} faster (score {s:.2f} {side} for "
            f"{features.eqns:,} equations, {features.elements:,} elements, {features.nonlinear_elements:,} "
            "nonlinear)")

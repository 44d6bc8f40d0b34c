"""Which Hessian method ``hessian_sparsity(method="auto")`` takes: a cost model of the program, fitted on
measurements (``benchmarks/hessian_method.py``).

The two methods pay for different things.  The direct walk (:mod:`.interpreter`) reads the primal program
once, but every nonlinear op writes each element's interaction pairs, ``|S|²/2`` codes an element.  The
gradient path first traces and lowers the gradient program (two to four times the primal's ops: on a program
written out scalar by scalar that lowering alone costs more than the whole direct walk), then runs the
first-order analysis over it, which moves ``|S|`` columns an element.  So the direct walk wins on programs
of many small ops, and the gradient path can win on a few wide nonlinear ops over large arrays.

The model reads three counts off the traced jaxpr, before anything is lowered: equations, the elements they
produce, and the elements produced by nonlinear equations.  It predicts the ratio of the two times,

    log(t_via-gradient / t_direct) ≈ w₀ + w₁·log(eqns) + w₂·log(elements) + w₃·log(1 + nonlinear elements),

and ``auto`` takes the gradient path only where that ratio is predicted below 1.  The weights are a least-squares
fit on ``benchmarks/hessian_method.py`` (``--fit``); the data, and the check that ``auto`` stays within 1.25× of
the faster method, are in ``docs/benchmarks/index.md`` ("Choosing the Hessian method").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["ProgramFeatures", "program_features", "predicted_ratio", "choose_method", "WEIGHTS"]

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
    stack = [getattr(jaxpr, "jaxpr", jaxpr)]
    seen: set[int] = set()
    while stack:
        jp = stack.pop()
        if id(jp) in seen:
            continue
        seen.add(id(jp))
        for eqn in jp.eqns:
            size = 0
            for v in eqn.outvars:
                shape = getattr(getattr(v, "aval", None), "shape", ())
                size += math.prod(shape)
            eqns += 1
            elements += size
            if eqn.primitive.name not in LINEAR_PRIMITIVES:
                nonlinear += size
            for p in eqn.params.values():
                for sub in (p if isinstance(p, (list, tuple)) else (p,)):
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        stack.append(inner)
    return ProgramFeatures(eqns, elements, nonlinear)


#: ``w`` of the module docstring: fitted by ``python benchmarks/hessian_method.py --fit`` (2026-11-28, 72 problems,
#: jax 0.11.2; residual standard deviation 0.19 in log-ratio).  More equations favour direct (the gradient
#: program's lowering grows with them); more nonlinear elements favour the gradient path (the direct walk
#: writes their interaction pairs).
WEIGHTS: tuple[float, float, float, float] = (0.85511226, 0.12237073, 0.03258591, -0.09531423)


def predicted_ratio(features: ProgramFeatures) -> float:
    """The predicted ``t_via-gradient / t_direct`` for a program with these features."""
    return math.exp(sum(w * v for w, v in zip(WEIGHTS, features.as_row())))


def choose_method(features: ProgramFeatures) -> str:
    """``"direct"`` or ``"via-gradient"``: the one predicted faster (direct on a tie)."""
    return "via-gradient" if predicted_ratio(features) < 1.0 else "direct"

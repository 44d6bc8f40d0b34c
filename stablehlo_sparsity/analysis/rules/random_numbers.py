"""Random numbers (spec §rng, §rng_bit_generator).

§rng: ``UNIFORM`` draws from ``[a, b)`` and ``NORMAL`` has mean ``a`` and deviation ``b``: the numbers are
``a + (b − a)·u`` / ``a + b·z`` for hidden ``u``, ``z``, so every element depends on the (scalar) ``a`` and
``b`` — not on nothing.  §rng_bit_generator: bits of an integer state, no dependence.
"""

from __future__ import annotations

from ...lattice import Deps
from .registry import EXACT, ZERO, deps_rule
from .registry import RuleContext, Op, DepsResult  # the rule contract
from ..values import AbstractValue


@deps_rule("stablehlo.rng", kind=EXACT, note="every element depends on a and b (a + (b−a)·u, a + b·z)")
def _rng(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§rng: ``a + (b − a)·u`` (UNIFORM) or ``a + b·z`` (NORMAL): every element depends on ``a`` and ``b``."""
    a, b = args[0], args[1]
    (t,) = ctx.result_types(op)
    parts = [v.deps.reduce_all().broadcast_row(t.size) for v in (a, b) if not v.deps.is_empty]
    return [Deps.union(*parts) if parts else ctx.empty(t.size)]


@deps_rule("stablehlo.rng_bit_generator", kind=ZERO, note="random bits of an integer state")
def _rng_bit_generator(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§rng_bit_generator: a new state and random bits from an integer state — no dependence."""
    return [ctx.empty(t.size) for t in ctx.result_types(op)]

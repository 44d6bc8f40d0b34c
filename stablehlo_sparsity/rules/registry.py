"""Rules as data: two tables keyed by the op name.

* ``DEPS_RULES[name](ctx, op, args) -> list[Deps | AbstractValue]`` — the index-set transfer function: given
  the abstract values of the operands, the lattice of each result.  A rule may read ``arg.const`` (the
  constant lattice) to be more precise, e.g. a multiply by a known zero.
* ``FOLD_RULES[name](ctx, op, consts) -> list[np.ndarray]`` — the NumPy evaluator used when every operand is
  a known constant (the constant lattice).  Results must follow StableHLO semantics exactly.

Each rule is a small function defined just above its registration, in the file of its op family.
"""

from __future__ import annotations

from typing import Callable

DEPS_RULES: dict[str, Callable] = {}
FOLD_RULES: dict[str, Callable] = {}


def deps_rule(*names: str):
    """Register an index-set rule for the given op names (e.g. ``"stablehlo.add"``)."""

    def register(fn):
        for name in names:
            if name in DEPS_RULES:
                raise RuntimeError(f"duplicate deps rule for {name}")
            DEPS_RULES[name] = fn
        return fn

    return register


def fold_rule(*names: str):
    """Register a constant-folding evaluator for the given op names."""

    def register(fn):
        for name in names:
            if name in FOLD_RULES:
                raise RuntimeError(f"duplicate fold rule for {name}")
            FOLD_RULES[name] = fn
        return fn

    return register

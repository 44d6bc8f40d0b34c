"""Rules as data: two tables keyed by the op name.

* ``DEPS_RULES[name](ctx, op, args) -> list[Deps | AbstractValue]`` — the index-set transfer function: given
  the abstract values of the operands, the lattice of each result.  A rule may read ``arg.const`` (the
  constant lattice) to be more precise, e.g. a multiply by a known zero.
* ``FOLD_RULES[name](ctx, op, consts) -> list[np.ndarray]`` — the NumPy evaluator used when every operand is
  a known constant (the constant lattice).  Results must follow StableHLO semantics exactly.
* ``ERROR_RULES[name](ctx, op, args, consts) -> list[Uncertainty | None]`` — how far each folded result may
  be from what XLA computes on any backend, given the operands' abstract values (with their uncertainties)
  and the folded results (see :mod:`stablehlo_sparsity.folding.exactness`).  It raises ``Undecided`` when an
  integer or boolean result hangs on an uncertain float.  Without an error rule, a folded float result is
  trusted for nothing (``err = inf``) and an integer result only if every operand was exact.

Each rule is a small function defined just above its registration, in the file of its op family.
"""

from __future__ import annotations

from typing import Callable

class NotFoldable(Exception):
    """Raised by a fold rule that declines (the op then goes through its index-set rule)."""


DEPS_RULES: dict[str, Callable] = {}
FOLD_RULES: dict[str, Callable] = {}
ERROR_RULES: dict[str, Callable] = {}


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


def error_rule(*names: str):
    """Register the error model (trust) of the given ops' folded results."""

    def register(fn):
        for name in names:
            if name in ERROR_RULES:
                raise RuntimeError(f"duplicate error rule for {name}")
            ERROR_RULES[name] = fn
        return fn

    return register

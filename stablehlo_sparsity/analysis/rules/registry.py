"""Rules as data: tables keyed by the full op name, and the contract every rule is written against.

* ``DEPS_RULES[name](ctx, op, args) -> list[Deps | AbstractValue]`` (:data:`DepsRule`) — the index-set
  transfer function: given the abstract values of the operands, the lattice of each result.  A rule may read
  the constant lattice through the queries of :mod:`~stablehlo_sparsity.analysis.folding.exactness` (``maybe_nonzero``,
  ``surely``) to be more precise, e.g. a multiply by a known zero.
* ``FOLD_RULES[name](ctx, op, consts) -> list[np.ndarray]`` (:data:`FoldRule`) — the NumPy evaluator used
  when every operand is a known constant.  Results must follow StableHLO semantics exactly; a rule that
  declines raises :class:`NotFoldable`.
* ``ERROR_RULES[name](ctx, op, args, consts) -> list[Uncertainty | None]`` (:data:`ErrorRule`) — how far
  each folded result may be from what XLA computes on any backend (see
  :mod:`~stablehlo_sparsity.analysis.folding.exactness`).  It raises ``Undecided`` when an integer or boolean result
  hangs on an uncertain float.
* ``RANGE_RULES[name](ctx, op, args) -> list[IntRange | None]`` (:data:`RangeRule`) — bounds of each integer
  or boolean result the constant lattice does not know, from the operands' constants and ranges (see
  :mod:`~stablehlo_sparsity.analysis.folding.ranges`); ``None`` where nothing is known.
* ``COVERAGE[name]`` — what kind of rule the op has (:data:`EXACT` …) and a one-line note: the source of
  ``docs/reference/coverage.md`` (``scripts/coverage_table.py``).  ``REFUSED[name]`` — ops deliberately without a rule,
  and why.

Registrations name the op in full, as a literal (``@deps_rule("stablehlo.gather", kind=VALUE_AWARE)``), so
``grep -rn '"stablehlo.gather"'`` finds every rule of an op.  Each rule is a small function defined just
above its registration, in the file of its op family.  Rules talk to the analysis only through
:class:`RuleContext`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, TypeAlias

if TYPE_CHECKING:
    import numpy as np

    from ..folding.exactness import Uncertainty
    from ..folding.ranges import IntRange
    from ..options import AnalysisOptions
    from ...lattice.core import Deps
    from ..values import AbstractValue, TensorType

__all__ = ["RuleContext", "DepsRule", "FoldRule", "ErrorRule", "NotFoldable", "Coverage", "DEPS_RULES",
           "UNION_WHEN_UNKNOWN", "UNION_OF_OPERANDS",
           "FOLD_RULES", "ERROR_RULES", "RANGE_RULES", "RangeRule", "range_rule", "COVERAGE", "REFUSED",
           "deps_rule", "fold_rule", "error_rule", "refuse",
           "Op", "DepsResult", "FoldResult",
           "ErrorResult", "RangeResult", "EXACT", "VALUE_AWARE", "CONSERVATIVE", "ZERO", "ERROR", "PER_TARGET", "KINDS"]


class NotFoldable(Exception):
    """Raised by a fold rule that declines (the op then goes through its index-set rule)."""


class RuleContext(Protocol):
    """What a rule may ask of the running analysis (implemented by the interpreter)."""

    n: int  #: the number of input columns
    options: "AnalysisOptions"
    module: Any

    @property
    def observing(self) -> bool:
        """Whether an observer records every op's values (the annotate and fold-constants passes)."""
        ...

    def result_types(self, op: Any) -> "Sequence[TensorType]": ...
    def value(self, v: Any) -> "AbstractValue": ...
    def empty(self, rows: int) -> "Deps": ...
    def location(self, op: Any) -> str: ...
    def warn(self, op: Any, message: str) -> None: ...
    def function(self, name: str) -> Any: ...
    def call(self, name: str, args: "list[AbstractValue]") -> "list[AbstractValue]": ...
    def run_region(self, region: Any, args: "list[AbstractValue]") -> "list[AbstractValue]": ...
    def run_region_unreported(self, region: Any, args: "list[AbstractValue]") -> "list[AbstractValue]": ...
    def interpret_symbolically(self, region: Any, args: "list[AbstractValue]", outer: dict[Any, "AbstractValue"],
                               width: int) -> "list[AbstractValue]": ...
    def memo(self, name: str) -> dict[Any, Any]: ...
    def call_cache_mark(self) -> int: ...
    def call_cache_trim(self, mark: int) -> None: ...


#: An MLIR operation as the rules see it (jaxlib's bindings carry no usable types: ``op.operation.name``,
#: ``op.operands``, ``op.results``, ``op.regions``, ``op.attributes``).
Op: TypeAlias = Any
#: What the rules return: one entry per result of the op.
DepsResult: TypeAlias = "Sequence[Deps | AbstractValue]"
FoldResult: TypeAlias = "Sequence[np.ndarray]"
ErrorResult: TypeAlias = "Sequence[Uncertainty | None]"
RangeResult: TypeAlias = "Sequence[IntRange | None]"

DepsRule = Callable[[RuleContext, Any, "list[AbstractValue]"], "Sequence[Deps | AbstractValue]"]
FoldRule = Callable[[RuleContext, Any, "list[np.ndarray]"], "Sequence[np.ndarray]"]
RangeRule = Callable[[RuleContext, Any, "list[AbstractValue]"], "Sequence[IntRange | None]"]
ErrorRule = Callable[[RuleContext, Any, "list[AbstractValue]", "list[np.ndarray]"], "Sequence[Uncertainty | None]"]

#: Kinds of index-set rules (``docs/reference/coverage.md`` explains them).
EXACT = "exact"
VALUE_AWARE = "value-aware exact"
CONSERVATIVE = "conservative"
ZERO = "zero-derivative"
ERROR = "error"
PER_TARGET = "per target"
KINDS = (EXACT, VALUE_AWARE, CONSERVATIVE, ZERO, ERROR, PER_TARGET)


@dataclass(frozen=True)
class Coverage:
    kind: str
    note: str
    module: str  #: the rule's module (its op family)


DEPS_RULES: dict[str, DepsRule] = {}
FOLD_RULES: dict[str, FoldRule] = {}
ERROR_RULES: dict[str, ErrorRule] = {}
RANGE_RULES: dict[str, RangeRule] = {}
COVERAGE: dict[str, Coverage] = {}
REFUSED: dict[str, str] = {}
#: Index-set rules that, when no operand is a known constant and every operand has the result's one float
#: type's size, give the union of the operands' index sets (the elementwise union, the value-aware rules —
#: which drop rows only where an operand is known — and §reshape).  The interpreter gives that union without
#: calling them (:meth:`~stablehlo_sparsity.analysis.interpreter.Interpreter.evaluate`): half the ops of a
#: written-out program are such ops on scalars, where the call costs more than the union.
UNION_WHEN_UNKNOWN: set[DepsRule] = set()
#: The rules of :data:`UNION_WHEN_UNKNOWN` whose answer is that union whatever the operands' values (the
#: elementwise union and §reshape, not the value-aware rules): a known operand — whose index sets are empty
#: (the constant lattice's invariant) — adds nothing to it, so the interpreter's union skips it.
UNION_OF_OPERANDS: set[DepsRule] = set()


def _check_name(name: str) -> None:
    if "." not in name:
        raise ValueError(f"rules are registered under the full op name, e.g. 'stablehlo.add', not {name!r}")


def deps_rule(*names: str, kind: str, note: str = "") -> Callable[[DepsRule], DepsRule]:
    """Register the index-set rule of the given ops, with its coverage kind and a one-line note."""
    if kind not in KINDS:
        raise ValueError(f"unknown rule kind {kind!r}")

    def register(fn: DepsRule) -> DepsRule:
        for name in names:
            _check_name(name)
            if name in DEPS_RULES:
                raise RuntimeError(f"duplicate deps rule for {name}")
            DEPS_RULES[name] = fn
            COVERAGE[name] = Coverage(kind, note, fn.__module__.rsplit(".", 1)[-1])
        return fn

    return register


def fold_rule(*names: str) -> Callable[[FoldRule], FoldRule]:
    """Register the constant-folding evaluator of the given ops."""

    def register(fn: FoldRule) -> FoldRule:
        for name in names:
            _check_name(name)
            if name in FOLD_RULES:
                raise RuntimeError(f"duplicate fold rule for {name}")
            FOLD_RULES[name] = fn
        return fn

    return register


def error_rule(*names: str) -> Callable[[ErrorRule], ErrorRule]:
    """Register the error model (trust) of the given ops' folded results."""

    def register(fn: ErrorRule) -> ErrorRule:
        for name in names:
            _check_name(name)
            if name in ERROR_RULES:
                raise RuntimeError(f"duplicate error rule for {name}")
            ERROR_RULES[name] = fn
        return fn

    return register


def range_rule(*names: str) -> Callable[[RangeRule], RangeRule]:
    """Register the integer range rule of the given ops (:mod:`~stablehlo_sparsity.analysis.folding.ranges`)."""

    def register(fn: RangeRule) -> RangeRule:
        for name in names:
            _check_name(name)
            if name in RANGE_RULES:
                raise RuntimeError(f"duplicate range rule for {name}")
            RANGE_RULES[name] = fn
        return fn

    return register


def refuse(name: str, reason: str) -> None:
    """Record an op that deliberately has no rule (it raises ``UnsupportedOpError`` or a type error)."""
    _check_name(name)
    REFUSED[name] = reason

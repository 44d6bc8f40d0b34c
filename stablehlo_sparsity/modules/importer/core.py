"""The importer's side of the region engine (:mod:`stablehlo_sparsity.analysis.engine`): one import rule per op.

Values are JAX arrays (tracers under ``jax.jit``), or NumPy arrays for the results of ``stablehlo.constant``
(kept concrete so that JAX recognizes, e.g., a reduction's identity init value and emits the same monoid
reduction the module holds).  The engine walks regions and calls with the analysis' scoping (a region sees the
values of the regions around it); :class:`ImportContext` evaluates one op with ``IMPORT_RULES[op name]``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeAlias

from ...analysis.engine import TERMINATORS, RegionEngine
from ...errors import SparsityError, UnsupportedOpError
from ...analysis.values import TensorType, tensor_type

__all__ = ["IMPORT_RULES", "NOT_IMPORTABLE", "import_rule", "ImportContext", "ImportError_", "ImportRule", "Op",
           "Values", "TERMINATORS", "jax_lax"]

#: An MLIR operation as an import rule sees it (jaxlib's bindings carry no usable types).
Op: TypeAlias = Any
#: Values of the replay: JAX arrays (tracers under ``jax.jit``) or NumPy arrays (constants), one per operand or
#: result (JAX's array types do not cover NumPy constants and tracers at once).
Values: TypeAlias = Sequence[Any]
#: What an import rule does: ``rule(ctx, op, args) -> values`` (one per result of ``op``).
ImportRule = Callable[["ImportContext", Op, Values], Values]

#: op name -> ``rule(ctx, op, args) -> list of arrays`` (one per result).
IMPORT_RULES: dict[str, ImportRule] = {}

#: op names the analysis has a rule for but that cannot be replayed, with the reason.
NOT_IMPORTABLE: dict[str, str] = {}


def jax_lax() -> Any:
    """``jax.lax``, imported on first use (importing this package does not import JAX)."""
    from jax import lax

    return lax


def import_rule(*names: str) -> Callable[[ImportRule], ImportRule]:
    """Register an import rule for the given full op names (e.g. ``"stablehlo.gather"``)."""

    def register(fn: ImportRule) -> ImportRule:
        for name in names:
            if name in IMPORT_RULES:
                raise RuntimeError(f"duplicate import rule for {name}")
            IMPORT_RULES[name] = fn
        return fn

    return register


class ImportError_(UnsupportedOpError):
    """An op the importer cannot replay (names the op and its location)."""

    def __init__(self, op_name: str, location: str | None = None, detail: str = ""):
        msg = f"cannot import op '{op_name}'"
        if detail:
            msg += f": {detail}"
        SparsityError.__init__(self, msg, location)
        self.op_name = op_name


class ImportContext(RegionEngine[Any]):
    """What an import rule sees: the module's functions, types, locations, and region replay."""

    purpose = "import"

    # ------------------------------------------------------------------ helpers for rules
    def result_types(self, op: Any) -> list[TensorType]:
        try:
            return [tensor_type(r.type) for r in op.results]
        except SparsityError:
            loc = self.location(op)
            return [tensor_type(r.type, loc) for r in op.results]

    def error(self, op: Any, detail: str) -> ImportError_:
        return ImportError_(op.operation.name, self.location(op), detail)

    # ------------------------------------------------------------------ functions and regions
    def call(self, name: str, args: Values) -> list[Any]:
        """Replay ``@name`` on ``args`` (inlined into the trace)."""
        return self.invoke(name, list(args))

    def region_fn(self, region: Any) -> Callable[..., list[Any]]:
        """A Python function replaying ``region`` on its block arguments, seeing the values around it now
        (what JAX's control-flow primitives need: they trace it, possibly several times)."""
        parent = self._scope

        def fn(*args: Any) -> list[Any]:
            return self.run_region(region, list(args), parent=parent)

        return fn

    def run_op(self, op: Any) -> Sequence[Any]:
        name = op.operation.name
        args = self.operands(op)
        rule = IMPORT_RULES.get(name)
        if rule is None:
            raise ImportError_(name, self.location(op), NOT_IMPORTABLE.get(name) or "no import rule")
        try:
            outs = rule(self, op, args)
        except SparsityError:
            raise
        except Exception as e:  # a JAX shape/dtype refusal: say which op of the module caused it
            raise ImportError_(name, self.location(op),
                               f"JAX refused the replay: {type(e).__name__}: {str(e).splitlines()[0][:300]}") \
                from e
        if len(outs) != len(op.results):
            raise SparsityError(f"import rule for {name} returned {len(outs)} results, op has "
                                f"{len(op.results)}", self.location(op))
        return outs

"""The replay engine: walk a StableHLO function op by op and call one import rule per op.

Values are JAX arrays (tracers under ``jax.jit``), or NumPy arrays for the results of ``stablehlo.constant``
(kept concrete so that JAX recognizes, e.g., a reduction's identity init value and emits the same monoid
reduction the module holds).  Regions see the values of their enclosing regions (StableHLO regions may
capture them), so every region runs in a :class:`Scope` whose parent is the scope that created it.
"""

from __future__ import annotations

from typing import Callable


from ..errors import InputError, SparsityError, UnsupportedOpError, format_location
from ..values import TensorType, tensor_type

__all__ = ["IMPORT_RULES", "NOT_IMPORTABLE", "import_rule", "ImportContext", "ImportError_", "Scope",
           "TERMINATORS"]

#: op name -> ``rule(ctx, op, args) -> list of arrays`` (one per result).
IMPORT_RULES: dict[str, Callable] = {}

#: op names the analysis has a rule for but that cannot be replayed, with the reason.
NOT_IMPORTABLE: dict[str, str] = {}

TERMINATORS = frozenset({"func.return", "stablehlo.return"})


def import_rule(*names: str):
    """Register an import rule for the given full op names (e.g. ``"stablehlo.gather"``)."""

    def register(fn):
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


class Scope:
    """SSA value -> array, with lexical parents (a region sees the values of the regions around it)."""

    __slots__ = ("env", "parent")

    def __init__(self, parent: "Scope | None" = None):
        self.env: dict = {}
        self.parent = parent

    def lookup(self, v):
        s = self
        while s is not None:
            hit = s.env.get(v, _MISSING)
            if hit is not _MISSING:
                return hit
            s = s.parent
        raise InputError("use of an undefined SSA value")


_MISSING = object()


class ImportContext:
    """What a rule sees: the module's functions, types, locations, and region replay."""

    def __init__(self, module):
        from jaxlib.mlir import ir

        self.module = module
        self.functions = {}
        for op in module.body.operations:
            if op.operation.name == "func.func":
                self.functions[ir.StringAttr(op.attributes["sym_name"]).value] = op
        self._scope: Scope | None = None
        self._call_stack: list[str] = []

    # ------------------------------------------------------------------ helpers for rules
    def location(self, op) -> str:
        return format_location(op.location)

    def result_types(self, op) -> list[TensorType]:
        loc = None
        try:
            return [tensor_type(r.type) for r in op.results]
        except SparsityError:
            loc = self.location(op)
            return [tensor_type(r.type, loc) for r in op.results]

    def error(self, op, detail: str) -> ImportError_:
        return ImportError_(op.operation.name, self.location(op), detail)

    # ------------------------------------------------------------------ functions and regions
    def call(self, name: str, args: list) -> list:
        """Replay ``@name`` on ``args`` (inlined into the trace)."""
        fn = self.functions.get(name)
        if fn is None:
            raise InputError(f"no function named '@{name}' in the module")
        if not fn.regions or not len(fn.regions[0].blocks):
            raise InputError(f"function '@{name}' has no body (it is a declaration): there is nothing to import",
                             self.location(fn))
        if name in self._call_stack:
            raise InputError(f"recursive call to '@{name}' is not supported (StableHLO programs are not recursive)")
        self._call_stack.append(name)
        saved = self._scope
        try:
            return self.run_region(fn.regions[0], args, parent=None)
        finally:
            self._scope = saved
            self._call_stack.pop()

    def region_fn(self, region) -> Callable:
        """A Python function replaying ``region`` on its block arguments, seeing the current scope's values
        (what JAX's control-flow primitives need: they trace it, possibly several times)."""
        parent = self._scope

        def fn(*args):
            saved = self._scope
            try:
                return self.run_region(region, list(args), parent=parent)
            finally:
                self._scope = saved

        return fn

    def run_region(self, region, args: list, parent: Scope | None) -> list:
        blocks = list(region.blocks)
        if len(blocks) != 1:
            raise InputError(f"regions with {len(blocks)} blocks are not supported")
        block = blocks[0]
        scope = Scope(parent)
        self._scope = scope
        env = scope.env
        bargs = list(block.arguments)
        if len(bargs) != len(args):
            raise InputError(f"region expects {len(bargs)} arguments, got {len(args)}")
        for ba, a in zip(bargs, args):
            env[ba] = a
        for op in block.operations:
            name = op.operation.name
            vals = [scope.lookup(v) for v in op.operands]
            if name in TERMINATORS:
                return vals
            rule = IMPORT_RULES.get(name)
            if rule is None:
                reason = NOT_IMPORTABLE.get(name)
                raise ImportError_(name, self.location(op), reason or "no import rule")
            try:
                outs = rule(self, op, vals)
            except SparsityError:
                raise
            except Exception as e:  # a JAX shape/dtype refusal: say which op of the module caused it
                raise ImportError_(name, self.location(op),
                                   f"JAX refused the replay: {type(e).__name__}: {str(e).splitlines()[0][:300]}") \
                    from e
            if len(outs) != len(op.results):
                raise SparsityError(f"import rule for {name} returned {len(outs)} results, op has "
                                    f"{len(op.results)}", self.location(op))
            for r, o in zip(op.results, outs):
                env[r] = o
            self._scope = scope
        raise InputError("block without terminator")

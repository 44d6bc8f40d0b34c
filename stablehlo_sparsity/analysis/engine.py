"""The region engine: the one op-by-op walk over StableHLO regions, driven by the analysis and the importer.

Both sides evaluate a program the same way and differ only in what a value is and what one op does to it:

* the analysis (:class:`~stablehlo_sparsity.analysis.interpreter.Interpreter`) binds each SSA value to an
  :class:`~stablehlo_sparsity.analysis.values.AbstractValue` and evaluates an op with its sparsity, fold and range
  rules;
* the importer (:class:`~stablehlo_sparsity.modules.importer.core.ImportContext`) binds each SSA value to a JAX array
  and evaluates an op with its ``jax.lax`` import rule.

Each is a :class:`RegionEngine` over its value type that implements :meth:`RegionEngine.run_op`; the engine
owns what they share, so that it is written once:

* the terminators that end a block and hand back its values (:data:`TERMINATORS`);
* the function table (:class:`FunctionTable`: ``func.func`` by symbol name, declarations refused) and calls
  (no recursion: StableHLO programs are not recursive);
* the scoping model (:class:`Scope`).  StableHLO §"Programs": ops with regions (``while``, ``case``,
  ``reduce`` …) are not isolated from above — a region reads the values of the regions around it — while a
  ``func.func`` is: a call's body sees its arguments only.  A region therefore runs in a child scope of the
  one that runs it, and a called function's body in a root scope.

Op attributes are read through :mod:`stablehlo_sparsity.ir.attrs` on both sides.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, Iterable, Sequence, TypeVar

from ..errors import InputError, format_location, user_file_location
from ..ir.attrs import string_attr, symbol_ref
from ..ir.helpers import functions

__all__ = ["TERMINATORS", "Scope", "FunctionTable", "DecodedOp", "DecodedBlock", "RegionEngine", "single_block",
           "user_location"]

V = TypeVar("V")

#: The ops that end a block and return its values to the op or call that ran the region (§func.return,
#: §stablehlo.return).  Terminators are part of their parent op: no rule evaluates them.
TERMINATORS = frozenset({"func.return", "stablehlo.return"})


class Scope(Generic[V]):
    """SSA value -> value for one region run, with the scope of the enclosing region as ``parent``
    (``None`` for a function body: functions are isolated from above)."""

    __slots__ = ("env", "parent")

    def __init__(self, parent: Scope[V] | None = None, env: dict[Any, V] | None = None):
        self.env: dict[Any, V] = {} if env is None else env
        self.parent = parent

    def lookup(self, v: Any) -> V:
        """The value bound to ``v`` here or in an enclosing scope."""
        s: Scope[V] | None = self
        while s is not None:
            if v in s.env:
                return s.env[v]
            s = s.parent
        raise InputError("use of an undefined SSA value")

    def values(self, operands: Iterable[Any]) -> list[V]:
        """The values of ``operands`` (this scope first: most operands are defined in the same block)."""
        env = self.env
        return [env[v] if v in env else self.lookup(v) for v in operands]


class DecodedOp:
    """One op as the engine reads it, read through the MLIR bindings once per analysis: the op itself (rules
    read its attributes and regions), its name, its operand and result SSA values.  ``types`` is the
    engine's own decoding of the result types, filled by the first engine that needs it (the analysis
    stores :class:`~stablehlo_sparsity.analysis.values.TensorType` s there).

    Reading an op's operands or results through the bindings builds new Python objects every time (about
    2 µs each for a scalar op); loops run their bodies many times and the second-order walk reads every op
    twice, so the walk reads each op once and keeps what it read."""

    __slots__ = ("op", "name", "operands", "results", "types")

    def __init__(self, op: Any):
        self.op = op
        operation = op.operation
        self.name: str = operation.name
        self.operands: tuple[Any, ...] = tuple(operation.operands)
        results = operation.results
        # (one result, as nearly every op has: indexing the list builds one object; iterating it costs 1 µs more)
        self.results: tuple[Any, ...] = (results[0],) if len(results) == 1 else tuple(results)
        self.types: Any = None


class DecodedBlock:
    """A block's arguments and its ops (:class:`DecodedOp`), in order; ``dead`` is the analysis' memo of
    which values die after which op (:meth:`RegionEngine.dead_after`), ``unused`` its memo of the ops whose results
    nothing reads (:meth:`RegionEngine.skipped_ops`)."""

    __slots__ = ("block", "arguments", "ops", "dead", "unused")

    def __init__(self, block: Any):
        self.block = block
        self.arguments: tuple[Any, ...] = tuple(block.arguments)
        self.ops: list[DecodedOp] = [DecodedOp(op) for op in block.operations]
        self.dead: Any = None
        self.unused: Any = None


class FunctionTable:
    """The ``func.func`` ops of a module by symbol name (``sym_name``, read by :func:`..ir.helpers.functions`),
    and the module's blocks as they have been decoded (:meth:`decoded`): the static structure every engine
    over the module shares, the analysis and the sub-analyses its rules start."""

    def __init__(self, module: Any):
        self.by_name: dict[str, Any] = functions(module)
        self._blocks: dict[Any, DecodedBlock] = {}
        self._bodies: dict[str, DecodedBlock] = {}

    def decoded(self, region: Any) -> DecodedBlock:
        """The one block of ``region``, decoded once (:func:`single_block` says why it may be refused).

        Keyed by the block: the bindings hash a block by the IR it points to (a region's Python object is
        made afresh at every ``op.regions[i]`` and hashes by identity)."""
        block = single_block(region)
        hit = self._blocks.get(block)
        if hit is None:
            hit = self._blocks[block] = DecodedBlock(block)
        return hit

    def function(self, name: str) -> Any:
        """The ``func.func`` named ``name`` (an :class:`InputError` if there is none)."""
        fn = self.by_name.get(name)
        if fn is None:
            raise InputError(f"no function named '@{name}' in the module")
        return fn

    def body(self, name: str, purpose: str, role: str = "function") -> Any:
        """The body region of ``@name``; a declaration (no body) is refused, saying there is nothing to
        ``purpose`` (e.g. "analyze"); ``role`` names the function in that message."""
        fn = self.function(name)
        if not fn.regions or not len(fn.regions[0].blocks):
            raise InputError(f"{role} '@{name}' has no body (it is a declaration): there is nothing to {purpose}",
                             format_location(fn.location))
        return fn.regions[0]

    def body_block(self, name: str, purpose: str, role: str = "function") -> DecodedBlock:
        """The decoded block of ``@name``'s body (:meth:`body`, :meth:`decoded`), found once per function: the
        entry's layout and every call of the function read it without going through the bindings again."""
        hit = self._bodies.get(name)
        if hit is None:
            hit = self._bodies[name] = self.decoded(self.body(name, purpose, role))
        return hit


def single_block(region: Any) -> Any:
    """The one block of a region (StableHLO regions of the ops we run have exactly one)."""
    blocks = list(region.blocks)
    if len(blocks) != 1:
        raise InputError(f"regions with {len(blocks)} blocks are not supported")
    return blocks[0]


class _Current:
    """The default ``parent`` of :meth:`RegionEngine.run_region`: the scope running now."""


_CURRENT = _Current()


class RegionEngine(Generic[V]):
    """Walks the single-block regions of one module op by op over values of type ``V``.

    Subclasses implement :meth:`run_op` (the results of one op, reading its operands with :meth:`operands`)
    and set :attr:`purpose` (the verb of the "nothing to ..." message for a declaration)."""

    purpose: ClassVar[str] = "interpret"

    def __init__(self, module: Any, function_table: FunctionTable | None = None):
        self.module = module
        self.function_table = function_table if function_table is not None else FunctionTable(module)
        self.functions: dict[str, Any] = self.function_table.by_name
        self._scope: Scope[V] | None = None
        self._call_stack: list[str] = []
        #: the op that called each function of :attr:`_call_stack` (``None`` for the entry): read only when a
        #: message needs a location (:meth:`location`)
        self._call_sites: list[Any] = []
        #: ``(callee, call site)`` pairs of the calls in progress around this engine's walk (a sub-analysis
        #: that a rule starts inside a called function, :meth:`calls_in_progress`)
        self.enclosing_calls: tuple[tuple[str, Any], ...] = ()

    # ------------------------------------------------------------------ what a side implements
    def run_op(self, op: Any) -> Sequence[V]:
        """The values of ``op``'s results (one per result)."""
        raise NotImplementedError

    def run_decoded(self, d: DecodedOp) -> Sequence[V]:
        """:meth:`run_op` of a decoded op (what the walk calls); a side that reads the decoded operands,
        results and types overrides this one instead."""
        return self.run_op(d.op)

    def dead_after(self, block: DecodedBlock) -> dict[int, list[Any]] | None:
        """Position of an op in ``block`` -> the SSA values no later op of the block reads, whose values
        :meth:`release` may shrink once that op has run; ``None`` (the default) keeps every value."""
        return None

    def release(self, value: V) -> V:
        """What a dead value (:meth:`dead_after`) is replaced by; the default keeps it."""
        return value

    def skipped_ops(self, block: DecodedBlock) -> frozenset[int] | None:
        """Positions of the ops of ``block`` the walk does not run (their results are never read: no result of
        the block depends on them); ``None`` (the default) runs every op."""
        return None

    def call_site(self) -> Any:
        """The op (or :class:`DecodedOp`) running now, read when a call starts: the call site :meth:`location`
        climbs to.  The default knows none."""
        return None

    # ------------------------------------------------------------------ values
    def location(self, op: Any) -> str:
        """Where ``op`` is in the user's code, for a message: :func:`user_location` along the calls in progress."""
        return user_location(op, self.calls_in_progress())

    def calls_in_progress(self) -> tuple[tuple[str, Any], ...]:
        """``(callee, call site)`` of every call in progress, the outermost first (the enclosing ones too)."""
        return self.enclosing_calls + tuple(zip(self._call_stack, self._call_sites))

    def value(self, v: Any) -> V:
        """The value of an SSA value of the running region or of a region around it."""
        if self._scope is None:
            raise InputError("use of an SSA value outside any region")
        return self._scope.lookup(v)

    def operands(self, op: Any) -> list[V]:
        """The values of ``op``'s operands."""
        return self.operand_values(op.operands)

    def operand_values(self, operands: Iterable[Any]) -> list[V]:
        """The values of the SSA values ``operands`` (:meth:`Scope.values`, inlined: this runs once per op)."""
        scope = self._scope
        if scope is None:
            raise InputError("use of an SSA value outside any region")
        env = scope.env
        return [env[v] if v in env else scope.lookup(v) for v in operands]

    # ------------------------------------------------------------------ functions and regions
    def function(self, name: str) -> Any:
        return self.function_table.function(name)

    def invoke(self, name: str, args: list[V]) -> list[V]:
        """Run the body of ``@name`` on ``args`` in a root scope (what ``func.call`` does)."""
        if name in self._call_stack:
            raise InputError(f"recursive call to '@{name}' is not supported (StableHLO programs are not recursive)")
        body = self.function_table.body_block(name, self.purpose)
        self._call_sites.append(self.call_site() if self._scope is not None else None)  # (the entry: none)
        self._call_stack.append(name)
        try:
            return self.run_region(body, args, parent=None)
        finally:
            self._call_stack.pop()
            self._call_sites.pop()

    def run_region(self, region: Any, args: Sequence[V], *, parent: Scope[V] | None | _Current = _CURRENT
                   ) -> list[V]:
        """Run the block of ``region`` on its block arguments ``args``; returns the terminator's operands.

        The block runs in a new scope whose parent is ``parent``: by default the scope running now (a nested
        region reads the values around it), ``None`` for a function body.  ``region`` may be given decoded
        already (a :class:`DecodedBlock`: a function's body, :meth:`FunctionTable.body_block`)."""
        block = region if type(region) is DecodedBlock else self.function_table.decoded(region)
        block_args = block.arguments
        if len(block_args) != len(args):
            raise InputError(f"region expects {len(block_args)} arguments, got {len(args)}")
        scope: Scope[V] = Scope(self._scope if isinstance(parent, _Current) else parent,
                                dict(zip(block_args, args)))
        env = scope.env
        saved, self._scope = self._scope, scope
        try:
            run_decoded = self.run_decoded
            dead = self.dead_after(block)
            skip = self.skipped_ops(block)
            for position, d in enumerate(block.ops):
                if d.name in TERMINATORS:
                    return scope.values(d.operands)
                if skip is None or position not in skip:
                    for r, value in zip(d.results, run_decoded(d)):
                        env[r] = value
                if dead is not None:
                    for v in dead.get(position, ()):
                        if v in env:
                            env[v] = self.release(env[v])
            raise InputError("block without terminator")
        finally:
            self._scope = saved

    def reset(self) -> None:
        """Forget the scopes and calls of a run that raised, so that the next call starts clean."""
        self._scope = None
        self._call_stack.clear()
        self._call_sites.clear()


#: The ops whose symbol attribute names the function they call (``func.call``'s ``callee``, §composite's
#: ``decomposition``).
_CALLEE_ATTRIBUTE = {"func.call": "callee", "stablehlo.composite": "decomposition"}


def user_location(op: Any, calls: Sequence[tuple[str, Any]] = ()) -> str:
    """``file:line:col`` of the user's line for ``op``: its own location when that names a line outside JAX and
    this library (:func:`~stablehlo_sparsity.errors.user_file_location`), else the nearest enclosing op's (a
    ``while`` or ``case`` around it), else — at its function — the call site that called it, found among
    ``calls`` (``(callee, call site)`` pairs, the outermost first) and climbed the same way; else the op's own
    location as :func:`~stablehlo_sparsity.errors.format_location` reads it.

    JAX locates an op lowered inside its own library code (``jnp.linalg.solve``'s private functions, a nested
    ``jit``) by name only (``"scatter:"("scatter")``): the user's line is the call that reached it.  Read only
    when a message needs it (reading locations through the bindings costs more than a small op)."""
    current: Any = op
    level = len(calls)
    while current is not None:
        found = user_file_location(current.location)
        if found is not None:
            return found
        parent = current.operation.parent
        if parent is None:
            break
        if parent.name != "func.func":
            current = parent
            continue
        current = None
        name = _symbol_name(parent)
        while level:  # the innermost call of this function still in progress
            level -= 1
            callee, site = calls[level]
            if callee == name:
                current = _call_op(site, name)
                break
    return format_location(op.location)


def _symbol_name(fn: Any) -> str | None:
    try:
        return string_attr(fn, "sym_name")
    except (KeyError, ValueError):
        return None


def _call_op(site: Any, callee: str) -> Any:
    """The op ``site`` (or the op of a :class:`DecodedOp`) when it calls ``@callee``, else ``None`` (a site
    recorded while another op was running)."""
    op = site.op if type(site) is DecodedOp else site
    if op is None:
        return None
    attribute = _CALLEE_ATTRIBUTE.get(op.operation.name)
    if attribute is None:
        return None
    try:
        named = symbol_ref(op, attribute)
    except (KeyError, ValueError):
        return None
    return op if named == callee else None

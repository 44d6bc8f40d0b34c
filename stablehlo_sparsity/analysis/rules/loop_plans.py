"""Loop plans: what a ``while`` body does with its counters, read off the IR once (§while).

A loop is *summarizable* when its integer scalars that move are **counters** — each stepped by a constant in
every iteration (``lax.scan`` carries its own counter and ``fori_loop``'s ``i`` beside it) — and the counters
reach nothing but

* integer index arithmetic (``add``, ``compare``, ``select``, ``convert`` … of scalars: :data:`EVALUATORS`),
* the start indices of ``dynamic_slice`` reads of a **scanned** array — a carried value the body returns
  unchanged, or a value captured from outside, that the body reads in no other way — along dimensions the
  read takes one coordinate of,
* the start indices of the one ``dynamic_update_slice`` that writes a **write-only accumulator** — a carried
  value the body uses only as that write's operand and returns as its own next value — along dimensions the
  update is one coordinate thick (it spans every other dimension),
* their own increments, and the condition,

looking through ``func.call`` (JAX wraps these reads and writes in small private functions).  Then the
index-set transfer of every iteration is the same, up to *where* the reads and writes land, and those
positions are integer programs of the counters — :class:`Expr` trees that :func:`evaluate` runs for every
iteration at once with NumPy.  ``lax.scan``, ``fori_loop`` and ``while_loop`` with a counter bound lower to
exactly this; a loop whose counter reaches anything else (a branch, a gather, an inner trip count, a float)
has no plan and is iterated exactly (:mod:`.control_flow`).

Plans are pure IR facts (memoized per op); whether the loop's *values* allow a summary (stable constants,
unknown scanned arrays) is checked when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...ir.attrs import dense_attr, enum_text, symbol_ref
from ..engine import TERMINATORS
from ..values import element_dtype

__all__ = ["Expr", "LoopPlan", "ScanRead", "AccumWrite", "plan_of", "evaluate", "NotEvaluable", "EVALUATORS",
           "trip_count", "counter_values"]


class NotEvaluable(Exception):
    """A counter program reads a value that is not a known constant, or meets an undefined case (a division
    by zero)."""


# ====================================================================== integer programs of the counters
@dataclass(frozen=True, eq=False)
class Expr:
    """An integer (or boolean) scalar computed from carried integers, outside values and literals.

    ``kind``: ``"slot"`` (carried value ``ref``: a counter, or a loop constant); ``"outer"`` (a value from
    outside the loop, ``ref`` the SSA value: a known constant); ``"const"`` (``ref`` the array); or an op name
    of :data:`EVALUATORS` applied to ``args``, the op in ``attrs["op"]``.  ``slots``: the carried values it
    reads."""

    kind: str
    dtype: np.dtype
    args: tuple = ()
    ref: Any = None
    attrs: dict = field(default_factory=dict)
    slots: frozenset = frozenset()


def _wrap(values, dtype):
    return np.asarray(values).astype(dtype, copy=False)


def _compare(op, a, b):
    direction = enum_text(op, "comparison_direction")
    if "compare_type" in op.attributes and enum_text(op, "compare_type") in ("FLOAT", "TOTALORDER"):
        raise NotEvaluable
    return {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
            "GE": np.greater_equal}[direction](a, b)


def _divide(a, b):
    """§divide on integers: truncation toward zero; a zero divisor is implementation-defined."""
    if np.any(np.asarray(b) == 0):
        raise NotEvaluable
    q = np.abs(a) // np.abs(b)
    return np.where((np.asarray(a) < 0) != (np.asarray(b) < 0), -q, q)


def _remainder(a, b):
    """§remainder on integers: the sign of the dividend."""
    if np.any(np.asarray(b) == 0):
        raise NotEvaluable
    return np.fmod(a, b)


#: Integer scalar ops a counter program may contain: ``name -> fn(op, *operand values)`` on NumPy values of
#: any shape (the iterations), wrapped to the result type afterwards (two's complement, as §add etc.).
EVALUATORS: dict = {
    "stablehlo.add": lambda op, a, b: np.add(a, b),
    "stablehlo.subtract": lambda op, a, b: np.subtract(a, b),
    "stablehlo.multiply": lambda op, a, b: np.multiply(a, b),
    "stablehlo.negate": lambda op, a: np.negative(a),
    "stablehlo.abs": lambda op, a: np.abs(a),
    "stablehlo.maximum": lambda op, a, b: np.maximum(a, b),
    "stablehlo.minimum": lambda op, a, b: np.minimum(a, b),
    "stablehlo.clamp": lambda op, lo, x, hi: np.minimum(np.maximum(x, lo), hi),
    "stablehlo.select": lambda op, p, a, b: np.where(p, a, b),
    "stablehlo.compare": _compare,
    "stablehlo.and": lambda op, a, b: np.bitwise_and(a, b),
    "stablehlo.or": lambda op, a, b: np.bitwise_or(a, b),
    "stablehlo.xor": lambda op, a, b: np.bitwise_xor(a, b),
    "stablehlo.not": lambda op, a: np.logical_not(a) if np.asarray(a).dtype == bool else np.invert(a),
    "stablehlo.divide": lambda op, a, b: _divide(a, b),
    "stablehlo.remainder": lambda op, a, b: _remainder(a, b),
    "stablehlo.convert": lambda op, a: a,
    "stablehlo.reshape": lambda op, a: a,
    "stablehlo.broadcast_in_dim": lambda op, a: a,
}


def evaluate(expr: Expr, slots: dict, outer) -> np.ndarray:
    """The value of ``expr``: ``slots[k]`` is carried value ``k`` (an array over iterations for a counter, a
    scalar for a loop constant, absent when unknown), ``outer(v)`` the known constant of outside value ``v``
    (or ``None``)."""
    memo: dict = {}

    def go(e: Expr):
        hit = memo.get(id(e))
        if hit is not None:
            return hit
        if e.kind == "const":
            v = e.ref
        elif e.kind in ("slot", "outer"):
            c = slots.get(e.ref) if e.kind == "slot" else outer(e.ref)
            if c is None:
                raise NotEvaluable
            c = np.asarray(c)
            v = _wrap(c.reshape(()) if c.size == 1 and c.ndim else c, e.dtype)
        else:
            with np.errstate(over="ignore"):
                v = _wrap(EVALUATORS[e.kind](e.attrs["op"], *[go(a) for a in e.args]), e.dtype)
        memo[id(e)] = v
        return v

    return go(expr)


# ====================================================================== the plan
@dataclass(frozen=True)
class ScanRead:
    """A ``dynamic_slice`` of a scanned array at the counters: ``starts[d]`` for every counter dimension
    (``None`` elsewhere: any value, read where the slice lies); the counter dims take size 1."""

    starts: tuple


@dataclass(frozen=True)
class AccumWrite:
    """The ``dynamic_update_slice`` into a write-only accumulator: start programs along the counter dims
    (``None`` elsewhere: the update spans those dims)."""

    starts: tuple


@dataclass
class LoopPlan:
    """What the body does with its counters (see the module docstring)."""

    counters: dict                     #: carried index -> its step per iteration
    dtypes: dict                       #: carried index -> dtype (integer scalars)
    cond: Expr                         #: the condition, an integer program
    scanned: dict                      #: source ("slot", k) / ("outer", value) -> list of ScanRead
    scan_dims: dict                    #: source -> the dims the counters index
    accums: dict                       #: carried index -> AccumWrite


@dataclass(frozen=True, eq=False)
class _Src:
    """Exactly a scanned candidate (a carried value or an outside value), passed along unchanged."""

    key: tuple


@dataclass(frozen=True, eq=False)
class _Acc:
    """The result of the write into accumulator candidate ``slot``."""

    slot: int


def _int_scalar(t):
    """The dtype of a one-element integer or boolean tensor type, else ``None``."""
    from jaxlib.mlir import ir

    try:
        rt = ir.RankedTensorType(t)
    except (ValueError, TypeError):
        return None
    if not rt.has_static_shape or int(np.prod(rt.shape, dtype=np.int64)) != 1:
        return None
    try:
        dt = element_dtype(str(rt.element_type))
    except Exception:
        return None
    return dt if dt.kind in "iub" else None


def _shape(t):
    from ..values import tensor_type

    return tensor_type(t).shape


class _Walker:
    """One pass over the body (and its callees, inlined) recording every fact a plan depends on; whether the
    integers involved are counters is decided at the end, when their updates are known."""

    def __init__(self, functions):
        self.functions = functions
        self.reads: list = []       # (source key, start Exprs, slice sizes)
        self.writes: list = []      # (slot, start Exprs, update shape, operand shape)
        self.escapes: set = set()   # carried integers that reach something else
        self.spoiled: set = set()   # sources used in another way (or changed by the body)
        self.bad_acc: set = set()   # accumulators whose written value is used in another way
        self.depth = 0

    def outer(self, v):
        dt = _int_scalar(v.type)
        return Expr("outer", dt, ref=v) if dt is not None else _Src(("outer", v))

    def spoil(self, d):
        """``d`` is used by an op outside the plan."""
        if isinstance(d, Expr):
            self.escapes |= d.slots
        elif isinstance(d, _Src):
            self.spoiled.add(d.key)
        elif isinstance(d, _Acc):
            self.bad_acc.add(d.slot)

    def block(self, block, arg_desc: list, env_outer=None) -> list:
        env = dict(zip(block.arguments, arg_desc))

        def desc(v):
            if v in env:
                return env[v]
            return env_outer(v) if env_outer is not None else None

        for op in block.operations:
            name = op.operation.name
            ds = [desc(v) for v in op.operands]
            if name in TERMINATORS:
                return ds
            for r, d in zip(op.results, self.op(op, name, ds, desc)):
                env[r] = d
        return []

    def op(self, op, name, ds, desc) -> list:
        """The descriptions of ``op``'s results (``None``: not an integer program of the carry)."""
        nres = len(op.results)
        if op.regions and any(len(r.blocks) for r in op.regions):
            return self._nested(op, ds, desc)
        if name == "func.call":
            return self._call(op, ds)
        if name == "stablehlo.constant":
            return [_int_literal(op)]
        if name == "stablehlo.dynamic_slice" and isinstance(ds[0], _Src) and \
                all(isinstance(d, Expr) for d in ds[1:]):
            from ...ir.attrs import i64_list

            self.reads.append((ds[0].key, tuple(ds[1:]), tuple(i64_list(op, "slice_sizes"))))
            return [None]
        if name == "stablehlo.dynamic_update_slice" and isinstance(ds[0], _Src) and ds[0].key[0] == "slot" \
                and all(isinstance(d, Expr) for d in ds[2:]):
            self.spoil(ds[1])
            self.writes.append((ds[0].key[1], tuple(ds[2:]), _shape(op.operands[1].type),
                                _shape(op.operands[0].type)))
            return [_Acc(ds[0].key[1])]
        expr = _integer_expr(op, name, ds)
        if expr is not None:
            return [expr]
        for d in ds:
            self.spoil(d)
        return [None] * nres

    def _nested(self, op, ds, desc) -> list:
        """An op with regions: whatever it or its regions read is used, and its results are not described."""
        from ...ir.helpers import region_ops

        for r in op.regions:  # values read inside nested regions are used by this op
            for inner in region_ops(r):
                for v in inner.operands:
                    self.spoil(desc(v))
        for d in ds:
            self.spoil(d)
        return [None] * len(op.results)

    def _call(self, op, ds) -> list:
        """``func.call``: the callee walked on the arguments' descriptions."""

        nres = len(op.results)
        callee = self.functions.get(symbol_ref(op, "callee"))
        if callee is None or not len(callee.regions[0].blocks) or self.depth > 64:
            for d in ds:
                self.spoil(d)
            return [None] * nres
        self.depth += 1
        try:
            out = self.block(callee.regions[0].blocks[0], ds)
        finally:
            self.depth -= 1
        return list(out) + [None] * (nres - len(out))


def _int_literal(op) -> "Expr | None":
    """An integer scalar ``stablehlo.constant`` as an expression."""
    dt = _int_scalar(op.results[0].type)
    if dt is None:
        return None
    arr = dense_attr(op, "value")
    if arr is None or np.asarray(arr).size != 1:
        return None
    return Expr("const", dt, ref=np.asarray(arr).astype(dt).reshape(()))


def _integer_expr(op, name: str, ds: list) -> "Expr | None":
    """An integer scalar op of :data:`EVALUATORS` on described operands, as an expression."""
    if name not in EVALUATORS or len(op.results) != 1 or not all(isinstance(d, Expr) for d in ds):
        return None
    dt = _int_scalar(op.results[0].type)
    if dt is None or not all(_int_scalar(v.type) is not None for v in op.operands):
        return None
    return Expr(name, dt, tuple(ds), attrs={"op": op}, slots=frozenset().union(*[d.slots for d in ds]))


def _step(e: Expr, k: int) -> int | None:
    """The step ``c`` when ``e`` is ``slot k + c`` (or ``c + slot k``, ``slot k − c``) with a literal ``c``."""
    if e is None or e.kind not in ("stablehlo.add", "stablehlo.subtract") or len(e.args) != 2:
        return None
    a, b = e.args
    if e.kind == "stablehlo.add" and b.kind == "slot" and b.ref == k and a.kind == "const":
        a, b = b, a
    if a.kind != "slot" or a.ref != k or b.kind != "const":
        return None
    c = int(np.asarray(b.ref).reshape(()))
    return -c if e.kind == "stablehlo.subtract" else c


def plan_of(op, functions) -> LoopPlan | None:
    """The plan of a ``stablehlo.while`` op, or ``None`` (see the module docstring)."""
    walked = _walk_loop(op, functions)
    if walked is None:
        return None
    walker, bdesc, out, cond = walked
    found = _counters(bdesc, out)
    if found is None:
        return None
    counters, dtypes = found
    moving = frozenset(counters)
    if walker.escapes & moving or not (cond.slots & moving):
        return None
    _spoil_changed_carries(walker, bdesc, out)
    scans = _scans(walker, moving)
    accums = _accumulators(walker, moving)
    if scans is None or accums is None or not _used_only_as_planned(walker, scans[0], accums, out):
        return None
    return LoopPlan(counters, dtypes, cond, scans[0], scans[1], accums)


def _walk_loop(op, functions):
    """Walk the body and the condition on descriptions of the carried values: ``(walker, body arguments,
    body results, condition)``, or ``None`` when the regions are not single blocks or the condition is not an
    integer program of the carry."""
    cond, body = op.regions[0], op.regions[1]
    if len(cond.blocks) != 1 or len(body.blocks) != 1:
        return None
    walker = _Walker(functions)

    def descs(block):
        out = []
        for k, a in enumerate(block.arguments):
            dt = _int_scalar(a.type)
            out.append(Expr("slot", dt, ref=k, slots=frozenset([k])) if dt is not None else _Src(("slot", k)))
        return out

    bdesc = descs(body.blocks[0])
    out = walker.block(body.blocks[0], bdesc, env_outer=walker.outer)
    cout = walker.block(cond.blocks[0], descs(cond.blocks[0]), env_outer=walker.outer)
    if len(cout) != 1 or not isinstance(cout[0], Expr) or len(out) != len(bdesc):
        return None
    return walker, bdesc, out, cout[0]


def _counters(bdesc: list, out: list) -> tuple[dict, dict] | None:
    """The counters (integer slots moving by a literal step) and the integer slots' dtypes; ``None`` when an
    integer slot moves otherwise, or nothing counts."""
    counters, dtypes = {}, {}
    for k, (d, r) in enumerate(zip(bdesc, out)):
        if not isinstance(d, Expr):
            continue
        dtypes[k] = d.dtype
        if r is d:
            continue                              # a loop constant
        s = _step(r, k) if isinstance(r, Expr) and r.dtype == d.dtype and d.dtype.kind in "iu" else None
        if not s:
            return None                           # an integer that moves otherwise: no plan
        counters[k] = s
    return (counters, dtypes) if counters else None


def _spoil_changed_carries(walker: "_Walker", bdesc: list, out: list) -> None:
    """A carried array the body changes (other than an accumulator's write) is not scanned."""
    for k, (d, r) in enumerate(zip(bdesc, out)):
        if isinstance(d, Expr):
            continue
        if isinstance(r, _Src) and r.key == ("slot", k):
            continue                              # returned unchanged
        if isinstance(r, _Acc) and r.slot == k:
            continue                              # the accumulator's next value
        walker.spoil(r)
        walker.spoiled.add(("slot", k))


def _scans(walker: "_Walker", moving: frozenset) -> tuple[dict, dict] | None:
    """The reads at the counters (size 1 along the counter dims, the same dims every time):
    ``(scanned, scan_dims)``; ``None`` for a read at the counters of another shape."""
    scanned: dict = {}
    scan_dims: dict = {}
    for key, starts, sizes in walker.reads:
        at = tuple(d for d, e in enumerate(starts) if e.slots & moving)
        if not at:
            walker.spoiled.add(key)               # read elsewhere than at the counters
            continue
        if any(sizes[d] != 1 for d in at) or scan_dims.setdefault(key, at) != at:
            return None
        scanned.setdefault(key, []).append(ScanRead(tuple(e if d in at else None for d, e in enumerate(starts))))
    return scanned, scan_dims


def _accumulators(walker: "_Walker", moving: frozenset) -> dict | None:
    """The writes at the counters (one per carried array, a full slice along the other dims)."""
    accums = {}
    for k, starts, ushape, shape in walker.writes:
        at = tuple(d for d, e in enumerate(starts) if e.slots & moving)
        if not at or k in accums or any((d in at and u != 1) or (d not in at and u != s)
                                        for d, (u, s) in enumerate(zip(ushape, shape))):
            return None
        accums[k] = AccumWrite(tuple(e if d in at else None for d, e in enumerate(starts)))
    return accums


def _used_only_as_planned(walker: "_Walker", scanned: dict, accums: dict, out: list) -> bool:
    """Scanned arrays are read only at the counters, accumulators only written there."""
    for key in scanned:
        if key in walker.spoiled or (key[0] == "slot" and key[1] in accums):
            return False                          # read at the counters, but used otherwise too
    for k in accums:
        if k in walker.bad_acc or ("slot", k) in walker.spoiled or not isinstance(out[k], _Acc):
            return False
    return True


# ====================================================================== trip counts
def counter_values(plan: LoopPlan, start: dict, ts) -> dict:
    """Every counter's value after ``ts`` iterations (an array of iteration numbers) from ``start``."""
    return {k: (int(start[k]) + step * np.asarray(ts, np.int64)).astype(plan.dtypes[k])
            for k, step in plan.counters.items()}


def _room(plan: LoopPlan, start: dict) -> int:
    """Iterations before some counter would wrap around its type."""
    room: int | None = None
    for k, step in plan.counters.items():
        info = np.iinfo(plan.dtypes[k])
        c0 = int(start[k])
        r = (info.max - c0) // step if step > 0 else (c0 - info.min) // (-step)
        room = r if room is None else min(room, r)
    return 0 if room is None else room


def _closed_form(plan: LoopPlan, start: dict, slots: dict, outer) -> int | None:
    """The trip count of ``counter ⋈ bound`` (or ``bound ⋈ counter``) with a loop-constant bound, solved
    exactly; ``None`` for any other condition (or one that never turns false)."""
    found = _counter_comparison(plan)
    if found is None:
        return None
    counter, bound_expr, direction = found
    try:
        bound = int(np.asarray(evaluate(bound_expr, slots, outer)).reshape(()))
    except NotEvaluable:
        return None
    return _solve_trips(direction, int(start[counter.ref]), bound, plan.counters[counter.ref])


def _counter_comparison(plan: LoopPlan):
    """``(counter, bound, direction)`` when the condition compares a counter with a loop constant (the
    counter on the left: ``bound ⋈ counter`` is turned around), else ``None``."""
    e = plan.cond
    if e.kind != "stablehlo.compare":
        return None
    a, b = e.args
    direction = enum_text(e.attrs["op"], "comparison_direction")
    is_counter = lambda x: x.kind == "slot" and x.ref in plan.counters  # noqa: E731
    if not (is_counter(a) and not (b.slots & set(plan.counters))):
        if not (is_counter(b) and not (a.slots & set(plan.counters))):
            return None
        a, b = b, a
        direction = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE"}.get(direction, direction)
    if a.dtype != plan.dtypes[a.ref]:
        return None
    return a, b, direction


def _solve_trips(direction: str, c0: int, bound: int, s: int) -> int | None:
    """The first ``k ≥ 0`` at which ``c0 + k·s ⋈ bound`` is false (``None``: never)."""
    if direction in ("GT", "GE"):  # c > bound is -c < -bound
        c0, bound, s = -c0, -bound, -s
        direction = "LT" if direction == "GT" else "LE"
    d = bound - c0
    if direction in ("LT", "LE"):  # runs while c < bound (c ≤ bound)
        if (c0 < bound or (direction == "LE" and c0 == bound)) and s < 0:
            return None
        if s <= 0:
            return 0
        return max(0, -(-d // s)) if direction == "LT" else max(0, d // s + 1)
    if direction == "NE":
        return d // s if d % s == 0 and d // s >= 0 else None
    if direction == "EQ":
        return 1 if c0 == bound else 0
    return None


#: Iterations evaluated per chunk when the condition is not a plain comparison with a loop constant.
CHUNK = 1 << 16


def trip_count(plan: LoopPlan, start: dict, slots: dict, outer, limit: int) -> int | None:
    """How many more iterations run from the counters' values ``start``: the first ``k ≥ 0`` at which the
    condition is false.  A comparison of a counter with a loop constant is solved exactly, at any size; other
    conditions are evaluated for up to ``limit`` iterations.  ``None``: not known (it reads unknowns, or a
    counter would wrap around first)."""
    room = _room(plan, start)
    k = _closed_form(plan, start, slots, outer)
    if k is not None:
        return k if k <= room else None
    horizon = min(limit, room) + 1
    k0 = 0
    while k0 < horizon:
        k1 = min(horizon, k0 + CHUNK if k0 else min(horizon, 256))
        ks = np.arange(k0, k1, dtype=np.int64)
        values = dict(slots)
        values.update(counter_values(plan, start, ks))
        try:
            go = np.broadcast_to(evaluate(plan.cond, values, outer), ks.shape)
        except NotEvaluable:
            return None
        stop = np.flatnonzero(~go.astype(bool))
        if len(stop):
            return int(ks[stop[0]])
        k0 = k1
    return None

"""Reductions (StableHLO spec §reduce): the *group union* move, made precise by reading the body.

§reduce applies its ``body`` to the elements of each group (the elements that differ only along
``dimensions``) in an implementation-defined tree order, with the init values interspersed an
implementation-defined number of times.  So an output element of result ``j`` can only depend on

* the group's elements of the operands ``i`` that result ``j`` reaches through the body, and
* those operands' init values.

Which operands a body result reaches is learned by running the body abstractly once, on scalar arguments
with *symbolic* index sets: body argument ``i`` and ``k + i`` (accumulator and element of operand ``i``)
get column ``i`` of a tiny lattice of ``k + 1`` columns (the last one stands for values captured from the
enclosing region).  That gives a ``k × k`` boolean matrix ``M`` (result ``j`` reads operand ``i``); since
the tree feeds partial results back as arguments, result ``j`` reads every operand in row ``j`` of the
reflexive-transitive closure ``M*``.  Reflexive because a one-leaf tree returns the leaf itself.

Worked examples::

    sum:     body = add(a0, b0)                    M = [[1]]          result = group(x) ∪ init
    argmax:  body = (select(p, a0, b0),            M = [[1, 0],       value:  group(x) ∪ init0
                     select(q, a1, b1))                 [0, 1]]       index:  integer ⇒ dropped
    mixed:   body = (a0 + b0, a1 * b0)             M = [[1, 0],       result 1 reads operands 0 and 1
                                                        [1, 1]]

Comparisons in the body have zero derivative, so an argmax's value result does not pick up the index
operand; integer results get empty index sets anyway.  The grouping itself is one lattice move,
:func:`~stablehlo_sparsity.lattice.reduce_dims` (a full reduction, or a group union over the reduced
dimensions).

Folding: bodies made of one ``add``/``multiply``/``maximum``/``minimum``/``and``/``or`` per result fold
with the matching NumPy ``ufunc.reduce``; other bodies built from elementwise ops (an argmax of constants)
fold by a vectorized pairwise tree evaluation of the body — a valid schedule under §reduce's
implementation-defined order.  Anything else is not folded.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import i64_list
from ...errors import InputError
from ...ir.helpers import region_captures
from ...lattice import Deps, reduce_dims
from ..values import AbstractValue, is_differentiable, tensor_type
from ..folding.exactness import (AddTree, Undecided, add_tree_of, error_array, finalize, is_float, largest_finite,
                                 precision_bits, result_uncertainties, significant_bits, smallest_normal, sum_is_exact,
                                 sum_rounding, unknown_float, untrusted)
from .registry import ERROR_RULES, EXACT, FOLD_RULES, NotFoldable, deps_rule, error_rule, fold_rule
from .registry import RuleContext, Op, DepsResult, ErrorResult, FoldResult  # the rule contract

__all__ = ["body_dependence", "body_fns", "simple_body", "PIECEWISE_LINEAR_REDUCERS", "eval_body_np",
           "eval_body_trusted", "symbolic_captures", "grouped_trust", "body_rounds"]



# ---------------------------------------------------------------- reading the body
def symbolic_captures(ctx, outer: list, width: int) -> tuple[dict, list]:
    """For a symbolic run of a body (``ctx.interpret_symbolically``): every captured value stands for the
    last column ``width - 1`` ("something from outside"), constants and all.  Returns the outer environment
    and the captured abstract values."""
    outer_env, captured = {}, []
    for v in outer:
        av = ctx.value(v)
        captured.append(av)
        deps = Deps.empty(av.size, width) if av.deps.is_empty else \
            Deps.identity(1, width, width - 1).broadcast_row(av.size)
        outer_env[v] = av.with_deps(deps)
    return outer_env, captured


def body_dependence(ctx, op, k: int) -> tuple[np.ndarray, np.ndarray, list]:
    """Which operands each result of the reduction ``op``'s body reaches, after any number of applications.

    Returns ``(C, cap, captured)``: ``C[j, i]`` — result ``j`` may depend on operand ``i`` (the
    reflexive-transitive closure of one application); ``cap[j]`` — result ``j`` may depend on a value
    captured from outside the body; ``captured`` — those outer values' abstract values.

    Body argument ``i`` and ``k + i`` both stand for operand ``i`` (accumulator and element are
    interchangeable under §reduce's implementation-defined tree order).
    """
    if body_fns(ctx, op, k) is not None:
        # add/max/…: result j reads operand j only, and nothing from outside (every op of such a body reads
        # the block's arguments), so the walk for captured values is not needed
        return np.eye(k, dtype=bool), np.zeros(k, bool), []
    region = op.regions[0]
    block = list(region.blocks)[0]
    bargs = list(block.arguments)
    if len(bargs) != 2 * k:
        raise InputError(f"reduction body takes {len(bargs)} arguments for {k} operands", None)
    outer = region_captures(region)
    key = None
    if not outer:
        # The answer depends only on the body then: memoize per op for this analysis (loops re-run ops).
        cache = ctx.memo("reduce_body")
        key = op.operation
        if key in cache:
            return cache[key]
    width = k + 1  # column k: anything captured from the enclosing region
    outer_env, captured = symbolic_captures(ctx, outer, width)
    args = []
    for i, ba in enumerate(bargs):
        t = tensor_type(ba.type)
        args.append(AbstractValue(t, Deps.identity(1, width, i % k).broadcast_row(t.size)))
    results = ctx.interpret_symbolically(region, args, outer_env, width)
    reach = np.zeros((k, width), dtype=bool)
    for j, r in enumerate(results[:k]):
        if not r.deps.is_empty:
            reach[j, r.deps.to_csr().indices] = True   # a tiny (size × (k+1)) lattice
    m = reach[:, :k]
    closure = np.eye(k, dtype=bool)
    while True:  # at most k rounds: the closure over a k-node graph
        nxt = closure | ((closure.astype(np.int64) @ m.astype(np.int64)) > 0)
        if np.array_equal(nxt, closure):
            break
        closure = nxt
    cap = (closure.astype(np.int64) @ reach[:, k].astype(np.int64)) > 0
    if key is not None:
        cache[key] = (closure, cap, captured)
    return closure, cap, captured


#: Bodies that are one binary op per result fold with these reductions (bool and/or via bitwise ops).
_SIMPLE = {
    "stablehlo.add": np.add,
    "stablehlo.multiply": np.multiply,
    "stablehlo.maximum": np.maximum,
    "stablehlo.minimum": np.minimum,
    "stablehlo.and": np.bitwise_and,
    "stablehlo.or": np.bitwise_or,
}
#: The reductions of :data:`_SIMPLE` that are piecewise linear in their operands (all but the product): a body of
#: one of them per result passes its operands' interactions on unchanged (the second-order walk's reading).
PIECEWISE_LINEAR_REDUCERS = frozenset(fn for name, fn in _SIMPLE.items() if name != "stablehlo.multiply")


def body_fns(ctx, op, k: int):
    """:func:`simple_body` of the ``k``-operand reduction ``op``'s body, read through the bindings once per analysis
    (a reduction's index-set rule, fold, error bound and second-order term each ask, and loops re-run the op)."""
    memo = ctx.memo("simple_body")
    key = op.operation
    if key in memo:
        return memo[key]
    fns = memo[key] = simple_body(op.regions[0], k)
    return fns


def simple_body(region, k: int):
    """The NumPy ufunc of each result if result ``j`` is ``op(arg j, arg k+j)`` for a simple ``op``, else None
    (a body of ``2k`` arguments; any other is not simple)."""
    block = list(region.blocks)[0]
    bargs = list(block.arguments)
    if len(bargs) != 2 * k:
        return None
    ops = list(block.operations)
    ret = ops[-1]
    if len(ops) != k + 1 or len(list(ret.operands)) != k:
        return None
    fns = []
    for j, (bop, v) in enumerate(zip(ops[:-1], ret.operands)):
        name = bop.operation.name
        if name not in _SIMPLE or len(bop.results) != 1 or bop.results[0] != v:
            return None
        operands = list(bop.operands)
        if len(operands) != 2 or {operands[0], operands[1]} != {bargs[j], bargs[k + j]}:
            return None
        fns.append(_SIMPLE[name])
    return fns


def _elementwise_names() -> frozenset:
    from .elementwise import ELEMENTWISE

    return frozenset(ELEMENTWISE) | {"stablehlo.select", "stablehlo.clamp", "stablehlo.compare", "stablehlo.convert",
                                                    "stablehlo.constant"}


def eval_body_np(ctx, region, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Evaluate an elementwise body on whole arrays at once (each body op's fold rule broadcasts)."""
    allowed = _elementwise_names()
    block = list(region.blocks)[0]
    env = dict(zip(block.arguments, arrays))
    for bop in block.operations:
        name = bop.operation.name
        if name == "stablehlo.return":
            return [env[v] for v in bop.operands]
        if name not in allowed or len(bop.regions) or name not in FOLD_RULES:
            raise NotFoldable
        vals = []
        for v in bop.operands:
            if v in env:
                vals.append(env[v])
            else:
                c = ctx.value(v).const
                if c is None:
                    raise NotFoldable
                vals.append(np.asarray(c))
        (out,) = FOLD_RULES[name](ctx, bop, vals)
        env[bop.results[0]] = np.asarray(out)
    raise NotFoldable


def eval_body_trusted(ctx, region, values: list) -> list:
    """:func:`eval_body_np` with error bounds: ``values`` are abstract values (``const`` and ``uncertainty``
    on whole arrays, ``deps`` unused), and so are the results.  Each body op folds and its error rule bounds
    it (folding/exactness.py); an integer or boolean that hangs on an uncertain float raises ``Undecided``."""
    from ..values import AbstractValue, TensorType

    allowed = _elementwise_names()
    block = list(region.blocks)[0]
    env = dict(zip(block.arguments, values))
    for bop in block.operations:
        name = bop.operation.name
        if name == "stablehlo.return":
            return [env[v] for v in bop.operands]
        if name not in allowed or len(bop.regions) or name not in FOLD_RULES:
            raise NotFoldable
        ins = [env[v] if v in env else ctx.value(v) for v in bop.operands]
        if any(a.const is None for a in ins):
            raise NotFoldable
        (out,) = FOLD_RULES[name](ctx, bop, [np.asarray(a.const) for a in ins])
        out = np.asarray(out)
        (u,) = result_uncertainties(ERROR_RULES.get(name), ctx, bop, ins, [out])
        env[bop.results[0]] = AbstractValue(TensorType(out.shape, out.dtype), None, out, u)  # type: ignore[arg-type]
    raise NotFoldable


# ---------------------------------------------------------------- reduce
def _split(op, args):
    k = len(args) // 2
    return k, args[:k], args[k:]


@deps_rule("stablehlo.reduce", kind=EXACT,
           note="group union over the reduced dims, restricted to the operands the body reaches")
def _reduce(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§reduce: result ``j`` = ∪ over operands ``i`` in ``M*[j]`` of (group rows of input ``i`` ∪ init ``i``)."""
    k, inputs, inits = _split(op, args)
    dims = i64_list(op, "dimensions")
    rtypes = ctx.result_types(op)
    out_size = rtypes[0].size
    grouped: dict[int, Deps] = {}

    def operand_rows(i: int) -> Deps:
        if i not in grouped:
            g = reduce_dims(inputs[i].deps, inputs[i].shape, dims)
            if not inits[i].deps.is_empty:
                g = Deps.union(g, inits[i].deps.reduce_all().broadcast_row(out_size))
            grouped[i] = g
        return grouped[i]

    if k == 1 and body_fns(ctx, op, 1) is not None:
        # one operand, a one-op body (a sum, a max, a product: the commonest reduction): the general path below
        # with its 1 × 1 closure, without building it
        return [operand_rows(0) if is_differentiable(rtypes[0].dtype) else ctx.empty(out_size)]
    closure, cap, captured = body_dependence(ctx, op, k)
    captured_rows = None
    if cap.any() and any(not c.deps.is_empty for c in captured):
        captured_rows = Deps.union(*[c.deps.reduce_all() for c in captured]).broadcast_row(out_size)
    results = []
    for j, t in enumerate(rtypes):
        if not is_differentiable(t.dtype):  # an argmax's index: zero derivative, skip the grouping work
            results.append(ctx.empty(t.size))
            continue
        parts = [operand_rows(int(i)) for i in np.flatnonzero(closure[j])]
        if cap[j] and captured_rows is not None:
            parts.append(captured_rows)
        results.append(Deps.union(*parts) if parts else ctx.empty(t.size))
    return results


@fold_rule("stablehlo.reduce")
def _reduce_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    k, inputs, inits = _split(op, consts)
    dims = tuple(sorted(i64_list(op, "dimensions")))
    if any(inputs[0].shape[d] == 0 for d in dims):  # empty groups: the result is the init value
        return [np.broadcast_to(np.asarray(i).reshape(()), t.shape).copy()
                for i, t in zip(inits, ctx.result_types(op))]
    fns = body_fns(ctx, op, k)
    region = op.regions[0]
    if fns is not None:
        out = []
        for fn, x, init in zip(fns, inputs, inits):
            with np.errstate(all="ignore"):
                out.append(fn(fn.reduce(np.asarray(x), axis=dims), np.asarray(init).reshape(())))
        return out
    return _tree_fold(ctx, region, inputs, inits, dims)


def _tree_fold(ctx, region, inputs, inits, dims):
    """Pairwise tree evaluation of an elementwise body, vectorized over all groups at once."""
    nd = inputs[0].ndim
    kept = [d for d in range(nd) if d not in dims]
    out_shape = tuple(inputs[0].shape[d] for d in kept)
    g = int(np.prod([inputs[0].shape[d] for d in dims], dtype=np.int64))
    xs = [np.asarray(x).transpose(kept + list(dims)).reshape(out_shape + (g,)) for x in inputs]
    with np.errstate(all="ignore"):
        while xs[0].shape[-1] > 1:
            m = xs[0].shape[-1]
            half = m // 2
            left = [x[..., 0:2 * half:2] for x in xs]
            right = [x[..., 1:2 * half:2] for x in xs]
            combined = eval_body_np(ctx, region, left + right)
            combined = [np.broadcast_to(c, left[0].shape) for c in combined]
            if m % 2:
                combined = [np.concatenate([c, x[..., -1:]], axis=-1) for c, x in zip(combined, xs)]
            xs = combined
        init_b = [np.broadcast_to(np.asarray(i).reshape(()), out_shape) for i in inits]
        if g == 0:
            return [np.array(i) for i in init_b]
        res = eval_body_np(ctx, region, init_b + [x[..., 0] for x in xs])
    return [np.broadcast_to(r, out_shape) for r in res]


# ---------------------------------------------------------------- trust (folding/exactness.py)
#: Body ops that never round: a body made of these (argmax, logical reductions …) computes, on exact
#: operands, the same result in any order.
_NON_ROUNDING = frozenset({"stablehlo.compare", "stablehlo.select", "stablehlo.maximum", "stablehlo.minimum",
                           "stablehlo.and", "stablehlo.or", "stablehlo.xor", "stablehlo.not", "stablehlo.constant",
                           "stablehlo.return"})


def body_rounds(region) -> bool:
    """Whether a body may round a float (an op outside :data:`_NON_ROUNDING` with a float result)."""
    from ..values import tensor_type

    for block in region.blocks:
        for inner in block.operations:
            if inner.operation.name not in _NON_ROUNDING and any(
                    is_float(tensor_type(r.type).dtype) for r in inner.results):
                return True
            if any(body_rounds(r) for r in inner.regions):
                return True
    return False


def grouped_trust(ctx: RuleContext, op: Op, args, consts, k: int, reduce_groups, group_size: int) -> list:
    """Error model shared by §reduce and §reduce_window.

    ``reduce_groups(array, init, ufunc)`` reduces an operand-shaped float64 array over each result element's
    group (padding and holes hold ``init``) and combines with ``init``.  An ``add`` body makes each result a
    sum of its group (exact on one grid, else bounded for any order); ``maximum``/``minimum`` keep the
    largest bound; other bodies are trusted only when every operand and captured value is exact and the
    body never rounds."""
    inputs, inits = args[:k], args[k:]
    region = op.regions[0]
    captured = [ctx.value(v) for v in region_captures(region)]
    fns = body_fns(ctx, op, k)
    if fns is None:
        if all(a.is_exact for a in args + captured) and not body_rounds(region):
            return [finalize(c, 0.0) for c in consts]
        return untrusted(ctx, op, args + captured, consts)
    out: list = []
    for fn, x, init, c in zip(fns, inputs, inits, consts):
        exact_in = x.is_exact and init.is_exact
        if not is_float(c.dtype) or (exact_in and fn in (np.bitwise_and, np.bitwise_or)):
            if not exact_in:
                raise Undecided
            out.append(None)
            continue
        shape = x.shape
        e_x, e_init = np.broadcast_to(error_array(x), shape), float(np.asarray(error_array(init)).reshape(()))
        if fn is np.add:
            tx, ti = add_tree_of(x), add_tree_of(init)
            leaf = reduce_groups(np.broadcast_to(tx.leaf_sum, shape), float(np.reshape(ti.leaf_sum, ())), np.add)
            low = reduce_groups(np.broadcast_to(tx.low_exp, shape), float(np.reshape(ti.low_exp, ())), np.minimum)
            tree = AddTree(leaf, tx.leaves * max(group_size, 1) + ti.leaves, low)
            carried = reduce_groups(e_x, e_init, np.add)
            with np.errstate(invalid="ignore"):
                exact = sum_is_exact(tree, c.dtype) & (carried == 0)
                err = np.where(exact, 0.0, carried + sum_rounding(tree, c.dtype))
            out.append(finalize(c, err, tree))
        elif fn in (np.maximum, np.minimum) and c.dtype.kind != "c":
            err = reduce_groups(e_x, e_init, np.maximum)
            if np.any(np.asarray(c) == 0):  # ±0 in one group: the sign of the result is not certain
                xv, iv = np.asarray(x.const), np.asarray(init.const).reshape(())
                pos = reduce_groups(((xv == 0) & ~np.signbit(xv)).astype(np.float64),
                                    float((iv == 0) & ~np.signbit(iv)), np.maximum)
                neg = reduce_groups(((xv == 0) & np.signbit(xv)).astype(np.float64),
                                    float((iv == 0) & np.signbit(iv)), np.maximum)
                clash = (np.asarray(c) == 0) & (pos > 0) & (neg > 0)
                err = np.where(clash, np.maximum(err, smallest_normal(c.dtype)), err)
            out.append(finalize(c, err))
        elif fn is np.multiply and exact_in and c.dtype.kind != "c":
            out.append(finalize(c, np.where(_exact_products(x, init, c, reduce_groups), 0.0, np.inf)))
        else:  # a product of uncertain values (or a complex max): not modeled
            out.append(unknown_float(c))
    return out


def _exact_products(x, init, c, reduce_groups) -> np.ndarray:
    """Where a product of exact values is exact in any order: a zero factor among finite ones, or the
    factors' significant bits add up to at most ``p`` and every partial product stays in the normal range
    (then every sub-product is representable, so reassociation changes nothing)."""
    xv, iv = np.asarray(x.const, np.float64), float(np.asarray(init.const, np.float64).reshape(()))
    with np.errstate(all="ignore"):
        finite = reduce_groups((~np.isfinite(xv)).astype(np.float64), float(not np.isfinite(iv)), np.maximum) == 0
        zero = reduce_groups((xv == 0).astype(np.float64), float(iv == 0), np.maximum) > 0
        bits = reduce_groups(significant_bits(xv), float(significant_bits(np.asarray(iv))), np.add)
        mag = np.abs(xv)
        up = reduce_groups(np.log2(np.maximum(mag, 1.0)), float(np.log2(max(abs(iv), 1.0))), np.add)
        down = reduce_groups(np.log2(np.where(mag == 0, 1.0, np.minimum(mag, 1.0))),
                             float(np.log2(min(abs(iv), 1.0) if iv != 0 else 1.0)), np.add)
        in_range = (up < np.log2(largest_finite(c.dtype))) & (down >= np.log2(smallest_normal(c.dtype)))
        return finite & (zero | ((bits <= precision_bits(c.dtype)) & in_range))


@error_rule("stablehlo.reduce")
def _reduce_trust(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    k = len(args) // 2
    dims = tuple(sorted(i64_list(op, "dimensions")))
    shape = args[0].shape
    g = int(np.prod([shape[d] for d in dims], dtype=np.int64))

    def reduce_groups(arr, init, fn):
        if g == 0:
            return np.full(tuple(s for d, s in enumerate(shape) if d not in dims), init, np.float64)
        return fn(fn.reduce(np.asarray(arr, np.float64), axis=dims), init)

    return grouped_trust(ctx, op, args, consts, k, reduce_groups, g)

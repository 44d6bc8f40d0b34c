"""Windowed ops: §reduce_window and §select_and_scatter, the *group union* move over windows.

A window relation is a product over dimensions, so it is applied one dimension at a time.  For dimension
``d`` a small NumPy table says which operand coordinate each (output coordinate, window tap) reads:

    padded = pad(arange(n_d), fill=-1, low, high, interior=base_dilation - 1)      (the position map)
    taps[o, t] = padded[o * stride + t * window_dilation]                          (-1: padding / a hole)

The union over a window is the union over its taps in each dimension in turn (∪ over a product set =
iterated ∪), so ``pooling(S)`` costs one small move per dimension: a lazy union of ``w`` row maps when the
window is short (``w ≤ 8``: max pooling, strided convolutions' friends), one sparse product
``(I ⊗ R_d ⊗ I) @ S`` when it is long (``jnp.cumsum``'s window spans the whole axis).  Both are linear in
the nonzeros they produce.

§reduce_window.  ``results[j][o]`` reduces the window's elements of the operands result ``j`` reaches
through the body, together with their init values (which also fill the padding and the base-dilation
holes).  Which operands a body result reaches is read off the body once (``body_dependence`` of the §reduce
rule: a ``max`` body reaches its operand; a windowed argmax's value result does not reach the index
operand).  So::

    results[j][o] = ∪_{i ∈ M*[j]} ( ∪_{taps t of window o} inputs[i][t]  ∪  init_values[i] )

Exact for sum / max / min / product pooling and for the cumulative ``jnp.cumsum``/``cumprod``/``cummax``
(which lower to a ``reduce_window`` whose window spans the axis with low padding ``n − 1``): at a generic
point every window element has a nonzero partial (for max: somewhere the element is the maximum).

Choosers with known keys (a local pattern's tangent program: docs/explanation/guarantees.md, "Local patterns"). Max
pooling's
JVP carries ``(value, tangent)`` pairs through a body that keeps the pair with the larger value (``compare`` + one
``select`` per result: :func:`chooser_body`). When the values are known, result ``j`` of window ``o`` is operand
``j``'s element at the winning tap — any tap whose key may be the window's extreme (ties and keys within rounding of
it: the reduction order is unspecified). §select_and_scatter with a known operand likewise scatters each source
element to its window's candidates only.

§select_and_scatter (the gradient of max pooling).  ``result[e] = init ⊕ Σ source[w]`` over the windows
``w`` whose *selected* element is ``e``.  The selection compares operand values — a zero derivative — so
the operand contributes nothing, and since any element of a window can be selected, sound and globally
exact is: ``result[e] = init ∪ {source[w] : e ∈ window(w)}`` — the transposed window relation applied to
the source.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...ir.attrs import dense_attr, i64_list
from ...ir.helpers import region_captures
from ...lattice import Deps, Groups, group_union, relation_along, window_union
from ...lattice.core import check_nnz
from .reduction import body_dependence, body_fns, eval_body_np, grouped_trust
from .registry import EXACT, VALUE_AWARE, NotFoldable, deps_rule, error_rule, fold_rule
from .registry import RuleContext, Op, DepsResult, ErrorResult, FoldResult  # the rule contract
from ..values import AbstractValue
from .structural import pad_np


# ---------------------------------------------------------------- attributes
def _window_attrs(op, rank: int, with_dilations: bool = True):
    ones = [1] * rank
    wdims = i64_list(op, "window_dimensions")
    strides = i64_list(op, "window_strides", ones)
    base = i64_list(op, "base_dilations", ones) if with_dilations else ones
    wdil = i64_list(op, "window_dilations", ones) if with_dilations else ones
    padding = dense_attr(op, "padding")
    pad = np.zeros((rank, 2), np.int64) if padding is None else np.asarray(padding, np.int64).reshape(rank, 2)
    return wdims, strides, base, wdil, pad


def window_taps(n: int, out: int, window: int, stride: int, base_dil: int, win_dil: int, lo: int,
                hi: int) -> np.ndarray:
    """The ``(out, window)`` table of operand coordinates read along one dimension (``-1``: padding/hole); a
    table above the analysis' nonzero budget is refused before it is allocated (``jnp.cumsum`` of ``n`` elements
    reads ``n²`` taps)."""
    if out == 0 or window == 0:
        return np.zeros((out, window), np.int64)
    check_nnz(out * window, "the windows of a reduce_window")
    padded = pad_np(np.arange(n, dtype=np.int64), -1, [lo], [hi], [base_dil - 1])
    pos = np.arange(out, dtype=np.int64)[:, None] * stride + np.arange(window, dtype=np.int64)[None, :] * win_dil
    return padded[pos]


def _relation(taps: np.ndarray, n: int) -> sp.csr_array:
    """The 0/1 matrix ``R[o, i] = 1`` iff some tap of window ``o`` reads coordinate ``i``.

    A row's valid taps are strictly increasing (the padded position map is increasing and holes are -1),
    so the CSR arrays come straight out of the table: already sorted, no duplicates."""
    out, w = taps.shape
    valid = taps >= 0
    indptr = np.zeros(out + 1, np.int64)
    np.cumsum(valid.sum(axis=1), out=indptr[1:])
    m = sp.csr_array((np.ones(int(indptr[-1]), bool), taps[valid], indptr), shape=(out, n))
    m.has_sorted_indices = True
    return m


def _with_init(deps: Deps, init) -> Deps:
    if init.deps.is_empty:
        return deps
    return Deps.union(deps, init.deps.reduce_all().broadcast_row(deps.rows))


# ---------------------------------------------------------------- reduce_window
def _reduce_window_relations(op, in_shape, out_shape):
    rank = len(in_shape)
    wdims, strides, base, wdil, pad = _window_attrs(op, rank)
    return [_relation(window_taps(in_shape[d], out_shape[d], wdims[d], strides[d], base[d], wdil[d],
                                  int(pad[d, 0]), int(pad[d, 1])), in_shape[d]) for d in range(rank)]


# ---------------------------------------------------------------- choosers with known keys
#: Comparison directions of a chooser body and whether the side selected when the comparison holds is the
#: larger key (``max``) — for ``compare(dir, acc, elem)`` selecting ``acc``.
_CHOOSER_DIRECTIONS = {"GE": True, "GT": True, "LE": False, "LT": False}
#: Cap on the (windows × taps) candidate table of :func:`_chooser_candidates`.
MAX_CANDIDATE_CELLS = 10_000_000


def chooser_body(region, k: int):
    """``(key operand, takes_max)`` if the body picks one whole tuple by comparing one operand — every result
    ``j`` is ``select(p, arg j, arg k+j)`` (sides in either order) for one ``p = compare(GE|GT|LE|LT, ·, ·)``
    of ``arg i`` and ``arg k+i`` — else ``None``.  Max pooling's JVP (JAX's ``select_and_gather_add``) and a
    windowed argmax are such bodies."""
    from ...ir.attrs import enum_text

    block = list(region.blocks)[0]
    bargs = list(block.arguments)
    ops = list(block.operations)
    if len(ops) != k + 2 or ops[0].operation.name != "stablehlo.compare":
        return None
    cmp = ops[0]
    x, y = list(cmp.operands)
    direction = enum_text(cmp, "comparison_direction")
    if direction not in _CHOOSER_DIRECTIONS:
        return None
    key = next((i for i in range(k) if {x, y} == {bargs[i], bargs[k + i]}), None)
    if key is None:
        return None
    x_is_acc = x == bargs[key]
    takes = set()
    for j, (sel, v) in enumerate(zip(ops[1:-1], ops[-1].operands)):
        if sel.operation.name != "stablehlo.select" or sel.results[0] != v or sel.operands[0] != cmp.results[0]:
            return None
        a, b = sel.operands[1], sel.operands[2]
        if (a, b) == (bargs[j], bargs[k + j]):
            takes.add(True)  # the accumulator when p holds
        elif (a, b) == (bargs[k + j], bargs[j]):
            takes.add(False)
        else:
            return None
    if len(takes) != 1:
        return None
    # p = (x dir y) selects the accumulator side (takes = {True}) or the element side: a max if it keeps the
    # larger of x and y
    keeps_x = takes.pop() == x_is_acc
    return key, _CHOOSER_DIRECTIONS[direction] == keeps_x


def _chooser_candidates(op, keys, init, out_shape, takes_max: bool) -> np.ndarray | None:
    """``(windows × taps)`` table of the operand elements that may be chosen (``-1``: not), or ``None``.

    With the keys known, every backend chooses a tap whose key is the window's extreme; ties (and keys
    within their error bounds of the extreme, folding/exactness.py) may go either way in §reduce_window's
    unspecified order, so all of them are candidates; a window with a NaN key keeps every tap.  Padding and
    base-dilation holes hold ``init``'s key (no operand element; ``None``: they never win)."""
    from ..folding.exactness import error_array, is_float

    if keys.const is None or not is_float(keys.dtype) or keys.dtype.kind == "c":
        return None
    if init is not None and init.const is None:
        return None
    rank = len(out_shape)
    wsize = int(np.prod(i64_list(op, "window_dimensions"), dtype=np.int64))
    out_size = int(np.prod(out_shape, dtype=np.int64))
    if out_size * wsize > MAX_CANDIDATE_CELLS:
        return None
    axes = tuple(range(rank, 2 * rank))
    x = np.asarray(keys.const, np.float64)
    e = np.asarray(error_array(keys), np.float64)
    if init is None:  # padding never wins, and is never chosen
        x0, e0 = (-np.inf if takes_max else np.inf), 0.0
    else:
        x0 = float(np.asarray(init.const, np.float64).reshape(()))
        e0 = float(np.asarray(error_array(init), np.float64).reshape(()))
    with np.errstate(invalid="ignore", over="ignore"):
        try:
            lo = _window_view(x - e, x0 - e0, op, out_shape)
            hi = _window_view(x + e, x0 + e0, op, out_shape)
            pos = _window_view(np.arange(x.size, dtype=np.int64).reshape(x.shape), -1, op, out_shape)
        except NotFoldable:
            return None
        nan = np.isnan(lo).any(axis=axes, keepdims=True) | np.isnan(hi).any(axis=axes, keepdims=True)
        if takes_max:
            cand = hi >= np.max(lo, axis=axes, keepdims=True)
        else:
            cand = lo <= np.min(hi, axis=axes, keepdims=True)
        cand = cand | nan
    return np.where(cand & (pos >= 0), pos, -1).reshape(out_size, wsize)


def _chosen_taps(ctx: RuleContext, op: Op, inputs, inits, out_shape, k: int) -> Groups | None:
    """The candidate groups of a chooser ``reduce_window`` with known keys and something to choose (an
    operand with dependencies); ``None`` otherwise (the window union applies)."""
    if all(a.deps.is_empty for a in inputs):
        return None
    body = chooser_body(op.regions[0], k)
    if body is None or region_captures(op.regions[0]):
        return None
    key, takes_max = body
    table = _chooser_candidates(op, inputs[key], inits[key], out_shape, takes_max)
    return None if table is None else Groups.from_table(table)


@deps_rule("stablehlo.reduce_window", kind=VALUE_AWARE,
           note="per-dimension window unions (pooling, cumsum/cumprod); a chooser body with known keys: "
                "the chosen taps")
def _reduce_window(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§reduce_window: result ``j`` = ∪ over reached operands of (window union of the input ∪ its init).

    A *chooser* body (:func:`chooser_body`: max pooling's JVP carries (value, tangent) pairs and keeps the
    pair with the larger value) whose keys are known picks one tap per window: result ``j`` then unions only
    the taps that may be chosen (:func:`_chooser_candidates`) — the window's maximum, or all tied ones."""
    k = len(args) // 2
    inputs, inits = args[:k], args[k:]
    rtypes = ctx.result_types(op)
    out_size = rtypes[0].size
    chosen = _chosen_taps(ctx, op, inputs, inits, rtypes[0].shape, k)
    if chosen is not None:
        return [_with_init(group_union(a.deps, chosen), i) for a, i in zip(inputs, inits)]
    closure, cap, captured = body_dependence(ctx, op, k)
    relations = _reduce_window_relations(op, inputs[0].shape, rtypes[0].shape)
    cache: dict[int, Deps] = {}

    def operand_rows(i: int) -> Deps:
        if i not in cache:
            cache[i] = _with_init(window_union(inputs[i].deps, inputs[i].shape, relations), inits[i])
        return cache[i]

    captured_rows = None
    if cap.any() and any(not c.deps.is_empty for c in captured):
        captured_rows = Deps.union(*[c.deps.reduce_all() for c in captured]).broadcast_row(out_size)
    results = []
    for j, t in enumerate(rtypes):
        parts = [operand_rows(int(i)) for i in np.flatnonzero(closure[j])]
        if cap[j] and captured_rows is not None:
            parts.append(captured_rows)
        results.append(Deps.union(*parts) if parts else ctx.empty(t.size))
    return results


def _window_view(x: np.ndarray, fill, op, out_shape) -> np.ndarray:
    """The padded operand seen as ``out_shape + window_dimensions`` (a strided view, no copy)."""
    rank = x.ndim
    wdims, strides, base, wdil, pad = _window_attrs(op, rank)
    padded = pad_np(x, fill, [int(v) for v in pad[:, 0]], [int(v) for v in pad[:, 1]], [b - 1 for b in base])
    extent = [(w - 1) * dl + 1 for w, dl in zip(wdims, wdil)]
    if any(e > p for e, p in zip(extent, padded.shape)) or 0 in wdims:
        raise NotFoldable
    view = np.lib.stride_tricks.sliding_window_view(padded, extent)
    view = view[tuple(slice(0, o * s, s) if o else slice(0, 0) for o, s in zip(out_shape, strides))]
    return view[(Ellipsis,) + tuple(slice(None, None, dl) for dl in wdil)]


@fold_rule("stablehlo.reduce_window")
def _reduce_window_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    """Simple bodies (one add/multiply/max/min/and/or per result) reduce the window view with the ufunc;
    other elementwise bodies fold by a pairwise tree over the taps (a valid §reduce schedule)."""
    k = len(consts) // 2
    inputs, inits = consts[:k], consts[k:]
    rtypes = ctx.result_types(op)
    out_shape = rtypes[0].shape
    rank = len(out_shape)
    axes = tuple(range(rank, 2 * rank))
    views = [_window_view(np.asarray(x), np.asarray(i).reshape(()), op, out_shape) for x, i in zip(inputs, inits)]
    region = op.regions[0]
    fns = body_fns(ctx, op, k)
    with np.errstate(all="ignore"):
        if fns is not None:
            return [fn(fn.reduce(v, axis=axes), np.asarray(i).reshape(())) for fn, v, i in zip(fns, views, inits)]
        g = int(np.prod(views[0].shape[rank:], dtype=np.int64))
        xs = [v.reshape(tuple(out_shape) + (g,)) for v in views]
        while xs[0].shape[-1] > 1:
            m = xs[0].shape[-1]
            half = m // 2
            left = [x[..., 0:2 * half:2] for x in xs]
            right = [x[..., 1:2 * half:2] for x in xs]
            comb = [np.broadcast_to(c, left[0].shape) for c in eval_body_np(ctx, region, left + right)]
            if m % 2:
                comb = [np.concatenate([c, x[..., -1:]], axis=-1) for c, x in zip(comb, xs)]
            xs = comb
        init_b = [np.broadcast_to(np.asarray(i).reshape(()), out_shape) for i in inits]
        if g == 0:
            return [np.array(i) for i in init_b]
        return [np.broadcast_to(r, out_shape) for r in eval_body_np(ctx, region, init_b + [x[..., 0] for x in xs])]


# ---------------------------------------------------------------- select_and_scatter
@deps_rule("stablehlo.select_and_scatter", kind=EXACT, note="transposed window relation on the source (global pattern)")
def _select_and_scatter(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§select_and_scatter: ``result[e] = init ∪ {source[w] : e ∈ window(w)}`` (the operand only steers the
    selection: zero derivative).  Sound, and exact when the operand is unknown (any element can win)."""
    operand, source, init = args
    (t,) = ctx.result_types(op)
    rank = len(operand.shape)
    chosen = _selected_taps(op, operand, source)
    if chosen is not None:
        return [_with_init(group_union(source.deps, chosen), init)]
    wdims, strides, _, _, pad = _window_attrs(op, rank, with_dilations=False)
    deps = source.deps
    shape = list(source.shape)
    for d in range(rank):
        taps = window_taps(operand.shape[d], source.shape[d], wdims[d], strides[d], 1, 1, int(pad[d, 0]),
                           int(pad[d, 1]))
        r = _relation(taps, operand.shape[d]).T.tocsr()  # operand coordinate -> windows containing it
        r.sum_duplicates()
        r.sort_indices()
        deps = relation_along(deps, tuple(shape), d, r)
        shape[d] = operand.shape[d]
    return [_with_init(deps, init)]


def _selected_taps(op, operand, source) -> Groups | None:
    """With a known operand and a ``select`` region that is one comparison (``GE``/``GT``: the window's
    maximum; ``LE``/``LT``: its minimum), the groups ``result[e] ∪= source[w]`` for the windows ``w`` whose
    selected element may be ``e`` (:func:`_chooser_candidates`); ``None`` otherwise."""
    from ...ir.attrs import enum_text

    if source.deps.is_empty or operand.const is None or region_captures(op.regions[0]):
        return None
    block = list(op.regions[0].blocks)[0]
    ops, bargs = list(block.operations), list(block.arguments)
    if len(ops) != 2 or ops[0].operation.name != "stablehlo.compare" or ops[1].operands[0] != ops[0].results[0]:
        return None
    direction = enum_text(ops[0], "comparison_direction")
    if direction not in _CHOOSER_DIRECTIONS or len(bargs) != 2:
        return None
    x, y = list(ops[0].operands)
    if (x, y) == (bargs[0], bargs[1]):
        takes_max = _CHOOSER_DIRECTIONS[direction]  # §select_and_scatter keeps the current element when true
    elif (x, y) == (bargs[1], bargs[0]):
        takes_max = not _CHOOSER_DIRECTIONS[direction]
    else:
        return None
    table = _chooser_candidates(op, operand, None, source.shape, takes_max)
    if table is None:
        return None
    w, tap = np.nonzero(table >= 0)
    return Groups.from_pairs(rows=table[w, tap], members=w, k_out=operand.size)


__all__ = ["window_taps"]


# ---------------------------------------------------------------- trust (folding/exactness.py)
@error_rule("stablehlo.reduce_window")
def _reduce_window_trust(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§reduce_window: each result is a reduction of its window (padding and holes hold the init value)."""
    k = len(args) // 2
    out_shape = ctx.result_types(op)[0].shape
    rank = len(out_shape)
    axes = tuple(range(rank, 2 * rank))
    wdims = _window_attrs(op, rank)[0]

    def reduce_groups(arr, init, fn):
        view = _window_view(np.asarray(arr, np.float64), init, op, out_shape)
        if view.size == 0 or 0 in view.shape[rank:]:
            return np.full(out_shape, init, np.float64)
        return fn(fn.reduce(view, axis=axes), init)

    return grouped_trust(ctx, op, args, consts, k, reduce_groups, int(np.prod(wdims, dtype=np.int64)))

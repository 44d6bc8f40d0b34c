"""§gather, §scatter, §dynamic_slice, §dynamic_update_slice with full dimension numbers (and MHLO's
legacy ``torch_index_select``, as the gather XLA makes of it).

``jax.lax`` wants the index vector in the last dimension of the indices; StableHLO allows any
``index_vector_dim`` (equal to the rank: an implicit trailing 1), so the indices are transposed first.

Out-of-bounds semantics must match the module, also for the derivative:

* §gather clamps start indices.  ``mode=CLIP`` lowers to the plain gather (XLA clamps) and its transpose,
  a scatter-add, clamps explicitly — with ``PROMISE_IN_BOUNDS`` the transpose would drop the cotangent
  of a clamped window instead.
* §scatter drops out-of-bounds updates: ``mode=FILL_OR_DROP`` lowers to the plain scatter, and its
  transposes gather with the same drop semantics.
* §dynamic_slice / §dynamic_update_slice clamp their start indices: ``allow_negative_indices=False``, or
  ``lax`` would wrap negative starts Python-style.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...ir.attrs import bool_attr, i64_list
from ...analysis.folding.index_maps import GatherDims, ScatterDims
from ...analysis.rules.indexing import torch_index_select_dims
from .bodies import binary_body, captures, returns_argument
from .core import ImportContext, Op, Values, import_rule, jax_lax


def _index_last(indices: Any, ivd: int, batching_dims: Sequence[int]) -> tuple[Any, tuple[int, ...]]:
    """Move the index vector dimension of ``indices`` last; renumber the batching dims accordingly."""
    lax = jax_lax()
    rank = np.ndim(indices)
    if ivd == rank:
        return lax.expand_dims(indices, (rank,)), tuple(batching_dims)
    if ivd != rank - 1:
        perm = [d for d in range(rank) if d != ivd] + [ivd]
        indices = lax.transpose(indices, perm)
    return indices, tuple(d if d < ivd else d - 1 for d in batching_dims)


@import_rule("stablehlo.gather")
def _gather(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§gather (clamped start indices; operand/start-indices batching dims): ``lax.gather``, ``mode=CLIP``."""
    lax = jax_lax()
    operand, indices = args
    d = GatherDims.from_op(op)
    idx, sib = _index_last(indices, d.index_vector_dim, d.start_indices_batching_dims)
    dn = lax.GatherDimensionNumbers(offset_dims=d.offset_dims, collapsed_slice_dims=d.collapsed_slice_dims,
                                    start_index_map=d.start_index_map, operand_batching_dims=d.operand_batching_dims,
                                    start_indices_batching_dims=sib)
    return [lax.gather(operand, idx, dn, d.slice_sizes, indices_are_sorted=bool_attr(op, "indices_are_sorted"),
                       mode=lax.GatherScatterMode.CLIP)]


#: combining op of a scatter body -> the ``jax.lax`` scatter function
SCATTER_COMBINERS = {"stablehlo.add": "scatter_add", "stablehlo.multiply": "scatter_mul",
                     "stablehlo.maximum": "scatter_max", "stablehlo.minimum": "scatter_min"}


def _scatter_kind(ctx: ImportContext, op: Op, region: Any, j: int, n: int) -> str:
    """How result ``j`` of a scatter body combines ``(inputs…, updates…)``: ``"scatter"`` (replace) or one of
    :data:`SCATTER_COMBINERS`; anything else is refused (``jax.lax`` has no derivative for it)."""
    if captures(region):
        raise ctx.error(op, "the update computation reads values from outside its region")
    k = returns_argument(region, j)
    if k == n + j:
        return "scatter"
    b = binary_body(region, j)
    if b is not None:
        name, i1, i2, _ = b
        if name in SCATTER_COMBINERS and {i1, i2} == {j, n + j}:
            return SCATTER_COMBINERS[name]
        if name in ("stablehlo.or", "stablehlo.and") and {i1, i2} == {j, n + j}:
            return "bool_" + name.split(".")[1]
    raise ctx.error(op, "the update computation is not a replacement or one of add, multiply, maximum, "
                        "minimum of the current value and the update")


@import_rule("stablehlo.scatter")
def _scatter(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§scatter (out-of-bounds updates dropped; replace or add / multiply / max / min bodies; a variadic scatter
    whose body treats each operand on its own becomes one scatter per operand)."""
    lax = jax_lax()
    n = (len(args) - 1) // 2
    inputs, indices, updates = args[:n], args[n], args[n + 1:]
    d = ScatterDims.from_op(op)
    idx, sib = _index_last(indices, d.index_vector_dim, d.scatter_indices_batching_dims)
    dn = lax.ScatterDimensionNumbers(update_window_dims=d.update_window_dims,
                                     inserted_window_dims=d.inserted_window_dims,
                                     scatter_dims_to_operand_dims=d.scatter_dims_to_operand_dims,
                                     operand_batching_dims=d.input_batching_dims,
                                     scatter_indices_batching_dims=sib)
    region = op.regions[0]
    out = []
    for j in range(n):
        kind = _scatter_kind(ctx, op, region, j, n)
        x, u = inputs[j], updates[j]
        if kind.startswith("bool_"):  # booleans: max/add are OR, min/multiply AND
            kind = "scatter_max" if kind == "bool_or" else "scatter_min"
            x8 = lax.convert_element_type(x, np.uint8)
            u8 = lax.convert_element_type(u, np.uint8)
            r = getattr(lax, kind)(x8, idx, u8, dn, indices_are_sorted=bool_attr(op, "indices_are_sorted"),
                                   unique_indices=bool_attr(op, "unique_indices"),
                                   mode=lax.GatherScatterMode.FILL_OR_DROP)
            out.append(lax.convert_element_type(r, np.bool_))
            continue
        out.append(getattr(lax, kind)(x, idx, u, dn, indices_are_sorted=bool_attr(op, "indices_are_sorted"),
                                      unique_indices=bool_attr(op, "unique_indices"),
                                      mode=lax.GatherScatterMode.FILL_OR_DROP))
    return out


@import_rule("stablehlo.dynamic_slice")
def _dynamic_slice(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§dynamic_slice (start indices clamped into range)."""
    x, *starts = args
    return [jax_lax().dynamic_slice(x, starts, tuple(i64_list(op, "slice_sizes")), allow_negative_indices=False)]


@import_rule("stablehlo.dynamic_update_slice")
def _dynamic_update_slice(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§dynamic_update_slice (start indices clamped into range)."""
    x, upd, *starts = args
    return [jax_lax().dynamic_update_slice(x, upd, starts, allow_negative_indices=False)]


@import_rule("stablehlo.torch_index_select")
def _torch_index_select(ctx: ImportContext, op: Op, args: Values) -> Values:
    """MHLO's legacy ``torch_index_select`` as XLA's ``TorchIndexSelect`` computes it: a ``lax.gather`` of
    one-element slices along ``dim``, the ``batch_dims`` leading dims as gather batching dims, ``mode=CLIP``
    (XLA clamps; it converts 64-bit indices to ``u32`` first, so a negative one reads the last element)."""
    lax = jax_lax()
    operand, index = args
    (t,) = ctx.result_types(op)
    shape, ishape = tuple(np.shape(operand)), tuple(np.shape(index))
    dim, batch = torch_index_select_dims(op, shape, ishape, t.shape, np.dtype(index.dtype), ctx.location(op))
    if np.dtype(index.dtype).itemsize == 8 and shape[dim] < 2**32 - 1:
        index = lax.convert_element_type(index, np.uint32)
        index = lax.min(index, np.uint32(max(shape[dim] - 1, 0)))
    q = len(ishape)
    offset = tuple(i if i < dim else i + q - batch - 1 for i in range(len(shape)) if i >= batch and i != dim)
    dn = lax.GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=(dim,), start_index_map=(dim,),
                                    operand_batching_dims=tuple(range(batch)),
                                    start_indices_batching_dims=tuple(range(batch)))
    sizes = tuple(min(s, 1) if i < batch or i == dim else s for i, s in enumerate(shape))
    return [lax.gather(operand, lax.expand_dims(index, (q,)), dn, sizes, mode=lax.GatherScatterMode.CLIP)]

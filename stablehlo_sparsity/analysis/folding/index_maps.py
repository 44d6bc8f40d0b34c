"""NumPy index maps of the indexing ops (§gather, §scatter, §dynamic_slice, §dynamic_update_slice).

Each function turns the dimension numbers of an op and its *known* start indices into flat element indices,
vectorized over every element (loops run over dimensions only).  The same maps serve two purposes, so the
index-set rules and the fold rules cannot disagree:

* the index-set rule moves rows of the lattice by the map (``Deps.gather_rows`` / a group union);
* the fold rule moves the values of a constant operand by the same map.

Semantics mirrored exactly:

* §gather clamps each start index into ``[0, dim - slice_size]``;
* §dynamic_slice and §dynamic_update_slice clamp their start indices the same way;
* §scatter does **not** clamp: an update element whose result index is out of bounds is dropped.  The spec
  decides per element; XLA drops a whole update *window* when any part of it is out of bounds.  Both are
  reported (:class:`ScatterTargets`), so a rule can add dependencies under the larger set and remove old
  ones only under the smaller set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...ir.helpers import num_elements

__all__ = [
    "GatherDims",
    "ScatterDims",
    "ScatterTargets",
    "row_major_strides",
    "gather_index_map",
    "scatter_targets",
    "dynamic_slice_index_map",
    "clamp_starts",
    "window_union_matrix",
    "box_matrix",
]


def row_major_strides(shape) -> np.ndarray:
    """Element strides of a row-major array of this shape."""
    shape = [int(s) for s in shape]
    strides = np.ones(len(shape), np.int64)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def _axis_coord(total: int, shape, axis: int) -> np.ndarray:
    """Coordinate along ``axis`` of every element ``0..total-1`` of a row-major array of ``shape``."""
    inner = num_elements(shape[axis + 1:])
    return (np.arange(total, dtype=np.int64) // inner) % int(shape[axis])


def _indices_as_matrix(indices: np.ndarray, index_vector_dim: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """Start indices as a ``(batch, k)`` int64 matrix and the batch shape (``index_vector_dim`` removed)."""
    idx = np.asarray(indices)
    if idx.dtype.kind not in "iub":
        raise TypeError("start indices must be integers")
    if idx.dtype.kind == "u" and idx.dtype.itemsize == 8:
        # Huge unsigned indices clamp (gather) or drop (scatter) anyway; keep them out of int64 overflow.
        idx = np.minimum(idx, np.uint64(2**62))
    idx = idx.astype(np.int64)
    if index_vector_dim == idx.ndim:
        idx = idx[..., None]
    else:
        idx = np.moveaxis(idx, index_vector_dim, -1)
    batch_shape = tuple(idx.shape[:-1])
    return idx.reshape(num_elements(batch_shape), idx.shape[-1]), batch_shape


def _to_layout(arr_bw: np.ndarray, batch_shape, window_shape, window_dims, rank: int) -> np.ndarray:
    """A ``(batch, window)`` array laid out as the op's result/updates: ``window_dims[j]`` holds window
    axis ``j``; the other axes hold the batch axes in order."""
    arr = arr_bw.reshape(tuple(batch_shape) + tuple(window_shape))
    nb = len(batch_shape)
    batch_axes = [r for r in range(rank) if r not in window_dims]
    perm = [nb + list(window_dims).index(r) if r in window_dims else batch_axes.index(r) for r in range(rank)]
    return np.transpose(arr, perm)


# ====================================================================== gather
@dataclass(frozen=True)
class GatherDims:
    """§gather dimension numbers plus ``slice_sizes``."""

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...]
    start_indices_batching_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    index_vector_dim: int
    slice_sizes: tuple[int, ...]

    @classmethod
    def from_op(cls, op) -> "GatherDims":
        from ...ir.attrs import gather_dimension_numbers, i64_list

        dn = gather_dimension_numbers(op)
        return cls(tuple(dn.offset_dims), tuple(dn.collapsed_slice_dims), tuple(dn.operand_batching_dims),
                   tuple(dn.start_indices_batching_dims), tuple(dn.start_index_map), int(dn.index_vector_dim),
                   tuple(i64_list(op, "slice_sizes")))

    def offset_operand_dims(self, rank: int) -> list[int]:
        """Operand dims that appear as offset dims of the result (in order)."""
        drop = set(self.collapsed_slice_dims) | set(self.operand_batching_dims)
        return [d for d in range(rank) if d not in drop]


def gather_index_map(operand_shape, indices: np.ndarray, dims: GatherDims, result_shape=None) -> np.ndarray:
    """§gather as an index map: ``result[i] = operand.flat[map[i]]`` (start indices clamped).

    ``result_shape`` (if given) is checked against the shape the dimension numbers imply.
    """
    operand_shape = tuple(int(s) for s in operand_shape)
    rank = len(operand_shape)
    strides = row_major_strides(operand_shape)
    starts, batch_shape = _indices_as_matrix(indices, dims.index_vector_dim)
    nbatch = starts.shape[0]
    if starts.shape[1] != len(dims.start_index_map):
        raise ValueError("index vector length does not match start_index_map")
    flat_start = np.zeros(nbatch, np.int64)
    for k, d in enumerate(dims.start_index_map):
        hi = operand_shape[d] - dims.slice_sizes[d]
        flat_start += np.clip(starts[:, k], 0, hi) * strides[d]
    for od, sd in zip(dims.operand_batching_dims, dims.start_indices_batching_dims):
        axis = sd if sd < dims.index_vector_dim else sd - 1
        flat_start += _axis_coord(nbatch, batch_shape, axis) * strides[od]
    off_dims = dims.offset_operand_dims(rank)
    window_shape = tuple(dims.slice_sizes[d] for d in off_dims)
    flat_off = np.zeros(window_shape, np.int64)
    for j, d in enumerate(off_dims):
        shape = [1] * len(window_shape)
        shape[j] = window_shape[j]
        flat_off = flat_off + np.arange(window_shape[j], dtype=np.int64).reshape(shape) * strides[d]
    flat = flat_start[:, None] + flat_off.reshape(1, -1)
    out = _to_layout(flat, batch_shape, window_shape, dims.offset_dims, len(batch_shape) + len(window_shape))
    if result_shape is not None and tuple(out.shape) != tuple(result_shape):
        raise ValueError(f"gather result shape {tuple(result_shape)} does not match the dimension numbers "
                         f"({tuple(out.shape)})")
    return out


# ====================================================================== scatter
@dataclass(frozen=True)
class ScatterDims:
    """§scatter dimension numbers."""

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    input_batching_dims: tuple[int, ...]
    scatter_indices_batching_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    index_vector_dim: int

    @classmethod
    def from_op(cls, op) -> "ScatterDims":
        from ...ir.attrs import scatter_dimension_numbers

        dn = scatter_dimension_numbers(op)
        return cls(tuple(dn.update_window_dims), tuple(dn.inserted_window_dims), tuple(dn.input_batching_dims),
                   tuple(dn.scatter_indices_batching_dims), tuple(dn.scattered_dims_to_operand_dims),
                   int(dn.index_vector_dim))

    def window_input_dims(self, rank: int) -> list[int]:
        """Input dims addressed by the update window dims (in order)."""
        drop = set(self.inserted_window_dims) | set(self.input_batching_dims)
        return [d for d in range(rank) if d not in drop]


@dataclass(frozen=True)
class ScatterTargets:
    """Where each update element lands (in the updates' own layout, flattened).

    target: flat result index, ``-1`` where the spec drops the element (its result index is out of bounds).
    certain: the element is written on every implementation: in bounds *and* its whole update window is
        in bounds (XLA drops a window that does not fit).
    """

    target: np.ndarray
    certain: np.ndarray

    def group_matrix(self, k_result: int) -> sp.csr_array:
        """The ``(k_result, k_updates)`` 0/1 matrix ``R[target[u], u] = 1``."""
        valid = self.target >= 0
        u = np.nonzero(valid)[0]
        return sp.csr_array((np.ones(len(u), bool), (self.target[valid], u)),
                            shape=(k_result, len(self.target)))

    def written(self, k_result: int, certain: bool = False) -> np.ndarray:
        """Boolean mask of the result elements that may be (``certain``: are surely) written."""
        t = self.target[self.certain] if certain else self.target[self.target >= 0]
        out = np.zeros(k_result, bool)
        out[t] = True
        return out

    def inverse(self, k_result: int) -> np.ndarray | None:
        """``inv[p] = u`` when at most one update element lands on each result element, else ``None``."""
        valid = self.target >= 0
        t = self.target[valid]
        counts = np.bincount(t, minlength=k_result)
        if len(counts) and np.max(counts, initial=0) > 1:
            return None
        inv = np.full(k_result, -1, np.int64)
        inv[t] = np.nonzero(valid)[0]
        return inv


def scatter_targets(input_shape, indices: np.ndarray, updates_shape, dims: ScatterDims,
                    free_dims=()) -> ScatterTargets:
    """§scatter as an index map from update elements to result elements (no clamping; out-of-bounds drop).

    ``free_dims``: input dims whose coordinate is pinned to 0 and never checked (used when the start indices
    are unknown and the input has been collapsed to size 1 along the scattered dims).
    """
    input_shape = tuple(int(s) for s in input_shape)
    updates_shape = tuple(int(s) for s in updates_shape)
    rank = len(input_shape)
    strides = row_major_strides(input_shape)
    starts, batch_shape = _indices_as_matrix(indices, dims.index_vector_dim)
    nbatch = starts.shape[0]
    if starts.shape[1] != len(dims.scatter_dims_to_operand_dims):
        raise ValueError("index vector length does not match scatter_dims_to_operand_dims")
    scatter_axes = [d for d in range(len(updates_shape)) if d not in dims.update_window_dims]
    if tuple(updates_shape[d] for d in scatter_axes) != tuple(batch_shape):
        raise ValueError("updates shape does not match the scatter indices")
    window_shape = tuple(updates_shape[d] for d in dims.update_window_dims)
    win_dims = dims.window_input_dims(rank)
    if len(win_dims) != len(window_shape):
        raise ValueError("update_window_dims do not match the input rank")
    nwin = num_elements(window_shape)
    free = set(free_dims)

    # Per input dim: the start coordinate of each batch entry (B,) and the window offset of each window entry.
    start_coord = {d: np.zeros(nbatch, np.int64) for d in range(rank)}
    for k, d in enumerate(dims.scatter_dims_to_operand_dims):
        start_coord[d] = start_coord[d] + starts[:, k]
    for idim, sd in zip(dims.input_batching_dims, dims.scatter_indices_batching_dims):
        axis = sd if sd < dims.index_vector_dim else sd - 1
        start_coord[idim] = start_coord[idim] + _axis_coord(nbatch, batch_shape, axis)
    extent = {d: 1 for d in range(rank)}
    win_coord = {d: np.zeros(nwin, np.int64) for d in range(rank)}
    for j, d in enumerate(win_dims):
        extent[d] = window_shape[j]
        win_coord[d] = _axis_coord(nwin, window_shape, j)

    flat = np.zeros((nbatch, nwin), np.int64)
    valid = np.ones((nbatch, nwin), bool)
    window_ok = np.ones(nbatch, bool)
    for d in range(rank):
        if d in free:
            continue
        c = start_coord[d][:, None] + win_coord[d][None, :]
        valid &= (c >= 0) & (c < input_shape[d])
        window_ok &= (start_coord[d] >= 0) & (start_coord[d] + extent[d] <= input_shape[d])
        flat += c * strides[d]
    target = np.where(valid, flat, -1)
    certain = valid & window_ok[:, None]
    urank = len(updates_shape)
    target = _to_layout(target, batch_shape, window_shape, dims.update_window_dims, urank).ravel()
    certain = _to_layout(certain, batch_shape, window_shape, dims.update_window_dims, urank).ravel()
    return ScatterTargets(np.ascontiguousarray(target), np.ascontiguousarray(certain))


# ====================================================================== dynamic_slice / dynamic_update_slice
def clamp_starts(starts, operand_shape, sizes) -> list[int]:
    """§dynamic_slice / §dynamic_update_slice: start indices clamped into ``[0, dim - size]``."""
    out = []
    for s, dim, size in zip(starts, operand_shape, sizes):
        s = int(np.asarray(s).reshape(()))
        out.append(min(max(s, 0), int(dim) - int(size)))
    return out


def dynamic_slice_index_map(operand_shape, starts, sizes) -> np.ndarray:
    """Flat operand index of every element of a slice of ``sizes`` at (already clamped) ``starts``."""
    strides = row_major_strides(operand_shape)
    flat = np.zeros(tuple(int(s) for s in sizes), np.int64)
    for d, (s, size) in enumerate(zip(starts, sizes)):
        shape = [1] * len(sizes)
        shape[d] = int(size)
        flat = flat + (np.arange(int(size), dtype=np.int64) + int(s)).reshape(shape) * strides[d]
    return flat


# ====================================================================== group matrices for unknown starts
def _kron_all(factors) -> sp.csr_array:
    """Kronecker product of per-dimension factors (row-major element order), merging identity runs."""
    merged: list = []
    for f in factors:
        if isinstance(f, int) and merged and isinstance(merged[-1], int):
            merged[-1] *= f  # I_a ⊗ I_b = I_ab
        else:
            merged.append(f)
    out = None
    for f in merged:
        m = sp.identity(f, dtype=bool, format="csr") if isinstance(f, int) else f
        out = m if out is None else sp.kron(out, m, format="csr")
    if out is None:
        out = sp.identity(1, dtype=bool, format="csr")
    return sp.csr_array(out)


def _band(rows: int, cols: int, lo: np.ndarray, width: int) -> sp.csr_array:
    """Row ``r`` covers columns ``lo[r] .. lo[r] + width - 1`` (clipped to ``[0, cols)``)."""
    c = lo[:, None] + np.arange(width, dtype=np.int64)[None, :]
    ok = (c >= 0) & (c < cols)
    r = np.broadcast_to(np.arange(rows, dtype=np.int64)[:, None], c.shape)
    return sp.csr_array((np.ones(int(ok.sum()), bool), (r[ok], c[ok])), shape=(rows, cols))


def window_union_matrix(shape, sizes, dims, ranges=None) -> sp.csr_array:
    """Group matrix of "a slice of ``sizes[d]`` at an unknown clamped start" along each of ``dims``.

    Along such a dim, output coordinate ``o`` may read any input coordinate in ``[o + a, o + b]`` (and only
    those), where ``(a, b) = ranges[d]`` bounds the clamped start (default: every start, ``(0, dim - size)``);
    other dims keep their coordinate.  Shape: ``(prod(out_shape), prod(shape))`` where
    ``out_shape[d] = sizes[d]`` for ``d in dims`` and ``shape[d]`` otherwise.
    """
    ranges = ranges or {}
    factors = []
    for d, dim in enumerate(shape):
        dim = int(dim)
        if d in dims:
            size = int(sizes[d])
            a, b = ranges.get(d, (0, dim - size))
            factors.append(_band(size, dim, np.arange(size, dtype=np.int64) + a, b - a + 1))
        else:
            factors.append(dim)
    return _kron_all(factors)


def box_matrix(operand_shape, update_shape, starts) -> sp.csr_array:
    """§dynamic_update_slice group matrix ``(operand elements × update elements)``.

    ``starts[d]`` is a clamped start, a range ``(a, b)`` of clamped starts, or ``None`` (unknown: every
    clamped start).  Operand coordinate ``p`` may receive update coordinates ``[p - b, p - a]``.
    """
    factors = []
    for dim, size, s in zip(operand_shape, update_shape, starts):
        dim, size = int(dim), int(size)
        p = np.arange(dim, dtype=np.int64)
        a, b = (0, dim - size) if s is None else ((int(s), int(s)) if not isinstance(s, tuple) else s)
        factors.append(_band(dim, size, p - b, b - a + 1))
    return _kron_all(factors)

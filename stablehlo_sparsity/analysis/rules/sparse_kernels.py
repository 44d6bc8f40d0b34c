"""Sparse-matrix kernels of ``jax.experimental.sparse`` as ``stablehlo.custom_call`` targets (§custom_call).

JAX lowers products of its sparse arrays to plain gathers and scatters (BCOO everywhere, BCSR on accelerators by
default), except for these kernels, whose semantics are jaxlib's (``jaxlib/cpu/sparse_kernels.cc``,
``jaxlib/gpu/sparse_kernels.cc``; operand order from ``jax/experimental/sparse/_lowerings.py``):

* ``cpu_csr_sparse_dense_ffi`` — a ``BCSR`` (or ``CSR``) matrix times a dense vector or matrix on CPU (Eigen):
  operands ``(data, indptr, indices, rhs)``, one result; ``rows`` is the result's leading dim, the stored value
  ``k`` of row ``i`` (``indptr[i] ≤ k < indptr[i+1]``) sits in column ``indices[k]``;
* ``{cu,hip}sparse_csr_matvec_ffi`` / ``_matmat_ffi`` — the same product with cuSPARSE / hipSPARSE SpMV / SpMM
  (``BCSR`` with ``jax_bcoo_cusparse_lowering``, the legacy ``sparse.CSR``): operands ``(data, indices,
  indptr, rhs)``, results ``(product, workspace)``;
* ``{cu,hip}sparse_coo_matvec_ffi`` / ``_matmat_ffi`` — COO SpMV / SpMM (``BCOO`` with
  ``jax_bcoo_cusparse_lowering``, the legacy ``sparse.COO``): operands ``(data, row, col, rhs)``;
* ``{cu,hip}sparse_{csr,coo}_todense_ffi`` — ``(data, indices, indptr)`` / ``(data, row, col)`` to a dense
  matrix (duplicates add up).

The GPU kernels may apply ``Aᵀ`` (``op(A)``, e.g. ``M.T @ x`` of a ``BCOO``): that flag and the matrix's
``rows × cols`` live only in the call's ``opaque`` descriptor (``backend_config``), the packed C structs of
``jaxlib/gpu/sparse_kernels.h`` (:func:`gpu_sparse_descriptor`).

**The rule.**  With ``(out_k, in_k) = (row_k, col_k)`` — or ``(col_k, row_k)`` for ``Aᵀ`` — a product is
``y[i, c] = Σ_{k : out_k = i} data[k] · x[in_k, c]``, so ``y[i, c]`` depends on ``data[k]`` and on
``x[in_k, c]`` for every stored value ``k`` of its row, and on nothing else: exact at generic points when the
indices are constants (read through the constant lattice, as gather and scatter read theirs).  A stored value
whose ``data[k]`` is a known exact zero adds no dependence on ``x``; a known exact zero ``x[in_k, c]`` adds none
on ``data[k]`` (as §dot_general with a known operand).  ``todense`` puts ``data[k]`` at ``(row_k, col_k)``.

Indices that are not constants (passed as arguments) are conservative, with one warning per call: unknown rows
(``indptr`` / ``row``) — any stored value may land in any row of its column ``c``; unknown columns
(``indices`` / ``col``) — a stored value may read any row of ``x``.  So are indices outside the matrix (the
kernels' behaviour is undefined there), a decreasing ``indptr``, a descriptor that does not fit the shapes (both
``A`` and ``Aᵀ`` are taken) and a buffer in a layout other than row-major (every element then depends on
every operand element).  Columns ``c`` of a matrix right-hand side never mix.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

import numpy as np

from ...lattice import Deps, Groups, group_union
from ...ir.attrs import attr_text, string_attr
from ..folding.exactness import maybe_nonzero
from .registry import VALUE_AWARE
from .registry import RuleContext, Op, DepsResult  # the rule contract
from ..values import AbstractValue

__all__ = ["cpu_csr_product", "gpu_csr_product", "gpu_coo_product", "gpu_csr_todense", "gpu_coo_todense",
           "gpu_sparse_descriptor", "GpuSparseDescriptor", "product_readings", "csr_entries",
           "row_major_layouts"]


# ====================================================================== the descriptor of the GPU kernels
@dataclass(frozen=True)
class GpuSparseDescriptor:
    """What the packed ``SparseMatDescriptor`` (and, for products, the trailing operation) of a cuSPARSE /
    hipSPARSE call says: the matrix's shape, its stored-value count, and whether ``op(A)`` is ``Aᵀ``."""

    rows: int
    cols: int
    nnz: int
    transpose: bool | None  # None: not a product's descriptor


#: ``gpusparseOperation_t``: cuSPARSE's ``NON_TRANSPOSE``/``TRANSPOSE``/``CONJUGATE_TRANSPOSE`` are 0/1/2,
#: hipSPARSE's 111/112/113
_NON_TRANSPOSE = {0, 111}
_TRANSPOSE = {1, 2, 112, 113}
#: bytes of the packed structs: ``SparseMatDescriptor`` (7 × int32), then ``x``/``y`` ``DenseVecDescriptor``
#: (2 × int32 each) or ``B``/``C`` ``DenseMatDescriptor`` (5 × int32 each), then the operation (int32)
_SPARSE_MAT, _PRODUCT_SIZES = 28, (28 + 16 + 4, 28 + 40 + 4)
_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2})|\\\\")


def _unescape(text: str) -> bytes:
    """The bytes of an MLIR string literal's body as printed (``\\XX`` hex escapes, ``\\\\``)."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else "\\", text).encode("latin-1")


def gpu_sparse_descriptor(backend_config: str) -> GpuSparseDescriptor | None:
    """Decode the ``opaque`` descriptor of a cuSPARSE / hipSPARSE call from its printed ``mhlo.backend_config``
    (``None`` when there is none or it is not one of jaxlib's ``SparseMatDescriptor``-led structs)."""
    found = re.search(r'opaque = "((?:[^"\\]|\\.)*)"', backend_config)
    if found is None:
        return None
    blob = _unescape(found.group(1))
    if len(blob) < _SPARSE_MAT:
        return None
    _, _, rows, cols, nnz, _, _ = struct.unpack_from("<7i", blob)
    transpose = None
    if len(blob) in _PRODUCT_SIZES:
        (operation,) = struct.unpack_from("<i", blob, len(blob) - 4)
        if operation not in _NON_TRANSPOSE | _TRANSPOSE:
            return None
        transpose = operation in _TRANSPOSE
    if min(rows, cols, nnz) < 0:
        return None
    return GpuSparseDescriptor(rows, cols, nnz, transpose)


def product_readings(backend_config: str, csr: bool, ptr_size: int, out_rows: int, in_rows: int) -> list[bool]:
    """Whether ``op(A)`` of a GPU product is ``Aᵀ``: the ``transpose`` attribute of an ``_ffi_v2`` kernel (empty
    when it does not fit), the descriptor's answer when it fits the operands, else every reading that does (a
    CSR row pointer has ``rows + 1`` entries; ``y`` has ``rows`` elements for ``A``, ``cols`` for ``Aᵀ``).  Empty
    when none fits."""
    fit = [tr for tr in (False, True) if not csr or ptr_size == (in_rows if tr else out_rows) + 1]
    said = re.search(r"\btranspose = (true|false)\b", backend_config)
    if said is not None and "opaque" not in backend_config:  # the _ffi_v2 kernels (JAX 0.12.1): an attribute
        return [tr for tr in fit if tr == (said.group(1) == "true")]
    d = gpu_sparse_descriptor(backend_config)
    if d is not None and d.transpose is not None:
        agreed = [tr for tr in fit if tr == d.transpose and (d.rows, d.cols) == ((in_rows, out_rows) if tr
                                                                                 else (out_rows, in_rows))]
        if agreed:
            return agreed
    return fit


# ====================================================================== stored values
@dataclass(frozen=True)
class Entries:
    """The stored values of a sparse matrix as ``(value, row, col)`` triples; ``row`` / ``col`` are ``None`` where
    the indices are unknown (any row / any column)."""

    value: np.ndarray
    row: np.ndarray | None
    col: np.ndarray | None

    def transposed(self) -> "Entries":
        return Entries(self.value, self.col, self.row)


def _known_index(av: AbstractValue, bound: int) -> np.ndarray | None:
    """A constant integer index operand inside ``[0, bound)`` (flattened), else ``None`` (unknown, or out of range
    somewhere: the kernels' behaviour is undefined there)."""
    if av.const is None:
        return None
    idx = np.asarray(av.const).astype(np.int64).ravel()
    return idx if idx.size == 0 or (np.min(idx) >= 0 and np.max(idx) < bound) else None


def csr_entries(indptr: np.ndarray | None, nnz: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``(value, row)`` of every stored value of a CSR row pointer: the value ``k`` with
    ``indptr[i] ≤ k < indptr[i+1]`` is in row ``i``; values outside ``[indptr[0], indptr[-1])`` are in no row.
    An unknown row pointer, or one outside ``[0, nnz]`` or decreasing, gives every value and ``None`` (any
    row)."""
    every = np.arange(nnz, dtype=np.int64)
    if indptr is None or indptr.size == 0:
        return every, None
    ptr = np.asarray(indptr).astype(np.int64).ravel()
    if np.min(ptr) < 0 or np.max(ptr) > nnz or np.any(np.diff(ptr) < 0):
        return every, None
    lengths = np.diff(ptr)
    rows = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    return np.arange(ptr[0], ptr[-1], dtype=np.int64), rows


def _csr(data: AbstractValue, indices: AbstractValue, indptr: AbstractValue, cols: int) -> Entries:
    value, row = csr_entries(indptr.const, data.size)
    col = _known_index(indices, cols)
    return Entries(value, row, None if col is None else col[value])


def _coo(data: AbstractValue, row: AbstractValue, col: AbstractValue, rows: int, cols: int) -> Entries:
    r, c = _known_index(row, rows), _known_index(col, cols)
    return Entries(np.arange(data.size, dtype=np.int64), r, c)


# ====================================================================== the product and the densification
def row_major_layouts(op: Op) -> bool:
    """Whether every ``operand_layouts`` / ``result_layouts`` entry (when present) is the default row-major one:
    the layouts the kernels read their buffers in (JAX declares no other)."""
    for name in ("operand_layouts", "result_layouts"):
        for layout in re.findall(r"dense<([^>]*)>", attr_text(op, name)):
            dims = [int(d) for d in re.findall(r"-?\d+", layout)]
            if dims != sorted(dims, reverse=True):
                return False
    return True


def _union_into(src: Deps, dest: np.ndarray | None, lane: np.ndarray, members: np.ndarray, n_dest: int,
                lanes: int) -> Deps:
    """Rows ``(i, c)`` (``i·lanes + c``) of an ``n_dest × lanes`` result: the union of the rows ``members[p]`` of
    ``src`` over the pairs ``p`` with ``dest[p] = i`` and ``lane[p] = c`` (``dest`` ``None``: every ``i``)."""
    if dest is None:
        per_lane = group_union(src, Groups.from_pairs(lane, members, lanes))
        return per_lane.gather_rows(np.tile(np.arange(lanes, dtype=np.int64), n_dest))
    return group_union(src, Groups.from_pairs(dest * lanes + lane, members, n_dest * lanes))


def _product(ctx: RuleContext, op: Op, e: Entries, data: AbstractValue, x: AbstractValue, out_rows: int) -> Deps:
    """``y[i, c] = Σ_{k : e.row = i} data[k] · x[e.col, c]`` (see the module docstring): the terms of the stored
    values (:func:`_data_terms`) and of ``x`` (:func:`_rhs_terms`), over the pairs of a stored entry ``p`` and a
    lane ``c`` (a column of ``x``)."""
    lanes = x.size // x.shape[0] if x.shape and x.shape[0] else 1
    size = out_rows * lanes
    if not row_major_layouts(op):  # the kernel would read the buffers in another order: anything goes
        return _every_product(ctx, op, data, x, size)
    p = np.repeat(np.arange(e.value.size, dtype=np.int64), lanes)
    c = np.tile(np.arange(lanes, dtype=np.int64), e.value.size)
    parts = []
    if not data.deps.is_empty and p.size:
        parts.append(_data_terms(e, data, x, p, c, out_rows, lanes))
    if not x.deps.is_empty and p.size:
        parts.extend(_rhs_terms(e, data, x, p, c, out_rows, lanes))
    if e.row is None or e.col is None:
        _warn_unknown(ctx, op)
    return Deps.union(*parts) if parts else ctx.empty(size)


def _every_product(ctx: RuleContext, op: Op, data: AbstractValue, x: AbstractValue, size: int) -> Deps:
    """Every element of the product depends on every operand element (a buffer in another layout)."""
    _warn(ctx, op, "a buffer in another layout than row-major: every element depends on every operand "
                   "element (conservative)")
    every = [a.deps.reduce_all() for a in (data, x) if not a.deps.is_empty]
    return Deps.union(*every).broadcast_row(size) if every else ctx.empty(size)


def _data_terms(e: Entries, data: AbstractValue, x: AbstractValue, p: np.ndarray, c: np.ndarray, out_rows: int,
                lanes: int) -> Deps:
    """Row ``(i, c)`` reads ``data[k]`` for each stored value ``k`` of row ``i`` — unless ``x[col_k, c]`` is a
    known exact zero, which hides it."""
    k = e.value[p]
    live = np.ones(k.size, bool)
    if x.const is not None and e.col is not None:
        live = maybe_nonzero(x).reshape(-1, lanes)[e.col[p], c]
    dest = None if e.row is None else e.row[p][live]
    return _union_into(data.deps, dest, c[live], k[live], out_rows, lanes)


def _rhs_terms(e: Entries, data: AbstractValue, x: AbstractValue, p: np.ndarray, c: np.ndarray, out_rows: int,
               lanes: int) -> list[Deps]:
    """Row ``(i, c)`` reads ``x[col_k, c]`` for each stored value ``k`` of row ``i`` that is not a known exact
    zero — any row of ``x`` in lane ``c`` when the columns are unknown."""
    k = e.value[p]
    live = maybe_nonzero(data).ravel()[k] if data.const is not None else np.ones(k.size, bool)
    dest = None if e.row is None else e.row[p][live]
    if e.col is not None:
        return [_union_into(x.deps, dest, c[live], e.col[p][live] * lanes + c[live], out_rows, lanes)]
    if not live.any():
        return []
    column = group_union(x.deps, Groups.from_pairs(np.tile(np.arange(lanes), x.shape[0]), np.arange(x.size), lanes))
    rows_hit = np.zeros(out_rows, bool) if dest is not None else np.ones(out_rows, bool)
    if dest is not None:
        rows_hit[dest] = True
    where = np.where(np.repeat(rows_hit, lanes), np.tile(np.arange(lanes), out_rows), -1)
    return [column.gather_rows(where)]


def _warn_unknown(ctx: RuleContext, op: Op) -> None:
    _warn(ctx, op, "sparse-matrix indices are not known constants (or are out of range): each stored value may sit "
                   "in any row or column of the matrix (conservative)")


def _warn(ctx: RuleContext, op: Op, why: str) -> None:
    """One warning per call and reason (a loop body runs its calls many times)."""
    seen = ctx.memo("sparse kernel warnings")
    key = (ctx.location(op), why)
    if key not in seen:
        seen[key] = True
        ctx.warn(op, f"custom_call target '{string_attr(op, 'call_target_name')}': {why}")


def _todense(ctx: RuleContext, op: Op, e: Entries, data: AbstractValue, shape: tuple[int, ...]) -> Deps:
    """``dense[row_k, col_k] += data[k]``; an unknown row or column: anywhere in the matrix."""
    size = int(np.prod(shape, dtype=np.int64))
    if data.deps.is_empty or e.value.size == 0:
        return ctx.empty(size)
    if e.row is None or e.col is None or not row_major_layouts(op):
        _warn_unknown(ctx, op)
        return data.deps.reduce_all().broadcast_row(size)
    return group_union(data.deps, Groups.from_pairs(e.row * shape[-1] + e.col, e.value, size))


def _with_workspace(ctx: RuleContext, op: Op, first: Deps) -> list[Deps]:
    """The product (or matrix) first, then the kernels' scratch buffer (``i8``: no derivative)."""
    return [first] + [ctx.empty(t.size) for t in ctx.result_types(op)[1:]]


# ====================================================================== the rules (custom_call.ANALYSIS_RULES)
def cpu_csr_product(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """``cpu_csr_sparse_dense_ffi`` (jaxlib's Eigen CSR × dense, ``BCSR @ x`` on CPU): operands ``(data, indptr,
    indices, rhs)``; ``y[i, c] = Σ_{indptr[i] ≤ k < indptr[i+1]} data[k] · rhs[indices[k], c]``.  Exact with
    constant indices (a known exact zero of ``data`` or ``rhs`` drops its term); unknown ones: any stored value in
    any row / any row of ``rhs``, with a warning."""
    data, indptr, indices, x = args[:4]
    (t,) = ctx.result_types(op)[:1]
    e = _csr(data, indices, indptr, x.shape[0] if x.shape else 0)
    return [_product(ctx, op, e, data, x, t.shape[0] if t.shape else 1)]


def _gpu_product(ctx: RuleContext, op: Op, args: list[AbstractValue], csr: bool) -> DepsResult:
    data, first, second, x = args[:4]
    t = ctx.result_types(op)[0]
    out_rows, in_rows = (t.shape[0] if t.shape else 1), (x.shape[0] if x.shape else 1)
    readings = product_readings(attr_text(op, "mhlo.backend_config"), csr, second.size, out_rows, in_rows)
    if len(readings) != 1:
        _warn(ctx, op, "its opaque descriptor does not settle whether it multiplies by the matrix or by its "
                       "transpose: both are taken (conservative)")
    parts = []
    for transpose in readings:
        rows, cols = (in_rows, out_rows) if transpose else (out_rows, in_rows)
        e = _csr(data, first, second, cols) if csr else _coo(data, first, second, rows, cols)
        parts.append(_product(ctx, op, e.transposed() if transpose else e, data, x, out_rows))
    if not parts:  # a row pointer that fits neither A nor Aᵀ: undefined, so anything
        every = Entries(np.arange(data.size, dtype=np.int64), None, None)
        parts.append(_product(ctx, op, every, data, x, out_rows))
    return _with_workspace(ctx, op, Deps.union(*parts) if len(parts) > 1 else parts[0])


def gpu_csr_product(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """cuSPARSE / hipSPARSE CSR SpMV / SpMM (``{cu,hip}sparse_csr_mat{vec,mat}_ffi``): operands ``(data, indices,
    indptr, rhs)``, results ``(y, workspace)``; ``y = op(A)·rhs`` with ``op(A)`` and ``A``'s shape from the
    ``opaque`` descriptor.  Exact with constant indices; unknown ones (or a descriptor that does not fit the
    shapes: both ``A`` and ``Aᵀ``) conservative."""
    return _gpu_product(ctx, op, args, csr=True)


def gpu_coo_product(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """cuSPARSE / hipSPARSE COO SpMV / SpMM (``{cu,hip}sparse_coo_mat{vec,mat}_ffi``): operands ``(data, row,
    col, rhs)``, results ``(y, workspace)``; ``y[row_k] += data[k]·rhs[col_k]`` (``Aᵀ``: ``y[col_k] +=
    data[k]·rhs[row_k]``, from the ``opaque`` descriptor).  Exact with constant indices; unknown ones
    conservative."""
    return _gpu_product(ctx, op, args, csr=False)


def gpu_csr_todense(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """cuSPARSE / hipSPARSE CSR to dense (``{cu,hip}sparse_csr_todense_ffi``): operands ``(data, indices,
    indptr)``, results ``(dense, workspace)``; ``dense[i, indices[k]] += data[k]`` for the values of row ``i``.
    Exact with constant indices, else every element depends on every stored value."""
    data, indices, indptr = args[:3]
    t = ctx.result_types(op)[0]
    return _with_workspace(ctx, op, _todense(ctx, op, _csr(data, indices, indptr, t.shape[-1]), data, t.shape))


def gpu_coo_todense(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """cuSPARSE / hipSPARSE COO to dense (``{cu,hip}sparse_coo_todense_ffi``): operands ``(data, row, col)``,
    results ``(dense, workspace)``; ``dense[row_k, col_k] += data[k]``.  Exact with constant indices, else every
    element depends on every stored value."""
    data, row, col = args[:3]
    t = ctx.result_types(op)[0]
    return _with_workspace(ctx, op, _todense(ctx, op, _coo(data, row, col, t.shape[0], t.shape[-1]), data, t.shape))


for _rule in (cpu_csr_product, gpu_csr_product, gpu_coo_product, gpu_csr_todense, gpu_coo_todense):
    _rule.kind = VALUE_AWARE  # type: ignore[attr-defined]

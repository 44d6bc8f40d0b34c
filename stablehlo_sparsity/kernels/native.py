"""The C twins of the compiled kernels: ``csrc/kernels.c`` built into the package as ``_kernels<EXT_SUFFIX>``.

Each twin takes exactly the arguments of its numba kernel (:mod:`.compiled`) and returns exactly its result: the C
function computes the same thing (same algorithm, tie-breaking, integer widths and random numbers), so a process
whose kernels all have twins never imports numba (0.6 s on first use: its import, then loading the cached machine
code).  The library is a plain shared object, loaded with :mod:`ctypes` (which releases the GIL during a call, as
``nogil=True`` does), with NumPy arrays passed as pointers; nothing in it depends on the Python ABI.

A twin returns ``NotImplemented`` for arguments it does not take — an array of another dtype, width or layout than
the ones the package passes, an integer beyond 64 bits, a C error (out of memory; a case where the numba kernel
raises) — and the caller then runs the numba kernel, which computes (or raises) what it always did.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import os
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["library", "twin", "TWINS"]

#: The library's ``shs_abi_version()``: a library of another version (a stale build of an older source) is ignored.
ABI_VERSION = 4

_I32, _I64, _BOOL = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_)
_WIDTH = {_I32: "i32", _I64: "i64"}
_P, _N, _FLAG = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int

#: Argument types of each exported function (the graph kernels exist once per index width: ``_i32``, ``_i64``).
_WALK = [_N, _P, _P, _P, _P, _FLAG]
_SIGNATURES: dict[str, list[Any]] = {
    "shs_greedy": _WALK + [_P, _P],
    "shs_iterated_greedy": _WALK + [_P, _N, _N, _N, _N, _P],
    "shs_dsatur": _WALK + [_N, _P, _P],
    "shs_walk_lengths": [_N, _P, _P, _P, _P],
    "shs_split_bound": [_N, _N, _P, _P, _P, _N],
    "shs_degrees": _WALK + [_P],
    "shs_dynamic_order": _WALK + [_P, _P, _FLAG, _N, _P],
    "shs_drop_class": _WALK + [_P, _N, _N, _N, _N, _N, _N, _N, _N, _P, _P],
    "shs_greedy_star": [_N, _P, _P, _P, _P],
}
_PLAIN_SIGNATURES: dict[str, list[Any]] = {
    "shs_row_counts": [_P, _N, _N, _P, _P],
    "shs_fill": [_P, _N, _N, _P, _P, _P, _N],
    "shs_bucket_pairs": [_P, _N, _N, _P],
    "shs_drop_repeats": [_P, _N],
    "shs_mark_codes": [_P, _N, _N, _P, _N, _N, _P, _P, _P, _N, _N],
    "shs_merge_distinct": [_P, _N, _P, _N, _P],
    "shs_rng_draws": [_N, _N, _P, _N, _P, _P, _N, _P],  # (numba's np.random, for its test)
}

_loaded: list[ctypes.CDLL | None] = []


def _path() -> str | None:
    """The library beside the package's ``__init__.py`` (an editable install builds it into the source tree)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(root, "_kernels" + suffix)
        if os.path.isfile(path):
            return path
    return None


def _load() -> ctypes.CDLL | None:
    path = _path()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        lib.shs_abi_version.restype = _N
        if lib.shs_abi_version() != ABI_VERSION:
            return None
        for name, argtypes in _SIGNATURES.items():
            for width in _WIDTH.values():
                fn = getattr(lib, f"{name}_{width}")
                fn.argtypes, fn.restype = argtypes, _N
        for name, argtypes in _PLAIN_SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, _N
    except (OSError, AttributeError):  # not loadable here, or a library without one of the functions
        return None
    return lib


def library() -> ctypes.CDLL | None:
    """The loaded library, or ``None`` when the package was not built with it (a source checkout without
    ``pip install -e .``) or it does not load."""
    if not _loaded:
        _loaded.append(_load())
    return _loaded[0]


# ---------------------------------------------------------------------------------------------- argument checks
def _int(x) -> int | None:
    """``x`` as an int64 scalar, as numba would take it; ``None`` for anything else."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)) and -(1 << 63) <= x < 1 << 63:
        return int(x)
    return None


def _data(a, dtype: np.dtype, length: int | None = None, at_least: int = 0) -> int | None:
    """The data pointer of a C-contiguous 1-D ``dtype`` array (of ``length`` elements, or at least ``at_least``)."""
    if not isinstance(a, np.ndarray) or a.dtype != dtype or a.ndim != 1 or not a.flags.c_contiguous:
        return None
    if (length is not None and len(a) != length) or len(a) < at_least:
        return None
    return a.ctypes.data


def _walk(nv, ptr, nbr, optr, onbr=None) -> tuple[str, int, list[int]] | None:
    """``(width, nv, pointers)`` of a walk's CSR arrays when they share the int32 or int64 dtype."""
    n = _int(nv)
    dtype = getattr(ptr, "dtype", None)
    if n is None or n < 0 or dtype is None or dtype not in _WIDTH:
        return None
    arrays = [_data(ptr, dtype, at_least=n + 1), _data(nbr, dtype), _data(optr, dtype, at_least=1)]
    if onbr is not None:
        arrays.append(_data(onbr, dtype))
    if any(a is None for a in arrays):
        return None
    return _WIDTH[dtype], n, arrays  # type: ignore[return-value]


def _call(name: str, width: str, *args) -> int:
    return getattr(library(), f"{name}_{width}")(*args)


# ------------------------------------------------------------------------------------------------- the twins
def _greedy(nv, ptr, nbr, optr, onbr, d2, order):
    w = _walk(nv, ptr, nbr, optr, onbr)
    o = _data(order, _I64, at_least=w[1]) if w else None
    if w is None or o is None:
        return NotImplemented
    colors = np.empty(w[1], np.int32)
    k = _call("shs_greedy", w[0], w[1], *w[2], bool(d2), o, colors.ctypes.data)
    return NotImplemented if k < 0 else (colors, k)


def _iterated_greedy(nv, ptr, nbr, optr, onbr, d2, colors, iters, target, patience, seed):
    w = _walk(nv, ptr, nbr, optr, onbr)
    c = _data(colors, _I32, length=w[1]) if w else None
    scalars = [_int(x) for x in (iters, target, patience, seed)]
    if w is None or c is None or None in scalars:
        return NotImplemented
    best = np.empty(w[1], np.int32)
    k = _call("shs_iterated_greedy", w[0], w[1], *w[2], bool(d2), c, *scalars, best.ctypes.data)
    return NotImplemented if k < 0 else (best, k)


def _dsatur(nv, ptr, nbr, optr, onbr, d2, words32, deg0):
    w = _walk(nv, ptr, nbr, optr, onbr)
    words = _int(words32)
    d = _data(deg0, _I32, at_least=w[1]) if w else None
    if w is None or d is None or words is None or words < 0:
        return NotImplemented
    colors = np.empty(w[1], np.int32)
    k = _call("shs_dsatur", w[0], w[1], *w[2], bool(d2), words, d, colors.ctypes.data)
    return NotImplemented if k < 0 else (colors, k)


def _walk_lengths(nv, ptr, nbr, optr):
    w = _walk(nv, ptr, nbr, optr)
    if w is None:
        return NotImplemented
    out = np.empty(w[1], np.int64)
    return NotImplemented if _call("shs_walk_lengths", w[0], w[1], *w[2], out.ctypes.data) < 0 else out


def _split_bound(m, n, indptr, indices, fwd, stop):
    rows, cols, limit = _int(m), _int(n), _int(stop)
    dtype = getattr(indptr, "dtype", None)
    if rows is None or cols is None or limit is None or rows < 0 or cols < 0 or dtype not in _WIDTH:
        return NotImplemented
    p, i, f = _data(indptr, dtype, at_least=rows + 1), _data(indices, dtype), _data(fwd, _BOOL)
    if p is None or i is None or f is None:
        return NotImplemented
    out = _call("shs_split_bound", _WIDTH[dtype], rows, cols, p, i, f, limit)
    return NotImplemented if out < 0 else out


def _degrees(nv, ptr, nbr, optr, onbr, d2):
    w = _walk(nv, ptr, nbr, optr, onbr)
    if w is None:
        return NotImplemented
    deg = np.empty(w[1], np.int64)
    return NotImplemented if _call("shs_degrees", w[0], w[1], *w[2], bool(d2), deg.ctypes.data) < 0 else deg


def _dynamic_order(nv, ptr, nbr, optr, onbr, d2, key0, insert_order, pick_max, delta):
    w = _walk(nv, ptr, nbr, optr, onbr)
    step = _int(delta)
    if w is None or step is None:
        return NotImplemented
    k, o = _data(key0, _I64, length=w[1]), _data(insert_order, _I64, at_least=w[1])
    if k is None or o is None:
        return NotImplemented
    order = np.empty(w[1], np.int64)
    status = _call("shs_dynamic_order", w[0], w[1], *w[2], bool(d2), k, o, bool(pick_max), step, order.ctypes.data)
    return NotImplemented if status < 0 else order


def _drop_class(nv, ptr, nbr, optr, onbr, d2, colors, k, drop, radius, max_region, max_iter, max_work, work_per_edge,
                seed):
    w = _walk(nv, ptr, nbr, optr, onbr)
    c = _data(colors, _I32, at_least=w[1]) if w else None
    scalars = [_int(x) for x in (k, drop, radius, max_region, max_iter, max_work, work_per_edge, seed)]
    if w is None or c is None or None in scalars:
        return NotImplemented
    new = np.empty(w[1], np.int32)
    info = np.zeros(3, np.int64)
    status = _call("shs_drop_class", w[0], w[1], *w[2], bool(d2), c, *scalars, new.ctypes.data, info.ctypes.data)
    if status < 0:
        return NotImplemented
    ok, region, work = bool(info[0]), int(info[1]), int(info[2])
    return (new if ok else colors), ok, region, work


def _greedy_star(nv, ptr, nbr, order):
    n = _int(nv)
    dtype = getattr(ptr, "dtype", None)
    if n is None or n < 0 or dtype not in _WIDTH:
        return NotImplemented
    p, q, o = _data(ptr, dtype, at_least=n + 1), _data(nbr, dtype), _data(order, _I64, at_least=n)
    if p is None or q is None or o is None:
        return NotImplemented
    colors = np.empty(n, np.int32)
    k = _call("shs_greedy_star", _WIDTH[dtype], n, p, q, o, colors.ctypes.data)
    return NotImplemented if k < 0 else (colors, k)


def _row_counts(codes, n):
    c, size = _data(codes, _I64), _int(n)
    if c is None or size is None or size < 0:
        return NotImplemented
    count, lower = np.zeros(size, np.int64), np.zeros(size, np.int64)
    library().shs_row_counts(c, len(codes), size, count.ctypes.data, lower.ctypes.data)
    return count, lower


def _fill(codes, n, low, up, indices):
    size = _int(n)
    if size is None or size < 0 or not isinstance(indices, np.ndarray) or indices.dtype not in _WIDTH:
        return NotImplemented
    c, lo, hi = _data(codes, _I64), _data(low, _I64, at_least=size), _data(up, _I64, at_least=size)
    out = _data(indices, indices.dtype)
    if c is None or lo is None or hi is None or out is None or \
            not (low.flags.writeable and up.flags.writeable and indices.flags.writeable):
        return NotImplemented
    library().shs_fill(c, len(codes), size, lo, hi, out, int(indices.dtype == _I32))
    return None


def _bucket_pairs(code, n, out):
    size = _int(n)
    if size is None or size < 0:
        return NotImplemented
    c, o = _data(code, _I64), _data(out, _I64, at_least=len(code) if isinstance(code, np.ndarray) else 0)
    if c is None or o is None:
        return NotImplemented
    k = library().shs_bucket_pairs(c, len(code), size, o)
    return NotImplemented if k < 0 else k


def _drop_repeats(a):
    p = _data(a, _I64)
    if p is None or not a.flags.writeable:
        return NotImplemented
    return library().shs_drop_repeats(p, len(a))


def _mark_codes(code, n, rank, k, first, mark, spill, at):
    size, ranks, start = _int(n), _int(k), _int(at)
    if size is None or ranks is None or start is None or size < 0 or ranks < 1:
        return NotImplemented
    c, r, s = _data(code, _I64), _data(rank, _I64), _data(spill, _I64)
    f, m = _data(first, _BOOL, at_least=size), _data(mark, _BOOL, at_least=size * ranks)
    if c is None or r is None or s is None or f is None or m is None or not 0 <= start <= len(spill) or \
            not (first.flags.writeable and mark.flags.writeable and spill.flags.writeable):
        return NotImplemented
    return library().shs_mark_codes(c, len(code), size, r, len(rank), ranks, f, m, s, len(spill), start)


def _merge_distinct(a, b, out):
    pa, pb = _data(a, _I64), _data(b, _I64)
    po = _data(out, _I64, at_least=len(a) + len(b)) if pa is not None and pb is not None else None
    if po is None or not out.flags.writeable:
        return NotImplemented
    return library().shs_merge_distinct(pa, len(a), pb, len(b), po)


#: The twin of each kernel, by the kernel's ``module.qualname``.
TWINS: dict[str, Callable[..., Any]] = {
    "stablehlo_sparsity.coloring.greedy._greedy": _greedy,
    "stablehlo_sparsity.coloring.greedy._iterated_greedy": _iterated_greedy,
    "stablehlo_sparsity.coloring.greedy._dsatur": _dsatur,
    "stablehlo_sparsity.coloring.greedy._walk_lengths": _walk_lengths,
    "stablehlo_sparsity.coloring.greedy.split_bound": _split_bound,
    "stablehlo_sparsity.coloring.orderings._degrees": _degrees,
    "stablehlo_sparsity.coloring.orderings._dynamic_order": _dynamic_order,
    "stablehlo_sparsity.coloring.recolor._drop_class": _drop_class,
    "stablehlo_sparsity.coloring.star._greedy_star": _greedy_star,
    "stablehlo_sparsity.analysis.second_order.assembly._row_counts": _row_counts,
    "stablehlo_sparsity.analysis.second_order.assembly._fill": _fill,
    "stablehlo_sparsity.analysis.second_order.pair_buckets._bucket_pairs": _bucket_pairs,
    "stablehlo_sparsity.analysis.second_order.pair_buckets._drop_repeats": _drop_repeats,
    "stablehlo_sparsity.analysis.second_order.pair_marks._mark_codes": _mark_codes,
    "stablehlo_sparsity.analysis.second_order.sorted_union._merge_distinct": _merge_distinct,
}


def twin(name: str) -> Callable[..., Any] | None:
    """The C twin of the kernel ``module.qualname`` when the library is loaded and has one, else ``None``."""
    fn = TWINS.get(name)
    return fn if fn is not None and library() is not None else None

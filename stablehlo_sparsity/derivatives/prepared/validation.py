"""Structural checks of everything the library reads back from a file, before anything uses it.

A digest (:mod:`.archive`) says that bytes are the ones written; it does not say that they make sense.  These
checks do, in NumPy, before a compiled kernel, a SciPy constructor or XLA sees the data — and every violation
is an :class:`~stablehlo_sparsity.errors.InputError` naming the member and the problem:

* :func:`check_csr` — a CSR pattern: ``indptr`` starts at 0, never decreases and ends at nnz; every column
  index is in range and the indices of a row increase strictly.  Used by :func:`~stablehlo_sparsity.load`,
  :func:`~stablehlo_sparsity.derivatives.shard_io.read_pattern_shards` (NPZ shards) and
  :func:`~stablehlo_sparsity.read_injected` (the ``sparsity.derivative`` record);
* :func:`check_coordinates` — COO coordinates in range (MatrixMarket shards);
* :func:`check_colors` — the colors are a valid coloring of the pattern for the saved mode, checked with
  :func:`~stablehlo_sparsity.coloring.check_coloring` (column, row, star, acyclic, bidirectional);
* :func:`check_decompression` — a saved object's COO index arrays are exactly the pattern's coordinates;
* :func:`check_program` — a serialized :mod:`jax.export` program: its signature (inputs, outputs, shapes,
  dtypes) against the manifest and the pattern, the types of its StableHLO ``@main`` against that signature
  (the call JAX builds around it must type-check), no ``custom_call`` outside :data:`ALLOWED_CUSTOM_CALLS`, no
  host callback, no host transfer (``send`` / ``recv`` / ``infeed`` / ``outfeed``), no effects, no function
  without a body — for the program at load, and for its serialized VJP when reverse-mode AD first reaches it
  (:func:`with_checked_vjp`);
* :func:`check_state` — all of the above for the state of a saved or pickled prepared derivative, plus the
  metadata's fields (class, shape, output, mode, argnums …); returns what ``__setstate__`` needs.

None of them runs the program: the checks read its serialized form only.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from ...dtypes import is_float
from ...ir.custom_calls import FAMILIES
from ...errors import InputError

__all__ = ["ALLOWED_CUSTOM_CALLS", "CALLBACK_TARGETS", "HOST_TRANSFER_OPS", "check_csr", "check_coordinates",
           "check_colors", "check_decompression", "check_program", "check_state", "check_meta", "program_signature",
           "deserialize_program", "with_checked_vjp", "CheckedState"]

#: The ``custom_call`` targets a saved program may contain: those the library knows (:mod:`...ir.custom_calls`) —
#: LAPACK / cuSOLVER / hipSOLVER factorizations the user's function may call, XLA's TPU linear algebra, the
#: sharding markers JAX emits, integer kernels — minus the Python callbacks.
ALLOWED_CUSTOM_CALLS: frozenset[str] = frozenset(t for f in FAMILIES if not f.callback for t in f.targets)
#: Host callbacks: Python functions of the process that exported the program (``jax.export`` refuses them, so a
#: program this library saved never contains one; in another process the target would name nothing, or
#: something else).
CALLBACK_TARGETS: frozenset[str] = frozenset(t for f in FAMILIES if f.callback for t in f.targets)
#: Ops that move data between the device and the host: no prepared derivative's program contains one.
HOST_TRANSFER_OPS: frozenset[str] = frozenset({"stablehlo.send", "stablehlo.recv", "stablehlo.infeed",
                                               "stablehlo.outfeed"})

#: Element types of a program's signature, as MLIR prints them.
_MLIR_ELEMENT = {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16", "int64": "i64",
                 "int32": "i32", "int16": "i16", "int8": "i8", "uint64": "ui64", "uint32": "ui32", "uint16": "ui16",
                 "uint8": "ui8", "bool": "i1", "complex64": "complex<f32>", "complex128": "complex<f64>"}

_INT64_MAX = 2**63 - 1


def _fail(source: str | None, message: str) -> NoReturn:
    raise InputError(message, source)


# ------------------------------------------------------------------------------------------------ plain values
def _int(value: Any, what: str, source: str | None, *, low: int = 0, high: int = _INT64_MAX) -> int:
    """A Python integer in ``[low, high]`` (JSON gives ints; ``bool`` is refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        _fail(source, f"{what} must be an integer, got {type(value).__name__} {value!r:.80}")
    v = int(value)
    if not low <= v <= high:
        _fail(source, f"{what} is {v}, outside [{low}, {high}]")
    return v


def _shape2(value: Any, what: str, source: str | None) -> tuple[int, int]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        _fail(source, f"{what} must be [rows, columns], got {value!r:.80}")
    return _int(value[0], f"{what}[0]", source, high=2**62), _int(value[1], f"{what}[1]", source, high=2**62)


def _int_vector(a: Any, what: str, source: str | None) -> np.ndarray:
    """A 1-D integer NumPy array (not object, not bool)."""
    if not isinstance(a, np.ndarray):
        _fail(source, f"{what} must be a NumPy array, got {type(a).__name__}")
    if a.ndim != 1:
        _fail(source, f"{what} must be one-dimensional, got shape {a.shape}")
    if a.dtype.kind not in "iu" or a.dtype.itemsize > 8:
        _fail(source, f"{what} must hold integers, got dtype {a.dtype}")
    return a


# ------------------------------------------------------------------------------------------------ patterns
def check_csr(indptr: Any, indices: Any, shape: tuple[int, int], what: str = "pattern",
              source: str | None = None) -> None:
    """``(indptr, indices)`` is a well-formed CSR pattern of ``shape``: ``len(indptr) == m + 1``, ``indptr[0]
    == 0``, ``indptr`` never decreases and ends at ``len(indices)``, every index is in ``[0, n)`` and the
    indices of each row increase strictly (sorted, no duplicates).  O(nnz), vectorized."""
    m, n = shape
    indptr = _int_vector(indptr, f"{what}: indptr", source)
    indices = _int_vector(indices, f"{what}: indices", source)
    nnz = len(indices)
    if len(indptr) != m + 1:
        _fail(source, f"{what}: indptr has {len(indptr)} entries, a {m}×{n} pattern needs {m + 1}")
    if int(indptr[0]) != 0:
        _fail(source, f"{what}: indptr starts at {int(indptr[0])}, not 0")
    if int(indptr[-1]) != nnz:
        _fail(source, f"{what}: indptr ends at {int(indptr[-1])}, but there are {nnz} indices")
    if m > 0:
        down = np.flatnonzero(indptr[1:] < indptr[:-1])
        if len(down):
            r = int(down[0])
            _fail(source, f"{what}: indptr is not monotone: row {r} ends at {int(indptr[r + 1])} before it starts "
                          f"at {int(indptr[r])}")
    if nnz == 0:
        return
    lo, hi = int(indices.min()), int(indices.max())
    if lo < 0 or hi >= n:
        k = int(np.flatnonzero((indices < 0) | (indices >= n))[0])
        row = int(np.searchsorted(indptr, k, side="right")) - 1
        _fail(source, f"{what}: column index {int(indices[k])} (row {row}, entry {k}) is out of range for "
                      f"{n} columns")
    if nnz > 1:
        step = np.flatnonzero(indices[1:] <= indices[:-1]) + 1  # entries not above their predecessor
        if len(step):
            # fine where the entry starts a row (indptr is monotone here: searchsorted is exact)
            at = np.searchsorted(indptr, step, side="left")
            starts = (at <= m) & (indptr[np.minimum(at, m)] == step)
            bad = step[~starts]
            if len(bad):
                k = int(bad[0])
                row = int(np.searchsorted(indptr, k, side="right")) - 1
                what_is = "repeated" if indices[k] == indices[k - 1] else "out of order"
                _fail(source, f"{what}: column indices of row {row} are not sorted: index {int(indices[k])} at "
                              f"entry {k} is {what_is}")


def check_coordinates(rows: Any, cols: Any, shape: tuple[int, int], what: str = "pattern",
                      source: str | None = None) -> None:
    """COO coordinates in range for ``shape`` (duplicates are allowed: a pattern is their union)."""
    m, n = shape
    rows = np.asarray(rows)
    cols = np.asarray(cols)
    for a, name, limit in ((rows, "row", m), (cols, "column", n)):
        _int_vector(a, f"{what}: {name} coordinates", source)
        if len(a) and (int(a.min()) < 0 or int(a.max()) >= limit):
            k = int(np.flatnonzero((a < 0) | (a >= limit))[0])
            _fail(source, f"{what}: {name} {int(a[k])} of entry {k} is out of range for {limit} {name}s")
    if len(rows) != len(cols):
        _fail(source, f"{what}: {len(rows)} row and {len(cols)} column coordinates")


def check_colors(indptr: np.ndarray, indices: np.ndarray, shape: tuple[int, int], colors: Any, kind: str,
                 num_colors: int, what: str = "colors", source: str | None = None,
                 num_column_colors: int | None = None) -> None:
    """``colors`` is a valid ``kind`` coloring of the (already checked) CSR pattern with ``num_colors``
    products: length and range first, then :func:`~stablehlo_sparsity.coloring.check_coloring`.

    ``kind``: ``"column"``, ``"row"``, ``"star"``, ``"acyclic"`` or ``"bidirectional"`` (``colors`` then lists
    the ``n`` columns' colors, then the ``m`` rows' shifted by ``num_column_colors``; ``-1``: in no seed; with
    ``num_column_colors=None`` the shift is not checked).  ``num_colors == 0`` only for a pattern without
    nonzeros (its colors are all 0)."""
    import scipy.sparse as sp

    from ...coloring.check import InvalidColoringError, check_coloring
    from ...coloring.kinds import ColoringKind

    m, n = shape
    try:
        ck = ColoringKind.parse(kind)
    except ValueError as e:
        _fail(source, f"{what}: {e}")
    colors = _int_vector(colors, what, source)
    k = _int(num_colors, f"{what}: num_colors", source, high=m + n)
    nv = {ColoringKind.COLUMN: n, ColoringKind.ROW: m, ColoringKind.STAR: n, ColoringKind.ACYCLIC: n,
          ColoringKind.BIDIRECTIONAL: n + m}[ck]
    if ck in (ColoringKind.STAR, ColoringKind.ACYCLIC) and m != n:
        _fail(source, f"{what}: a {ck} coloring is of a square pattern, the pattern is {m}×{n}")
    if len(colors) != nv:
        _fail(source, f"{what}: a {ck} coloring of a {m}×{n} pattern has {nv} colors, got {len(colors)}")
    nnz = len(indices)
    if k == 0:
        if nnz:
            _fail(source, f"{what}: 0 colors for a pattern with {nnz} nonzeros")
        if len(colors) and (int(colors.min()) < -1 or int(colors.max()) > 0):
            _fail(source, f"{what}: 0 colors, but the colors range over [{int(colors.min())}, {int(colors.max())}]")
        return
    low = -1 if ck == ColoringKind.BIDIRECTIONAL else 0
    if len(colors) and (int(colors.min()) < low or int(colors.max()) >= k):
        bad = int(np.flatnonzero((colors < low) | (colors >= k))[0])
        _fail(source, f"{what}: color {int(colors[bad])} of vertex {bad} is outside [{low}, {k})")
    pattern = sp.csr_array((np.ones(nnz, bool), indices, indptr), shape=(m, n))
    given: Any = colors
    if ck == ColoringKind.BIDIRECTIONAL:
        cc, rc = colors[:n], colors[n:]
        if num_column_colors is not None:
            kc = _int(num_column_colors, f"{what}: num_column_colors", source, high=k)
            if (len(cc) and int(cc.max()) >= kc) or (len(rc) and int(rc[rc >= 0].min(initial=kc)) < kc):
                _fail(source, f"{what}: the column colors must be below num_column_colors = {kc} and the row "
                              f"colors at or above it")
        given = (cc, rc)
    try:
        check_coloring(pattern, given, str(ck), raise_on_error=True)
    except InvalidColoringError as e:
        _fail(source, f"{what}: not a valid coloring of the pattern: {e}")


def check_decompression(rows: Any, cols: Any, indptr: np.ndarray, indices: np.ndarray,
                        source: str | None = None) -> None:
    """The COO rows and columns of a saved object (where each value goes) are the pattern's coordinates in
    CSR order."""
    m = len(indptr) - 1
    rows = _int_vector(rows, "rows (the decompression's row indices)", source)
    cols = _int_vector(cols, "cols (the decompression's column indices)", source)
    nnz = len(indices)
    for a, name in ((rows, "rows"), (cols, "cols")):
        if len(a) != nnz:
            _fail(source, f"{name} has {len(a)} entries, the pattern has {nnz} nonzeros")
    ptr: np.ndarray = np.asarray(indptr, dtype=np.int64)
    want_rows = np.repeat(np.arange(m, dtype=np.int64), ptr[1:] - ptr[:-1])
    bad = np.flatnonzero(rows != want_rows)
    if len(bad):
        k = int(bad[0])
        _fail(source, f"rows does not match the pattern: entry {k} is in row {int(want_rows[k])}, rows says "
                      f"{int(rows[k])} ({len(bad)} such entries)")
    bad = np.flatnonzero(cols != indices)
    if len(bad):
        k = int(bad[0])
        _fail(source, f"cols does not match the pattern: entry {k} is in column {int(indices[k])}, cols says "
                      f"{int(cols[k])} ({len(bad)} such entries)")


# ------------------------------------------------------------------------------------------------ programs
def _dtype_name(dtype: Any) -> str:
    """NumPy's name of a dtype; ``"float0"`` for JAX's cotangent type of integers."""
    from jax import dtypes

    return "float0" if dtype == dtypes.float0 else np.dtype(dtype).name


def _aval_text(shape: Any, dtype: Any) -> str:
    """``tensor<3x4xf32>`` for an aval's shape and dtype (an ``InputError`` for a dtype no prepared program
    uses; ``float0`` is lowered as booleans)."""
    name = _dtype_name(dtype)
    elt = "i1" if name == "float0" else _MLIR_ELEMENT.get(name)
    if elt is None:
        raise InputError(f"dtype {name} in a program's signature is not one this library saves")
    return "tensor<" + "".join(f"{int(d)}x" for d in shape) + elt + ">"


def _aval_pairs(avals) -> list[list]:
    return [[[int(d) for d in a.shape], _dtype_name(a.dtype)] for a in avals]


def _cotangents(pairs: list[list]) -> list[list]:
    """The cotangent avals of ``pairs``: the same shapes, ``float0`` for integers and booleans."""
    return [[s, d if is_float(d) else "float0"] if d != "float0" else [s, d] for s, d in pairs]


def program_signature(exp) -> dict:
    """The manifest's record of a program's signature: the leaves per positional argument, the input and output
    avals (``[shape, dtype]``), the leaves of ``(f(x), aux, values)``, the platforms, whether it has a VJP."""
    args_tree = exp.in_tree.children()[0]
    return {"args": [t.num_leaves for t in args_tree.children()], "in": _aval_pairs(exp.in_avals),
            "out": _aval_pairs(exp.out_avals), "outputs": [t.num_leaves for t in exp.out_tree.children()],
            "platforms": list(exp.platforms), "vjp": bool(exp.has_vjp())}


class _Context:
    """One MLIR context for reading programs, reused (making one costs milliseconds, more than a check), and
    replaced once it has read :data:`ROTATE_BYTES` of programs (a context keeps every attribute it has seen)."""

    ROTATE_BYTES = 64 << 20

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ctx: Any = None
        self.read = 0

    def get(self, nbytes: int):
        if self.ctx is None or self.read + nbytes > self.ROTATE_BYTES:
            self.ctx, self.read = _reading_context(), 0
        self.read += nbytes
        return self.ctx


def _reading_context():
    """A context that reads StableHLO portable artifacts: the dialects JAX's programs use (stablehlo, chlo,
    mhlo attributes, shardy), registered on a plain context — a millisecond, where the full context of
    :func:`~stablehlo_sparsity.ir.parsing.make_context` costs tens on first use."""
    from jaxlib.mlir import ir

    try:
        from jaxlib.mlir.dialects import chlo, mhlo, sdy, stablehlo

        ctx = ir.Context()
        stablehlo.register_dialect(ctx)
        chlo.register_dialect(ctx)
        mhlo.register_mhlo_dialect(ctx)
        sdy.register_dialect(ctx)
        return ctx
    except Exception:  # pragma: no cover - a jaxlib without these registration hooks
        from ...ir.parsing import make_context

        return make_context()


_CONTEXT = _Context()


def _deserialize_module(data: bytes, ctx, what: str, source: str | None):
    from jaxlib.mlir._mlir_libs import _stablehlo

    try:
        return _stablehlo.deserialize_portable_artifact(ctx, data)
    except Exception as e:
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        current = _stablehlo.get_current_version()
        _fail(source, f"{what}: its StableHLO module does not read back (this jaxlib reads StableHLO "
                      f"v{_stablehlo.get_minimum_version()} to v{current}): {first}")


def _check_module(exp, what: str, source: str | None, host_callback: bool) -> None:
    """The StableHLO module of ``exp``: ``@main``'s types against ``exp``'s avals, custom calls, host
    transfers, functions without a body (anything the MLIR bindings raise on a malformed module is an
    ``InputError`` too)."""
    try:
        _inspect_module(exp, what, source, host_callback)
    except InputError:
        raise
    except Exception as e:
        _fail(source, f"{what}: its module could not be inspected ({type(e).__name__}: {str(e)[:200]})")


def _inspect_module(exp, what: str, source: str | None, host_callback: bool) -> None:
    from jaxlib.mlir import ir

    data = bytes(exp.mlir_module_serialized)
    with _CONTEXT.lock:
        ctx = _CONTEXT.get(len(data))
        with ctx:
            module = _deserialize_module(data, ctx, what, source)
            problems: list[str] = []
            modules = [0]

            def visit(op):
                name = op.name
                if name == "stablehlo.custom_call":
                    target = ir.StringAttr(op.attributes["call_target_name"]).value
                    if target in CALLBACK_TARGETS:
                        problems.append(f"a host callback (custom_call @{target})" + (
                            "; a Python callback of the process that saved it cannot run in another"
                            if host_callback else ", and the manifest says the function had none"))
                    elif target not in ALLOWED_CUSTOM_CALLS:
                        problems.append(f"a custom_call to @{target}, which is not one this library emits "
                                        "(LAPACK / cuSOLVER / TPU linear algebra, sharding markers)")
                elif name in HOST_TRANSFER_OPS:
                    problems.append(f"a host transfer ({name})")
                elif name == "func.func":
                    if len(op.regions) != 1 or len(op.regions[0].blocks) == 0:
                        sym = ir.StringAttr(op.attributes["sym_name"]).value
                        problems.append(f"a function without a body (@{sym})")
                elif name == "builtin.module":
                    modules[0] += 1
                    if modules[0] > 1:
                        problems.append("a nested module")
                return ir.WalkResult.INTERRUPT if problems else ir.WalkResult.ADVANCE

            module.operation.walk(visit)
            if problems:
                _fail(source, f"{what} contains {problems[0]}: refused")
            symbols = ir.SymbolTable(module.operation)  # @main as JAX finds it when it calls the program
            if "main" not in symbols or symbols["main"].operation.name != "func.func":
                _fail(source, f"{what}: its module has no @main function")
            main_type = ir.FunctionType(ir.TypeAttr(symbols["main"].attributes["function_type"]).value)
            inputs = [str(t) for t in main_type.inputs]
            results = [str(t) for t in main_type.results]
            platform_arg = [t for t in main_type.inputs[:1]] if len(exp.platforms) > 1 else []
    if platform_arg:
        t = str(platform_arg[0])
        if t not in ("tensor<i32>", "tensor<i64>", "tensor<ui32>", "tensor<ui64>"):
            _fail(source, f"{what}: @main's first argument (the platform index) is {t}, not an integer scalar")
        inputs = inputs[1:]
    kept = list(exp.module_kept_var_idx)
    if kept != sorted(set(kept)) or any(not 0 <= i < len(exp.in_avals) for i in kept):
        _fail(source, f"{what}: its kept arguments {kept} are not increasing indices of its "
                      f"{len(exp.in_avals)} inputs")
    try:
        want_in = [_aval_text(exp.in_avals[i].shape, exp.in_avals[i].dtype) for i in kept]
        want_out = [_aval_text(a.shape, a.dtype) for a in exp.out_avals]
    except InputError as e:
        _fail(source, f"{what}: {e.message}")
    if inputs != want_in:
        _fail(source, f"{what}: @main takes ({', '.join(inputs)}), its signature says ({', '.join(want_in)})")
    if results != want_out:
        _fail(source, f"{what}: @main returns ({', '.join(results)}), its signature says ({', '.join(want_out)})")


def _check_exported(exp, what: str, source: str | None, host_callback: bool) -> None:
    """What every program and VJP must satisfy: one device, no effects, no disabled safety checks, a calling
    convention this JAX reads, and a well-typed module within the allow-list."""
    from jax import export as jexport

    low, high = jexport.minimum_supported_calling_convention_version, \
        jexport.maximum_supported_calling_convention_version
    v = exp.calling_convention_version
    if not low <= v <= high:
        _fail(source, f"{what} uses jax.export calling convention {v}; this JAX (jax {_jax_version()}) reads "
                      f"{low} to {high}: save it again with this JAX")
    if exp.nr_devices != 1:
        _fail(source, f"{what} was exported for {exp.nr_devices} devices; a saved derivative runs on one")
    if exp.ordered_effects or exp.unordered_effects:
        _fail(source, f"{what} has effects ({', '.join(map(str, exp.ordered_effects + exp.unordered_effects))}): "
                      "a saved derivative has none")
    if exp.disabled_safety_checks:
        _fail(source, f"{what} disables jax.export safety checks ({exp.disabled_safety_checks}): a saved derivative "
                      "disables none")
    known = {"cpu", "cuda", "rocm", "tpu"}
    if not exp.platforms or any(p not in known for p in exp.platforms):
        _fail(source, f"{what} is exported for platforms {list(exp.platforms)}")
    if len(exp.in_tree.children()) != 2 or exp.in_tree.children()[1].num_leaves != 0:
        _fail(source, f"{what}: its inputs are not (positional arguments, no keywords)")
    if exp.in_tree.num_leaves != len(exp.in_avals) or exp.out_tree.num_leaves != len(exp.out_avals):
        _fail(source, f"{what}: its input/output structures do not match its {len(exp.in_avals)} inputs and "
                      f"{len(exp.out_avals)} outputs")
    _check_module(exp, what, source, host_callback)


def _jax_version() -> str:
    import jax

    return jax.__version__


def deserialize_program(program: bytes, source: str | None):
    """The :class:`jax.export.Exported` of a saved program's bytes (an ``InputError`` when they are not one)."""
    from jax import export as jexport

    try:
        return jexport.deserialize(bytearray(program))
    except Exception as e:
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
        _fail(source, f"program: not a serialized jax.export program ({type(e).__name__}: {first})")


def check_program(exp, meta: dict, shape: tuple[int, int], nnz: int, hessian: bool,
                  source: str | None = None) -> None:
    """A restored program against the manifest's signature and the pattern (see the module docstring).  Its VJP
    is checked when it is first used (:func:`with_checked_vjp`)."""
    host_callback = meta.get("host_callback", False)
    if not isinstance(host_callback, bool):
        _fail(source, f"host_callback must be true or false, got {host_callback!r:.40}")
    if host_callback:
        _fail(source, "the manifest says the function calls back into Python (a host callback): such a program "
                      "cannot be restored in another process")
    _check_exported(exp, "program", source, host_callback)
    sig = program_signature(exp)
    want = meta.get("signature")
    if not isinstance(want, dict):
        _fail(source, "the manifest has no program signature")
    for key in ("args", "in", "out", "outputs", "platforms", "vjp"):
        if want.get(key) != sig[key]:
            _fail(source, f"the program's signature does not match the manifest: {key} is {sig[key]!r:.200}, the "
                          f"manifest says {want.get(key)!r:.200}")
    # (y, aux, values): values are the nonzeros in CSR order
    if len(sig["outputs"]) != 3 or sig["outputs"][2] != 1:
        _fail(source, f"the program returns {sig['outputs']} leaves, not (f(x), aux, values) with values one "
                      "array")
    y_leaves, aux_leaves = sig["outputs"][0], sig["outputs"][1]
    values = exp.out_avals[-1]
    if tuple(values.shape) != (nnz,) or np.dtype(values.dtype).kind not in "fc":
        _fail(source, f"the program returns values of shape {tuple(values.shape)} and dtype "
                      f"{np.dtype(values.dtype)}; the pattern has {nnz} nonzeros (a float vector)")
    if not meta.get("has_aux") and aux_leaves:
        _fail(source, f"the program returns {aux_leaves} auxiliary arrays, the manifest says has_aux=false")
    if meta.get("with_value") and y_leaves == 0:
        _fail(source, "the manifest says with_value=true, the program returns no value")
    args_leaves = sig["args"]
    argnums = meta["argnums"]
    if any(not 0 <= a < len(args_leaves) for a in argnums):
        _fail(source, f"argnums {argnums} are not arguments of a function of {len(args_leaves)}")
    offsets = np.cumsum([0] + args_leaves)
    columns = sum(int(np.prod(exp.in_avals[i].shape, dtype=np.int64))
                  for a in argnums for i in range(int(offsets[a]), int(offsets[a + 1])))
    m, n = shape
    if columns != n:
        _fail(source, f"the pattern has {n} columns, the differentiated arguments {argnums} have {columns} elements")
    rows = sum(int(np.prod(a.shape, dtype=np.int64)) for a in exp.out_avals[:y_leaves])
    if hessian:
        if m != n:
            _fail(source, f"a Hessian pattern is square, this one is {m}×{n}")
        if y_leaves and rows != 1:
            _fail(source, f"a Hessian's function is scalar, the program returns a value of {rows} elements")
    elif y_leaves and rows != m:
        _fail(source, f"the pattern has {m} rows, the program's value has {rows} elements")
    forward_only = meta.get("forward_only")
    if forward_only is not None and not isinstance(forward_only, str):
        _fail(source, f"forward_only must be null or a reason, got {forward_only!r:.40}")
    if (forward_only is None) != exp.has_vjp():
        _fail(source, "the manifest says the program is " + ("forward-only" if forward_only else "differentiable in "
                      "reverse mode") + ", the program " + ("has" if exp.has_vjp() else "has no") + " VJP")


def _check_vjp(exp, vjp, source: str | None) -> None:
    """The serialized VJP of ``exp``: the checks of every program, one order only, and the signature of a VJP
    (primal inputs and output cotangents → input cotangents)."""
    _check_exported(vjp, "the program's VJP", source, False)
    if vjp.has_vjp():
        _fail(source, "the program's VJP has a VJP of its own: this library saves one order only")
    ins, outs = _aval_pairs(exp.in_avals), _aval_pairs(exp.out_avals)
    if _aval_pairs(vjp.in_avals) != ins + _cotangents(outs) or _aval_pairs(vjp.out_avals) != _cotangents(ins):
        _fail(source, "the program's VJP does not take (inputs, output cotangents) to input cotangents")


def with_checked_vjp(exp, source: str | None = None):
    """``exp`` whose VJP (read only when reverse-mode AD first reaches the restored object) passes the checks of
    :func:`check_program` before JAX uses it — reading and checking it at load would double the cost of
    loading for a program most users only evaluate."""
    import dataclasses

    if not exp.has_vjp():
        return exp
    if "_get_vjp" not in {f.name for f in dataclasses.fields(exp)}:  # (a JAX that stores it otherwise: now)
        try:
            vjp = exp.vjp()
        except Exception as err:
            _fail(source, f"the program's VJP does not read back ({type(err).__name__}: {str(err)[:200]})")
        _check_vjp(exp, vjp, source)
        return exp
    inner = exp._get_vjp
    checked: list = []

    def get_vjp(e):
        if not checked:
            try:
                vjp = inner(e)
            except Exception as err:
                _fail(source, f"the program's VJP does not read back ({type(err).__name__}: {str(err)[:200]})")
            _check_vjp(exp, vjp, source)
            checked.append(vjp)
        return checked[0]

    return dataclasses.replace(exp, _get_vjp=get_vjp)


# ------------------------------------------------------------------------------------------------ whole states
@dataclass(frozen=True)
class CheckedState:
    """What :func:`check_state` found well-formed: the pattern's shape, the CSR arrays, the colors and the
    deserialized program."""

    shape: tuple[int, int]
    indptr: np.ndarray
    indices: np.ndarray
    colors: np.ndarray
    exported: Any


_JACOBIAN_KINDS = {"forward": ("column",), "reverse": ("row",), "bidirectional": ("bidirectional",)}
_HESSIAN_KINDS = {"direct": ("star",), "substitution": ("star", "acyclic")}


def check_meta(meta: Any, source: str | None) -> tuple[str, tuple[int, int]]:
    """The metadata fields a restored object reads: ``(class, shape)``."""
    from .outputs import OUTPUTS

    if not isinstance(meta, dict):
        _fail(source, f"the metadata is not a JSON object ({type(meta).__name__})")
    cls = meta.get("class")
    if cls not in ("SparseJacobian", "SparseHessian"):
        _fail(source, f"unknown saved class {cls!r:.80}")
    shape = _shape2(meta.get("shape"), "shape", source)
    if meta.get("output") not in OUTPUTS:
        _fail(source, f"unknown output {meta.get('output')!r:.80} (one of {', '.join(OUTPUTS)})")
    for key in ("has_aux", "with_value", "argnums_int"):
        if not isinstance(meta.get(key), bool):
            _fail(source, f"{key} must be true or false, got {meta.get(key)!r:.40}")
    argnums = meta.get("argnums")
    if not isinstance(argnums, list) or not argnums:
        _fail(source, f"argnums must be a non-empty list, got {argnums!r:.80}")
    for a in argnums:
        _int(a, "an argnum", source, high=2**31)
    if len(set(argnums)) != len(argnums):
        _fail(source, f"argnums {argnums} repeat an argument")
    kinds = _JACOBIAN_KINDS if cls == "SparseJacobian" else _HESSIAN_KINDS
    if meta.get("mode") not in kinds:
        _fail(source, f"a saved {cls} has mode {' or '.join(kinds)}, got {meta.get('mode')!r:.40}")
    cm = meta.get("coloring")
    if not isinstance(cm, dict):
        _fail(source, "the metadata has no coloring")
    if cm.get("kind") not in kinds[meta["mode"]]:
        _fail(source, f"a {cls} in mode {meta['mode']} has a {' or '.join(kinds[meta['mode']])} coloring, the "
                      f"metadata says {cm.get('kind')!r:.40}")
    if _shape2(cm.get("shape"), "coloring shape", source) != shape:
        _fail(source, f"the coloring is of a {cm.get('shape')} pattern, the pattern is {list(shape)}")
    _int(cm.get("lower_bound"), "coloring lower_bound", source)
    _int(cm.get("num_column_colors", 0), "coloring num_column_colors", source)
    if not isinstance(cm.get("order"), str):
        _fail(source, f"coloring order must be a string, got {cm.get('order')!r:.40}")
    if "entry" in meta and not isinstance(meta["entry"], str):
        _fail(source, f"entry must be a string, got {meta['entry']!r:.40}")
    return cls, shape


def check_state(state: Any, source: str | None = None) -> CheckedState:
    """Every structural check of a saved or pickled state (see the module docstring), before any of it is
    used; the program is deserialized (not run)."""
    if not isinstance(state, dict):
        _fail(source, f"the state is not a dictionary ({type(state).__name__})")
    for key in ("meta", "indptr", "indices", "colors", "rows", "cols", "program"):
        if key not in state:
            _fail(source, f"the state has no {key}")
    meta = state["meta"]
    cls, shape = check_meta(meta, source)
    indptr, indices = state["indptr"], state["indices"]
    check_csr(indptr, indices, shape, "pattern (indptr, indices)", source)
    check_decompression(state["rows"], state["cols"], indptr, indices, source)
    cm = meta["coloring"]
    check_colors(indptr, indices, shape, state["colors"], cm["kind"], cm["num_colors"], "colors", source,
                 cm.get("num_column_colors") if cm["kind"] == "bidirectional" else None)
    program = state["program"]
    if not isinstance(program, (bytes, bytearray)):
        _fail(source, f"program must be bytes, got {type(program).__name__}")
    exp = deserialize_program(bytes(program), source)
    check_program(exp, meta, shape, len(indices), cls == "SparseHessian", source)
    return CheckedState(shape, indptr, indices, state["colors"], with_checked_vjp(exp, source))

"""Use an injected derivative from Python: compile a module's function with XLA, read the recorded pattern.

The ``sparsity-jacobian`` / ``sparsity-hessian`` passes add ``@<entry>_jacobian`` / ``@<entry>_hessian`` to a
module, returning the nonzeros in CSR order, with the pattern recorded as the ``sparsity.derivative``
dictionary (``docs/reference/injected-derivatives.md``).  Two public helpers close the loop without JAX internals:

    >>> import numpy as np, stablehlo_sparsity as ss
    >>> from stablehlo_sparsity.passes import inject_jacobian
    >>> text = '''
    ... func.func @main(%x: tensor<4xf32>) -> tensor<3xf32> {
    ...   %a = stablehlo.slice %x [1:4] : (tensor<4xf32>) -> tensor<3xf32>
    ...   %b = stablehlo.slice %x [0:3] : (tensor<4xf32>) -> tensor<3xf32>
    ...   %c = stablehlo.multiply %a, %b : tensor<3xf32>
    ...   func.return %c : tensor<3xf32>
    ... }'''
    >>> module = ss.parse_module(text)
    >>> inject_jacobian(module)
    'main_jacobian'
    >>> values = ss.compile_module(module, entry="main_jacobian")(np.arange(4.0, dtype=np.float32))
    >>> info = ss.read_injected(module, "main_jacobian")
    >>> info.to_scipy(values).toarray().tolist()[0], info.num_colors
    ([1.0, 0.0, 0.0, 0.0], 2)

* :func:`compile_module` — any function of a module (text, bytecode, a path, an ``ir.Module``) compiled by XLA
  for the default backend, called on NumPy/JAX arrays.  XLA compiles the function named ``main``: a copy of
  the module is made in which ``entry`` is ``@main`` (an existing ``@main`` is renamed, calls follow).
* :func:`read_injected` — the ``sparsity.derivative`` record of an injected function as an
  :class:`InjectedDerivative` (CSR arrays, colors, mode …; ``.to_scipy(values)`` builds the matrix).  A module is
  data from a file: the record is checked before it is returned (:func:`check_record` — a well-formed CSR
  pattern, valid colors for its mode, as many values as the function returns), so ``to_scipy`` never
  decompresses ``compile_module``'s output with a malformed pattern; a violation is an :class:`InputError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..errors import InputError

__all__ = ["compile_module", "CompiledFunction", "read_injected", "InjectedDerivative", "RECORD_ATTRIBUTE",
           "check_record"]

#: The discardable attribute the derivative passes write on the function they add.
RECORD_ATTRIBUTE = "sparsity.derivative"


def _load(module_or_source):
    """An ``ir.Module`` from a module, text, bytes (bytecode, portable artifact, ``jax.export``) or a path."""
    from ..ir.parsing import as_module

    # one rule for paths and text, that of every module function (parsing.source_path)
    return as_module(getattr(module_or_source, "module", module_or_source))


# ------------------------------------------------------------------------------------------- compiling
class CompiledFunction:
    """A module function compiled by XLA: ``f(*arrays)`` returns its single result, or a tuple of results.

    Attributes: ``entry`` (the function's name in the module), ``arg_types`` / ``result_types``
    (:class:`~stablehlo_sparsity.analysis.values.TensorType`: shape and dtype), ``backend`` (the XLA backend).
    Arguments are NumPy or JAX arrays (or Python scalars) of the declared shapes; they are cast to the declared
    dtypes (a float argument refuses complex values, any argument refuses a wrong shape).

    Raises:
        InputError: (a call) another number of arguments than the function takes, an argument of another shape,
            or a complex argument where the function takes a real one.

    Examples:
        >>> import numpy as np
        >>> import stablehlo_sparsity as ss
        >>> f = ss.compile_module('''func.func @main(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
        ...   %z = stablehlo.add %x, %y : tensor<2xf32>
        ...   func.return %z : tensor<2xf32>
        ... }''')
        >>> f(np.ones(2, np.float32), [1, 2]).tolist(), [t.shape for t in f.arg_types]
        ([2.0, 3.0], [(2,), (2,)])
    """

    def __init__(self, executable, backend, entry: str, arg_types, result_types):
        self._executable, self.backend = executable, backend
        self.entry, self.arg_types, self.result_types = entry, list(arg_types), list(result_types)

    def _put(self, k: int, x):
        import jax

        t = self.arg_types[k]
        a = np.asarray(x)
        if tuple(a.shape) != tuple(t.shape):
            raise InputError(f"@{self.entry}: argument {k} has shape {tuple(a.shape)}, the function takes "
                             f"{tuple(t.shape)}")
        if a.dtype.kind == "c" and np.dtype(t.dtype).kind != "c":
            raise InputError(f"@{self.entry}: argument {k} is complex, the function takes {np.dtype(t.dtype)}")
        return jax.device_put(np.ascontiguousarray(a.astype(t.dtype, copy=False)), self.backend.devices()[0])

    def __call__(self, *args):
        import contextlib

        import jax

        if len(args) != len(self.arg_types):
            raise InputError(f"@{self.entry} takes {len(self.arg_types)} arguments, got {len(args)}")
        # the declared types are what XLA compiled: a 64-bit argument stays 64-bit whatever jax_enable_x64 says
        wide = any(np.dtype(t.dtype).itemsize == 8 for t in self.arg_types) and not jax.config.jax_enable_x64
        with jax.enable_x64(True) if wide else contextlib.nullcontext():
            out = self._executable.execute([self._put(k, x) for k, x in enumerate(args)])
        return out[0] if len(out) == 1 else tuple(out)

    def __repr__(self) -> str:
        sig = ", ".join(f"{np.dtype(t.dtype).name}{list(t.shape)}" for t in self.arg_types)
        return f"CompiledFunction(@{self.entry}({sig}) on {self.backend.platform})"


def compile_module(module, entry: str = "main", *, backend: str | None = None) -> CompiledFunction:
    """Compile the function ``entry`` of ``module`` with XLA and return it as a Python callable.

    ``module``: an ``ir.Module``, StableHLO text, bytes (MLIR bytecode, a StableHLO portable artifact, a
    serialized ``jax.export`` artifact) or a path (``str`` or ``os.PathLike``).  ``entry``: any function of the
    module — e.g. ``"main_jacobian"`` after the ``sparsity-jacobian`` pass.  ``backend``: an XLA platform name
    (``"cpu"``, ``"gpu"`` …; default: JAX's default backend).  XLA's refusals become :class:`InputError`.

    Raises:
        InputError: the module cannot be read or parsed, it has no function ``entry``, there is no backend
            ``backend``, or XLA refuses to compile the function.

    Examples:
        >>> import numpy as np
        >>> import stablehlo_sparsity as ss
        >>> text = '''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.multiply %x, %x : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }'''
        >>> square = ss.compile_module(text)                     # a CompiledFunction
        >>> square(np.arange(3, dtype=np.float32)).tolist()
        [0.0, 1.0, 4.0]
    """
    import jax.extend
    from jaxlib.mlir import ir

    from .importer import ImportedFunction, entry_function
    from .importer.xla import entry_as_main_text, register_kernels_for

    m = _load(module)
    with m.context:
        entry_function(m, entry)  # (an InputError listing the functions when there is none)
    text = entry_as_main_text(m, entry)
    register_kernels_for(text)
    with m.context:
        signature = ImportedFunction(ir.Module.parse(text), "main")
    try:
        be = jax.extend.backend.get_backend(backend)
    except RuntimeError as e:
        raise InputError(f"no XLA backend {backend!r}: {e}") from None
    try:
        exe = be.compile_and_load(text, be.devices()[:1], jax.extend.backend.get_compile_options(1, 1))
    except Exception as e:  # XLA's own errors (an op it does not lower, a custom call it does not know)
        first = str(e).strip().splitlines()[0][:400] if str(e).strip() else type(e).__name__
        raise InputError(f"XLA could not compile @{entry}: {first}") from None
    return CompiledFunction(exe, be, entry, signature.arg_types, signature.result_types)


# ------------------------------------------------------------------------------------------- the record
@dataclass(frozen=True)
class InjectedDerivative:
    """The ``sparsity.derivative`` record of an injected function (``docs/reference/injected-derivatives.md``).

    ``indptr`` / ``indices`` are the CSR pattern (``int64``): value ``k`` of the function's result is entry
    ``(i, indices[k])`` for ``indptr[i] <= k < indptr[i+1]``; ``colors`` (``int32``) is the color of each column
    (``mode`` ``"forward"``, ``"star"``) or row (``"reverse"``); ``triangle`` is ``"full"`` for a Hessian.

    Examples:
        >>> import numpy as np
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import inject_jacobian
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.multiply %x, %x : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }''')
        >>> name = inject_jacobian(module)
        >>> info, values = ss.read_injected(module, name), ss.compile_module(module, name)(np.arange(3.0))
        >>> info.to_scipy(values).toarray().tolist()
        [[0.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 4.0]]
    """

    name: str
    kind: str
    entry: str
    wrt: tuple[int, ...]
    shape: tuple[int, int]
    nnz: int
    indptr: np.ndarray = field(repr=False)
    indices: np.ndarray = field(repr=False)
    mode: str
    num_colors: int
    colors: np.ndarray = field(repr=False)
    helpers: tuple[str, ...] = ()
    triangle: str | None = None

    def pattern(self) -> sp.csr_array:
        """The pattern as a boolean SciPy CSR array."""
        return sp.csr_array((np.ones(self.nnz, bool), self.indices, self.indptr), shape=self.shape)

    def to_scipy(self, values) -> sp.csr_array:
        """The derivative as a SciPy CSR array from the function's result (``values``: its nonzeros in CSR
        order).

        Raises:
            InputError: ``values`` is not a vector of ``nnz`` values.
        """
        v = np.asarray(values)
        if v.shape != (self.nnz,):
            raise InputError(f"@{self.name} returns {self.nnz} values in CSR order; got an array of shape {v.shape}")
        return sp.csr_array((v, self.indices, self.indptr), shape=self.shape)

    def as_dict(self) -> dict:
        """The record as a plain dictionary (the keys of :func:`stablehlo_sparsity.passes.jacobian.read_pattern`)."""
        out = {"kind": self.kind, "entry": self.entry, "wrt": list(self.wrt), "shape": self.shape, "nnz": self.nnz,
               "indptr": self.indptr, "indices": self.indices, "mode": self.mode, "num_colors": self.num_colors,
               "colors": self.colors, "helpers": list(self.helpers)}
        if self.triangle is not None:
            out["triangle"] = self.triangle
        return out


#: The modes a record may name, per kind, and the coloring each one's colors are.
_RECORD_MODES = {"jacobian": {"forward": "column", "reverse": "row", "bidirectional": "bidirectional"},
                 "hessian": {"star": "star"}}


def read_function_record(fn) -> InjectedDerivative:
    """The record on one ``func.func`` op (an :class:`InputError` when it has none, or when it is not a
    well-formed pattern with a valid coloring — see :func:`check_record`)."""
    from jaxlib.mlir import ir

    from ..ir.helpers import sym_name

    name = sym_name(fn)
    if RECORD_ATTRIBUTE not in fn.attributes:
        raise InputError(f"@{name} has no {RECORD_ATTRIBUTE} record: it was not written by sparsity-jacobian or "
                         "sparsity-hessian")
    where = f"@{name}'s {RECORD_ATTRIBUTE} record"
    key = ""
    try:
        d = ir.DictAttr(fn.attributes[RECORD_ATTRIBUTE])

        def ints(k, dtype=np.int64):
            nonlocal key
            key = k
            a = ir.DenseIntElementsAttr(d[k])
            return np.asarray(a).astype(dtype, casting="same_kind").reshape(-1)

        def text(k):
            nonlocal key
            key = k
            return ir.StringAttr(d[k]).value

        def integer(k):
            nonlocal key
            key = k
            return int(ir.IntegerAttr(d[k]).value)

        shape = tuple(int(v) for v in ints("shape"))
        if len(shape) != 2:
            raise ValueError(f"shape has {len(shape)} entries, not 2")
        record = InjectedDerivative(
            name=name, kind=text("kind"), entry=text("entry"), wrt=tuple(int(v) for v in ints("wrt")),
            shape=(shape[0], shape[1]), nnz=integer("nnz"), indptr=ints("row_pointers"),
            indices=ints("column_indices"), mode=text("mode"), num_colors=integer("num_colors"),
            colors=ints("colors", np.int32), helpers=tuple(ir.StringAttr(a).value for a in ir.ArrayAttr(d["helpers"])),
            triangle=text("triangle") if "triangle" in d else None)
    except (KeyError, ValueError, TypeError, OverflowError) as e:
        missing = isinstance(e, KeyError)
        raise InputError(f"{where}: {'no' if missing else 'malformed'} '{key}' entry"
                         + ("" if missing else f" ({type(e).__name__}: {str(e)[:120]})")) from None
    check_record(record, fn)
    return record


def check_record(record: InjectedDerivative, fn=None) -> None:
    """The structure of a record, before anything uses it: a known kind and mode, a well-formed CSR pattern of
    ``shape`` with ``nnz`` entries, valid colors for the mode (:mod:`.prepared.validation`); with ``fn``, its
    single result holds ``nnz`` values."""
    from ..derivatives.prepared.validation import check_colors, check_csr

    where = f"@{record.name}'s {RECORD_ATTRIBUTE} record"
    modes = _RECORD_MODES.get(record.kind)
    if modes is None:
        raise InputError(f"{where}: kind {record.kind!r:.40} is not jacobian or hessian")
    if record.mode not in modes:
        raise InputError(f"{where}: a {record.kind} record has mode {' or '.join(modes)}, got {record.mode!r:.40}")
    m, n = record.shape
    if min(m, n) < 0 or max(m, n) > 2**62:
        raise InputError(f"{where}: shape {list(record.shape)} is not two non-negative sizes")
    if record.kind == "hessian" and (m != n or record.triangle != "full"):
        raise InputError(f"{where}: a Hessian record is square with triangle = \"full\", got shape "
                         f"{list(record.shape)} and triangle {record.triangle!r:.20}")
    if len(set(record.wrt)) != len(record.wrt) or any(w < 0 for w in record.wrt):
        raise InputError(f"{where}: wrt {list(record.wrt)} are not distinct argument indices")
    check_csr(record.indptr, record.indices, record.shape, f"{where}: pattern (row_pointers, column_indices)")
    if record.nnz != len(record.indices):
        raise InputError(f"{where}: nnz is {record.nnz}, the pattern has {len(record.indices)} entries")
    check_colors(record.indptr, record.indices, record.shape, record.colors, modes[record.mode], record.num_colors,
                 f"{where}: colors")
    if fn is not None:
        from jaxlib.mlir import ir

        try:
            results = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results
            result = ir.RankedTensorType(results[0]) if len(results) == 1 else None
        except (KeyError, ValueError, TypeError):
            result = None
        if result is None or list(result.shape) != [record.nnz]:
            got = "no single ranked result" if result is None else f"a result of shape {list(result.shape)}"
            raise InputError(f"{where}: nnz is {record.nnz}, but @{record.name} has {got}")


def read_injected(module, name: str | None = None) -> InjectedDerivative:
    """The ``sparsity.derivative`` record of the injected function ``name`` of ``module`` (any form
    :func:`compile_module` takes, or a ``func.func`` op itself); ``name=None`` takes the only function that
    has one.

    Raises:
        InputError: the module cannot be read, it has no function ``name`` (or, with ``name=None``, not exactly
            one function with a record), or the record is missing or malformed (not a well-formed CSR pattern, no
            valid coloring for its mode, another number of values than the function returns).

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import inject_jacobian
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<2xf32> {
        ...   %a = stablehlo.slice %x [1:3] : (tensor<3xf32>) -> tensor<2xf32>
        ...   func.return %a : tensor<2xf32>
        ... }''')
        >>> info = ss.read_injected(module, inject_jacobian(module))
        >>> info.shape, info.nnz, info.mode, info.num_colors, info.indices.tolist()
        ((2, 3), 2, 'forward', 1, [1, 2])
    """
    from ..ir.helpers import functions

    op = getattr(module, "operation", None)
    if op is not None and op.name == "func.func":
        return read_function_record(op)
    m = _load(module)
    with m.context:
        fns = functions(m)
        if name is None:
            recorded = [n for n, f in fns.items() if RECORD_ATTRIBUTE in f.attributes]
            if len(recorded) != 1:
                raise InputError(f"the module has {len(recorded)} functions with a {RECORD_ATTRIBUTE} record "
                                 f"({', '.join('@' + n for n in recorded) or 'none'}); name one")
            name = recorded[0]
        if name not in fns:
            raise InputError(f"no function '@{name}' in the module (functions: {', '.join(fns) or 'none'})")
        return read_function_record(fns[name])

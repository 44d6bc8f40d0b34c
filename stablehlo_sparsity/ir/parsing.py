"""Reading StableHLO: the one way this package turns text or bytes into an MLIR module.

* :func:`parse_source` — text with ``file:line:col`` locations (a ``--split-input-file`` chunk keeps its
  original line numbers), top-level ops wrapped in a module like ``mlir-opt`` does, absurd nesting refused
  before MLIR's recursive parser would overflow its stack, errors as :class:`DiagnosticError`;
* :func:`parse_module` — the API's entry, an ``ir.Module``: text, a path, or bytes in any form StableHLO
  travels in (MLIR bytecode, StableHLO portable artifacts, serialized ``jax.export`` artifacts,
  :func:`parse_shipped`); :func:`as_module` also takes a ``jax.export.Exported`` (:func:`exported_module`);
* :func:`make_context` — an MLIR context with the dialects JAX emits.
"""

from __future__ import annotations

import re
import sys
from typing import Any, cast
from dataclasses import dataclass, field

import numpy as np

from ..errors import DynamicShapeError, InputError, format_location

__all__ = ["Diagnostic", "DiagnosticError", "diagnostic_error", "make_context", "MAX_NESTING", "check_nesting",
           "parse_source", "parse_module", "parse_shipped", "as_module", "BYTECODE_MAGIC", "is_exported",
           "exported_module"]


# ---------------------------------------------------------------------------------------------- diagnostics
@dataclass
class Diagnostic:
    location: str  # "file:line:col"
    severity: str  # "error" | "warning" | "note" | "remark"
    message: str
    notes: list["Diagnostic"] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"{self.location}: {self.severity}: {self.message}"]
        lines += [str(n) for n in self.notes]
        return "\n".join(lines)


class DiagnosticError(InputError):
    """MLIR reported errors (parsing, verification, a failed pass): ``diagnostics`` has them all."""

    def __init__(self, diagnostics: list[Diagnostic], fallback: str = "error"):
        self.diagnostics = diagnostics
        first = diagnostics[0] if diagnostics else None
        super().__init__(first.message if first else fallback, first.location if first else None)

    def __str__(self) -> str:
        return "\n".join(str(d) for d in self.diagnostics) or self.message


_SEVERITY = {0: "error", 1: "warning", 2: "note", 3: "remark"}


def _convert(d) -> Diagnostic:
    sev = getattr(d, "severity", 0)
    sev = _SEVERITY.get(int(sev) if not hasattr(sev, "value") else int(sev.value), "error") \
        if not isinstance(sev, str) else sev
    return Diagnostic(format_location(d.location), sev, d.message, [_convert(n) for n in d.notes])


def diagnostic_error(e, fallback: str) -> DiagnosticError:
    """A :class:`DiagnosticError` from an ``ir.MLIRError``."""
    diags = [_convert(d) for d in getattr(e, "error_diagnostics", [])]
    if not diags:
        text = str(e).strip()
        diags = [Diagnostic("<unknown>", "error", text.splitlines()[-1] if text else fallback)]
    return DiagnosticError(diags, fallback)


# --------------------------------------------------------------------------- context and parsing
_PASSES_REGISTERED = False


def make_context():
    """An MLIR context with the dialects JAX emits (stablehlo, chlo, func, sdy, mhlo, …) without importing
    jax itself (the driver starts in a fraction of the time).  Falls back to JAX's own context factory.

    Examples:
        >>> from jaxlib.mlir import ir
        >>> from stablehlo_sparsity.passes import make_context
        >>> with make_context():
        ...     module = ir.Module.parse("func.func @f(%x: tensor<f32>) -> tensor<f32> { return %x : tensor<f32> }")
        >>> module.body.operations[0].operation.name
        'func.func'
    """
    global _PASSES_REGISTERED
    from jaxlib.mlir import ir

    try:
        from jaxlib.mlir._mlir_libs import _jax_mlir_ext
        from jaxlib.mlir.dialects import chlo, mhlo, sdy, stablehlo

        class _Context(ir.Context):
            def __init__(self):
                # ir.Context.__init__ would load every dialect linked into jaxlib; load only JAX's set.
                super(ir.Context, self).__init__()

        ctx = _Context()
        registry = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(registry)
        ctx.append_dialect_registry(registry)
        ctx.load_all_available_dialects()
        sdy.register_dialect(ctx)
        mhlo.register_mhlo_dialect(ctx)
        chlo.register_dialect(ctx)
        stablehlo.register_dialect(ctx)
    except Exception:  # pragma: no cover - a jaxlib without these private hooks
        from .._compat import jax_context_factory

        ctx = jax_context_factory()()
    if not _PASSES_REGISTERED:
        try:  # makes stablehlo-* passes usable in pipelines
            from jaxlib.mlir._mlir_libs import _stablehlo

            _stablehlo.register_stablehlo_passes()
        except Exception:  # pragma: no cover
            pass
        _PASSES_REGISTERED = True
    return ctx


_MULTI_TOP = re.compile(r"source must contain a single top-level operation, found: (\d+)")


def parse_source(text: str, name: str = "-", *, first_line: int = 1, context=None):
    """Parse MLIR text into a ``builtin.module`` op view whose locations are ``name:line:col``.

    ``first_line`` is the line of ``text`` in the original file (for ``--split-input-file`` chunks): the
    text is padded with newlines so diagnostics and locations keep the original line numbers.  Like
    ``mlir-opt``, top-level ops that are not a module are wrapped in one.  Parse errors raise
    :class:`DiagnosticError`.

    Raises:
        DiagnosticError: MLIR reports errors while parsing (an ``InputError``).
        InputError: the text nests too deeply, or MLIR's bindings refuse a malformed attribute.

    Examples:
        >>> from stablehlo_sparsity.passes import parse_source
        >>> op = parse_source("func.func @f(%x: tensor<f32>) -> tensor<f32> { return %x : tensor<f32> }", "f.mlir")
        >>> op.operation.name, [f.operation.name for f in op.regions[0].blocks[0].operations]
        ('builtin.module', ['func.func'])
        >>> parse_source("func.func @f(", "f.mlir")
        Traceback (most recent call last):
        ...
        stablehlo_sparsity.ir.parsing.DiagnosticError: f.mlir:1:...
    """
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import builtin

    # MLIR's recursive-descent parser overflows its stack on absurd nesting: refuse before it runs.
    check_nesting(text, name)
    ctx = context or make_context()
    pad = "\n" * (first_line - 1)
    with ctx:
        try:
            op = ir.Operation.parse(pad + text, source_name=name)
        except (ValueError, OverflowError, RuntimeError, MemoryError) as e:
            # the bindings raise these for some malformed attributes (e.g. a shape that overflows)
            raise InputError(f"could not parse the input: {type(e).__name__}: {str(e).splitlines()[0][:300]}",
                             f"{name}:{first_line}:1") from None
        except ir.MLIRError as e:
            m = _MULTI_TOP.search(str(e))
            if m is None:
                raise diagnostic_error(e, "could not parse the input") from None
            count = int(m.group(1))
            if count == 0:
                return builtin.ModuleOp(loc=ir.Location.file(name, first_line, 1))
            # Several top-level ops: wrap them in a module.  Put `module {` on a padding line when there is
            # one, else in front of the first line (only columns of that line shift, by 8).
            wrapped = "module {" + pad + text + "\n}"
            try:
                wrapper = ir.Operation.parse(wrapped, source_name=name)
            except ir.MLIRError as e2:
                raise diagnostic_error(e2, "could not parse the input") from None
            # The synthetic `module {` sits on line 1; give the module the first op's location instead
            # (it is where module-level diagnostics, e.g. a missing entry function, should point).
            ops = list(cast(Any, wrapper).body.operations)  # typed from jaxlib 0.11 on, untyped before
            module = builtin.ModuleOp(loc=ops[0].location)
            for inner in ops:
                inner.operation.detach_from_parent()
                cast(Any, module).body.append(inner.operation)
            return module
        if op.operation.name == "builtin.module":
            return op
        module = builtin.ModuleOp(loc=op.location)
        cast(Any, module).body.append(op)
        return module


#: Deepest bracket nesting accepted by :func:`check_nesting` (MLIR's recursive-descent parser overflows the C++
#: stack — a segfault — at a few thousand levels: ~2,500 nested regions, ~10,000 nested attributes).
MAX_NESTING = 1000


def check_nesting(text: str | bytes, name: str = "<input>") -> None:
    """Refuse text whose ``( [ { <`` brackets nest deeper than :data:`MAX_NESTING`, before MLIR parses it.

    One vectorized pass over the bytes; ``>`` of ``->`` is not a closing bracket.  Brackets inside strings
    and comments count too: a (balanced) annotation string costs one level, so only absurd inputs are refused.
    """
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else bytes(text)
    b = np.frombuffer(data, dtype=np.uint8)
    if len(b) == 0:
        return
    opens = (b == ord("(")) | (b == ord("[")) | (b == ord("{")) | (b == ord("<"))
    closes = (b == ord(")")) | (b == ord("]")) | (b == ord("}")) | (b == ord(">"))
    closes[1:] &= b[:-1] != ord("-")
    depth = np.cumsum(opens.astype(np.int32) - closes.astype(np.int32))
    k = int(np.argmax(depth))
    if int(depth[k]) > MAX_NESTING:
        line = int(np.count_nonzero(b[:k] == ord("\n"))) + 1
        col = k - (data.rfind(b"\n", 0, k) + 1) + 1
        raise InputError(f"brackets nested {int(depth[k])} deep, above the limit of {MAX_NESTING}: MLIR's parser "
                         "would overflow its stack", f"{name}:{line}:{col}")


def parse_module(text_or_path, *, is_path: bool = False):
    """Parse StableHLO text — or a file (``is_path``), keeping ``file:line:col`` locations — into an
    ``ir.Module`` (what MLIR's and JAX's own APIs take), in a context with every dialect JAX needs; a file may
    also be MLIR bytecode, a StableHLO portable artifact or a serialized ``jax.export`` artifact.  The same
    policies as :func:`parse_source`: nesting refused first, MLIR's diagnostics in the :class:`InputError`.

    Raises:
        InputError: the file cannot be opened, the text does not parse (MLIR's diagnostics in the message), or
            it nests too deeply.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> module = ss.parse_module("func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> { return %x : tensor<2xf32> }")
        >>> [op.operation.name for op in module.body.operations]
        ['func.func']
        >>> ss.parse_module("func.func @f(")
        Traceback (most recent call last):
        ...
        stablehlo_sparsity.errors.InputError: could not parse the module: ...
    """
    import os

    from jaxlib.mlir import ir

    if isinstance(text_or_path, os.PathLike):  # (a pathlib.Path is a file whatever is_path says)
        text_or_path, is_path = os.fspath(text_or_path), True
    if not isinstance(text_or_path, (str, bytes)):
        raise InputError(f"parse_module takes StableHLO text, bytes or a path, got {type(text_or_path).__name__}")
    if is_path:
        path = text_or_path = str(text_or_path)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise InputError(f"could not open input file: {e.strerror or e}", path) from None
        shipped = parse_shipped(data, path)  # .mlirbc, portable artifacts, jax.export
        if shipped is not None:
            return shipped
        check_nesting(data, path)
    else:
        check_nesting(text_or_path)
    try:
        with make_context():
            return ir.Module.parseFile(text_or_path) if is_path else ir.Module.parse(text_or_path)
    except ir.MLIRError as e:
        diags = "; ".join(f"{d.location}: {d.message}" for d in diagnostic_error(e, str(e)).diagnostics)
        raise InputError(f"could not parse the module: {diags}") from None
    except (ValueError, OverflowError, RuntimeError, MemoryError) as e:
        # C++ exceptions escaping the parser (e.g. an attribute too large to convert: "SmallVector unable to
        # grow") arrive as Python exceptions, not as MLIR diagnostics
        raise InputError(f"could not parse the module: {type(e).__name__}: {e}") from None


BYTECODE_MAGIC = b"ML\xefR"
_PORTABLE_VERSION = re.compile(rb"StableHLO_v(\d+)\.(\d+)\.(\d+)")


def parse_shipped(data: bytes, name: str = "<input>"):
    """A module from the binary forms StableHLO travels in: MLIR bytecode (``.mlirbc``), a StableHLO portable
    artifact (versioned VHLO bytecode), or a serialized ``jax.export`` artifact.  ``None`` when ``data`` is
    none of them (then it is text).  Version mismatches raise :class:`InputError` naming both versions."""
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _stablehlo

    data = bytes(data)
    if data.startswith(BYTECODE_MAGIC):
        ctx = make_context()
        m = _PORTABLE_VERSION.search(data[:4096])
        if m is not None:  # a portable artifact: VHLO at a given StableHLO version
            version = ".".join(x.decode() for x in m.groups())
            current = _stablehlo.get_current_version()
            if tuple(int(x) for x in m.groups()) > tuple(int(x) for x in current.split(".")):
                raise InputError(f"portable artifact of StableHLO v{version} is newer than this jaxlib's StableHLO "
                                 f"v{current}: upgrade jaxlib or re-serialize for v{current}", name)
            try:
                return _stablehlo.deserialize_portable_artifact(ctx, data)
            except Exception as e:
                raise InputError(f"could not read the StableHLO portable artifact (v{version}; this jaxlib reads "
                                 f"v{_stablehlo.get_minimum_version()} to v{current}): {e}", name) from None
        try:
            with ctx:
                return ir.Module.parse(data)
        except ir.MLIRError as e:
            diags = "; ".join(f"{d.location}: {d.message}" for d in diagnostic_error(e, str(e)).diagnostics)
            raise InputError(f"could not read the MLIR bytecode: {diags}", name) from None
    try:
        data.decode("utf-8")
        return None  # text
    except UnicodeDecodeError:
        pass
    try:
        from jax import export as jexport

        exp = jexport.deserialize(bytearray(data))
    except Exception as e:
        if isinstance(e, ImportError) or "flatbuffers" in str(e):
            raise InputError("reading a serialized jax.export artifact needs the 'flatbuffers' package", name) \
                from None
        if "version" in str(e).lower():
            raise InputError(f"serialized jax.export artifact of an unsupported version: {e}", name) from None
        return None  # neither: the caller reports the bytes as invalid text
    return exported_module(exp)


# ---------------------------------------------------------------------------------------------- jax.export
def is_exported(obj) -> bool:
    """Whether ``obj`` is a ``jax.export.Exported`` (JAX is not imported for the question: an ``Exported``
    exists only once it is)."""
    export = sys.modules.get("jax.export")
    return export is not None and isinstance(obj, export.Exported)


def exported_module(exp):
    """The ``ir.Module`` of a ``jax.export.Exported`` whose entry ``@main`` takes the Exported's own inputs —
    ``exp.in_avals``, the flattened arguments it was exported for — and nothing else, so that ``wrt`` counts them
    and its default (argument 0) is the Exported's first input, as ``argnums=0`` of the function.

    The exported module's own ``@main`` is that only when it is single-platform, keeps every input and uses no
    global constants: then it is read as it is (its text, checked like any text).  Otherwise (a multi-platform
    export, whose ``@main`` takes a leading ``_platform_index``, or one that drops the inputs the function does not
    use, ``exp.module_kept_var_idx``) a new ``@main`` of the Exported's inputs calls it (:func:`_with_own_inputs`)
    with the platform index a constant: the analysis, the importer and XLA then read the program of one platform,
    the one ``exp.call`` runs here.

    Raises:
        DynamicShapeError: the export is shape-polymorphic (a symbolic dimension).
        InputError: a calling convention this package does not read (ordered effects in a module that needs a
            new ``@main``), or an unused input of a dtype it cannot declare.
    """
    symbolic = [f"input {i}: {a.str_short() if hasattr(a, 'str_short') else a}" for i, a in enumerate(exp.in_avals)
                if not all(isinstance(d, (int, np.integer)) for d in a.shape)]
    if symbolic:
        raise DynamicShapeError(f"the jax.export artifact is shape-polymorphic ({'; '.join(symbolic)}); sparsity "
                                "patterns need static shapes: export it with concrete shapes")
    module = parse_module(exp.mlir_module())
    if len(exp.platforms) == 1 and not exp.uses_global_constants \
            and tuple(exp.module_kept_var_idx) == tuple(range(len(exp.in_avals))):
        return module
    return _with_own_inputs(module, exp)


#: Element types of the inputs an exported module leaves out (as ``jnp`` dtypes name them → MLIR).
_MLIR_ELEMENT_TYPES = {"bool": "i1", "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
                       "complex64": "complex<f32>", "complex128": "complex<f64>",
                       **{f"int{b}": f"i{b}" for b in (8, 16, 32, 64)},
                       **{f"uint{b}": f"ui{b}" for b in (8, 16, 32, 64)}}


def _tensor_type_text(aval) -> str:
    element = _MLIR_ELEMENT_TYPES.get(np.dtype(aval.dtype).name)
    if element is None:
        raise InputError(f"the jax.export artifact has an unused input of dtype {aval.dtype}, which this package "
                         "cannot declare: export the function with that input used, or without it")
    return f"tensor<{''.join(f'{d}x' for d in aval.shape)}{element}>"


def _with_own_inputs(module, exp):
    """:func:`exported_module` for a module whose ``@main`` is not the Exported's inputs.  JAX's calling
    convention (``exp.calling_convention_version`` 9 on): the platform index first when there are several
    platforms, then the kept inputs (``exp.module_kept_var_idx``).  ``@main`` becomes the private
    ``@_exported_main``, called by a new ``@main`` of every input (:func:`_wrapper_text`)."""
    from jaxlib.mlir import ir

    leading = 1 if len(exp.platforms) > 1 else 0
    with module.context:
        main = next((op for op in module.body.operations if op.operation.name == "func.func"
                     and "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == "main"),
                    None)
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value) if main is not None else None
        if ftype is None or exp.ordered_effects or len(ftype.inputs) != leading + len(exp.module_kept_var_idx):
            raise InputError(f"the jax.export artifact of {exp.fun_name!r} has a calling convention this package "
                             f"does not read (version {exp.calling_convention_version}, platforms "
                             f"{tuple(exp.platforms)}, ordered effects {list(exp.ordered_effects)}): export it for "
                             "one platform")
        text = _wrapper_text(exp, [str(t) for t in ftype.inputs], [str(t) for t in ftype.results], leading)
        parsed = ir.Module.parse(text)  # (kept alive until the wrapper is detached: it owns the ops)
        wrapper = list(parsed.body.operations)[1]
        wrapper.operation.detach_from_parent()
        main.attributes["sym_name"] = ir.StringAttr.get("_exported_main")
        main.attributes["sym_visibility"] = ir.StringAttr.get("private")
        module.body.append(wrapper.operation)
    return module


def _platform_index(exp) -> int:
    """The platform ``exp.call`` runs here: the default backend's when the export covers it (JAX's ``gpu`` is
    ``cuda`` or ``rocm``), else the export's first."""
    import jax

    here = jax.default_backend()
    covered = [i for i, p in enumerate(exp.platforms) if p == here or here == "gpu" and p in ("cuda", "rocm")]
    return covered[0] if covered else 0


def _wrapper_text(exp, inputs: list[str], results: list[str], leading: int) -> str:
    """The text of the new ``@main`` of :func:`_with_own_inputs` (one argument per ``exp.in_avals``; the platform
    index a constant, :func:`_platform_index`), beside a declaration of ``@_exported_main`` (the parser checks
    the call against it).  Its ops have no location: a message about an op of the export names the export's."""
    kept = list(exp.module_kept_var_idx)
    own = [inputs[leading + kept.index(i)] if i in kept else _tensor_type_text(a) for i, a in enumerate(exp.in_avals)]
    operands = [f"%arg{i}" for i in kept]
    body = []
    if leading:
        body.append(f"%platform = stablehlo.constant dense<{_platform_index(exp)}> : {inputs[0]} loc(unknown)")
        operands.insert(0, "%platform")
    returned = [f"%r#{i}" for i in range(len(results))] if len(results) > 1 else ["%r"] if results else []
    call = f"func.call @_exported_main({', '.join(operands)}) : ({', '.join(inputs)}) -> ({', '.join(results)})"
    target = "" if not results else "%r = " if len(results) == 1 else f"%r:{len(results)} = "
    body.append(f"{target}{call} loc(unknown)")
    body.append(f"func.return {', '.join(returned)} : {', '.join(results)} loc(unknown)" if results
                else "func.return loc(unknown)")
    signature = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(own))
    return (f"func.func private @_exported_main({', '.join(inputs)}) -> ({', '.join(results)}) loc(unknown)\n"
            f"func.func public @main({signature}) -> ({', '.join(results)}) {{\n  " + "\n  ".join(body)
            + "\n} loc(unknown)")


#: How MLIR text can begin (after leading whitespace): a module, a function, an attribute alias, a comment.
_TEXT_STARTS = ("module", "func", "#", "//")


def source_path(source) -> str | None:
    """The file a module source names, or ``None`` when it is contents (an ``ir.Module``, bytes, MLIR text):
    a ``pathlib.Path`` / ``os.PathLike`` is always a path; a ``str`` is MLIR text when it contains ``{`` or
    starts with ``module``, ``func``, ``#`` or ``//``, and otherwise the path of a file that must exist."""
    import os

    if isinstance(source, str) and ("{" in source or source.lstrip().startswith(_TEXT_STARTS)):
        return None
    if not isinstance(source, (str, os.PathLike)):
        return None
    path = os.fspath(source)
    path = os.fsdecode(path) if isinstance(path, bytes) else path
    if not os.path.isfile(path):
        raise InputError(f"no such file: {path!r} (a str is read as a path unless it looks like MLIR text: "
                         "it contains '{' or starts with module, func, # or //)")
    return path


def as_module(module_or_text):
    """An ``ir.Module`` from a module, StableHLO text, bytes in any of the forms of :func:`parse_shipped`, a
    ``jax.export.Exported`` (:func:`exported_module`: its entry takes the Exported's own inputs), or a path to a
    file holding any of these (the rule: :func:`source_path`; a file keeps its ``file:line:col`` locations)."""
    if is_exported(module_or_text):
        return exported_module(module_or_text)
    path = source_path(module_or_text)
    if path is not None:
        return parse_module(path, is_path=True)
    if isinstance(module_or_text, (bytes, bytearray, memoryview)):
        data = bytes(module_or_text)
        shipped = parse_shipped(data)
        if shipped is not None:
            return shipped
        try:
            module_or_text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"module text is not valid UTF-8 (byte 0x{data[e.start]:02x} at offset "
                             f"{e.start})") from None
    if isinstance(module_or_text, str):
        return parse_module(module_or_text)
    if hasattr(module_or_text, "body") and hasattr(module_or_text, "context"):
        return module_or_text
    raise InputError(f"expected an ir.Module, a jax.export.Exported, StableHLO text or bytes, got "
                     f"{type(module_or_text).__name__}")

"""Pass registry, textual pipelines mixing our passes with MLIR's, and source parsing with locations.

jaxlib's ``PassManager.parse`` only knows passes registered in C++, so a textual pipeline such as

    builtin.module(sparsity-fold-constants{materialize=true},canonicalize,func.func(cse),sparsity-annotate)

is split at its top-level commas here: our pass names become Python passes (``pm.add(callable, ...)``),
everything else — builtin passes with their ``{options}``, nested ``func.func(...)`` pipelines — goes to
``pm.add("text")`` unchanged, in order, in one ``PassManager``.  Our passes work on the whole module, so
they cannot be nested inside ``func.func(...)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from stablehlo_sparsity.errors import InputError, SparsityError

__all__ = [
    "PassInfo",
    "PASSES",
    "DiagnosticError",
    "make_context",
    "parse_source",
    "parse_pass_options",
    "split_pipeline",
    "build_pass_manager",
    "run_pipeline",
]


# --------------------------------------------------------------------------- diagnostics
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
    from stablehlo_sparsity.errors import format_location

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
    jax itself (the driver starts in a fraction of the time).  Falls back to JAX's own context factory."""
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
        from jax._src.interpreters import mlir as jax_mlir

        ctx = jax_mlir.make_ir_context()
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
    :class:`DiagnosticError`."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import builtin

    from stablehlo_sparsity.api import check_nesting

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
            ops = list(wrapper.body.operations)
            module = builtin.ModuleOp(loc=ops[0].location)
            for inner in ops:
                inner.operation.detach_from_parent()
                module.body.append(inner.operation)
            return module
        if op.operation.name == "builtin.module":
            return op
        module = builtin.ModuleOp(loc=op.location)
        module.body.append(op)
        return module


# --------------------------------------------------------------------------- our passes
@dataclass(frozen=True)
class Option:
    name: str
    kind: str  # "int" | "bool" | "str" | "ints" | "choice"
    default: Any
    help: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class PassInfo:
    """A Python-defined pass: ``factory(options: dict) -> run(op, pass_)``."""

    argument: str
    description: str
    options: tuple[Option, ...]
    factory: Callable[[dict], Callable]

    def option(self, name: str) -> Option:
        for o in self.options:
            if o.name == name:
                return o
        valid = ", ".join(o.name for o in self.options) or "none"
        raise InputError(f"unknown option '{name}' for pass '{self.argument}' (options: {valid})")


_LOC = re.compile(r"^(.*):(\d+):(\d+)$")


def _location_of(err: SparsityError, op):
    """The ``ir.Location`` an error names (``file:line:col``), else the op's."""
    from jaxlib.mlir import ir

    m = _LOC.match(err.location or "")
    if m:
        return ir.Location.file(m.group(1), int(m.group(2)), int(m.group(3)), context=op.context)
    return op.location


def mlir_message(err: SparsityError) -> str:
    """The error's message, with the Python keyword hint spelled as the pass/driver option."""
    return err.message.replace("pass on_unknown='conservative'",
                               "use on-unknown=conservative (--on-unknown=conservative)")


def _as_pass(fn: Callable, argument: str) -> Callable:
    """Wrap ``fn(module_op)``: input errors become MLIR error diagnostics at their location plus a pass
    failure (``PassManager.run`` then raises ``ir.MLIRError``); other exceptions propagate."""

    def run(op, pass_):
        try:
            fn(op)
        except SparsityError as e:
            _location_of(e, op).emit_error(mlir_message(e))
            pass_.signal_pass_failure()

    run.__name__ = argument.replace("-", "_")
    return run


def _annotate_factory(opts: dict) -> Callable:
    from .annotate import AnnotateOptions, annotate

    o = AnnotateOptions(entry=opts.get("entry") or None, wrt=opts.get("wrt"),
                        on_unknown=opts.get("on-unknown", "error"),
                        max_elements=opts.get("max-elements", 64), max_nnz=opts.get("max-nnz", 1024))
    return _as_pass(lambda op: annotate(op, o), "sparsity-annotate")


def _strip_factory(opts: dict) -> Callable:
    from .strip import strip

    return _as_pass(lambda op: strip(op), "sparsity-strip")


def _fold_factory(opts: dict) -> Callable:
    def run(op):
        from . import fold_constants as fc  # the folding engine (lazy: it may be large)

        fc.fold_constants(op, materialize=bool(opts.get("materialize", False)),
                          max_elements=int(opts.get("max-elements", 10_000_000)))

    return _as_pass(run, "sparsity-fold-constants")


def _jacobian_factory(opts: dict) -> Callable:
    from .jacobian import inject_jacobian

    return _as_pass(lambda op: inject_jacobian(op, entry=opts.get("entry") or None, wrt=opts.get("wrt"),
                                               mode=opts.get("mode", "auto"),
                                               on_unknown=opts.get("on-unknown", "error")), "sparsity-jacobian")


def _hessian_factory(opts: dict) -> Callable:
    from .jacobian import inject_hessian

    return _as_pass(lambda op: inject_hessian(op, entry=opts.get("entry") or None, wrt=opts.get("wrt"),
                                              on_unknown=opts.get("on-unknown", "error")), "sparsity-hessian")


_DERIVATIVE_OPTIONS = (
    Option("entry", "str", None, "entry function (default: main, else the only public one)"),
    Option("wrt", "str", None, "differentiated entry arguments: comma-separated indices or 'all' (default: 0)"),
    Option("on-unknown", "choice", "error", "ops without a rule: error or conservative", ("error", "conservative")),
)

PASSES: dict[str, PassInfo] = {
    p.argument: p
    for p in [
        PassInfo(
            "sparsity-fold-constants",
            "Evaluate ops whose operands are all known constants (NumPy, StableHLO semantics); annotate "
            "the folded values (sparsity.const) or materialize them as stablehlo.constant ops",
            (
                Option("materialize", "bool", False, "replace folded ops by stablehlo.constant"),
                Option("max-elements", "int", 10_000_000, "do not fold values with more elements"),
            ),
            _fold_factory,
        ),
        PassInfo(
            "sparsity-annotate",
            "Run the sparsity analysis and attach each value's index sets as sparsity.* attributes",
            (
                Option("entry", "str", None, "entry function (default: main, else the only public one)"),
                Option("wrt", "ints", None, "comma-separated entry argument indices to differentiate"),
                Option("on-unknown", "choice", "error", "ops without a rule: error or conservative",
                       ("error", "conservative")),
                Option("max-elements", "int", 64, "values with more elements get a summary"),
                Option("max-nnz", "int", 1024, "values with more dependencies get a summary"),
            ),
            _annotate_factory,
        ),
        PassInfo("sparsity-strip", "Remove every sparsity.* attribute", (), _strip_factory),
        PassInfo(
            "sparsity-jacobian",
            "Add @<entry>_jacobian: the entry's arguments -> its Jacobian's nonzeros in CSR order of the detected "
            "pattern (compressed by coloring; pattern recorded as the sparsity.derivative attribute)",
            _DERIVATIVE_OPTIONS + (Option("mode", "choice", "auto", "coloring: auto (fewer colors), forward "
                                          "(columns, JVPs) or reverse (rows, VJPs)", ("auto", "forward", "reverse")),),
            _jacobian_factory,
        ),
        PassInfo(
            "sparsity-hessian",
            "Add @<entry>_hessian for a scalar entry: the full symmetric Hessian's nonzeros in CSR order of its "
            "pattern (star coloring; pattern recorded as the sparsity.derivative attribute)",
            _DERIVATIVE_OPTIONS,
            _hessian_factory,
        ),
    ]
}


def _convert_value(info: PassInfo, opt: Option, raw: str | None):
    where = f"option '{opt.name}' of pass '{info.argument}'"
    if opt.kind == "bool":
        if raw is None or raw.lower() in ("true", "1", "on", "yes"):
            return True
        if raw.lower() in ("false", "0", "off", "no"):
            return False
        raise InputError(f"{where} expects true or false, got '{raw}'")
    if raw is None:
        raise InputError(f"{where} needs a value ({opt.name}=...)")
    if opt.kind == "int":
        try:
            v = int(raw)
        except ValueError:
            raise InputError(f"{where} expects an integer, got '{raw}'") from None
        if v < 0:
            raise InputError(f"{where} must not be negative, got {v}")
        return v
    if opt.kind == "ints":
        try:
            return [int(x) for x in raw.split(",") if x.strip()]
        except ValueError:
            raise InputError(f"{where} expects comma-separated integers, got '{raw}'") from None
    if opt.kind == "choice" and raw not in opt.choices:
        raise InputError(f"{where} must be one of {', '.join(opt.choices)}, got '{raw}'")
    return raw


def parse_pass_options(info: PassInfo, text: str) -> dict:
    """``"max-elements=8 entry=f"`` → ``{"max-elements": 8, "entry": "f"}`` (MLIR's pass option syntax:
    space-separated ``key=value``; a bare boolean option means true)."""
    out = {}
    for item in text.split():
        key, eq, raw = item.partition("=")
        opt = info.option(key)
        out[opt.name] = _convert_value(info, opt, raw if eq else None)
    return out


# --------------------------------------------------------------------------- pipelines
def _split_top(text: str) -> list[str]:
    """Split at commas outside parentheses, braces and quotes."""
    parts, depth, cur, quote = [], 0, [], False
    for ch in text:
        if ch == '"':
            quote = not quote
        elif not quote and ch in "({":
            depth += 1
        elif not quote and ch in ")}":
            depth -= 1
            if depth < 0:
                raise InputError(f"unbalanced ')' or '}}' in pass pipeline '{text}'")
        if ch == "," and depth == 0 and not quote:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if depth != 0 or quote:
        raise InputError(f"unbalanced brackets in pass pipeline '{text}'")
    tail = "".join(cur).strip()
    if tail or parts:
        parts.append(tail)
    if any(not p for p in parts):
        raise InputError(f"empty element in pass pipeline '{text}'")
    return parts


_ELEMENT = re.compile(r"^([A-Za-z_][\w.\-]*)\s*(?:\{(.*)\}|\((.*)\))?\s*$", re.S)


def split_pipeline(text: str) -> list[tuple[str, Any]]:
    """Elements of a textual pipeline, in order: ``("ours", (PassInfo, options))`` or ``("mlir", text)``.

    Accepts ``builtin.module(...)`` or a bare comma-separated list."""
    text = text.strip()
    if not text:
        return []
    m = _ELEMENT.match(text)
    if m and m.group(1) == "builtin.module" and m.group(3) is not None:
        text = m.group(3).strip()
        if not text:
            return []
    out: list[tuple[str, Any]] = []
    for el in _split_top(text):
        m = _ELEMENT.match(el)
        if m is None:
            raise InputError(f"cannot parse pass pipeline element '{el}'")
        name, opts, nested = m.groups()
        if name in PASSES:
            if nested is not None:
                raise InputError(f"pass '{name}' takes options in braces: {name}{{key=value ...}}")
            out.append(("ours", (PASSES[name], parse_pass_options(PASSES[name], opts or ""))))
        else:
            if nested is not None:
                for inner in _split_top(nested) if nested.strip() else []:
                    inner_name = _ELEMENT.match(inner)
                    if inner_name and inner_name.group(1) in PASSES:
                        raise InputError(f"pass '{inner_name.group(1)}' works on the whole module and cannot "
                                         f"be nested in '{name}(...)'")
            out.append(("mlir", el))
    return out


def build_pass_manager(elements: list[tuple[str, Any]], context=None):
    """A ``PassManager`` on ``builtin.module`` running ``elements`` (from :func:`split_pipeline`) in order."""
    from jaxlib.mlir import ir, passmanager

    ctx = context or ir.Context.current
    pm = passmanager.PassManager("builtin.module", context=ctx)
    for kind, payload in elements:
        if kind == "ours":
            info, opts = payload
            pm.add(info.factory(opts), name=info.argument, argument=info.argument, description=info.description)
        else:
            try:
                pm.add(payload)
            except ValueError as e:
                msg = str(e).strip().splitlines()
                detail = msg[-1] if msg else ""
                raise InputError(f"unknown pass or bad pipeline element '{payload}'"
                                 + (f": {detail}" if detail else "")) from None
    return pm


def run_pipeline(module, pipeline: str | list[tuple[str, Any]]) -> None:
    """Run a textual pipeline (or :func:`split_pipeline` elements) on ``module`` in place.

    MLIR errors (including our passes' failures) raise :class:`DiagnosticError`; other Python exceptions
    raised inside a pass propagate unchanged."""
    from jaxlib.mlir import ir

    elements = split_pipeline(pipeline) if isinstance(pipeline, str) else pipeline
    op = module.operation
    with op.context:
        pm = build_pass_manager(elements, op.context)
        try:
            pm.run(op)
        except ir.MLIRError as e:
            raise diagnostic_error(e, "pass pipeline failed") from None

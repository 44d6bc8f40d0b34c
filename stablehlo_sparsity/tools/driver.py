"""``stablehlo-sparsity-opt``: an ``mlir-opt``-style driver for StableHLO sparsity analysis.

    stablehlo-sparsity-opt INPUT.mlir|INPUT.mlirbc|- [pass flags | --pass-pipeline=...] [--split-input-file]
                           [--emit=ir|pattern|hessian-pattern|json|picture] [--entry=NAME] [--wrt=0,2|all] [-o OUT]
                           [--emit-bytecode] [--max-pattern-nnz=N] [--platform=auto|portable|cpu]

Columns are the entry's argument 0 by default (as ``jax.jacfwd``'s ``argnums=0`` and the Python API);
``--wrt=0,2`` picks arguments, ``--wrt=all`` takes every argument.  ``--max-pattern-nnz=N`` sets the limit on
pattern size (default: from the memory available); ``--emit=pattern|json`` stream their text.
``--emit-bytecode`` (implied by ``-o OUT.mlirbc``) writes the module as MLIR bytecode, which the driver (and
any MLIR tool) reads back.  ``--platform`` states the target of the functions ``--sparsity-jacobian`` /
``--sparsity-hessian`` add (``portable``: StableHLO ops only; ``cpu``: LAPACK calls allowed; ``auto``: portable
when the input module is).

Pass flags run in command-line order: ``--sparsity-fold-constants[=materialize=true]``,
``--sparsity-annotate[="max-elements=N entry=f"]``, ``--sparsity-strip``, ``--sparsity-jacobian[="wrt=0 mode=auto"]``,
``--sparsity-hessian``, and MLIR's own passes by name
(``--canonicalize``, ``--cse``, ``--inline``, …).  ``--pass-pipeline='builtin.module(...)'`` takes a
textual pipeline mixing both instead.

Errors go to stderr as ``FILE:LINE:COL: error: message`` and the exit code is 1 (2 for an internal error);
there is never a Python traceback unless ``STABLEHLO_SPARSITY_TRACEBACK=1`` is set.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import warnings
from dataclasses import replace
from typing import Any

__all__ = ["main"]

PROG = "stablehlo-sparsity-opt"
DEFAULT_SPLIT_MARKER = "// -----"

# Options the argument parser owns (everything else starting with '-' is a pass flag).
_DRIVER_OPTIONS = {
    "o", "emit", "emit-bytecode", "entry", "wrt", "on-unknown", "platform", "max-pattern-nnz", "pass-pipeline",
    "split-input-file",
    "mlir-print-debuginfo",
    "mlir-print-op-generic", "allow-unregistered-dialect", "version", "help", "h",
}
_FLAG = re.compile(r"^--?([A-Za-z][\w.\-]*)(?:=(.*))?$", re.S)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits with 2; mlir-opt's usage errors exit with 1
        self.print_usage(sys.stderr)
        print(f"{PROG}: error: {message}", file=sys.stderr)
        raise SystemExit(1)


def _epilog() -> str:
    from stablehlo_sparsity.passes.pipeline import PASSES

    lines = ["passes (run in command-line order; options as --pass=\"key=value key=value\"):"]
    for info in PASSES.values():
        lines.append(f"  --{info.argument}")
        lines.append(f"      {info.description()}")
        for o in info.options():
            shown = str(o.default).lower() if o.kind == "bool" else o.default
            default = "" if o.default is None else f" (default {shown})"
            lines.append(f"      {o.name}=...: {o.help}{default}")
    lines += [
        "  --canonicalize, --cse, --inline, --symbol-dce, ...",
        "      MLIR's builtin passes, by their mlir-opt names",
        "",
        "pipelines: --pass-pipeline='builtin.module(sparsity-fold-constants{materialize=true},canonicalize,"
        "func.func(cse),sparsity-annotate{max-elements=16})'",
        "",
        "differentiated arguments: argument 0 of the entry by default (the rule of jax.jacfwd's argnums=0 and of",
        "the Python API); --wrt=0,2 selects arguments, --wrt=all every argument.",
        "",
        "exit status: 0 on success, 1 on an input error (diagnostics on stderr), 2 on an internal error.",
    ]
    return "\n".join(lines)


def _nonneg_int(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'")
    return value


def _make_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Global Jacobian sparsity analysis of StableHLO modules, mlir-opt style.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    p.add_argument("input", nargs="?", default="-",
                   help="input .mlir file (or MLIR bytecode .mlirbc, a StableHLO portable artifact, a serialized "
                        "jax.export artifact), or - for stdin (default)")
    p.add_argument("-o", dest="output", default="-", metavar="OUT", help="output file (default: stdout)")
    p.add_argument("--emit-bytecode", action="store_true",
                   help="write the module as MLIR bytecode (with --emit=ir; implied by -o OUT.mlirbc)")
    p.add_argument("--emit", choices=["ir", "pattern", "hessian-pattern", "json", "picture"], default="ir",
                   help="ir: the module after the passes (default); pattern: the Jacobian pattern in "
                        "MatrixMarket coordinate format; hessian-pattern: the Hessian pattern of a scalar entry "
                        "(both triangles, from the primal program); json: shapes, nnz and rows; picture: a text "
                        "picture")
    p.add_argument("--entry", default=None, metavar="NAME",
                   help="entry function (default: main, else the only public function)")
    p.add_argument("--wrt", default=None, metavar="I,J|all",
                   help="comma-separated entry argument indices to differentiate, or 'all' (default: 0, the "
                        "first argument, as jax.jacfwd and the Python API)")
    p.add_argument("--on-unknown", choices=["error", "conservative"], default="error",
                   help="ops without a sparsity rule: error (default) or conservative (dense, with a warning)")
    p.add_argument("--platform", choices=["auto", "portable", "cpu"], default=None,
                   help="target of the derivative functions sparsity-jacobian / sparsity-hessian add: auto (default: "
                        "portable when the module is, cpu when it already calls LAPACK), portable (StableHLO ops "
                        "only, any backend) or cpu (JAX's CPU lowering: LAPACK custom calls allowed)")
    p.add_argument("--max-pattern-nnz", default=None, metavar="N", type=_nonneg_int,
                   help="refuse patterns (and intermediate index sets) with more than N nonzeros, before allocating "
                        "them (default: what fits in three quarters of the available memory, at the analysis's "
                        "measured cost per nonzero)")
    p.add_argument("--pass-pipeline", default=None, metavar="PIPELINE",
                   help="textual pass pipeline mixing sparsity-* and MLIR passes")
    p.add_argument("--split-input-file", action="store_true",  # parsed by _split_argv, listed for --help
                   help="split the input at lines '// -----' (or --split-input-file=MARKER) and process each "
                        "chunk on its own")
    p.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations in the output IR")
    p.add_argument("--mlir-print-op-generic", action="store_true", help="print the output IR in generic form")
    p.add_argument("--allow-unregistered-dialect", action="store_true", help="accept ops of unknown dialects")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    return p


def _split_argv(argv: list[str]) -> tuple[list[str], list[tuple[str, str | None]], str | None]:
    """Separate pass flags (in order) and ``--split-input-file[=MARKER]`` from the other driver options.
    Their values need ``=`` (as in mlir-opt), so ``--sparsity-annotate input.mlir`` or
    ``--split-input-file input.mlir`` never eat the input name."""
    rest: list[str] = []
    passes: list[tuple[str, str | None]] = []
    marker: str | None = None
    it = iter(argv)
    for arg in it:
        if arg == "--":
            rest.append(arg)
            rest.extend(it)
            break
        m = _FLAG.match(arg)
        if m is None or arg == "-":
            rest.append(arg)
            continue
        name, value = m.group(1), m.group(2)
        if name in _DRIVER_OPTIONS:
            if name == "split-input-file":
                marker = DEFAULT_SPLIT_MARKER if value is None else value
            elif name == "o" and value is not None:  # -o=OUT
                rest.extend(["-o", value])
            elif arg.startswith("--") or len(name) == 1:
                rest.append(arg)
            else:
                rest.append("-" + arg)  # mlir-opt also accepts single-dash long options
            continue
        passes.append((name, value))
    return rest, passes, marker


def _pipeline_from_flags(flags, args) -> list:
    from stablehlo_sparsity.passes.pipeline import PASSES, MlirPass, PipelineElement, SparsityStep

    elements: list[PipelineElement] = []
    for name, value in flags:
        if name in PASSES:
            info = PASSES[name]
            text = (value or "").strip()
            if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
                text = text[1:-1]
            elements.append(SparsityStep(info, info.parse_options(text)))
        else:
            elements.append(MlirPass(name if not value else f"{name}{{{value}}}", f"--{name}"))
    return elements


_DERIVATIVE_PASSES = ("sparsity-jacobian", "sparsity-hessian")


def _driver_options(argument: str, args, wrt) -> dict[str, Any]:
    """The options the driver's --entry/--wrt/--on-unknown (and --platform, for the derivative passes) give the
    annotate or derivative pass named ``argument``, in the order they are filled in."""
    derivative = argument in _DERIVATIVE_PASSES
    given: dict[str, Any] = {}
    if args.entry is not None:
        given["entry"] = args.entry
    if wrt is not None:  # the driver's --wrt, when given, also selects what the passes differentiate
        given["wrt"] = ",".join(str(i) for i in wrt) if derivative and not isinstance(wrt, str) else wrt
    if args.on_unknown != "error":
        given["on-unknown"] = args.on_unknown
    if derivative and args.platform is not None:
        given["platform"] = args.platform
    return given


def _apply_defaults(elements, args, wrt) -> list:
    """Driver-level --entry/--wrt/--on-unknown (and --platform for the derivative passes) fill in pass options
    not given explicitly."""
    from stablehlo_sparsity.passes.pipeline import SparsityStep

    out = []
    for el in elements:
        if isinstance(el, SparsityStep) and el.info.argument in (*_DERIVATIVE_PASSES, "sparsity-annotate"):
            opts = dict(el.options)
            for key, value in _driver_options(el.info.argument, args, wrt).items():
                opts.setdefault(key, value)
            el = replace(el, options=opts)
        out.append(el)
    return out


def _resolve_wrt_all(elements, module) -> list:
    """``--wrt=all`` for annotate passes: every argument of their entry function in this module (the pass
    option takes indices)."""
    from stablehlo_sparsity.ir.attrs import function_type
    from stablehlo_sparsity.ir.helpers import functions
    from stablehlo_sparsity.passes.annotate import resolve_entry
    from stablehlo_sparsity.passes.pipeline import SparsityStep

    out = []
    for el in elements:
        if isinstance(el, SparsityStep) and el.options.get("wrt") == "all":
            opts = el.options
            try:
                entry = opts.get("entry") or resolve_entry(module, None)
            except Exception:
                entry = None  # the pass reports the missing entry itself
            with module.context:
                fn = functions(module).get(entry) if entry is not None else None
                if fn is not None:
                    opts = {**opts, "wrt": list(range(len(function_type(fn).inputs)))}
            el = replace(el, options=opts)
        out.append(el)
    return out


def _split_chunks(text: str, marker: str | None) -> list[tuple[str, int]]:
    """Chunks and the line (1-based) each starts on.  A marker line is a line whose content, stripped, is
    exactly the marker."""
    if marker is None:
        return [(text, 1)]
    lines = text.splitlines(keepends=True)
    cur: list[str]
    chunks, cur, start = [], [], 1
    for i, line in enumerate(lines, start=1):
        if line.strip() == marker:
            chunks.append(("".join(cur), start))
            cur, start = [], i + 1
        else:
            cur.append(line)
    chunks.append(("".join(cur), start))
    return chunks


def _read_input(path: str) -> tuple[str, str]:
    """The input as text, or (for MLIR bytecode, a StableHLO portable artifact or a serialized jax.export
    artifact) as an already parsed module."""
    from stablehlo_sparsity.analysis.api import parse_shipped
    from stablehlo_sparsity.errors import InputError

    name = "<stdin>" if path == "-" else path
    try:
        data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    except OSError as e:
        raise InputError(f"could not open input file: {e.strerror or e}", name) from None
    module = parse_shipped(data, name)
    if module is not None:
        return module, name
    try:
        return data.decode("utf-8"), name
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(f"input is not valid UTF-8 (byte 0x{data[e.start]:02x})", f"{name}:{line}:{col}") from None


# --------------------------------------------------------------------------- emitters
def _analyze(module, args, wrt):
    from stablehlo_sparsity.analysis.api import analyze_module_global
    from stablehlo_sparsity.analysis.interpreter import AnalysisOptions
    from stablehlo_sparsity.passes.annotate import resolve_entry

    entry = resolve_entry(module, args.entry)
    # (max_pattern_nnz: the default, which --max-pattern-nnz sets for the whole run: see _run)
    return analyze_module_global(module, entry=entry, wrt=wrt, options=AnalysisOptions(on_unknown=args.on_unknown))


def _hessian(module, args, wrt):
    """The Hessian pattern of the scalar entry, by the direct (second-order) analysis of the module."""
    from types import SimpleNamespace

    from stablehlo_sparsity.analysis.interpreter import AnalysisOptions
    from stablehlo_sparsity.passes.annotate import resolve_entry
    from stablehlo_sparsity.lattice.pattern import SparsityPattern
    from stablehlo_sparsity.analysis.second_order import hessian_pattern_of_entry

    entry = resolve_entry(module, args.entry)
    pattern, warned = hessian_pattern_of_entry(module, entry, wrt, AnalysisOptions(on_unknown=args.on_unknown))
    return SimpleNamespace(pattern=SparsityPattern(pattern), entry=entry)


#: The streaming emitters format this many nonzeros at a time: their temporaries (about 100 bytes per
#: nonzero formatted) stay a few MiB whatever the pattern's size, so the output costs no more than the
#: pattern itself.
EMIT_CHUNK = 1 << 16


def _ndigits(x):
    """Decimal digits of each non-negative integer (a loop over powers of ten, vectorized over x)."""
    import numpy as np

    nd = np.ones(len(x), np.int64)
    p = 10
    while len(x) and p <= int(x.max()):
        nd += x >= p
        p *= 10
    return nd


def _put_digits(buf, x, nd, first) -> None:
    """Write the decimal digits of ``x[i]`` into ``buf[first[i]:first[i] + nd[i]]``."""
    last = first + nd - 1
    for k in range(int(nd.max()) if len(nd) else 0):
        sel = nd > k
        buf[last[sel] - k] = 48 + (x[sel] // 10 ** k) % 10


def _format_int_pairs(a, b) -> str:
    """``"a0 b0\na1 b1\n..."`` for non-negative integer arrays, built as one byte buffer (NumPy's
    int-to-str conversion and Python formatting are several times slower on millions of entries)."""
    import numpy as np

    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    na, nb = _ndigits(a), _ndigits(b)
    end = np.cumsum(na + nb + 2)
    start = end - (na + nb + 2)
    buf = np.empty(int(end[-1]) if len(end) else 0, np.uint8)
    _put_digits(buf, a, na, start)
    _put_digits(buf, b, nb, start + na + 1)
    buf[start + na] = 32  # " "
    buf[end - 1] = 10  # "\n"
    return buf.tobytes().decode("ascii")


def _format_rows_json_inner(indptr, indices) -> str:
    """``[0, 1], [], [2]``: the rows of a CSR block, without the enclosing brackets."""
    import numpy as np

    indptr = np.asarray(indptr, np.int64)
    indptr = indptr - indptr[0]
    cols = np.asarray(indices, np.int64)
    k = len(indptr) - 1
    if k == 0:
        return ""
    nd = _ndigits(cols)
    csum = np.zeros(len(cols) + 1, np.int64)
    np.cumsum(nd + 2, out=csum[1:])  # each entry is its digits plus ", "
    row_len = np.diff(indptr)
    row_chars = 2 + csum[indptr[1:]] - csum[indptr[:-1]] - 2 * (row_len > 0)  # "[" entries "]"
    row_total = row_chars + 2
    row_total[-1] -= 2  # no ", " after the last row
    row_start = np.concatenate([[0], np.cumsum(row_total)[:-1]])
    buf = np.full(int(row_total.sum()), 32, np.uint8)  # spaces by default
    buf[row_start] = 91
    buf[row_start + row_chars - 1] = 93
    buf[(row_start + row_chars)[:-1]] = 44  # "," between rows (the space is already there)
    entry_row = np.repeat(np.arange(k), row_len)
    entry_start = row_start[entry_row] + 1 + csum[:-1] - csum[indptr[entry_row]]
    _put_digits(buf, cols, nd, entry_start)
    not_last = np.ones(len(cols), bool)
    not_last[indptr[1:][row_len > 0] - 1] = False
    buf[(entry_start + nd)[not_last]] = 44  # "," between entries
    return buf.tobytes().decode("ascii")


def _row_blocks(indptr, chunk: int | None = None):
    """``(lo, hi)`` row ranges holding about ``chunk`` nonzeros (and at most ``chunk`` rows) each."""
    import numpy as np

    chunk = EMIT_CHUNK if chunk is None else chunk
    k = len(indptr) - 1
    lo = 0
    while lo < k:
        # the first row past lo whose end is more than a chunk of nonzeros away
        hi = int(np.searchsorted(indptr, int(indptr[lo]) + chunk, side="right")) - 1
        hi = min(k, max(hi, lo + 1), lo + chunk)
        yield lo, hi
        lo = hi


def _emit_pattern(analysis, legend: str = "Jacobian sparsity of @{entry}: rows are outputs, columns are inputs"):
    """MatrixMarket coordinate pattern, streamed: one chunk of text per block of rows."""
    import numpy as np

    p = analysis.pattern
    m, n = p.shape
    csr = p.to_scipy()
    yield ("%%MatrixMarket matrix coordinate pattern general\n"
           f"% {legend.format(entry=analysis.entry)} (1-based)\n"
           f"{m} {n} {p.nnz}\n")
    for lo, hi in _row_blocks(csr.indptr):
        a, b = int(csr.indptr[lo]), int(csr.indptr[hi])
        if a == b:
            continue
        rows = np.repeat(np.arange(lo + 1, hi + 1, dtype=np.int64), np.diff(csr.indptr[lo:hi + 1]))
        yield _format_int_pairs(rows, csr.indices[a:b].astype(np.int64) + 1)


def _emit_json(analysis):
    """Shapes, nnz and the rows as lists of columns, streamed: the rows one block at a time."""
    p = analysis.pattern
    csr = p.to_scipy()
    doc = {
        "entry": analysis.entry,
        "shape": list(p.shape),
        "nnz": p.nnz,
        "inputs": [{"shape": list(s), "offset": int(o)} for s, o in zip(analysis.input_shapes, analysis.input_offsets)],
        "outputs": [{"shape": list(s), "offset": int(o)}
                    for s, o in zip(analysis.output_shapes, analysis.output_offsets)],
        "rows": "@ROWS@",
    }
    # The rows can be millions of numbers: format them in vectorized passes, not through json.dumps.
    head, tail = json.dumps(doc).split('"@ROWS@"', 1)
    yield head + "["
    first = True
    for lo, hi in _row_blocks(csr.indptr):
        text = _format_rows_json_inner(csr.indptr[lo:hi + 1], csr.indices[int(csr.indptr[lo]):int(csr.indptr[hi])])
        yield text if first else ", " + text
        first = False
    yield "]" + tail + "\n"


def _emit_picture(analysis) -> str:
    p = analysis.pattern
    m, n = p.shape
    return f"@{analysis.entry}: {m}x{n} Jacobian pattern, nnz={p.nnz}\n{p.picture()}\n"


# --------------------------------------------------------------------------- errors
_WARN = re.compile(r"^(\S[^\n]*?:\d+:\d+): (.*)$", re.S)


def _print_error(e, fallback_loc: str) -> None:
    from stablehlo_sparsity.passes.pipeline import DiagnosticError, mlir_message

    if isinstance(e, DiagnosticError):
        for d in e.diagnostics:
            print(str(d), file=sys.stderr)
        return
    loc = e.location if getattr(e, "location", None) else fallback_loc
    print(f"{loc}: error: {mlir_message(e)}", file=sys.stderr)


def _print_warnings(caught, seen: set) -> None:
    for w in caught:
        text = str(w.message)
        if text in seen:
            continue
        seen.add(text)
        m = _WARN.match(text)
        print(f"{m.group(1)}: warning: {m.group(2)}" if m else f"warning: {text}", file=sys.stderr)


# --------------------------------------------------------------------------- main
def _process_chunk(text, first_line, name, elements, args, wrt, ctx):
    from stablehlo_sparsity.errors import format_location
    from stablehlo_sparsity.passes.pipeline import parse_source, run_pipeline

    module = text if not isinstance(text, str) else parse_source(text, name, first_line=first_line, context=ctx)
    module_loc = format_location(module.operation.location)
    try:
        if wrt == "all":
            elements = _resolve_wrt_all(elements, module)
        if elements:
            run_pipeline(module, elements)
        if args.emit == "ir" and args.emit_bytecode:
            buf = io.BytesIO()  # (get_asm(binary=True) is text as bytes; write_bytecode writes MLIR bytecode)
            module.operation.write_bytecode(buf)
            return buf.getvalue()
        if args.emit == "ir":
            asm = module.operation.get_asm(enable_debug_info=args.mlir_print_debuginfo,
                                           print_generic_op_form=args.mlir_print_op_generic)
            return asm.rstrip("\n") + "\n"
        if args.emit == "hessian-pattern":
            return _emit_pattern(_hessian(module, args, wrt), "Hessian sparsity of @{entry}: both triangles, rows and "
                                 "columns are inputs")
        analysis = _analyze(module, args, wrt)
        # (pattern and json: a generator of text chunks, written as they come: see _run)
        return {"pattern": _emit_pattern, "json": _emit_json, "picture": _emit_picture}[args.emit](analysis)
    except Exception as e:
        e.module_loc = module_loc
        raise


def _print_version() -> None:
    import jaxlib

    from stablehlo_sparsity._version import __version__

    print(f"{PROG} (stablehlo_sparsity {__version__}, jaxlib {jaxlib.__version__})")


def _parse_wrt(args):
    """The driver's ``--wrt``: None when not given, else argument indices or ``"all"``."""
    from stablehlo_sparsity.ir.keywords import parse_wrt_text
    from stablehlo_sparsity.errors import InputError

    if args.wrt is None:
        return None
    try:
        return parse_wrt_text(args.wrt)
    except InputError:
        raise InputError(f"--wrt expects comma-separated argument indices or 'all', got '{args.wrt}'") from None


def _build_pipeline(args, flags, wrt) -> list:
    """The pipeline of ``--pass-pipeline`` or of the pass flags, with the driver's defaults filled in."""
    from stablehlo_sparsity.errors import InputError
    from stablehlo_sparsity.passes.pipeline import split_pipeline

    if args.pass_pipeline is not None and flags:
        raise InputError("--pass-pipeline cannot be combined with individual pass flags "
                         f"({', '.join('--' + n for n, _ in flags)})")
    if args.pass_pipeline is not None:
        elements = split_pipeline(args.pass_pipeline)
    else:
        elements = _pipeline_from_flags(flags, args)
    return _apply_defaults(elements, args, wrt)


def _check_mlir_passes(elements, ctx) -> None:
    """Reject unknown MLIR passes before reading the input (as mlir-opt does); one given as a flag is named by
    its flag."""
    from stablehlo_sparsity.errors import InputError
    from stablehlo_sparsity.passes.pipeline import MlirPass, build_pass_manager

    with ctx:
        for el in elements:
            if not isinstance(el, MlirPass):
                continue
            try:
                build_pass_manager([el], ctx)
            except InputError:
                if el.flag:
                    raise InputError(f"unknown command line option or pass '{el.flag}'") from None
                raise


def _quiet_xla(elements) -> None:
    """The derivative passes start XLA's CPU client: keep its INFO lines off stderr (unless the user set the
    logging level)."""
    from stablehlo_sparsity.passes.pipeline import SparsityStep

    if any(isinstance(el, SparsityStep) and el.info.argument in _DERIVATIVE_PASSES for el in elements) \
            and "JAX_LOGGING_LEVEL" not in os.environ and "TF_CPP_MIN_LOG_LEVEL" not in os.environ:
        import jax

        jax.config.update("jax_logging_level", "WARNING")


def _prepare(args, flags):
    """Everything checked before the input is read: ``--wrt``, the output options and the pipeline (its
    unknown passes rejected).  Returns ``(wrt, elements, ctx)``; raises :class:`InputError`."""
    from stablehlo_sparsity.passes.pipeline import make_context

    wrt = _parse_wrt(args)
    _bytecode_output(args)
    elements = _build_pipeline(args, flags, wrt)
    ctx = make_context()
    if args.allow_unregistered_dialect:
        ctx.allow_unregistered_dialects = True
    _check_mlir_passes(elements, ctx)
    _quiet_xla(elements)
    return wrt, elements, ctx


def _open_output(args):
    """The output stream (text, or binary for --emit-bytecode), or None (after the error) if it cannot be
    opened."""
    if args.output == "-":
        return sys.stdout.buffer if args.emit_bytecode else sys.stdout
    try:
        return io.open(args.output, "wb") if args.emit_bytecode else io.open(args.output, "w", encoding="utf-8")
    except OSError as e:
        print(f"{args.output}: error: could not write output file: {e.strerror or e}", file=sys.stderr)
        return None


def _run_chunks(text, name, elements, args, wrt, ctx, out) -> bool:
    """Process each chunk of the input, writing its output as it is produced and reporting its errors and
    warnings; True if a chunk failed."""
    from stablehlo_sparsity.errors import SparsityError

    seen: set[str]
    failed, seen, written = False, set(), 0
    sep = f"{args.split_input_file}\n" if args.split_input_file is not None else ""
    chunks = _split_chunks(text, args.split_input_file) if isinstance(text, str) else [(text, 1)]
    for chunk, first_line in chunks:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = _process_chunk(chunk, first_line, name, elements, args, wrt, ctx)
                pieces = [result] if isinstance(result, (str, bytes)) else result
                for i, piece in enumerate(pieces):
                    if i == 0 and written:
                        out.write(sep)
                    out.write(piece)
                written += 1
            except SparsityError as e:
                _print_warnings(caught, seen)
                _print_error(e, getattr(e, "module_loc", f"{name}:{first_line}:1"))
                failed = True
                continue
        _print_warnings(caught, seen)
    return failed


def _run(argv: list[str]) -> int:
    from stablehlo_sparsity.errors import SparsityError
    from stablehlo_sparsity.lattice.budget import default_pattern_limit

    rest, flags, marker = _split_argv(argv)
    args = _make_parser().parse_args(rest)
    args.split_input_file = marker
    if args.version:
        _print_version()
        return 0
    try:
        wrt, elements, ctx = _prepare(args, flags)
    except SparsityError as e:
        print(f"{PROG}: error: {e.message}", file=sys.stderr)
        return 1

    try:
        text, name = _read_input(args.input)
    except SparsityError as e:
        print(f"{e.location}: error: {e.message}", file=sys.stderr)
        return 1

    # Outputs are written as they are produced (the pattern emitters stream their text in chunks): the driver
    # never holds more than the pattern itself and one chunk of text.
    out: Any = _open_output(args)  # a text or a binary stream (--emit-bytecode)
    if out is None:
        return 1
    try:
        with default_pattern_limit(args.max_pattern_nnz):
            failed = _run_chunks(text, name, elements, args, wrt, ctx, out)
        out.flush()
    except OSError as e:
        if args.output == "-":
            raise
        print(f"{args.output}: error: could not write output file: {e.strerror or e}", file=sys.stderr)
        return 1
    finally:
        if out is not sys.stdout and out is not getattr(sys.stdout, "buffer", None):
            out.close()
    return 1 if failed else 0


def _bytecode_output(args) -> None:
    """``-o OUT.mlirbc`` implies ``--emit-bytecode``; bytecode holds one module and only the IR."""
    from stablehlo_sparsity.errors import InputError

    if args.output != "-" and args.output.endswith(".mlirbc"):
        args.emit_bytecode = True
    if not args.emit_bytecode:
        return
    if args.emit != "ir":
        raise InputError(f"--emit-bytecode writes the module's IR; it cannot be combined with --emit={args.emit}")
    if args.split_input_file is not None:
        raise InputError("--emit-bytecode writes one module; it cannot be combined with --split-input-file")
    if args.mlir_print_op_generic or args.mlir_print_debuginfo:
        # (bytecode keeps locations and has no printed form: the printing flags do not apply)
        raise InputError("--mlir-print-op-generic and --mlir-print-debuginfo apply to text output, not to "
                         "--emit-bytecode")


def main(argv: list[str] | None = None) -> int:
    """Console entry point (``stablehlo-sparsity-opt``)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # jaxlib's C++ INFO lines (PjRt device counts) are noise on a command line; set before jaxlib loads.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    try:
        code = _run(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BrokenPipeError:  # e.g. `| head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        code = 1
    except KeyboardInterrupt:
        code = 130
    except Exception as e:  # a bug in the analysis: one line, no traceback (unless asked for)
        if os.environ.get("STABLEHLO_SPARSITY_TRACEBACK"):
            raise
        print(f"{PROG}: internal error: {type(e).__name__}: {e} "
              "(set STABLEHLO_SPARSITY_TRACEBACK=1 for details; please report)", file=sys.stderr)
        code = 2
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

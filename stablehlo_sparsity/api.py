"""Public entry points: lower a JAX function (or take a StableHLO module) and analyze it."""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import scipy.sparse as sp

from .errors import InputError, SparsityError, SparsityWarning
from .interpreter import AnalysisOptions, Interpreter
from .lattice import Deps, nnz_budget
from .pattern import SparsityPattern
from .values import AbstractValue, is_differentiable, is_token_type, tensor_type
from . import rules as _rules  # noqa: F401  (registers every rule)

__all__ = ["Analysis", "lower_and_analyze", "jacobian_sparsity", "analyze_module", "parse_module"]


@dataclass
class Analysis:
    """Everything the analysis found.

    pattern: the (m × n) Jacobian pattern (rows: flattened outputs; columns: flattened selected inputs).
    module: the analyzed ``ir.Module``.
    results: the abstract value of each returned leaf (index sets and constant if known).
    in_tree / out_tree: pytree structures of the selected inputs and of the outputs (JAX entry only).
    input_offsets / output_offsets: first column / row of each flat input / output leaf.
    """

    pattern: SparsityPattern
    module: Any
    results: list[AbstractValue]
    input_shapes: list[tuple[int, ...]]
    output_shapes: list[tuple[int, ...]]
    input_offsets: list[int]
    output_offsets: list[int]
    in_tree: Any = None
    out_tree: Any = None
    warnings: list[str] = field(default_factory=list)
    entry: str = "main"
    #: which program was analyzed: "primal", or "jvp"/"vjp" when custom derivative rules were present
    derivatives: str = "primal"

    @property
    def shape(self) -> tuple[int, int]:
        return self.pattern.shape


def _norm_argnums(argnums, nargs: int) -> tuple[int, ...]:
    if isinstance(argnums, int):
        argnums = (argnums,)
    out = []
    for a in argnums:
        if not isinstance(a, (int, np.integer)) or not -nargs <= a < nargs:
            raise InputError(f"argnums {argnums!r} out of range for {nargs} positional arguments")
        out.append(int(a) % nargs)
    return tuple(out)


def resolve_options(options, on_unknown: str = "error") -> AnalysisOptions:
    """The analysis options of an entry point: ``options`` (an :class:`AnalysisOptions`), with an explicit
    ``on_unknown`` other than the default taking precedence over its field."""
    if options is None:
        return AnalysisOptions(on_unknown=on_unknown)
    if not isinstance(options, AnalysisOptions):
        raise InputError(f"options must be a stablehlo_sparsity.AnalysisOptions, got {type(options).__name__} "
                         "(a keyword argument of f named 'options' must be bound with functools.partial)")
    if on_unknown != "error" and on_unknown != options.on_unknown:
        import dataclasses

        return dataclasses.replace(options, on_unknown=on_unknown)
    return options


def _traceable(value) -> bool:
    """A keyword value JAX can trace as an array: arrays, NumPy scalars, floats (or pytrees of them)."""
    import jax

    leaves = jax.tree_util.tree_leaves(value)
    return bool(leaves) and all(isinstance(v, (np.ndarray, np.generic, jax.Array, float, complex))
                                and not isinstance(v, (bool, np.bool_)) for v in leaves)


#: Primitives whose derivative is a user rule, not the derivative of the primal StableHLO shows.
CUSTOM_RULE_PRIMITIVES = frozenset({"custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr", "custom_lin",
                                    "custom_linear_solve"})


def custom_rule_primitives(jaxpr, *, user_only: bool = False) -> set[str]:
    """The custom-derivative primitives used anywhere in a (closed) jaxpr, nested jaxprs included.

    ``user_only``: skip rules defined inside JAX itself (``jax.nn.relu``, ``jnp.linalg.det``, the
    ``custom_linear_solve`` of ``jnp.linalg.solve`` …): those differentiate their primal faithfully, so the
    primal's pattern is already sound for them, and it is usually tighter than the JVP program's."""
    found: set[str] = set()
    stack = [getattr(jaxpr, "jaxpr", jaxpr)]
    seen: set[int] = set()
    while stack:
        jp = stack.pop()
        if id(jp) in seen:
            continue
        seen.add(id(jp))
        for eqn in jp.eqns:
            if eqn.primitive.name in CUSTOM_RULE_PRIMITIVES and not (user_only and _defined_in_jax(eqn)):
                found.add(eqn.primitive.name)
            for p in eqn.params.values():
                for sub in (p if isinstance(p, (list, tuple)) else (p,)):
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        stack.append(inner)
    return found


def _defined_in_jax(eqn) -> bool:
    """True when every function of a custom-rule equation (primal, rule) was defined inside JAX's package."""
    import os

    import jax

    root = os.path.dirname(os.path.dirname(os.path.abspath(jax.__file__)))
    jax_dirs = (os.path.join(root, "jax") + os.sep, os.path.join(root, "jaxlib") + os.sep)
    srcs = []
    for v in eqn.params.values():
        for sub in (v if isinstance(v, (list, tuple)) else (v,)):
            info = getattr(getattr(sub, "jaxpr", sub), "debug_info", None) or getattr(sub, "debug_info", None)
            src = getattr(info, "func_src_info", None)
            if src is not None:
                srcs.append(str(src))
    if not srcs:
        return False  # nothing says where the rule comes from: treat it as the user's
    return all(" at " in s and s.rsplit(" at ", 1)[1].startswith(jax_dirs) for s in srcs)


def _derivative_program(f, args, argnums_t, has_aux, how):
    """The tangent map of ``f`` as a function JAX lowers: ``(primals, tangents) ↦ jvp`` (``how="jvp"``), or
    ``(primals, cotangent) ↦ vjp`` (``"vjp"``).  Its Jacobian pattern in the tangents is the Jacobian pattern
    of ``f`` *as JAX differentiates it* — custom_jvp / custom_vjp / custom_linear_solve rules included."""
    import jax

    nargs = len(args)

    def primal_out(*full, **kw):
        out = f(*full, **kw)
        return out[0] if has_aux else out

    def restrict(prim, kw):
        def fsel(*sel):
            full = list(prim)
            for i, a in zip(argnums_t, sel):
                full[i] = a
            return primal_out(*full, **kw)

        return fsel

    if how == "jvp":
        def program(*all_args, **kw):
            prim, tans = all_args[:nargs], all_args[nargs:]
            return jax.jvp(restrict(prim, kw), tuple(prim[i] for i in argnums_t), tuple(tans))[1]

        extra = tuple(args[i] for i in argnums_t)
    else:
        def program(*all_args, **kw):
            prim, ct = all_args[:nargs], all_args[nargs]
            _, pullback = jax.vjp(restrict(prim, kw), *(prim[i] for i in argnums_t))
            return pullback(ct)

        extra = (jax.tree_util.tree_map(lambda s: jax.numpy.zeros(s.shape, s.dtype),
                                        jax.eval_shape(primal_out, *args)),)
    return program, extra


def lower_and_analyze(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                      on_unknown: str = "error", options: AnalysisOptions | None = None,
                      observer: Callable | None = None, derivatives: str = "auto", annotate: bool | dict = False,
                      **kwargs) -> Analysis:
    """Lower ``f(*args, **kwargs)`` with ``jax.jit(f).lower`` to StableHLO and analyze its Jacobian pattern.

    Columns are the flattened leaves of ``args[argnums]``, in ``argnums`` order (as ``jax.jacfwd`` and asdex);
    other arguments are unknown values with no columns.  Array (and float) ``kwargs`` are unknown values
    too — the pattern holds for all their values; other ``kwargs`` (bools, ints, strings …) are bound
    statically.  With ``has_aux`` only the first element of ``f``'s output pair is differentiated.

    ``derivatives``: StableHLO holds only the primal program, yet a ``custom_jvp`` / ``custom_vjp`` /
    ``custom_linear_solve`` rule can give a derivative with dependencies the primal lacks (a straight-through
    estimator, a JVP that mixes elements).  ``"auto"`` (default) analyzes the primal unless the jaxpr uses
    such a rule, and then the lowered JVP program (``"jvp"``; ``"vjp"`` and transposition when a
    ``custom_vjp`` forbids forward mode) — the pattern of what ``jax.jacfwd`` / ``jax.jacrev`` compute.
    ``"primal"`` always analyzes the primal.

    ``options`` (:class:`AnalysisOptions`), ``on_unknown``, ``observer``, ``derivatives`` and ``annotate`` are
    the library's keywords and never reach ``f``; bind a keyword of ``f`` with one of these names with
    ``functools.partial``.

    ``annotate=True`` (or a dict of :class:`stablehlo_sparsity.passes.annotate.AnnotateOptions` fields such as
    ``{"max_elements": 16}``): ``.module`` is a copy of the analyzed module carrying the analysis as
    ``sparsity.*`` attributes (the ``sparsity-annotate`` pass; print it with ``str(analysis.module)``).
    """
    import jax

    if not args:
        raise InputError("lower_and_analyze needs at least one argument to differentiate")
    argnums_t = _norm_argnums(argnums, len(args))
    opts = resolve_options(options, on_unknown)

    traced_kw = {k: v for k, v in kwargs.items() if _traceable(v)}
    static_kw = {k: v for k, v in kwargs.items() if k not in traced_kw}
    fn = functools.partial(f, **static_kw) if static_kw else f
    if derivatives not in ("auto", "primal", "jvp", "vjp"):
        raise ValueError("derivatives must be 'auto', 'primal', 'jvp' or 'vjp'")
    try:
        try:
            traced = jax.jit(fn, keep_unused=True).trace(*args, **traced_kw)
        except Exception:
            if not traced_kw:
                raise
            # f needs those values concretely (Python control flow on them): bind them statically
            fn, traced_kw = functools.partial(f, **kwargs), {}
            traced = jax.jit(fn, keep_unused=True).trace(*args)
        auto = derivatives == "auto"
        if auto:
            rules = custom_rule_primitives(traced.jaxpr, user_only=True)
            if rules:
                derivatives = "vjp" if rules & {"custom_vjp_call", "custom_vjp_call_jaxpr"} else "jvp"
        if derivatives in ("jvp", "vjp"):
            try:
                return _analyze_derivative_program(fn, args, traced_kw, argnums_t, has_aux, derivatives, opts,
                                                   observer, annotate)
            except Exception as e:
                # The inner lowering reports JAX's refusal as an InputError; any other analysis error stands.
                cannot_form = isinstance(e, InputError) and str(e.message).startswith("could not lower")
                if not auto or (isinstance(e, SparsityError) and not cannot_form):
                    raise
                # JAX cannot form that derivative program (e.g. reverse mode through a while_loop): JAX could
                # not differentiate f that way either.  Analyze the primal and say the custom rule is unseen.
                warnings.warn(f"f uses a custom derivative rule, but its {derivatives.upper()} program could not "
                              f"be formed ({type(e).__name__}: {str(e).splitlines()[0][:200]}); the pattern is "
                              "the primal's and may miss dependencies the custom rule adds", SparsityWarning,
                              stacklevel=2)
        lowered = traced.lower()
    except SparsityError:
        raise
    except Exception as e:  # shapes, dtypes, tracing errors are the user's input errors
        raise InputError(f"could not lower the function with the given arguments: {type(e).__name__}: {e}") from e
    module = lowered.compiler_ir("stablehlo")

    # Flat argument leaves (positional leaves come first, then traced kwargs); the selected ones are the
    # columns, in argnums order.
    leaves_per_arg = [jax.tree_util.tree_leaves(a) for a in args]
    starts = np.cumsum([0] + [len(leaves) for leaves in leaves_per_arg])
    wrt = [int(starts[i]) + j for i in argnums_t for j in range(len(leaves_per_arg[i]))]
    out_tree = lowered.out_tree
    if has_aux:
        if out_tree.num_nodes == 1 or len(out_tree.children()) != 2:
            raise InputError("has_aux=True needs f to return a pair (output, aux)")
        num_out = out_tree.children()[0].num_leaves
        out_struct = out_tree.children()[0]
    else:
        num_out = out_tree.num_leaves
        out_struct = out_tree
    in_struct = jax.tree_util.tree_structure(tuple(args[i] for i in argnums_t))
    analysis = analyze_module(module, entry="main", wrt=wrt, num_outputs=num_out, options=opts, observer=observer)
    if annotate:
        analysis.module = _annotated_copy(module, wrt, opts, annotate)
    analysis.in_tree = in_struct
    analysis.out_tree = out_struct
    return analysis


def _annotated_copy(module, wrt, opts, annotate):
    """A copy of ``module`` (JAX caches the lowered one: a pass must not edit it) annotated in place by the
    ``sparsity-annotate`` pass."""
    from .passes.annotate import annotate as annotate_pass

    extra = dict(annotate) if isinstance(annotate, dict) else {}
    with module.context:
        text = module.operation.get_asm(enable_debug_info=True)
    copy = parse_module(text)
    annotate_pass(copy, entry="main", wrt=list(wrt), on_unknown=opts.on_unknown, **extra)
    return copy


def _analyze_derivative_program(fn, args, traced_kw, argnums_t, has_aux, how, opts, observer,
                                annotate=False) -> Analysis:
    import jax

    program, extra = _derivative_program(fn, args, argnums_t, has_aux, how)
    nargs = len(args)
    cols = tuple(range(nargs, nargs + len(extra)))
    an = lower_and_analyze(program, *args, *extra, argnums=cols, options=opts, observer=observer,
                           derivatives="primal", annotate=annotate, **traced_kw)
    sel = tuple(args[i] for i in argnums_t)
    out_shape = jax.eval_shape(lambda *a: fn(*a, **traced_kw), *args)
    if has_aux:
        out_shape = out_shape[0]
    an.in_tree = jax.tree_util.tree_structure(sel)
    an.out_tree = jax.tree_util.tree_structure(out_shape)
    if how == "vjp":  # rows of the VJP program are inputs, its columns outputs: transpose back
        an.pattern = SparsityPattern(sp.csr_array(an.pattern.to_scipy().T))
        in_shapes = [tuple(l.shape) for l in jax.tree_util.tree_leaves(sel)]
        out_shapes = [tuple(l.shape) for l in jax.tree_util.tree_leaves(out_shape)]
        an.input_shapes, an.output_shapes = in_shapes, out_shapes
        an.input_offsets = [int(o) for o in np.cumsum([0] + [int(np.prod(s)) for s in in_shapes[:-1]])]
        an.output_offsets = [int(o) for o in np.cumsum([0] + [int(np.prod(s)) for s in out_shapes[:-1]])]
    an.derivatives = how
    return an


def jacobian_sparsity(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                      on_unknown: str = "error", options: AnalysisOptions | None = None, derivatives: str = "auto",
                      **kwargs) -> SparsityPattern:
    """The global (m × n) Jacobian sparsity pattern of ``f`` at the shapes of ``args``.

    ``options`` (an :class:`AnalysisOptions`: folding, loop and memory limits) and ``on_unknown`` are the
    library's; every other keyword argument is ``f``'s (see :func:`lower_and_analyze`)."""
    return lower_and_analyze(f, *args, argnums=argnums, has_aux=has_aux, on_unknown=on_unknown, options=options,
                             derivatives=derivatives, **kwargs).pattern


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


def parse_module(text_or_path: str, *, is_path: bool = False):
    """Parse StableHLO text (or a file, keeping ``file:line:col`` locations) in a context with every
    dialect JAX needs.  Parse errors raise :class:`InputError` with MLIR's diagnostics."""
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    if is_path:
        try:
            with open(text_or_path, "rb") as f:
                data = f.read()
        except OSError:
            data = None  # MLIR reports the unreadable file below
        if data is not None:
            shipped = parse_shipped(data, str(text_or_path))  # .mlirbc, portable artifacts, jax.export
            if shipped is not None:
                return shipped
            check_nesting(data, str(text_or_path))
    else:
        check_nesting(text_or_path)
    ctx = jax_mlir.make_ir_context()
    try:
        with ctx:
            if is_path:
                return ir.Module.parseFile(text_or_path)
            return ir.Module.parse(text_or_path)
    except ir.MLIRError as e:
        diags = "; ".join(f"{format_diag(d)}" for d in getattr(e, "error_diagnostics", [])) or str(e)
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
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _stablehlo

    data = bytes(data)
    if data.startswith(BYTECODE_MAGIC):
        ctx = jax_mlir.make_ir_context()
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
            diags = "; ".join(format_diag(d) for d in getattr(e, "error_diagnostics", [])) or str(e)
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
    return parse_module(exp.mlir_module())


def as_module(module_or_text):
    """An ``ir.Module`` from a module, StableHLO text, or bytes in any of the forms of :func:`parse_shipped`."""
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
    raise InputError(f"expected an ir.Module, StableHLO text or bytes, got {type(module_or_text).__name__}")
def resolve_wrt(wrt, num_args: int) -> list[int]:
    """The differentiated entry arguments: ``None`` → ``[0]`` (none for an entry without arguments),
    ``"all"`` → every argument, else the given indices."""
    if wrt is None:
        return [0] if num_args else []
    if isinstance(wrt, str):
        if wrt.strip().lower() == "all":
            return list(range(num_args))
        raise InputError(f"wrt must be argument indices or 'all', got {wrt!r}")
    if isinstance(wrt, (int, np.integer)):
        return [int(wrt)]
    return [int(i) for i in wrt]


def format_diag(d) -> str:
    from .errors import format_location

    return f"{format_location(d.location)}: {d.message}"


def analyze_module(module_or_text, entry: str = "main", *, wrt: Sequence[int] | str | None = None,
                   num_outputs: int | None = None, on_unknown: str = "error",
                   options: AnalysisOptions | None = None, observer: Callable | None = None) -> Analysis:
    """Analyze a StableHLO module (an ``ir.Module`` or its text) with no JAX function.

    wrt: indices of the entry function's arguments that are inputs (columns).  Default ``None``: argument 0
    only, the rule of ``jax.jacfwd`` (``argnums=0``), :func:`jacobian_sparsity` and the driver; ``"all"``:
    every argument.  Arguments not in ``wrt`` are unknown values with no columns.
    num_outputs: analyze only the first results (default all).
    """
    from jaxlib.mlir import ir

    module = as_module(module_or_text)
    if num_outputs is not None and int(num_outputs) < 0:
        raise InputError(f"num_outputs must be non-negative, got {num_outputs}")
    opts = resolve_options(options, on_unknown)
    with module.context:
        fn = None
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == entry:
                fn = op
        if fn is None:
            names = [ir.StringAttr(op.attributes["sym_name"]).value for op in module.body.operations
                     if op.operation.name == "func.func"]
            raise InputError(f"no entry function '@{entry}' in the module (functions: {', '.join(names) or 'none'})")
        from .errors import format_location

        loc = format_location(fn.location)
        if not len(fn.regions[0].blocks):
            raise InputError(f"entry function '@{entry}' has no body (it is a declaration): there is nothing to "
                             "analyze", loc)
        block = fn.regions[0].blocks[0]
        arg_types = [tensor_type(a.type, loc) for a in block.arguments]
        # Effect tokens (JAX's ordered effects thread them through the entry) carry no data: they are not
        # counted as arguments (wrt indices skip them) and their results are not rows.
        data_args = [i for i, a in enumerate(block.arguments) if not is_token_type(a.type)]
        wrt_list = resolve_wrt(wrt, len(data_args))
        for i in wrt_list:
            if not 0 <= i < len(data_args):
                raise InputError(f"argument index {i} out of range: @{entry} has {len(data_args)} arguments")
        wrt_list = [data_args[i] for i in wrt_list]
        sizes = [arg_types[i].size for i in wrt_list]
        n = int(sum(sizes))
        offsets = list(np.cumsum([0] + sizes[:-1]).astype(int)) if sizes else []
        col_of = dict(zip(wrt_list, offsets))
        interp = Interpreter(module, n, opts, observer=observer)
        args = []
        for i, t in enumerate(arg_types):
            # Integer and boolean inputs get their columns, but no derivative flows from them (as jax.jacfwd).
            own = i in col_of and is_differentiable(t.dtype)
            deps = Deps.identity(t.size, n, col_of[i]) if own else Deps.empty(t.size, n)
            args.append(AbstractValue(t, deps))
        results = interp.call(entry, args)
        res_types = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results
        results = [r for r, t in zip(results, res_types) if not is_token_type(t)]
        if num_outputs is not None:
            results = results[:num_outputs]
        rows = [r.deps for r in results]
        m = int(sum(r.size for r in results))
        if m > opts.max_pattern_nnz:  # the (m × n) CSR needs m + 1 row pointers
            from .irtools import too_large

            raise too_large(f"the outputs of @{entry} have", m, opts.max_pattern_nnz, loc)
        if rows:
            with nnz_budget(opts.max_pattern_nnz):
                matrix = Deps.vstack(rows).to_csr()
        else:
            matrix = sp.csr_array((0, n), dtype=bool)
        out_offsets = list(np.cumsum([0] + [r.size for r in results[:-1]]).astype(int)) if results else []
        return Analysis(
            pattern=SparsityPattern(matrix),
            module=module,
            results=results,
            input_shapes=[arg_types[i].shape for i in wrt_list],
            output_shapes=[r.shape for r in results],
            input_offsets=[int(o) for o in offsets],
            output_offsets=[int(o) for o in out_offsets],
            warnings=list(interp.warned),
            entry=entry,
        )

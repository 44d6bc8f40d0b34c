"""The analysis of one program: lower a JAX function (or take a parsed StableHLO module), run the interpreter
over its entry function and collect the :class:`Analysis`.  The public entry points (:mod:`.api`) add local
patterns (:mod:`.local`) on top of this."""

from __future__ import annotations

import contextlib
import functools
import gc
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from .._compat import constants_in_module, innermost_locations, release_lowering_caches, uncached_lowering
from .annotate import Recorder, write_annotations
from ..errors import InputError, LoweringError, SparsityError, format_location, warn
from .engine import FunctionTable
from ..ir.annotations import MAX_ELEMENTS, MAX_NNZ, resolve_entry
from ..ir.helpers import without_common_subexpressions
from .interpreter import AnalysisOptions, Interpreter
from ..ir.keywords import parse_indices
from ..lattice import Deps, nnz_budget
from ..ir.parsing import as_module, check_nesting, parse_module, parse_shipped  # noqa: F401  (public here too)
from ..lattice.pattern import SparsityPattern
from .folding.exactness import literal_uncertainty
from .values import TOKEN, AbstractValue, is_differentiable, tensor_types
from . import rules as _rules  # noqa: F401  (registers every rule)

__all__ = ["Analysis", "lower_and_analyze_global", "annotate_module", "cyclic_gc_paused", "analyze_entry",
           "resolve_options", "lowered_for_analysis",
           "resolve_wrt", "custom_rule_primitives", "jaxpr_equations", "CUSTOM_RULE_PRIMITIVES",
           "CUSTOM_VJP_PRIMITIVES", "CustomRules", "custom_rules_of"]


@dataclass
class Analysis:
    """Everything the analysis found.

    pattern: the (m × n) Jacobian pattern (rows: flattened outputs; columns: flattened selected inputs).
    module: the analyzed ``ir.Module`` (for a JAX function: JAX's lowering; of a program of :data:`CSE_MIN_EQNS`
        equations or more, the analysis walks a copy cleared of common subexpressions by MLIR's ``cse``).
    results: the abstract value of each returned leaf (index sets and constant if known).
    in_tree / out_tree: pytree structures of the selected inputs and of the outputs (JAX entry only).
    input_offsets / output_offsets: first column / row of each flat input / output leaf.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> a = ss.lower_and_analyze(lambda x, y: (x * y[0], y), jnp.ones(3), jnp.ones(2), argnums=(0, 1))
        >>> a.shape, a.input_offsets, a.output_offsets, a.pattern.nnz
        ((5, 5), [0, 3], [0, 3], 8)
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
    #: which program was analyzed: "primal", or "jvp"/"vjp" when custom derivative rules were present (and
    #: always for a local analysis)
    derivatives: str = "primal"
    #: True: ``pattern`` is the local pattern at the analyzed point only (``local=True``,
    #: docs/explanation/guarantees.md)
    local: bool = False
    #: False when JAX cannot form forward-mode products of the function (it uses a ``jax.custom_vjp``): a prepared
    #: Jacobian then forms its JVPs as transposed VJPs (:mod:`stablehlo_sparsity.derivatives.prepared.products`)
    forward_mode: bool = True

    @property
    def shape(self) -> tuple[int, int]:
        return self.pattern.shape


def norm_argnums(argnums, nargs: int) -> tuple[int, ...]:
    """``argnums`` as a tuple of indices (repeats kept; see
    :func:`stablehlo_sparsity.ir.keywords.parse_indices`)."""
    return parse_indices(argnums, nargs, name="argnums")


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


def traceable_keyword(value) -> bool:
    """A keyword value JAX can trace as an array: arrays, NumPy scalars, floats (or pytrees of them)."""
    import jax

    leaves = jax.tree_util.tree_leaves(value)
    return bool(leaves) and all(isinstance(v, (np.ndarray, np.generic, jax.Array, float, complex))
                                and not isinstance(v, (bool, np.bool_)) for v in leaves)


#: Primitives whose derivative is a user rule, not the derivative of the primal StableHLO shows.
CUSTOM_RULE_PRIMITIVES = frozenset({"custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr", "custom_lin",
                                    "custom_linear_solve"})
#: The primitives of ``jax.custom_vjp``: JAX has no forward-mode derivative of them (``jax.jvp`` raises).
CUSTOM_VJP_PRIMITIVES = frozenset({"custom_vjp_call", "custom_vjp_call_jaxpr"})


def custom_rule_primitives(jaxpr, *, user_only: bool = False) -> set[str]:
    """The custom-derivative primitives used anywhere in a (closed) jaxpr, nested jaxprs included.

    ``user_only``: skip rules defined inside JAX itself (``jax.nn.relu``, ``jnp.linalg.det``, the
    ``custom_linear_solve`` of ``jnp.linalg.solve`` …): those differentiate their primal faithfully, so the
    primal's pattern is already sound for them, and it is usually tighter than the JVP program's."""
    return custom_rules_of(jaxpr).names(user_only=user_only)


@dataclass(frozen=True)
class CustomRules:
    """The custom-derivative equations of a traced program (read once: :func:`custom_rules_of`)."""

    equations: tuple = ()

    def names(self, *, user_only: bool = False) -> set[str]:
        """The primitives used (``user_only``: of rules not defined inside JAX, see :func:`custom_rule_primitives`)."""
        return {eqn.primitive.name for eqn in self.equations if not (user_only and _defined_in_jax(eqn))}

    @property
    def forward_mode(self) -> bool:
        """Whether JAX can push tangents through the program: not through a ``jax.custom_vjp`` (anyone's, JAX's
        own included), whose forward derivative JAX refuses."""
        return not any(eqn.primitive.name in CUSTOM_VJP_PRIMITIVES for eqn in self.equations)


def custom_rules_of(jaxpr) -> CustomRules:
    """The custom-derivative equations anywhere in a (closed) jaxpr, nested jaxprs included."""
    return CustomRules(tuple(eqn for eqn in jaxpr_equations(jaxpr) if eqn.primitive.name in CUSTOM_RULE_PRIMITIVES))


def jaxpr_equations(jaxpr) -> Iterator[Any]:
    """Every equation of a (closed) jaxpr, those of the jaxprs nested in its equations' parameters (a ``pjit``'s,
    a ``scan``'s body, a ``cond``'s branches …) included, each nested jaxpr read once however often it is used."""
    stack = [getattr(jaxpr, "jaxpr", jaxpr)]
    seen: set[int] = set()
    while stack:
        jp = stack.pop()
        if id(jp) in seen:
            continue
        seen.add(id(jp))
        for eqn in jp.eqns:
            yield eqn
            for p in eqn.params.values():
                for sub in (p if isinstance(p, (list, tuple)) else (p,)):
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        stack.append(inner)


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


def lowered_layout(lowered, args, argnums_t, has_aux: bool) -> tuple[list[int], Any]:
    """The columns and the output structure of ``jax.jit(f).lower(*args)``: the flat argument leaves of the
    selected arguments, in argnums order (positional leaves come first, then traced keywords), and the tree
    of ``f``'s output (without the aux half when ``has_aux``)."""
    import jax

    leaves_per_arg = [jax.tree_util.tree_leaves(a) for a in args]
    starts = np.cumsum([0] + [len(leaves) for leaves in leaves_per_arg])
    wrt = [int(starts[i]) + j for i in argnums_t for j in range(len(leaves_per_arg[i]))]
    out_tree = lowered.out_tree
    if not has_aux:
        return wrt, out_tree
    if out_tree.num_nodes == 1 or len(out_tree.children()) != 2:
        raise InputError("has_aux=True needs f to return a pair (output, aux)")
    return wrt, out_tree.children()[0]


#: A traced program of at least this many (top-level) equations is walked without its common subexpressions
#: (:func:`..ir.helpers.without_common_subexpressions`): a program written out term by term repeats its ``x[i]`` and
#: literals, while a vectorized one of a few dozen ops has little to merge and the pass costs about 0.1 ms to start.
CSE_MIN_EQNS = 200


#: :func:`lowering_cache_pays` reads at most this many equations (nested ones included); a longer program is
#: lowered with JAX's per-equation cache.
UNCACHED_LOWERING_MAX_EQNS = 128
#: … and lowers without the cache when at least this fraction of them are distinct (measured on the programs of
#: ``benchmarks/small_programs.py``, jax 0.11.2: every program at a fraction of 0.29 or more lowers 7–45% faster
#: without the cache, every one at 0.23 or less 0–80% slower).
UNCACHED_LOWERING_MIN_DISTINCT = 0.28


def lowering_cache_pays(jaxpr) -> bool:
    """Whether JAX's per-equation lowering cache (:func:`.._compat.uncached_lowering`) pays for a (closed) jaxpr:
    yes for a long program, and for a short one whose equations repeat — no for a short one whose equations are
    mostly distinct (a vectorized objective).  Equations count as the same as JAX's cache tells them: primitive,
    operand types and parameters (nested jaxprs' equations counted too)."""
    keys: set = set()
    count = 0
    for eqn in jaxpr_equations(jaxpr):
        count += 1
        if count > UNCACHED_LOWERING_MAX_EQNS:
            return True
        try:
            keys.add((eqn.primitive, tuple(v.aval for v in eqn.invars), tuple(sorted(eqn.params.items()))))
        except TypeError:  # (a parameter that does not hash: an equation of its own)
            keys.add(count)
    return count > 0 and len(keys) < UNCACHED_LOWERING_MIN_DISTINCT * count


def lowered_for_analysis(traced) -> tuple[Any, Any, Any]:
    """``(lowered, module, walked)``: ``traced`` (a ``jax.stages.Traced``) lowered as the analysis wants it — the
    innermost source frame in each location (:func:`.._compat.innermost_locations`), without JAX's per-equation
    lowering cache where it does not pay (:func:`lowering_cache_pays`), JAX's lowering caches let go; ``module`` is
    JAX's StableHLO module (which JAX caches: never edited), ``walked`` the module the analysis walks — for a long
    program (:data:`CSE_MIN_EQNS`) a copy cleared of common subexpressions, else ``module``."""
    with innermost_locations(), constants_in_module(), (contextlib.nullcontext()
                                                        if lowering_cache_pays(traced.jaxpr) else uncached_lowering()):
        lowered = traced.lower()
    release_lowering_caches()
    module = lowered.compiler_ir("stablehlo")
    walked = without_common_subexpressions(module) if len(traced.jaxpr.eqns) >= CSE_MIN_EQNS else module
    return lowered, module, walked


@contextlib.contextmanager
def cyclic_gc_paused():
    """Python's cyclic garbage collector off for the duration (restored as it was, errors included).

    Tracing a written-out program and walking it create hundreds of thousands of objects that
    stay alive to the end (tracers, equations, MLIR handles, abstract values), so every young-generation
    collection rescans a growing set of survivors for cycles: measured, 20% of the analysis of a 68,000-op
    program.  Nothing in the walk relies on cycles being freed early (its big arrays are freed by reference
    counting), and whatever cyclic garbage it leaves is collected after the call.  A prepared derivative pauses it
    for its whole preparation and its first call's compilation as well
    (:meth:`~stablehlo_sparsity.derivatives.prepared.base.PreparedDerivative.prepare_paused`)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def lower_and_analyze_global(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                             on_unknown: str = "error", options: AnalysisOptions | None = None,
                             observer: Callable | None = None, derivatives: str = "auto",
                             annotate: bool | dict = False, **kwargs) -> Analysis:
    """The global pattern of ``f`` at the shapes of ``args``: :func:`stablehlo_sparsity.lower_and_analyze`
    without ``local`` (see there for every argument)."""
    with cyclic_gc_paused():
        return _lower_and_analyze_global(f, *args, argnums=argnums, has_aux=has_aux, on_unknown=on_unknown,
                                         options=options, observer=observer, derivatives=derivatives,
                                         annotate=annotate, **kwargs)


def _lower_and_analyze_global(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                              on_unknown: str = "error", options: AnalysisOptions | None = None,
                              observer: Callable | None = None, derivatives: str = "auto",
                              annotate: bool | dict = False, **kwargs) -> Analysis:
    """Trace ``f`` (:func:`_trace`); analyze the program of its derivative when asked or when ``f`` has a custom
    rule (:func:`_custom_derivative`), else its lowered primal program."""
    import jax

    if not args:
        raise InputError("lower_and_analyze needs at least one argument to differentiate")
    argnums_t = norm_argnums(argnums, len(args))
    opts = resolve_options(options, on_unknown)
    traced_kw = {k: v for k, v in kwargs.items() if traceable_keyword(v)}
    static_kw = {k: v for k, v in kwargs.items() if k not in traced_kw}
    fn = functools.partial(f, **static_kw) if static_kw else f
    if derivatives not in ("auto", "primal", "jvp", "vjp"):
        raise ValueError("derivatives must be 'auto', 'primal', 'jvp' or 'vjp'")
    try:
        fn, traced_kw, traced = _trace(f, fn, args, traced_kw, kwargs)
        custom = custom_rules_of(traced.jaxpr)
        an = _custom_derivative(fn, args, traced_kw, argnums_t, has_aux, derivatives, custom, opts, observer,
                                annotate)
        if an is not None:
            return an
        lowered, module, walked = lowered_for_analysis(traced)
    except SparsityError:
        raise
    except Exception as e:  # shapes, dtypes, tracing errors are the user's input errors
        raise LoweringError(f"could not lower the function with the given arguments: {type(e).__name__}: {e}") from e

    wrt, out_struct = lowered_layout(lowered, args, argnums_t, has_aux)
    num_out = out_struct.num_leaves
    in_struct = jax.tree_util.tree_structure(tuple(args[i] for i in argnums_t))
    analysis = analyze_entry(walked, "main", wrt, num_out, opts, observer)
    analysis.module = module  # (JAX's lowering, as the user would get it)
    if annotate:
        analysis.module = _annotated_copy(module, wrt, opts, annotate)
    analysis.in_tree = in_struct
    analysis.out_tree = out_struct
    analysis.forward_mode = custom.forward_mode
    return analysis


def _trace(f: Callable, fn: Callable, args: tuple, traced_kw: dict, kwargs: dict) -> tuple[Callable, dict, Any]:
    """``(fn, traced_kw, traced)``: JAX's trace of ``fn`` (``f`` with its static keywords bound) on ``args`` and
    the traceable keywords ``traced_kw``; when ``f`` needs those concretely (Python control flow on them), they
    are bound statically too."""
    import jax

    try:
        return fn, traced_kw, jax.jit(fn, keep_unused=True).trace(*args, **traced_kw)
    except Exception:
        if not traced_kw:
            raise
        fn = functools.partial(f, **kwargs)
        return fn, {}, jax.jit(fn, keep_unused=True).trace(*args)


def _custom_derivative(fn, args, traced_kw, argnums_t, has_aux, derivatives: str, custom, opts, observer,
                       annotate) -> Analysis | None:
    """The analysis of ``fn``'s JVP or VJP program — asked for, or with ``derivatives="auto"`` when ``fn`` uses a
    custom derivative rule of its own (a ``custom_vjp``: the VJP) — or ``None``: the primal's is wanted, or
    (``"auto"``) JAX cannot form that derivative program (a warning says the custom rule is unseen)."""
    auto = derivatives == "auto"
    if auto:
        rules = custom.names(user_only=True)
        if rules:
            derivatives = "vjp" if rules & CUSTOM_VJP_PRIMITIVES else "jvp"
    if derivatives not in ("jvp", "vjp"):
        return None
    try:
        an = _analyze_derivative_program(fn, args, traced_kw, argnums_t, has_aux, derivatives, opts, observer,
                                         annotate)
    except Exception as e:
        # The inner lowering reports JAX's refusal as a LoweringError; any other analysis error stands.
        if not auto or (isinstance(e, SparsityError) and not isinstance(e, LoweringError)):
            raise
        # JAX cannot form that derivative program (e.g. reverse mode through a while_loop): JAX could
        # not differentiate f that way either.  Analyze the primal and say the custom rule is unseen.
        warn(f"f uses a custom derivative rule, but its {derivatives.upper()} program could not be formed "
             f"({type(e).__name__}: {str(e).splitlines()[0][:200]}); the pattern is the primal's and may miss "
             "dependencies the custom rule adds")
        return None
    an.forward_mode = custom.forward_mode
    return an


def _annotated_copy(module, wrt, opts, annotate):
    """A copy of ``module`` (JAX caches the lowered one: a pass must not edit it) annotated in place
    (:func:`annotate_module`, what the ``sparsity-annotate`` pass runs)."""
    extra = dict(annotate) if isinstance(annotate, dict) else {}
    with module.context:
        text = module.operation.get_asm(enable_debug_info=True)
    copy = parse_module(text)
    annotate_module(copy, entry="main", wrt=list(wrt), on_unknown=opts.on_unknown, **extra)
    return copy


def annotate_module(module, *, entry: str | None = None, wrt=None, on_unknown: str = "error",
                    max_elements: int = MAX_ELEMENTS, max_nnz: int = MAX_NNZ) -> Analysis:
    """Analyze ``module`` (an ``ir.Module``, a ``builtin.module`` operation or its op view) and write the lattice
    into it as ``sparsity.*`` attributes (:mod:`.annotate`), in place: what the ``sparsity-annotate`` pass
    (:func:`stablehlo_sparsity.passes.annotate`, whose options these are) and ``lower_and_analyze(...,
    annotate=True)`` run.  ``entry`` defaults to ``main``, else the only public function; ``wrt`` is as for
    :func:`stablehlo_sparsity.analyze_module`.

    Raises:
        InputError: no function ``entry`` in the module (or no way to choose one), a bad ``wrt``, or another
            analysis input error.
        TypeError: ``module`` is not a ``builtin.module``.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> module = ss.parse_module('''func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
        ...   func.return %x : tensor<2xf32>
        ... }''')
        >>> annotate_module(module).pattern.nnz
        2
        >>> str(module.body.operations[0].attributes["sparsity.pattern"])
        '"shape=2x2 nnz=2 deps=1 distinct=2"'
    """
    mod = getattr(module, "opview", module)
    if not hasattr(mod, "body"):
        raise TypeError(f"annotate needs a builtin.module, got {mod.operation.name}")
    entry = resolve_entry(mod, entry)
    recorder = Recorder()
    analysis = analyze_entry(as_module(mod), entry, wrt, None, AnalysisOptions(on_unknown=on_unknown), recorder)
    write_annotations(mod, entry, wrt, analysis, recorder, max_elements, max_nnz)
    return analysis


def _analyze_derivative_program(fn, args, traced_kw, argnums_t, has_aux, how, opts, observer,
                                annotate=False) -> Analysis:
    import jax

    program, extra = _derivative_program(fn, args, argnums_t, has_aux, how)
    nargs = len(args)
    cols = tuple(range(nargs, nargs + len(extra)))
    an = lower_and_analyze_global(program, *args, *extra, argnums=cols, options=opts, observer=observer,
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


def resolve_wrt(wrt, num_args: int, owner: str = "the entry function") -> list[int]:
    """The differentiated entry arguments: ``None`` → ``[0]`` (none for an entry without arguments),
    ``"all"`` → every argument, else the given indices (one rule for the API, the driver and the passes:
    :func:`stablehlo_sparsity.ir.keywords.parse_indices`)."""
    return list(parse_indices(wrt, num_args, name="wrt", owner=owner, allow_text=True))


def _known_argument(value, t) -> np.ndarray | None:
    """A point's value for an argument of type ``t``, or ``None`` (unknown: always sound) when it does not fit."""
    if value is None:
        return None
    try:
        arr = np.asarray(value)
        if arr.shape != tuple(t.shape) or arr.dtype.kind not in "biufc" and arr.dtype.name != "bfloat16":
            return None
        return arr.astype(t.dtype, copy=False)
    except (TypeError, ValueError):
        return None


@dataclass
class EntryLayout:
    """Where an entry function's differentiated arguments sit among the pattern's columns (shared by the
    first- and the second-order analyses of a module's entry)."""

    fn: Any
    arg_types: list
    #: indices of the differentiated arguments among the entry's arguments (effect tokens skipped by ``wrt``)
    wrt: list[int]
    offsets: list[int]
    n: int
    #: the module's functions (the analysis of the entry reuses the table: it is read once)
    table: FunctionTable

    @property
    def loc(self) -> str:
        """The entry's source location (read when a message needs it: reading it costs more than a small
        analysis' op)."""
        return format_location(self.fn.location)

    @property
    def columns(self) -> dict[int, int]:
        """Argument index → its first column."""
        return dict(zip(self.wrt, self.offsets))

    def argument_deps(self, i: int, n: int | None = None) -> Deps:
        """The lattice of argument ``i`` over ``n`` columns (default: :attr:`n`): its own columns when it is
        differentiated — integer and boolean inputs get columns, but no derivative flows from them (as
        ``jax.jacfwd``) — else empty."""
        t, width = self.arg_types[i], self.n if n is None else n
        col = self.columns.get(i)
        if col is not None and is_differentiable(t.dtype):
            return Deps.identity(t.size, width, col)
        return Deps.empty(t.size, width)


def entry_layout(module, entry: str, wrt) -> EntryLayout:
    """The entry function ``@entry`` of a parsed module (in its context) and its column layout for ``wrt``;
    an :class:`InputError` names what is wrong (no such function, a declaration, an index out of range)."""
    table = FunctionTable(module)
    fn = table.by_name.get(entry)
    if fn is None:
        names = list(table.by_name)
        raise InputError(f"no entry function '@{entry}' in the module (functions: {', '.join(names) or 'none'})")
    block = table.body_block(entry, "analyze", role="entry function")
    arg_types = tensor_types([a.type for a in block.arguments], lambda: format_location(fn.location))
    # Effect tokens (JAX's ordered effects thread them through the entry) carry no data: they are not
    # counted as arguments (wrt indices skip them) and their results are not rows.
    data_args = [i for i, t in enumerate(arg_types) if t is not TOKEN]
    wrt_list = resolve_wrt(wrt, len(data_args), f"@{entry}")
    wrt_list = [data_args[i] for i in wrt_list]
    sizes = [arg_types[i].size for i in wrt_list]
    offsets = list(itertools.accumulate(sizes[:-1], initial=0)) if sizes else []
    return EntryLayout(fn, arg_types, wrt_list, offsets, int(sum(sizes)), table)


def data_results(results: Sequence[AbstractValue]) -> list[AbstractValue]:
    """The entry's results without its effect tokens (which carry no data and are not rows): the values the
    walk returned, whose types are decoded already (:data:`.values.TOKEN` for a token), instead of the
    function's signature read again through the bindings."""
    return [r for r in results if r.type is not TOKEN]


def analyze_entry(module, entry: str, wrt, num_outputs: int | None, opts: AnalysisOptions,
                  observer: Callable | None = None, values: Sequence | None = None) -> Analysis:
    """:func:`analyze_module` on a parsed module, with resolved options.

    ``values`` (internal, for local patterns): per entry argument, a known value (its abstract value holds it
    as an exact constant, see :mod:`.folding.exactness`) or ``None`` (unknown).  An argument in ``wrt`` must be
    unknown: the constant lattice's invariant is that a known value has no dependencies."""

    with module.context:
        layout = entry_layout(module, entry, wrt)
        arg_types, wrt_list, n = layout.arg_types, layout.wrt, layout.n
        offsets = layout.offsets
        interp = Interpreter(module, n, opts, observer=observer, function_table=layout.table)
        args = []
        for i, t in enumerate(arg_types):
            const = None if values is None or i in layout.columns else _known_argument(values[i], t)
            args.append(AbstractValue(t, layout.argument_deps(i), const,
                                      None if const is None else literal_uncertainty(const)))
        results = data_results(interp.call(entry, args))
        if num_outputs is not None:
            results = results[:num_outputs]
        rows = [r.deps for r in results]
        m = int(sum(r.size for r in results))
        if m > opts.max_pattern_nnz:  # the (m × n) CSR needs m + 1 row pointers
            from ..lattice.budget import too_large

            raise too_large(f"the outputs of @{entry} have", m, opts.max_pattern_nnz, layout.loc)
        if rows:
            with nnz_budget(opts.max_pattern_nnz):
                matrix = Deps.vstack(rows).to_csr()
        else:
            matrix = sp.csr_array((0, n), dtype=bool)
        out_offsets = list(itertools.accumulate([r.size for r in results[:-1]], initial=0)) if results else []
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

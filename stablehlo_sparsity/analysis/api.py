"""Public entry points: lower a JAX function (or take a StableHLO module) and analyze it — the global
pattern (:mod:`.program`) or, with ``local=True``, the pattern at one point (:mod:`.local`).  A module's global
pattern is :func:`analyze_module_global`; the public ``analyze_module``, which adds ``local_point=`` (the importer's
replay), is :mod:`stablehlo_sparsity.modules.analyze`."""

from __future__ import annotations

from typing import Callable, Sequence

from .program import (CUSTOM_RULE_PRIMITIVES, Analysis, norm_argnums, traceable_keyword, analyze_entry,  # noqa: F401
                      custom_rule_primitives, lower_and_analyze_global, resolve_options, resolve_wrt)
from ..errors import InputError
from ..ir.keywords import refuse_library_keywords
from .local import local_analysis
from .arguments import TracedCall, traced_call, warn_integer_columns
from .auxiliary import AuxSplit
from .options import AnalysisOptions
from ..ir.parsing import as_module, check_nesting, parse_module, parse_shipped  # noqa: F401  (public here too)
from ..lattice.pattern import SparsityPattern

__all__ = ["Analysis", "lower_and_analyze", "jacobian_sparsity", "analyze_module_global", "parse_module",
           "analyze_call"]


def lower_and_analyze(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                      on_unknown: str = "error", options: AnalysisOptions | None = None,
                      observer: Callable | None = None, derivatives: str = "auto", annotate: bool | dict = False,
                      local: bool = False, **kwargs) -> Analysis:
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

    ``local=True``: the pattern at the point ``args`` (and ``kwargs``) only — see
    :func:`stablehlo_sparsity.analysis.local.local_analysis`.

    ``options`` (:class:`AnalysisOptions`), ``on_unknown``, ``observer``, ``derivatives``, ``annotate`` and
    ``local`` are the library's keywords and never reach ``f``; bind a keyword of ``f`` with one of these names
    with ``functools.partial``.

    ``annotate=True`` (or a dict of :class:`stablehlo_sparsity.passes.annotate.AnnotateOptions` fields such as
    ``{"max_elements": 16}``): ``.module`` is a copy of the analyzed module carrying the analysis as
    ``sparsity.*`` attributes (the ``sparsity-annotate`` pass; print it with ``str(analysis.module)``).

    Raises:
        InputError: no argument to differentiate, an ``argnums`` out of range, a library keyword this function does
            not take, or ``options`` that is not an ``AnalysisOptions``; its subclass ``LoweringError`` when JAX
            cannot trace or lower ``f`` with these arguments.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.
        ValueError: an unknown ``derivatives``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> a = ss.lower_and_analyze(lambda x: x[1:] * x[:-1], jnp.ones(5))
        >>> a.pattern.shape, a.input_shapes, a.output_shapes, a.derivatives
        ((4, 5), [(5,)], [(4,)], 'primal')
    """
    refuse_library_keywords("lower_and_analyze", kwargs, f)
    return analyze_call("lower_and_analyze", f, args, argnums=argnums, has_aux=has_aux, on_unknown=on_unknown,
                        options=options, observer=observer, derivatives=derivatives, annotate=annotate, local=local,
                        kwargs=kwargs)


def analyze_call(what: str, f: Callable, args: Sequence, *, argnums, has_aux: bool, on_unknown: str, options,
                 observer, derivatives: str, annotate, local: bool, kwargs: dict) -> Analysis:
    """:func:`lower_and_analyze` for the public entry point ``what``: the arguments checked and split before
    anything is traced (:func:`.arguments.traced_call`: non-array leaves are static), integer columns warned
    about, then the global or the local analysis (:func:`analyze_traced`)."""
    call = traced_call(what, f, args, argnums)
    warn_integer_columns(call, f, what)
    return analyze_traced(call, has_aux=has_aux, options=resolve_options(options, on_unknown), observer=observer,
                          derivatives=derivatives, annotate=annotate, local=local, kwargs=kwargs)


def analyze_traced(call: TracedCall, *, has_aux: bool, options: AnalysisOptions, observer=None,
                   derivatives: str = "auto", annotate=False, local: bool = False, kwargs=None) -> Analysis:
    """The global or the local analysis of a checked call (:func:`.arguments.traced_call`: its ``argnums``
    are parsed already), with resolved ``options``."""
    kwargs = kwargs or {}
    fn = arrays_only_aux(call.fn) if has_aux else call.fn  # (non-array aux data passes through, never lowered)
    if local:
        return local_analysis(fn, *call.args, argnums=call.argnums, has_aux=has_aux, options=options,
                              observer=observer, derivatives=derivatives, annotate=annotate, **kwargs)
    return lower_and_analyze_global(fn, *call.args, argnums=call.argnums, has_aux=has_aux, options=options,
                                    observer=observer, derivatives=derivatives, annotate=annotate, **kwargs)


def jacobian_sparsity(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                      on_unknown: str = "error", options: AnalysisOptions | None = None, derivatives: str = "auto",
                      local: bool = False, **kwargs) -> SparsityPattern:
    """The global (m × n) Jacobian sparsity pattern of ``f`` at the shapes of ``args``.

    ``local=True``: the *local* pattern at the point ``args`` — valid for those values only, where values
    decide (the active side of a ``max``/``relu``/``where``, an ``argmax``, a sort permutation, a trip count,
    a factor that is zero there).  It contains ``|jax.jacfwd(f)(*args)| > 0`` and never exceeds the global
    pattern (see :func:`stablehlo_sparsity.analysis.local.local_analysis` and docs/explanation/guarantees.md
    "Local patterns").

    ``options`` (an :class:`AnalysisOptions`: folding, loop and memory limits), ``on_unknown``,
    ``derivatives`` and ``local`` are the library's; every other keyword argument is ``f``'s (see
    :func:`lower_and_analyze`).

    Raises:
        InputError: no argument to differentiate, an ``argnums`` out of range, a library keyword this function does
            not take, or ``options`` that is not an ``AnalysisOptions``; its subclass ``LoweringError`` when JAX
            cannot trace or lower ``f`` with these arguments.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.
        ValueError: an unknown ``derivatives``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> p = ss.jacobian_sparsity(lambda x: x[1:] - x[:-1], jnp.ones(4))
        >>> p.shape, p.nnz
        ((3, 4), 6)
        >>> relu, x = (lambda x: jnp.maximum(x, 0.0)), jnp.array([-1.0, 2.0])
        >>> ss.jacobian_sparsity(relu, x).nnz, ss.jacobian_sparsity(relu, x, local=True).nnz    # global, at x
        (2, 1)
    """
    refuse_library_keywords("jacobian_sparsity", kwargs, f)
    return analyze_call("jacobian_sparsity", f, args, argnums=argnums, has_aux=has_aux, on_unknown=on_unknown,
                        options=options, observer=None, derivatives=derivatives, annotate=False, local=local,
                        kwargs=kwargs).pattern


def analyze_module_global(module_or_text, entry: str = "main", *, wrt: Sequence[int] | str | None = None,
                          num_outputs: int | None = None, on_unknown: str = "error",
                          options: AnalysisOptions | None = None, observer: Callable | None = None) -> Analysis:
    """The global pattern of a StableHLO module: :func:`stablehlo_sparsity.analyze_module` without
    ``local_point`` (see there for every argument; the local pattern replays the module in JAX, which the
    importer above the analysis does: :mod:`stablehlo_sparsity.modules.analyze`).

    Raises:
        InputError: the module cannot be read or parsed, it has no function ``entry``, a ``wrt`` index is out of
            range or ``num_outputs`` is negative.

    Examples:
        >>> from stablehlo_sparsity.analysis.api import analyze_module_global
        >>> text = "func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> { return %x : tensor<2xf32> }"
        >>> analyze_module_global(text).pattern.nnz
        2
    """
    module = as_module(module_or_text)
    if num_outputs is not None and int(num_outputs) < 0:
        raise InputError(f"num_outputs must be non-negative, got {num_outputs}")
    opts = resolve_options(options, on_unknown)
    return analyze_entry(module, entry, wrt, num_outputs, opts, observer)


def arrays_only_aux(f: Callable) -> Callable:
    """``f`` (returning ``(output, aux)``) with the auxiliary data cut to its array leaves — what a detection
    lowers: the pattern does not depend on aux, and JAX cannot lower a string or an object."""

    def g(*args, **kwargs):
        out = f(*args, **kwargs)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            return out  # the analysis reports that has_aux needs a pair
        return out[0], AuxSplit().strip(out[1])

    return g

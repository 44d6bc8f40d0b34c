"""Local (point) patterns: the Jacobian pattern at one point, where the point's values decide.

    >>> import jax, jax.numpy as jnp
    >>> from stablehlo_sparsity import jacobian_sparsity
    >>> f = lambda x: jax.nn.relu(x) * x[0]
    >>> x = jnp.array([1.0, -2.0, 3.0, -4.0])
    >>> jacobian_sparsity(f, x).nnz, jacobian_sparsity(f, x, local=True).nnz
    (7, 3)

The global pattern holds for every input; a *local* pattern holds at the given point only (the ReLU of a
negative element has derivative 0 *there*).  It is what SparseConnectivityTracer.jl's local tracers compute.

**What is analyzed.**  The tangent map JAX evaluates at the point: the lowered program
``(primals, tangents) ↦ jax.jvp(f, primals, tangents)[1]`` (``jax.jacfwd`` is this map applied to the
columns of the identity), analyzed with the primals as **known values** (the point's exact values) and the
tangents as the unknown, differentiated inputs.  So:

* the whole primal computation folds at the point — with the error bound every folded float carries
  (:mod:`.folding.exactness`) — and every value-aware rule of the global analysis applies to it unchanged:
  ``select`` with a known predicate takes one side, a multiply by an exact zero drops a dependency, gather /
  scatter / ``dynamic_slice`` indices, ``case`` indices, sort permutations and ``while`` trip counts computed
  from the point are exact;
* JAX's own conventions at ties and kinks come with the program, op by op: ``relu``'s rule is
  ``select(x > 0, t, 0)`` (nothing at ``x == 0``); ``max(a, b)``'s is ``t_a·[a = m] / (1 + [b = m])`` with
  ``m = max(a, b)`` (½ to both sides at a tie, one side elsewhere); a max-reduction's tangent is masked by
  ``x == max`` (all tied elements); max pooling carries ``(value, tangent)`` pairs through a ``reduce_window``
  that keeps the larger value (with the values known: the winning taps, ``rules/windows.py``); sort's
  tangent is gathered by the permutation XLA computes (ties: a stable sort's order; an unstable sort with
  ties leaves the permutation unknown);
* a decision is taken only where every XLA evaluation of the point agrees: a comparison of folded floats
  within their error bounds (``h`` computed as ``1e-17`` where the bound is ``4e-16``) stays undecided, and
  both sides are kept — per element: a ``select`` whose predicate is undecided somewhere still takes one
  side wherever the comparison behind it is certain (``rules/elementwise.py``, ``decided_predicate``).  Known
  values never carry dependencies here (the primals are not differentiated), so
  no rule needs a second, point-aware variant: the invariant of the constant lattice holds as in the global
  analysis.

A custom_vjp function (no forward mode in JAX) is analyzed through its VJP program
``(primals, cotangent) ↦ pullback(cotangent)``, transposed.

**The meet with the global pattern.**  The result is ``local ∩ global``: both are sound at the point (the
global pattern at every point), so their intersection is too, and it never exceeds the global pattern even
where the tangent program's analysis is coarser than the primal's (values the point cannot decide).

**Hessians.**  :func:`~stablehlo_sparsity.hessian_sparsity` with ``local=True`` analyzes the gradient
program the same way — ``jvp(grad f)`` at the point, forward over reverse, the program ``jax.hessian``
evaluates — and symmetrizes.

**Modules.**  :func:`stablehlo_sparsity.modules.local.module_local_analysis` (``analyze_module(...,
local_point=...)``) imports the module
(:func:`~stablehlo_sparsity.modules.importer.import_module`: each op replayed with its ``jax.lax`` twin, so JAX's
derivative rules define the module's derivative, as in ``check_jacobian_module``) and analyzes its JVP
program at the point; the global pattern it meets is the module's own analysis.
"""

from __future__ import annotations

import functools
import warnings
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from .._compat import constants_in_module, release_lowering_caches
from .program import (norm_argnums, traceable_keyword, analyze_entry, custom_rule_primitives, lower_and_analyze_global,
                      resolve_options)
from ..errors import InputError, SparsityError, SparsityWarning
from ..ir.helpers import functions
from .options import AnalysisOptions
from ..lattice.pattern import SparsityPattern

__all__ = ["local_analysis", "point_pattern", "meet_with_global"]

_CUSTOM_VJP = frozenset({"custom_vjp_call", "custom_vjp_call_jaxpr"})


def local_analysis(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   options: AnalysisOptions | None = None, observer: Callable | None = None,
                   derivatives: str = "auto", annotate: bool | dict = False, **kwargs):
    """The :class:`~stablehlo_sparsity.analysis.api.Analysis` of ``f`` at the point ``(args, kwargs)``: its ``pattern``
    is the local Jacobian pattern there, met with the global one; ``.local`` is True, ``.derivatives`` says
    which program was analyzed at the point (``"jvp"``, or ``"vjp"`` for a custom_vjp function), ``.module``
    and ``.results`` are that program's.  What ``lower_and_analyze(f, *args, local=True)`` returns."""

    if not args:
        raise InputError("a local pattern needs the point: at least one argument")
    if annotate:
        raise InputError("annotate=True is not available with local=True (the annotations describe the global "
                         "analysis of one program; analyze without local=True to annotate)")
    if derivatives not in ("auto", "jvp", "vjp", "primal"):
        raise ValueError("derivatives must be 'auto', 'primal', 'jvp' or 'vjp'")
    if derivatives == "primal":
        raise InputError("local=True analyzes the tangent program JAX evaluates at the point (derivatives='auto', "
                         "'jvp' or 'vjp'), not the primal program")
    opts = resolve_options(options)
    argnums_t = norm_argnums(argnums, len(args))
    if len(set(argnums_t)) != len(argnums_t):
        raise InputError(f"argnums {argnums!r} repeats an argument, which local=True does not support")
    with warnings.catch_warnings():  # the point analysis reports its own conservative steps; the meet is tighter
        warnings.simplefilter("ignore", SparsityWarning)
        glob = lower_and_analyze_global(f, *args, argnums=argnums_t, has_aux=has_aux, options=opts,
                                        derivatives=derivatives, **kwargs)
    raw, point = point_pattern(f, args, kwargs, argnums_t, has_aux, derivatives, opts, observer)
    return meet_with_global(glob, raw, point)


# ---------------------------------------------------------------------------------------------- internals
def meet_with_global(glob, raw: sp.csr_array, point):
    """``glob`` with the local pattern ``raw ∩ glob.pattern`` and the point program's module and results."""
    if raw.shape != glob.pattern.shape:  # a bookkeeping bug, never a user error: say so loudly
        raise SparsityError(f"local pattern of shape {raw.shape} for a global pattern of shape {glob.pattern.shape}")
    glob.pattern = SparsityPattern(raw.multiply(glob.pattern.to_scipy()).tocsr())
    glob.module, glob.results = point.module, point.results
    glob.warnings = list(point.warnings)  # the meet is tighter than the point analysis: its steps say it all
    glob.derivatives = point.derivatives
    glob.local = True
    return glob


def _inexact(dtype) -> bool:
    import jax.numpy as jnp

    return bool(jnp.issubdtype(dtype, jnp.inexact))


def point_pattern(f, args, kwargs, argnums_t, has_aux, derivatives, opts, observer):
    """The raw (m × n) local pattern of ``f`` at ``args`` (not yet met with the global one), and the
    :class:`Analysis` of the point program."""
    import jax


    traced_kw = {k: v for k, v in kwargs.items() if traceable_keyword(v)}
    fn = functools.partial(f, **{k: v for k, v in kwargs.items() if k not in traced_kw})
    try:
        try:
            jaxpr = jax.jit(fn, keep_unused=True).trace(*args, **traced_kw).jaxpr
        except Exception:
            if not traced_kw:
                raise
            fn, traced_kw = functools.partial(f, **kwargs), {}  # Python control flow on a keyword: bind it
            jaxpr = jax.jit(fn, keep_unused=True).trace(*args).jaxpr
    except SparsityError:
        raise
    except Exception as e:
        raise InputError(f"could not lower the function with the given arguments: {type(e).__name__}: {e}") from e
    how = derivatives
    if how == "auto":
        how = "vjp" if custom_rule_primitives(jaxpr) & _CUSTOM_VJP else "jvp"
    program, extra, shape = _tangent_program(fn, args, traced_kw, argnums_t, has_aux, how)
    try:
        with constants_in_module():
            lowered = jax.jit(program, keep_unused=True).lower(*args, *extra, **traced_kw)
        release_lowering_caches()
    except SparsityError:
        raise
    except Exception as e:
        raise InputError(f"could not lower the {how.upper()} program of f at the point (JAX cannot "
                         f"differentiate f this way there): {type(e).__name__}: {e}") from e
    module = lowered.compiler_ir("stablehlo")

    # Module arguments: the positional leaves, the tangents (or cotangents), the traced keyword leaves.
    known = [leaf for a in args for leaf in jax.tree_util.tree_leaves(a)]
    kw_leaves = jax.tree_util.tree_leaves(traced_kw)
    with module.context:
        main = functions(module).get("main")
        nargs = len(main.regions[0].blocks[0].arguments) if main is not None else -1
    if nargs != len(known) + len(extra) + len(kw_leaves):
        raise InputError(f"the lowered {how.upper()} program has {nargs} arguments for "
                         f"{len(known) + len(extra) + len(kw_leaves)} array leaves (effects or tokens?): "
                         "a local pattern cannot map the point onto it")
    values = [_host(v) for v in known] + [None] * len(extra) + [_host(v) for v in kw_leaves]
    wrt = list(range(len(known), len(known) + len(extra)))
    analysis = analyze_entry(module, "main", wrt, None, opts, observer, values=values)
    analysis.derivatives = how
    raw = analysis.pattern.to_scipy()
    if how == "vjp":  # rows of the VJP program are the (differentiable) inputs: transpose back
        raw = sp.csr_array(raw.T)
    return _expand(raw, *shape), analysis


def _host(value):
    """A point value as a NumPy array (``None`` — unknown, sound — for what is not an array, e.g. a PRNG key)."""
    try:
        arr = np.asarray(value)
    except Exception:
        return None
    return arr if arr.dtype.kind in "biufc" or arr.dtype.name == "bfloat16" else None


def _tangent_program(fn, args, traced_kw, argnums_t, has_aux, how):
    """``(program, extra, (rows, cols))``: the tangent map of ``fn`` at the point as a function JAX lowers.

    ``"jvp"``: ``(*args, *tangents, **kw) ↦ tangent outputs``; ``"vjp"``: ``(*args, *cotangents, **kw) ↦
    input cotangents``.  Only inexact leaves carry tangents: integer and boolean inputs and outputs have none
    (``float0``), as in ``jax.jacfwd``; ``rows``/``cols`` are ``(size, differentiable)`` per output/input leaf,
    for :func:`_expand`."""
    import jax
    import jax.numpy as jnp

    nargs = len(args)
    sel_leaves, sel_tree = jax.tree_util.tree_flatten(tuple(args[i] for i in argnums_t))
    diff_in = [_inexact(jnp.result_type(leaf)) for leaf in sel_leaves]

    def primal_out(*full, **kw):
        out = fn(*full, **kw)
        return out[0] if has_aux else out

    out_leaves, out_tree = jax.tree_util.tree_flatten(jax.eval_shape(primal_out, *args, **traced_kw))
    diff_out = [_inexact(o.dtype) for o in out_leaves]

    def restrict(prim, kw):
        def fsel(*leaves):
            full = list(prim)
            for i, a in zip(argnums_t, jax.tree_util.tree_unflatten(sel_tree, leaves)):
                full[i] = a
            return primal_out(*full, **kw)

        return fsel

    def float0(like):
        return np.zeros(np.shape(like), dtype=jax.dtypes.float0)

    def primal_leaves(prim):
        return jax.tree_util.tree_leaves(tuple(prim[i] for i in argnums_t))

    if how == "jvp":
        def program(*all_args, **kw):
            prim, it = all_args[:nargs], iter(all_args[nargs:])
            p = primal_leaves(prim)
            tangents = [next(it) if d else float0(x) for x, d in zip(p, diff_in)]
            out = jax.jvp(restrict(prim, kw), p, tangents)[1]
            return [t for t, d in zip(jax.tree_util.tree_leaves(out), diff_out) if d]

        extra = [leaf for leaf, d in zip(sel_leaves, diff_in) if d]
    else:
        def program(*all_args, **kw):
            prim, it = all_args[:nargs], iter(all_args[nargs:])
            p = primal_leaves(prim)
            cts = [next(it) if d else float0(o) for o, d in zip(out_leaves, diff_out)]
            _, pullback = jax.vjp(restrict(prim, kw), *p)
            return [c for c, d in zip(pullback(jax.tree_util.tree_unflatten(out_tree, cts)), diff_in) if d]

        extra = [jnp.zeros(o.shape, o.dtype) for o, d in zip(out_leaves, diff_out) if d]
    rows = [(int(np.prod(o.shape, dtype=np.int64)), d) for o, d in zip(out_leaves, diff_out)]
    cols = [(int(np.size(leaf)), d) for leaf, d in zip(sel_leaves, diff_in)]
    return program, extra, (rows, cols)


def _positions(blocks) -> np.ndarray:
    """Full-matrix indices of the differentiable leaves' elements, in order."""
    sizes = np.array([s for s, _ in blocks], np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(blocks) else np.zeros(0, np.int64)
    return np.concatenate([np.arange(st, st + s, dtype=np.int64) for (s, d), st in zip(blocks, starts) if d]
                          or [np.zeros(0, np.int64)])


def _expand(raw: sp.csr_array, rows, cols) -> sp.csr_array:
    """The pattern over differentiable leaves placed in the full (all leaves) matrix: empty rows and columns
    for integer and boolean leaves (no derivative)."""
    m = int(sum(s for s, _ in rows))
    n = int(sum(s for s, _ in cols))
    if raw.shape == (m, n):
        return sp.csr_array(raw, dtype=bool)
    r, c = raw.nonzero()
    pr, pc = _positions(rows), _positions(cols)
    return sp.csr_array((np.ones(len(r), bool), (pr[r], pc[c])), shape=(m, n))

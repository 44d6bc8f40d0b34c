"""Entry points of the direct Hessian analysis: a parsed module's entry, or a JAX function's primal program."""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ..program import custom_rules_of, cyclic_gc_paused, lowered_for_analysis
from ...errors import InputError, SparsityError
from ...lattice import nnz_budget
from ..values import AbstractValue
from .interpreter import SecondOrderInterpreter

__all__ = ["hessian_pattern_of_entry", "direct_hessian_sparsity", "NotCovered", "PreferGradient"]


class NotCovered(SparsityError):
    """The direct analysis does not apply to this function (``method="auto"`` then takes the gradient path)."""


class PreferGradient(NotCovered):
    """``method="auto"``: the cost model (:mod:`.method`) predicts the gradient path to be faster here."""


def hessian_pattern_of_entry(module, entry: str, wrt, options) -> tuple[sp.csr_array, list[str]]:
    """The symmetric ``(n, n)`` Hessian pattern of the scalar entry ``@entry`` of a parsed module, from its
    primal program, and the analysis' warnings.  ``wrt``: indices of the differentiated data arguments
    (tokens skipped), as :func:`~stablehlo_sparsity.analysis.program.resolve_wrt` gives them."""
    from ..program import data_results, entry_layout

    with module.context, cyclic_gc_paused():
        layout = entry_layout(module, entry, wrt)
        interp = SecondOrderInterpreter(module, layout.n, options, function_table=layout.table)
        args = [AbstractValue(t, layout.argument_deps(i, interp.n)) for i, t in enumerate(layout.arg_types)]
        results = data_results(interp.call(entry, args))
    if not results or results[0].size != 1:
        shape = results[0].shape if results else "nothing"
        raise InputError(f"a Hessian needs a scalar function; @{entry} returns {shape}")
    with nnz_budget(options.max_pattern_nnz):
        pattern = interp.interactions(results[0])
    return pattern, list(interp.warned)


def direct_hessian_sparsity(f, args: Sequence, argnums_t: tuple[int, ...], has_aux: bool, options, kwargs,
                            auto: bool = False) -> tuple[sp.csr_array, bool, str]:
    """The Hessian pattern of the scalar ``f`` from its lowered primal program (no gradient program), whether
    JAX can push tangents through ``f`` (no ``custom_vjp`` anywhere in it: :attr:`.program.CustomRules.forward_mode`),
    and why the direct method ran (``pattern.method_reason``: asked for, or the cost model's decision).

    Raises :class:`NotCovered` when ``f`` uses a custom derivative rule of its own (``custom_jvp`` …): JAX's
    Hessian then follows the rule, which the primal program does not show.  ``auto``: raises
    :class:`PreferGradient` (before lowering anything) when the cost model (:mod:`.method`) predicts the gradient
    path to be faster for this program; its message is the reason."""
    with cyclic_gc_paused():
        return _direct_hessian_sparsity(f, args, argnums_t, has_aux, options, kwargs, auto)


def _direct_hessian_sparsity(f, args: Sequence, argnums_t: tuple[int, ...], has_aux: bool, options, kwargs,
                             auto: bool = False) -> tuple[sp.csr_array, bool, str]:
    import jax

    fn = functools.partial(f, **kwargs) if kwargs else f
    try:
        traced = jax.jit(fn, keep_unused=True).trace(*args)
    except Exception as e:
        raise InputError(f"could not lower the function with the given arguments: {type(e).__name__}: {e}") from e
    rules = custom_rules_of(traced.jaxpr)
    custom = rules.names(user_only=True)
    if custom:
        raise NotCovered(f"f uses a custom derivative rule ({', '.join(sorted(custom))}); the primal program does "
                         "not show the derivative JAX computes: use method='via-gradient'")
    reason = "method='direct' was asked for"
    if auto:
        from .method import HessianMethod, choose_method, explain, program_features

        features = program_features(traced.jaxpr)
        reason = explain(features)
        if choose_method(features) is HessianMethod.VIA_GRADIENT:
            raise PreferGradient(reason)
    try:
        lowered, _, walked = lowered_for_analysis(traced)
    except Exception as e:
        raise InputError(f"could not lower the function with the given arguments: {type(e).__name__}: {e}") from e
    out_tree = lowered.out_tree
    if has_aux:
        if out_tree.num_nodes == 1 or len(out_tree.children()) != 2:
            raise InputError("has_aux=True needs f to return a pair (output, aux)")
        if out_tree.children()[0].num_leaves != 1:
            raise InputError("a Hessian needs a scalar function")
    elif out_tree.num_leaves != 1:
        raise InputError("a Hessian needs a scalar function")
    leaves_per_arg = [jax.tree_util.tree_leaves(a) for a in args]
    starts = np.cumsum([0] + [len(leaves) for leaves in leaves_per_arg])
    wrt = [int(starts[i]) + j for i in argnums_t for j in range(len(leaves_per_arg[i]))]
    pattern, _ = hessian_pattern_of_entry(walked, "main", wrt, options)
    return pattern, rules.forward_mode, reason

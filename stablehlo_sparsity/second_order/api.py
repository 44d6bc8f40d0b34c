"""Entry points of the direct Hessian analysis: a parsed module's entry, or a JAX function's primal program."""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import InputError, SparsityError
from ..lattice import Deps, nnz_budget
from ..values import AbstractValue, is_differentiable, is_token_type, tensor_type
from .interpreter import SecondOrderInterpreter

__all__ = ["hessian_pattern_of_entry", "direct_hessian_sparsity", "NotCovered"]


class NotCovered(SparsityError):
    """The direct analysis does not apply to this function (``method="auto"`` then takes the gradient path)."""


def hessian_pattern_of_entry(module, entry: str, wrt, options) -> tuple[sp.csr_array, list[str]]:
    """The symmetric ``(n, n)`` Hessian pattern of the scalar entry ``@entry`` of a parsed module, from its
    primal program, and the analysis' warnings.  ``wrt``: indices of the differentiated data arguments
    (tokens skipped), as :func:`~stablehlo_sparsity.analysis.resolve_wrt` gives them."""
    from jaxlib.mlir import ir

    from ..analysis import resolve_wrt
    from ..errors import format_location

    with module.context:
        fn = None
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == entry:
                fn = op
        if fn is None:
            raise InputError(f"no entry function '@{entry}' in the module")
        loc = format_location(fn.location)
        if not len(fn.regions[0].blocks):
            raise InputError(f"entry function '@{entry}' has no body (it is a declaration)", loc)
        block = fn.regions[0].blocks[0]
        arg_types = [tensor_type(a.type, loc) for a in block.arguments]
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
        interp = SecondOrderInterpreter(module, n, options)
        args = []
        for i, t in enumerate(arg_types):
            own = i in col_of and is_differentiable(t.dtype)
            deps = Deps.identity(t.size, interp.n, col_of[i]) if own else Deps.empty(t.size, interp.n)
            args.append(AbstractValue(t, deps))
        results = interp.call(entry, args)
        res_types = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results
        results = [r for r, t in zip(results, res_types) if not is_token_type(t)]
    if not results or results[0].size != 1:
        shape = results[0].shape if results else "nothing"
        raise InputError(f"a Hessian needs a scalar function; @{entry} returns {shape}")
    with nnz_budget(options.max_pattern_nnz):
        pattern = interp.interactions(results[0])
    return pattern, list(interp.warned)


def direct_hessian_sparsity(f, args: Sequence, argnums_t: tuple[int, ...], has_aux: bool, options, kwargs,
                            ) -> sp.csr_array:
    """The Hessian pattern of the scalar ``f`` from its lowered primal program (no gradient program).

    Raises :class:`NotCovered` when ``f`` uses a custom derivative rule of its own (``custom_jvp`` …): JAX's
    Hessian then follows the rule, which the primal program does not show."""
    import jax

    from ..analysis import custom_rule_primitives

    fn = functools.partial(f, **kwargs) if kwargs else f
    try:
        traced = jax.jit(fn, keep_unused=True).trace(*args)
    except Exception as e:
        raise InputError(f"could not lower the function with the given arguments: {type(e).__name__}: {e}") from e
    custom = custom_rule_primitives(traced.jaxpr, user_only=True)
    if custom:
        raise NotCovered(f"f uses a custom derivative rule ({', '.join(sorted(custom))}); the primal program does "
                         "not show the derivative JAX computes: use method='via-gradient'")
    try:
        lowered = traced.lower()
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
    module = lowered.compiler_ir("stablehlo")
    pattern, _ = hessian_pattern_of_entry(module, "main", wrt, options)
    return pattern

"""Sparse Hessians: the pattern through the gradient program, star coloring, Hessian-vector products.

    >>> import jax.numpy as jnp
    >>> from stablehlo_sparsity import hessian_sparsity, sparse_hessian
    >>> f = lambda x: jnp.sum((x[1:] - x[:-1] ** 2) ** 2)
    >>> hessian_sparsity(f, jnp.ones(5)).nnz                      # tridiagonal
    13
    >>> H = sparse_hessian(f, jnp.ones(5), output="dense")
    >>> H.num_colors
    3

Detection.  ``hessian_sparsity`` lowers ``jax.grad(f)`` to StableHLO and analyzes its Jacobian pattern — the
Hessian's pattern, as a sound superset — then symmetrizes it (``P ∪ Pᵀ``): the analysis may see a
dependence in one direction only (e.g. through ``stop_gradient``, invisible at the StableHLO level), and the
symmetric decompression reads each pair from one side, so both sides must be in the pattern.

Evaluation.  With a star coloring ``c`` of the symmetric pattern (see :mod:`stablehlo_sparsity.coloring.star`)
the compressed ``B = H S`` takes one Hessian-vector product per color — forward-over-reverse,
``jvp(grad f)``, ``vmap``-ed over the seeds — and every nonzero is read directly: ``H[i, j] = B[i, c[j]]``
when ``j`` is the only neighbour of ``i`` with its color, else ``B[j, c[i]]`` (one static gather).

``mode="substitution"`` uses an acyclic coloring instead (:mod:`stablehlo_sparsity.coloring.acyclic`):
often fewer colors (a banded Hessian of half-bandwidth ``w``: ``w + 1`` against about ``2w + 1``), every
entry recovered by substitution along the two-colored trees — inside the same XLA program, as one
segmented prefix sum.  Its rounding error grows with the length of those chains
(:attr:`SparseHessian.longest_chain`), where direct recovery reads each entry from one product.
``mode="auto"`` substitutes only when that saves products and the longest chain keeps the worst-case
rounding error within half of the digits of the input dtype (``chain · eps ≤ √eps``: chains up to about
2,900 in float32); ``"direct"`` (star) is the default.
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from .api import _norm_argnums, lower_and_analyze
from .coloring import Coloring, color_star, star_sources, symmetrize
from .errors import InputError
from .evaluation import EvaluationPlan, Side
from .jacobian import (OUTPUTS, ColoringOptions, _bind_selected, _check_f_kwargs, _check_inputs, _check_strategy,
                       _flat, _index_dtype, _Prepared, _struct, _warn_float64, seed_factory)
from .pattern import SparsityPattern
from . import second_order

__all__ = ["hessian_sparsity", "sparse_hessian", "value_and_sparse_hessian", "hessian_coloring", "SparseHessian",
           "HESSIAN_MODES"]

#: ``mode`` of the sparse Hessian: star coloring and direct recovery, acyclic coloring and substitution, or
#: substitution only when it needs fewer products.
HESSIAN_MODES = ("direct", "substitution", "auto")


def _scalar(fn, has_aux: bool):
    """``fn`` with its (differentiated) output reshaped to a scalar; refuses outputs of size ≠ 1."""
    import jax.numpy as jnp

    def check(y):
        y = jnp.asarray(y)
        if y.size != 1:
            raise InputError(f"a Hessian needs a scalar function; f returns shape {y.shape}")
        return jnp.reshape(y, ())

    if has_aux:
        def g(*a):
            y, aux = fn(*a)
            return check(y), aux
    else:
        def g(*a):
            return check(fn(*a))
    return g


def _gradient_program(f, argnums, has_aux, kwargs):
    import jax

    fn = functools.partial(f, **kwargs) if kwargs else f
    return jax.grad(_scalar(fn, has_aux), argnums=argnums, has_aux=has_aux)


def hessian_sparsity(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                     on_unknown: str = "error", options=None, local: bool = False, method: str = "auto",
                     **kwargs) -> SparsityPattern:
    """The (n × n) Hessian sparsity pattern of the scalar function ``f`` at the shapes of ``args``.

    ``n`` counts the flattened leaves of the selected arguments in ``argnums`` order.  ``options``: an
    :class:`~stablehlo_sparsity.AnalysisOptions`; every other keyword argument is ``f``'s (bound statically).

    ``method``: ``"direct"`` — the second-order analysis of the primal program (:mod:`.second_order`), no
    gradient program is built; ``"via-gradient"`` — the Jacobian pattern of the lowered gradient program,
    symmetrized (see the module docstring); ``"auto"`` (default) — direct, unless ``f`` uses a custom
    derivative rule of its own, the direct analysis' interactions exceed the nonzero budget, or ``local=True``:
    then via the gradient.

    ``local=True``: the pattern at the point ``args`` only — the gradient program's local Jacobian pattern
    (forward over reverse, as ``jax.hessian`` evaluates it), symmetrized; it contains ``|jax.hessian(f)(x)| >
    0`` and never exceeds the global pattern (docs/guarantees.md "Local patterns").
    """
    if method not in ("auto", "direct", "via-gradient"):
        raise InputError(f"method must be 'auto', 'direct' or 'via-gradient', got {method!r}")
    if method != "via-gradient" and not local:
        if not args:
            raise InputError("hessian_sparsity needs at least one argument to differentiate")
        from .analysis import resolve_options

        argnums_t = tuple(dict.fromkeys(_norm_argnums(argnums, len(args))))
        try:
            return SparsityPattern(second_order.direct_hessian_sparsity(
                f, args, argnums_t, has_aux, resolve_options(options, on_unknown), kwargs))
        except second_order.FALLBACK_ERRORS:
            if method == "direct":
                raise
    elif method == "direct":
        raise InputError("method='direct' gives the global pattern; local=True needs method='via-gradient'")
    return _detect(f, args, argnums, has_aux, on_unknown, kwargs, options, local=local)[0]


def _detect(f, args, argnums, has_aux, on_unknown, kwargs, options=None, local: bool = False):
    if not args:
        raise InputError("hessian_sparsity needs at least one argument to differentiate")
    argnums_t = tuple(dict.fromkeys(_norm_argnums(argnums, len(args))))
    grad_fn = _gradient_program(f, argnums_t if len(argnums_t) > 1 else argnums_t[0], has_aux, kwargs)
    analysis = lower_and_analyze(grad_fn, *args, argnums=argnums_t, has_aux=has_aux, on_unknown=on_unknown,
                                 options=options, local=local)
    return SparsityPattern(symmetrize(analysis.pattern.to_scipy())), analysis, argnums_t


def hessian_coloring(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                     order: str = "best", recolor: str = "auto", seed: int = 0, mode: str = "direct",
                     on_unknown: str = "error", options=None, **kwargs) -> Coloring:
    """Detect the Hessian pattern of ``f`` and color it: star (``mode="direct"``), acyclic
    (``"substitution"``) or acyclic only when that pays (``"auto"``, see :func:`sparse_hessian`)."""
    import jax
    import jax.numpy as jnp

    pattern = hessian_sparsity(f, *args, argnums=argnums, has_aux=has_aux, on_unknown=on_unknown, options=options,
                               **kwargs)
    sel = [args[i] for i in dict.fromkeys(_norm_argnums(argnums, len(args)))]
    dtype = jnp.result_type(*jax.tree_util.tree_leaves(sel))
    return _choose_hessian_coloring(pattern, mode, None, ColoringOptions(order, recolor, seed), dtype)[0]


def _choose_hessian_coloring(pattern: SparsityPattern, mode: str, coloring, options: ColoringOptions, dtype):
    """``(coloring, substitution plan or None)`` for ``mode`` (see :data:`HESSIAN_MODES`).  A given
    ``coloring`` must be a star coloring for ``"direct"``, star or acyclic otherwise (a star coloring is
    acyclic).  ``"auto"`` substitutes when the acyclic coloring needs fewer colors and its longest chain
    keeps the worst-case rounding error within half the digits of ``dtype`` (``chain · eps ≤ √eps``)."""
    from .coloring import DecompressionPlan, check_coloring, color_acyclic

    if mode not in HESSIAN_MODES:
        raise InputError(f"mode must be one of {', '.join(HESSIAN_MODES)}, got {mode!r}")
    if coloring is not None:
        kinds = ("star",) if mode == "direct" else ("star", "acyclic")
        if not isinstance(coloring, Coloring) or coloring.kind not in kinds or coloring.shape != pattern.shape:
            raise InputError(f"coloring must be a {' or '.join(kinds)} Coloring of the Hessian pattern")
        check_coloring(pattern, coloring, raise_on_error=True)
        plan = None if mode == "direct" else DecompressionPlan(pattern, coloring, "acyclic")
        return coloring, plan
    if mode == "direct":
        return color_star(pattern, **options.kwargs()), None
    acyclic = color_acyclic(pattern, **options.kwargs())
    plan = DecompressionPlan(pattern, acyclic)
    if mode == "substitution":
        return acyclic, plan
    star = color_star(pattern, **options.kwargs())
    eps = float(np.finfo(dtype).eps)
    if acyclic.num_colors < star.num_colors and plan.longest_chain * eps <= eps ** 0.5:
        return acyclic, plan
    return star, None


class SparseHessian(_Prepared):
    """A prepared sparse Hessian of a scalar ``f``: call it with arguments of the prepared shapes.

    Output formats and attributes as :class:`~stablehlo_sparsity.jacobian.SparseJacobian` (``num_colors``
    Hessian-vector products per evaluation).  With ``has_aux`` it returns ``(H, aux)``; a value-and-Hessian
    callable returns ``(f(x), H)`` or ``((f(x), aux), H)``.
    """

    _what = "Hessian"

    def __init__(self, f: Callable, args: tuple, *, argnums=0, has_aux: bool = False, output: str = "bcoo",
                 with_value: bool = False, coloring: Coloring | None = None,
                 coloring_options: ColoringOptions | None = None, kwargs: dict | None = None,
                 on_unknown: str = "error", constant_seeds: bool | None = None, mode: str = "direct",
                 options=None, strategy: str = "auto", chunk_size: int | None = None, devices=None):
        import jax

        self.constant_seeds = constant_seeds
        if output not in OUTPUTS:
            raise InputError(f"output must be one of {', '.join(OUTPUTS)}, got {output!r}")
        _check_f_kwargs(kwargs or {}, "sparse_hessian")
        _check_strategy(strategy, chunk_size)
        self.strategy_requested, self.chunk_size = strategy, chunk_size
        kwargs = kwargs or {}
        self.has_aux = bool(has_aux)
        self.output = output
        self.with_value = bool(with_value)
        self._example = jax.tree_util.tree_map(_struct, tuple(args))
        self._in_tree = jax.tree_util.tree_structure(tuple(args))
        self._set_devices(devices)
        self.pattern, self.analysis, self.argnums = _detect(f, args, argnums, has_aux, on_unknown, kwargs, options)
        self._argnums_int = isinstance(argnums, (int, np.integer))
        _check_inputs(jax.tree_util.tree_leaves(tuple(args[i] for i in self.argnums)), "sparse_hessian")
        _warn_float64(jax.tree_util.tree_leaves(tuple(args[i] for i in self.argnums)))
        self._fn = _scalar(functools.partial(f, **kwargs) if kwargs else f, has_aux)
        opts = coloring_options or ColoringOptions()
        x_dtype = jax.numpy.result_type(*jax.tree_util.tree_leaves(tuple(args[i] for i in self.argnums)))
        coloring, plan = _choose_hessian_coloring(self.pattern, mode, coloring, opts, x_dtype)
        self.coloring = coloring
        self.mode = "direct" if plan is None else "substitution"
        if self.mode == "substitution":
            self._prepare_substitution(plan)
            return
        n = self.pattern.shape[0]
        k = coloring.num_colors
        src = star_sources(self.pattern, coloring)
        if (src < 0).any():
            raise InputError("the star coloring does not allow direct recovery of every Hessian entry")
        # star_sources indexes B (n × k) as r·k + c; the program computes Bᵀ (k × n): c·n + r.
        r, c = np.divmod(src, max(k, 1))
        rows, cols = self.pattern.to_coo()
        t = _index_dtype(max(n, 1))
        self._rows, self._cols = rows.astype(t), cols.astype(t)
        self._colors = coloring.colors.astype(np.int32)
        self._plan = EvaluationPlan([Side(self._colors, k, n, "hvp")], c * n + r, self.strategy_requested,
                                    self.chunk_size, itemsize=self._itemsize())
        self._reset_compiled()

    @property
    def strategy(self) -> str:
        """The evaluation strategy in use (see :mod:`stablehlo_sparsity.evaluation`)."""
        plan = getattr(self, "_plan", None)
        return plan.strategy if plan is not None else "vmap"

    def _values_on(self, args, shard=None):
        """``(f(x), aux, nonzeros in CSR order)``: one forward-over-reverse Hessian-vector product per color
        (``shard``: this device's block of colors inside ``shard_map``)."""
        import jax
        import jax.numpy as jnp

        sel = tuple(args[i] for i in self.argnums)
        sel_leaves, sel_tree = jax.tree_util.tree_flatten(sel)
        h = _bind_selected(self._fn, args, self.argnums)
        nsel = len(sel)
        vg = jax.value_and_grad(h, argnums=tuple(range(nsel)), has_aux=self.has_aux)
        k = self.num_colors
        x_dtype = jnp.result_type(*sel_leaves)
        if k == 0:
            val, _ = vg(*sel)
            y, aux = val if self.has_aux else (val, None)
            return y, aux, jnp.zeros((0,), x_dtype)
        # One pass of the function and its gradient, tangents through the gradient program: the primal value
        # only rides along when it is asked for (value_and_…) or aux needs it.
        argnums = tuple(range(nsel))
        if self.has_aux or self.with_value:
            def fun(*s):
                val, g = vg(*s)
                y, a = val if self.has_aux else (val, None)
                return g, (y, a)
        else:
            grad = jax.grad(h, argnums=argnums)

            def fun(*s):
                return grad(*s), (None, None)

        def hvp(t):
            _g, gdot, primal = jax.jvp(fun, sel, t, has_aux=True)
            return primal, _flat(gdot)

        seeds = seed_factory(self._colors, k, sel_leaves, sel_tree, self.constant_seeds)

        plan = self._plan
        y = aux = None
        linear = [None]
        if plan.strategy == "loop":
            _g, lin, (y, aux) = jax.linearize(fun, *sel, has_aux=True)
            linear = [lambda t: _flat(lin(*t))]
        if self.mode == "substitution":
            if shard is not None:
                flat, primal = plan.sharded_stacked([hvp], [seeds], x_dtype, *shard)
            else:
                flat, primal = plan.stacked([hvp], [seeds], x_dtype, linear)
            values = self._plan_sub.jax_values_from_stacked(flat)
        elif shard is not None:
            values, primal = plan.sharded_values([hvp], [seeds], x_dtype, *shard)
        else:
            values, primal = plan.values([hvp], [seeds], x_dtype, linear)
        if primal is not None and y is None:
            y, aux = primal
        return y, aux, values

    def _prepare_substitution(self, plan):
        """Keep the substitution plan (static index arrays; see
        :class:`~stablehlo_sparsity.coloring.DecompressionPlan`); the products are computed by the
        evaluation plan (stacked) and recovered by substitution."""
        self._plan_sub = plan
        rows, cols = self.pattern.to_coo()
        t = _index_dtype(max(self.pattern.shape[0], 1))
        self._rows, self._cols = rows.astype(t), cols.astype(t)
        self._colors = self.coloring.colors.astype(np.int32)
        n = self.pattern.shape[0]
        self._plan = EvaluationPlan([Side(self._colors, self.coloring.num_colors, n, "hvp")], None,
                                    self.strategy_requested, self.chunk_size, itemsize=self._itemsize())
        self._reset_compiled()

    @property
    def longest_chain(self) -> int:
        """The most Hessian-vector-product entries summed into one Hessian entry: 1 for direct recovery, the
        largest two-colored subtree for substitution (the rounding error grows with it)."""
        return self._plan_sub.longest_chain if self.mode == "substitution" else 1

    def __repr__(self) -> str:
        n = self.shape[0]
        how = ", by substitution" if self.mode == "substitution" else ""
        return (f"SparseHessian({n}×{n}, nnz={self.pattern.nnz}, {self.num_colors} Hessian-vector products "
                f"per evaluation{how}, strategy={self.strategy!r}, output={self.output!r})")


def sparse_hessian(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   output: str = "bcoo", order: str = "best", recolor: str = "auto", seed: int = 0,
                   coloring: Coloring | None = None, on_unknown: str = "error",
                   constant_seeds: bool | None = None, mode: str = "direct", options=None,
                   strategy: str = "auto", chunk_size: int | None = None, devices=None,
                   **kwargs) -> SparseHessian:
    """Prepare a sparse Hessian of the scalar ``f`` at the shapes of ``args``: detection (through the
    gradient program) and star coloring run now; each call evaluates ``num_colors`` forward-over-reverse
    Hessian-vector products in one XLA program and decompresses symmetrically with one static gather.
    ``mode="substitution"``: acyclic coloring (often fewer products) and recovery by substitution;
    ``"auto"``: substitution only when it needs fewer products and its chains are short enough for the
    dtype (see the module docstring).  ``options``: an :class:`~stablehlo_sparsity.AnalysisOptions` for the
    detection.  ``strategy`` / ``chunk_size`` lay out the products and ``devices`` spreads them over several
    devices, as for :func:`~stablehlo_sparsity.sparse_jacobian`.  Other keyword arguments are static
    arguments of ``f``."""
    return SparseHessian(f, args, argnums=argnums, has_aux=has_aux, output=output, coloring=coloring,
                         coloring_options=ColoringOptions(order, recolor, seed), kwargs=kwargs,
                         on_unknown=on_unknown, constant_seeds=constant_seeds, mode=mode, options=options,
                         strategy=strategy, chunk_size=chunk_size, devices=devices)


def value_and_sparse_hessian(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                             output: str = "bcoo", order: str = "best", recolor: str = "auto", seed: int = 0,
                             coloring: Coloring | None = None, on_unknown: str = "error",
                             constant_seeds: bool | None = None, mode: str = "direct", options=None,
                             strategy: str = "auto", chunk_size: int | None = None, devices=None,
                             **kwargs) -> SparseHessian:
    """Like :func:`sparse_hessian`, returning ``(f(x), H)`` (``((f(x), aux), H)`` with ``has_aux``)."""
    return SparseHessian(f, args, argnums=argnums, has_aux=has_aux, output=output, with_value=True,
                         coloring=coloring, coloring_options=ColoringOptions(order, recolor, seed),
                         kwargs=kwargs, on_unknown=on_unknown, constant_seeds=constant_seeds, mode=mode,
                         options=options, strategy=strategy, chunk_size=chunk_size, devices=devices)

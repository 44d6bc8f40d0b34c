"""Sparse Hessians: the pattern (direct or through the gradient program), star coloring, Hessian-vector products.

    >>> import jax.numpy as jnp
    >>> from stablehlo_sparsity import hessian_sparsity, sparse_hessian
    >>> f = lambda x: jnp.sum((x[1:] - x[:-1] ** 2) ** 2)
    >>> hessian_sparsity(f, jnp.ones(5)).nnz                      # tridiagonal
    13
    >>> H = sparse_hessian(f, jnp.ones(5), output="dense")
    >>> H.num_colors
    3

Detection.  ``hessian_sparsity`` has two methods
(:class:`~stablehlo_sparsity.analysis.second_order.method.HessianMethod`).  ``"direct"``
(``HessianMethod.DIRECT_ANALYSIS``) runs the second-order analysis over the primal program
(:mod:`stablehlo_sparsity.analysis.second_order`): no gradient program is built.
``"via-gradient"`` lowers ``jax.grad(f)`` to StableHLO and analyzes its Jacobian pattern — the Hessian's pattern,
as a sound superset — then symmetrizes it (``P ∪ Pᵀ``): the analysis may see a dependence in one direction only
(e.g. through ``stop_gradient``, invisible at the StableHLO level), and the symmetric decompression reads each
pair from one side, so both sides must be in the pattern.  ``"auto"`` (the default) takes the one a cost model of
the traced program predicts to be faster (:mod:`stablehlo_sparsity.analysis.second_order.method`) and records it
as ``pattern.method``.

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
2,900 in float32); ``"direct"`` (star) is the default.  The recovery modes are
:class:`~stablehlo_sparsity.derivatives.prepared.modes.HessianMode` (``"direct"`` is ``HessianMode.DIRECT_RECOVERY``
there: the same string as the detection method, another name).

The public functions read their keywords once into a
:class:`~stablehlo_sparsity.derivatives.request.DerivativeRequest` (:mod:`stablehlo_sparsity.derivatives.request`)
and pass it down: :func:`hessian_detection` and :meth:`SparseHessian.prepare_request` read nothing else.
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from ..analysis.api import analyze_traced, arrays_only_aux
from ..analysis.arguments import TracedCall, warn_integer_columns
from ..analysis.second_order.method import HessianMethod
from ..coloring import Coloring, color_star, symmetrize
from ..coloring.kinds import ColoringKind
from ..errors import InputError
from .prepared.evaluation import Side
from .prepared.modes import ColoringOptions
from ..lattice.pattern import SparsityPattern
from .prepared.base import PreparedDerivative
from .prepared.inputs import bind_selected, check_differentiable, flat, warn_float64
from .prepared.modes import HessianMode, parse_mode
from .prepared.seeds import hessian_decompression, seed_factory
from .request import DerivativeRequest, derivative_request
from ..analysis import second_order

__all__ = ["hessian_sparsity", "sparse_hessian", "value_and_sparse_hessian", "hessian_coloring", "SparseHessian",
           "HESSIAN_MODES"]

#: ``mode`` of the sparse Hessian: star coloring and direct recovery, acyclic coloring and substitution, or
#: substitution only when it needs fewer products.
HESSIAN_MODES = tuple(m.value for m in HessianMode)


def _scalar(fn, has_aux: bool):
    """``fn`` with its (differentiated) output reshaped to a scalar; refuses outputs of size ≠ 1."""
    import jax.numpy as jnp

    def check(y):
        y = jnp.asarray(y)
        if y.size != 1:
            raise InputError(f"a Hessian needs a scalar function; f returns shape {y.shape}")
        # (reshaping a scalar to a scalar would still be an equation, a dead op in the gradient program's module)
        return y if y.shape == () else jnp.reshape(y, ())

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
    return jax.grad(_scalar(arrays_only_aux(fn) if has_aux else fn, has_aux), argnums=argnums, has_aux=has_aux)


def hessian_sparsity(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                     on_unknown: str = "error", options=None, local: bool = False, derivatives: str = "auto",
                     method: str = "auto",
                     **kwargs) -> SparsityPattern:
    """The (n × n) Hessian sparsity pattern of the scalar function ``f`` at the shapes of ``args``.

    ``n`` counts the flattened leaves of the selected arguments in ``argnums`` order.  ``options``: an
    :class:`~stablehlo_sparsity.AnalysisOptions`; every other keyword argument is ``f``'s (bound statically).

    ``method`` (a string or a :class:`~stablehlo_sparsity.analysis.second_order.method.HessianMethod`):
    ``"direct"`` — the second-order analysis of the primal program (:mod:`.second_order`), no gradient program is
    built; ``"via-gradient"`` — the Jacobian pattern of the lowered gradient program,
    symmetrized (see the module docstring); ``"auto"`` (default) — the method a cost model of the traced program
    predicts to be faster (:mod:`stablehlo_sparsity.analysis.second_order.method`, fitted on
    ``benchmarks/hessian_method.py``), and via the gradient whenever ``f`` uses a custom derivative rule of its
    own, the direct analysis' interactions exceed the nonzero budget, or ``local=True``.  The method taken is
    recorded on the result: ``pattern.method``.

    ``local=True``: the pattern at the point ``args`` only — the gradient program's local Jacobian pattern
    (forward over reverse, as ``jax.hessian`` evaluates it), symmetrized; it contains ``|jax.hessian(f)(x)| >
    0`` and never exceeds the global pattern (docs/explanation/guarantees.md "Local patterns").

    ``derivatives``: which program of the gradient the analysis reads (see
    :func:`~stablehlo_sparsity.lower_and_analyze`).  Library keywords this function does not take (``mode``,
    ``output`` …) are refused (:mod:`stablehlo_sparsity.ir.keywords`).

    Raises:
        InputError: ``f`` does not return a scalar, an unknown ``method`` (or ``method="direct"`` with
            ``local=True`` or ``derivatives=``), no argument to differentiate, an ``argnums`` out of range, a
            library keyword this function does not take, or ``options`` that is not an ``AnalysisOptions``; its
            subclass ``LoweringError`` when JAX cannot trace or lower ``f`` (or its gradient).
        UnsupportedOpError: the program holds an op without a sparsity rule (with ``on_unknown="error"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz`` (with
            ``method="auto"`` the direct analysis falls back to the gradient program first).

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> p = ss.hessian_sparsity(lambda x: jnp.sum((x[1:] - x[:-1] ** 2) ** 2), jnp.ones(4))
        >>> p.shape, p.nnz
        ((4, 4), 10)
        >>> print(p.picture())
        ●●⋅⋅
        ●●●⋅
        ⋅●●●
        ⋅⋅●●
    """
    req = derivative_request("hessian_sparsity", f, args, kwargs, locals())
    warn_integer_columns(req.call, f, req.entry)
    return hessian_detection(req)[0]


def hessian_detection(req: DerivativeRequest) -> tuple[SparsityPattern, bool]:
    """The Hessian pattern :func:`hessian_sparsity` gives for a request (its ``method``, ``local``,
    ``derivatives``, ``options``), and whether JAX can push tangents through the gradient program (no
    ``custom_vjp`` there: the Hessian-vector products of :class:`SparseHessian` are then forward over reverse,
    else reverse over reverse)."""
    if req.method is HessianMethod.VIA_GRADIENT:
        reason = "method='via-gradient' was asked for"
    elif req.local:
        reason = "method='auto' with local=True: the local pattern is read off the gradient program"
    elif req.derivatives != "auto":
        reason = f"method='auto' with derivatives={req.derivatives!r}: an option of the gradient program"
    else:
        direct = _direct_detection(req)
        if isinstance(direct, str):
            reason = direct
        else:
            return direct
    return _detect(req, reason)


def _direct_detection(req: DerivativeRequest) -> tuple[SparsityPattern, bool] | str:
    """The direct method's ``(pattern, forward_mode)``, or — for ``method="auto"`` when the direct analysis
    does not cover ``f`` or the cost model prefers the gradient program — why the gradient program is taken."""
    from ..errors import PatternTooLargeError

    f = arrays_only_aux(req.fn) if req.has_aux else req.fn
    try:
        csr, forward_mode, reason = second_order.direct_hessian_sparsity(
            f, req.args, req.argnums, req.has_aux, req.options, req.kwargs, auto=req.method is HessianMethod.AUTO)
        return SparsityPattern(csr, method=HessianMethod.DIRECT_ANALYSIS.value, method_reason=reason), forward_mode
    except second_order.FALLBACK_ERRORS as e:
        if req.method is HessianMethod.DIRECT_ANALYSIS:
            raise
        if isinstance(e, second_order.api.PreferGradient):
            return e.message
        if isinstance(e, PatternTooLargeError):
            return (f"method='auto' took the gradient program: the direct analysis' interactions exceed "
                    f"max_pattern_nnz={req.options.max_pattern_nnz:,}")
        # a custom derivative rule (its advice, "use method='via-gradient'", is what auto follows)
        return f"method='auto' took the gradient program: {e.message.split(': use method=')[0]}"


def _detect(req: DerivativeRequest, reason: str) -> tuple[SparsityPattern, bool]:
    """The via-gradient pattern of a request (``reason``: why this method ran, ``pattern.method_reason``): the
    Jacobian pattern of its gradient program, symmetrized, and the gradient program's ``forward_mode``."""
    argnums_t = req.argnums
    grad_fn = _gradient_program(req.fn, argnums_t if len(argnums_t) > 1 else argnums_t[0], req.has_aux, req.kwargs)
    analysis = analyze_traced(TracedCall(grad_fn, req.args, argnums_t, None), has_aux=req.has_aux,
                              options=req.options, local=req.local, derivatives=req.derivatives)
    pattern = symmetrize(analysis.pattern.to_scipy())
    return (SparsityPattern(pattern, method=HessianMethod.VIA_GRADIENT.value, method_reason=reason),
            bool(analysis.forward_mode))


def hessian_coloring(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                     order: str = "best", recolor: str = "auto", seed: int = 0, mode: str = "direct",
                     on_unknown: str = "error", options=None, **kwargs) -> Coloring:
    """Detect the Hessian pattern of ``f`` and color it: star (``mode="direct"``), acyclic
    (``"substitution"``) or acyclic only when that pays (``"auto"``, see :func:`sparse_hessian`).

    Raises:
        InputError: ``f`` does not return a scalar, no argument to differentiate, an ``argnums`` out of range, a
            differentiated argument that is not real floating point, an unknown ``mode``, ``output`` or
            ``strategy``, a ``coloring`` that is not a star (or, for substitution, acyclic) coloring of the
            pattern, a library keyword this function does not take, or ``options`` that is not an
            ``AnalysisOptions``; its subclass ``LoweringError`` when JAX cannot trace or lower ``f``.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.
        ValueError: an unknown ``order`` or ``recolor``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> f = lambda x: jnp.sum((x[1:] - x[:-1] ** 2) ** 2)
        >>> star = ss.hessian_coloring(f, jnp.ones(6))
        >>> acyclic = ss.hessian_coloring(f, jnp.ones(6), mode="substitution")
        >>> star.num_colors, acyclic.num_colors
        (3, 2)
    """
    import jax
    import jax.numpy as jnp

    req = derivative_request("hessian_coloring", f, args, kwargs, locals())
    warn_integer_columns(req.call, f, req.entry)
    pattern = hessian_detection(req)[0]
    sel = [req.args[i] for i in req.argnums]
    dtype = jnp.result_type(*jax.tree_util.tree_leaves(sel))
    return _choose_hessian_coloring(pattern, req.mode, None, req.coloring_options, dtype)[0]


def _choose_hessian_coloring(pattern: SparsityPattern, mode: str, coloring, options: ColoringOptions, dtype):
    """``(coloring, substitution plan or None)`` for ``mode`` (see :data:`HESSIAN_MODES`).  A given
    ``coloring`` must be a star coloring for ``"direct"``, star or acyclic otherwise (a star coloring is
    acyclic).  ``"auto"`` substitutes when the acyclic coloring needs fewer colors and its longest chain
    keeps the worst-case rounding error within half the digits of ``dtype`` (``chain · eps ≤ √eps``)."""
    from ..coloring import DecompressionPlan, check_coloring, color_acyclic

    mode = parse_mode(HessianMode, mode)
    if coloring is not None:
        kinds = ((ColoringKind.STAR,) if mode is HessianMode.DIRECT_RECOVERY
                 else (ColoringKind.STAR, ColoringKind.ACYCLIC))
        if not isinstance(coloring, Coloring) or coloring.kind not in kinds or coloring.shape != pattern.shape:
            raise InputError(f"coloring must be a {' or '.join(map(str, kinds))} Coloring of the Hessian pattern")
        check_coloring(pattern, coloring, raise_on_error=True)
        plan = None if mode is HessianMode.DIRECT_RECOVERY else DecompressionPlan(pattern, coloring, "acyclic")
        return coloring, plan
    if mode is HessianMode.DIRECT_RECOVERY:
        return color_star(pattern, **options.kwargs()), None
    acyclic = color_acyclic(pattern, **options.kwargs())
    plan = DecompressionPlan(pattern, acyclic)
    if mode is HessianMode.SUBSTITUTION:
        return acyclic, plan
    star = color_star(pattern, **options.kwargs())
    import ml_dtypes  # (np.finfo refuses bfloat16)

    eps = float(ml_dtypes.finfo(dtype).eps)
    if acyclic.num_colors < star.num_colors and plan.longest_chain * eps <= eps ** 0.5:
        return acyclic, plan
    return star, None


class SparseHessian(PreparedDerivative):
    """A prepared sparse Hessian of a scalar ``f``: call it with arguments of the prepared shapes.

    Output formats and attributes as :class:`~stablehlo_sparsity.derivatives.jacobian.SparseJacobian` (``num_colors``
    Hessian-vector products per evaluation).  With ``has_aux`` it returns ``(H, aux)``; a value-and-Hessian
    callable returns ``(f(x), H)`` or ``((f(x), aux), H)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> H = ss.sparse_hessian(lambda x: jnp.sum(x ** 3), jnp.ones(3))    # a SparseHessian
        >>> H.shape, H.num_colors, H.longest_chain
        ((3, 3), 1, 1)
        >>> H(jnp.arange(3.0)).todense().tolist()
        [[0.0, 0.0, 0.0], [0.0, 6.0, 0.0], [0.0, 0.0, 12.0]]
    """

    kind = "Hessian"
    #: the class a saved object is restored as (module derivatives are restored as plain Hessians)
    saved_as = "SparseHessian"
    #: whether the Hessian-vector products are forward over reverse (``True``) or reverse over reverse (``False``:
    #: the gradient program holds a ``jax.custom_vjp``, which JAX cannot differentiate in forward mode)
    forward_mode: bool = True

    def __init__(self, f: Callable, args: tuple, *, argnums=0, has_aux: bool = False, output: str = "bcoo",
                 with_value: bool = False, coloring: Coloring | None = None,
                 coloring_options: ColoringOptions | None = None, kwargs: dict | None = None,
                 on_unknown: str = "error", constant_seeds: bool | None = None, mode: str = "direct",
                 options=None, strategy: str = "auto", chunk_size: int | None = None, devices=None):
        given = dict(argnums=argnums, has_aux=has_aux, output=output, coloring=coloring, on_unknown=on_unknown,
                     constant_seeds=constant_seeds, mode=mode, options=options, strategy=strategy,
                     chunk_size=chunk_size, devices=devices, **(coloring_options or ColoringOptions()).kwargs())
        entry = "value_and_sparse_hessian" if with_value else "sparse_hessian"
        self.prepare_paused(derivative_request(entry, f, args, kwargs or {}, given))

    def prepare_request(self, req: DerivativeRequest) -> None:
        """Detect, color and plan for ``req``: the pattern as :func:`hessian_sparsity` gives it (the second-order
        analysis of the primal program where it covers ``f``, else the gradient program's: ``method="auto"``; no
        analysis object is kept), its star or acyclic coloring (``req.mode``) and the evaluation plan."""
        import jax

        self.bind(_scalar(req.bound_fn(), req.has_aux), req.args, (), has_aux=req.has_aux, output=req.output,
                  with_value=req.with_value, argnums_int=req.argnums_int, constant_seeds=req.constant_seeds,
                  strategy=req.strategy, chunk_size=req.chunk_size, devices=req.devices, statics=req.call.statics)
        self.argnums = req.argnums
        sel_leaves = jax.tree_util.tree_leaves(tuple(req.args[i] for i in self.argnums))
        check_differentiable(sel_leaves, "sparse_hessian")
        self.pattern, self.forward_mode = hessian_detection(req)
        self.analysis = None
        warn_float64(sel_leaves)
        x_dtype = jax.numpy.result_type(*sel_leaves)
        coloring, plan = _choose_hessian_coloring(self.pattern, req.mode, req.coloring, req.coloring_options, x_dtype)
        self.coloring = coloring
        self.mode = HessianMode.DIRECT_RECOVERY if plan is None else HessianMode.SUBSTITUTION
        rows, cols = self.pattern.to_coo()
        if self.mode is HessianMode.SUBSTITUTION:
            # the products are computed by the evaluation plan (stacked) and recovered by substitution along
            # the two-colored trees of the plan (static index arrays; see DecompressionPlan)
            self._plan_sub = plan
            sides = [Side(coloring.colors.astype(np.int32), coloring.num_colors, self.pattern.shape[0], "hvp")]
            self.set_plan(sides, None, rows, cols)
        else:
            sides, source = hessian_decompression(self.pattern, coloring)
            self.set_plan(sides, source, rows, cols)

    def _row_shapes(self, in_shapes):
        return in_shapes

    def _row_tree(self, inner):
        return inner

    def _mode_from_text(self, text: str):
        return HessianMode(text)

    def _values_on(self, args, shard=None):
        """``(f(x), aux, nonzeros in CSR order)``: one forward-over-reverse Hessian-vector product per color
        (``shard``: this device's block of colors inside ``shard_map``)."""
        import jax
        import jax.numpy as jnp

        sel = tuple(args[i] for i in self.argnums)
        sel_leaves, sel_tree = jax.tree_util.tree_flatten(sel)
        h = bind_selected(self._fn, args, self.argnums)
        if self.has_aux:
            h_aux = h

            def h(*s):
                y, aux = h_aux(*s)
                return y, self._aux.strip(aux)
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

        seeds = seed_factory(self._colors, k, sel_leaves, sel_tree, self.constant_seeds)
        plan = self._plan
        y = aux = None
        linear = [None]
        if not self.forward_mode:
            # a custom_vjp in the gradient program: no tangents through it, so H v = (vᵀ H)ᵀ by reverse over
            # reverse (H is symmetric), one backward pass of the gradient shared by every product
            _g, pull, (y, aux) = jax.vjp(fun, *sel, has_aux=True)

            def reverse_hvp(t, primal=(y, aux)):
                return primal, flat(pull(tuple(t)))

            hvp = reverse_hvp
            linear = [lambda t: flat(pull(tuple(t)))]
        else:
            def forward_hvp(t):
                _g, gdot, primal = jax.jvp(fun, sel, t, has_aux=True)
                return primal, flat(gdot)

            hvp = forward_hvp

            if plan.strategy == "loop":
                _g, lin, (y, aux) = jax.linearize(fun, *sel, has_aux=True)
                linear = [lambda t: flat(lin(*t))]
        if self.mode is HessianMode.SUBSTITUTION:
            if shard is not None:
                stacked, primal = plan.sharded_stacked([hvp], [seeds], x_dtype, *shard)
            else:
                stacked, primal = plan.stacked([hvp], [seeds], x_dtype, linear)
            values = self._plan_sub.jax_values_from_stacked(stacked)
        elif shard is not None:
            values, primal = plan.sharded_values([hvp], [seeds], x_dtype, *shard)
        else:
            values, primal = plan.values([hvp], [seeds], x_dtype, linear)
        if primal is not None and y is None:
            y, aux = primal
        return y, aux, values

    @property
    def longest_chain(self) -> int:
        """The most Hessian-vector-product entries summed into one Hessian entry: 1 for direct recovery, the
        largest two-colored subtree for substitution (the rounding error grows with it)."""
        return self._plan_sub.longest_chain if self.mode is HessianMode.SUBSTITUTION else 1

    def __repr__(self) -> str:
        n = self.shape[0]
        how = ", by substitution" if self.mode is HessianMode.SUBSTITUTION else ""
        how += ", forward-only" if self.forward_only else ""
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
    dtype (see the module docstring).  The other keywords are shared with :func:`~stablehlo_sparsity.sparse_jacobian`
    and described once in the API reference's "Shared keywords" table
    (:data:`stablehlo_sparsity.derivatives.request.KEYWORDS`).  Other keyword arguments are static arguments
    of ``f``.

    Raises:
        InputError: ``f`` does not return a scalar, no argument to differentiate, an ``argnums`` out of range, a
            differentiated argument that is not real floating point, an unknown ``mode``, ``output`` or
            ``strategy``, a ``coloring`` that is not a star (or, for substitution, acyclic) coloring of the
            pattern, a library keyword this function does not take, or ``options`` that is not an
            ``AnalysisOptions``; its subclass ``LoweringError`` when JAX cannot trace or lower ``f``.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.
        ValueError: an unknown ``order`` or ``recolor`` (and ``InvalidColoringError``, a ``ValueError``, when a
            given ``coloring`` cannot recover the pattern).

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> H = ss.sparse_hessian(lambda x: jnp.sum(x[1:] * x[:-1]), jnp.ones(4), output="dense")
        >>> H.num_colors, H.pattern.nnz
        (3, 6)
        >>> H(jnp.ones(4)).tolist()
        [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]]
    """
    return SparseHessian.from_request(derivative_request("sparse_hessian", f, args, kwargs, locals()))


def value_and_sparse_hessian(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                             output: str = "bcoo", order: str = "best", recolor: str = "auto", seed: int = 0,
                             coloring: Coloring | None = None, on_unknown: str = "error",
                             constant_seeds: bool | None = None, mode: str = "direct", options=None,
                             strategy: str = "auto", chunk_size: int | None = None, devices=None,
                             **kwargs) -> SparseHessian:
    """Like :func:`sparse_hessian`, returning ``(f(x), H)`` (``((f(x), aux), H)`` with ``has_aux``).

    Raises:
        InputError: ``f`` does not return a scalar, no argument to differentiate, an ``argnums`` out of range, a
            differentiated argument that is not real floating point, an unknown ``mode``, ``output`` or
            ``strategy``, a ``coloring`` that is not a star (or, for substitution, acyclic) coloring of the
            pattern, a library keyword this function does not take, or ``options`` that is not an
            ``AnalysisOptions``; its subclass ``LoweringError`` when JAX cannot trace or lower ``f``.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.
        ValueError: an unknown ``order`` or ``recolor`` (and ``InvalidColoringError``, a ``ValueError``, when a
            given ``coloring`` cannot recover the pattern).

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> vh = ss.value_and_sparse_hessian(lambda x: jnp.sum(x ** 3), jnp.ones(3), output="dense")
        >>> y, H = vh(jnp.arange(3.0))
        >>> y.item(), H.tolist()
        (9.0, [[0.0, 0.0, 0.0], [0.0, 6.0, 0.0], [0.0, 0.0, 12.0]])
    """
    return SparseHessian.from_request(derivative_request("value_and_sparse_hessian", f, args, kwargs, locals()))

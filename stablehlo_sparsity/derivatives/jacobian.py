"""Sparse Jacobians: detect once, color once, then evaluate a compressed Jacobian compiled by XLA.

    >>> import jax.numpy as jnp
    >>> from stablehlo_sparsity import sparse_jacobian
    >>> jac = sparse_jacobian(lambda x: x[1:] * x[:-1], jnp.arange(5.0), output="dense")
    >>> jac.num_colors, jac(jnp.arange(5.0)).tolist()[0]
    (2, [1.0, 0.0, 0.0, 0.0, 0.0])

How it works (Curtis, Powell & Reid 1974; Coleman & Moré 1983).  With a column coloring ``c`` of the
pattern, the seed matrix ``S`` (``n × k``, ``S[j, c[j]] = 1``) compresses the Jacobian into ``B = J S``: one
JVP per color, ``vmap``-ed into a single batched forward pass.  Since no row holds two columns of one color,
every nonzero is ``J[i, j] = B[i, c[j]]`` — decompression is one static gather from ``B`` into the pattern's
CSR order.  Reverse mode is the transpose: a row coloring ``r``, ``C = W J`` from one VJP per row color,
``J[i, j] = C[r[i], j]``.  ``mode="bidirectional"`` mixes both (Coleman & Verma 1998): each nonzero is read
from a JVP or from a VJP (:mod:`stablehlo_sparsity.coloring.bicoloring`), so a Jacobian with dense rows and
dense columns (an arrowhead: 3 products instead of ``n``) stays cheap.  ``mode="auto"`` takes whichever
needs the fewest products (forward on a tie, bidirectional only when it wins).

The prepared callable is a plain JAX function: it can be called inside ``jax.jit``, ``vmap``-ed, lowered
(:meth:`SparseJacobian.lower`, :meth:`SparseJacobian.as_text` — the seed matrix and the gather indices are
visible constants in the StableHLO) and exported with :mod:`jax.export` for CPU, CUDA and TPU
(:meth:`SparseJacobian.export`).  The seeds are literal 0/1 constants up to :data:`SEED_CONSTANT_LIMIT`
entries (``constant_seeds=None``; ``True``/``False`` force either way) and are built in the program from the
color vector beyond: with literal seeds XLA folds the tangents of the linear parts of ``f`` at compile
time, so a stencil's compressed Jacobian costs little more than its nonlinear terms, at the price of a
longer first compilation.

Conventions (as in :func:`~stablehlo_sparsity.jacobian_sparsity` and asdex): rows are the flattened output
leaves, columns the flattened leaves of the selected arguments in ``argnums`` order (as ``jax.jacfwd``).
Selected arguments must be real floating point; integer outputs have zero rows.  Keyword arguments given at
preparation are static (bound into ``f``).
"""


from __future__ import annotations

from typing import Callable, Sequence

from ..analysis.program import lower_and_analyze_global
from ..analysis.api import analyze_traced, arrays_only_aux
from ..analysis.arguments import warn_integer_columns
from ..coloring import Coloring, color_columns, color_rows
from ..coloring.kinds import ColoringKind
from ..errors import InputError
from ..lattice.pattern import SparsityPattern
from .prepared.base import ELIDE_CONSTANT_ELEMENTS, PreparedDerivative
from .prepared.inputs import Float64Warning, bind_selected, check_differentiable, flat, float_outputs, warn_float64
from .prepared.modes import ColoringOptions, JacobianMode, mode_of, parse_mode  # noqa: F401  (public here too)
from .prepared.outputs import OUTPUTS as _OUTPUT_TABLE
from .prepared.products import transpose_of_vjp, transposed_vjp
from .prepared.saving import STATE_FORMAT
from .prepared.seeds import SEED_CONSTANT_LIMIT, jacobian_decompression, seed_factory
from .request import DerivativeRequest, derivative_request

__all__ = ["SparseJacobian", "sparse_jacobian", "value_and_sparse_jacobian", "jacobian_coloring", "OUTPUTS",
           "Float64Warning", "ColoringOptions", "choose_coloring", "JacobianMode", "PreparedDerivative",
           "ELIDE_CONSTANT_ELEMENTS", "SEED_CONSTANT_LIMIT", "STATE_FORMAT", "mode_of"]

#: The output names (the containers: :data:`stablehlo_sparsity.derivatives.prepared.outputs.OUTPUTS`).
OUTPUTS = tuple(_OUTPUT_TABLE)
MODES = tuple(m.value for m in JacobianMode)



def _pair(out):
    """``f``'s ``(output, aux)`` under ``has_aux``, or a clear error."""
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise InputError("has_aux=True needs f to return a pair (output, aux)")
    return out


# ----------------------------------------------------------------------------------------------- coloring
def choose_coloring(pattern: SparsityPattern, mode, coloring, options: ColoringOptions) -> Coloring:
    """The coloring of a Jacobian for ``mode`` (:class:`JacobianMode`), or the given ``coloring`` checked."""
    mode = parse_mode(JacobianMode, mode)
    if coloring is not None:
        kinds = (ColoringKind.COLUMN, ColoringKind.ROW, ColoringKind.BIDIRECTIONAL)
        if not isinstance(coloring, Coloring) or coloring.kind not in kinds:
            raise InputError("coloring must be a column, row or bidirectional Coloring (see "
                             "stablehlo_sparsity.coloring)")
        if coloring.shape != pattern.shape:
            raise InputError(f"coloring is for a {coloring.shape} pattern, the Jacobian is {pattern.shape}")
        from ..coloring import check_coloring

        check_coloring(pattern, coloring, raise_on_error=True)
        return coloring
    if mode is JacobianMode.FORWARD:
        return color_columns(pattern, **options.kwargs())
    if mode is JacobianMode.REVERSE:
        return color_rows(pattern, **options.kwargs())
    if mode is JacobianMode.BIDIRECTIONAL:
        from ..coloring import color_bidirectional

        return color_bidirectional(pattern, **options.kwargs())
    # auto: the fewest products among forward, reverse and bidirectional (ties: forward, then reverse)
    from ..coloring.bicoloring import color_fewest_products

    return color_fewest_products(pattern, **options.kwargs())


_choose_coloring = choose_coloring


def jacobian_coloring(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                      mode: str = "auto", order: str = "best", recolor: str = "auto", seed: int = 0,
                      on_unknown: str = "error", options=None, **kwargs) -> Coloring:
    """Detect the Jacobian pattern of ``f`` and color it (columns for ``"forward"``, rows for ``"reverse"``,
    both for ``"bidirectional"`` (a :class:`~stablehlo_sparsity.coloring.Bicoloring`), the fewest products
    for ``"auto"``).  ``options``: an :class:`~stablehlo_sparsity.AnalysisOptions`; other keyword arguments
    are ``f``'s.

    Raises:
        InputError: an unknown ``mode``, or bad arguments as for ``jacobian_sparsity``; its subclass
            ``LoweringError`` when JAX cannot trace or lower ``f`` with these arguments.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.
        ValueError: an unknown ``order`` or ``recolor``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> c = ss.jacobian_coloring(lambda x: x[1:] * x[:-1], jnp.ones(5), mode="forward")
        >>> c.num_colors, c.colors.tolist()
        (2, [0, 1, 0, 1, 0])
    """
    req = derivative_request("jacobian_coloring", f, args, kwargs, locals())
    warn_integer_columns(req.call, f, req.entry)
    pattern = analyze_traced(req.call, has_aux=req.has_aux, options=req.options, kwargs=req.kwargs).pattern
    return choose_coloring(pattern, req.mode, None, req.coloring_options)


# ----------------------------------------------------------------------------------------------- the callable
class SparseJacobian(PreparedDerivative):
    """A prepared sparse Jacobian of ``f``: call it with arguments of the prepared shapes and dtypes.

    Returns the Jacobian in the chosen ``output`` format — ``"bcoo"`` (``jax.experimental.sparse.BCOO``, the
    default), ``"bcsr"``, ``"dense"`` (a ``(m, n)`` array), ``"scipy"`` (a ``scipy.sparse.csr_array``; not
    usable under ``jit``) or ``"values"`` (the nonzeros in the CSR order of :attr:`pattern`).  With
    ``has_aux`` it returns ``(J, aux)``; a value-and-Jacobian callable returns ``(f(x), J)`` or
    ``((f(x), aux), J)``.

    Attributes: ``pattern`` (:class:`~stablehlo_sparsity.SparsityPattern`), ``coloring``
    (:class:`~stablehlo_sparsity.coloring.Coloring`), ``mode`` (``"forward"``, ``"reverse"`` or
    ``"bidirectional"``), ``num_colors`` (JVPs plus VJPs per evaluation), ``analysis`` (the detection result).

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> jac = ss.sparse_jacobian(lambda x: x[1:] * x[:-1], jnp.ones(4))
        >>> J = jac(jnp.arange(4.0))                     # a BCOO matrix (the default output)
        >>> J.shape, jac.pattern.nnz, jac.num_colors
        ((3, 4), 6, 2)
        >>> J.todense().tolist()
        [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0], [0.0, 0.0, 3.0, 2.0]]
    """

    kind = "Jacobian"
    #: the class a saved object is restored as (module derivatives are restored as plain Jacobians)
    saved_as = "SparseJacobian"
    #: whether the JVPs are JAX's (``True``) or transposed VJPs (``False``: ``f`` uses a ``jax.custom_vjp``,
    #: which JAX cannot differentiate in forward mode; see :mod:`.prepared.products`)
    forward_mode: bool = True

    def __init__(self, f: Callable, args: tuple, *, argnums=0, has_aux: bool = False, mode: str = "auto",
                 output: str = "bcoo", with_value: bool = False, coloring: Coloring | None = None,
                 coloring_options: ColoringOptions | None = None, kwargs: dict | None = None,
                 on_unknown: str = "error", constant_seeds: bool | None = None, options=None,
                 strategy: str = "auto", chunk_size: int | None = None, devices=None):
        given = dict(argnums=argnums, has_aux=has_aux, mode=mode, output=output, coloring=coloring,
                     on_unknown=on_unknown, constant_seeds=constant_seeds, options=options, strategy=strategy,
                     chunk_size=chunk_size, devices=devices, **(coloring_options or ColoringOptions()).kwargs())
        entry = "value_and_sparse_jacobian" if with_value else "sparse_jacobian"
        self.prepare_paused(derivative_request(entry, f, args, kwargs or {}, given))

    def prepare_request(self, req: DerivativeRequest) -> None:
        """Detect, color and plan for ``req``: bind the function and the evaluation options, find the global
        pattern (a prepared derivative is evaluated everywhere: ``local=`` is no keyword of it) and color it."""
        import jax

        self.bind(req.bound_fn(), req.args, req.argnums, has_aux=req.has_aux, output=req.output,
                  with_value=req.with_value, argnums_int=req.argnums_int, constant_seeds=req.constant_seeds,
                  strategy=req.strategy, chunk_size=req.chunk_size, devices=req.devices, statics=req.call.statics)
        sel_leaves = jax.tree_util.tree_leaves(tuple(req.args[i] for i in self.argnums))
        check_differentiable(sel_leaves)
        # aux data that is not an array is not lowered
        detected = arrays_only_aux(req.fn) if req.has_aux else req.fn
        analysis = lower_and_analyze_global(detected, *req.args, argnums=self.argnums, has_aux=req.has_aux,
                                            options=req.options, **req.kwargs)
        warn_float64(sel_leaves)
        self.prepare(analysis, req.mode, req.coloring, req.coloring_options)

    def prepare(self, analysis, mode="auto", coloring: Coloring | None = None,
                coloring_options: ColoringOptions | None = None) -> None:
        """Finish a preparation from a detection result: the coloring for ``mode`` (or the given one) and the
        evaluation plan.  Called after :meth:`bind` (the module derivatives call both)."""
        self.analysis = analysis
        self.pattern = analysis.pattern
        self.forward_mode = bool(getattr(analysis, "forward_mode", True))
        self._out_tree, self._out_shapes = analysis.out_tree, list(analysis.output_shapes)
        self.coloring = coloring = choose_coloring(self.pattern, mode, coloring,
                                                   coloring_options or ColoringOptions())
        rows, cols = self.pattern.to_coo()
        self.mode, sides, source = jacobian_decompression(self.pattern, coloring, rows, cols)
        self.set_plan(sides, source, rows, cols)

    def replan(self) -> None:
        """The mode and the evaluation plan from :attr:`pattern` and :attr:`coloring` as they are now (a
        coloring assigned afterwards is not checked: the checks' tests damage one on purpose)."""
        rows, cols = self.pattern.to_coo()
        self.mode, sides, source = jacobian_decompression(self.pattern, self.coloring, rows, cols)
        self.set_plan(sides, source, rows, cols)

    def _mode_from_text(self, text: str):
        return JacobianMode(text)

    # ------------------------------------------------------------------ evaluation
    def _values_on(self, args, shard=None):
        """``(f(x), aux, nonzeros in CSR order)`` — the compressed program; ``shard``: ``(axis name, device
        count)`` inside ``shard_map`` (this device's block of colors, see
        :mod:`stablehlo_sparsity.derivatives.prepared.sharding`)."""
        import jax
        import jax.numpy as jnp

        sel = tuple(args[i] for i in self.argnums)
        sel_leaves, sel_tree = jax.tree_util.tree_flatten(sel)
        x_dtype = jnp.result_type(*sel_leaves) if sel_leaves else jnp.float32
        h0 = bind_selected(self._fn, args, self.argnums)
        if self.has_aux:
            def h(*s):
                y, aux = _pair(h0(*s))
                return float_outputs(y, x_dtype), self._aux.strip(aux)
        else:
            def h(*s):
                return float_outputs(h0(*s), x_dtype)
        plan = self._plan
        mode = self.mode
        fwd = mode in (JacobianMode.FORWARD, JacobianMode.BIDIRECTIONAL) and plan.sides[0].k > 0
        rev = mode is JacobianMode.REVERSE or (mode is JacobianMode.BIDIRECTIONAL and plan.sides[1].k > 0)
        y = aux = None
        apply, seeds, linear = [], [], []
        out_leaves = out_tree = None
        if rev:
            if self.has_aux:
                y, vjp_fn, aux = jax.vjp(h, *sel, has_aux=True)
            else:
                (y, vjp_fn), aux = jax.vjp(h, *sel), None
            out_leaves, out_tree = jax.tree_util.tree_flatten(y)
        if mode is JacobianMode.REVERSE:
            dtype = x_dtype  # the cotangents of the selected inputs
        else:
            shape = jax.eval_shape(h, *sel)
            leaves = jax.tree_util.tree_leaves(shape[0] if self.has_aux else shape)
            dtype = jnp.result_type(*leaves) if leaves else x_dtype

        if (mode is JacobianMode.BIDIRECTIONAL or fwd) and not self.forward_mode:
            # f has a custom_vjp: its JVPs are its transposed VJPs (one backward pass shared by every product)
            if rev:
                jvp_t = transpose_of_vjp(vjp_fn, y)
            else:
                y, jvp_t, aux = transposed_vjp(h, sel, has_aux=self.has_aux)

            def transposed_apply(t, primal=(y, aux)):
                return primal, flat(jvp_t(t))

            apply.append(transposed_apply)
            seeds.append(seed_factory(plan.sides[0].colors, plan.sides[0].k, sel_leaves, sel_tree,
                                      self.constant_seeds))
            linear.append(lambda t: flat(jvp_t(t)))
        elif mode is JacobianMode.BIDIRECTIONAL or fwd:

            def jvp_apply(t):
                if self.has_aux:
                    yy, ydot, a = jax.jvp(h, sel, t, has_aux=True)
                else:
                    (yy, ydot), a = jax.jvp(h, sel, t), None
                return (yy, a), flat(ydot)

            apply.append(jvp_apply)
            seeds.append(seed_factory(plan.sides[0].colors, plan.sides[0].k, sel_leaves, sel_tree,
                                      self.constant_seeds))
            if fwd and plan.strategy == "loop":
                if self.has_aux:
                    y, lin, aux = jax.linearize(h, *sel, has_aux=True)
                else:
                    y, lin = jax.linearize(h, *sel)
                linear.append(lambda t, lin=lin: flat(lin(*t)))
            else:
                linear.append(None)
        if mode in (JacobianMode.REVERSE, JacobianMode.BIDIRECTIONAL):
            side = plan.sides[-1]

            def vjp_apply(ct):
                return None, flat(vjp_fn(ct))

            apply.append(vjp_apply if rev else None)
            seeds.append(seed_factory(side.colors, side.k, out_leaves, out_tree, self.constant_seeds) if rev
                         else None)
            linear.append((lambda ct: flat(vjp_fn(ct))) if rev else None)
        if shard is not None:
            values, primal = plan.sharded_values(apply, seeds, dtype, *shard)
        else:
            values, primal = plan.values(apply, seeds, dtype, linear)
        if primal is not None and not rev and (y is None):
            y, aux = primal
        if y is None and (self.with_value or self.has_aux):
            out = h(*sel)
            y, aux = out if self.has_aux else (out, None)
        return y, aux, values

    def __repr__(self) -> str:
        m, n = self.shape
        if self.mode is JacobianMode.BIDIRECTIONAL:
            kc, kr = self.coloring.num_column_colors, self.coloring.num_row_colors
            what = f"{kc} JVP{'s' * (kc != 1)} + {kr} VJP{'s' * (kr != 1)}"
            return (f"SparseJacobian({m}×{n}, nnz={self.pattern.nnz}, bidirectional mode: {what} per evaluation, "
                    f"strategy={self.strategy!r}, output={self.output!r}{', forward-only' * bool(self.forward_only)})")
        what = "JVPs" if self.mode is JacobianMode.FORWARD else "VJPs"
        if self.mode is JacobianMode.FORWARD and not self.forward_mode:
            what = "JVPs (transposed VJPs: f has a custom_vjp)"
        fwd_only = ", forward-only" if self.forward_only else ""
        return (f"SparseJacobian({m}×{n}, nnz={self.pattern.nnz}, {self.mode} mode: {self.num_colors} {what} "
                f"per evaluation, strategy={self.strategy!r}, output={self.output!r}{fwd_only})")


def sparse_jacobian(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                    mode: str = "auto", output: str = "bcoo", order: str = "best", recolor: str = "auto",
                    seed: int = 0, coloring: Coloring | None = None, on_unknown: str = "error",
                    constant_seeds: bool | None = None, options=None, strategy: str = "auto",
                    chunk_size: int | None = None, devices=None, **kwargs) -> SparseJacobian:
    """Prepare a sparse Jacobian of ``f`` at the shapes of ``args``: detection and coloring run now, each
    call of the returned :class:`SparseJacobian` evaluates ``num_colors`` JVPs (``mode="forward"``) or VJPs
    (``"reverse"``) in one XLA program and decompresses them with static gathers.

    ``mode="auto"`` picks the direction with fewer colors, or both directions (``"bidirectional"``: JVPs
    and VJPs together) when that needs fewer products.  ``output``: ``"bcoo"`` (default), ``"bcsr"``,
    ``"dense"``, ``"scipy"`` or ``"values"``.  ``order`` / ``recolor`` / ``seed`` tune the coloring (see
    :mod:`stablehlo_sparsity.coloring`); ``coloring`` supplies one.  ``constant_seeds``: ``None`` decides by
    size (:data:`SEED_CONSTANT_LIMIT`).  Every keyword shared by the derivative functions is described once in
    the API reference's "Shared keywords" table (:data:`stablehlo_sparsity.derivatives.request.KEYWORDS`).

    ``strategy`` lays out the products (see :mod:`stablehlo_sparsity.derivatives.prepared.evaluation`): ``"vmap"``
    (all colors
    in one batch), ``"unrolled"`` (one product per color, each read only where the pattern needs it),
    ``"loop"`` (a ``lax.fori_loop`` over chunks of ``chunk_size`` colors), or ``"auto"`` (by size).
    ``devices`` spreads the colors over several devices (a list of devices, a count, or a one-axis
    ``jax.sharding.Mesh``; see :mod:`stablehlo_sparsity.derivatives.prepared.sharding`).  ``kwargs`` are static
    arguments of
    ``f`` (bind one whose name is also a keyword here, e.g. ``mode`` or ``options``, with
    ``functools.partial``).

    Raises:
        InputError: no argument to differentiate, an ``argnums`` out of range, a differentiated argument that is
            not real floating point, an unknown ``mode``, ``output`` or ``strategy``, a bad ``chunk_size`` or
            ``devices``, a ``coloring`` of another kind or shape, a library keyword this function does not take,
            ``options`` that is not an ``AnalysisOptions``, or ``has_aux=True`` with an ``f`` that returns no
            pair; its subclass ``LoweringError`` when JAX cannot trace or lower ``f`` with these arguments.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.
        ValueError: an unknown ``order`` or ``recolor`` (and ``InvalidColoringError``, a ``ValueError``, when a
            given ``coloring`` cannot recover the pattern).

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> jac = ss.sparse_jacobian(lambda x: x[1:] * x[:-1], jnp.ones(4), output="dense")
        >>> jac.num_colors, str(jac.mode)
        (2, 'forward')
        >>> jac(jnp.arange(4.0)).tolist()
        [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0], [0.0, 0.0, 3.0, 2.0]]
    """
    return SparseJacobian.from_request(derivative_request("sparse_jacobian", f, args, kwargs, locals()))


def value_and_sparse_jacobian(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                              mode: str = "auto", output: str = "bcoo", order: str = "best",
                              recolor: str = "auto", seed: int = 0, coloring: Coloring | None = None,
                              on_unknown: str = "error", constant_seeds: bool | None = None, options=None,
                              strategy: str = "auto", chunk_size: int | None = None, devices=None,
                              **kwargs) -> SparseJacobian:
    """Like :func:`sparse_jacobian`, but each call returns ``(f(x), J)`` (``((f(x), aux), J)`` with
    ``has_aux``) from the same compiled program — the primal comes for free with the JVPs/VJPs.

    Raises:
        InputError: bad arguments or options, as for ``sparse_jacobian``; its subclass ``LoweringError`` when JAX
            cannot trace or lower ``f`` with these arguments.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.
        ValueError: an unknown ``order`` or ``recolor`` (and ``InvalidColoringError``, a ``ValueError``, when a
            given ``coloring`` cannot recover the pattern).

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> vjac = ss.value_and_sparse_jacobian(lambda x: x[1:] * x[:-1], jnp.ones(4), output="dense")
        >>> y, J = vjac(jnp.arange(4.0))
        >>> y.tolist(), J.tolist()
        ([0.0, 2.0, 6.0], [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0], [0.0, 0.0, 3.0, 2.0]])
    """
    return SparseJacobian.from_request(derivative_request("value_and_sparse_jacobian", f, args, kwargs, locals()))

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

import functools
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from .api import _norm_argnums, lower_and_analyze
from .coloring import Coloring, color_columns, color_rows
from .errors import InputError, SparsityWarning
from .keywords import refuse_library_keywords
from .evaluation import STRATEGIES, EvaluationPlan, Side, colors_constant, seed_leaves, static_gather
from .pattern import SparsityPattern

__all__ = ["SparseJacobian", "sparse_jacobian", "value_and_sparse_jacobian", "jacobian_coloring", "OUTPUTS",
           "Float64Warning", "ColoringOptions"]

OUTPUTS = ("bcoo", "bcsr", "scipy", "dense", "values")
MODES = ("auto", "forward", "reverse", "bidirectional")


@dataclass(frozen=True)
class ColoringOptions:
    """Options forwarded to the coloring functions (see :mod:`stablehlo_sparsity.coloring`)."""

    order: str = "best"
    recolor: str = "auto"
    seed: int = 0

    def kwargs(self) -> dict:
        return {"order": self.order, "recolor": self.recolor, "seed": self.seed}


# ----------------------------------------------------------------------------------------------- helpers
def _struct(a):
    import jax
    import jax.numpy as jnp

    return jax.ShapeDtypeStruct(np.shape(a), jnp.result_type(a))


def _check_inputs(selected_leaves, what: str = "sparse_jacobian"):
    import jax.numpy as jnp

    for leaf in selected_leaves:
        dt = jnp.result_type(leaf)
        if not jnp.issubdtype(dt, jnp.floating):
            raise InputError(f"{what}: differentiated arguments must be real floating point, got {dt} "
                             f"(pass integer arguments through argnums you do not select)")


class Float64Warning(SparsityWarning):
    """float64 input while ``jax_enable_x64`` is off: JAX computes in float32 (warned once per process)."""


_WARNED_FLOAT64 = []


def _warn_float64(leaves) -> None:
    """Warn once when a float64 NumPy (or SciPy) input meets ``jax_enable_x64=False``: JAX silently casts it to
    float32, and so the Jacobian would be float32 (issue 11)."""
    if _WARNED_FLOAT64:
        return
    import jax

    if jax.config.jax_enable_x64:
        return
    if any(getattr(leaf, "dtype", None) == np.float64 for leaf in leaves if not isinstance(leaf, jax.Array)):
        _WARNED_FLOAT64.append(True)
        import warnings

        warnings.warn("float64 input, but jax_enable_x64 is off: JAX computes in float32, so derivatives are "
                      "float32. Enable float64 with jax.config.update('jax_enable_x64', True) before creating "
                      "arrays, or pass float32 arrays to silence this warning (shown once)", Float64Warning,
                      stacklevel=4)


def _float_outputs(out, like_dtype):
    """Cast integer/bool output leaves to a float dtype (their derivative is zero); refuse complex ones."""
    import jax
    import jax.numpy as jnp

    leaves = jax.tree_util.tree_leaves(out)
    floats = [jnp.result_type(o) for o in leaves if jnp.issubdtype(jnp.result_type(o), jnp.inexact)]
    if any(jnp.issubdtype(d, jnp.complexfloating) for d in floats):
        raise InputError("complex outputs are not supported; split them into real and imaginary parts")
    target = jnp.result_type(*floats) if floats else like_dtype

    def cast(o):
        o = jnp.asarray(o)
        return o if jnp.issubdtype(o.dtype, jnp.inexact) else o.astype(target)

    return jax.tree_util.tree_map(cast, out)


def _leaf_layout(leaves) -> tuple[list[tuple[int, ...]], list[int], list[int]]:
    shapes = [tuple(np.shape(x)) for x in leaves]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    offsets = list(np.cumsum([0] + sizes[:-1]).astype(int)) if sizes else []
    return shapes, sizes, [int(o) for o in offsets]


def _index_dtype(limit: int):
    return np.int32 if limit < 2**31 - 1 else np.int64


def _flat(tree):
    """The leaves of ``tree`` flattened and laid out one after another (one product as a vector)."""
    import jax
    import jax.numpy as jnp

    parts = [jnp.ravel(leaf) for leaf in jax.tree_util.tree_leaves(tree)]
    return jnp.concatenate(parts) if len(parts) > 1 else parts[0]


def _check_f_kwargs(kwargs: dict, what: str) -> None:
    """Refuse library keywords that ``what`` does not take (see :mod:`stablehlo_sparsity.keywords`)."""
    refuse_library_keywords(what, kwargs)


def mode_of(coloring: Coloring) -> str:
    """The products a coloring asks for: JVPs (column), VJPs (row) or both (bidirectional)."""
    return {"column": "forward", "row": "reverse", "bidirectional": "bidirectional"}[coloring.kind]


def _check_strategy(strategy, chunk_size):
    if strategy not in STRATEGIES:
        raise InputError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer))
                                   or chunk_size < 1):
        raise InputError(f"chunk_size must be a positive integer, got {chunk_size!r}")


def _bind_selected(fn, args, argnums):
    """``h(*selected) = fn(*args with args[argnums] replaced)``."""

    def h(*sel):
        a = list(args)
        for i, v in zip(argnums, sel):
            a[i] = v
        return fn(*a)

    return h


#: :meth:`SparseJacobian.as_text` prints constants with more elements than this as ``dense_resource<__elided__>``.
ELIDE_CONSTANT_ELEMENTS = 64

#: With ``constant_seeds=None`` (auto), seed matrices up to this many entries (colors × seed length) are
#: embedded as literal constants (as bytes beyond 65,536 entries, converted in the program): XLA then folds the
#: tangents of the linear parts of ``f`` at compile time and fuses each product into the gather that reads it
#: (2–4× faster warm evaluation on stencils — the 2-D Brusselator at 2·512² inputs in reverse mode: 28 ms
#: instead of 65 — for a longer first compilation, 7 s instead of 0.5 s there).  Larger ones are built in
#: the program from the color vector, which keeps the module O(n) and the compilation short;
#: ``constant_seeds=False`` asks for that at any size.
SEED_CONSTANT_LIMIT = 1 << 25


def seed_factory(colors: np.ndarray, k: int, leaves, tree, default_constant: bool | None):
    """``seeds(first, count, constant)``: the seed tree (``tree`` of ``leaves``' shapes) of colors
    ``first .. first + count`` of one side, as literal constants or computed in the program — the color table
    built once, on first need (``constant=None``: ``default_constant``)."""
    import jax

    store: list = []

    def seeds(first, count, constant):
        const = default_constant if constant is None else constant
        if not store and not _constant_seeds(const, k, len(colors)):
            store.append(colors_constant(colors, k, [np.shape(x) for x in leaves]))
        return jax.tree_util.tree_unflatten(tree, _seed_leaves(
            colors, k, leaves, const, first=first, count=count, color_consts=store[0] if store else None))
    return seeds


def _constant_seeds(constant: bool | None, k: int, size: int) -> bool:
    """Literal seeds (``constant=True``) or seeds computed from the color vector; ``None`` decides by size."""
    return k * size <= SEED_CONSTANT_LIMIT if constant is None else bool(constant)


def _seed_leaves(colors: np.ndarray, k: int, leaves, constant: bool | None = None, *, first=0, count=None,
                 color_consts=None) -> list:
    """Per-leaf seeds ``(count, *leaf.shape)`` (leaf dtype) of the one-hot rows ``S[i, v] = [colors[v] == first + i]``
    (all ``k`` colors by default), the leaves laid out one after another along ``v``; literal constants or
    computed from the color vector (see :data:`SEED_CONSTANT_LIMIT`)."""
    import jax.numpy as jnp

    shapes = [tuple(np.shape(x)) for x in leaves]
    dts = [jnp.result_type(x) for x in leaves]
    const = _constant_seeds(constant, k, len(colors)) and isinstance(first, (int, np.integer))
    return seed_leaves(colors, k, shapes, dts, first=first, count=count, constant=const, color_consts=color_consts)


def _format(values, csr: sp.csr_array, output: str, rows_const, cols_const):
    """Wrap the CSR-ordered nonzero values in the requested container (inside the traced function)."""
    import jax.numpy as jnp

    m, n = csr.shape
    if output == "values":
        return values
    if output == "dense":
        return jnp.zeros((m, n), values.dtype).at[rows_const, cols_const].set(
            values, indices_are_sorted=True, unique_indices=True)
    if output == "bcoo":
        from jax.experimental import sparse as jsparse

        idx = jnp.asarray(np.stack([rows_const, cols_const], axis=1))
        return jsparse.BCOO((values, idx), shape=(m, n), indices_sorted=True, unique_indices=True)
    if output == "bcsr":
        from jax.experimental import sparse as jsparse

        t = _index_dtype(max(csr.nnz, n))
        return jsparse.BCSR((values, jnp.asarray(csr.indices.astype(t)), jnp.asarray(csr.indptr.astype(t))),
                            shape=(m, n), indices_sorted=True, unique_indices=True)
    raise AssertionError(output)


def _to_scipy(values, csr: sp.csr_array) -> sp.csr_array:
    import jax

    try:
        v = np.asarray(values)
    except jax.errors.TracerArrayConversionError:
        raise InputError("output='scipy' cannot be used inside jax.jit/vmap (SciPy matrices live on the "
                         "host); use output='bcoo', 'bcsr' or 'dense' there") from None
    return sp.csr_array((v, csr.indices.copy(), csr.indptr.copy()), shape=csr.shape)


# ----------------------------------------------------------------------------------------------- coloring
def _choose_coloring(pattern: SparsityPattern, mode: str, coloring, options: ColoringOptions) -> Coloring:
    if mode not in MODES:
        raise InputError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if coloring is not None:
        if not isinstance(coloring, Coloring) or coloring.kind not in ("column", "row", "bidirectional"):
            raise InputError("coloring must be a column, row or bidirectional Coloring (see "
                             "stablehlo_sparsity.coloring)")
        if coloring.shape != pattern.shape:
            raise InputError(f"coloring is for a {coloring.shape} pattern, the Jacobian is {pattern.shape}")
        from .coloring import check_coloring

        check_coloring(pattern, coloring, raise_on_error=True)
        return coloring
    if mode == "forward":
        return color_columns(pattern, **options.kwargs())
    if mode == "reverse":
        return color_rows(pattern, **options.kwargs())
    if mode == "bidirectional":
        from .coloring import color_bidirectional

        return color_bidirectional(pattern, **options.kwargs())
    # auto: the fewest products among forward, reverse and bidirectional (ties: forward, then reverse)
    from .coloring.bicoloring import color_fewest_products

    return color_fewest_products(pattern, **options.kwargs())


def jacobian_coloring(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                      mode: str = "auto", order: str = "best", recolor: str = "auto", seed: int = 0,
                      on_unknown: str = "error", options=None, **kwargs) -> Coloring:
    """Detect the Jacobian pattern of ``f`` and color it (columns for ``"forward"``, rows for ``"reverse"``,
    both for ``"bidirectional"`` (a :class:`~stablehlo_sparsity.coloring.Bicoloring`), the fewest products
    for ``"auto"``).  ``options``: an :class:`~stablehlo_sparsity.AnalysisOptions`; other keyword arguments
    are ``f``'s."""
    refuse_library_keywords("jacobian_coloring", kwargs)
    pattern = lower_and_analyze(f, *args, argnums=argnums, has_aux=has_aux, on_unknown=on_unknown, options=options,
                                **kwargs).pattern
    return _choose_coloring(pattern, mode, None, ColoringOptions(order, recolor, seed))


# ----------------------------------------------------------------------------------------------- the callable
class _Prepared:
    """What a prepared sparse Jacobian and a prepared sparse Hessian share: argument checks, the compiled
    core, output containers, lowering and export.  Subclasses set ``pattern``, ``coloring``, ``has_aux``,
    ``with_value``, ``output``, ``_example``, ``_in_tree``, ``_rows``/``_cols`` and define ``_values``."""

    _what = "derivative"
    #: the serialized program (see :meth:`_program_bytes`), made on the first save or pickle
    _program: bytes | None = None
    #: evaluation strategy asked for, colors per loop iteration, and the devices the products are spread
    #: over (class defaults: subclasses that build their own state keep working)
    strategy_requested: str = "auto"
    chunk_size: int | None = None
    devices = None

    def _set_devices(self, devices):
        """Check and keep ``devices`` (``None``: one device; else a sequence of devices, a count, or a
        one-axis :class:`jax.sharding.Mesh`) — see :mod:`stablehlo_sparsity.sharding`."""
        if devices is None:
            self.devices = None
            return
        from .sharding import resolve_devices

        self.devices = resolve_devices(devices)

    def _values(self, *args):
        """``(f(x) or None, aux, nonzeros in CSR order)``: on one device, or spread over :attr:`devices` with
        ``shard_map`` (every device evaluates its block of colors; see :mod:`stablehlo_sparsity.sharding`)."""
        if self.devices is None:
            return self._values_on(args)
        from .sharding import sharded_call

        return sharded_call(self._values_on, args, self.devices)

    def _itemsize(self) -> int:
        import jax
        import jax.numpy as jnp

        leaves = jax.tree_util.tree_leaves(tuple(self._example[i] for i in self.argnums))
        return int(np.dtype(jnp.result_type(*leaves)).itemsize) if leaves else 8

    @property
    def num_colors(self) -> int:
        return self.coloring.num_colors

    @property
    def shape(self) -> tuple[int, int]:
        return self.pattern.shape

    def _reset_compiled(self):
        import jax

        self._jitted = jax.jit(self._core)
        self._jitted_values = None
        self._device_index = {}

    def _check_args(self, args):
        """The pattern and the program are specific to the prepared structure and shapes."""
        import jax

        leaves, tree = jax.tree_util.tree_flatten(args)
        if tree != self._in_tree:
            raise InputError(f"arguments have structure {tree}, the {self._what} was prepared for {self._in_tree}")
        shapes = getattr(self, "_shapes", None)
        if shapes is None:
            shapes = self._shapes = [tuple(e.shape) for e in jax.tree_util.tree_leaves(self._example)]
        for got, want in zip(leaves, shapes):
            if np.shape(got) != want:
                raise InputError(f"argument shape {np.shape(got)} differs from the prepared shape {want}; "
                                 f"prepare a new sparse {self._what} for new shapes")

    def _package(self, y, aux, mat):
        if self.with_value:
            return ((y, aux) if self.has_aux else y), mat
        return (mat, aux) if self.has_aux else mat

    def _core(self, *args):
        """The compiled part: ``(f(x) or None, aux, values or dense matrix)``.  Sparse containers are built
        outside, around device-resident index arrays, so a call does not copy constant indices out."""
        y, aux, values = self._values(*args)
        if self.output == "dense":
            values = _format(values, self.pattern.to_scipy(), "dense", self._rows, self._cols)
        return (y if self.with_value else None), aux, values

    def _index(self, name):
        import jax
        import jax.numpy as jnp

        if name not in self._device_index:
            csr = self.pattern.to_scipy()
            t = _index_dtype(max(csr.nnz, *csr.shape, 1))
            if name == "coo":
                arr = np.stack([self._rows, self._cols], axis=1).astype(t)
            elif name == "indices":
                arr = csr.indices.astype(t)
            else:
                arr = csr.indptr.astype(t)
            # A first call may come under jit/vmap/grad: the cached array must be a concrete device array,
            # never that trace's tracer (which would leak into the next trace — issue 11).
            with jax.ensure_compile_time_eval():
                self._device_index[name] = jnp.asarray(arr)
        return self._device_index[name]

    def _wrap(self, values):
        from jax.experimental import sparse as jsparse

        if self.output in ("dense", "values"):
            return values
        if self.output == "scipy":
            return _to_scipy(values, self.pattern.to_scipy())
        # The pytree constructor skips the validation of __init__ (tens of µs per call); the index arrays are
        # ours, canonical (sorted, unique) and already on the device.
        info = {"shape": self.shape, "indices_sorted": True, "unique_indices": True}
        if self.output == "bcoo":
            return jsparse.BCOO.tree_unflatten(info, (values, self._index("coo")))
        return jsparse.BCSR.tree_unflatten(info, (values, self._index("indices"), self._index("indptr")))

    def __call__(self, *args):
        self._check_args(args)
        y, aux, values = self._jitted(*args)
        return self._package(y, aux, self._wrap(values))

    def values(self, *args):
        """The nonzeros at ``args`` in the CSR order of :attr:`pattern` (jit-compatible)."""
        import jax

        self._check_args(args)
        if self._jitted_values is None:
            self._jitted_values = jax.jit(lambda *a: self._values(*a)[2])
        return self._jitted_values(*args)

    def _with_output(self, output: str):
        """A traceable function returning the result with ``output`` built inside the program."""
        if output not in OUTPUTS or output == "scipy":
            raise InputError(f"output must be one of bcoo, bcsr, dense, values here, got {output!r}")

        def fn(*args):
            y, aux, values = self._values(*args)
            return self._package(y, aux, _format(values, self.pattern.to_scipy(), output, self._rows, self._cols))

        return fn

    def lower(self, *args, output: str | None = None):
        """``jax.jit(...).lower(...)`` of the compressed program (at the prepared shapes by default), the
        container built inside it (``output`` overrides it; ``"values"`` gives the bare data vector)."""
        import jax

        out = output or ("values" if self.output == "scipy" else self.output)
        return jax.jit(self._with_output(out)).lower(*(args or self._example))

    def as_text(self, *args, output: str | None = None, debug_info: bool = False,
                keep_large_constants: bool = False) -> str:
        """The StableHLO text of the compressed program: the batched products, the seed matrix (or the color
        vector it is built from) and the gather indices of the decompression appear as constants.

        Constants with more than :data:`ELIDE_CONSTANT_ELEMENTS` elements print as
        ``dense_resource<__elided__>`` (the full text of a large problem is megabytes of indices);
        ``keep_large_constants=True`` prints them in full (the text then parses back)."""
        module = self.lower(*args, output=output).compiler_ir("stablehlo")
        with module.context:
            return module.operation.get_asm(
                large_elements_limit=None if keep_large_constants else ELIDE_CONSTANT_ELEMENTS,
                enable_debug_info=debug_info)

    # ------------------------------------------------------------------ pytree blocks
    def blocks(self, *args):
        """The derivative at ``args`` split per (output leaf, input leaf) and nested as ``jax.jacfwd`` (or
        ``jax.hessian``) returns it: ``blocks[out][in]`` has shape ``out_leaf.shape + in_leaf.shape``.

        Each block is a ``BCOO`` of that shape (``output="bcoo"``/``"bcsr"``/``"values"``), a dense array
        (``"dense"``) or a 2-D ``scipy.sparse.csr_array`` of shape ``(out_leaf.size, in_leaf.size)``
        (``"scipy"``).  The split is static index math; it works under ``jit`` (except ``"scipy"``)."""
        return self.blocks_from_values(self.values(*args))

    def _block_layout(self):
        """Static per-block index data: for each (output leaf, input leaf) the CSR positions of its nonzeros
        and their local (row, col)."""
        import jax

        if getattr(self, "_layout", None) is not None:
            return self._layout
        in_shapes = [tuple(leaf.shape) for leaf in jax.tree_util.tree_leaves(
            tuple(jax.tree_util.tree_unflatten(self._in_tree, jax.tree_util.tree_leaves(self._example))[i]
                  for i in self.argnums))]
        out_shapes = in_shapes if self._what == "Hessian" else [tuple(s) for s in self._out_shapes]
        rows, cols = self.pattern.to_coo()
        r_off = np.cumsum([0] + [int(np.prod(s, dtype=np.int64)) for s in out_shapes])
        c_off = np.cumsum([0] + [int(np.prod(s, dtype=np.int64)) for s in in_shapes])
        r_leaf = np.searchsorted(r_off, rows, side="right") - 1
        c_leaf = np.searchsorted(c_off, cols, side="right") - 1
        key = r_leaf * len(in_shapes) + c_leaf
        order = np.argsort(key, kind="stable")
        bounds = np.searchsorted(key[order], np.arange(len(out_shapes) * len(in_shapes) + 1))
        layout = []
        for o, osh in enumerate(out_shapes):
            row = []
            for i, ish in enumerate(in_shapes):
                b = o * len(in_shapes) + i
                pos = order[bounds[b]:bounds[b + 1]]
                row.append((osh, ish, pos, rows[pos] - r_off[o], cols[pos] - c_off[i]))
            layout.append(row)
        self._layout = layout
        return layout

    def _inner_tree(self):
        """The input structure of one block row: the selected argument's tree for an integer ``argnums``,
        else the tuple of the selected arguments' trees (as ``jax.jacfwd``)."""
        import jax

        children = self._in_tree.children()
        if getattr(self, "_argnums_int", True) and len(self.argnums) == 1:
            return children[self.argnums[0]]
        return jax.tree_util.treedef_tuple([children[i] for i in self.argnums])

    def blocks_from_values(self, values):
        """:meth:`blocks` from the nonzeros of :meth:`values` (CSR order of :attr:`pattern`)."""
        import jax
        import jax.numpy as jnp
        from jax.experimental import sparse as jsparse

        inner = self._inner_tree()
        outer = inner if self._what == "Hessian" else self._out_tree
        out_rows = []
        for row in self._block_layout():
            blocks = []
            for osh, ish, pos, r, c in row:
                shape = tuple(osh) + tuple(ish)
                if self.output == "scipy":
                    v = np.asarray(values)[pos]
                    blocks.append(sp.csr_array((v, (r, c)), shape=(int(np.prod(osh, dtype=np.int64)),
                                                                    int(np.prod(ish, dtype=np.int64)))))
                    continue
                v = static_gather(values, pos) if len(pos) else jnp.zeros((0,), values.dtype)
                idx = np.concatenate([np.stack(np.unravel_index(r, osh), 1) if osh else np.zeros((len(r), 0), int),
                                      np.stack(np.unravel_index(c, ish), 1) if ish else np.zeros((len(c), 0), int)],
                                     axis=1).astype(_index_dtype(max(max(shape, default=1), 1)))
                if self.output == "dense":
                    blocks.append(jnp.zeros(shape, values.dtype).at[tuple(idx.T)].set(v))
                else:
                    blocks.append(jsparse.BCOO((v, idx), shape=shape, indices_sorted=True, unique_indices=True))
            out_rows.append(jax.tree_util.tree_unflatten(inner, blocks))
        return jax.tree_util.tree_unflatten(outer, out_rows)

    def export(self, platforms: Sequence[str] = ("cpu", "cuda", "tpu"), output: str = "values"):
        """A :class:`jax.export.Exported` of the program for ``platforms``.

        The default ``output="values"`` exports the data vector (nonzeros in :attr:`pattern` CSR order, whose
        index arrays are static: ``pattern.indptr`` / ``pattern.indices``); ``"dense"`` exports the dense
        matrix.  ``exp.call(*args)`` runs it; ``exp.serialize()`` needs the ``flatbuffers`` package."""
        import jax
        from jax import export as jexport

        if output not in ("values", "dense"):
            raise InputError("export supports output='values' or 'dense' (plain arrays)")
        return jexport.export(jax.jit(self._with_output(output)), platforms=tuple(platforms))(*self._example)

    # ------------------------------------------------------------------ pytree, pickle, save / load
    def __new__(cls, *args, **kwargs):
        _register_pytree(cls)
        return super().__new__(cls)

    def _program_bytes(self) -> bytes:
        """The compressed program ``args ↦ (f(args) or None, aux, values)`` serialized with :mod:`jax.export`
        (with its VJP, so reverse-mode AD works on a restored object), for CPU, CUDA and TPU when every op
        lowers for all three, else for the platform in use."""
        import jax
        from jax import export as jexport

        if self._program is not None:
            return self._program
        # the single-device program: a saved object evaluates wherever it is loaded
        fn = jax.jit(lambda *a: self._values_on(a) if hasattr(self, "_values_on") else self._values(*a))
        try:
            exp = jexport.export(fn, platforms=("cpu", "cuda", "tpu"))(*self._example)
        except Exception:
            try:
                exp = jexport.export(fn)(*self._example)
            except Exception as e:
                raise InputError(f"this sparse {self._what} cannot be saved or pickled: jax.export could not "
                                 f"export its program ({type(e).__name__}: {str(e).splitlines()[0][:200]})") from e
        try:
            self._program = bytes(exp.serialize(vjp_order=1))
        except ImportError as e:  # pragma: no cover - flatbuffers is a dependency
            raise InputError(f"saving needs the flatbuffers package: {e}") from e
        return self._program

    def _state(self) -> dict:
        """Everything a restored object needs, as NumPy arrays, plain values and the program's bytes."""
        # Only what a restored object reads: the program replaces the evaluation internals of any mode.
        c = self.coloring
        meta = {"format": STATE_FORMAT, "class": type(self).__name__, "shape": list(self.shape),
                "output": self.output, "has_aux": self.has_aux, "with_value": self.with_value,
                "argnums": list(self.argnums), "mode": getattr(self, "mode", None),
                "argnums_int": bool(getattr(self, "_argnums_int", True)),
                "coloring": {"kind": str(getattr(c, "kind", "")), "num_colors": int(c.num_colors),
                             "order": str(getattr(c, "order", "")), "lower_bound": int(getattr(c, "lower_bound", 0)),
                             "shape": list(getattr(c, "shape", self.shape))}}
        csr = self.pattern.to_scipy()
        rows, cols = self.pattern.to_coo()
        return {"meta": meta, "indptr": np.asarray(csr.indptr), "indices": np.asarray(csr.indices),
                "colors": np.asarray(getattr(c, "colors", np.zeros(0, np.int32))),
                "rows": np.asarray(getattr(self, "_rows", rows)), "cols": np.asarray(getattr(self, "_cols", cols)),
                "program": self._program_bytes()}

    def __getstate__(self) -> dict:
        return self._state()

    def __setstate__(self, state: dict) -> None:
        import jax
        from jax import export as jexport

        from .coloring import Coloring

        meta = state["meta"]
        if meta.get("format") != STATE_FORMAT:
            raise InputError(f"not a saved sparse Jacobian/Hessian of this version (format {meta.get('format')!r}, "
                             f"expected {STATE_FORMAT!r})")
        m, n = meta["shape"]
        self.pattern = SparsityPattern(sp.csr_array(
            (np.ones(len(state["indices"]), bool), state["indices"], state["indptr"]), shape=(m, n)))
        cm = meta["coloring"]
        self.coloring = Coloring(np.asarray(state["colors"], np.int32), cm["num_colors"], cm["kind"],
                                 tuple(cm["shape"]), cm["order"], cm["lower_bound"])
        self.output, self.has_aux, self.with_value = meta["output"], meta["has_aux"], meta["with_value"]
        self.argnums = tuple(meta["argnums"])
        self._argnums_int = meta.get("argnums_int", True)
        if meta.get("mode") is not None:
            self.mode = meta["mode"]
        self._rows, self._cols = state["rows"], state["cols"]
        self._colors = self.coloring.colors
        self.constant_seeds = None
        self.analysis = None  # the detection result (an ir.Module) is not kept: the pattern is
        self._fn = None
        self._program = bytes(state["program"])
        exp = jexport.deserialize(bytearray(self._program))
        self._in_tree = exp.in_tree.children()[0]
        self._example = jax.tree_util.tree_unflatten(
            self._in_tree, [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in exp.in_avals])
        self._values = _restored_call(exp)
        out_tree = exp.out_tree.children()[0]  # (y, aux, values) → y
        self._out_tree = out_tree
        self._out_shapes = [tuple(a.shape) for a in exp.out_avals[:out_tree.num_leaves]]
        self._layout = None
        self._reset_compiled()

    def save(self, path) -> None:
        """Save pattern, coloring and compiled program as one ``.npz`` artifact (no pickle inside), to be
        read back with :func:`stablehlo_sparsity.load` — in another process, without ``f``'s source.

        The program is a :mod:`jax.export` serialization (StableHLO bytecode, with its VJP): a restored
        object evaluates, works under ``jit``, ``vmap`` (as a sequential map) and reverse-mode AD; forward
        mode (``jvp``) through it is not available."""
        import json

        st = self._state()
        arrays = {k: v for k, v in st.items() if isinstance(v, np.ndarray)}
        with open(path, "wb") as fh:
            np.savez(fh, meta=np.frombuffer(json.dumps(st["meta"]).encode(), np.uint8),
                     program=np.frombuffer(st["program"], np.uint8), **arrays)


class SparseJacobian(_Prepared):
    """A prepared sparse Jacobian of ``f``: call it with arguments of the prepared shapes and dtypes.

    Returns the Jacobian in the chosen ``output`` format — ``"bcoo"`` (``jax.experimental.sparse.BCOO``, the
    default), ``"bcsr"``, ``"dense"`` (a ``(m, n)`` array), ``"scipy"`` (a ``scipy.sparse.csr_array``; not
    usable under ``jit``) or ``"values"`` (the nonzeros in the CSR order of :attr:`pattern`).  With
    ``has_aux`` it returns ``(J, aux)``; a value-and-Jacobian callable returns ``(f(x), J)`` or
    ``((f(x), aux), J)``.

    Attributes: ``pattern`` (:class:`~stablehlo_sparsity.SparsityPattern`), ``coloring``
    (:class:`~stablehlo_sparsity.coloring.Coloring`), ``mode`` (``"forward"``, ``"reverse"`` or
    ``"bidirectional"``), ``num_colors`` (JVPs plus VJPs per evaluation), ``analysis`` (the detection result).
    """

    _what = "Jacobian"

    def __init__(self, f: Callable, args: tuple, *, argnums=0, has_aux: bool = False, mode: str = "auto",
                 output: str = "bcoo", with_value: bool = False, coloring: Coloring | None = None,
                 coloring_options: ColoringOptions | None = None, kwargs: dict | None = None,
                 on_unknown: str = "error", constant_seeds: bool | None = None, options=None,
                 strategy: str = "auto", chunk_size: int | None = None, devices=None):
        import jax

        if output not in OUTPUTS:
            raise InputError(f"output must be one of {', '.join(OUTPUTS)}, got {output!r}")
        if not args:
            raise InputError("sparse_jacobian needs at least one argument to differentiate")
        _check_f_kwargs(kwargs or {}, "sparse_jacobian")
        _check_strategy(strategy, chunk_size)
        self.strategy_requested, self.chunk_size = strategy, chunk_size
        self.constant_seeds = constant_seeds
        self.argnums = tuple(dict.fromkeys(_norm_argnums(argnums, len(args))))
        self.has_aux = bool(has_aux)
        self.output = output
        self.with_value = bool(with_value)
        self._fn = functools.partial(f, **kwargs) if kwargs else f
        self._example = jax.tree_util.tree_map(_struct, tuple(args))
        self._in_tree = jax.tree_util.tree_structure(tuple(args))
        sel_leaves = jax.tree_util.tree_leaves(tuple(args[i] for i in self.argnums))
        _check_inputs(sel_leaves)
        self._set_devices(devices)
        self.analysis = lower_and_analyze(f, *args, argnums=self.argnums, has_aux=has_aux,
                                          on_unknown=on_unknown, options=options, **(kwargs or {}))
        _warn_float64(sel_leaves)
        self.pattern = self.analysis.pattern
        self._argnums_int = isinstance(argnums, (int, np.integer))
        self._out_tree, self._out_shapes = self.analysis.out_tree, list(self.analysis.output_shapes)
        self.coloring = _choose_coloring(self.pattern, mode, coloring, coloring_options or ColoringOptions())
        self.mode = mode_of(self.coloring)
        self._prepare_constants()

    # ------------------------------------------------------------------ constants
    def _prepare_constants(self):
        """The evaluation plan (which product and entry each nonzero reads, by strategy), the index arrays of
        the output containers and fresh compiled wrappers, from :attr:`coloring`."""
        m, n = self.shape
        rows, cols = self.pattern.to_coo()
        t = _index_dtype(max(m, n, 1))
        self._rows, self._cols = rows.astype(t), cols.astype(t)
        if self.mode == "bidirectional":
            from .coloring import DecompressionPlan

            dplan = DecompressionPlan(self.pattern, self.coloring)
            sides = [Side(self.coloring.column_colors.astype(np.int32), self.coloring.num_column_colors, m, "jvp"),
                     Side(self.coloring.row_colors.astype(np.int32), self.coloring.num_row_colors, n, "vjp")]
            source = dplan.source
        else:
            k = self.coloring.num_colors
            c = self.coloring.colors.astype(np.int64)
            if self.mode == "forward":
                # compressed Bᵀ is (k, m): J[i, j] = Bᵀ[c[j], i]
                sides, source = [Side(self.coloring.colors.astype(np.int32), k, m, "jvp")], c[cols] * m + rows
            else:
                # compressed C is (k, n): J[i, j] = C[r[i], j]
                sides, source = [Side(self.coloring.colors.astype(np.int32), k, n, "vjp")], c[rows] * n + cols
        self._colors = self.coloring.colors.astype(np.int32)
        self._plan = EvaluationPlan(sides, source, self.strategy_requested, self.chunk_size,
                                    itemsize=self._itemsize())
        self._reset_compiled()

    @property
    def strategy(self) -> str:
        """The evaluation strategy in use (``"vmap"``, ``"unrolled"`` or ``"loop"``; see
        :mod:`stablehlo_sparsity.evaluation`)."""
        plan = getattr(self, "_plan", None)
        return plan.strategy if plan is not None else getattr(self, "_strategy_restored", "vmap")

    # ------------------------------------------------------------------ evaluation
    def _values_on(self, args, shard=None):
        """``(f(x), aux, nonzeros in CSR order)`` — the compressed program; ``shard``: ``(axis name, device
        count)`` inside ``shard_map`` (this device's block of colors, see :mod:`stablehlo_sparsity.sharding`)."""
        import jax
        import jax.numpy as jnp

        sel = tuple(args[i] for i in self.argnums)
        sel_leaves, sel_tree = jax.tree_util.tree_flatten(sel)
        x_dtype = jnp.result_type(*sel_leaves) if sel_leaves else jnp.float32
        h0 = _bind_selected(self._fn, args, self.argnums)
        if self.has_aux:
            def h(*s):
                y, aux = h0(*s)
                return _float_outputs(y, x_dtype), aux
        else:
            def h(*s):
                return _float_outputs(h0(*s), x_dtype)
        plan = self._plan
        fwd = self.mode in ("forward", "bidirectional") and plan.sides[0].k > 0
        rev = self.mode == "reverse" or (self.mode == "bidirectional" and plan.sides[1].k > 0)
        y = aux = None
        apply, seeds, linear = [], [], []
        out_leaves = out_tree = None
        if rev:
            if self.has_aux:
                y, vjp_fn, aux = jax.vjp(h, *sel, has_aux=True)
            else:
                (y, vjp_fn), aux = jax.vjp(h, *sel), None
            out_leaves, out_tree = jax.tree_util.tree_flatten(y)
        if self.mode == "reverse":
            dtype = x_dtype  # the cotangents of the selected inputs
        else:
            shape = jax.eval_shape(h, *sel)
            leaves = jax.tree_util.tree_leaves(shape[0] if self.has_aux else shape)
            dtype = jnp.result_type(*leaves) if leaves else x_dtype

        if self.mode == "bidirectional" or fwd:

            def jvp_apply(t):
                if self.has_aux:
                    yy, ydot, a = jax.jvp(h, sel, t, has_aux=True)
                else:
                    (yy, ydot), a = jax.jvp(h, sel, t), None
                return (yy, a), _flat(ydot)

            apply.append(jvp_apply)
            seeds.append(seed_factory(plan.sides[0].colors, plan.sides[0].k, sel_leaves, sel_tree,
                                      self.constant_seeds))
            if fwd and plan.strategy == "loop":
                if self.has_aux:
                    y, lin, aux = jax.linearize(h, *sel, has_aux=True)
                else:
                    y, lin = jax.linearize(h, *sel)
                linear.append(lambda t, lin=lin: _flat(lin(*t)))
            else:
                linear.append(None)
        if self.mode in ("reverse", "bidirectional"):
            side = plan.sides[-1]

            def vjp_apply(ct):
                return None, _flat(vjp_fn(ct))

            apply.append(vjp_apply if rev else None)
            seeds.append(seed_factory(side.colors, side.k, out_leaves, out_tree, self.constant_seeds) if rev
                         else None)
            linear.append((lambda ct: _flat(vjp_fn(ct))) if rev else None)
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
        if self.mode == "bidirectional":
            kc, kr = self.coloring.num_column_colors, self.coloring.num_row_colors
            what = f"{kc} JVP{'s' * (kc != 1)} + {kr} VJP{'s' * (kr != 1)}"
            return (f"SparseJacobian({m}×{n}, nnz={self.pattern.nnz}, bidirectional mode: {what} per evaluation, "
                    f"strategy={self.strategy!r}, output={self.output!r})")
        what = "JVPs" if self.mode == "forward" else "VJPs"
        return (f"SparseJacobian({m}×{n}, nnz={self.pattern.nnz}, {self.mode} mode: {self.num_colors} {what} "
                f"per evaluation, strategy={self.strategy!r}, output={self.output!r})")


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
    :mod:`stablehlo_sparsity.coloring`); ``coloring`` supplies one.  ``constant_seeds``: literal seed
    constants (faster warm calls, longer compilation) or seeds computed in the program; ``None`` decides by
    size (:data:`SEED_CONSTANT_LIMIT`).  ``options``: an :class:`~stablehlo_sparsity.AnalysisOptions` for the
    detection.

    ``strategy`` lays out the products (see :mod:`stablehlo_sparsity.evaluation`): ``"vmap"`` (all colors
    in one batch), ``"unrolled"`` (one product per color, each read only where the pattern needs it),
    ``"loop"`` (a ``lax.fori_loop`` over chunks of ``chunk_size`` colors), or ``"auto"`` (by size).
    ``devices`` spreads the colors over several devices (a list of devices, a count, or a one-axis
    ``jax.sharding.Mesh``; see :mod:`stablehlo_sparsity.sharding`).  ``kwargs`` are static arguments of
    ``f`` (bind one whose name is also a keyword here, e.g. ``mode`` or ``options``, with
    ``functools.partial``).
    """
    refuse_library_keywords("sparse_jacobian", kwargs)
    return SparseJacobian(f, args, argnums=argnums, has_aux=has_aux, mode=mode, output=output,
                          coloring=coloring, coloring_options=ColoringOptions(order, recolor, seed),
                          kwargs=kwargs, on_unknown=on_unknown, constant_seeds=constant_seeds, options=options,
                          strategy=strategy, chunk_size=chunk_size, devices=devices)


def value_and_sparse_jacobian(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                              mode: str = "auto", output: str = "bcoo", order: str = "best",
                              recolor: str = "auto", seed: int = 0, coloring: Coloring | None = None,
                              on_unknown: str = "error", constant_seeds: bool | None = None, options=None,
                              strategy: str = "auto", chunk_size: int | None = None, devices=None,
                              **kwargs) -> SparseJacobian:
    """Like :func:`sparse_jacobian`, but each call returns ``(f(x), J)`` (``((f(x), aux), J)`` with
    ``has_aux``) from the same compiled program — the primal comes for free with the JVPs/VJPs."""
    refuse_library_keywords("value_and_sparse_jacobian", kwargs)
    return SparseJacobian(f, args, argnums=argnums, has_aux=has_aux, mode=mode, output=output, with_value=True,
                          coloring=coloring, coloring_options=ColoringOptions(order, recolor, seed),
                          kwargs=kwargs, on_unknown=on_unknown, constant_seeds=constant_seeds, options=options,
                          strategy=strategy, chunk_size=chunk_size, devices=devices)


# ----------------------------------------------------------------------------------------------- saving
#: Version tag of pickled / saved prepared objects.
STATE_FORMAT = "stablehlo_sparsity.prepared/1"


class _StaticRef:
    """The pytree auxiliary data of a prepared object: the object itself, compared by identity.  A prepared
    object has no array leaves (its pattern, coloring and index arrays are static), so passing it into a
    jitted function retraces only for another object, never for another call."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, _StaticRef) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


_REGISTERED: set = set()


def _register_pytree(cls) -> None:
    """Register a prepared class as a pytree with no leaves (lazily: ``import stablehlo_sparsity`` does not
    import JAX)."""
    if cls in _REGISTERED:
        return
    import jax

    jax.tree_util.register_pytree_node(cls, lambda p: ((), _StaticRef(p)), lambda aux, _: aux.obj)
    _REGISTERED.add(cls)


def _mapped(fn):
    """``fn`` with a batching rule: a sequential ``lax.map`` over the batched arguments (``call_exported``
    has no batching rule of its own)."""
    import jax

    @jax.custom_batching.custom_vmap
    def call(*args):
        return fn(*args)

    @call.def_vmap
    def _rule(axis_size, in_batched, *args):
        flat, tree = jax.tree_util.tree_flatten(args)
        flags = jax.tree_util.tree_leaves(in_batched)

        def one(batched):
            it = iter(batched)
            return fn(*jax.tree_util.tree_unflatten(tree, [next(it) if b else a for a, b in zip(flat, flags)]))

        out = jax.lax.map(one, [a for a, b in zip(flat, flags) if b])
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return call


def _restored_call(exp):
    """The ``_values`` of a restored object: the exported program, differentiable in reverse mode (its
    serialized VJP) and batchable (a sequential map)."""
    import jax

    forward = _mapped(exp.call)
    backward = _mapped(lambda args, ct: jax.vjp(exp.call, *args)[1](ct))

    @jax.custom_vjp
    def call(*args):
        return forward(*args)

    def fwd(*args):
        return forward(*args), args

    def bwd(args, ct):
        return tuple(backward(args, ct))

    call.defvjp(fwd, bwd)
    return call

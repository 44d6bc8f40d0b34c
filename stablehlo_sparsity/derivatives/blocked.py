"""Jacobian values for patterns too large for one prepared object: evaluation from row blocks.

A prepared :func:`~stablehlo_sparsity.sparse_jacobian` holds the whole pattern's index arrays (``O(nnz)``: 8–16 GB
at 10⁹ nonzeros).  :class:`BlockedJacobian` holds none of them: it keeps ``f``, a column :class:`Coloring` and a
*re-iterable source of row blocks* (a shard directory written by
:func:`~stablehlo_sparsity.analysis.streaming.write_pattern_shards`, or a callable returning ``(r0, csr_block)`` pairs
in row order, as :func:`~stablehlo_sparsity.analysis.streaming.jacobian_sparsity_blocks` yields them), and reads the
blocks again at every evaluation.

One evaluation, for this process's rows ``[lo, hi)`` (``process=(i, P)`` or ``"jax"``: the split of
:func:`~stablehlo_sparsity.analysis.streaming.process_rows`, the rows the same process detects):

1. **Products** — the ``K`` JVPs ``J · s_c`` of the colors (``s_c`` the indicator of color ``c``'s columns,
   built inside the program from the ``n`` colors), one after the other in one jitted ``lax.map``; each is cut
   to rows ``[lo, hi)`` as soon as it is computed, so the program keeps ``K × (hi - lo)`` values.  Every
   process evaluates all ``K`` products of ``f`` (a JVP computes every output row): splitting the colors
   between processes instead would leave each process a partial sum of each row, which only an exchange of
   products could turn into values.
2. **Decompression** — block by block, the nonzero ``(i, j)`` is read from ``B[color(j), i - lo]`` (a column
   coloring puts at most one nonzero of a row in each color: Curtis, Powell and Reid).  The block's colors and
   local rows are passed as arguments of one jitted gather, padded to a capacity that only grows by doubling,
   so blocks of similar size share one compilation.

Memory per process: the products (``K × (hi - lo)`` values), the point and the colors (``O(n)``), and one
block's pattern and values at a time (:meth:`BlockedJacobian.blocks`); :meth:`BlockedJacobian.__call__`
additionally returns all of the process's values (``O(nnz of its rows)``).

Checks.  Every block is checked against the coloring as it is read (no two nonzeros of one row share a color),
so a coloring that does not fit the blocks raises :class:`~stablehlo_sparsity.errors.InputError` instead of
returning a sum of two derivatives.  The blocks themselves are taken as the pattern of ``f``: a superset of it is
fine (its extra entries come out ``0``), entries missing from them are not evaluated.

Not covered: reverse mode (row colorings, VJPs), bidirectional colorings and Hessians are refused; use
:func:`~stablehlo_sparsity.sparse_jacobian` / :func:`~stablehlo_sparsity.sparse_hessian` where the pattern fits
in memory.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from ..analysis.program import norm_argnums
from ..coloring.kinds import ColoringKind
from ..coloring.result import Bicoloring, Coloring
from ..errors import InputError, LoweringError
from .prepared.evaluation import color_dtype
from .prepared.inputs import bind_selected, check_differentiable
from ..analysis.streaming import process_rows
from .shard_io import read_pattern_shards

__all__ = ["BlockedJacobian", "blocked_jacobian", "OUTPUTS"]

#: What a call returns: the values in CSR order of the process's rows, or them as a SciPy CSR block.
OUTPUTS = ("values", "scipy")

#: The smallest padded block capacity (nonzeros): tiny blocks share one compilation.
MIN_CAPACITY = 1 << 10


def _source(blocks) -> Callable[[int, int], Any]:
    """A callable ``(lo, hi) ->`` a fresh iterator over ``(r0, block)`` holding at least rows ``[lo, hi)``: a
    directory of shards (only those shards are loaded), a callable, or a re-iterable collection (a one-shot
    iterator is refused: every evaluation reads the blocks again)."""
    if isinstance(blocks, (str, os.PathLike)):
        directory = blocks
        if not os.path.isdir(directory):
            raise InputError(f"no shard directory '{directory}'")
        return lambda lo, hi: read_pattern_shards(directory, rows=(lo, hi))
    if callable(blocks):
        return lambda lo, hi: blocks()
    try:
        it = iter(blocks)
    except TypeError:
        raise InputError("blocks must be a shard directory, a callable returning (r0, csr_block) pairs, or a "
                         f"re-iterable collection of them; got {type(blocks).__name__}") from None
    if it is blocks:
        raise InputError("blocks is a one-shot iterator, but every evaluation reads the blocks again: pass a "
                         "callable returning a fresh iterator, a list, or a shard directory")
    return lambda lo, hi: iter(blocks)


def _rows_of(source: Callable, lo: int, hi: int, n: int) -> Iterator[tuple[int, sp.csr_array]]:
    """The blocks' rows within ``[lo, hi)`` as canonical bool CSR blocks (sorted, no duplicates, no explicit
    zeros), cut where a block straddles ``lo`` or ``hi``; checks that they are consecutive, cover ``[lo, hi)``
    and have ``n`` columns."""
    expect = None  # every block is checked for order, also those before lo
    covered = lo
    for item in source(lo, hi):
        try:
            r0, block = item
        except (TypeError, ValueError):
            raise InputError(f"a row block must be a pair (r0, csr_block), got {type(item).__name__}") from None
        r0 = int(r0)
        if not sp.issparse(block):
            raise InputError(f"the row block at row {r0} is a {type(block).__name__}, not a SciPy sparse matrix")
        rows, cols = block.shape
        if cols != n:
            raise InputError(f"the row block at row {r0} has {cols} columns; the coloring has {n}")
        if expect is None and r0 > lo:
            raise InputError(f"the row blocks start at row {r0}; this evaluation needs rows [{lo}, {hi})")
        if expect is not None and r0 != expect:
            raise InputError(f"row blocks must be consecutive: expected a block at row {expect}, got one at row "
                             f"{r0} ({'an overlap' if r0 < expect else 'a gap'})")
        expect = r0 + rows
        a, b = max(r0, lo), min(expect, hi)
        if a >= b:
            if r0 >= hi:
                break
            continue
        part = sp.csr_array(block if (a, b) == (r0, expect) else sp.csr_array(block)[a - r0:b - r0], dtype=bool)
        if not (part.has_canonical_format and part.data.all()):  # a copy: the caller's blocks stay as given
            part = part.copy()
            part.eliminate_zeros()
            part.sum_duplicates()
        covered = b
        yield a, part
    if covered != hi:
        raise InputError(f"the row blocks cover rows up to {covered}; this evaluation needs rows [{lo}, {hi})")


class BlockedJacobian:
    """The rows ``[lo, hi)`` of ``f``'s Jacobian, evaluated from row blocks and a column coloring (module
    docstring).  Build it with :func:`blocked_jacobian`.

    ``rows``: this process's ``(lo, hi)``; ``shape``: the whole Jacobian's ``(m, n)``; ``coloring``: the column
    coloring used (``num_colors`` JVPs per evaluation).

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> f = lambda x: x[1:] * x[:-1]
        >>> blocks = list(ss.jacobian_sparsity_blocks(f, jnp.ones(5), rows_per_block=2))
        >>> bj = ss.blocked_jacobian(f, jnp.ones(5), blocks=blocks, process=(1, 2))   # the second of 2 processes
        >>> bj.rows, bj.coloring.num_colors, bj(jnp.arange(5.0)).tolist()
        ((2, 4), 2, [3.0, 2.0, 4.0, 3.0])
        >>> [(r0, block.toarray().tolist()) for r0, block in bj.blocks(jnp.arange(5.0))]
        [(2, [[0.0, 0.0, 3.0, 2.0, 0.0], [0.0, 0.0, 0.0, 4.0, 3.0]])]
    """

    def __init__(self, f: Callable, args: tuple, blocks, shape: tuple[int, int] | None, coloring: Coloring | None,
                 argnums: int | Sequence[int], process, output: str, progress=None):
        import jax
        from jax.flatten_util import ravel_pytree

        if output not in OUTPUTS:
            raise InputError(f"output must be one of {', '.join(map(repr, OUTPUTS))}, got {output!r}")
        if not callable(f):
            raise InputError(f"f must be callable, got {type(f).__name__}")
        if not args:
            raise InputError("blocked_jacobian needs at least one argument to differentiate")
        self.f, self.output = f, output
        self.argnums = norm_argnums(argnums, len(args))
        self._arg_specs = self._specs(args)
        wrt = tuple(args[i] for i in self.argnums)
        check_differentiable(jax.tree_util.tree_leaves(wrt), "blocked_jacobian")
        x_flat, self._unravel = ravel_pytree(wrt)
        n = int(x_flat.size)
        try:
            out = jax.eval_shape(lambda *a: ravel_pytree(f(*a))[0], *args)
        except Exception as e:
            raise LoweringError(f"could not trace f with the given arguments: {type(e).__name__}: {e}") from e
        if not jax.numpy.issubdtype(out.dtype, jax.numpy.floating):
            raise InputError(f"f's outputs must be real floating point, got {out.dtype}")
        m = int(out.size)
        self.dtype = np.dtype(out.dtype)  #: the values' dtype (that of f's flattened outputs)
        if shape is not None and tuple(int(s) for s in shape) != (m, n):
            raise InputError(f"shape {tuple(shape)} does not match f: its Jacobian is {m}×{n}")
        self.shape = (m, n)
        self.rows = process_rows(m, process)
        self._source = _source(blocks)
        if coloring is None:
            from ..coloring.streamed import color_columns_streamed

            lo, hi = self.rows
            # the values of these rows need a coloring valid for these rows only
            coloring = color_columns_streamed(lambda: _rows_of(self._source, lo, hi, n), (m, n), progress=progress)
        self.coloring = self._checked_coloring(coloring, m, n)
        K = self.coloring.num_colors
        self._ctype = color_dtype(K)
        self._colors = np.asarray(self.coloring.colors, self._ctype)
        self._build()

    # ------------------------------------------------------------------------------------------ checks
    @staticmethod
    def _specs(args) -> tuple:
        import jax

        leaves, tree = jax.tree_util.tree_flatten(args)
        return tree, tuple((np.shape(x), np.dtype(x.dtype) if hasattr(x, "dtype") else np.result_type(x))
                           for x in leaves)

    @staticmethod
    def _checked_coloring(coloring, m: int, n: int) -> Coloring:
        if not isinstance(coloring, Coloring):
            raise InputError(f"coloring must be a stablehlo_sparsity.Coloring, got {type(coloring).__name__}")
        if isinstance(coloring, Bicoloring) or coloring.kind != ColoringKind.COLUMN:
            raise InputError(f"a blocked evaluation takes a column coloring (JVPs); got a {coloring.kind.value} "
                             "coloring — reverse mode, bidirectional colorings and Hessians are not covered "
                             "(use sparse_jacobian / sparse_hessian where the pattern fits in memory)")
        if tuple(coloring.shape) != (m, n) or len(coloring.colors) != n:
            raise InputError(f"the coloring is for a {coloring.shape[0]}×{coloring.shape[1]} pattern with "
                             f"{len(coloring.colors)} columns; f's Jacobian is {m}×{n}")
        colors = np.asarray(coloring.colors)
        if n and coloring.num_colors and (colors.min() < 0 or colors.max() >= coloring.num_colors):
            raise InputError(f"the coloring's colors must lie in [0, {coloring.num_colors})")
        return coloring

    def _check_args(self, args) -> None:
        tree, specs = self._specs(args)
        if tree != self._arg_specs[0]:
            raise InputError(f"the arguments have the structure {tree}; this Jacobian was prepared for "
                             f"{self._arg_specs[0]}")
        for k, (got, want) in enumerate(zip(specs, self._arg_specs[1])):
            if got != want:
                raise InputError(f"argument leaf {k} has shape {got[0]} and dtype {got[1]}; this Jacobian was "
                                 f"prepared for shape {want[0]} and dtype {want[1]}")

    # ------------------------------------------------------------------------------------------ programs
    def _build(self) -> None:
        import jax
        import jax.numpy as jnp
        from jax.flatten_util import ravel_pytree

        f, argnums, unravel = self.f, self.argnums, self._unravel
        lo, hi = self.rows
        K = self.coloring.num_colors

        def f_flat(x_flat, args):
            return ravel_pytree(bind_selected(f, args, argnums)(*unravel(x_flat)))[0]

        def products(args, colors):
            """``B[c] = (J · s_c)[lo:hi]`` for every color ``c``, the seeds built from ``colors``."""
            x_flat = ravel_pytree(tuple(args[i] for i in argnums))[0]

            def one(c):
                seed = (colors == c).astype(x_flat.dtype)
                return jax.jvp(lambda v: f_flat(v, args), (x_flat,), (seed,))[1][lo:hi]

            return jax.lax.map(one, jnp.arange(K, dtype=colors.dtype))

        def gather(B, cc, rr):
            """The block's values: ``B[color(j), i - lo]`` for its nonzeros (padding reads ``B[0, 0]``)."""
            return B[cc.astype(jnp.int32), rr]

        self._products = jax.jit(products)
        self._gather = jax.jit(gather)
        self._capacity = MIN_CAPACITY

    # ------------------------------------------------------------------------------------------ evaluation
    def products(self, *args):
        """The compressed products at ``args``: a device array ``(num_colors, hi - lo)``, row ``c`` the JVP of
        color ``c``'s seed cut to this process's rows (what :meth:`blocks` reads the values from)."""
        import jax.numpy as jnp

        self._check_args(args)
        lo, hi = self.rows
        return self._products(args, jnp.asarray(self._colors)) if self.coloring.num_colors and hi > lo else None

    def blocks(self, *args, products=None) -> Iterator[tuple[int, sp.csr_array]]:
        """The Jacobian at ``args``, this process's rows one block at a time: ``(r0, block)`` in row order,
        ``block`` a SciPy ``csr_array`` of shape ``(rows, n)`` holding the values at the block's pattern
        (memory: the products and one block).  ``products``: what :meth:`products` returned at ``args``
        (computed here when not given)."""
        import jax.numpy as jnp

        self._check_args(args)
        n = self.shape[1]
        lo, hi = self.rows
        K = self.coloring.num_colors
        colors = self._colors
        B = self.products(*args) if products is None else products
        if B is not None and tuple(B.shape) != (K, hi - lo):
            raise InputError(f"products of shape {tuple(B.shape)}; this evaluation's are {(K, hi - lo)}")
        cc_buf = rr_buf = None
        for r0, block in _rows_of(self._source, lo, hi, n):
            k = block.nnz
            local = np.repeat(np.arange(r0 - lo, r0 - lo + block.shape[0], dtype=np.int32), np.diff(block.indptr))
            cc = colors[block.indices]
            self._check_block(lo, local, cc, K)
            if k == 0 or B is None:
                values = np.zeros(k, self.dtype)
            else:
                if cc_buf is None or len(cc_buf) < k:  # capacities double: few compilations
                    while self._capacity < k:
                        self._capacity *= 2
                    cc_buf = np.zeros(self._capacity, self._ctype)
                    rr_buf = np.zeros(self._capacity, np.int32)
                assert rr_buf is not None  # allocated with cc_buf
                cc_buf[:k], cc_buf[k:] = cc, 0
                rr_buf[:k], rr_buf[k:] = local, 0
                values = np.asarray(self._gather(B, jnp.asarray(cc_buf), jnp.asarray(rr_buf)))[:k]
            yield r0, sp.csr_array((values, block.indices, block.indptr), shape=block.shape)

    @staticmethod
    def _check_block(lo: int, local: np.ndarray, cc: np.ndarray, K: int) -> None:
        """No two nonzeros of one row share a color (else ``B[c, i]`` is their sum, not either value)."""
        if len(cc) < 2:
            return
        key = local.astype(np.int64) * max(K, 1) + cc
        key.sort()
        clash = np.flatnonzero(key[1:] == key[:-1])
        if len(clash):
            row = int(key[clash[0]] // max(K, 1))
            raise InputError(f"the coloring does not fit the row blocks: two nonzeros of row {lo + row} "
                             f"have color {int(key[clash[0]] % max(K, 1))} (a column coloring of another pattern?)")

    def __call__(self, *args):
        """The Jacobian at ``args``, this process's rows: their values in CSR order (``output="values"``, a NumPy
        array) or a SciPy ``csr_array`` of shape ``(hi - lo, n)`` (``output="scipy"``)."""
        pieces = list(self.blocks(*args))
        n = self.shape[1]
        lo, hi = self.rows
        if self.output == "values":
            if not pieces:
                return np.zeros(0, self.dtype)
            return np.concatenate([b.data for _, b in pieces])
        if not pieces:
            return sp.csr_array((hi - lo, n), dtype=self.dtype)
        return sp.csr_array(sp.vstack([b for _, b in pieces], format="csr"))

    def __repr__(self) -> str:
        m, n = self.shape
        return (f"BlockedJacobian(rows [{self.rows[0]}, {self.rows[1]}) of a {m}×{n} Jacobian, "
                f"{self.coloring.num_colors} JVPs, output={self.output!r})")


def blocked_jacobian(f: Callable, *args, blocks, coloring: Coloring | None = None, shape=None,
                     argnums: int | Sequence[int] = 0, process: tuple[int, int] | str | None = None,
                     output: str = "values", mode: str = "forward", progress=None) -> BlockedJacobian:
    """Prepare the Jacobian of ``f`` at the shapes of ``args`` for evaluation from row blocks (module docstring).

    ``blocks``: the pattern as row blocks — a shard directory (:func:`~stablehlo_sparsity.analysis.streaming.
    write_pattern_shards`), a callable returning ``(r0, csr_block)`` pairs in row order, or a list of them; read
    again at every evaluation.  ``coloring``: a column :class:`Coloring` of the pattern (e.g. from
    :func:`~stablehlo_sparsity.coloring.color_columns_streamed`); computed from this process's blocks when not
    given.  ``process``: ``(i, P)`` or ``"jax"`` for process ``i``'s rows
    (:func:`~stablehlo_sparsity.analysis.streaming.process_rows`), ``None`` for every row.  ``output``: ``"values"`` or
    ``"scipy"``.  ``mode``: only ``"forward"`` (JVPs) is covered.  ``shape``: the Jacobian's ``(m, n)``, checked
    against ``f`` when given.  The differentiated arguments (``argnums``) are flattened and concatenated as
    :func:`~stablehlo_sparsity.jacobian_sparsity` numbers columns, and so are ``f``'s outputs for rows.

    Raises:
        InputError: ``mode`` other than ``"forward"``, an unknown ``output``, an ``f`` that is not callable or
            whose outputs are not real floating point, no argument to differentiate, a differentiated argument
            that is not real floating point, a ``shape`` that does not match ``f``, a bad ``process``, ``blocks``
            that are not a shard directory, a callable or a list (or a one-shot iterator), row blocks that are
            malformed, leave a gap or do not cover the rows, or a ``coloring`` that is not a column coloring of
            the pattern's size (also when the blocks are read at an evaluation); its subclass ``LoweringError``
            when JAX cannot trace ``f`` with these arguments.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> f = lambda x: x[1:] * x[:-1]
        >>> blocks = list(ss.jacobian_sparsity_blocks(f, jnp.ones(5), rows_per_block=2))
        >>> bj = ss.blocked_jacobian(f, jnp.ones(5), blocks=blocks, output="scipy")
        >>> bj(jnp.arange(5.0)).toarray().tolist()
        [[1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0, 0.0], [0.0, 0.0, 3.0, 2.0, 0.0], [0.0, 0.0, 0.0, 4.0, 3.0]]
    """
    if mode != "forward":
        raise InputError(f"blocked_jacobian evaluates JVPs only (mode='forward'), got mode={mode!r}: reverse mode "
                         "and Hessians from row blocks are not covered")
    return BlockedJacobian(f, args, blocks, shape, coloring, argnums, process, output, progress)

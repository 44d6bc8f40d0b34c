"""How the compressed program evaluates its products and writes the nonzeros: the evaluation strategies.

A prepared sparse Jacobian or Hessian needs ``K`` products (JVPs over column colors, VJPs over row colors,
Hessian-vector products over star/acyclic colors) and reads every nonzero from one entry of one product.
How those products are laid out in the XLA program decides the cost once the problem leaves the cache:

``"vmap"``
    All products in one ``jax.vmap`` over the stacked seeds, then one static gather from the stacked
    ``K × L`` products into the CSR order.  One kernel per operation of ``f``, shared primal work, the
    shortest compilation — and the best choice while ``K × (n + m)`` values stay small.  Beyond that the
    batched intermediates (``K`` times each of ``f``'s) are written and read once each, and on the CPU
    backend a batched concatenate along the minor axis (a ``jnp.roll``, the ``jnp.concatenate`` of the
    outputs) is not fused but materialized: the cost per product grows to several primal evaluations.

``"unrolled"``
    One product per color, each in its own kernels, decompressed straight into the result: a static gather
    reads from each product only the entries the pattern needs, and XLA fuses the product's elementwise
    work into that gather, so a product is evaluated only where it is read and is never written out in
    full.  The seeds are compile-time constants (one color each), so XLA folds the product's linear part —
    a stencil's Laplacian of the seed — at compile time.  Up to :data:`GROUP` products are decompressed by
    one gather (the CPU backend fuses a concatenate of at most 8 operands into its consumer); more are
    written group by group into the result, at ascending positions.  The program grows with ``K``, and so
    does the first compilation.

``"loop"``
    A ``lax.fori_loop`` over chunks of ``chunk_size`` colors (``vmap`` inside a chunk), each chunk's
    nonzeros written into the result carried by the loop: the smallest program and the least memory
    (one chunk of products at a time, after one linearization or VJP), for very many colors.  The seeds
    are built in the loop from the color vector, so nothing about them is folded at compile time.

``"auto"`` takes ``"vmap"`` while the stacked seeds and products fit in :data:`VMAP_BYTES`, ``"unrolled"``
up to :data:`UNROLL_PRODUCTS` products and ``"loop"`` beyond.  Every strategy computes the same products with
the same seeds, so the values agree to rounding (XLA may fuse the arithmetic differently).

Index arrays (which product and which entry each nonzero reads, where each group lands) are NumPy arrays
computed once at preparation and embedded in the program as constants: a call copies none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from .errors import InputError

__all__ = ["STRATEGIES", "VMAP_BYTES", "UNROLL_PRODUCTS", "GROUP", "EvaluationPlan", "Side", "choose_strategy",
           "static_gather", "seed_leaves", "colors_constant"]

#: The evaluation strategies (see the module docstring).
STRATEGIES = ("auto", "vmap", "unrolled", "loop")

#: ``"auto"`` batches all products with ``vmap`` while ``K × (seed length + product length) × itemsize`` is at
#: most this many bytes (about the size of a core's L2 cache: the batched intermediates stay close).
VMAP_BYTES = 1 << 20

#: ``"auto"`` unrolls one product per color up to this many products, and loops beyond (each unrolled
#: product adds its own kernels to the program, and seconds of compilation for large problems).
UNROLL_PRODUCTS = 64

#: Products decompressed by one gather in the ``"unrolled"`` strategy: the CPU backend fuses a concatenate of
#: at most 8 operands into its consumer (``kMaxConcatenateArguments`` in XLA's CPU instruction fusion), so
#: the gather then reads each product's entries straight from the fused product code.
GROUP = 8

#: ``"loop"`` chunks hold about this many bytes of seeds and products (at least one color per chunk).
LOOP_CHUNK_BYTES = 4 << 20


def static_gather(flat, idx):
    """``flat[idx]`` for a constant in-bounds ``idx`` (a NumPy array): one ``stablehlo.gather`` with no index
    normalization (the decompression step)."""
    from jax import lax

    idx = np.asarray(idx)
    if idx.dtype.kind != "i" or (idx.dtype.itemsize > 4 and flat.shape[0] < 2**31 - 1):
        idx = idx.astype(np.int32 if flat.shape[0] < 2**31 - 1 else np.int64)
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    return lax.gather(flat, idx[:, None], dn, slice_sizes=(1,), mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def _color_dtype(k: int):
    """The narrowest signed integer that holds colors ``-1 … k - 1`` (a compact color constant)."""
    return np.int8 if k < 2**7 else np.int16 if k < 2**15 else np.int32


def _leaf_layout(shapes):
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    offsets = [int(o) for o in np.cumsum([0] + sizes[:-1])] if sizes else []
    return sizes, offsets


def colors_constant(colors: np.ndarray, k: int, shapes):
    """The color vector split per seed leaf, as compact integer constants of the traced program (made once
    per trace and shared by every seed built from them)."""
    import jax.numpy as jnp

    sizes, offs = _leaf_layout(shapes)
    dt = _color_dtype(k)
    return [jnp.asarray(colors[o:o + sz].astype(dt)) for sz, o in zip(sizes, offs)]


def seed_leaves(colors: np.ndarray, k: int, shapes, dtypes, *, first=0, count: int | None = None,
                constant: bool = False, color_consts=None) -> list:
    """Per-leaf seeds ``(count, *leaf.shape)`` of the one-hot rows ``S[i, v] = [colors[v] == first + i]``.

    ``constant``: literal 0/1 arrays (``first`` must then be a Python int); otherwise the seeds are computed
    in the program from the (compact) color constants, and ``first`` may be traced (the loop strategy).
    Colors ``-1`` (in no seed, as in bidirectional colorings) and colors beyond ``k`` give zero seeds."""
    import jax.numpy as jnp

    count = k if count is None else count
    sizes, offs = _leaf_layout(shapes)
    if constant:
        out = []
        for sh, sz, o, dt in zip(shapes, sizes, offs, dtypes):
            seg = np.zeros((count, sz), dtype=dt)
            cseg = colors[o:o + sz].astype(np.int64) - int(first)
            on = np.flatnonzero((cseg >= 0) & (cseg < count))
            seg[cseg[on], on] = 1
            out.append(seg.reshape((count,) + tuple(sh)))
        return out
    if color_consts is None:
        color_consts = colors_constant(colors, k, shapes)
    cdt = _color_dtype(k)
    if isinstance(first, (int, np.integer)):
        which = (jnp.arange(count, dtype=np.int32) + int(first))
    else:
        which = jnp.arange(count, dtype=np.int32) + first.astype(np.int32)
    out = []
    for sh, cc, dt in zip(shapes, color_consts, dtypes):
        w = which.astype(cdt) if k + count < 2 ** (8 * np.dtype(cdt).itemsize - 1) else which
        cmp = cc[None, :] == w[:, None] if w.dtype == cc.dtype else cc[None, :].astype(np.int32) == w[:, None]
        out.append(cmp.astype(dt).reshape((count,) + tuple(sh)))
    return out


@dataclass
class Side:
    """One family of products: ``k`` colors of the seed space (``colors``, one per seed element, ``-1`` for
    none), each product a vector of ``length`` (the flattened output for JVPs and HVPs' gradients, the
    flattened input for VJPs)."""

    colors: np.ndarray
    k: int
    length: int

    @property
    def seed_size(self) -> int:
        return len(self.colors)


def choose_strategy(strategy: str, sides: Sequence[Side], itemsize: int, chunk_size: int | None = None) -> str:
    """The strategy ``"auto"`` stands for (see the module docstring); others are checked and returned."""
    if strategy not in STRATEGIES:
        raise InputError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if chunk_size is not None and (not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1):
        raise InputError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    if strategy != "auto":
        return strategy
    products = sum(s.k for s in sides)
    batched = sum(s.k * (s.length + s.seed_size) for s in sides) * itemsize
    if products <= 1 or batched <= VMAP_BYTES:
        return "vmap"
    return "unrolled" if products <= UNROLL_PRODUCTS else "loop"


class EvaluationPlan:
    """The static index arrays of one strategy, from ``source``: for each nonzero (CSR order) its flat index
    into the stacked products (the sides' blocks ``k × length`` one after another), as
    :class:`~stablehlo_sparsity.coloring.DecompressionPlan` lays them out.  ``source=None``: the caller
    decompresses the stacked products itself (substitution); the plan then only computes them."""

    def __init__(self, sides: Sequence[Side], source: np.ndarray | None, strategy: str,
                 chunk_size: int | None = None, itemsize: int = 8):
        self.sides = list(sides)
        self.strategy = choose_strategy(strategy, self.sides, itemsize, chunk_size)
        starts = [0]
        for s in self.sides:
            starts.append(starts[-1] + s.k * s.length)
        self.block_starts = starts
        self.source = None if source is None else np.asarray(source, dtype=np.int64)
        self.nnz = 0 if source is None else len(self.source)
        self.chunk_sizes = []
        for s in self.sides:
            if chunk_size is not None:
                cs = int(chunk_size)
            else:
                cs = max(1, LOOP_CHUNK_BYTES // max(1, (s.length + s.seed_size) * itemsize))
            self.chunk_sizes.append(max(1, min(cs, max(s.k, 1))))
        if self.source is not None and self.strategy in ("unrolled", "loop"):
            self._split_by_product()

    # ------------------------------------------------------------------ static tables
    def _split_by_product(self):
        """Which product (side, color) and which entry of it each nonzero reads, grouped by product."""
        src = self.source
        side_of = np.searchsorted(np.asarray(self.block_starts[1:]), src, side="right")
        self.side_of = side_of
        lengths = np.asarray([max(s.length, 1) for s in self.sides], dtype=np.int64)
        local = src - np.asarray(self.block_starts, dtype=np.int64)[side_of]
        self.color_of = local // lengths[side_of]
        self.entry_of = local % lengths[side_of]

    def products(self):
        """``(side index, color)`` of every product, in stacked order."""
        return [(i, c) for i, s in enumerate(self.sides) for c in range(s.k)]

    def unrolled_tables(self):
        """Per group of at most :data:`GROUP` products: ``(members, entries, order, positions)`` — the products
        ``(side, color)``, per product the entries it gives (ascending CSR position), the permutation from
        the concatenated pieces to ascending position, and those positions."""
        if getattr(self, "_unrolled", None) is not None:
            return self._unrolled
        key = self.side_of.astype(np.int64) * (max(s.k for s in self.sides) + 1) + self.color_of
        order = np.argsort(key, kind="stable")  # by product, then CSR position
        prods = [(i, c) for i, c in self.products()]
        pkeys = np.asarray([i * (max(s.k for s in self.sides) + 1) + c for i, c in prods], dtype=np.int64)
        bounds = np.searchsorted(key[order], np.concatenate([pkeys, [np.iinfo(np.int64).max]]))
        groups = []
        live = [(p, order[bounds[j]:bounds[j + 1]]) for j, p in enumerate(prods) if bounds[j + 1] > bounds[j]]
        for g in range(0, len(live), GROUP):
            members = live[g:g + GROUP]
            positions = np.concatenate([pos for _, pos in members])
            perm = np.argsort(positions, kind="stable")
            entries = [self.entry_of[pos] for _, pos in members]
            groups.append(([p for p, _ in members], entries, perm, positions[perm]))
        self._unrolled = groups
        return groups

    def loop_tables(self, side: int):
        """For the loop over chunks of side ``side``: ``(chunks, chunk size, sources, positions)`` — per chunk,
        padded to the longest, the flat index into the chunk's stacked products and the CSR position
        (``nnz``: padding, dropped by the scatter)."""
        s = self.sides[side]
        cs = self.chunk_sizes[side]
        nch = -(-s.k // cs)
        mine = np.flatnonzero(self.side_of == side)
        chunk = self.color_of[mine] // cs
        order = np.argsort(chunk, kind="stable")
        mine, chunk = mine[order], chunk[order]
        bounds = np.searchsorted(chunk, np.arange(nch + 1))
        width = max(1, int(np.diff(bounds).max(initial=0)))
        t = np.int32 if max(self.nnz, cs * s.length) < 2**31 - 1 else np.int64
        src = np.zeros((nch, width), t)
        pos = np.full((nch, width), self.nnz, t)
        for j in range(nch):
            sel = mine[bounds[j]:bounds[j + 1]]
            src[j, :len(sel)] = (self.color_of[sel] - j * cs) * s.length + self.entry_of[sel]
            pos[j, :len(sel)] = sel
        return nch, cs, src, pos

    # ------------------------------------------------------------------ the program
    def stacked(self, apply: Sequence[Callable], seeds: Sequence[Callable], dtype,
                linear: Sequence[Callable] | None = None):
        """``(flat, primal)``: the stacked products (every side's ``k × length`` block, one after another,
        flattened) computed by the plan's strategy, and the primal part of the first product.

        ``apply[i](seed_tree) -> (primal, product)`` is side ``i``'s product for one seed (``primal`` rides along
        unbatched: ``f(x)`` and aux for JVPs, ``None`` for VJPs); ``seeds[i](first, count, constant)`` its seed
        tree with a leading axis of ``count`` colors (``constant=None``: the caller's choice);
        ``linear[i](seed_tree) -> product`` an optional cheaper product for the loop strategy (a linearized
        ``f`` or a VJP closure: the primal work done once, outside the loop)."""
        import jax
        import jax.numpy as jnp

        blocks, primal = [], None
        for i, s in enumerate(self.sides):
            if s.k == 0:
                continue
            if self.strategy == "vmap":
                p, b = jax.vmap(apply[i], out_axes=(None, 0))(seeds[i](0, s.k, None))
                blocks.append(jnp.ravel(b))
            elif self.strategy == "unrolled":
                p = None
                for c in range(s.k):
                    pc, b = apply[i](_first(seeds[i](c, 1, None)))
                    p = pc if c == 0 else p
                    blocks.append(jnp.ravel(b))
            else:
                cs = self.chunk_sizes[i]
                fn = _linear_or(apply[i], None if linear is None else linear[i])

                def body(carry, j, fn=fn, i=i, cs=cs):
                    return carry, jax.vmap(fn)(seeds[i](j * cs, cs, False))

                _, out = jax.lax.scan(body, None, jnp.arange(-(-s.k // cs)))
                blocks.append(jnp.ravel(out)[: s.k * s.length])
                p = None
            primal = p if primal is None else primal
        if not blocks:
            return jnp.zeros((0,), dtype), primal
        blocks = [b.astype(dtype) for b in blocks]
        return (jnp.concatenate(blocks) if len(blocks) > 1 else blocks[0]), primal

    def values(self, apply: Sequence[Callable], seeds: Sequence[Callable], dtype,
               linear: Sequence[Callable] | None = None):
        """``(values, primal)``: the nonzeros in CSR order and the primal part of the first product (``None``
        for the loop strategy: the caller has it from its linearization).  Arguments as :meth:`stacked`."""
        import jax
        import jax.numpy as jnp

        if self.strategy == "vmap" or self.nnz == 0:
            flat, primal = self.stacked(apply, seeds, dtype)
            if self.nnz == 0:
                return jnp.zeros((0,), dtype), primal
            return static_gather(flat, self.source), primal
        if self.strategy == "unrolled":
            return self._unrolled_values(apply, seeds, dtype)
        vals = jnp.zeros((self.nnz,), dtype)
        for i, s in enumerate(self.sides):
            if s.k == 0 or not (self.side_of == i).any():
                continue
            nch, cs, src, pos = self.loop_tables(i)
            fn = _linear_or(apply[i], None if linear is None else linear[i])
            src_c, pos_c = jnp.asarray(src), jnp.asarray(pos)

            def body(j, acc, fn=fn, i=i, cs=cs, src_c=src_c, pos_c=pos_c):
                comp = jnp.ravel(jax.vmap(fn)(seeds[i](j * cs, cs, False))).astype(dtype)
                return acc.at[pos_c[j]].set(comp[src_c[j]], mode="drop", indices_are_sorted=True,
                                            unique_indices=True)

            vals = jax.lax.fori_loop(0, nch, body, vals)
        return vals, None

    def _unrolled_values(self, apply, seeds, dtype):
        import jax.numpy as jnp

        groups = self.unrolled_tables()
        out, primal = None, None
        for members, entries, perm, positions in groups:
            pieces = []
            for (i, c), ent in zip(members, entries):
                p, prod = apply[i](_first(seeds[i](c, 1, None)))
                primal = p if primal is None else primal
                pieces.append(static_gather(jnp.ravel(prod).astype(dtype), ent))
            vals = pieces[0] if len(pieces) == 1 else static_gather(jnp.concatenate(pieces), perm)
            if len(groups) == 1:
                return vals, primal
            if out is None:
                out = jnp.zeros((self.nnz,), dtype)
            idx = positions.astype(np.int32 if self.nnz < 2**31 - 1 else np.int64)
            out = out.at[idx].set(vals, indices_are_sorted=True, unique_indices=True, mode="promise_in_bounds")
        return out, primal


    # ------------------------------------------------------------------ spread over devices
    def _shard_tables(self, side: int, devices: int):
        """Per device (padded to the longest): the flat index into that device's stacked products of side
        ``side`` (its ``ceil(k / devices)`` consecutive colors) and the CSR position (``nnz``: padding)."""
        key = (side, devices)
        cache = self.__dict__.setdefault("_shard_cache", {})
        if key in cache:
            return cache[key]
        if getattr(self, "side_of", None) is None:
            self._split_by_product()
        s = self.sides[side]
        kb = -(-s.k // devices)
        mine = np.flatnonzero(self.side_of == side)
        dev = self.color_of[mine] // kb
        order = np.argsort(dev, kind="stable")
        mine, dev = mine[order], dev[order]
        bounds = np.searchsorted(dev, np.arange(devices + 1))
        width = max(1, int(np.diff(bounds).max(initial=0)))
        t = np.int32 if max(self.nnz, kb * s.length) < 2**31 - 1 else np.int64
        src = np.zeros((devices, width), t)
        pos = np.full((devices, width), self.nnz, t)
        for d in range(devices):
            sel = mine[bounds[d]:bounds[d + 1]]
            src[d, :len(sel)] = (self.color_of[sel] - d * kb) * s.length + self.entry_of[sel]
            pos[d, :len(sel)] = sel
        cache[key] = (kb, src, pos)
        return cache[key]

    def sharded_values(self, apply, seeds, dtype, axis: str, devices: int):
        """``(values, primal)`` inside ``shard_map`` over ``axis`` (``devices`` devices): each device evaluates
        its block of consecutive colors (``vmap``), writes the nonzeros they give into a zero vector, and one
        ``psum`` adds the disjoint parts — every nonzero comes from exactly one product, so the sum is exact."""
        import jax
        import jax.numpy as jnp
        from jax import lax

        if self.nnz == 0:
            return jnp.zeros((0,), dtype), None
        d = lax.axis_index(axis)
        acc = jnp.zeros((self.nnz,), dtype)
        primal = None
        for i, s in enumerate(self.sides):
            if s.k == 0:
                continue
            kb, src, pos = self._shard_tables(i, devices)
            p, comp = jax.vmap(apply[i], out_axes=(None, 0))(seeds[i](d * kb, kb, False))
            primal = p if primal is None else primal
            flat = jnp.ravel(comp).astype(dtype)
            acc = acc.at[jnp.asarray(pos)[d]].set(flat[jnp.asarray(src)[d]], mode="drop", indices_are_sorted=True,
                                                  unique_indices=True)
        return lax.psum(acc, axis), primal

    def sharded_stacked(self, apply, seeds, dtype, axis: str, devices: int):
        """``(flat stacked products, primal)`` inside ``shard_map``: each device its block of colors, then one
        ``all_gather`` (for decompressions that need every product, such as substitution)."""
        import jax
        import jax.numpy as jnp
        from jax import lax

        blocks, primal = [], None
        for i, s in enumerate(self.sides):
            if s.k == 0:
                continue
            kb = -(-s.k // devices)
            d = lax.axis_index(axis)
            p, comp = jax.vmap(apply[i], out_axes=(None, 0))(seeds[i](d * kb, kb, False))
            primal = p if primal is None else primal
            every = lax.all_gather(comp.astype(dtype), axis, tiled=True)
            blocks.append(jnp.ravel(every)[: s.k * s.length])
        if not blocks:
            return jnp.zeros((0,), dtype), primal
        return (jnp.concatenate(blocks) if len(blocks) > 1 else blocks[0]), primal


def _linear_or(apply, linear):
    """The product function of the loop body: ``linear`` when given, else ``apply``'s product part."""
    return linear if linear is not None else (lambda t: apply(t)[1])


def _first(tree):
    """The one seed of a tree with a leading axis of one color."""
    import jax

    return jax.tree_util.tree_map(lambda a: a[0], tree)

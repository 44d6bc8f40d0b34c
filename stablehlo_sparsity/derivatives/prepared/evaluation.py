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

``"auto"`` takes ``"vmap"`` for JVPs (HVPs) while one product and its seed fit in
:data:`VMAP_PRODUCT_BYTES` (:data:`VMAP_HVP_BYTES`), ``"unrolled"`` beyond up to :data:`UNROLL_PRODUCTS` products
and :data:`UNROLL_BYTES` of seeds and products, and ``"loop"`` for more; VJPs stay batched (``"vmap"``: they
share one forward pass and read its residuals once for the whole batch) up to :data:`VJP_VMAP_BYTES`.  Every
strategy computes the same products with the same seeds, so the values agree to rounding (XLA may fuse the
arithmetic differently).

Index arrays (which product and which entry each nonzero reads, where each group lands) are NumPy arrays
computed once at preparation.  Up to :data:`INDEX_ARGUMENT_ENTRIES` nonzeros they are embedded in the program as
constants (a call copies none of them); beyond, they are arguments of the compiled program, held on the device by
the prepared object (:meth:`EvaluationPlan.index_tables`, bound while tracing by :meth:`EvaluationPlan.bound`):
a billion-nonzero program cannot embed gigabytes of constants, and XLA would copy them into the executable.
The same indices reach the same gathers and scatters either way, so the values are equal bit for bit.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence, cast

import numpy as np

from ...errors import InputError

__all__ = ["STRATEGIES", "VMAP_PRODUCT_BYTES", "VMAP_HVP_BYTES", "VJP_VMAP_BYTES", "UNROLL_PRODUCTS", "UNROLL_BYTES",
           "GROUP", "INDEX_ARGUMENT_ENTRIES", "PER_DEVICE", "ROW_METHODS", "RowBlocks", "EvaluationPlan", "Side",
           "choose_strategy", "static_gather", "gather_index", "seed_leaves", "colors_constant", "color_dtype"]

#: The evaluation strategies (see the module docstring).
STRATEGIES = ("auto", "vmap", "unrolled", "loop")

#: ``"auto"`` batches JVPs and HVPs with ``vmap`` while one product and its seed take at most this many bytes
#: (``(n + m) × itemsize``); beyond, one product per color (measured on the 2-D Brusselator: ``vmap`` ahead up to
#: N = 128, ``unrolled`` from N = 256 on, for Jacobians and Hessians alike).
VMAP_PRODUCT_BYTES = 1 << 20

#: The same for Hessian-vector products, whose batched program shares the gradient's forward and backward
#: passes (measured: ``vmap`` ahead up to N = 256, ``unrolled`` at N = 512).
VMAP_HVP_BYTES = 4 << 20

#: ``"auto"`` unrolls at most this many bytes of seeds and products (``K × (n + length) × itemsize``): XLA
#: folds every unrolled seed through the product's linear part, and the folded constants (and the memory of
#: the compilation) grow with them; beyond, ``"loop"``.
UNROLL_BYTES = 512 << 20

#: ``"auto"`` batches VJPs with ``vmap`` while all seeds and products take at most this many bytes, and loops
#: over chunks of colors beyond (bounded memory).
VJP_VMAP_BYTES = 1 << 30

#: ``"auto"`` unrolls one product per color up to this many products, and loops beyond (each unrolled
#: product adds its own kernels to the program, and seconds of compilation for large problems).
UNROLL_PRODUCTS = 64

#: Products decompressed by one gather in the ``"unrolled"`` strategy: the CPU backend fuses a concatenate of
#: at most 8 operands into its consumer (``kMaxConcatenateArguments`` in XLA's CPU instruction fusion), so
#: the gather then reads each product's entries straight from the fused product code.
GROUP = 8

#: Literal seeds with more entries than this are stored as bytes and converted in the program.
COMPACT_SEED_ENTRIES = 1 << 16

#: Plans with more nonzeros than this take their index arrays as arguments of the compiled program instead of
#: constants (read when the plan is made).  Constants are copied into the module, the HLO and the executable
#: (4 bytes per nonzero each).  Measured (``benchmarks/distributed.py --index``, docs/benchmarks/scaling.md): at
#: 2.9–3.1 M
#: nonzeros arguments already take 60–75 MiB less peak memory, with the first call slower or faster by turns;
#: at 12.6 M they win both (−156 MiB, first call 13.3 s against 14.5 s); the warm call is the same.
INDEX_ARGUMENT_ENTRIES = 1 << 22

#: Prefix of the per-device index tables of a sharded plan (one row per device of the mesh).
PER_DEVICE = "device."

#: ``"loop"`` chunks hold about this many bytes of seeds and products (at least one color per chunk).
LOOP_CHUNK_BYTES = 4 << 20


def gather_index(idx, length: int) -> np.ndarray:
    """``idx`` (NumPy) in the integer type the decompression gathers into a vector of ``length`` use."""
    idx = np.asarray(idx)
    if idx.dtype.kind != "i" or (idx.dtype.itemsize > 4 and length < 2**31 - 1):
        idx = idx.astype(np.int32 if length < 2**31 - 1 else np.int64)
    return idx


def static_gather(flat, idx):
    """``flat[idx]`` for an in-bounds ``idx`` — a NumPy array (a constant of the program) or an index array
    passed as an argument (already in :func:`gather_index`'s type): one ``stablehlo.gather`` with no index
    normalization (the decompression step)."""
    from jax import lax

    if isinstance(idx, (np.ndarray, list, tuple)):
        idx = gather_index(idx, flat.shape[0])
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    return lax.gather(flat, idx[:, None], dn, slice_sizes=(1,), mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def color_dtype(k: int):
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
    dt = color_dtype(k)
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
            # Small seeds are literal in their own dtype (readable in the StableHLO text); larger ones are
            # 0/1 bytes converted in the program, which XLA folds at compile time just the same, with an
            # eighth of the module size.
            compact = count * sz > COMPACT_SEED_ENTRIES
            seg = np.zeros((count, sz), dtype=np.uint8 if compact else dt)
            cseg = colors[o:o + sz].astype(np.int64) - int(first)
            on = np.flatnonzero((cseg >= 0) & (cseg < count))
            seg[cseg[on], on] = 1
            seg = seg.reshape((count,) + tuple(sh))
            out.append(jnp.asarray(seg).astype(dt) if compact else seg)
        return out
    if color_consts is None:
        color_consts = colors_constant(colors, k, shapes)
    cdt = color_dtype(k)
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



#: How a row-sharded result is computed (see :class:`RowBlocks`): ``"scatter"`` — each device its block of colors,
#: then one ``psum_scatter`` of the values laid out by row blocks; ``"exchange"`` — each device its block of
#: colors, then one ``all_to_all`` sending every other device just the nonzeros of its rows (about ``nnz / D``
#: values per device, no ``nnz``-sized buffer); ``"local"`` — each device all colors' products, gathering its own
#: rows only (no communication).
ROW_METHODS = ("scatter", "exchange", "local")


@dataclass(frozen=True)
class RowBlocks:
    """The rows of the result split into ``devices`` blocks of ``ceil(m / devices)`` consecutive rows (the last
    ones shorter or empty): block ``d`` holds rows ``row_bounds[d] … row_bounds[d + 1] - 1``, i.e. the nonzeros
    ``nnz_bounds[d] … nnz_bounds[d + 1] - 1`` in CSR order.  A row-sharded result is a ``(devices, width)``
    array whose row ``d`` holds block ``d``'s nonzeros followed by zeros (``width``: the longest block)."""

    row_bounds: np.ndarray
    nnz_bounds: np.ndarray
    width: int

    @classmethod
    def of(cls, indptr: np.ndarray, devices: int) -> "RowBlocks":
        m = len(indptr) - 1
        per = -(-m // devices) if m else 0
        rows = np.minimum(np.arange(devices + 1, dtype=np.int64) * per, m)
        nnz = np.asarray(indptr, dtype=np.int64)[rows]
        return cls(rows, nnz, max(1, int(np.diff(nnz).max(initial=0))))

    @property
    def devices(self) -> int:
        return len(self.row_bounds) - 1

    @property
    def counts(self) -> np.ndarray:
        """The nonzeros of each block."""
        return np.diff(self.nnz_bounds)

    def slots(self) -> np.ndarray:
        """For each nonzero (CSR order) its index in the flattened ``(devices, width)`` layout."""
        nnz = int(self.nnz_bounds[-1])
        block = np.repeat(np.arange(self.devices, dtype=np.int64), self.counts)
        return block * self.width + np.arange(nnz, dtype=np.int64) - self.nnz_bounds[block]

    def values(self, padded) -> np.ndarray:
        """The nonzeros in CSR order from the ``(devices, width)`` layout (NumPy)."""
        padded = np.asarray(padded)
        return np.concatenate([padded[d, :c] for d, c in enumerate(self.counts)]) if self.devices else padded


@dataclass
class Side:
    """One family of products: ``k`` colors of the seed space (``colors``, one per seed element, ``-1`` for
    none), each product a vector of ``length`` (the flattened output for JVPs, the flattened input for VJPs
    and Hessian-vector products).  ``kind``: ``"jvp"``, ``"vjp"`` or ``"hvp"``."""

    colors: np.ndarray
    k: int
    length: int
    kind: str = "jvp"

    @property
    def seed_size(self) -> int:
        return len(self.colors)


def choose_strategy(strategy: str, sides: Sequence[Side], itemsize: int, chunk_size: int | None = None) -> str:
    """The strategy ``"auto"`` stands for (see the module docstring); others are checked and returned."""
    if strategy not in STRATEGIES:
        raise InputError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if chunk_size is not None and (not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1):
        raise InputError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    return _auto_strategy(sides, itemsize) if strategy == "auto" else strategy


def _auto_strategy(sides: Sequence[Side], itemsize: int) -> str:
    """What ``"auto"`` takes for ``sides`` (see the module docstring)."""
    products = sum(s.k for s in sides)
    live = [s for s in sides if s.k]
    if products <= 1 or not live:
        return "vmap"
    per_product = max((s.length + s.seed_size) * itemsize for s in live)
    batched = sum(s.k * (s.length + s.seed_size) for s in live) * itemsize
    if all(s.kind == "vjp" for s in live):
        # VJPs share one forward pass and read its residuals once for the whole batch; unrolled, every
        # product re-reads them (measured: vmap ahead at every size up to 2·1024² inputs).
        return "vmap" if batched <= VJP_VMAP_BYTES else "loop"
    limit = VMAP_HVP_BYTES if all(s.kind == "hvp" for s in live) else VMAP_PRODUCT_BYTES
    if per_product <= limit:
        return "vmap"
    # Unrolled products are specialized at compile time (XLA folds each seed's linear part into constants of
    # the product's size): beyond UNROLL_BYTES that costs more compile time and memory than it saves.
    return "unrolled" if products <= UNROLL_PRODUCTS and batched <= UNROLL_BYTES else "loop"


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
        # int32 while the stacked products have fewer than 2^31 entries: at a billion nonzeros every byte per
        # nonzero of a kept table is a gigabyte
        t = np.int32 if starts[-1] < 2**31 - 1 else np.int64
        self.source = None if source is None else np.asarray(source).astype(t, copy=False)
        self.nnz = 0 if source is None else len(cast(np.ndarray, self.source))
        self.chunk_sizes = []
        for s in self.sides:
            if chunk_size is not None:
                cs = int(chunk_size)
            else:
                cs = max(1, LOOP_CHUNK_BYTES // max(1, (s.length + s.seed_size) * itemsize))
            self.chunk_sizes.append(max(1, min(cs, max(s.k, 1))))
        # unrolled steps: one color each unless a chunk size was asked for
        self._unroll_sizes = [max(1, min(int(chunk_size or 1), max(s.k, 1))) for s in self.sides]
        if self.source is not None and _EVALUATORS[self.strategy].splits:
            self._split_by_product()
        #: the index arrays are arguments of the program rather than constants (see the module docstring)
        self.index_arguments = self.nnz > INDEX_ARGUMENT_ENTRIES
        self._bound: dict | None = None
        #: a row-sharded result: the row blocks and the method (``None``: replicated; see :meth:`shard_rows`)
        self.rows: RowBlocks | None = None
        self.row_method = "scatter"

    def shard_rows(self, indptr: np.ndarray, devices: int, method: str) -> None:
        """Make the sharded program return each device's block of rows (:class:`RowBlocks` of the CSR
        ``indptr``) instead of the replicated values, computed by ``method`` (one of :data:`ROW_METHODS`)."""
        if method not in ROW_METHODS:
            raise InputError(f"row method must be one of {', '.join(ROW_METHODS)}, got {method!r}")
        if self.source is None:
            raise InputError("a row-sharded result needs direct decompression: decompression by substitution "
                             "(sparse_hessian mode='substitution') reads every product on every device")
        self.rows, self.row_method = RowBlocks.of(indptr, devices), method
        self.__dict__.pop("_shard_cache", None)

    # ------------------------------------------------------------------ index arrays: constants or arguments
    def index_tables(self, devices: int | None = None) -> dict[str, np.ndarray]:
        """Every index array the program of this plan reads, by name, in the integer type the program uses:
        on one device (``devices=None``) for the plan's strategy, else for ``devices`` devices of a mesh.
        Names starting with :data:`PER_DEVICE` have one row per device (shard them over the mesh's axis: each
        device needs its own row only); the others are read whole by every device."""
        if self.nnz == 0:
            return {}
        if devices is not None:
            return self._row_evaluator().tables(self, devices)
        return _EVALUATORS[self.strategy].tables(self)

    @contextmanager
    def bound(self, tables: dict | None) -> Iterator[None]:
        """While tracing, read the index arrays from ``tables`` (the program's arguments, as
        :meth:`index_tables` names them; per-device tables as this device's one row) instead of constants."""
        previous, self._bound = self._bound, (tables or None)
        try:
            yield
        finally:
            self._bound = previous

    def _table(self, name: str, constant):
        """The index array ``name``: the bound argument while :meth:`bound` is active, else ``constant``."""
        if self._bound is not None and name in self._bound:
            return self._bound[name]
        return constant

    # ------------------------------------------------------------------ static tables
    def _split_by_product(self):
        """Which product (side, color) and which entry of it each nonzero reads, grouped by product."""
        src = self.source
        # the narrowest types that hold them (one or two sides; colors and entries below 2^31 but in huge cases)
        side_of = np.searchsorted(np.asarray(self.block_starts[1:]), src, side="right").astype(np.int8)
        self.side_of = side_of
        lengths = np.asarray([max(s.length, 1) for s in self.sides], dtype=np.int64)
        local = src - np.asarray(self.block_starts, dtype=np.int64)[side_of]
        small = max((max(s.k, s.length) for s in self.sides), default=0) < 2**31 - 1
        self.color_of = (local // lengths[side_of]).astype(np.int32 if small else np.int64)
        self.entry_of = (local % lengths[side_of]).astype(np.int32 if small else np.int64)

    def products(self):
        """``(side index, color)`` of every product, in stacked order."""
        return [(i, c) for i, s in enumerate(self.sides) for c in range(s.k)]

    def unrolled_chunks(self):
        """``(side index, first color, count)`` of every unrolled step: one color each, or ``chunk_size``
        consecutive colors batched with ``vmap`` when a chunk size was asked for."""
        return [(i, c, min(cs, s.k - c)) for i, (s, cs) in enumerate(zip(self.sides, self._unroll_sizes))
                for c in range(0, s.k, cs)]

    def unrolled_tables(self):
        """Per group of products: ``(members, entries, order, positions)`` — the products ``(side, color)``, per
        product the entries it gives (ascending CSR position), and the gather from the concatenated pieces
        to the group's values at ``positions``.

        With at most :data:`GROUP` products there is one group and it writes the result.  With more, the first
        group holds the ``GROUP - 1`` products with the most nonzeros plus a zero (the concatenate stays
        fusible) and writes the whole result — zeros where other groups' nonzeros go, ``positions=None`` —
        and the others are scattered into it in place, at ascending positions."""
        if getattr(self, "_unrolled", None) is not None:
            return self._unrolled
        width = max(s.k for s in self.sides) + 1
        sizes = np.asarray(self._unroll_sizes, dtype=np.int64)
        lengths = np.asarray([s.length for s in self.sides], dtype=np.int64)
        step = self.color_of // sizes[self.side_of]
        key = self.side_of.astype(np.int64) * width + step
        # entry within the step's stacked products (one color: the product itself)
        entry = (self.color_of % sizes[self.side_of]) * lengths[self.side_of] + self.entry_of
        order = np.argsort(key, kind="stable")  # by step, then CSR position
        prods = self.unrolled_chunks()
        pkeys = np.asarray([i * width + c // sizes[i] for i, c, _ in prods], dtype=np.int64)
        bounds = np.searchsorted(key[order], np.concatenate([pkeys, [np.iinfo(np.int64).max]]))
        live = [(p, order[bounds[j]:bounds[j + 1]]) for j, p in enumerate(prods) if bounds[j + 1] > bounds[j]]
        if len(live) <= GROUP:
            chunks = [live]
        else:
            by_size = sorted(range(len(live)), key=lambda j: -len(live[j][1]))
            first = sorted(by_size[:GROUP - 1])
            rest = [live[j] for j in sorted(by_size[GROUP - 1:])]
            chunks = [[live[j] for j in first]] + [rest[g:g + GROUP] for g in range(0, len(rest), GROUP)]
        groups = []
        t = np.int32 if self.nnz < 2**31 - 1 else np.int64
        for g, members in enumerate(chunks):
            positions = np.concatenate([pos for _, pos in members])
            entries = [entry[pos].astype(t) for _, pos in members]
            if g == 0 and len(chunks) > 1:
                full = np.full(self.nnz, len(positions), t)  # the zero after the pieces
                full[positions] = np.arange(len(positions), dtype=t)
                groups.append(([p for p, _ in members], entries, full, None))
                continue
            perm = np.argsort(positions, kind="stable").astype(t)
            groups.append(([p for p, _ in members], entries, perm, positions[perm].astype(t)))
        self._unrolled = groups
        return groups

    def loop_tables(self, side: int):
        """For the loop over chunks of side ``side``: ``(chunks, chunk size, sources, positions)`` — per chunk,
        padded to the longest, the flat index into the chunk's stacked products and the CSR position
        (``nnz``: padding, dropped by the scatter)."""
        cs = self.chunk_sizes[side]
        nch = -(-self.sides[side].k // cs)
        src, pos = self._color_block_tables(side, cs, nch)
        return nch, cs, src, pos

    def _color_block_tables(self, side: int, size: int, count: int):
        """The nonzeros of side ``side`` grouped by blocks of ``size`` consecutive colors (``count`` blocks):
        ``(sources, positions)``, each ``(count, longest block)`` — the flat index into the block's stacked
        products and the CSR position (``nnz``: padding, dropped by the scatter).  A loop over blocks (chunks or
        devices: few), each vectorized."""
        s = self.sides[side]
        mine = np.flatnonzero(self.side_of == side)
        block = self.color_of[mine] // size
        order = np.argsort(block, kind="stable")
        mine, block = mine[order], block[order]
        bounds = np.searchsorted(block, np.arange(count + 1))
        width = max(1, int(np.diff(bounds).max(initial=0)))
        t = np.int32 if max(self.nnz, size * s.length) < 2**31 - 1 else np.int64
        src = np.zeros((count, width), t)
        pos = np.full((count, width), self.nnz, t)
        for j in range(count):
            sel = mine[bounds[j]:bounds[j + 1]]
            src[j, :len(sel)] = (self.color_of[sel].astype(np.int64) - j * size) * s.length + self.entry_of[sel]
            pos[j, :len(sel)] = sel
        return src, pos

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
        import jax.numpy as jnp

        evaluator = _EVALUATORS[self.strategy]
        blocks, primal = [], None
        for i, s in enumerate(self.sides):
            if s.k == 0:
                continue
            p, products = evaluator.side_products(self, i, apply, seeds, linear)
            blocks.extend(products)
            primal = p if primal is None else primal
        if not blocks:
            return jnp.zeros((0,), dtype), primal
        blocks = [b.astype(dtype) for b in blocks]
        return (jnp.concatenate(blocks) if len(blocks) > 1 else blocks[0]), primal

    def values(self, apply: Sequence[Callable], seeds: Sequence[Callable], dtype,
               linear: Sequence[Callable] | None = None):
        """``(values, primal)``: the nonzeros in CSR order and the primal part of the first product (``None``
        for the loop strategy: the caller has it from its linearization).  Arguments as :meth:`stacked`."""
        import jax.numpy as jnp

        if self.nnz == 0:
            _, primal = self.stacked(apply, seeds, dtype)
            return jnp.zeros((0,), dtype), primal
        return _EVALUATORS[self.strategy].values(self, apply, seeds, dtype, linear)

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
        kb = -(-self.sides[side].k // devices)
        src, pos = self._color_block_tables(side, kb, devices)
        if self.rows is not None:
            # positions in the (devices, width) layout by row blocks; padding (nnz) past its end
            rb = self.rows
            slots = np.append(rb.slots(), rb.devices * rb.width)
            t = np.int32 if rb.devices * rb.width < 2**31 - 1 else np.int64
            pos = slots[pos].astype(t)
        cache[key] = (kb, src, pos)
        return cache[key]

    def _row_evaluator(self) -> "_RowMethod":
        """How the sharded program computes its result: the row method of a row-sharded result, else the
        replicated sum (``"scatter"``'s code with no row blocks)."""
        return _ROW_EVALUATORS[self.row_method if self.rows is not None else "scatter"]

    def sharded_values(self, apply, seeds, dtype, axis: str, devices: int):
        """``(values, primal)`` inside ``shard_map`` over ``axis`` (``devices`` devices): each device evaluates
        its block of consecutive colors (``vmap``), writes the nonzeros they give into a zero vector, and one
        ``psum`` adds the disjoint parts — every nonzero comes from exactly one product, so the sum is exact
        (row-sharded results: see :data:`ROW_METHODS`)."""
        return self._row_evaluator().values(self, apply, seeds, dtype, axis, devices)

    def _exchange_tables(self, side: int, devices: int):
        """``(send, recv)``, each ``(devices, devices, width)``: ``send[d, r]`` — the flat indices into device
        ``d``'s stacked products of side ``side`` (its block of colors) of the nonzeros in row block ``r``;
        ``recv[r, d]`` — where in row block ``r`` those values go (``width`` of the row layout: padding,
        dropped).  Vectorized: one stable sort of the side's nonzeros by (sender, row block)."""
        rb = self.rows
        assert rb is not None
        if getattr(self, "side_of", None) is None:
            self._split_by_product()
        s = self.sides[side]
        kb = -(-s.k // devices)
        mine = np.flatnonzero(self.side_of == side)
        slot = rb.slots()[mine]
        sender = self.color_of[mine].astype(np.int64) // kb
        key = sender * devices + slot // rb.width
        order = np.argsort(key, kind="stable")
        mine, slot, sender, key = mine[order], slot[order], sender[order], key[order]
        starts = np.searchsorted(key, np.arange(devices * devices + 1))
        width = max(1, int(np.diff(starts).max(initial=0)))
        rank = np.arange(len(key), dtype=np.int64) - starts[key]
        t = np.int32 if max(kb * s.length, rb.width + 1) < 2**31 - 1 else np.int64
        send = np.zeros((devices, devices, width), t)
        recv = np.full((devices, devices, width), rb.width, t)
        block = key % devices
        send[sender, block, rank] = (self.color_of[mine].astype(np.int64) - sender * kb) * s.length + \
            self.entry_of[mine]
        recv[block, sender, rank] = slot % rb.width
        return send, recv

    def _local_row_table(self) -> np.ndarray:
        """``(devices, width)``: for each device's row block, the flat index into all stacked products of each
        of its nonzeros (padding: one past the end, read as zero)."""
        rb = self.rows
        assert rb is not None and self.source is not None
        total = self.block_starts[-1]
        t = np.int32 if total < 2**31 - 1 else np.int64
        table = np.full(rb.devices * rb.width, total, t)
        table[rb.slots()] = self.source
        return table.reshape(rb.devices, rb.width)

    def _device_row(self, name: str, table: Callable[[], np.ndarray], d):
        """Device ``d``'s row of the per-device table ``name``: the one row this device was given as an
        argument, or row ``d`` of the constant ``table()`` (built only then)."""
        import jax.numpy as jnp

        bound = self._table(name, None)
        return bound[0] if bound is not None else jnp.asarray(table())[d]

    def drop_host_tables(self) -> None:
        """Forget the cached NumPy copies of the per-device tables (once they are on the devices: a constant
        program rebuilds them when it is traced)."""
        self.__dict__.pop("_shard_cache", None)

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



# ---------------------------------------------------------------------- one class per strategy
class _Strategy:
    """One evaluation strategy (a row of :data:`_EVALUATORS`): the index arrays its program reads, the
    products of one side, and the nonzeros (``plan.nnz > 0``).  Stateless: the plan holds the tables."""

    #: the plan splits each nonzero into (side, color, entry) at preparation (:meth:`EvaluationPlan._split_by_product`)
    splits = False

    def tables(self, plan: EvaluationPlan) -> dict[str, np.ndarray]:
        """The index arrays of :meth:`EvaluationPlan.index_tables` on one device."""
        raise NotImplementedError

    def side_products(self, plan: EvaluationPlan, i: int, apply, seeds, linear) -> tuple:
        """``(primal, blocks)``: side ``i``'s products (``k × length``, flattened, in one or more blocks)."""
        raise NotImplementedError

    def values(self, plan: EvaluationPlan, apply, seeds, dtype, linear) -> tuple:
        """``(values, primal)`` as :meth:`EvaluationPlan.values`."""
        raise NotImplementedError


class _Vmap(_Strategy):
    """``"vmap"``: every product in one batch, one gather of the nonzeros."""

    def tables(self, plan):
        return {"source": gather_index(plan.source, plan.block_starts[-1])}

    def side_products(self, plan, i, apply, seeds, linear):
        import jax
        import jax.numpy as jnp

        p, b = jax.vmap(apply[i], out_axes=(None, 0))(seeds[i](0, plan.sides[i].k, None))
        return p, [jnp.ravel(b)]

    def values(self, plan, apply, seeds, dtype, linear):
        flat, primal = plan.stacked(apply, seeds, dtype)
        return static_gather(flat, plan._table("source", plan.source)), primal


class _Unrolled(_Strategy):
    """``"unrolled"``: one product per color (or per asked chunk), decompressed group by group."""

    splits = True

    def tables(self, plan):
        tables = {}
        for g, (members, entries, order, positions) in enumerate(plan.unrolled_tables()):
            for j, ((i, _c, count), ent) in enumerate(zip(members, entries)):
                tables[f"u{g}.e{j}"] = gather_index(ent, count * plan.sides[i].length)
            pieces = sum(len(e) for e in entries) + (positions is None)
            tables[f"u{g}.order"] = gather_index(order, pieces)
            if positions is not None:
                tables[f"u{g}.pos"] = positions
        return tables

    def side_products(self, plan, i, apply, seeds, linear):
        import jax.numpy as jnp

        s, size = plan.sides[i], plan._unroll_sizes[i]
        p, blocks = None, []
        for c in range(0, s.k, size):
            pc, b = _unrolled_product(apply[i], seeds[i], c, min(size, s.k - c))
            p = pc if p is None else p
            blocks.append(jnp.ravel(b))
        return p, blocks

    def values(self, plan, apply, seeds, dtype, linear):
        import jax.numpy as jnp

        groups = plan.unrolled_tables()
        out, primal = None, None
        for g, (members, entries, gather_idx, positions) in enumerate(groups):
            pieces = []
            gather_idx = plan._table(f"u{g}.order", gather_idx)
            if positions is not None:
                positions = plan._table(f"u{g}.pos", positions)
            for j, ((i, c, count), ent) in enumerate(zip(members, entries)):
                ent = plan._table(f"u{g}.e{j}", ent)
                p, prod = _unrolled_product(apply[i], seeds[i], c, count)
                primal = p if primal is None else primal
                pieces.append(static_gather(jnp.ravel(prod).astype(dtype), ent))
            if positions is None:  # the first of several groups: the whole result, zeros elsewhere
                out = static_gather(jnp.concatenate(pieces + [jnp.zeros((1,), dtype)]), gather_idx)
                continue
            vals = pieces[0] if len(pieces) == 1 else static_gather(jnp.concatenate(pieces), gather_idx)
            if len(groups) == 1:
                return vals, primal
            out = out.at[positions].set(vals, indices_are_sorted=True, unique_indices=True, mode="promise_in_bounds")
        return out, primal


class _Loop(_Strategy):
    """``"loop"``: a loop over chunks of colors, each chunk's nonzeros scattered into the carried result."""

    splits = True

    def tables(self, plan):
        tables = {}
        for i, s in enumerate(plan.sides):
            if s.k and (plan.side_of == i).any():
                _, _, src, pos = plan.loop_tables(i)
                tables[f"loop{i}.src"], tables[f"loop{i}.pos"] = src, pos
        return tables

    def side_products(self, plan, i, apply, seeds, linear):
        import jax
        import jax.numpy as jnp

        s, cs = plan.sides[i], plan.chunk_sizes[i]
        fn = _linear_or(apply[i], None if linear is None else linear[i])

        def body(carry, j):
            return carry, jax.vmap(fn)(seeds[i](j * cs, cs, False))

        _, out = jax.lax.scan(body, None, jnp.arange(-(-s.k // cs)))
        return None, [jnp.ravel(out)[: s.k * s.length]]

    def values(self, plan, apply, seeds, dtype, linear):
        import jax
        import jax.numpy as jnp

        vals = jnp.zeros((plan.nnz,), dtype)
        for i, s in enumerate(plan.sides):
            if s.k == 0 or not (plan.side_of == i).any():
                continue
            cs = plan.chunk_sizes[i]
            nch = -(-s.k // cs)
            fn = _linear_or(apply[i], None if linear is None else linear[i])
            src_c, pos_c = plan._table(f"loop{i}.src", None), plan._table(f"loop{i}.pos", None)
            if src_c is None or pos_c is None:  # constants (the tables are built only when they are needed)
                _, _, src, pos = plan.loop_tables(i)
                src_c, pos_c = jnp.asarray(src), jnp.asarray(pos)

            def body(j, acc, fn=fn, i=i, cs=cs, src_c=src_c, pos_c=pos_c):
                comp = jnp.ravel(jax.vmap(fn)(seeds[i](j * cs, cs, False))).astype(dtype)
                return acc.at[pos_c[j]].set(comp[src_c[j]], mode="drop", indices_are_sorted=True,
                                            unique_indices=True)

            vals = jax.lax.fori_loop(0, nch, body, vals)
        return vals, None


#: The strategies ``"auto"`` chooses among, by name (:data:`STRATEGIES` after ``"auto"``).
_EVALUATORS: dict[str, _Strategy] = {"vmap": _Vmap(), "unrolled": _Unrolled(), "loop": _Loop()}
assert tuple(_EVALUATORS) == STRATEGIES[1:]


# ---------------------------------------------------------------------- one class per row method
class _RowMethod:
    """How a sharded program computes its result (a row of :data:`_ROW_EVALUATORS`): the per-device index
    arrays it reads and the values inside ``shard_map``."""

    def tables(self, plan: EvaluationPlan, devices: int) -> dict[str, np.ndarray]:
        """The index arrays of :meth:`EvaluationPlan.index_tables` on ``devices`` devices."""
        raise NotImplementedError

    def values(self, plan: EvaluationPlan, apply, seeds, dtype, axis: str, devices: int) -> tuple:
        """``(values, primal)`` as :meth:`EvaluationPlan.sharded_values`."""
        raise NotImplementedError


def _device_products(plan: EvaluationPlan, i: int, apply, seeds, devices: int, d):
    """``(primal, products)``: device ``d``'s block of ``ceil(k / devices)`` consecutive colors of side ``i``."""
    import jax

    kb = -(-plan.sides[i].k // devices)
    return jax.vmap(apply[i], out_axes=(None, 0))(seeds[i](d * kb, kb, False))


class _Scatter(_RowMethod):
    """``"scatter"`` (and the replicated result, with no row blocks): each device its block of colors, its
    nonzeros written into a zero vector, then one ``psum`` (``psum_scatter`` by row blocks)."""

    def tables(self, plan, devices):
        tables = {}
        for i, s in enumerate(plan.sides):
            if s.k:
                _, src, pos = plan._shard_tables(i, devices)
                tables[f"{PER_DEVICE}{i}.src"], tables[f"{PER_DEVICE}{i}.pos"] = src, pos
        return tables

    def values(self, plan, apply, seeds, dtype, axis, devices):
        import jax.numpy as jnp
        from jax import lax

        if plan.nnz == 0 and plan.rows is None:
            return jnp.zeros((0,), dtype), None
        d = lax.axis_index(axis)
        rb = plan.rows
        acc = jnp.zeros((plan.nnz if rb is None else rb.devices * rb.width,), dtype)
        primal = None
        for i, s in enumerate(plan.sides):
            if s.k == 0:
                continue
            src = plan._device_row(f"{PER_DEVICE}{i}.src",
                                   cast(Callable[[], np.ndarray], lambda i=i: plan._shard_tables(i, devices)[1]), d)
            pos = plan._device_row(f"{PER_DEVICE}{i}.pos",
                                   cast(Callable[[], np.ndarray], lambda i=i: plan._shard_tables(i, devices)[2]), d)
            p, comp = _device_products(plan, i, apply, seeds, devices, d)
            primal = p if primal is None else primal
            flat = jnp.ravel(comp).astype(dtype)
            acc = acc.at[pos].set(flat[src], mode="drop", indices_are_sorted=True, unique_indices=True)
        if rb is not None:
            # each device receives the sum of its own row block only (the parts are disjoint: exact)
            return lax.psum_scatter(acc.reshape(rb.devices, rb.width), axis, scatter_dimension=0, tiled=True), primal
        return lax.psum(acc, axis), primal


class _Exchange(_RowMethod):
    """``"exchange"``: ``(this device's row block (1, width), primal)`` — its block of colors, then one
    ``all_to_all`` that sends each device the values of its rows; every nonzero is written once (no sum)."""

    def tables(self, plan, devices):
        tables = {}
        for i, s in enumerate(plan.sides):
            if s.k:
                send, recv = plan._exchange_tables(i, devices)
                tables[f"{PER_DEVICE}{i}.send"], tables[f"{PER_DEVICE}{i}.recv"] = send, recv
        return tables

    def values(self, plan, apply, seeds, dtype, axis, devices):
        import jax.numpy as jnp
        from jax import lax

        rb = plan.rows
        assert rb is not None
        d = lax.axis_index(axis)
        block = jnp.zeros((rb.width,), dtype)
        primal = None
        for i, s in enumerate(plan.sides):
            if s.k == 0:
                continue
            send = plan._device_row(f"{PER_DEVICE}{i}.send",
                                    cast(Callable[[], np.ndarray], lambda i=i: plan._exchange_tables(i, devices)[0]), d)
            recv = plan._device_row(f"{PER_DEVICE}{i}.recv",
                                    cast(Callable[[], np.ndarray], lambda i=i: plan._exchange_tables(i, devices)[1]), d)
            p, comp = _device_products(plan, i, apply, seeds, devices, d)
            primal = p if primal is None else primal
            flat = jnp.ravel(comp).astype(dtype)
            out = flat[send]  # (devices, width): row r goes to device r
            got = lax.all_to_all(out, axis, 0, 0, tiled=True)  # row e came from device e
            block = block.at[jnp.ravel(recv)].set(jnp.ravel(got), mode="drop", unique_indices=True)
        return block.reshape(1, rb.width), primal


class _Local(_RowMethod):
    """``"local"``: ``(this device's row block (1, width), primal)`` — every product on every device, then a
    gather of the device's own nonzeros; no communication."""

    def tables(self, plan, devices):
        return {f"{PER_DEVICE}rows": plan._local_row_table()}

    def values(self, plan, apply, seeds, dtype, axis, devices):
        from jax import lax

        rb = plan.rows
        assert rb is not None
        flat, primal = plan.stacked(apply, seeds, dtype)
        idx = plan._device_row(f"{PER_DEVICE}rows", plan._local_row_table, lax.axis_index(axis))
        dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
        block = lax.gather(flat, idx[:, None], dn, slice_sizes=(1,), mode=lax.GatherScatterMode.FILL_OR_DROP,
                           fill_value=0)
        return block.reshape(1, rb.width), primal


#: The row methods by name (:data:`ROW_METHODS`).
_ROW_EVALUATORS: dict[str, _RowMethod] = {"scatter": _Scatter(), "exchange": _Exchange(), "local": _Local()}
assert tuple(_ROW_EVALUATORS) == ROW_METHODS


def _unrolled_product(apply, seeds, first: int, count: int):
    """``(primal, product)`` of the unrolled step of ``count`` colors from ``first``: one seed, or a ``vmap``."""
    import jax

    if count == 1:
        return apply(_first(seeds(first, 1, None)))
    return jax.vmap(apply, out_axes=(None, 0))(seeds(first, count, None))


def _linear_or(apply, linear):
    """The product function of the loop body: ``linear`` when given, else ``apply``'s product part."""
    return linear if linear is not None else (lambda t: apply(t)[1])


def _first(tree):
    """The one seed of a tree with a leading axis of one color."""
    import jax

    return jax.tree_util.tree_map(lambda a: a[0], tree)

"""Convolution (StableHLO spec §convolution): an index table of (output position, kernel tap) → input position.

Every layout is first brought to a canonical one with position maps — ``lhs`` as ``(N, C, spatial…)``,
``rhs`` as ``(O, Cg, taps…)`` (``window_reversal`` flips the taps, which is what reversing the ``lhs``
window means), the result as ``(No, O, spatial…)`` — so the rule never depends on
``stablehlo.ConvDimensionNumbers``' order.

Along each spatial dimension the input coordinate of output position ``o`` and tap ``k`` is found in the
padded, base-dilated ``lhs``: ``p = o·stride + k·rhs_dilation``, ``q = p − pad_low``; it is a real element
iff ``0 ≤ q``, ``q ≡ 0 (mod lhs_dilation)`` and ``q / lhs_dilation < size`` (else padding or a dilation
hole, which contributes nothing).  The per-dimension tables broadcast into one ``(out positions, taps)``
table ``in_sp`` (tap-major: one contiguous row map per tap) — pure NumPy, no loop over elements.

Groups (§convolution splits and concatenates): output feature ``o`` belongs to group ``q = o // (O / Q)``
with ``Q = feature_group_count · batch_group_count`` (one of them is 1); it reads the input features
``g·Cg … g·Cg + Cg − 1`` with ``g = q // batch_group_count`` and the input batch
``(q % batch_group_count)·No + n``.

Index sets, with ``result[n, o, s] = Σ_{ci, k} lhs[nb, g·Cg + ci, in_sp[k, s]] · rhs[o, ci, k]``:

* lhs part — unknown kernel: union over the input features of a group first, then over the taps (two
  small group unions, shared by every output feature of a group).  Known kernel with zeros: only the
  ``(ci, k)`` with ``rhs[o, ci, k] ≠ 0`` (a 7-point stencil written as a 3×3×3 kernel gives 7 per row).
* rhs part — output ``(n, o, s)`` depends on ``rhs[o, ci, k]`` wherever tap ``k`` lands on a real input
  element (not padding); with a known ``lhs``, only where that element is nonzero.

Both are exact for generic values.  Folding: im2col through the same table, then one ``einsum``.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import bool_list, dense_attr, i64_list, int_attr
from ...lattice.windows import positions
from ...errors import InputError
from ...lattice import check_nnz, Deps, group_union, Groups
from ..folding.exactness import maybe_nonzero, sum_of_products_trust
from .dot_general import highest_precision
from .registry import VALUE_AWARE, NotFoldable, deps_rule, error_rule, fold_rule
from .registry import RuleContext, Op, DepsResult, ErrorResult, FoldResult  # the rule contract
from ..values import AbstractValue

__all__ = ["ConvGeometry", "conv_geometry", "conv_np"]


#: Larger than any flat index sum (keeps sums of several -_FAR terms far from int64 overflow).
_FAR = 1 << 48


class ConvGeometry:
    """Everything the rules need about one convolution, in canonical layout."""

    def __init__(self, op, lhs_shape, rhs_shape, out_shape, location=None):
        from ...ir.attrs import conv_dimension_numbers

        dn = conv_dimension_numbers(op)
        isp = list(dn.input_spatial_dimensions)
        ksp = list(dn.kernel_spatial_dimensions)
        osp = list(dn.output_spatial_dimensions)
        nsp = len(isp)
        self.lhs_perm = [dn.input_batch_dimension, dn.input_feature_dimension] + isp
        self.rhs_perm = [dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension] + ksp
        self.out_perm = [dn.output_batch_dimension, dn.output_feature_dimension] + osp
        strides = i64_list(op, "window_strides", [1] * nsp)
        pad = dense_attr(op, "padding")
        pad = np.zeros((nsp, 2), np.int64) if pad is None else np.asarray(pad, np.int64).reshape(nsp, 2)
        lhs_dil = i64_list(op, "lhs_dilation", [1] * nsp)
        rhs_dil = i64_list(op, "rhs_dilation", [1] * nsp)
        self.reversal = bool_list(op, "window_reversal", [False] * nsp) or [False] * nsp
        G = int_attr(op, "feature_group_count", 1)
        BG = int_attr(op, "batch_group_count", 1)

        N, C = lhs_shape[self.lhs_perm[0]], lhs_shape[self.lhs_perm[1]]
        O, Cg = rhs_shape[self.rhs_perm[0]], rhs_shape[self.rhs_perm[1]]
        No = out_shape[self.out_perm[0]]
        in_sizes = [lhs_shape[d] for d in isp]
        k_sizes = [rhs_shape[d] for d in ksp]
        o_sizes = [out_shape[d] for d in osp]
        if G < 1 or BG < 1 or (G > 1 and BG > 1) or C != G * Cg or N != BG * No or O % (G * BG) \
                or out_shape[self.out_perm[1]] != O:
            raise InputError(f"stablehlo.convolution: inconsistent shapes or group counts "
                             f"(lhs {tuple(lhs_shape)}, rhs {tuple(rhs_shape)}, result {tuple(out_shape)}, "
                             f"feature_group_count={G}, batch_group_count={BG})", location)
        self.N, self.C, self.O, self.Cg, self.No, self.G, self.BG = N, C, O, Cg, No, G, BG
        self.Q = G * BG
        self.in_sizes, self.k_sizes, self.o_sizes = in_sizes, k_sizes, o_sizes
        self.Sp_in = int(np.prod(in_sizes, dtype=np.int64))
        self.T = int(np.prod(k_sizes, dtype=np.int64))
        self.O_sp = int(np.prod(o_sizes, dtype=np.int64))

        # Per spatial dimension: input index of (output o, tap k), -1 for padding or a dilation hole.
        self.dim_tables = []
        for d in range(nsp):
            I, K, Od = in_sizes[d], k_sizes[d], o_sizes[d]
            dilated_in = 0 if I == 0 else (I - 1) * lhs_dil[d] + 1
            padded = pad[d, 0] + dilated_in + pad[d, 1]
            window = 0 if K == 0 else (K - 1) * rhs_dil[d] + 1
            expect = 0 if (padded <= 0 or window > padded) else (padded - window) // strides[d] + 1
            if expect != Od:
                raise InputError(f"stablehlo.convolution: result spatial size {Od} does not match the window "
                                 f"arithmetic ({expect}) in spatial dimension {d}", location)
            o = np.arange(Od, dtype=np.int64)[:, None]
            k = np.arange(K, dtype=np.int64)[None, :]
            q = o * strides[d] + k * rhs_dil[d] - pad[d, 0]
            if lhs_dil[d] == 1:  # (no holes: no division, two passes fewer over the table)
                self.dim_tables.append(np.where((q >= 0) & (q < I), q, -1))
                continue
            valid = (q >= 0) & (q % lhs_dil[d] == 0) & (q // lhs_dil[d] < I)
            self.dim_tables.append(np.where(valid, q // lhs_dil[d], -1))
        self._in_sp = None

    def in_sp_taps(self, taps, raw: bool = False) -> np.ndarray:
        """(len(taps), O_sp): flat input spatial index of each (tap, output position), -1 where nothing is read.

        Tap-major, so each tap's row map is contiguous.  Built by broadcasting the per-dimension tables, so
        only the requested taps cost anything (a known kernel with 7 nonzero taps of 27 builds 7 rows).
        """
        taps = np.asarray(taps, np.int64).ravel()
        nsp = len(self.dim_tables)
        m = len(taps)
        k_coords = np.unravel_index(taps, self.k_sizes) if nsp else ()
        # Invalid coordinates add -_FAR, so the sum is negative iff some dimension reads padding: one
        # clamp at the end replaces a separate validity mask (fewer passes over the full-size table).
        flat = np.zeros([m] + [1] * nsp, np.int64)
        stride = 1
        for d in reversed(range(nsp)):
            col = self.dim_tables[d][:, k_coords[d]].T                # (m, Od)
            shape = [m] + [1] * nsp
            shape[1 + d] = col.shape[1]
            flat = flat + np.where(col >= 0, col * stride, -_FAR).reshape(shape)
            stride *= self.in_sizes[d]
        flat = np.broadcast_to(flat, (m,) + tuple(self.o_sizes)).reshape(m, self.O_sp)
        # raw: invalid entries stay ≤ -_FAR + (largest index), so adding any offset below _FAR/2 and
        # clamping at -1 afterwards still marks them.
        return flat if raw else np.maximum(flat, -1)

    @property
    def in_sp(self) -> np.ndarray:
        """(T, O_sp): the full table over every tap."""
        if self._in_sp is None:
            self._in_sp = self.in_sp_taps(np.arange(self.T))
        return self._in_sp

    # -------------------------------------------------------------- canonical position maps
    def lhs_positions(self, lhs_shape) -> np.ndarray:
        """(N, C, Sp_in): flat lhs element of each canonical coordinate."""
        return positions(lhs_shape).transpose(self.lhs_perm).reshape(self.N, self.C, self.Sp_in)

    @property
    def lhs_is_canonical(self) -> bool:
        """The lhs is already laid out as (N, C, spatial…): canonical and actual flat indices coincide."""
        return list(self.lhs_perm) == list(range(len(self.lhs_perm)))

    def rhs_canonical(self, arr) -> np.ndarray:
        """(O, Cg, T) view of a kernel-shaped array, taps flipped where ``window_reversal`` says so."""
        a = np.asarray(arr).transpose(self.rhs_perm)
        flip = tuple(2 + d for d, r in enumerate(self.reversal) if r)
        if flip:
            a = np.flip(a, axis=flip)
        return a.reshape(self.O, self.Cg, self.T)

    def out_rows(self, out_shape) -> np.ndarray:
        """For each result element (row-major, actual layout), its canonical ``(No, O, O_sp)`` flat index."""
        canon_shape = [out_shape[d] for d in self.out_perm]
        return positions(canon_shape).transpose(np.argsort(self.out_perm)).ravel()

    def feature_group(self):
        """For each output feature: (input feature group g, input batch group)."""
        q = np.arange(self.O, dtype=np.int64) // (self.O // self.Q) if self.O else np.zeros(0, np.int64)
        return q, q // self.BG, q % self.BG


def conv_geometry(ctx: RuleContext, op: Op, lhs_shape, rhs_shape) -> ConvGeometry:
    (t,) = ctx.result_types(op)
    return ConvGeometry(op, lhs_shape, rhs_shape, t.shape, ctx.location(op))


def _check_budget(ctx: RuleContext, op: Op, entries: int) -> None:
    check_nnz(entries, f"the index table of {op.operation.name}")


# ---------------------------------------------------------------- index sets
# Every group table below is member-major, ``(members, rows)``: one contiguous row map per member.

def _lhs_part_generic(ctx: RuleContext, op: Op, geo: ConvGeometry, lhs_deps: Deps, lhs_pos) -> tuple[Deps, np.ndarray]:
    """Rows (No, Q, O_sp): union over a group's input features, then over the taps (shared per group).

    Returns the rows and the map from canonical output rows (No, O, O_sp) to them.
    """
    N, G, Cg, Sp_in, No, Q, T, O_sp = geo.N, geo.G, geo.Cg, geo.Sp_in, geo.No, geo.Q, geo.T, geo.O_sp
    # Step 1: rows (N, G, Sp_in) = ∪_ci lhs[n, g·Cg + ci, s].
    members = lhs_pos.reshape(N, G, Cg, Sp_in).transpose(2, 0, 1, 3).reshape(Cg, N * G * Sp_in)
    dg = group_union(lhs_deps, Groups.member_major(members))
    # Step 2: rows (No, Q, O_sp) = ∪_k Dg[bgrp(q)·No + n, g(q), in_sp[k, s]].
    _check_budget(ctx, op, No * Q * O_sp * T)
    qs = np.arange(Q, dtype=np.int64)
    g_of_q, b_of_q = qs // geo.BG, qs % geo.BG
    base = ((b_of_q[None, :] * No + np.arange(No, dtype=np.int64)[:, None]) * G + g_of_q[None, :]) * Sp_in
    raw = geo.in_sp_taps(np.arange(T), raw=True)[:, None, None, :]             # (T, 1, 1, O_sp)
    members = np.maximum(base[None, :, :, None] + raw, -1).reshape(T, No * Q * O_sp)
    d2 = group_union(dg, Groups.member_major(members))
    # Step 3: canonical (No, O, O_sp) -> (No, Q, O_sp) rows.
    q_of_o, _, _ = geo.feature_group()
    row = ((np.arange(No, dtype=np.int64)[:, None, None] * Q + q_of_o[None, :, None]) * O_sp
           + np.arange(O_sp, dtype=np.int64)[None, None, :])
    return d2, row.ravel()


def _lhs_part_known_kernel(ctx: RuleContext, op: Op, geo: ConvGeometry, lhs_deps: Deps, lhs_pos, w) -> Deps | None:
    """Rows (No, O, O_sp) = ∪ lhs over the (ci, k) with ``w[o, ci, k] ≠ 0`` only.

    ``lhs_pos`` is ``None`` when the lhs layout is canonical (the canonical index is the row itself).
    """
    O, Cg, T, No, O_sp = geo.O, geo.Cg, geo.T, geo.No, geo.O_sp
    nz = (w != 0).reshape(O, Cg * T)
    counts = nz.sum(axis=1)
    maxw = int(counts.max()) if O else 0
    if maxw == 0:
        return None
    _check_budget(ctx, op, No * O * O_sp * maxw)
    sel = np.argsort(~nz, axis=1, kind="stable")[:, :maxw].T           # (maxw, O): nonzero (ci, k) first
    used = np.arange(maxw)[:, None] < counts[None, :]                   # (maxw, O)
    ci, k = sel // T, sel % T
    _, g_of_o, b_of_o = geo.feature_group()
    chan = g_of_o[None, :] * Cg + ci                                    # (maxw, O)
    nb = b_of_o[None, :] * No + np.arange(No, dtype=np.int64)[:, None]  # (No, O)
    utaps, inv = np.unique(k, return_inverse=True)
    s = geo.in_sp_taps(utaps, raw=True)[inv.reshape(k.shape)]           # (maxw, O, O_sp), invalid < 0
    # Unused slots get -_FAR in their offset, so one add and one clamp give the member table.
    offset = np.where(used[:, None, :], (nb[None, :, :] * geo.C + chan[:, None, :]) * geo.Sp_in, -_FAR)
    canon = np.maximum(offset[:, :, :, None] + s[:, None], -1)          # (maxw, No, O, O_sp)
    if lhs_pos is not None:
        canon = np.where(canon >= 0, lhs_pos.reshape(-1)[np.maximum(canon, 0)], -1)
    members = canon.reshape(maxw, No * O * O_sp)
    return group_union(lhs_deps, Groups.member_major(members))


def _rhs_part_generic(ctx: RuleContext, op: Op, geo: ConvGeometry, rhs_deps: Deps, rhs_pos) -> tuple[Deps, np.ndarray]:
    """Rows (O, O_sp) = ∪ rhs[o, ci, k] over ci and the taps that read a real input element."""
    O, Cg, T, O_sp, No = geo.O, geo.Cg, geo.T, geo.O_sp, geo.No
    kg = group_union(rhs_deps, Groups.member_major(rhs_pos.transpose(1, 0, 2).reshape(Cg, O * T)))   # rows (O, T)
    _check_budget(ctx, op, O * O_sp * T)
    taps = np.arange(T, dtype=np.int64)[:, None, None] + np.arange(O, dtype=np.int64)[None, :, None] * T
    members = np.where(geo.in_sp[:, None, :] >= 0, taps, -1).reshape(T, O * O_sp)
    k2 = group_union(kg, Groups.member_major(members))
    row = np.broadcast_to(np.arange(O * O_sp, dtype=np.int64)[None, :], (No, O * O_sp))
    return k2, row.ravel()


def _rhs_part_known_lhs(ctx: RuleContext, op: Op, geo: ConvGeometry, rhs_deps: Deps, rhs_pos, x) -> Deps:
    """Rows (No, O, O_sp) = ∪ rhs[o, ci, k] over the (ci, k) whose input element is a nonzero of ``x``."""
    O, Cg, T, O_sp, No = geo.O, geo.Cg, geo.T, geo.O_sp, geo.No
    _check_budget(ctx, op, No * O * O_sp * Cg * T)
    _, g_of_o, b_of_o = geo.feature_group()
    chan = g_of_o[None, :] * Cg + np.arange(Cg, dtype=np.int64)[:, None]   # (Cg, O)
    nb = b_of_o[None, :] * No + np.arange(No, dtype=np.int64)[:, None]     # (No, O)
    xz = np.concatenate([x != 0, np.zeros(x.shape[:2] + (1,), bool)], axis=2)   # index -1 reads False
    # (Cg, T, No, O, O_sp): is the input element under (ci, k) at output (n, o, s) a nonzero?
    nz = xz[nb[None, None, :, :, None], chan[:, None, None, :, None], geo.in_sp[None, :, None, None, :]]
    entries = rhs_pos.transpose(1, 2, 0)[:, :, None, :, None]               # (Cg, T, 1, O, 1)
    members = np.where(nz, entries, -1).reshape(Cg * T, No * O * O_sp)
    return group_union(rhs_deps, Groups.member_major(members))


@deps_rule("stablehlo.convolution", kind=VALUE_AWARE,
           note="index table (output, tap) → input; known kernel zeros drop taps")
def _convolution(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§convolution: lhs windows ∪ kernel taps per output element; known operands drop their zeros."""
    lhs, rhs = args
    (t,) = ctx.result_types(op)
    geo = conv_geometry(ctx, op, lhs.shape, rhs.shape)
    out_rows = geo.out_rows(t.shape)          # actual row -> canonical (No, O, O_sp) row
    parts = []
    if not lhs.deps.is_empty:
        lhs_pos = geo.lhs_positions(lhs.shape)
        # only exact zero taps prune (folding/exactness.py): the kernel's may-be-nonzero mask
        w = geo.rhs_canonical(maybe_nonzero(rhs)) if rhs.const is not None else None
        if w is not None and not np.all(w != 0):
            d = _lhs_part_known_kernel(ctx, op, geo, lhs.deps, None if geo.lhs_is_canonical else lhs_pos, w)
            if d is not None:
                parts.append(d.gather_rows(out_rows))
        else:
            d, row = _lhs_part_generic(ctx, op, geo, lhs.deps, lhs_pos)
            parts.append(d.gather_rows(row[out_rows]))
    if not rhs.deps.is_empty:
        rhs_pos = geo.rhs_canonical(positions(rhs.shape))
        x = None
        if lhs.const is not None:
            x = maybe_nonzero(lhs).transpose(geo.lhs_perm).reshape(geo.N, geo.C, geo.Sp_in)
        if x is not None and not np.all(x != 0):
            parts.append(_rhs_part_known_lhs(ctx, op, geo, rhs.deps, rhs_pos, x).gather_rows(out_rows))
        else:
            d, row = _rhs_part_generic(ctx, op, geo, rhs.deps, rhs_pos)
            parts.append(d.gather_rows(row[out_rows]))
    if not parts:
        return [ctx.empty(t.size)]
    return [Deps.union(*parts)]


# ---------------------------------------------------------------- folding
def conv_np(geo: ConvGeometry, lhs: np.ndarray, rhs: np.ndarray, out_shape, dtype) -> np.ndarray:
    """§convolution with NumPy: gather every (output position, tap) input element (im2col), then einsum."""
    x = np.asarray(lhs).astype(dtype, copy=False).transpose(geo.lhs_perm).reshape(geo.N, geo.C, geo.Sp_in)
    w = geo.rhs_canonical(np.asarray(rhs).astype(dtype, copy=False))
    xz = np.concatenate([x, np.zeros((geo.N, geo.C, 1), dtype)], axis=2)   # index -1 reads the zero column
    patches = xz[:, :, geo.in_sp.T]                                        # (N, C, O_sp, T)
    Q, No, Cg = geo.Q, geo.No, geo.Cg
    # (BG, No, G, Cg, ...) -> (G, BG, No, Cg, ...): group q = g·BG + b matches feature_group().
    p = patches.reshape(geo.BG, No, geo.G, Cg, geo.O_sp, geo.T).transpose(2, 0, 1, 3, 4, 5)
    p = p.reshape(Q, No, Cg, geo.O_sp, geo.T)
    wq = w.reshape(Q, geo.O // Q if Q else 0, Cg, geo.T)
    out = np.einsum("qncsk,qock->nqos", p, wq, optimize=True).reshape(No, geo.O, *geo.o_sizes)
    return out.transpose(np.argsort(geo.out_perm))


@fold_rule("stablehlo.convolution")
def _convolution_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    lhs, rhs = (np.asarray(c) for c in consts)
    (t,) = ctx.result_types(op)
    if t.dtype == np.bool_:
        raise NotFoldable
    geo = conv_geometry(ctx, op, lhs.shape, rhs.shape)
    if geo.N * geo.C * geo.O_sp * geo.T > ctx.options.max_fold_elements:
        raise NotFoldable  # the im2col buffer would exceed the folding budget
    with np.errstate(all="ignore"):
        return [conv_np(geo, lhs, rhs, t.shape, t.dtype)]


@error_rule("stablehlo.convolution")
def _convolution_trust(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """A sum of products per output element (``feature_group``'s channels × kernel taps), in any order."""
    lhs, rhs = args
    (t,) = ctx.result_types(op)
    geo = conv_geometry(ctx, op, lhs.shape, rhs.shape)

    def contract(a, b):
        return conv_np(geo, a, b, t.shape, np.float64)

    return [sum_of_products_trust(lhs, rhs, consts[0], contract, geo.Cg * geo.T, highest=highest_precision(op))]

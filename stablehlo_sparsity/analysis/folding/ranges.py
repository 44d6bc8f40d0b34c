"""Integer value ranges: an interval per element of an integer or boolean value, beside the constant lattice.

A value the constant lattice does not know may still be known to lie in a range: ``argmax`` over ``k``
elements is in ``[0, k - 1]``, a comparison of such a value with ``0`` is decided, ``idx + [0, 1]`` is in
``[0, 2]``.  Indexing rules use the range of a start index to read only the slices it can reach (§gather,
§dynamic_slice clamp their starts, so the clamped range is what matters).  Per element the lattice is::

    [lo, hi] ∨ [lo', hi'] = [min(lo, lo'), max(hi, hi')]        (a known constant c is [c, c])
    unknown               = the whole range of the element type

Ranges are computed by the range rules of :data:`~stablehlo_sparsity.analysis.rules.registry.RANGE_RULES` from the
ranges (or constants) of the operands.  Integer arithmetic wraps around in StableHLO, so a rule whose result
could leave the element type's range gives no range at all; bounds are kept within ``±2**31`` so that sums
and products of two bounds never overflow NumPy's ``int64``.  Ranges are sound for every execution: they
hold for any backend because integer ops are exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


class _Value(Protocol):
    """What the range queries read of an abstract value (``values.AbstractValue``)."""

    @property
    def const(self) -> Any: ...
    @property
    def int_range(self) -> "IntRange | None": ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def shape(self) -> tuple[int, ...]: ...

__all__ = ["IntRange", "LIMIT", "WIDE", "bounds", "type_bounds", "known_bounds", "make_range", "hull_range"]

#: Bounds are kept within ``[-LIMIT, LIMIT]``: beyond it a range is dropped (sums and products of two bounds
#: then fit ``int64``).
LIMIT = 2**31


@dataclass(frozen=True, eq=False)
class IntRange:
    """``lo[i] <= value[i] <= hi[i]`` for every element ``i`` (``int64`` arrays of the value's shape)."""

    lo: np.ndarray
    hi: np.ndarray

    @property
    def is_point(self) -> bool:
        return bool(np.array_equal(self.lo, self.hi))


def _is_integer(dtype: np.dtype) -> bool:
    return dtype.kind in "iub"


def type_bounds(dtype: np.dtype) -> tuple[int, int] | None:
    """The range of an integer or boolean element type, clipped to ``±LIMIT``; ``None`` for other types."""
    if dtype.kind == "b":
        return 0, 1
    if dtype.kind not in "iu":
        return None
    info = np.iinfo(dtype)
    return max(int(info.min), -LIMIT), min(int(info.max), LIMIT)


def known_bounds(av: _Value) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lo, hi)`` of an integer or boolean value from its constant or its range; ``None`` if neither is known
    (or the constant leaves ``±LIMIT``)."""
    if not _is_integer(av.dtype):
        return None
    if av.const is not None:
        c = np.asarray(av.const)
        if c.dtype.kind == "u" and c.size and int(c.max()) > LIMIT:
            return None
        c = c.astype(np.int64)
        if c.size and (int(c.min()) < -LIMIT or int(c.max()) > LIMIT):
            return None
        return c, c
    if av.int_range is not None:
        return av.int_range.lo, av.int_range.hi
    return None


#: The bound of an integer value nothing is known about, when its type is wider than ``LIMIT`` (sums of two
#: such bounds fit ``int64``; :func:`make_range` drops any result that reaches it).
WIDE = 2**40


def bounds(av: _Value) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lo, hi)`` of an integer or boolean value: its known bounds, else its element type's (``±WIDE`` for
    types wider than ``LIMIT``); ``None`` for other types."""
    known = known_bounds(av)
    if known is not None:
        return known
    tb = type_bounds(av.dtype)
    if tb is None:
        return None
    if av.dtype.kind in "iu" and int(np.iinfo(av.dtype).max) > LIMIT:  # type_bounds clipped it to ±LIMIT
        tb = (-WIDE if av.dtype.kind == "i" else 0, WIDE)
    return np.full(av.shape, tb[0], np.int64), np.full(av.shape, tb[1], np.int64)


def make_range(lo: np.ndarray, hi: np.ndarray, dtype: np.dtype, shape: tuple[int, ...]) -> IntRange | None:
    """The range ``[lo, hi]`` of a result of ``dtype`` and ``shape``; ``None`` when it says nothing (the whole
    type) or when a bound leaves the type (the value may have wrapped around)."""
    tb = type_bounds(dtype)
    if tb is None:
        return None
    lo = np.broadcast_to(np.asarray(lo, np.int64), shape)
    hi = np.broadcast_to(np.asarray(hi, np.int64), shape)
    if lo.size == 0:
        return None
    if int(lo.min()) < tb[0] or int(hi.max()) > tb[1]:
        return None
    if int(lo.max()) == tb[0] and int(hi.min()) == tb[1]:
        return None
    return IntRange(np.array(lo, np.int64), np.array(hi, np.int64))


def hull_range(a: IntRange | None, b: IntRange | None) -> IntRange | None:
    """``a ∨ b`` (``None`` — unknown — absorbs)."""
    if a is None or b is None:
        return None
    if a is b:
        return a
    return IntRange(np.minimum(a.lo, b.lo), np.maximum(a.hi, b.hi))

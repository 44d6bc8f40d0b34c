"""Abstract values: the index-set lattice of a tensor plus, when known, its constant value."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..dtypes import is_float
from ..errors import DynamicShapeError, UnsupportedTypeError
from ..lattice import Deps

if TYPE_CHECKING:
    from .folding.exactness import Uncertainty
    from .folding.ranges import IntRange

try:  # bfloat16 and friends come with jax
    import ml_dtypes

    _BF16 = np.dtype(ml_dtypes.bfloat16)
except Exception:  # pragma: no cover
    _BF16 = None

__all__ = ["AbstractValue", "TensorType", "tensor_type", "element_dtype", "is_differentiable", "same_constant",
           "TOKEN", "is_token_type"]

_SIMPLE = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "i1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "ui8": np.uint8,
    "ui16": np.uint16,
    "ui32": np.uint32,
    "ui64": np.uint64,
    "complex<f32>": np.complex64,
    "complex<f64>": np.complex128,
}


def element_dtype(elem: str, location: str | None = None) -> np.dtype:
    """NumPy dtype of an MLIR element type name; unsupported types raise :class:`UnsupportedTypeError`."""
    if elem in _SIMPLE:
        return np.dtype(_SIMPLE[elem])
    if elem == "bf16" and _BF16 is not None:
        return _BF16
    raise UnsupportedTypeError(f"unsupported element type '{elem}'", location)


def is_differentiable(dtype: np.dtype) -> bool:
    """Floating-point and complex values carry derivatives; integers and booleans do not
    (:func:`stablehlo_sparsity.dtypes.is_float`)."""
    return is_float(dtype)


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: np.dtype
    size: int = field(init=False, compare=False)
    #: a float or complex element type (:func:`is_differentiable`), read once per type
    differentiable: bool = field(init=False, compare=False, repr=False)
    #: an integer or boolean element type (the types integer ranges are kept for)
    integral: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "size", math.prod(self.shape))
        object.__setattr__(self, "differentiable", is_differentiable(self.dtype))
        object.__setattr__(self, "integral", np.dtype(self.dtype).kind in "iub")


_TYPE_CACHE: dict = {}
#: The MLIR context of the cached types.  Every type keeps its context (the whole lowered module, about a
#: megabyte) alive, so the cache holds the types of one context only: analyzing a new module empties it, and a
#: long run over many functions keeps at most one old module alive instead of thousands.
_TYPE_CACHE_CONTEXT: list = [None]


def tensor_type(t, location: str | None = None) -> TensorType:
    """Shape and dtype of an MLIR ``RankedTensorType`` (dynamic shapes and non-tensors are refused)."""
    try:
        return _TYPE_CACHE[t]
    except (KeyError, TypeError):
        pass
    tt = _tensor_type(t, location)
    context = getattr(t, "context", None)
    if context is not _TYPE_CACHE_CONTEXT[0] or len(_TYPE_CACHE) > 4096:
        _TYPE_CACHE.clear()
        _TYPE_CACHE_CONTEXT[0] = context
    try:
        _TYPE_CACHE[t] = tt
    except TypeError:
        pass
    return tt


#: ``!stablehlo.token`` (ordered effects): no data, so a zero-derivative scalar to the analysis.
TOKEN = TensorType((), np.dtype(np.bool_))


def is_token_type(t) -> bool:
    return str(t) == "!stablehlo.token"


def _tensor_type(t, location: str | None) -> TensorType:
    from jaxlib.mlir import ir

    text = str(t)
    if text == "!stablehlo.token":
        return TOKEN
    try:
        rt = ir.RankedTensorType(t)
    except (ValueError, TypeError):
        raise UnsupportedTypeError(f"unsupported type '{text}' (only ranked tensors are analyzed)", location) from None
    if not rt.has_static_shape:
        raise DynamicShapeError(f"dynamic shape '{text}' is not supported; sparsity patterns need static shapes",
                                location)
    return TensorType(tuple(int(d) for d in rt.shape), element_dtype(str(rt.element_type), location))


def same_constant(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """The one notion of "the same constant" in this code base: same dtype, shape and **bits**.

    ``-0.0`` and ``+0.0`` differ (``1/x`` tells them apart), a NaN equals only a NaN with the same payload.
    Two unknowns are not the same constant."""
    if a is None or b is None:
        return False
    if a is b:
        return True
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@dataclass(frozen=True, eq=False)
class AbstractValue:
    """One tensor in the abstract interpretation: its type, index sets, and constant value if known.

    ``uncertainty`` (only with ``const``, only for floats): how far the value XLA computes may be from
    ``const`` on any backend — ``None`` means exact.  See :mod:`stablehlo_sparsity.analysis.folding.exactness`; rules
    read known values through its queries (``maybe_nonzero``, ``surely``) rather than ``const`` itself.

    ``int_range`` (only without ``const``, only for integers and booleans): bounds every execution respects
    (:mod:`stablehlo_sparsity.analysis.folding.ranges`)."""

    type: TensorType
    deps: Deps
    const: np.ndarray | None = None
    uncertainty: "Uncertainty | None" = None
    int_range: "IntRange | None" = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def dtype(self) -> np.dtype:
        return self.type.dtype

    @property
    def size(self) -> int:
        return self.type.size

    @property
    def is_const(self) -> bool:
        return self.const is not None

    @property
    def is_exact(self) -> bool:
        """A known value every backend computes bit for bit (up to the sign of zero and NaN payloads)."""
        return self.const is not None and (self.uncertainty is None or self.uncertainty.exact)

    def with_deps(self, deps: Deps) -> "AbstractValue":
        return AbstractValue(self.type, deps, self.const, self.uncertainty, self.int_range)

    def without_range(self) -> "AbstractValue":
        return self if self.int_range is None else AbstractValue(self.type, self.deps, self.const, self.uncertainty)

"""Abstract values: the index-set lattice of a tensor plus, when known, its constant value."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..dtypes import is_float
from ..errors import DynamicShapeError, SparsityError, UnsupportedTypeError
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
#: The same answers by the type's text, which outlives a context: JAX lowers every function in a new context, so
#: without it every analysis would decode its types afresh (a dataclass and a dtype per type).
_TEXT_TYPES: dict[str, "TensorType"] = {}


def tensor_type(t, location: str | None = None) -> TensorType:
    """Shape and dtype of an MLIR ``RankedTensorType`` (dynamic shapes and non-tensors are refused)."""
    try:
        return _TYPE_CACHE[t]
    except (KeyError, TypeError):
        pass
    text = str(t)
    tt = _TEXT_TYPES.get(text)
    if tt is None:
        tt = _tensor_type(t, location, text)
        if len(_TEXT_TYPES) > 4096:
            _TEXT_TYPES.clear()
        _TEXT_TYPES[text] = tt
    context = getattr(t, "context", None)
    if context is not _TYPE_CACHE_CONTEXT[0] or len(_TYPE_CACHE) > 4096:
        _TYPE_CACHE.clear()
        _TYPE_CACHE_CONTEXT[0] = context
    try:
        _TYPE_CACHE[t] = tt
    except TypeError:
        pass
    return tt


def tensor_types(types, location_of: Callable[[], str | None]) -> list[TensorType]:
    """:func:`tensor_type` of each of ``types``; ``location_of()`` — reading a location costs more than a small
    op's analysis — is called only when a type is refused, to say where."""
    try:
        return [tensor_type(t) for t in types]
    except SparsityError:
        loc = location_of()
        return [tensor_type(t, loc) for t in types]


#: ``!stablehlo.token`` (ordered effects): no data, so a zero-derivative scalar to the analysis.
TOKEN = TensorType((), np.dtype(np.bool_))


def is_token_type(t) -> bool:
    return str(t) == "!stablehlo.token"


def _tensor_type(t, location: str | None, text: str) -> TensorType:
    from jaxlib.mlir import ir

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


class AbstractValue:
    """One tensor in the abstract interpretation: its type, index sets, and constant value if known.

    ``uncertainty`` (only with ``const``, only for floats): how far the value XLA computes may be from
    ``const`` on any backend — ``None`` means exact.  See :mod:`stablehlo_sparsity.analysis.folding.exactness`; rules
    read known values through its queries (``maybe_nonzero``, ``surely``) rather than ``const`` itself.

    ``int_range`` (only without ``const``, only for integers and booleans): bounds every execution respects
    (:mod:`stablehlo_sparsity.analysis.folding.ranges`).

    Immutable, compared by identity.  (A frozen dataclass did the same at three times the cost of making one,
    and the analysis makes one or two per op: the fields are set through their slots' descriptors instead.)"""

    __slots__ = ("type", "deps", "const", "uncertainty", "int_range")

    type: TensorType
    deps: Deps
    const: np.ndarray | None
    uncertainty: "Uncertainty | None"
    int_range: "IntRange | None"

    def __init__(self, type: TensorType, deps: Deps, const: np.ndarray | None = None,
                 uncertainty: "Uncertainty | None" = None, int_range: "IntRange | None" = None):
        _set_type(self, type)
        _set_deps(self, deps)
        _set_const(self, const)
        _set_uncertainty(self, uncertainty)
        _set_int_range(self, int_range)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"AbstractValue is immutable: cannot set '{name}' (make a new one, e.g. with_deps)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"AbstractValue is immutable: cannot delete '{name}'")

    def __reduce__(self):
        return AbstractValue, (self.type, self.deps, self.const, self.uncertainty, self.int_range)

    def __repr__(self) -> str:
        return (f"AbstractValue(type={self.type!r}, deps={self.deps!r}, const={self.const!r}, "
                f"uncertainty={self.uncertainty!r}, int_range={self.int_range!r})")

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


_set_type = AbstractValue.__dict__["type"].__set__
_set_deps = AbstractValue.__dict__["deps"].__set__
_set_const = AbstractValue.__dict__["const"].__set__
_set_uncertainty = AbstractValue.__dict__["uncertainty"].__set__
_set_int_range = AbstractValue.__dict__["int_range"].__set__

"""Small helpers to read op attributes from jaxlib's MLIR bindings as Python / NumPy values."""

from __future__ import annotations

import numpy as np

__all__ = ["i64_list", "int_attr", "bool_list", "dense_array", "has_attr", "enum_text", "positions"]


def has_attr(op, name: str) -> bool:
    return name in op.attributes


def i64_list(op, name: str, default=None) -> list[int]:
    """A ``DenseI64ArrayAttr`` / ``DenseIntElementsAttr`` / ``ArrayAttr`` of integers as a list."""
    if name not in op.attributes:
        if default is None:
            raise KeyError(f"{op.operation.name} has no attribute '{name}'")
        return list(default)
    a = op.attributes[name]
    try:
        return [int(v) for v in a]
    except TypeError:
        return [int(v) for v in np.array(a).ravel()]


def bool_list(op, name: str, default=None) -> list[bool]:
    if name not in op.attributes:
        return list(default) if default is not None else []
    return [bool(v) for v in op.attributes[name]]


def int_attr(op, name: str, default: int | None = None) -> int:
    if name not in op.attributes:
        if default is None:
            raise KeyError(f"{op.operation.name} has no attribute '{name}'")
        return default
    from jaxlib.mlir import ir

    return int(ir.IntegerAttr(op.attributes[name]).value)


def dense_array(attr) -> np.ndarray | None:
    """A ``DenseElementsAttr`` as a NumPy array, or ``None`` when the bindings cannot convert it."""
    try:
        return np.array(attr)
    except Exception:
        return None


def enum_text(op, name: str) -> str:
    """The keyword of an enum attribute, e.g. ``#stablehlo<comparison_direction LT>`` -> ``LT``."""
    text = str(op.attributes[name])
    return text.rstrip(">").split()[-1]


def positions(shape) -> np.ndarray:
    """The position map: ``arange(size).reshape(shape)`` — apply a structural op to it to get its index map."""
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)

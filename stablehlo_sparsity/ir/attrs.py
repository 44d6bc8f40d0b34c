"""Small helpers to read op attributes from jaxlib's MLIR bindings as Python / NumPy values."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

__all__ = ["i64_list", "int_attr", "bool_list", "dense_array", "dense_attr", "has_attr", "enum_text",
           "literal_from_text", "scalar_attr", "replica_group_sizes", "dict_attr", "string_attr", "symbol_ref",
           "bool_attr", "function_results", "float_attr", "attr_text", "enum_or", "enum_list",
           "dot_dimension_numbers", "conv_dimension_numbers"]


def has_attr(op, name: str) -> bool:
    return name in op.attributes


def _lookup(op, name: str):
    """The attribute ``name`` of ``op``, or ``None`` when it is absent: one lookup in the attribute map."""
    try:
        return op.attributes[name]
    except KeyError:
        return None


def i64_list(op, name: str, default=None) -> list[int]:
    """A ``DenseI64ArrayAttr`` / ``DenseIntElementsAttr`` / ``ArrayAttr`` of integers as a list.

    One lookup in the attribute map, and the elements read by index: iterating a ``DenseI64ArrayAttr`` costs
    four times as much on jaxlib 0.10 (3.7 µs for one element against 0.9), and a written-out program reads
    two such attributes for every scalar it slices out of its input."""
    a = _lookup(op, name)
    if a is None:
        if default is None:
            raise KeyError(f"{op.operation.name} has no attribute '{name}'")
        return list(default)
    try:
        return [int(a[i]) for i in range(len(a))]
    except TypeError:
        return [int(v) for v in np.array(a).ravel()]


def bool_list(op, name: str, default=None) -> list[bool]:
    a = _lookup(op, name)
    if a is None:
        return list(default) if default is not None else []
    return [bool(v) for v in a]


def int_attr(op, name: str, default: int | None = None) -> int:
    a = _lookup(op, name)
    if a is None:
        if default is None:
            raise KeyError(f"{op.operation.name} has no attribute '{name}'")
        return default
    from jaxlib.mlir import ir

    return int(ir.IntegerAttr(a).value)


def dense_array(attr) -> np.ndarray | None:
    """A ``DenseElementsAttr`` as a NumPy array, or ``None`` when the bindings cannot convert it."""
    try:
        return np.array(attr)
    except Exception:
        return None


def dense_attr(op, name: str) -> np.ndarray | None:
    """The ``DenseElementsAttr`` ``name`` of ``op`` as a NumPy array; ``None`` when absent or unconvertible."""
    a = _lookup(op, name)
    return None if a is None else dense_array(a)


def string_attr(op, name: str) -> str:
    """A ``StringAttr`` (e.g. ``sym_name``, ``call_target_name``) as a Python string."""
    from jaxlib.mlir import ir

    return ir.StringAttr(op.attributes[name]).value


def symbol_ref(op, name: str) -> str:
    """A ``FlatSymbolRefAttr`` (``func.call``'s ``callee``, ``composite``'s ``decomposition``) as its name."""
    from jaxlib.mlir import ir

    return ir.FlatSymbolRefAttr(op.attributes[name]).value


def bool_attr(op, name: str, default: bool = False) -> bool:
    """A ``BoolAttr`` (``is_stable``, ``lower`` …); ``default`` when absent."""
    a = _lookup(op, name)
    if a is None:
        return default
    from jaxlib.mlir import ir

    return bool(ir.BoolAttr(a).value)


def function_results(fn) -> list:
    """The result types of a ``func.func``."""
    from jaxlib.mlir import ir

    return list(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results)


def enum_text(op, name: str) -> str:
    """The keyword of an enum attribute, e.g. ``#stablehlo<comparison_direction LT>`` -> ``LT``."""
    text = str(op.attributes[name])
    return text.rstrip(">").split()[-1]


def enum_or(op, name: str, default: str | None) -> str | None:
    """:func:`enum_text`, or ``default`` when the op has no attribute ``name`` (an optional enum, e.g.
    ``compare_type``)."""
    return enum_text(op, name) if name in op.attributes else default


def enum_list(op, name: str) -> list[str]:
    """The keywords of an ``ArrayAttr`` of enums (``precision_config``); ``[]`` when absent."""
    if name not in op.attributes:
        return []
    return [str(a).rstrip(">").split()[-1] for a in op.attributes[name]]


def dot_dimension_numbers(op: Any) -> Any:
    """``dot_dimension_numbers`` of a ``dot_general`` (§dot_general) as the dialect's typed attribute."""
    from jaxlib.mlir.dialects import stablehlo

    return stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])


def conv_dimension_numbers(op: Any) -> Any:
    """``dimension_numbers`` of a ``convolution`` (§convolution) as the dialect's typed attribute."""
    from jaxlib.mlir.dialects import stablehlo

    return stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])


def gather_dimension_numbers(op: Any) -> Any:
    """``dimension_numbers`` of a ``gather`` (§gather) as the dialect's typed attribute."""
    from jaxlib.mlir.dialects import stablehlo

    return stablehlo.GatherDimensionNumbers(op.attributes["dimension_numbers"])


def scatter_dimension_numbers(op: Any) -> Any:
    """``scatter_dimension_numbers`` of a ``scatter`` (§scatter) as the dialect's typed attribute."""
    from jaxlib.mlir.dialects import stablehlo

    return stablehlo.ScatterDimensionNumbers(op.attributes["scatter_dimension_numbers"])


def function_type(fn: Any) -> Any:
    """A ``func.func``'s ``function_type`` as an ``ir.FunctionType``."""
    from jaxlib.mlir import ir

    return ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)


def float_attr(op, name: str) -> float:
    """A ``FloatAttr`` (``epsilon`` of batch normalization …) as a Python float."""
    from jaxlib.mlir import ir

    return float(ir.FloatAttr(op.attributes[name]).value)


def attr_text(op, name: str) -> str:
    """An attribute's printed form (e.g. an opaque ``mhlo.backend_config``); ``""`` when absent."""
    return str(op.attributes[name]) if name in op.attributes else ""


_HEX_LITERAL = re.compile(r'dense<"0x([0-9A-Fa-f]*)">')
_DENSE_LITERAL = re.compile(r"dense<(.*)>\s*:\s*tensor<", re.S)
_SCALAR_TOKEN = re.compile(r"0x[0-9A-Fa-f]+|[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)|true|false")


def literal_from_text(text: str, dt: np.dtype) -> np.ndarray | None:
    """A dense literal from its printed form: the hex blob MLIR prints for large literals (raw little-endian
    storage), or the list of decimal numbers it prints for small ones (hex tokens there are bit patterns)."""
    m = _HEX_LITERAL.search(text)
    if m:
        raw = bytes.fromhex(m.group(1))
        storage = np.dtype(np.uint8) if dt == np.bool_ else dt.newbyteorder("<")
        if len(raw) % storage.itemsize:
            return None
        arr = np.frombuffer(raw, storage)
        return (arr != 0) if dt == np.bool_ else arr.astype(dt)
    m = _DENSE_LITERAL.search(text)
    if m is None:
        return None
    tokens = _SCALAR_TOKEN.findall(m.group(1))
    comp = np.dtype(np.float32 if dt == np.complex64 else np.float64) if dt.kind == "c" else dt
    if dt.kind not in "fc" and dt.name != "bfloat16":
        return None  # the bindings read every integer and bool literal already
    bits_dt = np.dtype(f"u{comp.itemsize}")
    vals = np.empty(len(tokens), comp)
    hexes = np.array([tok.startswith("0x") for tok in tokens], bool)
    if hexes.any():  # small lists: one token per element, at most MLIR's hex-printing threshold
        vals[hexes] = np.array([int(tok, 16) for tok, h in zip(tokens, hexes) if h], bits_dt).view(comp)
    if (~hexes).any():
        vals[~hexes] = np.array([tok for tok, h in zip(tokens, hexes) if not h], np.float64).astype(comp)
    if dt.kind == "c":
        if len(vals) % 2:
            return None
        return vals.astype(np.float64).view(np.complex128).astype(dt)
    return vals


def scalar_attr(attr):
    """A scalar from a ``FloatAttr`` / ``IntegerAttr`` / splat ``DenseElementsAttr``."""
    from jaxlib.mlir import ir

    for cast in (lambda a: ir.FloatAttr(a).value, lambda a: ir.IntegerAttr(a).value):
        try:
            return cast(attr)
        except (ValueError, TypeError):
            pass
    arr = dense_array(attr)
    if arr is not None and arr.size == 1:
        return arr.reshape(()).item()
    return None


def scalar_of(op, name: str):
    """:func:`scalar_attr` of the attribute ``name`` of ``op`` (``chlo.constant_like``'s ``value``)."""
    return scalar_attr(op.attributes[name])


def replica_group_sizes(op) -> list[int]:
    """Sizes of the process groups in ``replica_groups`` (``-1`` entries are padding)."""
    if "replica_groups" not in op.attributes:
        return []
    groups = dense_array(op.attributes["replica_groups"])
    if groups is None:
        return []
    groups = np.asarray(groups).reshape(-1, groups.shape[-1] if groups.ndim else 1)
    return [int((g >= 0).sum()) for g in groups]


def dict_attr(op, name: str) -> dict:
    """A ``DictionaryAttr`` (``mhlo.backend_config``, ``mhlo.frontend_attributes``) as a Python dict."""
    from jaxlib.mlir import ir

    if name not in op.attributes:
        return {}
    try:
        d = ir.DictAttr(op.attributes[name])
    except (ValueError, TypeError):
        return {}
    out = {}
    for i in range(len(d)):
        na = d[i]
        v = na.attr
        for cast in (lambda a: int(ir.IntegerAttr(a).value), lambda a: ir.StringAttr(a).value):
            try:
                out[na.name] = cast(v)
                break
            except (ValueError, TypeError):
                continue
    return out

"""Ops deliberately without a rule, and why (listed in ``docs/reference/coverage.md``).

Each of them raises :class:`~stablehlo_sparsity.errors.UnsupportedOpError` naming the op and its location, or
— for tuples and quantized types — :class:`~stablehlo_sparsity.errors.UnsupportedTypeError` when its type is
read; with ``on_unknown="conservative"`` an op (not a type) is treated densely instead (warns).  Tokens are
read (data-free values: JAX threads them through ordered effects), but the ops that make, join or transfer
them by hand have no rule.
"""

from __future__ import annotations

from .registry import refuse

_TOKEN = "makes, joins or transfers tokens by hand (tokens themselves pass through calls, loops and callbacks)"
_TUPLE = "tuple types are not analyzed (UnsupportedTypeError); JAX does not emit them"
_QUANT = "quantized types are not analyzed (JAX's MLIR context cannot even parse them)"
_ASYNC = "XLA-internal asynchronous ops; not emitted by JAX"

refuse("stablehlo.tuple", _TUPLE)
refuse("stablehlo.get_tuple_element", _TUPLE)
refuse("stablehlo.after_all", _TOKEN)
refuse("stablehlo.create_token", _TOKEN)
refuse("stablehlo.infeed", _TOKEN)
refuse("stablehlo.outfeed", _TOKEN)
refuse("stablehlo.send", _TOKEN)
refuse("stablehlo.recv", _TOKEN)
refuse("stablehlo.uniform_quantize", _QUANT)
refuse("stablehlo.uniform_dequantize", _QUANT)
refuse("stablehlo.async_start", _ASYNC)
refuse("stablehlo.async_done", _ASYNC)
refuse("stablehlo.collective_reduce", "not in jaxlib 0.10.2's StableHLO dialect (cannot be parsed)")
refuse("stablehlo.einsum", "deprecated, not in the spec (legalize to dot_general first)")
refuse("stablehlo.unary_einsum", "deprecated, not in the spec (legalize first)")
refuse("chlo.ragged_dot", "no rule (JAX 0.10.2 lowers lax.ragged_dot to plain StableHLO)")
refuse("chlo.scan", "no rule (not emitted by JAX 0.10.2)")

"""Shared test helpers: compare detected patterns with numerical Jacobians at random points."""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np

from stablehlo_sparsity import jacobian_sparsity
from stablehlo_sparsity.dtypes import is_float


def peer():
    """The peer (``asdex``) for the tests that compare against it (marked ``peer``): skipped where it is not
    installed, but a failure where CI's peer leg requires it (``SHS_REQUIRE_PEER=1``), so that leg never passes by
    skipping everything."""
    import pytest

    if os.environ.get("SHS_REQUIRE_PEER"):
        import asdex

        return asdex
    return pytest.importorskip("asdex")


def _flat_jacobian(f, args, argnums, jac_fn=None):
    """The dense (m × n) Jacobian of flattened outputs w.r.t. flattened selected inputs.

    ``jac_fn``: a prepared (e.g. jitted) ``jax.jacfwd(f, argnums=tuple)`` to reuse across points."""
    argnums_t = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    jac = (jac_fn or jax.jacfwd(f, argnums=argnums_t))(*args)
    out_leaves = jax.tree_util.tree_leaves(jax.eval_shape(f, *args))
    # jac is a pytree of out leaves, each a tuple (per argnum) of pytrees of in leaves.
    out_struct = jax.tree_util.tree_structure(jax.eval_shape(f, *args))
    per_out = out_struct.flatten_up_to(jac)
    rows = []
    for o, blk in zip(out_leaves, per_out):
        m = int(np.prod(o.shape, dtype=np.int64))
        cols = [np.asarray(leaf).reshape(m, -1) for leaf in jax.tree_util.tree_leaves(blk)]
        rows.append(np.concatenate(cols, axis=1) if cols else np.zeros((m, 0)))
    return np.concatenate(rows, axis=0)


def random_like(x, rng):
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.asarray(rng.standard_normal(x.shape), dtype=x.dtype)
    return x


def numerical_pattern(f, *args, argnums=0, points=3, seed=0, sampler=None, jit=False):
    """Union over random points of ``|jax.jacfwd(f)| > 0`` (flattened, asdex convention).

    ``jit``: compile the Jacobian once and reuse it at every point (much faster than eager dispatch;
    needs array arguments)."""
    rng = np.random.default_rng(seed)
    argnums_t = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    jac_fn = jax.jit(jax.jacfwd(f, argnums=argnums_t)) if jit else None
    acc = None
    for _ in range(points):
        if sampler is not None:
            pt = sampler(rng)
        else:
            pt = [jax.tree_util.tree_map(lambda a: random_like(a, rng), a) if i in argnums_t else a
                  for i, a in enumerate(args)]
        J = _flat_jacobian(f, pt, argnums, jac_fn)
        nz = np.abs(np.nan_to_num(J, nan=1.0)) > 0
        acc = nz if acc is None else (acc | nz)
    return acc


def assert_sound(f, *args, argnums=0, exact=False, points=3, seed=0, sampler=None, jit=False, **kw):
    """The detected pattern contains every numerical nonzero; with ``exact``, equals the numerical union.

    ``kw`` go to ``jacobian_sparsity``: ``has_aux`` (the numerical side differentiates ``f(...)[0]``) and
    keyword arguments of ``f`` (bound on both sides)."""
    pat = jacobian_sparsity(f, *args, argnums=argnums, **kw)
    has_aux = kw.pop("has_aux", False)
    g = functools.partial(f, **kw) if kw else f
    if has_aux:
        g_aux = g
        g = lambda *a: g_aux(*a)[0]  # noqa: E731
    num = numerical_pattern(g, *args, argnums=argnums, points=points, seed=seed, sampler=sampler, jit=jit)
    det = pat.todense()
    assert det.shape == num.shape, (det.shape, num.shape)
    missed = np.argwhere(num & ~det)
    assert missed.size == 0, f"missed {len(missed)} nonzeros, e.g. {missed[:5].tolist()}\n{pat}"
    if exact:
        extra = np.argwhere(det & ~num)
        assert extra.size == 0, f"{len(extra)} extra nonzeros, e.g. {extra[:5].tolist()}\n{pat}"
    return pat


# ---------------------------------------------------------------- StableHLO oracles for fold rules
# A fold rule must reproduce StableHLO semantics exactly.  These helpers run one small function three ways:
# our constant lattice (inputs inlined as constants), the StableHLO reference interpreter, and XLA (CPU).

_MLIR_ELEM = {
    "float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16", "bool": "i1",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64",
    "complex64": "complex<f32>", "complex128": "complex<f64>",
}


def mlir_tensor_type(arr) -> str:
    """``tensor<2x3xf32>`` for a NumPy array."""
    arr = np.asarray(arr)
    return "tensor<" + "".join(f"{d}x" for d in arr.shape) + _MLIR_ELEM[arr.dtype.name] + ">"


def mlir_literal(arr) -> str:
    """An exact ``dense<"0x…"> : tensor<…>`` literal (raw little-endian bytes; every bit pattern survives)."""
    arr = np.asarray(arr)  # (not ascontiguousarray: it turns a 0-d array into 1-d; tobytes is C order)
    data = arr.astype(np.uint8) if arr.dtype == np.bool_ else arr
    return f'dense<"0x{data.astype(data.dtype.newbyteorder("<")).tobytes().hex().upper()}"> : {mlir_tensor_type(arr)}'


def op_module(body: str, inputs, outs, as_constants: bool = False) -> str:
    """A module whose ``@main`` takes ``%a0, %a1, …`` (or defines them as constants) and runs ``body``.

    ``body`` uses ``%a0 …`` and ends with its ``return``; ``outs`` are the result type strings."""
    inputs = [np.asarray(x) for x in inputs]
    head = "" if as_constants else ", ".join(f"%a{i}: {mlir_tensor_type(x)}" for i, x in enumerate(inputs))
    consts = "".join(f"    %a{i} = stablehlo.constant {mlir_literal(x)}\n" for i, x in enumerate(inputs)) \
        if as_constants else ""
    return (f"module @m {{\n  func.func @main({head}) -> ({', '.join(outs)}) {{\n{consts}"
            + "".join(f"    {line.strip()}\n" for line in body.strip().splitlines()) + "  }\n}\n")


def one_op(name: str, inputs, out_type: str, attrs: str = "") -> str:
    """The body of a single op in generic form: ``%r = "stablehlo.x"(%a0, …) {attrs} : (…) -> out``."""
    ins = ", ".join(f"%a{i}" for i in range(len(inputs)))
    tys = ", ".join(mlir_tensor_type(x) for x in inputs)
    attr = f" {{{attrs}}}" if attrs else ""
    return f'%r = "stablehlo.{name}"({ins}){attr} : ({tys}) -> {out_type}\nreturn %r : {out_type}'


def run_fold(body: str, inputs, outs):
    """Our constant lattice: the known value of each result (``None`` where the op was not folded)."""
    return fold_module(op_module(body, inputs, outs, as_constants=True))


def run_reference(body: str, inputs, outs):
    """The StableHLO reference interpreter (``_stablehlo.eval_module``; inputs inlined as constants, since
    the bindings cannot pass complex or bf16 attributes; complex and bf16 results are not supported)."""
    return reference_module(op_module(body, inputs, outs, as_constants=True))


def run_xla(body: str, inputs, outs):
    """XLA on CPU, with the inputs passed as runtime arguments (not constant-folded by XLA)."""
    return xla_module(op_module(body, inputs, outs), inputs)


def fold_module(text: str):
    """The known value of each result of ``@main`` (no arguments) under our constant lattice, or ``None``."""
    from stablehlo_sparsity import analyze_module

    return [r.const for r in analyze_module(text).results]


def reference_module(text: str, inputs=()):
    """Results of ``@main`` under the StableHLO reference interpreter (arguments: NumPy arrays of the types
    the Python bindings can build — not complex, not bf16)."""
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _stablehlo

    from stablehlo_sparsity import parse_module

    m = parse_module(text)
    with m.context:
        attrs = [ir.Attribute.parse(mlir_literal(x)) for x in inputs]
        return [np.array(r) for r in _stablehlo.eval_module(m, attrs)]


@functools.lru_cache(maxsize=32)
def _xla_executable(text: str):
    """``text`` compiled by XLA for one CPU device (cached: differential tests run a module on several inputs)."""
    import jax.extend
    from jax._src.lib import xla_client as xc

    backend = jax.extend.backend.get_backend("cpu")
    return backend, backend.compile_and_load(text, xc.DeviceList(tuple(backend.devices()[:1])), xc.CompileOptions())


def xla_module(text: str, inputs=()):
    """Results of ``@main`` (module text) compiled by XLA for CPU and run on ``inputs``."""
    backend, exe = _xla_executable(text)
    bufs = [jax.device_put(np.asarray(x), backend.devices()[0]) for x in inputs]
    return [np.asarray(r) for r in exe.execute(bufs)]


def assert_same_values(got, want, rtol=0.0):
    """Equal values and dtypes, NaN where NaN, and the same sign of zero (exact unless ``rtol``)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if is_float(got.dtype):  # (bfloat16 and the float8 types too: NumPy's kind "V")
        g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
        w = want.astype(g.dtype)
        for part in ((np.real, np.imag) if g.dtype.kind == "c" else (lambda v: v,)):
            gp, wp = part(g), part(w)
            assert np.array_equal(np.isnan(gp), np.isnan(wp)), (got, want)
            ok = ~np.isnan(wp)
            if rtol:
                np.testing.assert_allclose(gp[ok], wp[ok], rtol=rtol, atol=0)
            else:
                assert np.array_equal(gp[ok], wp[ok]), (got, want)
                zero = ok & (wp == 0)
                assert np.array_equal(np.signbit(gp[zero]), np.signbit(wp[zero])), ("sign of zero", got, want)
    else:
        assert np.array_equal(got, want), (got, want)


def calls_inside_reduction_bodies(module) -> bool:
    """Whether a reduction/sort/scatter body calls a function: XLA (jaxlib 0.10.2, CPU) segfaults compiling
    such a module directly (tests/support/xla_crashes/); oracles that compile modules skip them."""
    from stablehlo_sparsity.ir.helpers import nested_ops, region_ops

    for op in nested_ops(module.operation):
        if op.name in ("stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.scatter",
                       "stablehlo.select_and_scatter", "stablehlo.sort"):
            if any(inner.name == "func.call" for region in op.regions for inner in region_ops(region)):
                return True
    return False

"""The long tail: batch normalization, random numbers, composites, CHLO ops, dynamic shapes, sharding
markers, single-device collectives, and the types we refuse (tuples, tokens, quantized)."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from helpers import op_module, run_xla
from test_linalg import num_pattern
from stablehlo_sparsity._compat import STABLEHLO_EXP2_LOG2_FMA
from stablehlo_sparsity import (
    DynamicShapeError,
    SparsityError,
    UnsupportedOpError,
    UnsupportedTypeError,
    analyze_module,
    jacobian_sparsity,
)
import paths

RNG = np.random.default_rng(0)


def assert_sound(f, *args, argnums=0, exact=False, points=3):
    """Detected pattern ⊇ (or, with ``exact``, =) the numerical one (jitted ``jax.jacfwd``)."""
    pat = jacobian_sparsity(f, *args, argnums=argnums)
    det, num = pat.todense(), num_pattern(f, *args, argnums=argnums, points=points)
    assert not (num & ~det).any(), f"missed {np.argwhere(num & ~det)[:5].tolist()}"
    if exact:
        assert not (det & ~num).any(), f"extra {np.argwhere(det & ~num)[:5].tolist()}"
    return pat


# ============================================================ batch norm: ops vs their spec decompositions
EPS = 0.25  # exactly representable in f32 (the attribute) and f64


def bn_inference(x, scale, offset, mean, var, fi):
    shape = [1] * x.ndim
    shape[fi] = -1
    r = lambda v: v.reshape(shape)
    return r(scale) * (x - r(mean)) / jnp.sqrt(r(var) + EPS) + r(offset)


def bn_training(x, scale, offset, fi):
    axes = tuple(d for d in range(x.ndim) if d != fi)
    mean = x.mean(axis=axes)
    var = ((x - jnp.expand_dims(mean, axes)) ** 2).mean(axis=axes)
    return bn_inference(x, scale, offset, mean, var, fi), mean, var


def bn_grad(x, scale, mean, var, gy, fi):
    """§batch_norm_grad's decomposition (XLA's batchnorm_expander)."""
    axes = tuple(d for d in range(x.ndim) if d != fi)
    b = lambda v: jnp.expand_dims(v, axes)
    n = x.size / x.shape[fi]
    centered = x - b(mean)
    stddev = jnp.sqrt(b(var) + EPS)
    i1 = gy * n
    i2 = b(gy.sum(axis=axes))
    i3 = b((gy * centered).sum(axis=axes))
    i5 = i3 * centered / (b(var) + EPS)
    grad_x = b(scale) / stddev / n * (i1 - i2 - i5)
    return grad_x, (gy * centered / stddev).sum(axis=axes), gy.sum(axis=axes)


def _ty(shape):
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f64>"


def bn_module(shape, fi):
    """One function running the three batch-norm ops on %a0 = x, %a1..%a4 = scale, offset, mean, variance,
    %a5 = grad_output."""
    F = shape[fi]
    x, v = _ty(shape), _ty((F,))
    attrs = f"{{epsilon = {EPS} : f32, feature_index = {fi} : i64}}"
    body = f"""
      %i = "stablehlo.batch_norm_inference"(%a0, %a1, %a2, %a3, %a4) {attrs} : ({x}, {v}, {v}, {v}, {v}) -> {x}
      %t:3 = "stablehlo.batch_norm_training"(%a0, %a1, %a2) {attrs} : ({x}, {v}, {v}) -> ({x}, {v}, {v})
      %g:3 = "stablehlo.batch_norm_grad"(%a0, %a1, %a3, %a4, %a5) {attrs} : ({x}, {v}, {v}, {v}, {x}) -> ({x}, {v}, {v})
      return %i, %t#0, %t#1, %t#2, %g#0, %g#1, %g#2 : {x}, {x}, {v}, {v}, {x}, {v}, {v}"""
    return body, [x, x, v, v, x, v, v]


@pytest.mark.parametrize("shape,fi", [((2, 3, 4), 2), ((3, 2, 2), 0)])
def test_batch_norm_ops_exact(shape, fi):
    """§batch_norm_inference / _training / _grad: XLA computes their spec decompositions (checked), and
    our patterns are exactly the decompositions' numerical Jacobian patterns."""
    F = shape[fi]
    args = [RNG.standard_normal(shape), RNG.standard_normal(F), RNG.standard_normal(F), RNG.standard_normal(F),
            RNG.random(F) + 0.5, RNG.standard_normal(shape)]

    def ref(x, scale, offset, mean, var, gy):
        return (bn_inference(x, scale, offset, mean, var, fi), *bn_training(x, scale, offset, fi),
                *bn_grad(x, scale, mean, var, gy, fi))

    body, outs = bn_module(shape, fi)
    got = run_xla(body, args, outs)
    want = ref(*[jnp.asarray(a) for a in args])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
    det = analyze_module(op_module(body, args, outs), wrt="all").pattern.todense()

    def sampler(rng):  # keep the variance positive
        pts = [jnp.asarray(rng.standard_normal(np.shape(a))) for a in args]
        pts[4] = jnp.asarray(rng.random(F) + 0.5)
        return pts

    num = num_pattern(ref, *[jnp.asarray(a) for a in args], argnums=tuple(range(6)), sampler=sampler)
    assert np.array_equal(det, num)


def test_flax_style_batch_norm_exact():
    """Batch norm as layers write it (mean/var over batch and space, per channel): exact."""
    def bn(x, scale, bias):
        mean = x.mean(axis=(0, 1, 2), keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=(0, 1, 2), keepdims=True)
        return (x - mean) * lax.rsqrt(var + 1e-5) * scale + bias

    x = jnp.ones((2, 3, 3, 4))
    pat = assert_sound(bn, x, jnp.ones(4), jnp.zeros(4), argnums=(0, 1, 2), exact=True)
    assert pat.shape == (72, 80)


# ============================================================ random numbers
def test_rng_depends_on_its_parameters_only():
    text = """func.func @main(%a: tensor<f64>, %b: tensor<f64>, %x: tensor<3xf64>) -> (tensor<3xf64>, tensor<2x2xf64>) {
      %s = stablehlo.constant dense<3> : tensor<1xi64>
      %u = stablehlo.rng %a, %b, %s, distribution = UNIFORM : (tensor<f64>, tensor<f64>, tensor<1xi64>) -> tensor<3xf64>
      %k = stablehlo.constant dense<[1, 2]> : tensor<2xui64>
      %k2, %bits = stablehlo.rng_bit_generator %k, algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x2xf64>)
      %y = stablehlo.multiply %u, %x : tensor<3xf64>
      return %y, %bits : tensor<3xf64>, tensor<2x2xf64>
    }"""
    det = analyze_module(text, wrt="all").pattern.todense()
    assert det[:3, :2].all() and np.array_equal(det[:3, 2:], np.eye(3, dtype=bool))
    assert not det[3:].any()


def test_jax_random_inside_functions_exact():
    def f(x):
        k1, k2 = jax.random.split(jax.random.key(0))
        noise = jax.random.normal(k1, x.shape)
        keep = jax.random.bernoulli(k2, 0.5, x.shape)
        return x * noise + jnp.where(keep, x, 0.0) + jax.random.uniform(k2, x.shape, minval=x[0], maxval=2.0)

    assert_sound(f, jnp.ones(5), exact=True)


# ============================================================ composite
def test_composite_is_its_decomposition():
    """(JAX has no JVP for composites: the oracle is the decomposition itself.)"""
    decomposition = lambda x, y: jnp.sin(x) * y[::-1]
    f = jax.lax.composite(decomposition, name="my.op")
    g = lambda x: f(x, jnp.cos(x))
    assert "stablehlo.composite" in jax.jit(g).lower(jnp.ones(4)).as_text()
    plain = lambda x: decomposition(x, jnp.cos(x))
    assert jacobian_sparsity(g, jnp.ones(4)) == assert_sound(plain, jnp.ones(4), exact=True)


def test_map_reads_its_computation():
    text = """func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>) {
      %0 = "stablehlo.map"(%a, %b) ({
        ^bb0(%x: tensor<f32>, %y: tensor<f32>):
          %s = stablehlo.sine %x : tensor<f32>
          stablehlo.return %s : tensor<f32>
      }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %1 = "stablehlo.map"(%a, %b) ({
        ^bb0(%x: tensor<f32>, %y: tensor<f32>):
          %s = stablehlo.multiply %y, %c : tensor<f32>
          stablehlo.return %s : tensor<f32>
      }) {dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      return %0, %1 : tensor<4xf32>, tensor<4xf32>
    }"""
    det = analyze_module(text, wrt="all").pattern.todense()
    eye, zero = np.eye(4, dtype=bool), np.zeros((4, 4), bool)
    assert np.array_equal(det[:4], np.hstack([eye, zero, np.zeros((4, 1), bool)]))
    assert np.array_equal(det[4:], np.hstack([zero, eye, np.ones((4, 1), bool)]))


# ============================================================ CHLO ops JAX emits
def test_chlo_elementwise_special_functions_exact():
    def f(x):
        p = jnp.abs(x) + 0.5
        return [lax.erf_inv(jnp.tanh(x) * 0.9), lax.lgamma(p), lax.digamma(p), lax.bessel_i1e(x),
                lax.polygamma(jnp.ones_like(x), p), lax.igamma(p, p + 1.0), lax.erfc(x), jnp.sinh(x)]

    text = jax.jit(f).lower(jnp.ones(3)).as_text()
    # what each lowers to: a CHLO op, or from JAX 0.12.1 StableHLO arithmetic (erf_inv with fma; bessel_i1e: None,
    # no mark of its own) or a jaxlib custom call (lgamma, digamma)
    later = {"chlo.erf_inv": "stablehlo.fma", "chlo.lgamma": "cpu_lgamma_ffi", "chlo.digamma": "cpu_digamma_ffi",
             "chlo.bessel_i1e": None, "chlo.polygamma": "chlo.polygamma"}
    for name, since in later.items():
        assert name in text if not STABLEHLO_EXP2_LOG2_FMA else (since is None or since in text), name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_sound(f, jnp.ones(3), exact=True)


def test_top_k_rows_exact():
    f = lambda x: lax.top_k(x, 2)[0]
    assert "chlo.top_k" in jax.jit(f).lower(jnp.ones((3, 5))).as_text()
    pat = assert_sound(f, jnp.ones((3, 5)), points=40)  # locally one element per value; globally the row
    assert pat.nnz == 3 * 2 * 5 and np.array_equal(pat.todense()[:2, :5], np.ones((2, 5), bool))


def test_chlo_broadcast_and_constant_like():
    text = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
      %0 = chlo.broadcast_add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %1 = "chlo.constant_like"(%a) {value = 2.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %2 = chlo.broadcast_multiply %a, %1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      return %0, %2 : tensor<2x3xf32>, tensor<2x3xf32>
    }"""
    an = analyze_module(text, wrt="all")
    det = an.pattern.todense()
    assert np.array_equal(det[:6, :6], np.eye(6, dtype=bool))
    assert np.array_equal(det[:6, 6:], np.tile(np.eye(3, dtype=bool), (2, 1)))
    assert np.array_equal(det[6:], np.hstack([np.eye(6, dtype=bool), np.zeros((6, 3), bool)]))


# ============================================================ dynamic shapes
def test_dynamic_shapes_are_refused_clearly():
    f = jax.jit(lambda x: jnp.sin(x) * 2)
    exp = jax.export.export(f)(jax.ShapeDtypeStruct(jax.export.symbolic_shape("n"), jnp.float32))
    with pytest.raises(DynamicShapeError, match=r"tensor<\?xf32>"):
        analyze_module(exp.mlir_module())
    text = """func.func @main(%a: tensor<4xf32>, %s: tensor<1xi64>) -> tensor<?xf32> {
      %0 = stablehlo.dynamic_reshape %a, %s : (tensor<4xf32>, tensor<1xi64>) -> tensor<?xf32>
      return %0 : tensor<?xf32>
    }"""
    with pytest.raises(DynamicShapeError):
        analyze_module(text, wrt=[0])


def test_dynamic_ops_with_static_results_are_their_static_twins():
    text = """func.func @main(%a: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<2xf32>, tensor<3xf32>) {
      %shape = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
      %0 = "stablehlo.dynamic_broadcast_in_dim"(%a, %shape) {broadcast_dimensions = array<i64: 1>} : (tensor<3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
      %s1 = stablehlo.constant dense<3> : tensor<1xi64>
      %1 = stablehlo.dynamic_reshape %a, %s1 : (tensor<3xf32>, tensor<1xi64>) -> tensor<3xf32>
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %lo = stablehlo.constant dense<1> : tensor<1xi64>
      %hi = stablehlo.constant dense<0> : tensor<1xi64>
      %2 = stablehlo.dynamic_pad %a, %z, %lo, %hi, %hi : (tensor<3xf32>, tensor<f32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xf32>
      %st = stablehlo.constant dense<1> : tensor<1xi64>
      %li = stablehlo.constant dense<3> : tensor<1xi64>
      %3 = stablehlo.real_dynamic_slice %a, %st, %li, %st : (tensor<3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xf32>
      %n = stablehlo.get_dimension_size %a, dim = 0 : (tensor<3xf32>) -> tensor<i32>
      %i = stablehlo.dynamic_iota %s1, dim = 0 : (tensor<1xi64>) -> tensor<3xi32>
      %nb = stablehlo.broadcast_in_dim %n, dims = [] : (tensor<i32>) -> tensor<3xi32>
      %c = stablehlo.compare LT, %i, %nb : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
      %4 = stablehlo.select %c, %a, %a : tensor<3xi1>, tensor<3xf32>
      return %0, %1, %2, %3, %4 : tensor<2x3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<2xf32>, tensor<3xf32>
    }"""
    det = analyze_module(text, wrt="all").pattern.todense()
    eye = np.eye(3, dtype=bool)
    want = np.vstack([eye, eye, eye, np.zeros((1, 3), bool), eye, eye[1:], eye])
    assert np.array_equal(det, want)


def test_dynamic_sizes_from_values_are_refused():
    text = """func.func @main(%a: tensor<3xf32>, %s: tensor<1xi64>) -> tensor<2xf32> {
      %li = stablehlo.constant dense<3> : tensor<1xi64>
      %0 = stablehlo.real_dynamic_slice %a, %s, %li, %s : (tensor<3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }"""
    with pytest.raises(DynamicShapeError, match="real_dynamic_slice.*start_indices"):
        analyze_module(text, wrt=[0])


# ============================================================ sharding and single-device collectives
def test_sharding_constraint_and_one_device_shard_map():
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((1,), ("x",))

    def f(x):
        x = jax.lax.with_sharding_constraint(x, jax.sharding.SingleDeviceSharding(jax.devices()[0]))
        g = jax.shard_map(lambda a: jax.lax.psum(a * 2, "x") + jax.lax.all_gather(a[::-1], "x", tiled=True),
                          mesh=mesh, out_specs=P("x"))
        return g(x)

    text = jax.jit(f).lower(jnp.ones(4)).as_text()
    assert "sdy.sharding_constraint" in text and "stablehlo.all_reduce" in text and "stablehlo.all_gather" in text
    assert_sound(f, jnp.ones(4), exact=True)


def test_cross_device_collectives_are_refused():
    text = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = "stablehlo.all_reduce"(%a) ({
        ^bb0(%x: tensor<f32>, %y: tensor<f32>):
          %s = stablehlo.add %x, %y : tensor<f32>
          stablehlo.return %s : tensor<f32>
      }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    with pytest.raises(UnsupportedOpError, match="all_reduce.*cross-device"):
        analyze_module(text)
    permute = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = "stablehlo.collective_permute"(%a) {source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    assert np.array_equal(analyze_module(permute).pattern.todense(), np.eye(4, dtype=bool))


# ============================================================ types we refuse
@pytest.mark.parametrize("text", [
    """func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
      %t = stablehlo.tuple %a, %a : tuple<tensor<2xf32>, tensor<2xf32>>
      %0 = stablehlo.get_tuple_element %t[0] : (tuple<tensor<2xf32>, tensor<2xf32>>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }""",
    """func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
      %t = stablehlo.create_token : !stablehlo.token
      return %a : tensor<2xf32>
    }""",
    """func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
      %q = stablehlo.uniform_quantize %a : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32, 0.5:3>>
      %0 = stablehlo.uniform_dequantize %q : (tensor<2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }""",
], ids=["tuple", "token", "quantized"])
def test_tuples_tokens_and_quantized_types_are_refused(text):
    """Tuples: UnsupportedTypeError naming the type.  Tokens are read (ordered effects thread them through
    the entry), but the ops that make or join them by hand have no rule: UnsupportedOpError naming the op.
    Quantized types do not even parse in JAX's MLIR context (no quant dialect): InputError with MLIR's
    diagnostic."""
    error = UnsupportedOpError if "token" in text else UnsupportedTypeError if "quant" not in text else SparsityError
    with pytest.raises(error, match="tuple|token|quant"):
        analyze_module(text)


def test_ordered_effects_tokens_are_not_arguments_or_outputs():
    """``io_callback(..., ordered=True)`` adds a token argument and result to the entry (before the data):
    they are skipped, so argument 0 is still ``x`` and the rows are ``f``'s outputs (tests/analysis/test_callbacks.py
    covers the callbacks themselves)."""
    from jax.experimental import io_callback

    def f(x):
        io_callback(lambda a: None, None, x, ordered=True)
        return x * 2

    assert np.array_equal(jacobian_sparsity(f, jnp.ones(3)).todense(), np.eye(3, dtype=bool))
    text = jax.jit(f).lower(jnp.ones(3)).as_text()
    assert "!stablehlo.token" in text
    assert np.array_equal(analyze_module(text).pattern.todense(), np.eye(3, dtype=bool))


# ============================================================ the coverage table
def test_coverage_table_lists_every_spec_op_and_rule():
    import importlib.util

    from stablehlo_sparsity.analysis.rules import DEPS_RULES

    path = paths.REPO / "scripts" / "coverage_table.py"
    spec = importlib.util.spec_from_file_location("coverage_table", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = mod.render()
    for op in mod.SPEC_OPS:
        assert text.count(f"| `stablehlo.{op}` |") == 1, op
    for name in DEPS_RULES:
        assert f"`{name}`" in text, name
    assert "| `stablehlo.tuple` | error |" in text and "| `stablehlo.fft` | exact |" in text
    assert mod.main(["--check"]) == 0  # docs/reference/coverage.md is what the registry says


def test_every_rule_registration_states_its_kind():
    from stablehlo_sparsity.analysis.rules import COVERAGE, DEPS_RULES
    from stablehlo_sparsity.analysis.rules.registry import KINDS

    assert set(COVERAGE) == set(DEPS_RULES)
    assert all(c.kind in KINDS and c.note for c in COVERAGE.values())

"""Elementwise rules: derivative kinds, value-aware drops, and fold rules against two StableHLO oracles.

* Derivative kinds are checked on hand-written StableHLO (ops JAX never emits directly included) and on JAX
  functions against the union of ``|jax.jacfwd| > 0`` at random points (exact equality: every elementwise
  pattern here is known).
* Every fold rule is compared, on small constants full of edge cases (signed zeros, NaN, infinities, INT_MIN,
  shift amounts past the bit width, ties), with the StableHLO reference interpreter and with XLA on CPU.
"""

import functools
import itertools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

import stablehlo_sparsity as ss
from stablehlo_sparsity import analyze_module, jacobian_sparsity
from stablehlo_sparsity._compat import STABLEHLO_EXP2_LOG2_FMA
from helpers import (assert_same_values, assert_sound, fold_module, mlir_literal, mlir_tensor_type,
                     numerical_pattern, one_op, op_module, reference_module, run_fold, run_xla, xla_module)

BF16 = np.dtype(ml_dtypes.bfloat16)


def pattern_of(body, inputs, outs, **kw):
    """Dense pattern of a hand-written module whose arguments ``%a0 …`` are all inputs."""
    return analyze_module(op_module(body, inputs, outs), **{"wrt": "all", **kw}).pattern.todense()


def named_op(name, inputs, out_type, attrs=""):
    """``one_op`` for any dialect (``chlo.sinh`` …)."""
    dialect, op = name.split(".", 1)
    return one_op(op, inputs, out_type, attrs).replace('"stablehlo.', f'"{dialect}.', 1)


I4, Z4 = np.eye(4, dtype=bool), np.zeros((4, 4), bool)
F4 = np.zeros(4)
INT4 = np.zeros(4, np.int32)

# ---------------------------------------------------------------- derivative kinds, hand-written StableHLO
UNARY_DIFF = ["stablehlo." + n for n in
              ["abs", "cbrt", "cosine", "exponential", "exponential_minus_one", "log", "log_plus_one", "logistic",
               "negate", "rsqrt", "sine", "sqrt", "tan", "tanh", "real"]] + \
             ["chlo." + n for n in ["acos", "acosh", "asin", "asinh", "atan", "atanh", "bessel_i1e", "cosh", "sinh",
                                    "digamma", "erf", "erf_inv", "erfc", "lgamma", "square", "tan", "conj"]]
UNARY_ZERO = ["stablehlo." + n for n in ["ceil", "floor", "round_nearest_afz", "round_nearest_even", "sign", "imag"]]
BINARY_DIFF = ["stablehlo." + n for n in ["add", "atan2", "divide", "maximum", "minimum", "multiply", "power",
                                          "remainder", "subtract"]] + \
              ["chlo." + n for n in ["next_after", "polygamma", "zeta"]]
INT_UNARY = ["not", "popcnt", "count_leading_zeros", "abs", "negate", "sign"]
INT_BINARY = ["and", "or", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical", "add",
              "multiply", "divide", "remainder", "maximum", "power"]


#: Ops the tests below check by hand beyond the lists above (complex parts, predicates, kernels), with the
#: derivative kind each test expects.
HAND_CHECKED = {"stablehlo.complex": "all", "stablehlo.sign": "complex", "stablehlo.is_finite": "none",
                "chlo.is_inf": "none", "chlo.is_neg_inf": "none", "chlo.is_pos_inf": "none",
                "chlo._asin_acos_kernel": "all", "chlo.mulhi": "none",
                # (JAX 0.12.1's new ops: test_ops_new_in_jax_0_12_1, skipped where the parser lacks them)
                "stablehlo.exp2": "all", "stablehlo.log2": "all", "stablehlo.fma": "all"}

NEW_IN_0_12_1 = pytest.mark.skipif(not STABLEHLO_EXP2_LOG2_FMA, reason="stablehlo.exp2/log2/fma: jaxlib >= 0.12.1")


def _expected_kinds() -> dict[str, set[str]]:
    """Per op name, the derivative kinds these tests expect of it (integer ops: ``none``)."""
    kinds: dict[str, set[str]] = {}
    for names, kind in ((UNARY_DIFF, "all"), (BINARY_DIFF, "all"), (UNARY_ZERO, "none")):
        for n in names:
            kinds.setdefault(n, set()).add(kind)
    for n in INT_UNARY + INT_BINARY:
        kinds.setdefault("stablehlo." + n, set()).add("none")
    for n, kind in HAND_CHECKED.items():
        kinds.setdefault(n, set()).add(kind)
    return kinds


def test_every_elementwise_rule_is_tested_with_its_kind():
    """The tests iterate over the rules' own tables: a new entry in ``ELEMENTWISE`` / ``CHLO_ELEMENTWISE``
    without a test here fails, and so does a table kind that the tests never expect of that op."""
    from stablehlo_sparsity.analysis.rules.chlo import CHLO_ELEMENTWISE
    from stablehlo_sparsity.analysis.rules.elementwise import ELEMENTWISE

    expected = _expected_kinds()
    table = {**ELEMENTWISE, **CHLO_ELEMENTWISE}
    untested = sorted(set(table) - set(expected))
    assert not untested, f"elementwise rules without a test in this file: {untested}"
    for name, (kind, _) in table.items():
        # "complex": no derivative from real operands (imag, sign), every operand's from complex ones
        assert kind == "complex" or kind in expected[name], (name, kind, expected[name])


def test_chlo_asin_acos_kernel_is_elementwise_and_differentiable():
    """The kernel CHLO's complex asin/acos legalize to: each result element on its own operand element."""
    c4 = np.zeros(4, np.complex128)
    got = pattern_of(named_op("chlo._asin_acos_kernel", [c4], "tensor<4xcomplex<f64>>"), [c4],
                     ["tensor<4xcomplex<f64>>"])
    assert np.array_equal(got, I4)


def test_chlo_mulhi_of_integers_is_empty():
    got = pattern_of(named_op("chlo.mulhi", [INT4, INT4], "tensor<4xi32>"), [INT4, INT4], ["tensor<4xi32>"])
    assert got.shape == (4, 8) and not got.any()


@pytest.mark.parametrize("name", UNARY_DIFF)
def test_unary_differentiable_is_identity(name):
    assert np.array_equal(pattern_of(named_op(name, [F4], "tensor<4xf64>"), [F4], ["tensor<4xf64>"]), I4)


@pytest.mark.parametrize("name", UNARY_ZERO)
def test_unary_zero_derivative_is_empty(name):
    """floor/ceil/round/sign are piecewise constant; imag of a real operand is the constant 0."""
    assert np.array_equal(pattern_of(named_op(name, [F4], "tensor<4xf64>"), [F4], ["tensor<4xf64>"]), Z4)


@pytest.mark.parametrize("name", BINARY_DIFF)
def test_binary_differentiable_depends_on_both(name):
    """remainder too: ∂fmod(x, y)/∂y = -trunc(x/y) is nonzero wherever |x| >= |y|."""
    got = pattern_of(named_op(name, [F4, F4], "tensor<4xf64>"), [F4, F4], ["tensor<4xf64>"])
    assert np.array_equal(got, np.hstack([I4, I4]))


@NEW_IN_0_12_1
def test_ops_new_in_jax_0_12_1():
    """§exp2 / §log2: elementwise; §fma ``a·b + c``: every operand, and a known zero factor drops the other
    factor's derivative (``∂/∂a = b``) but never the addend's."""
    for name in ("stablehlo.exp2", "stablehlo.log2"):
        assert np.array_equal(pattern_of(named_op(name, [F4], "tensor<4xf64>"), [F4], ["tensor<4xf64>"]), I4)
    got = pattern_of(named_op("stablehlo.fma", [F4, F4, F4], "tensor<4xf64>"), [F4, F4, F4], ["tensor<4xf64>"])
    assert np.array_equal(got, np.hstack([I4, I4, I4]))
    body = ("%z = stablehlo.constant dense<[0.0, 2.0, 0.0, 3.0]> : tensor<4xf64>\n"
            "%0 = stablehlo.fma %a0, %z, %a1 : tensor<4xf64>\nreturn %0 : tensor<4xf64>")
    got = pattern_of(body, [F4, F4], ["tensor<4xf64>"])
    keep = np.diag([False, True, False, True])
    assert np.array_equal(got, np.hstack([keep, I4]))
    # through JAX, against jacfwd: jnp.exp2 / jnp.log2 lower to the new ops, lax.fma to §fma
    text = jax.jit(lambda x, y, z: [jnp.exp2(x), jnp.log2(y), lax.fma(x, y, z)]).lower(F4, F4, F4).as_text()
    assert all(f"stablehlo.{n}" in text for n in ("exp2", "log2", "fma"))
    assert_sound(lambda x, y, z: jnp.exp2(x) + jnp.log2(jnp.abs(y) + 1.0) * lax.fma(x, y, z),
                 jnp.ones(N), jnp.ones(N), jnp.ones(N), argnums=(0, 1, 2), exact=True, points=3)
    # the Hessian of Σ fma(a, b, c) + exp2(c): a·b cross pairs, c on its own diagonal, nothing else
    v = np.random.default_rng(0).standard_normal(12)
    g = lambda v: jnp.sum(lax.fma(v[:4], v[4:8], v[8:]) + jnp.exp2(v[8:]))  # noqa: E731
    want = np.asarray(jax.hessian(g)(v)) != 0
    got = ss.hessian_sparsity(g, v, method="direct").todense()
    assert np.array_equal(got, want)


@pytest.mark.parametrize("name", ["is_inf", "is_neg_inf", "is_pos_inf"])
def test_chlo_predicates_are_empty(name):
    got = pattern_of(named_op("chlo." + name, [F4], "tensor<4xi1>"), [F4], ["tensor<4xi1>"])
    assert not got.any() and got.shape == (4, 4)


@pytest.mark.parametrize("name", INT_UNARY)
def test_integer_unary_ops_are_empty(name):
    got = pattern_of(one_op(name, [INT4], "tensor<4xi32>"), [INT4], ["tensor<4xi32>"])
    assert got.shape == (4, 4) and not got.any()


@pytest.mark.parametrize("name", INT_BINARY)
def test_integer_binary_ops_are_empty(name):
    got = pattern_of(one_op(name, [INT4, INT4], "tensor<4xi32>"), [INT4, INT4], ["tensor<4xi32>"])
    assert got.shape == (4, 8) and not got.any()


def test_bitwise_ops_on_booleans_are_empty():
    body = """%0 = stablehlo.compare GT, %a0, %a1, FLOAT : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xi1>
    %1 = stablehlo.not %0 : tensor<4xi1>
    %2 = stablehlo.xor %0, %1 : tensor<4xi1>
    %3 = stablehlo.convert %2 : (tensor<4xi1>) -> tensor<4xf64>
    %4 = stablehlo.is_finite %a0 : (tensor<4xf64>) -> tensor<4xi1>
    %5 = stablehlo.convert %4 : (tensor<4xi1>) -> tensor<4xf64>
    %6 = stablehlo.add %3, %5 : tensor<4xf64>
    return %6 : tensor<4xf64>"""
    assert not pattern_of(body, [F4, F4], ["tensor<4xf64>"]).any()


@pytest.mark.parametrize("src,dst,expect_identity", [
    ("f64", "f32", True), ("f32", "f64", True), ("f64", "bf16", True), ("f64", "f16", True),
    ("f64", "complex<f64>", True), ("f64", "i32", False), ("f64", "ui8", False), ("f64", "i1", False),
])
def test_convert_keeps_float_and_drops_integer(src, dst, expect_identity):
    body = f"""%0 = stablehlo.convert %a0 : (tensor<4x{src}>) -> tensor<4x{dst}>
    return %0 : tensor<4x{dst}>"""
    x = np.zeros(4, {"f64": np.float64, "f32": np.float32}[src])
    got = pattern_of(body, [x], [f"tensor<4x{dst}>"])
    assert np.array_equal(got, I4 if expect_identity else Z4)


def test_convert_of_integer_to_float_is_empty():
    body = """%0 = stablehlo.convert %a0 : (tensor<4xf64>) -> tensor<4xi64>
    %1 = stablehlo.convert %0 : (tensor<4xi64>) -> tensor<4xf64>
    %2 = stablehlo.multiply %1, %a0 : tensor<4xf64>
    return %1, %2 : tensor<4xf64>, tensor<4xf64>"""
    got = pattern_of(body, [F4], ["tensor<4xf64>", "tensor<4xf64>"])
    assert np.array_equal(got, np.vstack([Z4, I4]))


def test_complex_real_imag_sign_chain():
    """complex(x, y) depends on both; sign of a complex value varies (z/|z|); real/imag keep both (the
    lattice does not split a complex element into its parts: sound, not exact)."""
    body = """%0 = stablehlo.complex %a0, %a1 : tensor<4xcomplex<f64>>
    %1 = stablehlo.sign %0 : tensor<4xcomplex<f64>>
    %2 = stablehlo.real %1 : (tensor<4xcomplex<f64>>) -> tensor<4xf64>
    %3 = stablehlo.imag %0 : (tensor<4xcomplex<f64>>) -> tensor<4xf64>
    %4 = stablehlo.abs %0 : (tensor<4xcomplex<f64>>) -> tensor<4xf64>
    return %2, %3, %4 : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>"""
    got = pattern_of(body, [F4, F4], ["tensor<4xf64>"] * 3)
    assert np.array_equal(got, np.tile(np.hstack([I4, I4]), (3, 1)))


def test_reduce_precision_keeps_dependencies():
    body = """%0 = stablehlo.reduce_precision %a0, format = e5m10 : tensor<4xf64>
    return %0 : tensor<4xf64>"""
    assert np.array_equal(pattern_of(body, [F4], ["tensor<4xf64>"]), I4)


def test_bitcast_convert_width_changes():
    """f64 -> 2 x f32 adds a minor dimension; 2 x f32 -> f64 removes it; f64 -> i64 has no derivative."""
    body = """%0 = stablehlo.bitcast_convert %a0 : (tensor<3xf64>) -> tensor<3x2xf32>
    %1 = stablehlo.bitcast_convert %0 : (tensor<3x2xf32>) -> tensor<3xf64>
    %2 = stablehlo.bitcast_convert %a0 : (tensor<3xf64>) -> tensor<3xi64>
    return %0, %1, %2 : tensor<3x2xf32>, tensor<3xf64>, tensor<3xi64>"""
    got = pattern_of(body, [np.zeros(3)], ["tensor<3x2xf32>", "tensor<3xf64>", "tensor<3xi64>"])
    want = np.vstack([np.repeat(np.eye(3, dtype=bool), 2, axis=0), np.eye(3, dtype=bool), np.zeros((3, 3), bool)])
    assert np.array_equal(got, want)


def test_select_and_clamp_with_scalar_operands():
    """§select accepts a scalar predicate, §clamp scalar bounds: their single row is repeated."""
    body = """%p = stablehlo.compare GT, %a2, %a3, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
    %0 = stablehlo.select %p, %a0, %a1 : (tensor<i1>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
    %1 = stablehlo.clamp %a2, %a0, %a3 : (tensor<f64>, tensor<4xf64>, tensor<f64>) -> tensor<4xf64>
    return %0, %1 : tensor<4xf64>, tensor<4xf64>"""
    s = np.zeros(())
    got = pattern_of(body, [F4, F4, s, s], ["tensor<4xf64>", "tensor<4xf64>"])
    ones = np.ones((4, 1), bool)
    want = np.vstack([np.hstack([I4, I4, ~ones, ~ones]), np.hstack([I4, Z4, ones, ones])])
    assert np.array_equal(got, want)


def test_select_with_known_scalar_predicate_takes_one_side():
    body = """%t = stablehlo.constant dense<true> : tensor<i1>
    %0 = stablehlo.select %t, %a0, %a1 : (tensor<i1>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
    return %0 : tensor<4xf64>"""
    assert np.array_equal(pattern_of(body, [F4, F4], ["tensor<4xf64>"]), np.hstack([I4, Z4]))


def test_clamp_with_known_crossed_bounds_is_constant():
    """min >= max: the result is max whatever the operand (elements 0 and 2 here)."""
    body = """%lo = stablehlo.constant dense<[2.0, 0.0, 1.0, -1.0]> : tensor<4xf64>
    %hi = stablehlo.constant dense<[1.0, 1.0, 1.0, 0x7FF8000000000000]> : tensor<4xf64>
    %0 = stablehlo.clamp %lo, %a0, %hi : (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
    return %0 : tensor<4xf64>"""
    got = pattern_of(body, [F4], ["tensor<4xf64>"])
    assert np.array_equal(got.diagonal(), [False, True, False, True])


@pytest.mark.parametrize("op,const_pos,values,kept", [
    ("multiply", 1, [0.0, 2.0, -0.0, np.nan], [False, True, False, True]),
    ("multiply", 0, [0.0, 2.0, -0.0, np.inf], [False, True, False, True]),
    ("divide", 0, [0.0, 2.0, -0.0, 1.0], [False, True, False, True]),       # c / x: zero numerator
    ("divide", 1, [np.inf, 2.0, -np.inf, 0.0], [False, True, False, True]),  # x / c: 1/±inf = 0
    ("power", 1, [0.0, 2.0, 0.5, -0.0], [False, True, True, False]),         # x ** 0 = 1
    ("power", 0, [1.0, 2.0, 0.0, 1.0], [False, True, True, False]),          # 1 ** y = 1
    ("atan2", 1, [0.0, 2.0, -0.0, 1.0], [False, True, False, True]),         # atan2(y, 0) = ±π/2
    ("atan2", 0, [0.0, 2.0, -0.0, 1.0], [False, True, False, True]),         # atan2(0, x) ∈ {0, ±π}
    ("remainder", 0, [0.0, 2.0, -0.0, 1.0], [False, True, False, True]),     # fmod(0, y) = 0
    ("remainder", 1, [0.0, 2.0, np.inf, 1.0], [True, True, True, True]),     # ∂fmod(x, c)/∂x = 1
    ("add", 1, [0.0, 2.0, 0.0, 1.0], [True, True, True, True]),
])
def test_value_aware_drops(op, const_pos, values, kept):
    c = np.array(values)
    operands = ["%c", "%a0"] if const_pos == 0 else ["%a0", "%c"]
    body = f"""%c = stablehlo.constant {mlir_literal(c)}
    %0 = stablehlo.{op} {operands[0]}, {operands[1]} : tensor<4xf64>
    return %0 : tensor<4xf64>"""
    assert np.array_equal(pattern_of(body, [F4], ["tensor<4xf64>"]).diagonal(), kept)


# ---------------------------------------------------------------- JAX functions vs numerical Jacobians
def _rng_sampler(*makers):
    """A sampler drawing each argument with its own maker ``(rng, k) -> array`` (k counts the points)."""
    count = itertools.count()

    def sample(rng):
        k = next(count)
        return [m(rng, k) for m in makers]

    return sample


N = 6
normal = lambda rng, k: rng.standard_normal(N)
positive = lambda rng, k: 0.5 + rng.random(N) * 2
unit = lambda rng, k: rng.uniform(-0.9, 0.9, N)
above_one = lambda rng, k: 1.1 + rng.random(N)
big = lambda rng, k: 10 * rng.standard_normal(N)
alternating = lambda rng, k: (-1.0) ** (np.arange(N) + k) * (0.5 + rng.random(N))  # each sign at every element

UNARY_JAX = {
    "abs": (jnp.abs, normal), "cbrt": (jnp.cbrt, normal), "cos": (jnp.cos, normal), "exp": (jnp.exp, normal),
    "expm1": (jnp.expm1, normal), "log": (jnp.log, positive), "log1p": (jnp.log1p, positive),
    "logistic": (lax.logistic, normal), "neg": (jnp.negative, normal), "rsqrt": (lax.rsqrt, positive),
    "sin": (jnp.sin, normal), "sqrt": (jnp.sqrt, positive), "tan": (jnp.tan, unit), "tanh": (jnp.tanh, normal),
    "sinh": (jnp.sinh, normal), "cosh": (jnp.cosh, normal), "arcsin": (jnp.arcsin, unit),
    "arccos": (jnp.arccos, unit), "arctan": (jnp.arctan, normal), "arcsinh": (jnp.arcsinh, normal),
    "arccosh": (jnp.arccosh, above_one), "arctanh": (jnp.arctanh, unit), "erf": (lax.erf, normal),
    "erfc": (lax.erfc, normal), "erf_inv": (lax.erf_inv, unit), "lgamma": (lax.lgamma, positive),
    "digamma": (lax.digamma, positive), "square": (jnp.square, normal), "i1e": (lax.bessel_i1e, normal),
    "reduce_precision": (lambda x: lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10), normal),
    "to_f32": (lambda x: x.astype(jnp.float32), normal),
    "cube": (lambda x: x ** 3, normal), "pow_2.5": (lambda x: x ** 2.5, positive),
    # zero derivatives
    "floor": (jnp.floor, big), "ceil": (jnp.ceil, big), "round": (jnp.round, big),
    "round_afz": (lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO), big), "sign": (jnp.sign, normal),
    "int_roundtrip": (lambda x: x.astype(jnp.int32).astype(x.dtype), big),
    "isfinite": (lambda x: jnp.isfinite(x).astype(x.dtype), normal),
    "copysign": (lambda x: jnp.copysign(1.0, x), normal),
    "floor_divide": (lambda x: x // 0.7, big),
}


def _groups(table):
    """Ops sharing a sampler, traced together as one function with a tuple of outputs (one lowering and one
    compiled Jacobian per group instead of per op)."""
    groups: dict = {}
    for name, (f, *makers) in sorted(table.items()):
        groups.setdefault(tuple(makers), {})[name] = f
    return [pytest.param(makers, ops, id="+".join(ops)) for makers, ops in groups.items()]


def check_group(makers, ops, points=3):
    """Each op's rows of the detected pattern equal the numerical union (exact), named on failure."""
    names = list(ops)
    nargs = len(makers)
    f = lambda *xs: tuple(ops[n](*xs) for n in names)  # noqa: E731
    args = [jnp.ones(N)] * nargs
    argnums = tuple(range(nargs))
    det = jacobian_sparsity(f, *args, argnums=argnums).todense()
    num = numerical_pattern(f, *args, argnums=argnums, points=points, sampler=_rng_sampler(*makers), jit=True)
    bad = {n: {"missed": np.argwhere(num[i * N:(i + 1) * N] & ~det[i * N:(i + 1) * N]).tolist(),
               "extra": np.argwhere(det[i * N:(i + 1) * N] & ~num[i * N:(i + 1) * N]).tolist()}
           for i, n in enumerate(names)}
    bad = {n: v for n, v in bad.items() if v["missed"] or v["extra"]}
    assert not bad, bad


@pytest.mark.parametrize("makers,ops", _groups(UNARY_JAX))
def test_unary_jax_exact(makers, ops):
    check_group(makers, ops)


def _regimes(rng, k):
    """x below, inside and above the bounds (-1, 1) in rotation, so every element visits every regime."""
    return np.array([-3.0, 0.0, 3.0])[(np.arange(N) + k) % 3] + 0.1 * rng.standard_normal(N)


BINARY_JAX = {
    "add": (jnp.add, normal, normal), "sub": (jnp.subtract, normal, normal), "mul": (jnp.multiply, normal, normal),
    "div": (jnp.divide, normal, positive), "max": (jnp.maximum, normal, normal),
    "min": (jnp.minimum, normal, normal), "atan2": (jnp.arctan2, normal, normal),
    "pow": (jnp.power, positive, normal), "rem": (lax.rem, big, positive), "fmod": (jnp.fmod, big, positive),
    "mod": (jnp.mod, big, positive), "complex_abs": (lambda x, y: jnp.abs(lax.complex(x, y)), normal, normal),
    "complex_real": (lambda x, y: jnp.real(lax.complex(x, y) * (1 + 2j)), normal, normal),
    "where": (lambda x, y: jnp.where(x > 0, x, y), alternating, normal),
    "compare": (lambda x, y: (x > y).astype(x.dtype) * 3.0, normal, normal),
    "hypot": (jnp.hypot, normal, normal), "logaddexp": (jnp.logaddexp, normal, normal),
    "xlogy": (jax.scipy.special.xlogy, normal, positive),
}


@pytest.mark.parametrize("makers,ops", _groups(BINARY_JAX))
def test_binary_jax_exact(makers, ops):
    check_group(makers, ops, points=4)


def test_clamp_depends_on_operand_and_both_bounds():
    """The peer bug: clamp's derivative in its operand is 1 between the bounds — it must not be dropped."""
    lo = lambda rng, k: -1 + 0.01 * rng.standard_normal(N)
    hi = lambda rng, k: 1 + 0.01 * rng.standard_normal(N)
    pat = assert_sound(lambda a, x, b: lax.clamp(a, x, b), jnp.ones(N), jnp.ones(N), jnp.ones(N), argnums=(0, 1, 2),
                       exact=True, points=3, sampler=_rng_sampler(lo, _regimes, hi), jit=True)
    assert pat.nnz == 3 * N
    # and with scalar bounds, through jnp.clip (maximum/minimum) and lax.clamp (stablehlo.clamp)
    assert_sound(lambda x: jnp.clip(x, -1.0, 1.0), jnp.ones(N), exact=True, points=3,
                 sampler=_rng_sampler(_regimes), jit=True)
    assert_sound(lambda x: lax.clamp(-1.0, x, 1.0), jnp.ones(N), exact=True, points=3,
                 sampler=_rng_sampler(_regimes), jit=True)


def test_value_aware_through_jax():
    mask = jnp.array([0.0, 1.0, 0.0, 2.0, -0.0, 3.0])
    p = assert_sound(lambda x: x * mask + mask / jnp.exp(x), jnp.ones(N), exact=True, jit=True)
    assert p.nnz == 3
    keep = jnp.array([True, False, True, False, True, False])
    p = assert_sound(lambda x, y: jnp.where(keep, x, y), jnp.ones(N), jnp.ones(N), argnums=(0, 1), exact=True, jit=True)
    assert p.nnz == N


def test_integer_results_have_no_dependencies():
    def f(x):
        i = jnp.floor(x * 3).astype(jnp.int32)
        j = (i << 2) ^ (i >> 1) | lax.population_count(i)
        return (j % 3).astype(x.dtype) + jnp.sign(x)

    assert jacobian_sparsity(f, jnp.ones(N)).nnz == 0
    assert_sound(f, jnp.ones(N), exact=True, jit=True)


# ---------------------------------------------------------------- fold rules against the two oracles
with np.errstate(all="ignore"):  # the edge-case inputs overflow on purpose (1e300 -> f32 …)
    SPECIAL64 = np.array([-2.5, -0.5, -0.0, 0.0, 0.49999999999999994, 1.5, 2.5, np.inf, -np.inf, np.nan, 1e300, -7.25])
    SPECIAL32 = SPECIAL64.astype(np.float32)
    OTHER64 = np.array([2.0, -0.0, 0.0, -0.0, 3.0, -1.5, np.inf, 2.0, np.nan, 1.0, 1e-300, 0.5])
    FINITE64 = SPECIAL64[np.isfinite(SPECIAL64)]
    I32 = np.array([-2**31, -7, -1, 0, 1, 5, 2**31 - 1, 100, -100, 8], np.int32)
    I32_DIVISOR = np.array([3, 2, 7, -3, -1, -2, 2, -7, 9, 3], np.int32)
    SHIFTS = np.array([-1, 0, 1, 31, 32, 33, 100, -2**31, 5, 2], np.int32)
    U8 = np.array([0, 1, 7, 128, 200, 255, 16, 3], np.uint8)
    U8_SHIFTS = np.array([1, 9, 0, 7, 8, 200, 3, 255], np.uint8)
    BOOL = np.array([True, False, True, False])
    BOOL2 = np.array([True, True, False, False])

    REF = ("reference",)
    REF_XLA = ("reference", "xla")  # XLA too where implementations could plausibly differ (edges of integer ops …)


    def cplx(re, im):
        """Complex values part by part (``re + 1j * im`` turns an infinite ``im`` into a NaN real part)."""
        re, im = np.broadcast_arrays(np.asarray(re, np.float64), np.asarray(im, np.float64))
        out = np.empty(re.shape, np.complex128)
        out.real, out.imag = re, im
        return out
    XLA = ("xla",)


    def _case(name, inputs, out_dtype=None, attrs="", oracles=REF, rtol=0.0, out_type=None):
        out_type = out_type or mlir_tensor_type(np.zeros(np.shape(inputs[0]), out_dtype or np.asarray(inputs[0]).dtype))
        return pytest.param(name, inputs, out_type, attrs, oracles, rtol, id=f"{name}-{out_type}-{len(FOLD_CASES)}")


    def _cmp(direction, ctype):
        return (f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                f"compare_type = #stablehlo<comparison_type {ctype}>")


    FOLD_CASES: list = []
    for _n in ["abs", "negate", "ceil", "floor", "round_nearest_afz", "round_nearest_even", "sign", "sqrt"]:
        FOLD_CASES.append(_case(_n, [SPECIAL64], oracles=REF_XLA if _n in ("round_nearest_afz", "sign") else REF))
        FOLD_CASES.append(_case(_n, [SPECIAL32]))
    FOLD_CASES.append(_case("is_finite", [SPECIAL64], np.bool_))
    FOLD_CASES.append(_case("real", [SPECIAL64]))
    FOLD_CASES.append(_case("imag", [SPECIAL64]))
    for _n in ["exponential", "exponential_minus_one", "log", "log_plus_one", "logistic", "rsqrt", "sine", "cosine",
               "tan", "tanh", "cbrt"]:
        FOLD_CASES.append(_case(_n, [SPECIAL64], rtol=1e-13))
        FOLD_CASES.append(_case(_n, [SPECIAL32], rtol=2e-6))
    for _n in ["add", "subtract", "multiply", "divide", "maximum", "minimum", "remainder"]:
        FOLD_CASES.append(_case(_n, [SPECIAL64, OTHER64], oracles=REF_XLA if _n in ("maximum", "minimum") else REF))
        FOLD_CASES.append(_case(_n, [SPECIAL32, OTHER64.astype(np.float32)]))
    FOLD_CASES.append(_case("atan2", [SPECIAL64, OTHER64], rtol=1e-14))
    FOLD_CASES.append(_case("power", [np.abs(SPECIAL64), OTHER64], rtol=1e-14))
    FOLD_CASES.append(_case("power", [SPECIAL64, np.array([2.0, 3, 0.5, -1, 2, 0.0, 1, 2, 0, -2, 2, 3])], rtol=1e-14))
    for _n in ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and", "or", "xor"]:
        FOLD_CASES.append(_case(_n, [I32, I32_DIVISOR], oracles=REF_XLA if _n in ("divide", "remainder") else REF))
    for _n in ["negate", "abs", "sign", "not", "popcnt", "count_leading_zeros"]:
        FOLD_CASES.append(_case(_n, [I32], oracles=REF_XLA if _n in ("popcnt", "count_leading_zeros") else REF))
        FOLD_CASES.append(_case(_n, [I32.astype(np.int64) * 3]))
    for _n in ["shift_left", "shift_right_arithmetic", "shift_right_logical"]:
        FOLD_CASES.append(_case(_n, [I32, SHIFTS], oracles=REF_XLA))
        FOLD_CASES.append(_case(_n, [I32.astype(np.int64) * -3, SHIFTS.astype(np.int64) * 2]))
        FOLD_CASES.append(_case(_n, [U8, U8_SHIFTS], oracles=REF_XLA))
    for _n in ["divide", "remainder", "count_leading_zeros", "popcnt", "not", "power"]:
        FOLD_CASES.append(_case(_n, [U8, np.array([1, 2, 3, 4, 5, 6, 7, 100], np.uint8)][:1 if _n in
                                     ("count_leading_zeros", "popcnt", "not") else 2]))
    FOLD_CASES.append(_case("power", [np.array([2, 1, -1, -1, 3, -2, 0, 7], np.int32),
                                      np.array([-1, -3, -3, -4, 40, 3, 0, 0], np.int32)], oracles=REF_XLA))
    for _n in ["and", "or", "xor"]:
        FOLD_CASES.append(_case(_n, [BOOL, BOOL2]))
    FOLD_CASES.append(_case("not", [BOOL]))
    for _d in ["EQ", "NE", "GE", "GT", "LE", "LT"]:
        FOLD_CASES.append(_case("compare", [SPECIAL64, OTHER64], np.bool_, _cmp(_d, "FLOAT")))
        FOLD_CASES.append(_case("compare", [I32, I32_DIVISOR], np.bool_, _cmp(_d, "SIGNED")))
        FOLD_CASES.append(_case("compare", [U8, U8_SHIFTS], np.bool_, _cmp(_d, "UNSIGNED")))
        FOLD_CASES.append(_case("compare", [BOOL, BOOL2], np.bool_, _cmp(_d, "UNSIGNED")))
        # the reference interpreter treats TOTALORDER like FLOAT; XLA implements IEEE totalOrder
        FOLD_CASES.append(_case("compare", [SPECIAL64, np.array([-0.0, 0.0, 0.0, -0.0, 1, 2, np.nan, np.inf, -np.nan,
                                                                 np.nan, 0, 1])], np.bool_, _cmp(_d, "TOTALORDER"), XLA))
    for _src, _dst in [(SPECIAL64, np.int32), (SPECIAL32, np.uint8), (SPECIAL64, np.int64), (SPECIAL64, np.uint64),
                       (SPECIAL64, np.float32), (SPECIAL64, np.float16), (SPECIAL64, np.bool_), (SPECIAL32, np.float64),
                       (I32, np.int8), (I32, np.uint16), (I32, np.float32), (I32, np.bool_), (BOOL, np.float32),
                       (BOOL, np.int32), (np.array([2**53 + 1, -2**63, 2**62 + 3], np.int64), np.float64),
                       (np.array([1e10, -1e10, 2.0**31, -2.0**31 - 1, 255.9, -0.9]), np.int32)]:
        FOLD_CASES.append(_case("convert", [_src], _dst, oracles=REF_XLA if _src.dtype.kind == "f" and _dst in
                                (np.int32, np.uint8, np.uint64) else REF))
    FOLD_CASES.append(_case("convert", [SPECIAL64], BF16, oracles=XLA))
    FOLD_CASES.append(_case("convert", [SPECIAL64.astype(BF16)], np.float32, oracles=XLA))
    FOLD_CASES.append(_case("convert", [cplx(SPECIAL64, OTHER64).astype(np.complex64)], np.float32, oracles=XLA))
    FOLD_CASES.append(_case("convert", [cplx([1.5, -2.7, 1e20, np.nan], 1.0)], np.int32, oracles=XLA))
    FOLD_CASES.append(_case("convert", [SPECIAL32], np.complex128, oracles=XLA))
    FOLD_CASES.append(_case("complex", [SPECIAL32, OTHER64.astype(np.float32)], np.complex64, oracles=XLA))
    for _n, _dt, _rtol in [("sign", None, 1e-15), ("abs", np.float64, 1e-15), ("exponential", None, 1e-14),
                           ("negate", None, 0.0), ("real", np.float64, 0.0), ("imag", np.float64, 0.0)]:
        FOLD_CASES.append(_case(_n, [cplx(FINITE64, FINITE64[::-1])], _dt, oracles=XLA, rtol=_rtol))
    for _n in ["add", "subtract", "multiply", "divide"]:
        FOLD_CASES.append(_case(_n, [cplx(FINITE64, 1.0), cplx(FINITE64[::-1] + 0.5, -2.0)], oracles=XLA, rtol=1e-15))
    FOLD_CASES.append(_case("add", [cplx(SPECIAL64, OTHER64), cplx(OTHER64, SPECIAL64)], oracles=XLA))
    for _n in ["add", "multiply", "maximum", "divide"]:
        FOLD_CASES.append(_case(_n, [SPECIAL64.astype(BF16), OTHER64.astype(BF16)], oracles=XLA))
    _RP_INPUT = np.concatenate([np.random.default_rng(0).standard_normal(16) * 10.0 ** np.arange(-8, 8),
                                [0.0, -0.0, np.inf, -np.inf, 1e-40, 65520.0, 1.0009765625, 1.00048828125,
                                 1.00146484375, 3e38, 1e-310, 2.0 ** -14, 2.0 ** -15, 2.0 ** -24]])
    for _e, _m in [(5, 10), (8, 7), (4, 3), (2, 1), (5, 0), (11, 52)]:
        for _x in (_RP_INPUT, _RP_INPUT.astype(np.float32)):
            FOLD_CASES.append(_case("reduce_precision", [_x], attrs=f"exponent_bits = {_e} : i32, "
                                    f"mantissa_bits = {_m} : i32", oracles=REF_XLA if _e == 4 else REF))
    FOLD_CASES.append(_case("reduce_precision", [SPECIAL64], attrs="exponent_bits = 5 : i32, mantissa_bits = 2 : i32"))
    FOLD_CASES.append(_case("bitcast_convert", [SPECIAL64], out_type="tensor<12x2xf32>"))
    FOLD_CASES.append(_case("bitcast_convert", [SPECIAL32.reshape(6, 2)], out_type="tensor<6xf64>"))
    FOLD_CASES.append(_case("bitcast_convert", [I32], out_type="tensor<10xf32>"))
    FOLD_CASES.append(_case("bitcast_convert", [SPECIAL64], out_type="tensor<12xi64>"))
    FOLD_CASES.append(_case("select", [SPECIAL64 > 0, SPECIAL64, OTHER64], np.float64))
    FOLD_CASES.append(_case("select", [np.array(True), SPECIAL64, OTHER64], np.float64, out_type="tensor<12xf64>"))
    FOLD_CASES.append(_case("clamp", [np.array(-1.0), SPECIAL64, np.array(2.0)], out_type="tensor<12xf64>"))
    FOLD_CASES.append(_case("clamp", [OTHER64, SPECIAL64, OTHER64 + 1], out_type="tensor<12xf64>"))
    FOLD_CASES.append(_case("clamp", [np.array(-3, np.int32), I32, np.array(50, np.int32)], out_type="tensor<10xi32>"))


def batch_module(cases, as_constants):
    """All cases as one module (one XLA compilation instead of one per case): case ``i`` reads
    ``%c<i>_<j>`` and returns ``%r<i>``."""
    params, consts, lines, rets, flat_inputs = [], [], [], [], []
    for i, (name, inputs, out_type, attrs) in enumerate(cases):
        names = [f"%c{i}_{j}" for j in range(len(inputs))]
        for nm, x in zip(names, inputs):
            if as_constants:
                consts.append(f"{nm} = stablehlo.constant {mlir_literal(x)}")
            else:
                params.append(f"{nm}: {mlir_tensor_type(x)}")
                flat_inputs.append(np.asarray(x))
        attr = f" {{{attrs}}}" if attrs else ""
        tys = ", ".join(mlir_tensor_type(x) for x in inputs)
        lines.append(f'%r{i} = "stablehlo.{name}"({", ".join(names)}){attr} : ({tys}) -> {out_type}')
        rets.append((f"%r{i}", out_type))
    body = "\n    ".join(consts + lines + [f"return {', '.join(r for r, _ in rets)} : {', '.join(t for _, t in rets)}"])
    text = (f"module @m {{\n  func.func @main({', '.join(params)}) -> ({', '.join(t for _, t in rets)}) {{\n"
            f"    {body}\n  }}\n}}\n")
    return text, flat_inputs


@functools.lru_cache(maxsize=None)
def fold_results():
    """Each case's value three ways — ours, the reference interpreter's, XLA's — from three batch runs."""
    cases = [p.values[:4] for p in FOLD_CASES]
    ours = fold_module(batch_module(cases, as_constants=True)[0])
    ref_idx = [i for i, p in enumerate(FOLD_CASES) if "reference" in p.values[4]]
    ref = reference_module(batch_module([cases[i] for i in ref_idx], as_constants=True)[0])
    xla_idx = [i for i, p in enumerate(FOLD_CASES) if "xla" in p.values[4]]
    xla = xla_module(*batch_module([cases[i] for i in xla_idx], as_constants=False))
    return ours, {"reference": dict(zip(ref_idx, ref)), "xla": dict(zip(xla_idx, xla))}


@pytest.mark.parametrize("case", range(len(FOLD_CASES)), ids=[p.id for p in FOLD_CASES])
def test_fold_matches_oracles(case):
    name, inputs, out_type, attrs, oracles, rtol = FOLD_CASES[case].values
    ours, theirs = fold_results()
    assert ours[case] is not None, "the op was not folded"
    for oracle in oracles:
        assert_same_values(ours[case], theirs[oracle][case], rtol=rtol)


def test_single_op_oracles_agree_with_batch():
    """The batch harness against the one-op harness, on a couple of cases."""
    xla_cases = sorted(fold_results()[1]["xla"])
    for case in (xla_cases[0], xla_cases[-1]):
        name, inputs, out_type, attrs, oracles, rtol = FOLD_CASES[case].values
        body = one_op(name, inputs, out_type, attrs)
        assert_same_values(run_fold(body, inputs, [out_type])[0], fold_results()[0][case])
        assert_same_values(run_xla(body, inputs, [out_type])[0], fold_results()[1]["xla"][case])


@pytest.mark.parametrize("name,inputs,out_type", [
    ("divide", [I32, np.where(I32_DIVISOR == 2, 0, I32_DIVISOR).astype(np.int32)], "tensor<10xi32>"),
    ("remainder", [I32, np.where(I32_DIVISOR == 2, 0, I32_DIVISOR).astype(np.int32)], "tensor<10xi32>"),
    ("divide", [np.array([-2**31], np.int32), np.array([-1], np.int32)], "tensor<1xi32>"),
    ("power", [np.array([0], np.int32), np.array([-1], np.int32)], "tensor<1xi32>"),
    ("power", [np.array([3], np.uint8), np.array([200], np.uint8)], "tensor<1xui8>"),  # read as -56 by XLA
    ("remainder", [np.array([1 + 1j]), np.array([1 - 1j])], "tensor<1xcomplex<f64>>"),
])
def test_implementation_defined_results_are_not_folded(name, inputs, out_type):
    """Division by zero, INT_MIN / -1, 0 ** -1, complex remainder: the spec leaves them open, so the value
    stays unknown (and its index sets empty: integer results carry no derivative anyway)."""
    (got,) = run_fold(one_op(name, inputs, out_type), inputs, [out_type])
    assert got is None


def test_reduce_precision_of_nan_without_mantissa_is_not_folded():
    """e5m0: the reference interpreter turns NaN into +inf, XLA keeps NaN — no value is guessed."""
    x = np.array([np.nan, 1.5])
    attrs = "exponent_bits = 5 : i32, mantissa_bits = 0 : i32"
    (got,) = run_fold(one_op("reduce_precision", [x], "tensor<2xf64>", attrs), [x], ["tensor<2xf64>"])
    assert got is None


@pytest.mark.parametrize("name", ["abs", "sign", "exponential", "sqrt"])
def test_complex_with_non_finite_parts_is_not_folded(name):
    """NumPy and XLA disagree on e.g. |NaN + inf·i| (inf vs NaN): such values stay unknown."""
    x = cplx([1.0, np.inf, 2.0], [np.nan, 1.0, 0.0])
    out = "tensor<3xf64>" if name == "abs" else "tensor<3xcomplex<f64>>"
    (got,) = run_fold(one_op(name, [x], out), [x], [out])
    assert got is None


def test_mismatched_compare_type_is_not_folded():
    """UNSIGNED on a signed type is invalid (XLA's verifier rejects it): do not guess a value."""
    inputs = [np.array([-1, 1], np.int32), np.array([1, 2], np.int32)]
    (got,) = run_fold(one_op("compare", inputs, "tensor<2xi1>", _cmp("LT", "UNSIGNED")), inputs, ["tensor<2xi1>"])
    assert got is None


@pytest.mark.parametrize("literal,dtype,want", [
    ("dense<[(1.0, 2.0), (3.0, -4.0)]> : tensor<2xcomplex<f32>>", np.complex64, [1 + 2j, 3 - 4j]),
    ("dense<(0.5, -1.0)> : tensor<3xcomplex<f64>>", np.complex128, [0.5 - 1j] * 3),
    ("dense<[1.5, -0.0, 0x7FC0, 0xFF80]> : tensor<4xbf16>", BF16, [1.5, -0.0, np.nan, -np.inf]),
    ("dense<2.5> : tensor<2xbf16>", BF16, [2.5, 2.5]),
])
def test_constants_the_bindings_cannot_read_are_parsed(literal, dtype, want):
    t = literal.rsplit(": ", 1)[1]
    (got,) = run_fold(f"%r = stablehlo.constant {literal}\nreturn %r : {t}", [], [t])
    assert_same_values(got, np.array(want).astype(dtype))


def test_large_complex_and_bf16_constants_are_parsed_from_hex():
    z = (np.arange(150) - 1j * np.arange(150) / 4).astype(np.complex64)
    b = (np.arange(150) / 8).astype(BF16)
    body = """%r = stablehlo.multiply %a0, %a0 : tensor<150xcomplex<f32>>
    %s = stablehlo.add %a1, %a1 : tensor<150xbf16>
    return %r, %s : tensor<150xcomplex<f32>>, tensor<150xbf16>"""
    outs = ["tensor<150xcomplex<f32>>", "tensor<150xbf16>"]
    got = run_fold(body, [z, b], outs)
    want = run_xla(body, [z, b], outs)
    for g, w in zip(got, want):
        assert_same_values(g, w)


# ---------------------------------------------------------------- bit tricks: a float's bits through integers
def fisr(x):
    """The fast inverse square root: integer arithmetic on the bits of a float32."""
    i = jnp.int32(0x5F3759DF) - (lax.bitcast_convert_type(x, jnp.int32) >> 1)
    return lax.bitcast_convert_type(i, jnp.float32)


def next_up(x):
    return lax.bitcast_convert_type(lax.bitcast_convert_type(x, jnp.int64) + 1, jnp.float64)


def log2_approx(x):
    return lax.bitcast_convert_type(x, jnp.int32).astype(jnp.float32) / 2 ** 23 - 127


def rolled_bits(x):
    return lax.bitcast_convert_type(jnp.roll(lax.bitcast_convert_type(x, jnp.int64), 1), jnp.float64)


def loop_bits(x):
    b = lax.fori_loop(0, 3, lambda i, b: b + 1, lax.bitcast_convert_type(x, jnp.int64))
    return lax.bitcast_convert_type(b, jnp.float64)


def _finite_difference_pattern(f, x, rel=1e-3):
    """JAX differentiates bitcast_convert as a constant, so the truth here comes from finite differences."""
    x = np.asarray(x)
    f0 = np.asarray(f(jnp.asarray(x)), np.float64)
    cols = []
    for j in range(x.size):
        xp = x.copy()
        xp[j] += rel * abs(x[j])
        cols.append(np.asarray(f(jnp.asarray(xp)), np.float64) - f0)
    return np.abs(np.stack(cols, axis=1)) > 0


@pytest.mark.parametrize("f,dtype,exact", [(fisr, np.float32, True), (next_up, np.float64, True),
                                           (log2_approx, np.float32, True), (rolled_bits, np.float64, False),
                                           (loop_bits, np.float64, False)])
def test_float_bits_through_integers_keep_dependencies(f, dtype, exact):
    """Integer arithmetic on a float's bit pattern, then back to a float: a continuous function almost
    everywhere.  Integers carry no index sets, so the way back recovers them from the bitcasts (per element
    when the integer ops keep elements in place; through calls and loops, coarsely)."""
    x = np.array([0.3, 1.7, 5.0, 0.02], dtype)
    got = jacobian_sparsity(f, jnp.asarray(x)).todense()
    want = _finite_difference_pattern(f, x)
    assert not (want & ~got).any(), (got, want)
    if exact:
        assert np.array_equal(got, want)


def test_integer_to_float_without_bitcasts_stays_empty():
    """Counters, argmax, truncations: converting them back to floats adds nothing."""
    def f(x):
        i = jnp.floor(x).astype(jnp.int64) + jnp.arange(4)
        return x * jnp.arange(4.0) + jnp.argmax(x).astype(x.dtype) + i.astype(x.dtype)

    p = jacobian_sparsity(f, jnp.ones(4))
    assert p == np.diag([False, True, True, True])


def test_float_bits_carried_into_a_loop_body():
    """The bits enter a while loop as a carried value and become a float again inside the body."""
    body = """%bits = stablehlo.bitcast_convert %a0 : (tensor<3xf64>) -> tensor<3xi64>
    %zero = stablehlo.constant dense<0.0> : tensor<3xf64>
    %c0 = stablehlo.constant dense<0> : tensor<i64>
    %r:3 = stablehlo.while(%i = %c0, %b = %bits, %acc = %zero) : tensor<i64>, tensor<3xi64>, tensor<3xf64>
    cond {
      %c2 = stablehlo.constant dense<2> : tensor<i64>
      %p = stablehlo.compare LT, %i, %c2, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %f = stablehlo.bitcast_convert %b : (tensor<3xi64>) -> tensor<3xf64>
      %s = stablehlo.add %acc, %f : tensor<3xf64>
      %c1 = stablehlo.constant dense<1> : tensor<i64>
      %j = stablehlo.add %i, %c1 : tensor<i64>
      stablehlo.return %j, %b, %s : tensor<i64>, tensor<3xi64>, tensor<3xf64>
    }
    return %r#2 : tensor<3xf64>"""
    got = pattern_of(body, [np.zeros(3)], ["tensor<3xf64>"])
    assert got[np.eye(3, dtype=bool)].all()  # sound (coarse across the loop boundary: every element)

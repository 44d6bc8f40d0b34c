"""``stablehlo.custom_call`` targets, and functions with custom derivative rules.

Custom calls: the table covers every target JAX declares stable for export (LAPACK, cuSOLVER, hipSOLVER,
TPU); markers are identities; unknown targets fail naming the target and the location, or — opted in —
are dense and warn.

Custom derivatives (``custom_jvp``, ``custom_vjp``, ``custom_linear_solve``): StableHLO holds the primal
only, so the analysis finds the Jacobian of the primal *as computed*.  When a custom rule differentiates
something else (a straight-through estimator, a JVP that mixes elements) the primal pattern can miss what
``jax.jacfwd`` returns.  Analyzing the lowered JVP (or VJP) program instead — its tangent outputs as a
function of its tangent inputs — follows the custom rules: :func:`jvp_pattern` below.  The API does this
by default (``derivatives="auto"``) whenever the jaxpr uses a custom rule; ``derivatives="primal"`` shows
the primal's limitation.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers import assert_sound, numerical_pattern
from stablehlo_sparsity import (
    SparsityWarning,
    UnsupportedOpError,
    analyze_module,
    jacobian_sparsity,
    parse_module,
)
from stablehlo_sparsity.analysis.rules.custom_call import CUSTOM_CALL_TARGETS


# ============================================================ helpers: the pattern of JAX's AD
def jvp_pattern(f, x):
    """The pattern of the JVP program ``t ↦ jvp(f, (x,), (t,))[1]`` — what ``jax.jacfwd`` computes,
    custom JVP rules included (``x`` becomes an unknown input with no columns)."""
    return jacobian_sparsity(lambda x, t: jax.jvp(f, (x,), (t,))[1], x, x, argnums=1)


def vjp_pattern(f, x):
    """The transposed pattern of the VJP program ``c ↦ vjp(f, x)[1](c)`` — what ``jax.jacrev`` computes,
    custom VJP rules included."""
    y = jax.eval_shape(f, x)
    pat = jacobian_sparsity(lambda x, c: jax.vjp(f, x)[1](c)[0], x, jnp.zeros(y.shape, y.dtype), argnums=1)
    return pat.todense().T


def custom_rule_primitives(f, *args) -> set[str]:
    """The custom-derivative primitives in ``f``'s jaxpr (nested jaxprs included)."""
    names = {"custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr", "custom_lin", "custom_linear_solve"}
    found: set[str] = set()

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name in names:
                found.add(eqn.primitive.name)
            for p in eqn.params.values():
                for sub in (p if isinstance(p, (list, tuple)) else [p]):
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        walk(inner)

    walk(jax.make_jaxpr(f)(*args).jaxpr)
    return found


def module_file(tmp_path, body: str) -> str:
    path = tmp_path / "m.mlir"
    path.write_text(body)
    return str(path)


# ============================================================ the target table
def test_table_covers_every_target_jax_declares_stable():
    from jax._src.export import _export

    targets = set(_export._CPU_FFI_KERNELS) | set(_export._GPU_FFI_KERNELS)
    targets |= {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
                "cu_threefry2x32_ffi", "hip_threefry2x32_ffi", "Eigh", "Qr",
                "ProductOfElementaryHouseholderReflectors", "LuDecomposition", "AllocateBuffer", "shape_assertion"}
    missing = sorted(t for t in targets if t not in CUSTOM_CALL_TARGETS)
    assert not missing, missing
    assert all(hasattr(rule, "kind") for rule in CUSTOM_CALL_TARGETS.values())


def test_unknown_target_names_target_and_location(tmp_path):
    path = module_file(tmp_path, """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @my_secret_kernel(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
""")
    with pytest.raises(UnsupportedOpError) as e:
        analyze_module(parse_module(path, is_path=True))
    msg = str(e.value)
    assert "my_secret_kernel" in msg and f"{path}:2:" in msg and "on_unknown='conservative'" in msg


def test_special_function_calls_are_elementwise_and_dense_when_misshapen():
    """jaxlib's digamma / lgamma kernels: element ``e`` on element ``e``; a call of that name whose shapes do not
    match its result's is read as dense, never as elementwise."""
    text = """func.func @main(%a: tensor<3xf64>) -> tensor<3xf64> {
      %0 = stablehlo.custom_call @cpu_digamma_ffi(%a) : (tensor<3xf64>) -> tensor<3xf64>
      return %0 : tensor<3xf64>
    }"""
    assert np.array_equal(analyze_module(text).pattern.todense(), np.eye(3, dtype=bool))
    odd = text.replace("-> tensor<3xf64> {", "-> tensor<2xf64> {").replace(
        "(tensor<3xf64>) -> tensor<3xf64>", "(tensor<3xf64>) -> tensor<2xf64>").replace(
        "return %0 : tensor<3xf64>", "return %0 : tensor<2xf64>")
    assert analyze_module(odd).pattern.todense().all()


def test_unknown_target_conservative_opt_in_warns_and_is_dense():
    text = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2xf32>, tensor<i32>) {
      %0:2 = stablehlo.custom_call @my_kernel(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2xf32>, tensor<i32>)
      return %0#0, %0#1 : tensor<2xf32>, tensor<i32>
    }"""
    with pytest.warns(SparsityWarning, match="my_kernel"):
        an = analyze_module(text, on_unknown="conservative", wrt="all")
    assert an.pattern.shape == (3, 9)
    assert an.pattern.todense()[:2].all() and not an.pattern.todense()[2].any()  # the integer: nothing
    assert any("my_kernel" in w for w in an.warnings)


def test_sharding_markers_are_identities():
    text = """func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %0 = stablehlo.custom_call @Sharding(%a) {mhlo.sharding = "{replicated}"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %2 = stablehlo.custom_call @SPMDShardToFullShape(%1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %3 = stablehlo.custom_call @annotate_device_placement(%2) {has_side_effect = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      return %3 : tensor<2x3xf32>
    }"""
    assert np.array_equal(analyze_module(text).pattern.todense(), np.eye(6, dtype=bool))
    sharded = text.replace("@SPMDFullToShardShape(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>",
                           "@SPMDFullToShardShape(%0) : (tensor<2x3xf32>) -> tensor<1x3xf32>")
    sharded = sharded.replace("@SPMDShardToFullShape(%1) : (tensor<2x3xf32>)", "@SPMDShardToFullShape(%1) : (tensor<1x3xf32>)")
    with pytest.raises(UnsupportedOpError, match="SPMDFullToShardShape"):
        analyze_module(sharded)


def test_host_callbacks():
    def printing(x):
        jax.debug.print("x = {x}", x=x)
        return jnp.sin(x)

    assert_sound(printing, jnp.ones(3), exact=True)

    def calling_back(x):
        return jax.pure_callback(np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x) + x

    # a supported op since issue 16: results depend on every operand element (tests/analysis/test_callbacks.py)
    with pytest.warns(SparsityWarning, match="Python callback 'xla_ffi_python_cpu_callback'"):
        pat = jacobian_sparsity(calling_back, jnp.ones(3))
    assert pat.todense().all()


def test_random_bits_and_empty_buffers_carry_nothing():
    text = """func.func @main(%k: tensor<2xui32>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<3xf32>) {
      %0:2 = stablehlo.custom_call @cu_threefry2x32_ffi(%k, %k, %k, %k) : (tensor<2xui32>, tensor<2xui32>, tensor<2xui32>, tensor<2xui32>) -> (tensor<2xui32>, tensor<2xui32>)
      %1 = stablehlo.custom_call @AllocateBuffer() : () -> tensor<3xf32>
      return %x, %1 : tensor<4xf32>, tensor<3xf32>
    }"""
    an = analyze_module(text, wrt=[1])
    assert np.array_equal(an.pattern.todense(), np.vstack([np.eye(4, dtype=bool), np.zeros((3, 4), bool)]))


# ============================================================ custom derivatives
@jax.custom_jvp
def ste_round(x):
    return jnp.round(x)


ste_round.defjvp(lambda p, t: (jnp.round(p[0]), t[0]))


@jax.custom_jvp
def mixing(x):
    return 2.0 * x  # elementwise primal …


mixing.defjvp(lambda p, t: (2.0 * p[0], jnp.cumsum(t[0])))  # … whose declared JVP mixes elements


@jax.custom_vjp
def reversed_vjp(x):
    return jnp.sin(x)


reversed_vjp.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g[::-1],))


X = jnp.arange(5.0) + 0.3


def test_straight_through_estimator_with_stop_gradient_is_sound():
    """``x + stop_gradient(round(x) - x)``: the primal computes round(x), yet its pattern keeps x's
    identity (the structural union does not cancel ``x - x``), which is what jax.jacfwd returns."""
    f = lambda x: x + jax.lax.stop_gradient(jnp.round(x) - x)
    pat = assert_sound(f, X, exact=True)
    assert np.array_equal(pat.todense(), np.eye(5, dtype=bool))


@pytest.mark.parametrize("f", [ste_round, mixing], ids=["ste_round", "mixing"])
def test_custom_jvp_limitation_and_its_guard(f):
    """A custom JVP may claim dependencies its primal does not have: the primal pattern misses them
    (documented limitation) — the JVP program's pattern has exactly jax.jacfwd's."""
    num = numerical_pattern(f, X)
    primal = jacobian_sparsity(f, X, derivatives="primal").todense()
    assert (num & ~primal).any()  # the primal's limitation, stated as a test so a change of behaviour is noticed
    assert np.array_equal(jvp_pattern(f, X).todense(), num)
    assert "custom_jvp_call" in custom_rule_primitives(f, X)
    # the default ("auto") sees the custom rule and analyzes the JVP program: exactly jax.jacfwd's pattern
    assert np.array_equal(jacobian_sparsity(f, X).todense(), num)


def test_custom_vjp_through_the_vjp_program():
    jr = np.abs(np.asarray(jax.jacrev(reversed_vjp)(X))) > 0
    primal = jacobian_sparsity(reversed_vjp, X, derivatives="primal").todense()
    assert (jr & ~primal).any()
    assert np.array_equal(vjp_pattern(reversed_vjp, X), jr)
    assert np.array_equal(jacobian_sparsity(reversed_vjp, X).todense(), jr)  # "auto": the VJP program
    assert "custom_vjp_call" in custom_rule_primitives(reversed_vjp, X)


def test_library_custom_jvp_functions_stay_sound():
    """JAX's own custom-JVP functions differentiate their primal faithfully."""
    f = lambda x: jax.nn.relu(x) + jax.nn.softplus(x) + jax.nn.logsumexp(x) + jnp.linalg.norm(x)
    assert_sound(f, X, exact=True)
    assert np.array_equal(jvp_pattern(f, X).todense(), jacobian_sparsity(f, X).todense())


def _solve(b, diag, off):
    """``A x = b`` with ``A = diag(d) + off·roll``, solved approximately by the diagonal alone."""
    matvec = lambda v: diag * v + off * jnp.roll(v, 1)
    return jax.lax.custom_linear_solve(matvec, b, lambda mv, r: r / diag, transpose_solve=lambda mv, r: r / diag)


def test_custom_linear_solve():
    """The primal is the ``solve`` function; the JVP differentiates ``A x = b`` implicitly, through matvec.
    Wrt b and diag the primal pattern is sound and exact; wrt a matvec parameter the solve never reads
    (``off``), only the JVP program sees the dependency."""
    b, d, off = jnp.ones(5) + X, X + 2.0, 0.1 * X
    for f in (lambda b: _solve(b, d, off), lambda d: _solve(b, d, off)):
        assert_sound(f, X, exact=True)
    f = lambda off: _solve(b, d, off)
    num = numerical_pattern(f, off)
    assert (num & ~jacobian_sparsity(f, off, derivatives="primal").todense()).any()
    assert np.array_equal(jvp_pattern(f, off).todense(), num)
    assert np.array_equal(jacobian_sparsity(f, off).todense(), num)  # "auto" follows the custom rule
    assert "custom_linear_solve" in custom_rule_primitives(f, off)


def test_jvp_program_pattern_matches_primal_on_ordinary_code():
    """The guard costs precision nowhere on code without custom rules (stencils, loops, linear algebra)."""
    a = jnp.asarray(np.random.default_rng(0).standard_normal((2, 3, 3)))
    for f, x in ((lambda x: jnp.roll(x, 1) * jnp.sin(x) - jnp.cumsum(x) ** 2, X),
                 (lambda a: jnp.linalg.solve(a, a[..., :1]), a)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SparsityWarning)
            assert np.array_equal(jvp_pattern(f, x).todense(), jacobian_sparsity(f, x).todense())


def test_custom_vjp_that_jax_cannot_differentiate_falls_back_to_the_primal_with_a_warning():
    """custom_vjp feeding a data-dependent while_loop: JAX forms neither a JVP nor a VJP program, so the
    API analyzes the primal and warns that the custom rule is unseen (not an InputError)."""
    def f(x):
        y = reversed_vjp(x)
        return jax.lax.while_loop(lambda s: jnp.abs(s[0]) < 3.0, lambda s: s * 1.5, y)

    with pytest.warns(SparsityWarning, match="custom derivative rule"):
        pat = jacobian_sparsity(f, X)
    assert pat.shape == (5, 5) and pat.nnz > 0


APPROX_TOP_K = """
func.func private @cmp(%a: tensor<f32>, %b: tensor<f32>, %i: tensor<i32>, %j: tensor<i32>) -> tensor<i1> {
  %0 = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
  return %0 : tensor<i1>
}
func.func @main(%x: tensor<2x7xf32>, %pad: tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %i = stablehlo.iota dim = 1 : tensor<2x7xi32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.custom_call @ApproxTopK(%x, %i, %pad, %z) {called_computations = [@cmp],
      mhlo.backend_config = {aggregate_to_topk = true, recall_target = 0.95 : f32, reduction_dim = 1 : i64,
                             reduction_input_size_override = -1 : i64, top_k = 3 : i64}}
      : (tensor<2x7xf32>, tensor<2x7xi32>, tensor<f32>, tensor<i32>) -> (tensor<2x3xf32>, tensor<2x3xi32>)
  return %0#0, %0#1 : tensor<2x3xf32>, tensor<2x3xi32>
}
"""


def test_approx_top_k_values_depend_on_their_row_and_the_padding():
    """``ApproxTopK`` (``jax.lax.approx_max_k`` exported for TPU): each kept value is one of its row's
    elements or the init (padding) value; the indices carry nothing."""
    pat = analyze_module(APPROX_TOP_K, wrt="all").pattern.todense()
    assert pat.shape == (12, 15)
    rows = np.zeros((12, 15), bool)
    rows[:3, :7] = rows[3:6, 7:14] = True  # values of row 0 / row 1 of x
    rows[:6, 14] = True                     # the padding value
    assert np.array_equal(pat, rows)


def test_approx_top_k_along_the_leading_dimension():
    text = APPROX_TOP_K.replace("reduction_dim = 1", "reduction_dim = 0").replace("tensor<2x3x", "tensor<1x7x")
    text = text.replace("-> (tensor<1x7xf32>, tensor<1x7xi32>)", "-> (tensor<1x7xf32>, tensor<1x7xi32>)")
    pat = analyze_module(text, wrt=[0]).pattern.todense()
    exp = np.zeros((14, 14), bool)
    for c in range(7):
        exp[c, [c, 7 + c]] = True  # column c of the result: column c of x, both rows
    assert np.array_equal(pat, exp)

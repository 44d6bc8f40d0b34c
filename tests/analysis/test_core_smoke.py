import jax.numpy as jnp
import numpy as np
import pytest

from stablehlo_sparsity import analyze_module, jacobian_sparsity
from helpers import assert_sound


def test_stencil_with_roll_and_pad_is_exact():
    f = lambda x: jnp.roll(x, 1) * jnp.sin(x) + jnp.pad(x[1:], (0, 1))
    assert_sound(f, jnp.ones(7), exact=True)


def test_multiply_by_constant_zero_drops_dependency():
    mask = jnp.array([1.0, 0.0, 2.0, 0.0])
    p = jacobian_sparsity(lambda x: x * mask, jnp.ones(4))
    assert p.nnz == 2
    assert_sound(lambda x: x * mask, jnp.ones(4), exact=True)


def test_unknown_op_names_op_and_location():
    text = """
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = "stablehlo.not_a_real_op"(%a) : (tensor<4xf32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    with pytest.raises(Exception):
        analyze_module(text)


def test_pattern_budget_refuses_before_allocating():
    import jax
    from stablehlo_sparsity import AnalysisOptions, PatternTooLargeError

    x = jnp.ones((300, 300))
    with pytest.raises(PatternTooLargeError, match="max_pattern_nnz"):
        jacobian_sparsity(lambda x: jax.nn.logsumexp(x, axis=1, keepdims=True) - x, x,
                          options=AnalysisOptions(max_pattern_nnz=1_000_000))


def test_integer_inputs_keep_columns_but_carry_no_derivative():
    p = jacobian_sparsity(lambda i, x: i.astype(jnp.float32) * x, jnp.arange(3), jnp.ones(3), argnums=(0, 1))
    assert p.shape == (3, 6)
    assert np.array_equal(p.todense(), np.hstack([np.zeros((3, 3), bool), np.eye(3, dtype=bool)]))

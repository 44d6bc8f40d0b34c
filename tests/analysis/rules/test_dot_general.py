"""§dot_general / §dot: index sets against jax.jacfwd; known operands give exactly their nonzero structure."""

import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from helpers import assert_sound
from stablehlo_sparsity import analyze_module, jacobian_sparsity, lower_and_analyze

rng = np.random.default_rng(0)

EINSUMS = [
    ("ij,jk->ik", (3, 4), (4, 5)),
    ("i,i->", (4,), (4,)),
    ("ij,j->i", (3, 4), (4,)),
    ("i,ij->j", (3,), (3, 4)),
    ("i,j->ij", (3,), (4,)),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 3)),
    ("bij,jbk->kbi", (2, 3, 4), (4, 2, 3)),      # batch dimension in an odd position on both sides
    ("ijk,kj->i", (2, 3, 4), (4, 3)),            # two contracting dimensions, in different orders
    ("ibj,jbk->bik", (3, 2, 4), (4, 2, 2)),
    ("abcd,cdbe->bae", (2, 2, 3, 2), (3, 2, 2, 2)),
]


@pytest.mark.parametrize("spec,sa,sb", EINSUMS)
def test_einsum_variants_are_exact(spec, sa, sb):
    f = lambda a, b: jnp.einsum(spec, a, b)
    assert_sound(f, jnp.ones(sa), jnp.ones(sb), argnums=(0, 1), exact=True, jit=True)


def test_same_operand_on_both_sides_and_one_side_only():
    assert_sound(lambda x: x @ x.T, jnp.ones((3, 4)), exact=True, jit=True)
    assert_sound(lambda x, y: jnp.einsum("bij,bjk->bik", x, y), jnp.ones((2, 3, 4)), jnp.ones((2, 4, 2)),
                 argnums=1, exact=True, jit=True)


def test_dot_general_with_batch_dims_in_the_middle():
    dn = (((2,), (0,)), ((1,), (1,)))  # lhs (3, B, 4) · rhs (4, B, 5), batch dim 1 on both sides
    f = lambda a, b: lax.dot_general(a, b, dn)
    assert_sound(f, jnp.ones((3, 2, 4)), jnp.ones((4, 2, 5)), argnums=(0, 1), exact=True, jit=True)


def sparse_matrix(m, n, density, seed=1):
    r = np.random.default_rng(seed)
    a = r.standard_normal((m, n)) * (r.random((m, n)) < density)
    return a


def test_constant_sparse_matrix_times_vector_is_exactly_its_pattern():
    A = sparse_matrix(30, 20, 0.1)
    p = jacobian_sparsity(lambda x: jnp.asarray(A) @ x, jnp.ones(20))
    assert np.array_equal(p.todense(), A != 0)
    p = jacobian_sparsity(lambda x: x @ jnp.asarray(A.T), jnp.ones(20))
    assert np.array_equal(p.todense(), A != 0)
    assert_sound(lambda x: jnp.asarray(A) @ jnp.sin(x), jnp.ones(20), exact=True, jit=True)


def test_constant_sparse_matrix_times_matrix_and_batched():
    A = sparse_matrix(6, 5, 0.3)
    assert_sound(lambda X: jnp.asarray(A) @ X, jnp.ones((5, 3)), exact=True, jit=True)
    assert_sound(lambda X: X.T @ jnp.asarray(A.T), jnp.ones((5, 3)), exact=True, jit=True)
    Ab = np.stack([sparse_matrix(4, 5, 0.3, seed=s) for s in range(3)])
    assert_sound(lambda x: jnp.einsum("bij,bj->bi", jnp.asarray(Ab), x), jnp.ones((3, 5)), exact=True, jit=True)
    assert_sound(lambda x: jnp.einsum("bj,bij->ib", x, jnp.asarray(Ab)), jnp.ones((3, 5)), exact=True, jit=True)


def test_known_zero_rows_and_columns_drop_out():
    A = np.zeros((4, 4))
    A[0, 1] = 2.0
    A[3, 3] = -1.0
    p = assert_sound(lambda x: jnp.asarray(A) @ x @ jnp.asarray(A).T, jnp.ones((4, 4)), exact=True, jit=True)
    assert p.nnz == 4


def test_folded_dot_of_constants_keeps_values():
    A = np.array([[1.0, -1.0], [2.0, 3.0], [0.0, 0.0]])
    v = np.array([1.0, 1.0])
    # A @ v = [0, 5, 0]: only the middle element of x survives the multiply
    p = assert_sound(lambda x: x * (jnp.asarray(A) @ jnp.asarray(v)), jnp.ones(3), exact=True, jit=True)
    assert p.todense().tolist() == [[False, False, False], [False, True, False], [False, False, False]]

    # the folded contraction (then the layout transpose) carries the exact einsum values
    seen = []
    B = rng.standard_normal((2, 3, 4))
    C = rng.standard_normal((4, 2, 5))
    expect = np.einsum("bij,jbk->kbi", B, C)
    lower_and_analyze(lambda x: x + jnp.einsum("bij,jbk->kbi", B, C), jnp.ones((5, 2, 3)),
                      observer=lambda op, res: seen.append(res[0].const) if res[0].const is not None else None)
    assert any(c.shape == expect.shape and np.allclose(c, expect) for c in seen)


DOT = """
func.func @main(%a: tensor<3x4xf64>, %b: tensor<4xf64>) -> tensor<3xf64> {
  %0 = stablehlo.dot %a, %b : (tensor<3x4xf64>, tensor<4xf64>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}
"""

DOT_CONST = """
func.func @main(%b: tensor<3x2xf64>) -> tensor<3x2xf64> {
  %a = stablehlo.constant dense<[[1.0, 0.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]> : tensor<3x3xf64>
  %0 = stablehlo.dot %a, %b : (tensor<3x3xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
  return %0 : tensor<3x2xf64>
}
"""


def test_legacy_dot_op():
    d = analyze_module(DOT, wrt="all").pattern.todense()
    expect = np.zeros((3, 16), bool)
    for i in range(3):
        expect[i, 4 * i:4 * i + 4] = True
        expect[i, 12:] = True
    assert np.array_equal(d, expect)
    d = analyze_module(DOT_CONST, wrt="all").pattern.todense()
    expect = np.zeros((6, 6), bool)
    expect[0, 0] = expect[1, 1] = True          # row 0 of a reads b[0, :]
    expect[2, 4] = expect[3, 5] = True          # row 1 of a reads b[2, :]
    assert np.array_equal(d, expect)


def test_integer_dot_folds_without_overflow():
    a = np.full((2, 3), 100, np.int8)
    seen = []
    lower_and_analyze(
        lambda x: x * lax.dot_general(a, a.T, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32),
        jnp.ones((2, 2), jnp.int32).astype(jnp.float64),
        observer=lambda op, res: seen.append(res[0].const) if op.operation.name == "stablehlo.dot_general" else None)
    assert np.array_equal(seen[0], np.full((2, 2), 30000, np.int32))

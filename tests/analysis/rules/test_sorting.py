"""Sorting (§sort, chlo.top_k): slice unions for unknown keys, exact permutations for known keys, folding."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers import assert_same_values, assert_sound, run_fold, run_reference
from stablehlo_sparsity import analyze_module, jacobian_sparsity


def _blocks(rows, cols_per_block, reps):
    return np.kron(np.eye(reps, dtype=bool), np.ones((rows, cols_per_block), bool))


def test_sort_of_a_vector_is_dense():
    p = assert_sound(jnp.sort, jnp.ones(6), points=4, jit=True)
    assert p.todense().all()


def test_sort_along_each_axis_is_block_structured():
    X = jnp.ones((3, 4))
    p = assert_sound(lambda x: jnp.sort(x, axis=1), X, jit=True)
    assert np.array_equal(p.todense(), _blocks(4, 4, 3))
    p = assert_sound(lambda x: jnp.sort(x, axis=0), X, jit=True)
    same_column = (np.arange(12)[:, None] % 4) == (np.arange(12)[None, :] % 4)
    assert np.array_equal(p.todense(), same_column)


def test_multi_operand_sort_outputs_depend_only_on_their_own_operand():
    def f(k, v):
        return jax.lax.sort((k, v), num_keys=1)
    p = assert_sound(f, jnp.ones(5), jnp.ones(5), argnums=(0, 1), points=4, jit=True)
    d = p.todense()
    assert d[:5, :5].all() and d[5:, 5:].all()
    assert not d[:5, 5:].any() and not d[5:, :5].any()  # the permutation itself has zero derivative


def test_sort_values_by_a_constant_key_is_an_exact_permutation():
    key = jnp.array([3.0, 1.0, 2.0, 0.0, 2.0])
    f = lambda v: jax.lax.sort((key, v), num_keys=1)[1]
    p = assert_sound(f, jnp.ones(5), exact=True, jit=True)
    # stable ascending: 0.0 (idx 3), 1.0 (idx 1), 2.0 (idx 2), 2.0 (idx 4), 3.0 (idx 0)
    assert np.array_equal(p.todense(), np.eye(5, dtype=bool)[[3, 1, 2, 4, 0]])


def test_argsort_is_integer_and_indexing_by_a_constant_argsort_is_exact():
    assert jacobian_sparsity(jnp.argsort, jnp.ones(4)).nnz == 0
    perm_of = jnp.array([0.5, -1.0, 3.0, 2.0])
    f = lambda x: x[jnp.argsort(perm_of)] * 2.0
    p = assert_sound(f, jnp.ones(4), exact=True, jit=True)
    assert np.array_equal(p.todense(), np.eye(4, dtype=bool)[[1, 0, 3, 2]])


def test_descending_sort_and_sort_of_a_batch():
    f = lambda x: -jnp.sort(-x, axis=-1)
    p = assert_sound(f, jnp.ones((2, 3)), points=4, jit=True)
    assert np.array_equal(p.todense(), _blocks(3, 3, 2))


def test_top_k_values_depend_on_their_row():
    f = lambda x: jax.lax.top_k(x, 2)[0]
    p = assert_sound(f, jnp.ones((3, 4)), points=6, jit=True)
    assert np.array_equal(p.todense(), _blocks(2, 4, 3))
    assert jacobian_sparsity(lambda x: jax.lax.top_k(x, 2)[1].astype(x.dtype), jnp.ones(4)).nnz == 0


def test_top_k_of_constants_folds():
    c = jnp.array([[1.0, 5.0, 5.0, 2.0], [0.0, -1.0, 7.0, 3.0]])
    f = lambda x: x[jax.lax.top_k(c, 2)[1].ravel()]
    p = assert_sound(f, jnp.ones(4), exact=True, jit=True)
    assert np.array_equal(p.todense(), np.eye(4, dtype=bool)[[1, 2, 2, 3]])


SORT_TEXT = """
%r:2 = "stablehlo.sort"(%a0, %a1) ({
  ^bb0(%p: tensor<i64>, %q: tensor<i64>, %u: tensor<f64>, %v: tensor<f64>):
    %c = stablehlo.compare GT, %p, %q, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
}) {dimension = DIM : i64, is_stable = true} : (tensor<2x3xi64>, tensor<2x3xf64>) -> (tensor<2x3xi64>, tensor<2x3xf64>)
return %r#0, %r#1 : tensor<2x3xi64>, tensor<2x3xf64>
"""


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_sort_fold_matches_the_reference_interpreter(dim):
    keys = np.array([[3, 1, 3], [2, 2, 0]], np.int64)
    vals = np.array([[0.5, 1.5, 2.5], [3.5, 4.5, 5.5]])
    body = SORT_TEXT.replace("DIM", str(dim))
    outs = ["tensor<2x3xi64>", "tensor<2x3xf64>"]
    got = run_fold(body, [keys, vals], outs)
    want = run_reference(body, [keys, vals], outs)
    for g, w in zip(got, want):
        assert g is not None
        assert_same_values(g, w)


def test_sort_with_negative_dimension_over_unknown_values():
    text = ("module {\n func.func @main(%a0: tensor<2x3xi64>, %a1: tensor<2x3xf64>) -> (tensor<2x3xi64>, "
            "tensor<2x3xf64>) {\n" + SORT_TEXT.replace("DIM", "-2") + "}\n}")
    d = analyze_module(text, wrt=[1]).pattern.todense()
    assert not d[:6].any()  # integer keys
    same_column = (np.arange(6)[:, None] % 3) == (np.arange(6)[None, :] % 3)
    assert np.array_equal(d[6:], same_column)


def test_non_strict_comparator_with_known_keys_falls_back_to_the_slice_union():
    text = ("module {\n func.func @main(%a1: tensor<2x3xf64>) -> (tensor<2x3xi64>, tensor<2x3xf64>) {\n"
            "%a0 = stablehlo.constant dense<[[3, 1, 3], [2, 2, 0]]> : tensor<2x3xi64>\n"
            + SORT_TEXT.replace("DIM", "1").replace("GT", "GE") + "}\n}")
    d = analyze_module(text).pattern.todense()
    assert np.array_equal(d[6:], _blocks(3, 3, 2))
    text_ok = text.replace("GE,", "GT,")
    d = analyze_module(text_ok).pattern.todense()
    # descending by key, stable: row 0 keys [3, 1, 3] -> [0, 2, 1]; row 1 keys [2, 2, 0] -> [0, 1, 2]
    assert np.array_equal(d[6:], np.eye(6, dtype=bool)[[0, 2, 1, 3, 4, 5]])

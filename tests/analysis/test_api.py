"""The public API: SparsityPattern, jacobian_sparsity / lower_and_analyze conventions, analyze_module, errors."""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

from stablehlo_sparsity import (Analysis, DynamicShapeError, InputError, SparsityError, SparsityPattern,
                                SparsityWarning, UnsupportedOpError, analyze_module, jacobian_sparsity,
                                lower_and_analyze, parse_module)
from stablehlo_sparsity.examples import brusselator, laplacian_cubic
from stablehlo_sparsity.analysis.rules import DEPS_RULES
from helpers import numerical_pattern, peer


# ---------------------------------------------------------------- SparsityPattern
DENSE = np.array([[1, 0, 0, 1], [0, 0, 0, 0], [0, 1, 1, 0]], bool)


def test_pattern_basics():
    p = SparsityPattern(sp.csr_array(DENSE))
    assert p.shape == (3, 4) and p.nnz == 4
    m = p.to_scipy()
    assert isinstance(m, sp.csr_array) and m.dtype == bool and m.has_canonical_format
    assert np.array_equal(p.todense(), DENSE)
    rows, cols = p.to_coo()
    assert rows.tolist() == [0, 0, 2, 2] and cols.tolist() == [0, 3, 1, 2]
    assert p.row_counts().tolist() == [2, 0, 2] and p.col_counts().tolist() == [1, 1, 1, 1]
    assert p.density == pytest.approx(4 / 12)


def test_pattern_from_unsorted_duplicates_and_explicit_zeros_is_canonical():
    m = sp.csr_array((np.array([1, 1, 0, 2]), np.array([3, 0, 1, 3]), np.array([0, 4, 4, 4])), shape=(3, 4))
    p = SparsityPattern(m)
    assert p.to_scipy().has_canonical_format
    assert p.todense().tolist() == [[True, False, False, True], [False] * 4, [False] * 4]


def test_pattern_equality():
    p = SparsityPattern(DENSE)
    assert p == SparsityPattern(sp.csr_array(DENSE))
    assert p == DENSE and p == sp.coo_array(DENSE)
    assert p != SparsityPattern(DENSE[:, :3])
    q = DENSE.copy()
    q[1, 1] = True
    assert p != q
    assert (p == "not a pattern") is False


def test_pattern_superset_and_missing():
    p = SparsityPattern(DENSE)
    sub = DENSE.copy()
    sub[0, 0] = False
    assert p.issuperset(sub) and p.issuperset(p)
    more = DENSE.copy()
    more[1, 2] = True
    assert not p.issuperset(more)
    miss = p.missing(more)
    assert miss.nnz == 1 and miss.todense()[1, 2]
    assert p.missing(sub).nnz == 0
    assert not p.issuperset(np.zeros((2, 2), bool))  # shape mismatch is never a superset


def test_pattern_repr_draws_a_picture():
    text = repr(SparsityPattern(DENSE))
    assert text.splitlines()[0].startswith("SparsityPattern(3×4, nnz=4")
    assert text.splitlines()[1:4] == ["●⋅⋅●", "⋅⋅⋅⋅", "⋅●●⋅"]
    big = SparsityPattern(sp.eye_array(200, format="csr", dtype=bool))
    pic = big.picture(max_rows=10, max_cols=20)
    assert "each character covers" in pic and len(pic.splitlines()[0]) == 20
    assert SparsityPattern(np.zeros((0, 3), bool)).picture() == "(empty)"


# ---------------------------------------------------------------- conventions of jacobian_sparsity
def test_rows_are_flattened_output_leaves_and_columns_selected_input_leaves():
    def f(p, q):
        return {"b": p["u"][0] * q, "a": (p["v"] ** 2).ravel()}

    p = {"u": jnp.ones(3), "v": jnp.ones((2, 2))}
    q = jnp.ones(2)
    a = lower_and_analyze(f, p, q, argnums=(0, 1))
    assert isinstance(a, Analysis)
    # outputs: dict keys sorted -> "a" (4) then "b" (2); inputs: p's leaves "u" (3), "v" (4), then q (2)
    assert a.pattern.shape == (6, 9)
    assert a.output_shapes == [(4,), (2,)] and a.output_offsets == [0, 4]
    assert a.input_shapes == [(3,), (2, 2), (2,)] and a.input_offsets == [0, 3, 7]
    want = np.zeros((6, 9), bool)
    want[np.arange(4), 3 + np.arange(4)] = True          # a = v**2
    want[4:, 0] = True                                     # b = u[0] * q
    want[[4, 5], [7, 8]] = True
    assert np.array_equal(a.pattern.todense(), want)
    assert a.out_tree == jax.tree_util.tree_structure({"a": 0, "b": 0})
    assert a.in_tree == jax.tree_util.tree_structure((p, q))


def test_argnums_order_sets_the_column_order():
    def f(x, y, z):
        return x * y[0] + jnp.cos(z), z[::-1] * x

    args = (jnp.ones(3), jnp.ones(2), jnp.ones(3))
    fwd = jacobian_sparsity(f, *args, argnums=(0, 2)).todense()
    rev = jacobian_sparsity(f, *args, argnums=(2, 0)).todense()
    assert np.array_equal(rev, np.hstack([fwd[:, 3:], fwd[:, :3]]))
    assert np.array_equal(rev, numerical_pattern(f, *args, argnums=(2, 0), points=1))
    assert jacobian_sparsity(f, *args, argnums=-1) == jacobian_sparsity(f, *args, argnums=2)


def test_non_selected_arguments_are_unknown_values():
    """A non-differentiated argument is not a constant: ``x * w`` keeps its pattern even if ``w`` is 0 here."""
    f = lambda x, w: x * w  # noqa: E731
    assert jacobian_sparsity(f, jnp.ones(3), jnp.zeros(3)).nnz == 3


def test_array_kwargs_are_unknown_values_static_kwargs_are_bound():
    def f(x, w=None, mode="roll", k=1):
        return jnp.roll(x, k) * w if mode == "roll" else x * w

    assert jacobian_sparsity(f, jnp.ones(4), w=jnp.zeros(4)).nnz == 4
    p = jacobian_sparsity(f, jnp.ones(4), w=jnp.ones(4), k=2)
    assert np.array_equal(p.todense(), np.roll(np.eye(4, dtype=bool), 2, axis=0))
    # mode= is a library keyword (never forwarded to f, issue 20): f's own mode is bound with partial
    assert jacobian_sparsity(functools.partial(f, mode="plain"), jnp.ones(4), w=2.0) == np.eye(4, dtype=bool)
    with pytest.raises(InputError, match="jacobian_sparsity has no mode= option"):
        jacobian_sparsity(f, jnp.ones(4), w=2.0, mode="plain")


def test_kwargs_needed_concretely_are_bound_statically():
    def f(x, scale=1.0):
        return x * 2 if scale > 1 else x[::-1]  # Python control flow on the value

    assert jacobian_sparsity(f, jnp.ones(3), scale=2.0) == np.eye(3, dtype=bool)


def test_has_aux_drops_the_auxiliary_output():
    def f(x):
        return jnp.roll(x, 1) * x, {"aux": jnp.sum(x), "tag": 3}

    a = lower_and_analyze(f, jnp.ones(4), has_aux=True)
    assert a.pattern.shape == (4, 4) and a.pattern.nnz == 8
    assert a.out_tree == jax.tree_util.tree_structure(jnp.ones(4))
    with pytest.raises(InputError, match="has_aux"):
        jacobian_sparsity(lambda x: x * 2, jnp.ones(3), has_aux=True)


@pytest.mark.parametrize("bad", [3, (0, 5), -4, "0"])
def test_bad_argnums_are_input_errors(bad):
    with pytest.raises(InputError, match="argnums"):
        jacobian_sparsity(lambda x, y: x * y, jnp.ones(2), jnp.ones(2), argnums=bad)


def test_lowering_failures_are_input_errors():
    with pytest.raises(InputError, match="could not lower"):
        jacobian_sparsity(lambda x, y: x @ y, jnp.ones((2, 3)), jnp.ones((2, 3)))
    with pytest.raises(InputError):
        jacobian_sparsity(lambda: 1.0)


ASDEX_CASES = {
    "laplacian_cubic": (laplacian_cubic, (jnp.ones(12),), {}),
    "brusselator": (functools.partial(brusselator, N=4), (jnp.ones(32),), {}),
    "argnums_tuple": ((lambda x, y, z: (x * z[::-1], y.sum() * z)), (jnp.ones(3), jnp.ones(2), jnp.ones(3)),
                      {"argnums": (2, 0)}),
    "has_aux": ((lambda x: (jnp.diff(x) ** 2, x.sum())), (jnp.ones(5),), {"has_aux": True}),
    "matrix_out": ((lambda x: jnp.outer(x, x[::-1])), (jnp.ones(3),), {}),
}


@pytest.mark.peer
@pytest.mark.parametrize("name", sorted(ASDEX_CASES))
def test_same_convention_as_asdex(name):
    """Patterns compare one to one with the jaxpr-level peer (same rows, same columns)."""
    asdex = peer()
    f, args, kw = ASDEX_CASES[name]
    theirs = np.asarray(asdex.jacobian_sparsity(f, *args, **kw).todense()).astype(bool)
    ours = jacobian_sparsity(f, *args, **kw)
    assert ours.shape == theirs.shape
    assert ours == theirs


def test_clamp_keeps_the_operand_dependency():
    """A peer loses ``clamp``'s operand dependency; the numerical Jacobian shows it is there."""
    f = lambda x: jax.lax.clamp(-1.0, x, 1.0)  # noqa: E731
    p = jacobian_sparsity(f, jnp.ones(4))
    assert p == np.eye(4, dtype=bool)
    assert p.issuperset(numerical_pattern(f, jnp.ones(4) * 0.5, points=1, sampler=lambda rng: [0.3 * jnp.ones(4)]))


# ---------------------------------------------------------------- analyze_module
MODULE = """
func.func @main(%x: tensor<3xf64>, %y: tensor<3xf64>, %i: tensor<3xi32>) -> (tensor<3xf64>, tensor<3xf64>) {
  %0 = stablehlo.multiply %x, %y : tensor<3xf64>
  %1 = stablehlo.reverse %x, dims = [0] : tensor<3xf64>
  return %0, %1 : tensor<3xf64>, tensor<3xf64>
}

func.func @other(%x: tensor<2xf64>) -> tensor<2xf64> {
  %0 = stablehlo.sine %x : tensor<2xf64>
  return %0 : tensor<2xf64>
}
"""


def test_analyze_module_defaults_to_argument_zero_and_every_result():
    # argument 0, as jax.jacfwd's argnums=0 and the driver (issue 11); wrt="all" takes every argument
    a = analyze_module(MODULE, wrt="all")
    eye, rev = np.eye(3, dtype=bool), np.eye(3, dtype=bool)[::-1]
    z = np.zeros((3, 3), bool)
    assert np.array_equal(a.pattern.todense(), np.block([[eye, eye, z], [rev, z, z]]))
    assert a.entry == "main" and a.input_offsets == [0, 3, 6]
    first = analyze_module(MODULE)
    assert np.array_equal(first.pattern.todense(), np.block([[eye], [rev]])) and first.input_offsets == [0]


def test_analyze_module_wrt_num_outputs_and_entry():
    a = analyze_module(MODULE, wrt=[1], num_outputs=1)
    assert a.pattern == np.eye(3, dtype=bool)
    a = analyze_module(MODULE, wrt=[1, 0])  # columns follow wrt's order
    assert np.array_equal(a.pattern.todense()[3:], np.hstack([np.zeros((3, 3), bool), np.eye(3, dtype=bool)[::-1]]))
    assert analyze_module(MODULE, entry="other").pattern == np.eye(2, dtype=bool)
    assert analyze_module(parse_module(MODULE), wrt=[]).pattern.shape == (6, 0)


def test_analyze_module_input_errors():
    with pytest.raises(InputError, match="no entry function '@nope'.*main, other"):
        analyze_module(MODULE, entry="nope")
    with pytest.raises(InputError, match="out of range"):
        analyze_module(MODULE, wrt=[3])
    with pytest.raises(InputError, match="could not parse"):
        analyze_module("func.func @main( {")
    assert issubclass(InputError, SparsityError)


# ---------------------------------------------------------------- unsupported ops and shapes
_UNRULED = {
    "stablehlo.einsum": '"stablehlo.einsum"(%a, %b) {einsum_config = "ab,bc->ac"} : '
                        '(tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>',
    "stablehlo.torch_index_select": '"stablehlo.torch_index_select"(%b, %i) {dim = 0 : i64, batch_dims = 0 : i64} '
                                    ': (tensor<3x2xf32>, tensor<4xi32>) -> tensor<4x2xf32>',
}


def _unruled_module():
    """A module with a real StableHLO op that has no rule (the first candidate still without one)."""
    for name, text in _UNRULED.items():
        if name not in DEPS_RULES:
            return name, ("func.func @main(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>, %i: tensor<4xi32>) "
                          "-> tensor<4x2xf32> {\n"
                          f"  %0 = {text}\n"
                          "  return %0 : tensor<4x2xf32>\n}\n")
    pytest.skip("every candidate op has a rule now")


def test_unsupported_op_names_op_and_location(tmp_path):
    name, text = _unruled_module()
    with pytest.raises(UnsupportedOpError) as e:
        analyze_module(text)
    assert e.value.op_name == name and e.value.location == "-:2:8"
    assert f"'{name}'" in str(e.value) and "on_unknown='conservative'" in str(e.value)
    path = tmp_path / "model.mlir"
    path.write_text(text)
    with pytest.raises(UnsupportedOpError) as e:
        analyze_module(parse_module(str(path), is_path=True))
    assert e.value.location == f"{path}:2:8"


def test_conservative_fallback_warns_and_stays_sound():
    name, text = _unruled_module()
    with pytest.warns(SparsityWarning, match=name):
        a = analyze_module(text, on_unknown="conservative", wrt=[0, 1])
    # every output element depends on every element of both operands, never on the integer index argument
    assert a.pattern == np.ones((8, 18), bool)
    assert len(a.warnings) == 1 and name in a.warnings[0]


def test_on_unknown_is_validated():
    with pytest.raises(ValueError):
        analyze_module(MODULE, on_unknown="maybe")


def test_dynamic_shapes_are_rejected():
    arg = """func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {
  %0 = stablehlo.sine %a : tensor<?xf32>
  return %0 : tensor<?xf32>
}"""
    with pytest.raises(DynamicShapeError, match=r"tensor<\?xf32>"):
        analyze_module(arg)
    inner = """func.func @main(%a: tensor<4xf32>, %s: tensor<1xi32>) -> tensor<4xf32> {
  %0 = stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [0] : (tensor<4xf32>, tensor<1xi32>) -> tensor<?xf32>
  %1 = stablehlo.slice %0 [0:4] : (tensor<?xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}"""
    with pytest.raises(DynamicShapeError) as e:
        analyze_module(inner)
    assert e.value.location == "-:2:8"
    assert issubclass(DynamicShapeError, SparsityError)


def test_analysis_results_carry_constants():
    """Results keep their abstract values: a constant result is known and has no dependencies."""
    a = lower_and_analyze(lambda x: (x * 2, jnp.arange(3.0)), jnp.ones(2))
    assert a.results[1].const is not None and np.array_equal(a.results[1].const, [0, 1, 2])
    assert a.pattern.todense()[2:].sum() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing conservative happened
        lower_and_analyze(lambda x: jnp.sin(x) @ jnp.ones((2, 2)), jnp.ones(2))


def test_locations_of_jax_lowered_ops_point_at_the_users_line():
    """A warning (or error) about an op names the line of the user's function, not an outer caller."""
    def f(x):
        return x[jnp.argmax(x)] * x  # a dynamic index: the dynamic_slice rule warns

    line = f.__code__.co_firstlineno + 1
    with pytest.warns(SparsityWarning) as record:
        jacobian_sparsity(f, jnp.ones(5))
    assert any(f"test_api.py:{line}:" in str(w.message) for w in record), [str(w.message) for w in record]

"""Arguments as users pass them (issue 47): non-array leaves are static at every entry point, and a bad argument
gets the library's own one-line error (class and message asserted), before anything is traced.

:mod:`stablehlo_sparsity.analysis.arguments` splits the arguments; these tests go through the public API."""

from __future__ import annotations

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stablehlo_sparsity as ss
from stablehlo_sparsity.analysis.arguments import split_statics

X = jnp.linspace(0.1, 1.0, 6)


def stencil(x, name="cfg"):
    return x[1:] * x[:-1]


def scalar(x, name="cfg"):
    return jnp.sum(x[1:] * x[:-1] ** 2)


# -------------------------------------------------------------------------------------------- non-array leaves
@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Model:
    w: jax.Array
    act: object = dataclasses.field(default=jnp.tanh)
    label: object = "tiny"


def model_f(m, x):
    return m.act(m.w * x)


def model_loss(m, x):
    return jnp.sum(model_f(m, x) ** 2)


def test_a_model_with_a_function_and_a_string_is_differentiated_in_its_arrays():
    m = Model(X)
    for argnums in (0, 1, (0, 1)):
        p = ss.jacobian_sparsity(model_f, m, X, argnums=argnums)
        assert p.shape == (6, 6 * (2 if argnums == (0, 1) else 1))
    jac = ss.sparse_jacobian(model_f, m, X, argnums=0, output="dense")
    np.testing.assert_allclose(np.asarray(jac(m, X)), np.diag(X / np.cosh(np.asarray(X) ** 2) ** 2), rtol=1e-6)
    assert ss.hessian_sparsity(model_loss, m, X).nnz == 6
    H = ss.sparse_hessian(model_loss, m, X, output="dense")
    np.testing.assert_allclose(np.asarray(H(m, X)), jax.hessian(lambda w: model_loss(Model(w), X))(X), rtol=1e-5)
    assert ss.check_jacobian(model_f, m, X, jacobian=jac)
    assert ss.check_hessian(model_loss, m, X, hessian=H)
    assert ss.jacobian_coloring(model_f, m, X).num_colors == 1
    assert ss.hessian_coloring(model_loss, m, X).num_colors == 1
    assert ss.lower_and_analyze(model_f, m, X).in_tree == jax.tree_util.tree_structure((Model(X, None, None),))


def test_strings_and_lists_of_strings_beside_the_arrays_are_static():
    assert ss.jacobian_sparsity(lambda x, s: x * len(s), X, "abc").nnz == 6
    assert ss.jacobian_sparsity(lambda x, s: x * len(s), X, ["a", "b"]).nnz == 6
    jac = ss.sparse_jacobian(lambda x, s: x * len(s), X, ["a", "b"], output="dense")
    np.testing.assert_allclose(np.asarray(jac(X, ["a", "b"])), 2 * np.eye(6))
    with pytest.raises(ss.InputError, match=r"argument leaf s\[1\] differs from the value"):
        jac(X, ["a", "c"])


def test_a_changed_static_leaf_is_refused_by_its_path():
    jac = ss.sparse_jacobian(model_f, Model(X), X, argnums=1)
    jac(Model(X * 2), X)  # (another array: fine)
    with pytest.raises(ss.InputError, match=r"^argument leaf m\.act differs from the value the Jacobian was prepared "
                                            r"with .*prepare the Jacobian again for it, or make it an array$"):
        jac(Model(X, jnp.sin), X)
    H = ss.sparse_hessian(model_loss, Model(X), X)
    with pytest.raises(ss.InputError, match=r"argument leaf m\.label differs .* Hessian again"):
        H(Model(X, label="other"), X)


def test_a_prepared_object_with_static_leaves_pickles_but_does_not_save(tmp_path):
    import pickle

    jac = ss.sparse_jacobian(lambda x, s: x * len(s), X, "ab", output="dense")
    back = pickle.loads(pickle.dumps(jac))
    np.testing.assert_allclose(np.asarray(back(X, "ab")), 2 * np.eye(6))
    with pytest.raises(ss.InputError, match=r"differs"):
        back(X, "abc")
    with pytest.raises(ss.InputError, match=r"cannot save: the arguments hold values that are not arrays \(s\)"):
        jac.save(tmp_path / "j.npz")
    assert not (tmp_path / "j.npz").exists()


leaf_values = st.one_of(st.floats(-2, 2).map(lambda v: jnp.full(2, v)), st.text(max_size=3),
                        st.sampled_from([jnp.tanh, jnp.sin, None]), st.integers(-3, 3))
trees = st.recursive(leaf_values, lambda children: st.one_of(st.lists(children, max_size=3),
                                                             st.dictionaries(st.sampled_from("abc"), children,
                                                                             max_size=3)), max_leaves=8)


@settings(max_examples=60, deadline=None)
@given(st.lists(trees, min_size=1, max_size=3))
def test_split_and_join_give_the_arguments_back(args):
    """Whatever the mix of arrays, numbers, strings, functions and ``None``: the traced part holds only values JAX
    traces, and joining it with the static part gives the arguments back (leaf for leaf, by identity)."""
    args = tuple(args)
    traced, statics = split_statics(args)
    for leaf in jax.tree_util.tree_leaves(traced):
        assert isinstance(leaf, (jax.Array, int, float, np.generic))
    back = traced if statics is None else statics.join(traced)
    assert jax.tree_util.tree_structure(back) == jax.tree_util.tree_structure(args)
    assert all(a is b for a, b in zip(jax.tree_util.tree_leaves(back), jax.tree_util.tree_leaves(args)))
    if statics is not None:
        assert statics.check(args, "Jacobian") is not None


# -------------------------------------------------------------------------------------------- bad arguments
ENTRY_POINTS = {
    "jacobian_sparsity": (ss.jacobian_sparsity, stencil),
    "hessian_sparsity": (ss.hessian_sparsity, scalar),
    "lower_and_analyze": (ss.lower_and_analyze, stencil),
    "jacobian_coloring": (ss.jacobian_coloring, stencil),
    "hessian_coloring": (ss.hessian_coloring, scalar),
    "sparse_jacobian": (ss.sparse_jacobian, stencil),
    "value_and_sparse_jacobian": (ss.value_and_sparse_jacobian, stencil),
    "sparse_hessian": (ss.sparse_hessian, scalar),
    "value_and_sparse_hessian": (ss.value_and_sparse_hessian, scalar),
    "check_jacobian": (ss.check_jacobian, stencil),
    "check_hessian": (ss.check_hessian, scalar),
}
#: the name the message gives (value_and_… prepare the same object)
SAYS = {"value_and_sparse_jacobian": "sparse_jacobian", "value_and_sparse_hessian": "sparse_hessian"}


def _one_line(e: BaseException) -> str:
    text = str(e)
    assert "\n" not in text, text
    assert "Traceback" not in text
    return text


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_bad_arguments_get_one_line_naming_the_fix_before_tracing(name):
    entry, f = ENTRY_POINTS[name]
    says = SAYS.get(name, name)
    traced = []

    def watched(*a, **k):
        traced.append(1)
        return f(*a, **k)

    with pytest.raises(ss.InputError) as e:
        entry(watched)
    assert _one_line(e.value) == f"{says} needs at least one argument to differentiate"
    with pytest.raises(ss.InputError) as e:
        entry(X, watched)
    assert _one_line(e.value) == f"{says} takes the function first, got a ArrayImpl: {says}(f, *args)"
    with pytest.raises(ss.InputError, match="argnums") as e:
        entry(watched, X, argnums=3)
    _one_line(e.value)
    with pytest.raises(ss.InputError) as e:
        entry(watched, "not an array", X)
    assert _one_line(e.value).startswith(f"{says}: argument args[0] (position 0) has no array to differentiate (it holds "
                                         "only str leaves, which have no derivative); select array arguments")
    assert not traced  # (every refusal came before tracing f)


@pytest.mark.parametrize("name", ["jacobian_sparsity", "hessian_sparsity", "lower_and_analyze"])
def test_integer_inputs_to_a_pattern_function_warn_that_the_pattern_is_empty(name):
    entry, f = ENTRY_POINTS[name]
    with pytest.warns(ss.SparsityWarning, match=r"x has dtype int\d+: integers and booleans have no derivative, so "
                                                r"its columns are empty") as rec:
        out = entry(f, jnp.arange(6))
    pattern = out.pattern if name == "lower_and_analyze" else out
    assert pattern.nnz == 0
    assert rec[0].filename == __file__  # (the user's line)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        entry(f, X)  # float inputs: no warning


@pytest.mark.parametrize("name", ["sparse_jacobian", "sparse_hessian"])
def test_prepared_derivatives_refuse_integers_and_convert_another_float_width_with_a_warning(name):
    entry, f = ENTRY_POINTS[name]
    with pytest.raises(ss.InputError, match="differentiated arguments must be real floating point, got int"):
        entry(f, jnp.arange(6))
    x64 = jnp.asarray(np.linspace(0.1, 1.0, 6), jnp.float64)
    obj = entry(f, x64, output="dense")
    want = np.asarray(obj(x64))
    with pytest.warns(ss.SparsityWarning, match=r"argument leaf 0 has dtype float32, the (Jacobian|Hessian) was "
                                                r"prepared for float64: it is converted to float64") as rec:
        got = obj(x64.astype(jnp.float32))
    assert got.dtype == jnp.float64 and rec[0].filename == __file__
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    with pytest.raises(ss.InputError, match=r"argument leaf 0 has dtype int\d+, the .* was prepared for float64"):
        obj(jnp.arange(6))

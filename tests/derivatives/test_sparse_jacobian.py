"""Sparse Jacobians: values equal dense ``jax.jacfwd`` on the soundness suite, in both modes and every format.

Each soundness-suite function is evaluated at a random point (float64) with ``output="dense"`` in forward
and reverse mode and compared with the flattened ``jax.jacfwd``; the output containers, ``jit``,
``value_and_sparse_jacobian``, ``has_aux``, the StableHLO text and the ``jax.export`` round trip are tested
on a few functions (each prepared callable costs one XLA compilation, so the set is kept small).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from jax.experimental import sparse as jsparse

import stablehlo_sparsity as ss
from helpers import random_like
from stablehlo_sparsity import InputError, SparseJacobian, sparse_jacobian, value_and_sparse_jacobian
from stablehlo_sparsity.coloring import color_rows
from stablehlo_sparsity.examples import brusselator
from stablehlo_sparsity.analysis.rules import DEPS_RULES
from test_soundness_suite import CASES


def _point(case, seed=0):
    rng = np.random.default_rng(seed)
    argnums = (case.argnums,) if isinstance(case.argnums, int) else tuple(case.argnums)
    argnums = tuple(a % len(case.args) for a in argnums)
    return tuple(jax.tree_util.tree_map(lambda a: random_like(a, rng), a) if i in argnums else a
                 for i, a in enumerate(case.args))


def _bound(case):
    f = functools.partial(case.f, **case.kwargs) if case.kwargs else case.f
    return f


def _flat(jac_tree, f, args, argnums):
    """Flatten a ``jax.jacfwd`` result (out leaves × selected in leaves) to the (m × n) convention."""
    out_struct = jax.tree_util.tree_structure(jax.eval_shape(f, *args))
    out_leaves = jax.tree_util.tree_leaves(jax.eval_shape(f, *args))
    rows = []
    for o, blk in zip(out_leaves, out_struct.flatten_up_to(jac_tree)):
        m = int(np.prod(o.shape, dtype=np.int64))
        cols = [jnp.reshape(leaf, (m, -1)) for leaf in jax.tree_util.tree_leaves(blk)]
        rows.append(jnp.concatenate(cols, axis=1))
    return jnp.concatenate(rows, axis=0)


def _flat_jacobian(f, args, argnums):
    """The dense flattened ``jax.jacfwd`` (compiled: eager op-by-op AD is the slow part of a test)."""
    return np.asarray(jax.jit(lambda *a: _flat(jax.jacfwd(f, argnums=argnums)(*a), f, a, argnums))(*args))


def _dense(jac, values):
    out = np.zeros(jac.shape)
    rows, cols = jac.pattern.to_coo()
    out[rows, cols] = np.asarray(values)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_soundness_suite_values(name):
    """Forward and reverse compressed programs and the dense reference, compiled as one XLA program."""
    case = CASES[name]
    missing = [op for op in case.needs if op not in DEPS_RULES]
    assert not missing, f"{name} needs ops without a rule: {', '.join(missing)}"
    args = _point(case)
    f = _bound(case)
    fwd = sparse_jacobian(f, *args, argnums=case.argnums, has_aux=case.has_aux, mode="forward")
    rev = sparse_jacobian(f, *args, argnums=case.argnums, has_aux=case.has_aux, mode="reverse")
    assert (fwd.mode, rev.mode) == ("forward", "reverse")
    g = (lambda *a: f(*a)[0]) if case.has_aux else f
    argnums = fwd.argnums

    @jax.jit
    def everything(*a):
        ref = _flat(jax.jacfwd(g, argnums=argnums)(*a), g, a, argnums)
        return fwd.values(*a), rev.values(*a), ref

    vf, vr, want = everything(*args)
    want = np.asarray(want)
    np.testing.assert_allclose(_dense(fwd, vf), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_dense(rev, vr), want, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------------- formats
def stencil(x, y):
    """Two inputs, two outputs (one of them an integer leaf with zero rows)."""
    return {"a": x[1:] * x[:-1] + jnp.sin(y[:-1]), "b": jnp.roll(x, 1) * y, "n": jnp.arange(3)}


ARGS = (jnp.linspace(0.1, 1.0, 6), jnp.linspace(-1.0, 0.5, 6))


def _dense_of(out):
    if isinstance(out, (jsparse.BCOO, jsparse.BCSR)):
        return np.asarray(out.todense())
    if sp.issparse(out):
        return out.toarray()
    return np.asarray(out)


@pytest.mark.parametrize("output,mode", [(o, "auto") for o in ("bcoo", "bcsr", "scipy", "dense", "values")]
                         + [("dense", "forward"), ("bcoo", "reverse")])
def test_output_formats(output, mode):
    jac = sparse_jacobian(stencil, *ARGS, argnums=(0, 1), mode=mode, output=output)
    want = _flat_jacobian(stencil, ARGS, (0, 1))
    assert want.shape == jac.shape == (5 + 6 + 3, 12)
    out = jac(*ARGS)
    if output == "values":
        rows, cols = jac.pattern.to_coo()
        got = np.zeros(jac.shape)
        got[rows, cols] = np.asarray(out)
    else:
        got = _dense_of(out)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    if output == "bcoo":
        assert out.indices_sorted and out.unique_indices
    if output == "scipy":
        assert isinstance(out, sp.csr_array) and out.has_sorted_indices
    assert (want[11:] == 0).all()  # the integer output has no derivative


def test_auto_picks_the_direction_with_fewer_colors():
    def f(x):  # one dense row (sum) plus a diagonal: rows need 2 colors, columns need n
        return jnp.concatenate([x ** 2, jnp.sum(x)[None]])

    jac = sparse_jacobian(f, jnp.ones(8))
    assert jac.mode == "reverse" and jac.num_colors == 2

    def g(x):  # one dense column: columns need 2 colors, rows n
        return x * x[0]

    jac = sparse_jacobian(g, jnp.ones(8))
    assert jac.mode == "forward" and jac.num_colors == 2


def test_inside_jit_and_vmap():
    jac = sparse_jacobian(stencil, *ARGS, argnums=(0, 1), output="bcoo")
    want = _flat_jacobian(stencil, ARGS, (0, 1))

    @jax.jit
    def use(x, y):
        j = jac(x, y)
        return j @ jnp.ones(12), j.data

    mv, data = use(*ARGS)
    np.testing.assert_allclose(np.asarray(mv), want.sum(axis=1), rtol=1e-13)
    # the same program maps over a batch of points
    dense = sparse_jacobian(stencil, *ARGS, argnums=(0, 1), output="dense")
    xs = jnp.stack([ARGS[0], ARGS[0] * 2])
    batched = jax.vmap(lambda x: dense(x, ARGS[1]))(xs)
    np.testing.assert_allclose(np.asarray(batched[1]), _flat_jacobian(stencil, (xs[1], ARGS[1]), (0, 1)),
                               rtol=1e-13)
    with pytest.raises(InputError, match="scipy"):
        jax.jit(sparse_jacobian(stencil, *ARGS, output="scipy"))(*ARGS)


def test_value_and_jacobian_and_has_aux():
    def f(x):
        y = jnp.roll(x, 1) * x
        return y, {"sum": jnp.sum(x), "tag": 3}

    x = jnp.linspace(0.0, 1.0, 7)
    vj = value_and_sparse_jacobian(f, x, has_aux=True, output="dense")
    (y, aux), jac = vj(x)
    np.testing.assert_allclose(np.asarray(y), np.asarray(f(x)[0]))
    assert float(aux["sum"]) == pytest.approx(float(jnp.sum(x))) and int(aux["tag"]) == 3
    np.testing.assert_allclose(np.asarray(jac), _flat_jacobian(lambda v: f(v)[0], (x,), (0,)), rtol=1e-13)
    jac_only, aux2 = sparse_jacobian(f, x, has_aux=True, mode="reverse", output="dense")(x)
    np.testing.assert_allclose(np.asarray(jac_only), np.asarray(jac), rtol=1e-13)
    y2, _ = value_and_sparse_jacobian(lambda v: v[1:] - v[:-1], x)(x)
    np.testing.assert_allclose(np.asarray(y2), np.diff(np.asarray(x)))


def test_brusselator_float32_and_float64():
    N = 8
    f = functools.partial(brusselator, N=N)
    x = jnp.asarray(np.random.default_rng(0).uniform(0, 1, 2 * N * N))
    jac = sparse_jacobian(f, x, output="dense")
    assert jac.num_colors <= 8
    np.testing.assert_allclose(np.asarray(jac(x)), _flat_jacobian(f, (x,), (0,)), rtol=1e-13, atol=1e-13)
    x32 = x.astype(jnp.float32)
    j32 = sparse_jacobian(f, x32, output="dense")(x32)
    assert j32.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(j32), _flat_jacobian(f, (x32,), (0,)), rtol=1e-6, atol=1e-6)


def test_stablehlo_text_and_export_round_trip():
    jac = sparse_jacobian(stencil, *ARGS, argnums=(0, 1), output="bcoo")
    text = jac.as_text()
    assert "stablehlo.constant" in text and "func.func public @main" in text
    # the seed matrix (per input leaf) and the decompression indices are visible constants
    k, nnz = jac.num_colors, jac.pattern.nnz
    assert f": tensor<{k}x6xf64>" in text
    assert f"tensor<{nnz}x1xi32>" in text and "stablehlo.gather" in text
    values_text = jac.as_text(output="values")
    assert f"-> (tensor<{nnz}xf64>" in values_text
    exp = jac.export(platforms=("cpu", "cuda", "tpu"))
    assert tuple(exp.platforms) == ("cpu", "cuda", "tpu")
    values = exp.call(*ARGS)
    np.testing.assert_allclose(np.asarray(values), np.asarray(jac.values(*ARGS)), rtol=1e-15)
    pytest.importorskip("flatbuffers")
    from jax import export as jexport

    again = jexport.deserialize(exp.serialize())
    np.testing.assert_allclose(np.asarray(again.call(*ARGS)), np.asarray(values), rtol=1e-15)
    dense = jexport.deserialize(jac.export(platforms=("cpu",), output="dense").serialize()).call(*ARGS)
    np.testing.assert_allclose(np.asarray(dense), _flat_jacobian(stencil, ARGS, (0, 1)), rtol=1e-13)


def test_given_coloring_and_errors():
    x = jnp.ones(6)
    f = lambda v: v[1:] * v[:-1]  # noqa: E731
    pat = ss.jacobian_sparsity(f, x)
    rows = color_rows(pat)
    jac = sparse_jacobian(f, x, coloring=rows, output="dense")
    assert jac.mode == "reverse"
    np.testing.assert_allclose(np.asarray(jac(x * 2)), _flat_jacobian(f, (x * 2,), (0,)))
    with pytest.raises(InputError, match="output"):
        sparse_jacobian(f, x, output="csc")
    with pytest.raises(InputError, match="mode"):
        sparse_jacobian(f, x, mode="sideways")
    with pytest.raises(InputError, match="floating"):
        sparse_jacobian(lambda v: v * 2, jnp.arange(3))
    with pytest.raises(InputError, match="shape"):
        jac(jnp.ones(7))
    bad = ss.Coloring(np.zeros(6, np.int32), 1, "column", (5, 6))
    with pytest.raises(ss.coloring.InvalidColoringError):
        sparse_jacobian(f, x, coloring=bad)


def test_empty_jacobian_needs_no_products():
    jac = value_and_sparse_jacobian(lambda x: jnp.zeros(3) + jnp.floor(x[:3]), jnp.ones(4), output="dense")
    assert jac.num_colors == 0 and jac.pattern.nnz == 0
    y, j = jac(jnp.ones(4) * 1.5)
    np.testing.assert_allclose(np.asarray(y), [1.0, 1.0, 1.0])
    assert j.shape == (3, 4) and not np.asarray(j).any()
    assert isinstance(jac, SparseJacobian) and "0 JVPs" in repr(jac)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_seeds_computed_in_the_program(mode):
    """Above SEED_CONSTANT_LIMIT (or with constant_seeds=False) the seeds come from the color vector."""
    jac = sparse_jacobian(stencil, *ARGS, argnums=(0, 1), mode=mode, output="dense", constant_seeds=False)
    np.testing.assert_allclose(np.asarray(jac(*ARGS)), _flat_jacobian(stencil, ARGS, (0, 1)), rtol=1e-13)
    text = jac.as_text()
    assert "stablehlo.compare" in text and "stablehlo.iota" in text
    const = sparse_jacobian(stencil, *ARGS, argnums=(0, 1), mode=mode, constant_seeds=True).as_text()
    assert "stablehlo.iota" not in const


def test_columns_follow_argnums_order():
    """As jax.jacfwd and jacobian_sparsity: argnums=(1, 0) puts the columns of the second argument first."""
    def f(x, y):
        return jnp.concatenate([x[:2] * y, jnp.sin(x)])

    args = (jnp.linspace(0.1, 1.0, 3), jnp.linspace(-1.0, 1.0, 2))
    jac = sparse_jacobian(f, *args, argnums=(1, 0), output="dense")
    assert jac.pattern == ss.jacobian_sparsity(f, *args, argnums=(1, 0))
    np.testing.assert_allclose(np.asarray(jac(*args)), _flat_jacobian(f, args, (1, 0)), rtol=1e-13)
    h = ss.sparse_hessian(lambda x, y: jnp.sum(x[:2] ** 2 * y ** 3), *args, argnums=(1, 0), output="dense")
    got = np.asarray(h(*args))
    assert got.shape == (5, 5) and got[0, 0] != 0 and got[0, 2] != 0 and got[4, 4] == 0

"""gather / scatter / dynamic_slice / dynamic_update_slice: soundness against jax.jacfwd, exactness where the
true global pattern is known, and the conservative (warned) fallback for input-dependent indices."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from helpers import assert_sound as _assert_sound
from stablehlo_sparsity import SparsityWarning, analyze_module, jacobian_sparsity, lower_and_analyze

RNG = np.random.default_rng(1234)


def assert_sound(f, *args, points=2, **kw):
    """Two random points, Jacobian compiled once (eager jacfwd dispatch dominates the test time)."""
    return _assert_sound(f, *args, points=points, jit=True, **kw)


def _dense(p):
    return np.asarray(p.todense(), dtype=bool)


def _no_sparsity_warning(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SparsityWarning)
        return lower_and_analyze(f, *args, **kw)


# ---------------------------------------------------------------------- gather
def test_permutation_chain_is_exact():
    """JAX normalizes ``(perm * 7 + 3) % n`` through remainder/compare/select/add chains (and a func.call)."""
    n = 257
    perm = RNG.permutation(n)
    f = lambda x: x[(jnp.asarray(perm) * 7 + 3) % n]
    a = _no_sparsity_warning(f, jnp.ones(n))
    expected = np.zeros((n, n), bool)
    expected[np.arange(n), (perm * 7 + 3) % n] = True
    assert np.array_equal(_dense(a.pattern), expected)
    assert_sound(f, jnp.ones(n), exact=True)


def test_negative_indices_and_take():
    idx = jnp.array([-1, 0, -3, 2, 2])
    assert_sound(lambda x: x[idx] * x[::-1][idx], jnp.ones(6), exact=True)
    assert_sound(lambda x: jnp.take(x, idx, axis=0), jnp.ones(6), exact=True)
    assert_sound(lambda x: jnp.take(x, jnp.array([[0, 2], [1, 1]]), axis=1) ** 2, jnp.ones((3, 4)), exact=True)


def test_take_along_axis():
    x = jnp.ones((4, 5))
    idx = jnp.asarray(RNG.integers(0, 5, size=(4, 3)))
    assert_sound(lambda x: jnp.take_along_axis(x, idx, axis=1), x, exact=True)
    idx0 = jnp.asarray(RNG.integers(-4, 4, size=(2, 5)))
    assert_sound(lambda x: jnp.take_along_axis(jnp.sin(x), idx0, axis=0), x, exact=True)


def test_fancy_indexing_2d_3d():
    x2 = jnp.ones((5, 6))
    rows, cols = jnp.array([0, 4, 2, 2]), jnp.array([5, 0, 1, -1])
    assert_sound(lambda x: x[rows, cols], x2, exact=True)
    assert_sound(lambda x: x[rows], x2, exact=True)
    assert_sound(lambda x: x[rows][:, cols] * x[rows[:, None], cols[None, :]], x2, exact=True)
    x3 = jnp.ones((3, 4, 5))
    i, j = jnp.array([[0, 2], [1, 1]]), jnp.array([[3, 0], [-1, 2]])
    assert_sound(lambda x: x[i, :, j[0, 0]], x3, exact=True)
    assert_sound(lambda x: x[i, j], x3, exact=True)
    assert_sound(lambda x: x[1:, j, 1:4:2] ** 2, x3, exact=True)


def test_gather_under_vmap_uses_batching_dims():
    x = jnp.ones((3, 6))
    idx = jnp.array([[5, 0], [1, 1], [-2, 3]])
    f = lambda x: jax.vmap(lambda r, i: r[i])(x, idx)
    text = jax.jit(f).lower(x).as_text()
    assert "operand_batching_dims" in text
    assert_sound(f, x, exact=True)
    g = lambda x: jax.vmap(jax.vmap(lambda r, i: jnp.take(r, i, axis=0), in_axes=(0, None)), in_axes=(None, 0))(x, idx)
    assert_sound(g, x, exact=True)


def test_gather_modes_clip_fill():
    idx = jnp.array([7, -1, 2, -9, 5])
    assert_sound(lambda x: x.at[idx].get(mode="clip"), jnp.ones(6), exact=True)
    p = assert_sound(lambda x: x.at[idx].get(mode="fill", fill_value=0.0), jnp.ones(6), exact=True)
    # out-of-bounds reads (7 and -9; -1 wraps) are the fill value: no dependency
    assert _dense(p).sum(axis=1).tolist() == [0, 1, 1, 0, 1]


def test_gather_slices_with_offset_dims():
    """lax.gather with window slices of size > 1: clamping keeps the window inside the operand."""
    x = jnp.ones((6, 5))
    dn = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))
    starts = jnp.array([[0, 0], [4, 3], [-2, 9], [5, 1]])
    f = lambda x: lax.gather(x, starts, dn, slice_sizes=(2, 3), mode=lax.GatherScatterMode.CLIP)
    assert_sound(f, x, exact=True)


# ---------------------------------------------------------------------- scatter
def test_at_add_set_mul_min_max():
    idx = jnp.array([0, 2, 2, 5])
    x = jnp.ones(6)
    expected = np.eye(6, dtype=bool)
    expected[[0, 2, 2, 5], [1, 2, 3, 4]] = True
    for upd in ("add", "min", "max"):
        f = lambda x, upd=upd: getattr(x.at[idx], upd)(jnp.sin(x[1:5]))
        # min/max pick one side at each point: the global pattern is the union, checked exactly here
        p = assert_sound(f, x, exact=upd == "add")
        assert np.array_equal(_dense(p), expected)
    # JAX differentiates scatter-mul only with unique indices
    assert_sound(lambda x: x.at[jnp.array([0, 2, 3, 5])].mul(jnp.sin(x[1:5]), unique_indices=True), x, exact=True)
    # unique indices: set replaces exactly (the old value of an overwritten element is gone)
    p = assert_sound(lambda x: x.at[jnp.array([0, 2, 4, 5])].set(x[:4] ** 2), x, exact=True)
    assert not _dense(p)[2, 2]
    # duplicate indices: which one wins is implementation defined, both are kept (sound superset)
    p = jacobian_sparsity(lambda x: x.at[idx].set(x[1:5] ** 2), x)
    assert _dense(p)[2].tolist() == [False, False, True, True, False, False]


def test_at_set_2d_rows_and_windows():
    x = jnp.ones((4, 3))
    f = lambda x: x.at[jnp.array([3, 0])].set(jnp.cos(x[:2]))
    p = assert_sound(f, x, exact=True)
    assert not _dense(p)[0, 0] and _dense(p)[0, 3]
    g = lambda x: x.at[1:3, jnp.array([0, 2])].add(x[:2, :2] * 2)
    assert_sound(g, x, exact=True)


def test_scatter_drop_mode_and_out_of_bounds():
    idx = jnp.array([7, 1, -9, 3])
    x = jnp.ones(5)
    f = lambda x: x.at[idx].add(x[1:5] ** 2, mode="drop")
    p = assert_sound(f, x, exact=True)
    assert _dense(p).sum() == 5 + 2
    g = lambda x: x.at[idx].set(jnp.exp(x[:4]), mode="drop")
    assert_sound(g, x, exact=True)
    h = lambda x: x.at[jnp.array([-1, 2])].set(x[:2] * 3, mode="clip")
    assert_sound(h, x, exact=True)


def test_segment_sum_and_graph_laplacian_exact():
    x = jnp.ones(7)
    seg = jnp.array([0, 0, 3, 1, 3, 3, 2])
    assert_sound(lambda x: jax.ops.segment_sum(x ** 2, seg, num_segments=4), x, exact=True)
    p = assert_sound(lambda x: jax.ops.segment_max(jnp.sin(x), seg, num_segments=5), x)
    assert np.array_equal(_dense(p), np.eye(5, dtype=bool)[:, np.asarray(seg)])

    n = 40
    src = RNG.integers(0, n, 120)
    dst = (src + RNG.integers(1, n, 120)) % n
    w = jnp.asarray(RNG.uniform(0.5, 2.0, 120))

    def laplacian(x):
        flux = w * (x[src] - x[dst])
        return jax.ops.segment_sum(flux, src, n) - jax.ops.segment_sum(flux, dst, n)

    expected = np.eye(n, dtype=bool)
    expected[src, dst] = expected[dst, src] = True
    p = jacobian_sparsity(laplacian, jnp.ones(n))
    assert np.array_equal(_dense(p), expected)
    assert_sound(laplacian, jnp.ones(n), exact=True, points=1)


def test_finite_element_assembly_exact():
    """Triangles of a structured 2-D mesh; element residuals scatter-added into the global vector."""
    m = 5
    node = np.arange(m * m).reshape(m, m)
    a, b, c, d = node[:-1, :-1].ravel(), node[:-1, 1:].ravel(), node[1:, :-1].ravel(), node[1:, 1:].ravel()
    tris = np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1)])

    def residual(u):
        ue = u[tris]  # (elements, 3)
        local = jnp.tanh(ue @ jnp.array([[2.0, -1, -1], [-1, 2, -1], [-1, -1, 2]])) * jnp.exp(ue.sum(1, keepdims=True))
        return jnp.zeros(m * m).at[tris].add(local)

    expected = np.zeros((m * m, m * m), bool)
    for k in range(3):
        for l in range(3):
            expected[tris[:, k], tris[:, l]] = True
    p = jacobian_sparsity(residual, jnp.ones(m * m))
    assert np.array_equal(_dense(p), expected)
    assert_sound(residual, jnp.ones(m * m), exact=True, points=2)


MULTI_SCATTER = """
func.func @main(%a: tensor<4xf64>, %b: tensor<4xf64>, %u: tensor<2xf64>, %v: tensor<2xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %i = stablehlo.constant dense<[[1], [3]]> : tensor<2x1xi64>
  %r:2 = "stablehlo.scatter"(%a, %b, %i, %u, %v) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%x0: tensor<f64>, %x1: tensor<f64>, %y0: tensor<f64>, %y1: tensor<f64>):
    %s = stablehlo.add %x1, %y1 : tensor<f64>
    stablehlo.return %y0, %s : tensor<f64>, tensor<f64>
  }) : (tensor<4xf64>, tensor<4xf64>, tensor<2x1xi64>, tensor<2xf64>, tensor<2xf64>) -> (tensor<4xf64>, tensor<4xf64>)
  return %r#0, %r#1 : tensor<4xf64>, tensor<4xf64>
}
"""


def test_multi_operand_scatter_replace_and_combine():
    p = _dense(analyze_module(MULTI_SCATTER, wrt="all").pattern)  # columns: a 0-3, b 4-7, u 8-9, v 10-11
    exp = np.zeros((8, 12), bool)
    exp[[0, 2], [0, 2]] = True  # a kept where not written
    exp[1, 8] = exp[3, 9] = True  # a replaced by u
    exp[4 + np.arange(4), 4 + np.arange(4)] = True  # b combined with v
    exp[5, 10] = exp[7, 11] = True
    assert np.array_equal(p, exp)


# ---------------------------------------------------------------------- dynamic_slice / dynamic_update_slice
def test_dynamic_slice_constant_and_clamped_starts():
    x = jnp.ones((6, 4))
    assert_sound(lambda x: lax.dynamic_slice(x, (2, 1), (3, 2)) ** 2, x, exact=True)
    p = assert_sound(lambda x: lax.dynamic_slice(x, (5, 3), (3, 2)), x, exact=True)  # clamps to (3, 2)
    exp = np.zeros((3, 2, 6, 4), bool)
    for i in range(3):
        for j in range(2):
            exp[i, j, 3 + i, 2 + j] = True
    assert np.array_equal(_dense(p), exp.reshape(6, 24))


def test_dynamic_update_slice_constant_and_clamped_starts():
    x = jnp.ones((5, 4))
    f = lambda x: lax.dynamic_update_slice(x, jnp.sin(x[:2, :2]) * 3, (1, 1))
    p = assert_sound(f, x, exact=True)
    assert not _dense(p)[1 * 4 + 1, 1 * 4 + 1]
    g = lambda x: lax.dynamic_update_slice(x, x[:2, :3] ** 2, (9, -2))  # clamps to (3, 0)
    assert_sound(g, x, exact=True)


# ---------------------------------------------------------------------- dynamic (input-dependent) indices
def _warns(f, *args, argnums=0, match="conservative"):
    with pytest.warns(SparsityWarning, match=match):
        return jacobian_sparsity(f, *args, argnums=argnums)


def test_dynamic_gather_reads_only_indexed_dims():
    x = jnp.ones((4, 3))
    i = jnp.array([2, 0])
    p = _warns(lambda x, i: x[i] * 2, x, i)
    exp = np.zeros((2, 3, 4, 3), bool)
    for c in range(3):
        exp[:, c, :, c] = True  # any row, same column
    assert np.array_equal(_dense(p), exp.reshape(6, 12))
    assert_sound(lambda x: (lambda i: x[i] * 2)(i), x)
    q = _warns(lambda x, i: jax.vmap(lambda r, k: r[k])(x, i), x, jnp.array([1, 2, 0, 0]))
    assert np.array_equal(_dense(q), np.kron(np.eye(4, dtype=bool), np.ones((1, 3), bool)))


def test_dynamic_slice_and_update_slice_are_sound_and_warn():
    x = jnp.ones(6)
    p = _warns(lambda x, s: lax.dynamic_slice(x, (s,), (4,)), x, jnp.array(1))
    exp = np.zeros((4, 6), bool)
    for o in range(4):
        exp[o, o:o + 3] = True
    assert np.array_equal(_dense(p), exp)
    src = np.array([0, 1, 4, 5])
    dus = lambda x, s: lax.dynamic_update_slice(x, x[src] ** 2, (s,))
    d = _dense(_warns(dus, x, jnp.array(1)))
    # old values survive except where every clamped start overwrites (positions 2, 3)
    assert d[np.arange(6), np.arange(6)].tolist() == [True, True, False, False, True, True]
    exp = np.eye(6, dtype=bool)
    exp[2, 2] = exp[3, 3] = False
    for s in range(3):  # every clamped placement, and only those
        exp[s + np.arange(4), src] = True
    assert np.array_equal(d, exp)
    jac = jax.jit(jax.jacfwd(dus))
    for s in (-1, 0, 2, 7):  # numerically sound at every start, clamped or not
        assert not (np.abs(jac(x + 0.3, s)) > 0)[~d].any()


def test_dynamic_scatter_never_replaces():
    x = jnp.ones((4, 3))
    f = lambda x, i: x.at[i].set(jnp.cos(x[0]))
    p = _dense(_warns(f, x, jnp.array(2)))
    exp = np.eye(12, dtype=bool)
    for r in range(4):
        for c in range(3):
            exp[r * 3 + c, c] = True  # row 0 column c may land on any row, same column
    assert np.array_equal(p, exp)
    g = lambda x, i: jax.ops.segment_sum(x ** 2, i, num_segments=3)
    q = _dense(_warns(g, jnp.ones(5), jnp.array([0, 1, 1, 2, 0])))
    assert q.all()


def test_scatter_body_with_outer_value_and_keep():
    text = """
func.func @main(%a: tensor<3xf64>, %u: tensor<2xf64>, %w: tensor<f64>) -> (tensor<3xf64>, tensor<3xf64>) {
  %i = stablehlo.constant dense<[[2], [0]]> : tensor<2x1xi64>
  %r = "stablehlo.scatter"(%a, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%x: tensor<f64>, %y: tensor<f64>):
    %s = stablehlo.multiply %y, %w : tensor<f64>
    stablehlo.return %s : tensor<f64>
  }) : (tensor<3xf64>, tensor<2x1xi64>, tensor<2xf64>) -> tensor<3xf64>
  %k = "stablehlo.scatter"(%a, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%x: tensor<f64>, %y: tensor<f64>):
    stablehlo.return %x : tensor<f64>
  }) : (tensor<3xf64>, tensor<2x1xi64>, tensor<2xf64>) -> tensor<3xf64>
  return %r, %k : tensor<3xf64>, tensor<3xf64>
}
"""
    p = _dense(analyze_module(text, wrt="all").pattern)  # columns a0-2, u3-4, w5
    exp = np.zeros((6, 6), bool)
    exp[0, [4, 5]] = exp[1, 1] = exp[2, [3, 5]] = True
    exp[3 + np.arange(3), np.arange(3)] = True
    assert np.array_equal(p, exp)


def test_scatter_window_partly_out_of_bounds_keeps_old():
    """A window that does not fit: the spec writes its in-bounds part, XLA drops it — keep both."""
    text = """
func.func @main(%a: tensor<5xf64>, %u: tensor<1x3xf64>) -> tensor<5xf64> {
  %i = stablehlo.constant dense<[[3]]> : tensor<1x1xi64>
  %r = "stablehlo.scatter"(%a, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%x: tensor<f64>, %y: tensor<f64>):
    stablehlo.return %y : tensor<f64>
  }) : (tensor<5xf64>, tensor<1x1xi64>, tensor<1x3xf64>) -> tensor<5xf64>
  return %r : tensor<5xf64>
}
"""
    p = _dense(analyze_module(text, wrt="all").pattern)
    exp = np.zeros((5, 8), bool)
    exp[np.arange(5), np.arange(5)] = True
    exp[3, 5] = exp[4, 6] = True
    assert np.array_equal(p, exp)


@pytest.mark.parametrize("seed", range(3))
def test_random_2d_indices_with_duplicates_and_out_of_bounds(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(rng.integers(2, 5, size=2))
    k = 6
    rows = jnp.asarray(rng.integers(-shape[0] - 2, shape[0] + 2, size=k))
    cols = jnp.asarray(rng.integers(-shape[1] - 2, shape[1] + 2, size=k))
    x = jnp.ones(shape)
    src = lambda x: jnp.tanh(x.ravel()[:k] * x.ravel()[::-1][:k])
    assert_sound(lambda x: x.at[rows, cols].add(src(x), mode="drop"), x, exact=True)
    assert_sound(lambda x: x.at[rows, cols].set(src(x), mode="drop") * x, x)
    assert_sound(lambda x: jnp.sin(x.at[rows, cols].get(mode="fill", fill_value=0.0)) + x.ravel()[:k], x, exact=True)
    assert_sound(lambda x: x.at[rows].get(mode="clip") ** 2, x, exact=True)


# ---------------------------------------------------------------------- torch_index_select (MHLO's legacy op)
def _shape_text(shape, elem):
    return "tensor<" + "".join(f"{s}x" for s in shape) + f"{elem}>"


def _tis_module(S, I, dim, batch, index=None, it="i32", index_body=""):
    """``@main(%a: S×f64[, %i: I×it])``: torch_index_select of ``%a`` by a constant ``index`` (or the argument
    ``%i``, optionally transformed by ``index_body`` ending in ``%j``)."""
    d = dim % len(S)
    b = batch % len(I) if batch < 0 else batch
    R = S[:d] + I[b:] + S[d + 1:]
    ta, ti, tr = _shape_text(S, "f64"), _shape_text(I, it), _shape_text(R, "f64")
    if index is None:
        head, body, j = f"%a: {ta}, %i: {ti}", index_body, "%j" if index_body else "%i"
    else:
        lit = np.asarray(index).tolist()
        head, body, j = f"%a: {ta}", f"%c = stablehlo.constant dense<{lit}> : {ti}", "%c"
    return (f"func.func @main({head}) -> {tr} {{\n  {body}\n"
            f'  %0 = "stablehlo.torch_index_select"(%a, {j}) {{dim = {dim} : i64, batch_dims = {batch} : i64}} '
            f": ({ta}, {ti}) -> {tr}\n  return %0 : {tr}\n}}\n")


def _tis_reference(a, index, dim, batch):
    """NumPy oracle: ``result[b, p, i, q] = a[b, p, index[b, i], q]`` (in-range indices)."""
    index = np.asarray(index)
    flat_b = int(np.prod(a.shape[:batch], dtype=np.int64))
    a2 = a.reshape((flat_b,) + a.shape[batch:])
    i2 = index.reshape((flat_b,) + index.shape[batch:])
    out = np.stack([np.take(a2[k], i2[k], axis=dim - batch) for k in range(flat_b)])
    return out.reshape(a.shape[:dim] + index.shape[batch:] + a.shape[dim + 1:])


def _replay_pattern(text, index_args=(), points=2, seed=0):
    """Union over random points (and the given index arguments) of ``|jax.jacfwd|`` of the importer's replay
    with respect to argument 0."""
    from stablehlo_sparsity.modules.importer import import_module

    f = import_module(text)
    rng = np.random.default_rng(seed)
    jac = jax.jit(jax.jacfwd(lambda a, *i: f(a, *i)))
    acc = None
    for extra in (index_args or [()]):
        for _ in range(points):
            a = rng.standard_normal(f.arg_types[0].shape)
            J = np.asarray(jac(a, *extra)).reshape(-1, a.size) != 0
            acc = J if acc is None else acc | J
    return acc


TIS_CASES = [  # operand shape, index shape, dim, batch_dims
    ((5,), (7,), 0, 0),
    ((4, 3), (6,), 0, 0),
    ((3, 5, 2), (2, 4), 1, 0),  # dim > 0, 2-d index
    ((3, 5, 2), (), 1, 0),  # a scalar index drops the dim
    ((3, 5, 4), (3, 2), 2, 1),  # one batch dim
    ((3, 5, 4), (3, 6), 1, 1),  # batch dim right before dim
    ((2, 3, 4, 5), (2, 3, 2), 3, 2),  # two batch dims, dim last
    ((2, 3, 4, 5), (2, 2, 2), 2, 1),  # a batch dim, then an operand dim, then dim
    ((3, 5, 4), (3, 2), -1, -1),  # negative: dim from the operand's rank, batch_dims from the index's
]


@pytest.mark.parametrize("S, I, dim, batch", TIS_CASES)
def test_torch_index_select_constant_indices_exact(S, I, dim, batch):
    d = dim % len(S)
    b = batch % len(I) if batch < 0 else batch
    index = RNG.integers(0, S[d], size=I)
    text = _tis_module(S, I, dim, batch, index=index)
    p = _dense(_no_warning_module(text))
    assert np.array_equal(p, _replay_pattern(text))
    a = RNG.standard_normal(S)  # each result element copies exactly one operand element: the map itself
    pos = _tis_reference(np.arange(a.size, dtype=np.int64).reshape(S), index, d, b).ravel()
    assert np.array_equal(p, np.eye(a.size, dtype=bool)[pos])
    from stablehlo_sparsity.modules.importer import import_module

    assert np.array_equal(np.asarray(import_module(text)(a)), _tis_reference(a, index, d, b))


def _no_warning_module(text, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SparsityWarning)
        return analyze_module(text, **kw).pattern


@pytest.mark.parametrize("S, I, dim, batch", TIS_CASES)
def test_torch_index_select_unknown_indices_read_along_dim(S, I, dim, batch):
    d = dim % len(S)
    text = _tis_module(S, I, dim, batch)
    with pytest.warns(SparsityWarning, match="torch_index_select indices are not known constants"):
        p = _dense(analyze_module(text).pattern)
    draws = [(RNG.integers(-2, S[d] + 2, size=I).astype(np.int32),) for _ in range(4)]
    num = _replay_pattern(text, draws)
    assert not (num & ~p).any()  # sound for every index, in range or not
    # and exactly "any element along dim": the pattern of the zero index, widened along dim
    zero = _dense(_no_warning_module(_tis_module(S, I, dim, batch, index=np.zeros(I, np.int64))))
    zero = zero.reshape(-1, int(np.prod(S[:d], dtype=np.int64)), S[d], int(np.prod(S[d + 1:], dtype=np.int64)))
    widened = np.broadcast_to(zero.any(axis=2, keepdims=True), zero.shape).reshape(p.shape)
    assert np.array_equal(p, widened)


def test_torch_index_select_bounded_indices_read_their_range():
    """An index clamped into [1, 2] by the program reads rows 1 and 2 only (integer ranges)."""
    S, I = (5, 3), (4,)
    body = ("%lo = stablehlo.constant dense<1> : tensor<i32>\n  %hi = stablehlo.constant dense<2> : tensor<i32>\n"
            "  %j = stablehlo.clamp %lo, %i, %hi : (tensor<i32>, tensor<4xi32>, tensor<i32>) -> tensor<4xi32>")
    text = _tis_module(S, I, 0, 0, index_body=body)
    with pytest.warns(SparsityWarning, match="within its integer range"):
        p = _dense(analyze_module(text).pattern)
    exp = np.zeros((4, 3, 5, 3), bool)
    for c in range(3):
        exp[:, c, 1:3, c] = True
    assert np.array_equal(p, exp.reshape(12, 15))
    assert not (_replay_pattern(text, [(RNG.integers(-3, 7, size=I).astype(np.int32),) for _ in range(4)])
                & ~p).any()


@pytest.mark.parametrize("it", ["i32", "i64"])
def test_torch_index_select_out_of_range_constant_is_conservative(it):
    """XLA clamps an i32 index but reads -1 of an i64 index as u32 (the last element): an out-of-range index
    reads any element along dim (warns); the in-range ones stay exact."""
    S, I = (4, 2), (5,)
    index = np.array([0, 3, -1, 7, 2])
    text = _tis_module(S, I, 0, 0, index=index, it=it)
    with pytest.warns(SparsityWarning, match="2 index value"):
        p = _dense(analyze_module(text).pattern).reshape(5, 2, 4, 2)
    assert not (_replay_pattern(text).reshape(p.shape) & ~p).any()
    for r, k in ((0, 0), (1, 3), (4, 2)):
        exp = np.zeros((2, 4, 2), bool)
        exp[[0, 1], k, [0, 1]] = True
        assert np.array_equal(p[r], exp)
    for r in (2, 3):
        assert np.array_equal(p[r], np.einsum("ac,b->abc", np.eye(2, dtype=bool), np.ones(4, bool)))
    from stablehlo_sparsity.modules.importer import import_module

    a = np.arange(8.0).reshape(S)  # the replay is XLA's: -1 is 0 (i32) or 3 (i64, read as u32), 7 clamps to 3
    want = a[[0, 3, 0 if it == "i32" else 3, 3, 2]]
    assert np.array_equal(np.asarray(import_module(text)(a)), want)


def test_torch_index_select_fold_and_hessian():
    from helpers import one_op, run_fold, run_xla
    from stablehlo_sparsity.analysis.second_order.api import hessian_pattern_of_entry
    from stablehlo_sparsity.analysis.program import resolve_options
    from stablehlo_sparsity import parse_module

    a = RNG.standard_normal((3, 5, 4))
    index = RNG.integers(0, 5, size=(3, 2)).astype(np.int32)
    body = one_op("torch_index_select", [a, index], "tensor<3x2x4xf64>", "dim = 1 : i64, batch_dims = 1 : i64")
    (got,) = run_fold(body, [a, index], ["tensor<3x2x4xf64>"])
    assert np.array_equal(got, _tis_reference(a, index, 1, 1))
    assert np.array_equal(got, run_xla(body, [a, index], ["tensor<3x2x4xf64>"])[0])
    bad = index.copy()
    bad[0, 0] = 9
    assert run_fold(body, [a, bad], ["tensor<3x2x4xf64>"]) == [None]  # out of range: not folded
    # second order: a move, linear in the operand: sum(select(x)^2) has a diagonal Hessian
    text = """func.func @main(%a: tensor<6xf64>) -> tensor<f64> {
  %c = stablehlo.constant dense<[5, 0, 5]> : tensor<3xi32>
  %0 = "stablehlo.torch_index_select"(%a, %c) {dim = 0 : i64, batch_dims = 0 : i64} : (tensor<6xf64>, tensor<3xi32>) -> tensor<3xf64>
  %1 = stablehlo.multiply %0, %0 : tensor<3xf64>
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %2 = stablehlo.reduce(%1 init: %z) applies stablehlo.add across dimensions = [0] : (tensor<3xf64>, tensor<f64>) -> tensor<f64>
  return %2 : tensor<f64>
}"""
    h, _ = hessian_pattern_of_entry(parse_module(text), "main", [0], resolve_options(None, "error"))
    assert np.array_equal(h.toarray() != 0, np.diag([1, 0, 0, 0, 0, 1]).astype(bool))


@pytest.mark.parametrize("attrs, ishape, rtype, match", [
    ("dim = 2 : i64, batch_dims = 0 : i64", "3xi32", "tensor<3x2xf32>", "not a dimension of the operand"),
    ("dim = 0 : i64, batch_dims = 1 : i64", "3xi32", "tensor<3x2xf32>", "batch_dims = 1 is not in"),
    ("dim = 1 : i64, batch_dims = 1 : i64", "3x2xi32", "tensor<4x2xf32>", "batch dims of the operand"),
    ("dim = 0 : i64, batch_dims = 0 : i64", "3xi32", "tensor<2x3xf32>", "is not operand"),
    ("dim = 0 : i64, batch_dims = 0 : i64", "3xf32", "tensor<3x2xf32>", "not an integer"),
])
def test_torch_index_select_malformed_is_an_input_error(attrs, ishape, rtype, match):
    from stablehlo_sparsity import InputError

    text = (f"func.func @main(%a: tensor<4x2xf32>, %i: tensor<{ishape}>) -> {rtype} {{\n"
            f'  %0 = "stablehlo.torch_index_select"(%a, %i) {{{attrs}}} : (tensor<4x2xf32>, tensor<{ishape}>) -> {rtype}\n'
            f"  return %0 : {rtype}\n}}\n")
    with pytest.raises(InputError, match=match) as e:
        analyze_module(text)
    assert e.value.location == "-:2:8"

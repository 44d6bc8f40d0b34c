"""Jacobian values from row blocks (:mod:`stablehlo_sparsity.derivatives.blocked`): the rows of a process equal those of a
prepared ``sparse_jacobian`` whatever the block size and the process split, and bad inputs raise InputError."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings

import strategies as S
from stablehlo_sparsity import (BlockedJacobian, InputError, blocked_jacobian, color_columns, color_rows,
                                jacobian_sparsity, lower_and_analyze, sparse_jacobian)
from stablehlo_sparsity.coloring import color_columns_streamed
from stablehlo_sparsity.examples import brusselator, stencil27
from stablehlo_sparsity.analysis.streaming import jacobian_sparsity_blocks, write_blocks, write_pattern_shards
from stablehlo_sparsity.derivatives.shard_io import read_pattern_shards
import paths

LONG = os.environ.get("SHS_LONG", "") not in ("", "0")



def bruss(x):
    return brusselator(x, 6)


def stencil27_4(x):
    return stencil27(x, 4)


PROBLEMS = {"stencil27": (stencil27_4, 64), "brusselator": (bruss, 72)}


def _point(n, seed=0):
    return jnp.asarray(np.random.default_rng(seed).uniform(0.5, 1.5, n))


def _reference(f, *args, argnums=0):
    return sp.csr_array(sparse_jacobian(f, *args, argnums=argnums, output="scipy")(*args))


def _close(got, want):
    assert got.shape == want.shape
    np.testing.assert_allclose(got.toarray(), want.toarray(), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name", list(PROBLEMS))
@pytest.mark.parametrize("rows", [5, 24, 1000])
def test_rows_equal_sparse_jacobian(name, rows):
    f, n = PROBLEMS[name]
    x = _point(n)
    blocks = list(jacobian_sparsity_blocks(f, x, rows_per_block=rows))
    jac = blocked_jacobian(f, x, blocks=blocks, output="scipy")
    if name == "stencil27":
        assert jac.coloring.num_colors == 27  # the streamed coloring's natural order: the lower bound
    got = jac(x)
    assert isinstance(got, sp.csr_array) and got.dtype == np.float64
    want = _reference(f, x)
    _close(got, want)
    # the values are those of the pattern's CSR order
    values = blocked_jacobian(f, x, blocks=blocks, coloring=jac.coloring)(x)
    np.testing.assert_array_equal(values, got.data)
    pattern = jacobian_sparsity(f, x).to_scipy()
    np.testing.assert_array_equal(got.indices, pattern.indices)
    np.testing.assert_array_equal(got.indptr, pattern.indptr)


def test_same_products_same_bits():
    """With sparse_jacobian's own coloring the products are the same JVPs: the values agree to the bit."""
    f, n = PROBLEMS["stencil27"]
    x = _point(n, 3)
    coloring = color_columns(jacobian_sparsity(f, x))
    got = blocked_jacobian(f, x, blocks=lambda: jacobian_sparsity_blocks(f, x, rows_per_block=10),
                           coloring=coloring, output="scipy")(x)
    want = sp.csr_array(sparse_jacobian(f, x, coloring=coloring, output="scipy")(x))
    np.testing.assert_array_equal(got.toarray(), want.toarray())


@pytest.mark.parametrize("count", [2, 3])
def test_process_rows_concatenate_to_the_whole(count):
    f, n = PROBLEMS["brusselator"]
    x = _point(n, 1)
    blocks = list(jacobian_sparsity_blocks(f, x, rows_per_block=10))
    whole = blocked_jacobian(f, x, blocks=blocks, output="scipy")
    parts = [blocked_jacobian(f, x, blocks=blocks, coloring=whole.coloring, process=(i, count), output="scipy")
             for i in range(count)]
    assert [p.rows for p in parts][0][0] == 0 and parts[-1].rows[1] == n
    got = sp.vstack([p(x) for p in parts], format="csr")
    np.testing.assert_array_equal(got.toarray(), whole(x).toarray())  # the same products: the same bits


def test_blocks_iterates_this_process_rows():
    f, n = PROBLEMS["stencil27"]
    x = _point(n, 2)
    blocks = list(jacobian_sparsity_blocks(f, x, rows_per_block=24))
    jac = blocked_jacobian(f, x, blocks=blocks, process=(1, 2))
    assert jac.rows == (32, 64)
    got = list(jac.blocks(x))
    assert [r0 for r0, _ in got] == [32, 48]  # block [24, 48) is cut at the process's first row
    want = _reference(f, x)[32:64]
    _close(sp.vstack([b for _, b in got]), want)


def test_two_processes_from_a_shard_directory(tmp_path):
    """Two processes, each taking process=(i, 2) (this one and a plain subprocess), read one shard directory;
    their rows stacked are the whole Jacobian."""
    f, n = PROBLEMS["brusselator"]
    x = _point(n, 4)
    write_pattern_shards(tmp_path / "shards", f, x, rows_per_block=16)
    here = os.path.dirname(os.path.abspath(__file__))
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{here!r}, {str(paths.SUPPORT)!r}]
        import jax
        jax.config.update("jax_enable_x64", True)
        import scipy.sparse as sp
        from test_blocked_evaluation import PROBLEMS, _point
        from stablehlo_sparsity import blocked_jacobian
        i = int(sys.argv[1])
        f, n = PROBLEMS["brusselator"]
        x = _point(n, 4)
        jac = blocked_jacobian(f, x, blocks={str(tmp_path / "shards")!r}, process=(i, 2), output="scipy")
        sp.save_npz({str(tmp_path)!r} + f"/rows-{{i}}.npz", jac(x))
    """)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    other = subprocess.Popen([sys.executable, "-c", script, "1"], stderr=subprocess.PIPE, text=True, env=env)
    mine = blocked_jacobian(f, x, blocks=tmp_path / "shards", process=(0, 2), output="scipy")(x)
    _, err = other.communicate(timeout=300)
    assert other.returncode == 0, err
    got = sp.vstack([mine, sp.load_npz(tmp_path / "rows-1.npz")], format="csr")
    _close(got, _reference(f, x))


def test_two_arguments_and_a_pytree_output():
    def f(a, b):
        return {"s": jnp.sin(a) * b[:3], "d": jnp.cumsum(a) + b[1:]}

    a, b = _point(3, 5), _point(4, 6)
    want = _reference(f, a, b, argnums=(0, 1))
    blocks = list(jacobian_sparsity_blocks(f, a, b, argnums=(0, 1), rows_per_block=2))
    got = blocked_jacobian(f, a, b, argnums=(0, 1), blocks=blocks, output="scipy")(a, b)
    _close(got, want)
    # only the second argument: its columns
    blocks = list(jacobian_sparsity_blocks(f, a, b, argnums=1, rows_per_block=4))
    got = blocked_jacobian(f, a, b, argnums=1, blocks=blocks, output="scipy")(a, b)
    _close(got, _reference(f, a, b, argnums=1))


_FUZZ = settings(max_examples=40 if LONG else 3, deadline=None, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck))


@_FUZZ
@given(S.programs(S.enabled_generators()))
def test_random_programs(prog):
    f = prog.function()
    rng = np.random.default_rng(0)
    args = [jnp.asarray(rng.uniform(0.5, 1.5, s)) for s in prog.inputs]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            an = lower_and_analyze(f, *args)
            want = _reference(f, *args)
    except Exception:
        return  # programs the analysis or sparse_jacobian refuse are other tests' business
    if an.derivatives != "primal" or not np.isfinite(want.data).all():
        return  # custom derivative rules: the blocked detection refuses them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        blocks = list(jacobian_sparsity_blocks(f, *args, rows_per_block=max(1, an.shape[0] // 3)))
    got = blocked_jacobian(f, *args, blocks=blocks, output="scipy")(*args)
    np.testing.assert_allclose(got.toarray(), want.toarray(), rtol=1e-12, atol=1e-12, err_msg=prog.source())


# ---------------------------------------------------------------------------------------------- bad inputs
def _blocks(n=12, rows=4):
    f = lambda x: jnp.roll(x, 1) * x  # noqa: E731
    return f, _point(n), list(jacobian_sparsity_blocks(f, _point(n), rows_per_block=rows))


def test_refuses_a_coloring_of_another_shape():
    f, x, blocks = _blocks()
    other = color_columns(jacobian_sparsity(lambda v: v * v, jnp.ones(10)))
    with pytest.raises(InputError, match="12×12"):
        blocked_jacobian(f, x, blocks=blocks, coloring=other)
    with pytest.raises(InputError, match="Coloring"):
        blocked_jacobian(f, x, blocks=blocks, coloring=np.zeros(12, np.int32))


def test_refuses_reverse_mode_and_row_colorings():
    f, x, blocks = _blocks()
    with pytest.raises(InputError, match="forward"):
        blocked_jacobian(f, x, blocks=blocks, mode="reverse")
    rows = color_rows(jacobian_sparsity(f, x))
    with pytest.raises(InputError, match="not covered"):
        blocked_jacobian(f, x, blocks=blocks, coloring=rows)


def test_refuses_a_coloring_that_does_not_fit_the_blocks():
    f, x, blocks = _blocks()
    one_color = color_columns_streamed(lambda: iter([(0, sp.csr_array(np.eye(12, dtype=bool)))]), (12, 12))
    assert one_color.num_colors == 1
    jac = blocked_jacobian(f, x, blocks=blocks, coloring=one_color)
    with pytest.raises(InputError, match="does not fit"):
        jac(x)


def test_refuses_blocks_out_of_order_with_gaps_or_wrong_columns(tmp_path):
    f, x, blocks = _blocks()
    for bad, what in [([blocks[0], blocks[0], blocks[1], blocks[2]], "consecutive.*overlap"),
                      ([blocks[0], blocks[2]], "gap"), ([blocks[1], blocks[2]], "start at row 4"),
                      (blocks[:2], "cover rows up to 8"), ([(0, np.ones((12, 12)))], "not a SciPy"),
                      ([(0, sp.csr_array((12, 13), dtype=bool))], "13 columns"), ([blocks[0][1]], "pair")]:
        jac = blocked_jacobian(f, x, blocks=bad, coloring=color_columns(jacobian_sparsity(f, x)))
        with pytest.raises(InputError, match=what):
            jac(x)
    with pytest.raises(InputError, match="one-shot"):
        blocked_jacobian(f, x, blocks=iter(blocks))
    with pytest.raises(InputError, match="no shard directory"):
        blocked_jacobian(f, x, blocks=str(tmp_path / "missing"))
    write_blocks(tmp_path, [blocks[0], blocks[2]], (12, 12))
    jac = blocked_jacobian(f, x, blocks=tmp_path, coloring=color_columns(jacobian_sparsity(f, x)))
    with pytest.raises(InputError, match="gap"):
        jac(x)


def test_refuses_wrong_arguments():
    f, x, blocks = _blocks()
    jac = blocked_jacobian(f, x, blocks=blocks)
    assert isinstance(jac, BlockedJacobian)
    with pytest.raises(InputError, match="shape"):
        jac(jnp.ones(13))
    with pytest.raises(InputError, match="structure"):
        jac(x, x)
    with pytest.raises(InputError, match="floating"):
        blocked_jacobian(f, jnp.arange(12), blocks=blocks)
    with pytest.raises(InputError, match="output"):
        blocked_jacobian(f, x, blocks=blocks, output="bcoo")
    with pytest.raises(InputError, match="process"):
        blocked_jacobian(f, x, blocks=blocks, process=(2, 2))
    with pytest.raises(InputError, match="does not match"):
        blocked_jacobian(f, x, blocks=blocks, shape=(12, 11))


def test_a_process_loads_only_its_shards(tmp_path):
    """From a shard directory a process loads the shards that hold its rows (the others are checked by name)."""
    f, x, blocks = _blocks(12, 3)
    write_blocks(tmp_path, blocks, (12, 12))
    assert [r0 for r0, _ in read_pattern_shards(tmp_path, rows=(5, 8))] == [3, 6]
    for shard in sorted(tmp_path.glob("rows-*.npz"))[:1]:
        shard.write_bytes(b"not a shard")  # never loaded by process (1, 2): its rows are [6, 12)
    jac = blocked_jacobian(f, x, blocks=tmp_path, process=(1, 2), output="scipy")
    _close(jac(x), _reference(f, x)[6:12])
    products = jac.products(x)
    assert products.shape == (jac.coloring.num_colors, 6)
    again = sp.vstack([b for _, b in jac.blocks(x, products=products)])
    np.testing.assert_array_equal(again.toarray(), jac(x).toarray())


def test_one_block_at_a_time():
    """blocks() keeps no earlier block alive: a source's block is freed once the next one is read."""
    import gc
    import weakref

    f, n = PROBLEMS["stencil27"]
    x = _point(n, 7)
    pattern = jacobian_sparsity(f, x).to_scipy()
    alive: list = []

    def source():
        for r0 in range(0, n, 8):
            block = sp.csr_array(pattern[r0:r0 + 8])
            owner = block.indices
            while owner.base is not None:  # what any copy-free view of the block keeps alive
                owner = owner.base
            alive.append(weakref.ref(owner))
            yield r0, block

    jac = blocked_jacobian(f, x, blocks=source)
    for k, _ in enumerate(jac.blocks(x)):
        gc.collect()
        assert sum(r() is not None for r in alive[-(k + 1):]) <= 1
    assert len(alive) >= 2 * n // 8  # read twice by the coloring, and once more here


def test_float32():
    f, n = PROBLEMS["brusselator"]
    x = _point(n, 8)
    got = blocked_jacobian(f, x.astype(jnp.float32), blocks=lambda: jacobian_sparsity_blocks(f, x, rows_per_block=30),
                           output="scipy")(x.astype(jnp.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.toarray(), _reference(f, x).toarray(), rtol=1e-5, atol=1e-5)

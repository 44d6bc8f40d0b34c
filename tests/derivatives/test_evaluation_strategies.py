"""Evaluation strategies (``strategy="vmap" | "unrolled" | "loop"``): every strategy gives the dense ``jax.jacfwd``
/ ``jax.hessian`` values, in every mode, with pytrees, aux, several decompression groups and chunk sizes; the
automatic choice follows the documented size rules; the index arrays are constants of the program.

Timing lives in ``benchmarks/evaluate.py``; nothing here asserts speed.
"""

from __future__ import annotations

import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity._compat import constants_in_module
from helpers import _flat_jacobian
from stablehlo_sparsity import InputError
from stablehlo_sparsity.derivatives.prepared.evaluation import (GROUP, UNROLL_PRODUCTS, VJP_VMAP_BYTES,
                                                                VMAP_PRODUCT_BYTES, EvaluationPlan, Side,
                                                                choose_strategy)
from stablehlo_sparsity.examples import brusselator

STRATEGIES = ("vmap", "unrolled", "loop")
N = 6
X = jnp.asarray(np.random.default_rng(0).uniform(0.5, 1.5, 2 * N * N))


def bruss(x):
    return brusselator(x, N)


def two_leaves(p, scale):
    """Pytree in and out, aux, an unselected argument: the layouts every strategy must keep."""
    a, b = p["a"], p["b"]
    out = {"y": jnp.concatenate([a[1:] * a[:-1], jnp.sin(b[:3]) * scale]), "z": (b ** 2)[::-1] + a[:5].sum()}
    return out, {"norm": jnp.sum(a ** 2)}


P = {"a": jnp.linspace(0.3, 1.2, 7), "b": jnp.linspace(-0.7, 0.9, 5)}


def banded(width):
    """A banded map whose Jacobian needs ``2·width + 1`` colors (more than one decompression group)."""
    def f(x):
        out = x ** 2
        for s in range(1, width + 1):
            out = out + jnp.pad(x[s:], (0, s)) * (0.5 + s) + jnp.pad(x[:-s], (s, 0)) * jnp.cos(x) / s
        return out
    return f


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("mode", ["forward", "reverse", "bidirectional"])
def test_brusselator_every_mode_and_strategy(mode, strategy):
    want = _flat_jacobian(bruss, (X,), 0)
    jac = ss.value_and_sparse_jacobian(bruss, X, mode=mode, strategy=strategy, output="dense")
    assert jac.strategy == strategy
    y, got = jac(X)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(np.asarray(y), np.asarray(bruss(X)), rtol=1e-14)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_pytrees_aux_and_unselected_arguments(mode, strategy):
    want = _flat_jacobian(lambda p, s: two_leaves(p, s)[0], (P, 2.0), 0)
    jac = ss.value_and_sparse_jacobian(two_leaves, P, 2.0, has_aux=True, mode=mode, strategy=strategy,
                                       output="dense", chunk_size=2)
    (y, aux), got = jac(P, 2.0)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13, atol=1e-13)
    ref_y, ref_aux = two_leaves(P, 2.0)
    np.testing.assert_allclose(np.asarray(y["z"]), np.asarray(ref_y["z"]), rtol=1e-14)
    assert float(aux["norm"]) == pytest.approx(float(ref_aux["norm"]), rel=1e-14)


@pytest.mark.parametrize("width,strategy,chunk", [(2, "unrolled", None), (6, "unrolled", None), (9, "unrolled", None),
                                                  (9, "unrolled", 3), (6, "loop", None), (9, "loop", 4)])
def test_many_colors_several_groups(width, strategy, chunk):
    """2·width + 1 colors: one group (5), two groups (13: the first writes the whole result, zeros elsewhere,
    the second is scattered into it) and three (19); chunks of colors batched with vmap inside a step."""
    f = banded(width)
    x = jnp.linspace(0.1, 2.0, 40)
    jac = ss.sparse_jacobian(f, x, mode="forward", strategy=strategy, chunk_size=chunk, output="dense")
    assert jac.num_colors == 2 * width + 1
    if strategy == "unrolled" and chunk is None:
        groups = jac._plan.unrolled_tables()
        assert len(groups) == (1 if jac.num_colors <= GROUP else 1 + -(-(jac.num_colors - GROUP + 1) // GROUP))
    np.testing.assert_allclose(np.asarray(jac(x)), _flat_jacobian(f, (x,), 0), rtol=1e-13, atol=1e-13)


def least_squares(x):
    return 0.5 * jnp.sum(brusselator(x, N) ** 2)


def band_energy(x):
    """A scalar with a banded Hessian (half-bandwidth 6): more star colors than one decompression group."""
    return sum(jnp.sum(x[:-s] ** 2 * jnp.sin(x[s:]) / s) for s in range(1, 7)) + jnp.sum(x ** 4)


XB = jnp.linspace(0.2, 1.7, 30)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("mode", ["direct", "substitution"])
def test_hessian_every_strategy(mode, strategy):
    want = np.asarray(jax.jit(jax.hessian(band_energy))(XB))
    h = ss.value_and_sparse_hessian(band_energy, XB, mode=mode, strategy=strategy, output="dense")
    assert h.strategy == strategy
    if mode == "direct":
        assert h.num_colors > GROUP  # several decompression groups when unrolled
    val, got = h(XB)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    assert float(val) == pytest.approx(float(band_energy(XB)), rel=1e-13)


def chain(x):
    return jnp.concatenate([x[1:] * x[:-1], jnp.sin(x[:3])]) + x[0]


@pytest.mark.parametrize("strategy", ["unrolled", "loop"])
def test_under_jit_vmap_and_grad_of_values(strategy):
    x = jnp.linspace(0.2, 1.3, 8)
    jac = ss.sparse_jacobian(chain, x, strategy=strategy, output="values")
    xs = jnp.stack([x, x * 1.1])
    batched = jax.jit(jax.vmap(jac))(xs)
    for i in range(2):
        np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(jac.values(xs[i])), rtol=1e-13)
    # reverse-mode AD through the prepared callable (a scalar of the nonzeros)
    g = jax.grad(lambda v: jnp.sum(jac(v) ** 2))(x)
    want = jax.grad(lambda v: jnp.sum(jax.jacfwd(chain)(v) ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(want), rtol=1e-12)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_float32(strategy):
    x32 = X.astype(jnp.float32)
    got = ss.sparse_jacobian(bruss, x32, strategy=strategy, output="dense")(x32)
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got), _flat_jacobian(bruss, (x32,), 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("strategy", ["unrolled", "loop"])
def test_no_nonzeros_and_pickle(strategy, tmp_path):
    zero = ss.value_and_sparse_jacobian(lambda x: jnp.floor(x) + 1.0, X, strategy=strategy, output="dense")
    y, j = zero(X)
    assert not np.asarray(j).any() and np.asarray(y).shape == X.shape
    jac = ss.sparse_jacobian(bruss, X, strategy=strategy, output="values")
    back = pickle.loads(pickle.dumps(jac))
    np.testing.assert_allclose(np.asarray(back(X)), np.asarray(jac(X)), rtol=1e-15)
    jac.save(tmp_path / "j.npz")
    np.testing.assert_allclose(np.asarray(ss.load(tmp_path / "j.npz")(X)), np.asarray(jac(X)), rtol=1e-15)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_index_arrays_are_program_constants(strategy):
    """The gather (and scatter) indices are constants of the compiled program: its only parameters are the
    arguments, so a call transfers nothing but ``x``."""
    jac = ss.sparse_jacobian(bruss, X, strategy=strategy, output="values")
    text = jac.as_text()
    main = text[text.index("func.func public @main"):]
    signature = main[:main.index("{")]
    assert signature.count("%arg") == 1, signature
    assert "stablehlo.gather" in text
    compiled = jax.jit(lambda x: jac.values(x)).lower(X).compile()
    assert len(compiled.in_tree.children()[0].children()) == 1


def _tensor_type(a) -> str:
    return "tensor<" + "x".join(map(str, a.shape)) + "x" + {4: "i32", 8: "i64"}[a.dtype.itemsize] + ">"


def _constant_types(text: str) -> set[str]:
    """The tensor types of the constants in a StableHLO text."""
    import re

    return set(re.findall(r"stablehlo\.constant dense.*: (tensor<[^>]*>)", text))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_index_arrays_as_arguments_give_the_same_bits(strategy, monkeypatch):
    """Above ``INDEX_ARGUMENT_ENTRIES`` nonzeros (forced to 0 here) the index arrays are arguments of the compiled
    program, held on the device by the prepared object; the values are those of the constant program bit for bit."""
    from stablehlo_sparsity.derivatives.prepared import evaluation

    chunk = 2 if strategy == "loop" else None
    # kept short: one Jacobian mode per strategy, and a Hessian with the batched products
    for mode in {"vmap": ("reverse",), "unrolled": ("forward",), "loop": ("forward",)}[strategy]:
        const = ss.sparse_jacobian(bruss, X, mode=mode, strategy=strategy, chunk_size=chunk, output="values")
        monkeypatch.setattr(evaluation, "INDEX_ARGUMENT_ENTRIES", 0)
        args = ss.sparse_jacobian(bruss, X, mode=mode, strategy=strategy, chunk_size=chunk, output="values",
                                  coloring=const.coloring)
        monkeypatch.undo()
        assert args.index_arguments and not const.index_arguments
        tables = args._index_arguments()
        assert tables and all(isinstance(t, jax.Array) for t in tables.values())
        # the compiled program's parameters: the index arrays, then x
        compiled = args._jitted.lower(tables, X).compile()
        assert compiled.in_tree.num_leaves == len(tables) + 1
        # and the program reads them: no index array is a constant any more (the constant program has them)
        types = {_tensor_type(t) for t in tables.values()}
        assert not types & _constant_types(args._jitted.lower(tables, X).as_text()), types
        with constants_in_module():  # (JAX 0.12.1 hoists a jit's constants into arguments unless told not to)
            assert types & _constant_types(const._jitted.lower({}, X).as_text()), types
        assert np.array_equal(np.asarray(args(X)), np.asarray(const(X))), mode
        assert np.array_equal(np.asarray(args.values(X)), np.asarray(const.values(X))), mode
    if strategy != "vmap":
        return
    g = lambda v: 0.5 * jnp.sum(bruss(v) ** 2)  # noqa: E731
    const = ss.sparse_hessian(g, X, strategy=strategy, chunk_size=chunk, output="values")
    monkeypatch.setattr(evaluation, "INDEX_ARGUMENT_ENTRIES", 0)
    args = ss.sparse_hessian(g, X, strategy=strategy, chunk_size=chunk, output="values")
    assert args.index_arguments
    assert np.array_equal(np.asarray(args(X)), np.asarray(const(X)))
    assert np.array_equal(np.asarray(jax.jit(args.values)(X)), np.asarray(const(X)))


def test_automatic_choice_follows_the_size_rules():
    def side(k, n, kind):
        return Side(np.zeros(n, np.int32), k, n, kind)

    small = VMAP_PRODUCT_BYTES // 16  # elements such that (n + n) · 8 bytes stay within the limit
    assert choose_strategy("auto", [side(7, small, "jvp")], 8) == "vmap"
    assert choose_strategy("auto", [side(7, 10 * small, "jvp")], 8) == "unrolled"
    assert choose_strategy("auto", [side(27, 10 * small, "hvp")], 8) == "unrolled"
    assert choose_strategy("auto", [side(UNROLL_PRODUCTS + 1, 10 * small, "jvp")], 8) == "loop"
    assert choose_strategy("auto", [side(9, 10 * small, "vjp")], 8) == "vmap"
    big = VJP_VMAP_BYTES // (2 * 8 * 9) + 1
    assert choose_strategy("auto", [side(9, big, "vjp")], 8) == "loop"
    assert choose_strategy("auto", [side(1, 10 * small, "jvp")], 8) == "vmap"
    assert choose_strategy("unrolled", [side(3, 10, "jvp")], 8) == "unrolled"
    # the prepared objects follow the same rule
    assert ss.sparse_jacobian(bruss, X).strategy == "vmap"
    assert "strategy='vmap'" in repr(ss.sparse_jacobian(bruss, X))


def test_plan_tables_cover_every_nonzero_once():
    rng = np.random.default_rng(1)
    sides = [Side(rng.integers(0, 5, 30).astype(np.int32), 5, 20, "jvp"),
             Side(rng.integers(0, 3, 20).astype(np.int32), 3, 30, "vjp")]
    source = np.concatenate([rng.integers(0, 5 * 20, 70), 100 + rng.integers(0, 3 * 30, 50)])
    for strategy, chunk in [("unrolled", None), ("unrolled", 2), ("loop", 2)]:
        plan = EvaluationPlan(sides, source, strategy, chunk)
        if strategy == "unrolled":
            seen = []
            for _members, entries, gather_idx, positions in plan.unrolled_tables():
                seen.append(np.flatnonzero(gather_idx < sum(len(e) for e in entries)) if positions is None
                            else positions)
            seen = np.concatenate(seen)
        else:
            seen = np.concatenate([pos[pos < len(source)].ravel() for i in range(2)
                                   for pos in [plan.loop_tables(i)[3]]])
        assert np.array_equal(np.sort(seen), np.arange(len(source)))


def test_bad_strategy_and_chunk_size_are_clear_errors():
    with pytest.raises(InputError, match="strategy must be one of"):
        ss.sparse_jacobian(bruss, X, strategy="fast")
    with pytest.raises(InputError, match="chunk_size must be a positive integer"):
        ss.sparse_jacobian(bruss, X, chunk_size=0)
    with pytest.raises(InputError, match="strategy must be one of"):
        ss.sparse_hessian(least_squares, X, strategy="parallel")

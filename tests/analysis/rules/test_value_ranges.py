"""Integer value ranges (folding/ranges.py, rules/value_ranges.py): a start index computed from the inputs,
whose range is known, selects only the slices it can reach — sound against ``jax.jacfwd`` at random points.

The first four programs are asdex's own tests of dynamic indices (``tests/_interpret/test_dynamic_slice.py``,
``test_gather.py``, ``test_scatter.py``: an ``argmax`` over two elements as the start), where asdex enumerates
the possible starts and the analysis used to read every start; the expected patterns are asdex's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from helpers import assert_sound, peer
from stablehlo_sparsity import jacobian_sparsity


def _dense(p):
    return np.asarray(p.todense(), dtype=bool)


def _ds_argmax(x):
    idx = jnp.argmax(x[:2])
    return lax.dynamic_slice(x, (idx,), (3,))


def _dus_argmax(x):
    idx = jnp.argmax(x[:2])
    return lax.dynamic_update_slice(x, x[2:4], (idx,))


def _gather_argmax(x):
    idx = jnp.argmax(x[:2])
    return jnp.take(x, jnp.array([0, 1]) + idx)


def _scatter_argmax(x):
    idx = jnp.argmax(x[3:]).astype(int)
    return x[:3].at[idx].set(x[3])


ASDEX = {  # asdex's expected patterns for its dynamic-index tests
    "dynamic_slice": (_ds_argmax, 5, [[1, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 1, 0]]),
    "dynamic_update_slice": (_dus_argmax, 4, [[1, 0, 1, 0], [0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1]]),
    "gather": (_gather_argmax, 4, [[1, 1, 0, 0], [0, 1, 1, 0]]),
    "scatter": (_scatter_argmax, 5, [[1, 0, 0, 1, 0], [0, 1, 0, 1, 0], [0, 0, 1, 0, 0]]),
}


@pytest.mark.parametrize("name", sorted(ASDEX))
def test_asdex_dynamic_index_programs_are_exact(name):
    f, n, expected = ASDEX[name]
    p = assert_sound(f, jnp.ones(n), points=8, jit=True, exact=True)
    assert np.array_equal(_dense(p), np.array(expected, bool))


@pytest.mark.peer
@pytest.mark.parametrize("name", sorted(ASDEX))
def test_asdex_release_gives_its_expected_patterns(name):
    """The installed peer release still gives the patterns its own tests expect, which ours equal (above)."""
    f, n, expected = ASDEX[name]
    theirs = np.asarray(peer().jacobian_sparsity(f, jnp.ones(n)).todense()).astype(bool)
    assert np.array_equal(theirs, np.array(expected, bool))


def test_bool_to_int_and_min_max_clamp_bound_the_start():
    def f(x):  # (x0 > 0) + 2 ∈ [2, 3]
        return lax.dynamic_slice(x, ((x[0] > 0).astype(jnp.int32) + 2,), (2,))

    p = _dense(assert_sound(f, jnp.ones(6), points=8, jit=True, exact=True))
    assert np.array_equal(p, np.array([[0, 0, 1, 1, 0, 0], [0, 0, 0, 1, 1, 0]], bool))

    def g(x):  # min(max(2·argmax, 1), 3) ∈ [1, 3]
        i = jnp.minimum(jnp.maximum(jnp.argmax(x[:3]) * 2, 1), 3)
        return lax.dynamic_slice(x, (i,), (2,))

    q = _dense(assert_sound(g, jnp.ones(8), points=12, jit=True))
    assert q.sum() == 6  # starts 1..3: rows read x[1..4] and x[2..5], not the whole vector

    def h(x):  # clamp of an unknown integer into [1, 2]
        i = jnp.clip(jnp.floor(x[0] * 10).astype(jnp.int32), 1, 2)
        return lax.dynamic_slice(x, (i,), (3,))

    r = _dense(assert_sound(h, jnp.ones(7), points=12, jit=True))
    assert r.sum() == 6 and not r[:, 5:].any() and not r[:, 0].any()


def test_two_dimensional_start_and_select_on_known_ranges():
    def f(x):
        m = x.reshape(3, 4)
        i = jnp.argmax(x[:2])
        return lax.dynamic_slice(m, (i, i + 1), (2, 2)).ravel()

    p = _dense(assert_sound(f, jnp.ones(12), points=12, jit=True))
    assert p.sum() == 16  # starts {0, 1} × {1, 2}: each element reads a 2 × 2 block

    def g(x):  # where(x0 > 0, 1, 3) ∈ {1, 3}: the gather reads x[1..3] only, x[i + 1] x[2..4]
        i = jnp.where(x[0] > 0, 1, 3)
        return x[i] * x[jnp.clip(i + 1, 0, 5)]

    q = _dense(assert_sound(g, jnp.ones(6), points=8, jit=True))
    assert not q[0, [0, 5]].any()


def test_ranges_do_not_leak_through_loop_iterations():
    """A carried index whose range grows with every iterate of a loop with a data-dependent trip count: the
    fixed point compares iterates by index sets and constants, so a range kept from an early iterate would
    claim ``i ∈ [0, 2]`` where it reaches 4.  Carries enter and leave ``while`` without ranges."""
    def f(x):
        n_iter = jnp.argmax(x[2:6]).astype(jnp.int32) + 1

        def body(c):
            k, i = c
            return k + 1, i + 1

        _, i = lax.while_loop(lambda c: c[0] < n_iter, body, (jnp.int32(0), jnp.argmax(x[:2]).astype(jnp.int32)))
        return lax.dynamic_slice(x, (i,), (2,))

    p = _dense(assert_sound(f, jnp.ones(10), points=40, jit=True))
    assert p[0, :9].all() and p[1, 1:].all()


def test_scatter_with_ranged_duplicate_indices_stays_conservative():
    def f(x):  # both updates may land on the same element: every one that may land is kept, nothing replaced
        i = jnp.argmax(x[:2])
        return jnp.zeros(4).at[jnp.stack([i, i + 1])].set(x[2:4] ** 2) + x[:4]

    p = _dense(assert_sound(f, jnp.ones(4), points=16, jit=True))
    exp = np.eye(4, dtype=bool)
    exp[[0, 1], 2] = True  # x2 lands at i ∈ {0, 1}
    exp[[1, 2], 3] = True  # x3 lands at i + 1 ∈ {1, 2}
    assert np.array_equal(p, exp)


def test_unsigned_and_wrapping_arithmetic_give_no_range():
    def f(x):  # argmax · 2**30 + 2**30 wraps around int32: no range, every start is possible
        i = jnp.argmax(x[:2]).astype(jnp.int32) * jnp.int32(2**30) + jnp.int32(2**30)
        return lax.dynamic_slice(x, (i,), (2,))

    p = _dense(jacobian_sparsity(f, jnp.ones(5)))
    assert p[0].sum() == 4 and p[1].sum() == 4
    assert_sound(f, jnp.ones(5), points=4, jit=True)

    def g(x):  # an unsigned index: 0 - 1 wraps to the top, so subtract gives no range
        i = jnp.argmax(x[:2]).astype(jnp.uint32) - jnp.uint32(1)
        return lax.dynamic_slice(x, (i,), (2,))

    q = _dense(assert_sound(g, jnp.ones(5), points=8, jit=True))
    assert q[1, 4]  # start 3 (clamped from 2**32 - 1) is reachable


def test_jacfwd_agrees_at_random_points_on_random_ranged_indices():
    rng = np.random.default_rng(7)
    for _ in range(6):
        n, size, k = int(rng.integers(5, 9)), int(rng.integers(1, 3)), int(rng.integers(2, 4))
        off = int(rng.integers(-2, 3))

        def f(x, n=n, size=size, k=k, off=off):
            i = jnp.argmax(x[:k]) + off
            j = jnp.clip(i * 2 - 1, 0, n)
            return jnp.concatenate([lax.dynamic_slice(x, (i,), (size,)), x[jnp.stack([i, j])] ** 2,
                                    x.at[j].add(x[0] * x[1])])

        assert_sound(f, jnp.ones(n), points=12, jit=True)
        jax.clear_caches()


def test_a_function_called_with_different_ranges_is_analyzed_for_each():
    """``jnp.take`` is one private function called twice, with indices in ``[0, 1]`` then in ``[3, 4]``: the
    call summaries are keyed by the arguments' ranges too."""
    def f(x):
        i = jnp.argmax(x[:2])
        return jnp.take(x, i[None]) * jnp.take(x, i[None] + 3)

    p = _dense(assert_sound(f, jnp.ones(6), points=12, jit=True, exact=True))
    assert np.array_equal(p, np.array([[1, 1, 0, 1, 1, 0]], bool))

"""Control flow (§while, §case, §if, §optimization_barrier): soundness against numerical Jacobians, exact
global patterns when the trip count / branch index is known, and the cost of long loops."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers import assert_sound
from stablehlo_sparsity import analyze_module, jacobian_sparsity, lower_and_analyze
from stablehlo_sparsity.errors import SparsityWarning
from stablehlo_sparsity.analysis.interpreter import AnalysisOptions


def _circulant_band(n, half):
    i = np.arange(n)
    d = np.abs(i[:, None] - i[None, :])
    return np.minimum(d, n - d) <= half


def _euler(steps):
    def f(u):
        def step(i, u):
            return u + 0.1 * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1))
        return jax.lax.fori_loop(0, steps, step, u)
    return f


# ---------------------------------------------------------------- while: exact iterations
def test_repeated_roll_in_fori_loop_is_exactly_the_true_pattern():
    f = lambda x: jax.lax.fori_loop(0, 3, lambda i, c: jnp.roll(c, 1) * c, x)
    p = assert_sound(f, jnp.ones(11), exact=True, jit=True)
    # x_k[j] depends on x[j-k .. j]: a cyclic lower band of width 4 after three steps.
    i = np.arange(11)
    assert np.array_equal(p.todense(), ((i[:, None] - i[None, :]) % 11) < 4)


def test_explicit_euler_stencil_grows_one_band_per_step():
    n, steps = 40, 7
    p = assert_sound(_euler(steps), jnp.ones(n), exact=True, jit=True)
    assert np.array_equal(p.todense(), _circulant_band(n, steps))


def test_while_loop_with_constant_counter_runs_exact_iterations():
    def f(x):
        return jax.lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, jnp.roll(c[1], 1) * c[1]), (0, x))[1]
    p = assert_sound(f, jnp.ones(20), exact=True, jit=True)
    i = np.arange(20)
    assert np.array_equal(p.todense(), ((i[:, None] - i[None, :]) % 20) < 5)


def test_counter_stepping_by_two_and_starting_late():
    def f(x):
        return jax.lax.while_loop(lambda c: c[0] < 9, lambda c: (c[0] + 2, jnp.roll(c[1], 1) + c[1]), (3, x))[1]
    p = assert_sound(f, jnp.ones(12), exact=True, jit=True)  # 3, 5, 7 -> three steps
    i = np.arange(12)
    assert np.array_equal(p.todense(), ((i[:, None] - i[None, :]) % 12) < 4)


def test_scan_rnn_is_block_lower_triangular():
    T, H, D = 6, 3, 2
    W = jnp.eye(H) * 0.5 + 0.1
    U = jnp.ones((D, H)) * 0.3

    def rnn(xs):
        def cell(h, x):
            h = jnp.tanh(h @ W + x @ U)
            return h, h
        return jax.lax.scan(cell, jnp.zeros(H), xs)[1]

    p = assert_sound(rnn, jnp.ones((T, D)), exact=True, jit=True)
    expected = np.kron(np.tril(np.ones((T, T), bool)), np.ones((H, D), bool))
    assert np.array_equal(p.todense(), expected)


def test_reverse_scan_and_final_carry():
    def f(xs):
        c, ys = jax.lax.scan(lambda c, x: (c * x + 1.0, c + x), 1.0, xs, reverse=True)
        return jnp.concatenate([ys, c[None]])
    p = assert_sound(f, jnp.ones(5), exact=True, jit=True)
    # ys[t] = c_t + x[t] where c_t depends on x[t+1:]; the final carry on all of x.
    expected = np.vstack([np.triu(np.ones((5, 5), bool)), np.ones((1, 5), bool)])
    assert np.array_equal(p.todense(), expected)


def test_nested_loops_are_exact():
    def f(x):
        def outer(i, c):
            return jax.lax.fori_loop(0, 2, lambda j, d: d + jnp.roll(d, 1) * (i + 1.0), c)
        return jax.lax.fori_loop(0, 3, outer, x)
    p = assert_sound(f, jnp.ones(15), exact=True, jit=True)
    i = np.arange(15)
    assert np.array_equal(p.todense(), ((i[:, None] - i[None, :]) % 15) < 7)


def test_inner_loop_bound_from_outer_counter():
    def f(x):
        def outer(i, c):
            return jax.lax.fori_loop(0, i, lambda j, d: d + jnp.roll(d, 1), c)  # i steps: 0 + 1 + 2 + 3
        return jax.lax.fori_loop(0, 4, outer, x)
    p = assert_sound(f, jnp.ones(12), exact=True, jit=True)
    i = np.arange(12)
    assert np.array_equal(p.todense(), ((i[:, None] - i[None, :]) % 12) < 7)


def test_loop_inside_a_called_function_called_twice():
    @jax.jit
    def inner(u):
        return jax.lax.fori_loop(0, 2, lambda i, c: c + jnp.roll(c, -1), u)

    f = lambda x: inner(inner(x) * 2.0) + inner(x)
    p = assert_sound(f, jnp.ones(10), exact=True, jit=True)
    i = np.arange(10)
    assert np.array_equal(p.todense(), ((i[None, :] - i[:, None]) % 10) < 5)


def test_values_captured_from_outside_the_loop():
    def f(x, y):
        return jax.lax.fori_loop(0, 3, lambda i, c: c * y[i] + jnp.roll(c, 1), x)
    p = assert_sound(f, jnp.ones(6), jnp.ones(4), argnums=(0, 1), exact=True, jit=True)
    assert not p.todense()[:, 6 + 3].any()  # y[3] is never read: the counter is known in every iteration


def test_loop_computed_constant_stays_a_constant():
    def f(x):
        k = jax.lax.fori_loop(0, 3, lambda i, k: k + 2, 0)  # 6
        return x[k] * x
    p = assert_sound(f, jnp.ones(8), exact=True, jit=True)
    assert p.nnz == 8 + 7


def test_branch_chosen_by_the_counter_inside_the_loop():
    def f(x):
        def body(i, c):
            return jax.lax.cond(i % 2 == 0, lambda c: jnp.roll(c, 1) * c, lambda c: c * 3.0, c)
        return jax.lax.fori_loop(0, 4, body, x)
    p = assert_sound(f, jnp.ones(9), exact=True, jit=True)  # two growing steps
    i = np.arange(9)
    assert np.array_equal(p.todense(), ((i[:, None] - i[None, :]) % 9) < 3)


# ---------------------------------------------------------------- while: fixed point
def test_data_dependent_exit_is_sound_and_reaches_the_fixed_point():
    def f(x):
        return jax.lax.while_loop(lambda c: jnp.sum(c ** 2) < 1e3, lambda c: c + jnp.roll(c, 1) * 1.5, x)
    p = assert_sound(f, jnp.ones(7), points=5, jit=True)
    assert p.todense().all()  # the band keeps growing until it covers everything


def test_data_dependent_exit_with_a_non_growing_body_stays_diagonal():
    def f(x):
        return jax.lax.while_loop(lambda c: jnp.max(c) < 1e3, lambda c: c * 2.0 + jnp.sin(c), x)
    p = assert_sound(f, jnp.ones(5), exact=True, sampler=lambda rng: [jnp.asarray(rng.uniform(1, 2, 5))],
                     jit=True)
    assert p.nnz == 5


def test_long_loop_with_stable_carry_costs_a_few_iterations():
    f = lambda x: jax.lax.fori_loop(0, 10_000, lambda i, c: 0.5 * c + jnp.sin(c) * x, x)
    count = {"n": 0}

    def observer(op, results):
        if op.operation.name == "stablehlo.sine":
            count["n"] += 1

    a = lower_and_analyze(f, jnp.ones(4), observer=observer)
    assert a.pattern.nnz == 4
    assert count["n"] <= 4


def test_iteration_cap_falls_back_to_the_fixed_point_soundly():
    opts = AnalysisOptions(max_loop_iterations=3)
    with pytest.warns(SparsityWarning, match="fixed point not reached"):
        p = lower_and_analyze(_euler(6), jnp.ones(30), options=opts).pattern
    assert p.todense().all()  # beyond the cap: the loop's top (the band would keep growing anyway)
    p = lower_and_analyze(_euler(6), jnp.ones(30), options=AnalysisOptions(max_loop_iterations=40)).pattern
    assert np.array_equal(p.todense(), _circulant_band(30, 6))


def test_widened_counter_stays_sound():
    # Iterations 0..4 leave the pattern unchanged, so the counter is widened; later ones roll.
    def f(x):
        return jax.lax.fori_loop(0, 8, lambda i, c: jnp.where(i > 4, jnp.roll(c, 1), c) * c, x)
    assert_sound(f, jnp.ones(6), jit=True)


def test_scan_over_a_constant_sequence_with_a_long_trip_count():
    xs = jnp.linspace(0.0, 1.0, 5000)
    f = lambda h: jax.lax.scan(lambda h, x: (jnp.tanh(h * x + h[::-1]), None), h, xs)[0]
    p = assert_sound(f, jnp.ones(4), jit=True)
    i = np.arange(4)
    assert np.array_equal(p.todense(), (i[:, None] == i[None, :]) | (i[:, None] == 3 - i[None, :]))


def test_while_with_unknown_start_value_is_a_fixed_point():
    def f(x, n):
        return jax.lax.fori_loop(0, n, lambda i, c: c + jnp.roll(c, 2), x)
    p = assert_sound(f, jnp.ones(8), 3, jit=True)
    i = np.arange(8)
    assert np.array_equal(p.todense(), ((i[:, None] - i[None, :]) % 2) == 0)


# ---------------------------------------------------------------- case / if
def test_cond_with_unknown_predicate_joins_the_branches():
    f = lambda x: jax.lax.cond(x[0] > 0, lambda x: jnp.roll(x, 1), lambda x: x * 2.0, x)
    p = assert_sound(f, jnp.ones(5), points=6, exact=True, jit=True)
    assert p.nnz == 10


def test_cond_with_known_predicate_takes_one_branch():
    f = lambda x: jax.lax.cond(jnp.array(True), lambda x: jnp.roll(x, 1), lambda x: x * 2.0, x)
    p = assert_sound(f, jnp.ones(5), exact=True, jit=True)
    assert p.nnz == 5 and not p.todense()[0, 0]


def test_switch_with_known_and_unknown_index():
    branches = [lambda x: x[::-1], lambda x: jnp.roll(x, 1), lambda x: x * 3.0]
    p = assert_sound(lambda x: jax.lax.switch(1, branches, x), jnp.ones(5), exact=True, jit=True)
    assert p.nnz == 5
    p = assert_sound(lambda x: jax.lax.switch(7, branches, x), jnp.ones(5), exact=True, jit=True)  # clamped: last
    assert np.array_equal(p.todense(), np.eye(5, dtype=bool))
    idx = lambda x: jnp.floor(x[0]).astype(jnp.int32)
    sampler = lambda rng: [jnp.asarray(np.r_[rng.integers(0, 3) + 0.5, rng.standard_normal(4)])]
    p = assert_sound(lambda x: jax.lax.switch(idx(x), branches, x), jnp.ones(5), points=12, exact=True,
                     sampler=sampler, jit=True)
    eye = np.eye(5, dtype=bool)
    assert np.array_equal(p.todense(), eye | eye[::-1] | np.roll(eye, 1, axis=0))


def test_branch_constants_join_only_if_equal():
    def f(x):
        k = jax.lax.cond(x[0] > 0, lambda: 2, lambda: 2)
        m = jax.lax.cond(x[0] > 0, lambda: 1, lambda: 3)
        return x[k] * x, x[m] * x
    p = assert_sound(f, jnp.ones(5), jit=True).todense()
    assert np.array_equal(p[:5], np.eye(5, dtype=bool) | (np.arange(5) == 2)[None, :])  # k = 2 is known
    # m ∈ {1, 3} is not one constant; the join keeps its integer range [1, 3], so the gather reads x[1..3]
    assert np.array_equal(p[5:], np.eye(5, dtype=bool) | ((np.arange(5) >= 1) & (np.arange(5) <= 3))[None, :])


CASE_TEXT = """
func.func @main(%x: tensor<4xf64>, %i: tensor<i32>) -> tensor<4xf64> {
  %r = "stablehlo.case"(%i) ({
    %a = stablehlo.reverse %x, dims = [0] : tensor<4xf64>
    stablehlo.return %a : tensor<4xf64>
  }, {
    %b = stablehlo.sine %x : tensor<4xf64>
    stablehlo.return %b : tensor<4xf64>
  }) : (tensor<i32>) -> tensor<4xf64>
  return %r : tensor<4xf64>
}
"""


@pytest.mark.parametrize("index,expected", [(0, "rev"), (1, "diag"), (-1, "diag"), (5, "diag")])
def test_case_with_constant_index_out_of_range_selects_last_branch(index, expected):
    text = CASE_TEXT.replace("%x: tensor<4xf64>, %i: tensor<i32>", "%x: tensor<4xf64>").replace(
        "func.func @main(%x: tensor<4xf64>) -> tensor<4xf64> {",
        f"func.func @main(%x: tensor<4xf64>) -> tensor<4xf64> {{\n  %i = stablehlo.constant dense<{index}> : tensor<i32>")
    d = analyze_module(text).pattern.todense()
    want = np.eye(4, dtype=bool)[::-1] if expected == "rev" else np.eye(4, dtype=bool)
    assert np.array_equal(d, want)


def test_case_with_unknown_index_from_an_argument():
    d = analyze_module(CASE_TEXT, wrt=[0]).pattern.todense()
    assert np.array_equal(d, np.eye(4, dtype=bool) | np.eye(4, dtype=bool)[::-1])


IF_TEXT = """
func.func @main(%x: tensor<3xf64>, %p: tensor<i1>) -> (tensor<3xf64>, tensor<i64>) {
  %r:2 = "stablehlo.if"(%p) ({
    %a = stablehlo.reverse %x, dims = [0] : tensor<3xf64>
    %c = stablehlo.constant dense<7> : tensor<i64>
    stablehlo.return %a, %c : tensor<3xf64>, tensor<i64>
  }, {
    %c = stablehlo.constant dense<7> : tensor<i64>
    stablehlo.return %x, %c : tensor<3xf64>, tensor<i64>
  }) : (tensor<i1>) -> (tensor<3xf64>, tensor<i64>)
  return %r#0, %r#1 : tensor<3xf64>, tensor<i64>
}
"""


def test_if_unknown_predicate_joins_and_keeps_equal_constants():
    a = analyze_module(IF_TEXT, wrt=[0])
    assert np.array_equal(a.pattern.todense()[:3], np.eye(3, dtype=bool) | np.eye(3, dtype=bool)[::-1])
    assert a.results[1].const is not None and int(a.results[1].const) == 7


def test_if_known_predicate():
    text = IF_TEXT.replace("%x: tensor<3xf64>, %p: tensor<i1>", "%x: tensor<3xf64>").replace(
        "(tensor<3xf64>, tensor<i64>) {\n  %r:2",
        "(tensor<3xf64>, tensor<i64>) {\n  %p = stablehlo.constant dense<false> : tensor<i1>\n  %r:2")
    d = analyze_module(text).pattern.todense()
    assert np.array_equal(d[:3], np.eye(3, dtype=bool))


WHILE_TEXT = """
func.func @main(%x: tensor<5xf64>) -> tensor<5xf64> {
  %c0 = stablehlo.constant dense<0> : tensor<i64>
  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i64>, tensor<5xf64>
  cond {
    %n = stablehlo.constant dense<2> : tensor<i64>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i64>
    %j = stablehlo.add %i, %one : tensor<i64>
    %s = stablehlo.slice %v [1:5] : (tensor<5xf64>) -> tensor<4xf64>
    %t = stablehlo.slice %x [0:1] : (tensor<5xf64>) -> tensor<1xf64>
    %w = stablehlo.concatenate %s, %t, dim = 0 : (tensor<4xf64>, tensor<1xf64>) -> tensor<5xf64>
    stablehlo.return %j, %w : tensor<i64>, tensor<5xf64>
  }
  return %r#1 : tensor<5xf64>
}
"""


def test_handwritten_while_reading_the_function_argument_inside_the_body():
    d = analyze_module(WHILE_TEXT).pattern.todense()
    # two shifts left, the tail filled from x[0] each time
    want = np.zeros((5, 5), bool)
    want[0, 2], want[1, 3], want[2, 4], want[3, 0], want[4, 0] = True, True, True, True, True
    assert np.array_equal(d, want)


# ---------------------------------------------------------------- optimization_barrier
def test_optimization_barrier_is_the_identity():
    f = lambda x, y: jax.lax.optimization_barrier((x * 2.0, y[::-1]))
    p = assert_sound(f, jnp.ones(3), jnp.ones(2), argnums=(0, 1), exact=True, jit=True)
    assert p.nnz == 5
    g = lambda x: x[jax.lax.optimization_barrier(jnp.array(2))]  # a constant passes through
    assert jacobian_sparsity(g, jnp.ones(4)).nnz == 1


def _averaging_solver(cond_kind):
    def f(x):
        def cond(c):
            small = jnp.max(jnp.abs(c[1])) > 1e-3
            if cond_kind == "cond":
                return jax.lax.cond(c[0] < 3, lambda: small, lambda: False)
            return (c[0] < 3) & small
        step = lambda c: (c[0] + 1, 0.5 * (jnp.roll(c[1], 1) + jnp.roll(c[1], -1)))
        return jax.lax.while_loop(cond, step, (0, x))[1]
    return f


def test_counter_bound_and_tolerance_keep_exact_iterates():
    # A solver-style loop: stop at a tolerance or after 3 steps.  The exit is data-dependent, but the counter
    # bounds it, so the result is the join of the exact iterates 0..3 — a band of half-width 3 (after k
    # steps, offsets of k's parity within k) — not everything.
    p = assert_sound(_averaging_solver("cond"), jnp.ones(12), jit=True)
    assert np.array_equal(p.todense(), _circulant_band(12, 3))


def test_counter_bound_anded_with_a_tolerance_stays_sound():
    # `i < 3 & err > tol`: once i = 3 the conjunction is false whatever err is (an absorbing element the
    # constant lattice may or may not use); either way the result is sound, and the loop terminates.
    d = assert_sound(_averaging_solver("and"), jnp.ones(12), jit=True).todense()
    assert not (d & ~_circulant_band(12, 3)).any() or d.all()


def test_data_dependent_rotation_terminates():
    # The iterates cycle (a rotation) and no constant moves: the fixed point takes over, sound and full.
    def f(x):
        return jax.lax.while_loop(lambda c: c[0] > 0.0, lambda c: jnp.roll(c, 1) * 0.9, x)
    p = assert_sound(f, jnp.ones(6), jit=True)
    assert p.todense().all()

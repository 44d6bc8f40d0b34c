"""Loops through their summaries (§while; ``rules/loop_plans.py``, ``lattice/loops.py``, ``lattice/runs.py``).

Every loop here is checked three ways: the pattern contains every nonzero of ``jax.jacfwd`` at random points
(sound), it equals the pattern of exact abstract iteration (``control_flow.SUMMARIES = False``: the
summaries lose no precision), and — where a plan exists — the summary was actually taken.  Then random
programs of the loop families with longer trip counts (``strategies.LOOP_TRIPS``) the same way; ``SHS_LONG=1``
runs many more of them.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import strategies as S
from helpers import assert_sound
from stablehlo_sparsity import jacobian_sparsity, lower_and_analyze
from stablehlo_sparsity.analysis.interpreter import AnalysisOptions
from stablehlo_sparsity.analysis.rules import control_flow as cf

LONG = os.environ.get("SHS_LONG", "") not in ("", "0")


class _Count:
    """Counts the loops that went through a summary (``_summarize`` returned a state)."""

    def __init__(self, monkeypatch):
        self.n = 0
        orig = cf._summarize

        def counted(*a, **k):
            out = orig(*a, **k)
            self.n += out is not None
            return out

        monkeypatch.setattr(cf, "_summarize", counted)


def _exact_pattern(f, *args, **kw):
    old = cf.SUMMARIES
    cf.SUMMARIES = False
    try:
        return jacobian_sparsity(f, *args, **kw)
    finally:
        cf.SUMMARIES = old


def _check(monkeypatch, f, *args, summarized=True, exact=False, points=3, **kw):
    count = _Count(monkeypatch)
    pat = assert_sound(f, *args, exact=exact, points=points, jit=True, **kw)
    assert (count.n > 0) == summarized, f"summaries taken: {count.n}"
    assert pat == _exact_pattern(f, *args, **kw), "the summary lost precision against exact iteration"
    return pat


# ---------------------------------------------------------------------- scans
W3 = jnp.eye(3) * 0.5 + 0.1


def rnn(xs):
    def cell(h, x):
        h = jnp.tanh(h @ W3 + x @ jnp.ones((2, 3)) * 0.3)
        return h, h
    return jax.lax.scan(cell, jnp.zeros(3), xs)[1]


def test_rnn_scan_is_block_lower_triangular(monkeypatch):
    T = 40
    pat = _check(monkeypatch, rnn, jnp.ones((T, 2)), exact=True)
    assert np.array_equal(pat.todense(), np.kron(np.tril(np.ones((T, T), bool)), np.ones((3, 2), bool)))


def test_reverse_scan_with_carry_and_outputs(monkeypatch):
    def f(xs):
        c, ys = jax.lax.scan(lambda c, x: (c * x + 1.0, c + x), 1.0, xs, reverse=True)
        return jnp.concatenate([ys, c[None]])
    pat = _check(monkeypatch, f, jnp.ones(30), exact=True)
    assert np.array_equal(pat.todense(), np.vstack([np.triu(np.ones((30, 30), bool)), np.ones((1, 30), bool)]))


def test_scan_over_two_sequences_with_two_outputs_and_two_carries(monkeypatch):
    def f(a, b):
        def step(c, xy):
            x, y = xy
            u, v = c
            return (u + jnp.sin(x), v * y[0] + jnp.roll(u, 1)), (u * v, x.sum() + y)
        (u, v), (p, q) = jax.lax.scan(step, (jnp.zeros(3), jnp.ones(3)), (a, b))
        return u, v, p, q
    _check(monkeypatch, f, jnp.ones((12, 3)), jnp.ones((12, 2)), argnums=(0, 1), exact=True)


def test_scan_over_a_matrix_sequence_reads_one_slice_per_step(monkeypatch):
    def f(xs):
        return jax.lax.scan(lambda c, x: (c + x[0] * x[1], c * x[1]), jnp.zeros(3), xs)
    _check(monkeypatch, f, jnp.ones((9, 2, 3)), exact=True)


def test_fori_loop_reading_a_captured_array_at_the_counter(monkeypatch):
    def f(x, y):
        return jax.lax.fori_loop(0, 10, lambda i, c: c * y[i] + jnp.roll(c, 1), x)
    pat = _check(monkeypatch, f, jnp.ones(6), jnp.ones(12), argnums=(0, 1), exact=True)
    assert not pat.todense()[:, 6 + 10:].any()  # y[10], y[11] are never read


def test_counter_arithmetic_in_the_read_index(monkeypatch):
    def f(x, y):
        def body(i, c):
            row = jax.lax.dynamic_slice(y, (2 * i + 1, 0), (1, 3))[0]
            return jnp.sin(c) + row
        return jax.lax.fori_loop(1, 5, body, x)
    pat = _check(monkeypatch, f, jnp.ones(3), jnp.ones((12, 3)), argnums=(0, 1), exact=True)
    read = {2 * i + 1 for i in range(1, 5)}
    cols = pat.todense()[:, 3:].reshape(3, 12, 3).any(axis=(0, 2))
    assert set(np.flatnonzero(cols).tolist()) == read


def test_accumulator_with_input_dependent_initial_value_keeps_unwritten_rows(monkeypatch):
    def f(x):
        def body(i, c):
            h, acc = c
            return h * 2.0 + 1.0, jax.lax.dynamic_update_slice(acc, h[None], (i, 0))
        return jax.lax.fori_loop(0, 4, body, (x[0], x))[1]
    pat = _check(monkeypatch, f, jnp.ones((7, 2)), exact=True)
    d = pat.todense().reshape(7, 2, 7, 2)
    assert d[:4].reshape(8, 14)[:, 2:].sum() == 0   # written rows: the carry, i.e. x[0] only
    assert np.array_equal(d[4:].reshape(6, 14)[:, 8:], np.eye(6, dtype=bool))   # kept rows: themselves


# ---------------------------------------------------------------------- time stepping
def heat(steps):
    def f(u):
        step = lambda i, u: u + 0.1 * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)) - 0.1 * u ** 3  # noqa: E731
        return jax.lax.fori_loop(0, steps, step, u)
    return f


def test_explicit_euler_band(monkeypatch):
    n, steps = 50, 30
    pat = _check(monkeypatch, heat(steps), jnp.ones(n) * 0.3, exact=True)
    i = np.arange(n)
    d = np.abs(i[:, None] - i[None, :])
    assert np.array_equal(pat.todense(), np.minimum(d, n - d) <= steps)


def test_band_saturates_and_the_cycle_check_stops_early(monkeypatch):
    """The band covers everything after n/2 steps; then the carry repeats (period 1) and the remaining
    999,000 trips are skipped."""
    n = 40
    pat = _check(monkeypatch, heat(1_000_000), jnp.ones(n) * 0.01, points=1)
    assert pat.todense().all()


def test_unrolled_and_looped_euler_agree():
    n, steps = 60, 25

    def unrolled(u):
        for _ in range(steps):
            u = u + 0.1 * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)) - 0.1 * u ** 3
        return u
    assert jacobian_sparsity(unrolled, jnp.ones(n)) == jacobian_sparsity(heat(steps), jnp.ones(n))


def test_nested_loops_summarize_inside_and_out(monkeypatch):
    def f(x):
        inner = lambda c: jax.lax.fori_loop(0, 3, lambda j, d: d + jnp.roll(d, 1) * 0.5, c)  # noqa: E731
        return jax.lax.fori_loop(0, 4, lambda i, c: inner(c) * 0.9, x)
    pat = _check(monkeypatch, f, jnp.ones(30) * 0.1, exact=True)
    i = np.arange(30)
    assert np.array_equal(pat.todense(), ((i[:, None] - i[None, :]) % 30) <= 12)


# ---------------------------------------------------------------------- cycles and huge trip counts
@pytest.mark.parametrize("trips", [10**9, 10**9 + 1, 10**6 + 3])
def test_rotation_with_a_huge_trip_count_is_a_row_map_power(monkeypatch, trips):
    n = 7
    f = lambda x: jax.lax.fori_loop(0, trips, lambda i, c: jnp.roll(jnp.sin(c), 1), x)  # noqa: E731
    count = _Count(monkeypatch)
    pat = jacobian_sparsity(f, jnp.ones(n))
    assert count.n == 1
    i = np.arange(n)
    assert np.array_equal(pat.todense(), (i[:, None] - i[None, :]) % n == trips % n)


def test_rotation_power_matches_jacfwd_on_a_moderate_trip_count(monkeypatch):
    f = lambda x: jax.lax.fori_loop(0, 23, lambda i, c: jnp.roll(jnp.sin(c), 2), x)  # noqa: E731
    _check(monkeypatch, f, jnp.ones(5), exact=True)


def test_swapping_carries_has_period_two(monkeypatch):
    def f(a, b):
        return jax.lax.fori_loop(0, 10**7 + 1, lambda i, c: (jnp.flip(c[1]), c[0] * 1.0), (a, b))
    pat = jacobian_sparsity(f, jnp.ones(3), jnp.ones(3), argnums=(0, 1)).todense()
    # an odd number of swaps: the first output is b flipped, the second a
    assert np.array_equal(pat[:3, 3:], np.fliplr(np.eye(3, dtype=bool))) and not pat[:3, :3].any()
    assert np.array_equal(pat[3:, :3], np.eye(3, dtype=bool)) and not pat[3:, 3:].any()


def test_cycling_carry_with_a_captured_factor(monkeypatch):
    """Not a row map (every step also reads ``w``): the cycle check finds period n and skips."""
    def f(x, w):
        return jax.lax.fori_loop(0, 53, lambda i, c: jnp.roll(c, 1) * w, x)
    _check(monkeypatch, f, jnp.ones(5), jnp.ones(5), argnums=(0, 1), exact=True)


def test_iteration_cap_still_falls_back_to_the_fixed_point():
    """Past ``max_loop_iterations`` (exact steps plus summary steps) a growing carry gets the fixed point
    of its summary, with the usual warning."""
    opts = AnalysisOptions(max_loop_iterations=3)
    with pytest.warns(Warning, match="fixed point not reached"):
        p = lower_and_analyze(heat(9), jnp.ones(30), options=opts).pattern
    assert p.todense().all()


# ---------------------------------------------------------------------- loops the plans leave alone
@pytest.mark.parametrize("name", ["branch on the counter", "scatter at the counter", "tolerance",
                                  "constant sequence", "counter in a float"])
def test_loops_without_a_plan_iterate_exactly(monkeypatch, name):
    def branch(x):
        return jax.lax.fori_loop(0, 6, lambda i, c: jax.lax.cond(i % 2 == 0, lambda c: jnp.roll(c, 1) * c,
                                                               lambda c: c * 3.0, c), x)

    def scatter(x):
        return jax.lax.fori_loop(0, 4, lambda i, c: c.at[i].set(c[i + 1] * 2.0), x)

    def tolerance(x):
        return jax.lax.while_loop(lambda s: (s[0] < 6) & (jnp.max(jnp.abs(s[1])) < 9.0),
                                  lambda s: (s[0] + 1, s[1] + jnp.roll(s[1], 1) * 0.1), (0, x))[1]

    def constant_sequence(x):
        return jax.lax.scan(lambda h, a: (jnp.tanh(h * a + h[::-1]), None), x, jnp.linspace(0.0, 1.0, 9))[0]

    def float_counter(x):
        return jax.lax.fori_loop(0, 5, lambda i, c: c * (i * 1.0) + jnp.roll(c, 1), x)

    f = {"branch on the counter": branch, "scatter at the counter": scatter, "tolerance": tolerance,
         "constant sequence": constant_sequence, "counter in a float": float_counter}[name]
    _check(monkeypatch, f, jnp.ones(8) * 0.2, summarized=False)


# ---------------------------------------------------------------------- observers see every execution
def test_annotations_inside_a_summarized_loop_cover_every_iteration():
    """The annotate pass records the union over visits of each op's lattice: with a summary, the body runs
    once more (observed) on a state covering every skipped iteration, so what it records contains what
    exact iteration records."""
    import re

    from stablehlo_sparsity.passes.annotate import annotate, parse_sets

    text = jax.jit(rnn).lower(jnp.ones((12, 2))).as_text()

    def annotations(summaries):
        from stablehlo_sparsity.analysis.api import parse_module
        from stablehlo_sparsity.ir.helpers import nested_ops

        old = cf.SUMMARIES
        cf.SUMMARIES = summaries
        try:
            m = parse_module(text)
            annotate(m, max_elements=10**6, max_nnz=10**6)
        finally:
            cf.SUMMARIES = old
        out = {}
        for fn in m.body.operations:
            for o in nested_ops(fn):
                if "sparsity.deps" in o.attributes:
                    out[(o.name, str(o.location))] = str(o.attributes["sparsity.deps"])
        return out

    exact, summarized = annotations(False), annotations(True)
    assert set(exact) == set(summarized)
    for key in exact:
        values = [ir_attr for ir_attr in (exact[key], summarized[key])]
        parsed = []
        for v in values:
            texts = re.findall(r'"([^"]*)"', v)
            parsed.append([parse_sets(t, 24) for t in texts])
        for a, b in zip(*parsed):
            assert a.shape == b.shape and (a.astype(bool) > b.astype(bool)).nnz == 0, key


def test_constant_folding_observes_the_same_constants_through_a_summary():
    from stablehlo_sparsity.analysis.api import parse_module
    from stablehlo_sparsity.analysis.constant_lattice import observe_constants

    text = jax.jit(lambda x: jax.lax.fori_loop(0, 50, lambda i, c: jnp.roll(c, 1) + i, x)).lower(
        jnp.ones(4)).as_text()

    def consts(summaries):
        old = cf.SUMMARIES
        cf.SUMMARIES = summaries
        try:
            m = parse_module(text)
            lat = observe_constants(m)
            return [None if lat.value(v) is None else lat.value(v).tolist() for v in lat.state]
        finally:
            cf.SUMMARIES = old
    assert consts(True) == consts(False)


# ---------------------------------------------------------------------- random loops, longer trips
LOOP_FAMILIES = {"while", "elementwise", "structural", "dynamic_slice", "reduction"}
_SETTINGS = settings(max_examples=200 if LONG else 12, deadline=None, derandomize=not LONG, database=None,
                     suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])


@_SETTINGS
@given(S.programs(S.enabled_generators(families=LOOP_FAMILIES), max_lines=5))
def _random_loop(prog):
    f = prog.function()
    args = prog.example_args()
    try:
        jacobians = S.numeric_jacobians(f, prog.inputs, points=3)
    except S.NoGroundTruth:
        return
    argnums = tuple(range(len(args)))
    analysis = lower_and_analyze(f, *args, argnums=argnums)
    res = S.check_program(prog, points=3, analysis=analysis, jacobians=jacobians)
    assert res.ok, f"missed {res.missed[:6].tolist()}\n{prog.source()}"
    assert analysis.pattern == _exact_pattern(f, *args, argnums=argnums), \
        f"the summary lost precision against exact iteration\n{prog.source()}"


def test_random_loops_with_longer_trips_are_sound_and_as_exact_as_iteration(monkeypatch):
    monkeypatch.setattr(S, "LOOP_TRIPS", 60 if LONG else 24)
    monkeypatch.setitem(S.FAMILY_WEIGHT, "while", 5)  # about half the lines are loops
    _random_loop()

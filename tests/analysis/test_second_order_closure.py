"""Closed values in the second-order walk (:mod:`stablehlo_sparsity.analysis.second_order.closure`).

A skipped term must never lose a pair: the pattern with the closure bookkeeping equals the pattern without it
(``Closure.enabled = False``) on the held-out objectives, the soundness suite and random programs, and holds
``jax.hessian``'s nonzeros on the constructions that could fool it (a product by a constant, operands closed over
different sets, a divisor built from a closed value)."""

from __future__ import annotations

import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings

import strategies as S
from helpers import numerical_pattern
from stablehlo_sparsity import hessian_sparsity
from stablehlo_sparsity.analysis.second_order.closure import Closure
from stablehlo_sparsity.lattice import Deps
from test_hessian_method import HELD_OUT
from test_soundness_suite import CASES


LONG = os.environ.get("SHS_LONG", "") not in ("", "0")


def direct(g, *args, argnums=0) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return hessian_sparsity(g, *args, argnums=argnums, method="direct").todense()


def with_and_without(monkeypatch, g, *args, argnums=0):
    on = direct(g, *args, argnums=argnums)
    monkeypatch.setattr(Closure, "enabled", False)
    off = direct(g, *args, argnums=argnums)
    monkeypatch.setattr(Closure, "enabled", True)
    return on, off


def numerical_hessian(g, x) -> np.ndarray:
    return numerical_pattern(jax.grad(g), x, points=2, jit=True)


@pytest.mark.parametrize("name", [fam for fam, *_ in HELD_OUT.FAMILIES])
def test_held_out_objectives_have_the_same_pattern_with_and_without_the_closure(monkeypatch, name):
    f, n = HELD_OUT.small(name)
    x = jnp.asarray(HELD_OUT.point(n))
    on, off = with_and_without(monkeypatch, f, x)
    assert np.array_equal(on, off)
    assert not (numerical_hessian(f, x) & ~on).any()


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_soundness_suite_has_the_same_pattern_with_and_without_the_closure(monkeypatch, name):
    case = CASES[name]

    def g(*xs):
        return sum(jnp.sum(jnp.sin(o)) for o in jax.tree_util.tree_leaves(case.f(*xs)))

    try:
        on, off = with_and_without(monkeypatch, g, *case.args, argnums=case.argnums)
    except Exception as e:  # (a case the direct walk declines declines with and without)
        monkeypatch.setattr(Closure, "enabled", False)
        with pytest.raises(type(e)):
            direct(g, *case.args, argnums=case.argnums)
        return
    assert np.array_equal(on, off)


@settings(max_examples=300 if LONG else 12, deadline=None, derandomize=not LONG, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(S.programs(S.enabled_generators(), max_lines=6))
def test_random_programs_have_the_same_pattern_with_and_without_the_closure(prog):
    f = prog.function()
    args = prog.example_args()

    def g(*xs):
        return sum(jnp.sum(jnp.exp(o)) for o in jax.tree_util.tree_leaves(f(*xs)))

    argnums = tuple(range(len(args)))
    try:
        on = direct(g, *args, argnums=argnums)
    except Exception:
        reject()
    Closure.enabled = False
    try:
        off = direct(g, *args, argnums=argnums)
    finally:
        Closure.enabled = True
    assert np.array_equal(on, off), prog.source()


def _lennard_jones(r):
    return jnp.sum(r ** -6 - 2.0 * r ** -3)


TRAPS = {
    # a product by a constant: one live operand, an empty cross term — the result is no square
    "scaled then squared": lambda x: jnp.sum(jnp.exp(-2.0 * (x[1:] + x[:-1]))),
    # closed operands over different sets: their sum needs the cross pairs the next op writes
    "sum of closed": lambda x: jnp.sum(jnp.exp(jnp.exp(x[1:]) + jnp.exp(x[:-1]))),
    "product of closed": lambda x: jnp.sum(jnp.sin(x[1:]) * jnp.cos(x[:-1])),
    "quotient of closed": lambda x: jnp.sum(jnp.exp(x[2:]) / jnp.exp(x[:-2])),
    # one closed value in every op of a chain (the terms the closure skips)
    "powers of one value": lambda x: _lennard_jones(1.0 + (x[1:] - x[:-1]) ** 2),
    "linear then square": lambda x: jnp.sum((x[1:] - x[:-1]) * (x[1:] - x[:-1]) + x[1:] * x[:-1]),
    "a closed value moved": lambda x: jnp.sum(jnp.exp(jnp.concatenate([jnp.sin(x[::-1]), x[:3]])) * x[0]),
    "select of closed": lambda x: jnp.sum(jnp.where(x[1:] > 0.3, jnp.exp(x[1:]), jnp.exp(x[:-1])) ** 2),
}


@pytest.mark.parametrize("name", sorted(TRAPS))
def test_constructions_that_could_fool_the_closure_hold_jax_hessians_nonzeros(monkeypatch, name):
    f = TRAPS[name]
    x = jnp.asarray(np.random.default_rng(3).uniform(0.1, 0.5, 9))
    on, off = with_and_without(monkeypatch, f, x)
    assert not (numerical_hessian(f, x) & ~on).any()
    assert np.array_equal(on, off)


def test_a_chain_of_one_closed_value_reaches_the_objective_as_one_copy_of_its_pairs(monkeypatch):
    """``r⁻⁶ − 2r⁻³`` with ``r = 1 + d²``: every op after ``d · d`` shares ``r``'s rows, so the objective's reduction
    reads each element's 2 columns and 3 pairs once (without the closure: a copy per op)."""
    read: list[int] = []
    reduce_all = Deps.reduce_all

    def counting(self):
        read.append(sum(len(p.cols) if hasattr(p, "cols") else p.base.nnz for p in self.parts))
        return reduce_all(self)

    monkeypatch.setattr(Deps, "reduce_all", counting)
    f = TRAPS["powers of one value"]
    x = jnp.ones(1001)
    direct(f, x)
    assert read == [5 * 1000]
    read.clear()
    monkeypatch.setattr(Closure, "enabled", False)
    direct(f, x)
    assert read and read[0] > 2 * 5 * 1000


def _pairs_outside_their_rows(deps: Deps, n: int) -> tuple[int, int]:
    """``(pairs, outside)``: the pair codes ``{u, v}`` of a second-order value, and how many of them sit in a row
    whose first-order columns miss ``u`` or ``v``."""
    m = deps.to_csr().tocoo()
    first = np.zeros((deps.rows, n), bool)
    fo = m.col < n
    first[m.row[fo], m.col[fo]] = True
    u, v = np.divmod(m.col[~fo] - n, n)
    rows = m.row[~fo]
    return len(rows), int((~(first[rows, u] & first[rows, v])).sum())


@pytest.mark.parametrize("name", [fam for fam, style, *_ in HELD_OUT.FAMILIES if style != "written"]
                         + ["soundness:" + name for name in sorted(CASES)])
def test_every_pair_sits_beside_both_of_its_inputs(monkeypatch, name):
    """The invariant the closure rests on: a pair column ``{u, v}`` enters a row only where the row's first-order
    set holds ``u`` and ``v`` (a term writes ``S × S`` beside ``S``, and every rule moves a row's columns together).
    So a value whose pairs hold the square of one shared first-order set holds every pair its rows can reach.
    Checked on every value of the walk, op by op, over the held-out families and the soundness suite."""
    from stablehlo_sparsity.analysis.second_order.interpreter import SecondOrderInterpreter

    bad: list[tuple[str, int]] = []
    checked = [0]
    run_decoded = SecondOrderInterpreter.run_decoded

    def checking(self, d):
        results = run_decoded(self, d)
        for r in results:
            if r.deps.rows and not r.deps.is_empty:
                pairs, outside = _pairs_outside_their_rows(r.deps, self.n_first)
                checked[0] += pairs
                if outside:
                    bad.append((d.name, outside))
        return results

    monkeypatch.setattr(SecondOrderInterpreter, "run_decoded", checking)
    if name.startswith("soundness:"):
        case = CASES[name.split(":", 1)[1]]

        def g(*xs):
            return sum(jnp.sum(jnp.sin(o)) for o in jax.tree_util.tree_leaves(case.f(*xs)))

        try:
            direct(g, *case.args, argnums=case.argnums)
        except Exception:  # (a case the direct walk declines: nothing walked to check)
            return
    else:
        f, n = HELD_OUT.small(name)
        direct(f, jnp.asarray(HELD_OUT.point(n)))
    assert not bad, bad[:5]
    assert checked[0] > 0  # (pairs were there to check: the sines alone write some)


_SAME_FIRST_ORDER = Closure._same_first_order


def _answers(monkeypatch, g, x, probe: bool) -> list[bool]:
    """What ``Closure._same_first_order`` answered during the direct walk of ``g`` (with or without its probe of
    sampled rows)."""
    from stablehlo_sparsity.analysis.second_order import closure

    seen: list[bool] = []

    def spy(self, a, b):
        seen.append(_SAME_FIRST_ORDER(self, a, b))
        return seen[-1]

    monkeypatch.setattr(Closure, "_same_first_order", spy)
    monkeypatch.setattr(closure, "PROBE_MIN_ELEMENTS", 0 if probe else 1 << 62)
    direct(g, x)
    return seen


@pytest.mark.parametrize("case", ["different everywhere", "different in one element", "the same"])
def test_the_probe_of_sampled_rows_answers_as_the_full_comparison(monkeypatch, case):
    n = 10_000
    x = jnp.linspace(0.1, 1.0, n)

    def g(v):
        r = v * v
        if case == "different everywhere":
            other = jnp.roll(v, 1) ** 2
        elif case == "different in one element":   # (a sample of 64 rows misses it: the full comparison decides)
            other = v.at[n // 2 + 1].set(v[0]) ** 2
        else:                                     # (closed over the same sets, another lattice object)
            other = jnp.cos(v)
        return jnp.sum(jnp.sin(r + other))

    with_probe, without = _answers(monkeypatch, g, x, True), _answers(monkeypatch, g, x, False)
    assert with_probe == without and with_probe
    assert with_probe[-1] == (case == "the same")   # (the last: the sum's operands)

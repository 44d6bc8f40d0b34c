"""Soundness at scale: random JAX programs, detected pattern ⊇ every nonzero of ``jax.jacfwd``.

The programs come from ``strategies.programs()``: small DAGs over the op families whose rules have landed
(the set grows by itself as ``DEPS_RULES`` grows).  Each program is lowered and analyzed once, then
differentiated numerically at several standard-normal points; a nonzero the detector misses is the worst
bug this package can have.

Profiles
  * CI (default): ``SHS_FUZZ_EXAMPLES`` examples (default 300), ``derandomize=True`` — the same programs on
    every run, so a red CI is reproducible on any machine without sharing Hypothesis' example database,
    and a green CI cannot flip on an unrelated commit because the random stream changed.
  * long: ``SHS_LONG_FUZZ=1`` runs 5,000 fresh (non-derandomized) examples to explore new ground; whatever
    it finds is pinned as a named regression test in ``test_regressions.py``.

``deadline=None``: the first example of a shape pays XLA compilation, so per-example times vary 100×.
"""

from __future__ import annotations

import os
import sys
import time

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, event, given, reject, settings

import strategies as S
from stablehlo_sparsity import UnsupportedOpError, lower_and_analyze
from stablehlo_sparsity.analysis.rules import DEPS_RULES

LONG = os.environ.get("SHS_LONG_FUZZ", "") not in ("", "0")
EXAMPLES = int(os.environ.get("SHS_FUZZ_EXAMPLES", "5000" if LONG else "300"))
POINTS = 3

_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not LONG,
    database=None if not LONG else settings.default.database,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=LONG,
    # no "explain" phase: it re-runs the failing example many times to blame lines, slow here
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)

ENABLED = S.enabled_generators()


def _check(prog: S.Program):
    t0 = time.perf_counter()
    try:
        return _check_inner(prog)
    finally:
        dt = time.perf_counter() - t0
        event(f"time: {'<1 s' if dt < 1 else '1-5 s' if dt < 5 else '>5 s'}")
        if os.environ.get("SHS_FUZZ_TIMING") and dt > float(os.environ["SHS_FUZZ_TIMING"]):
            print(f"\n[{dt:.1f} s] {prog!r}", file=sys.stderr)


def _check_inner(prog: S.Program):
    f = prog.function()
    args = prog.example_args()
    try:  # the ground truth first: a program JAX cannot differentiate has none
        jacobians = S.numeric_jacobians(f, prog.inputs, points=POINTS)
    except S.NoGroundTruth:
        event("rejected: JAX cannot differentiate the program")
        reject()
    try:
        analysis = lower_and_analyze(f, *args, argnums=tuple(range(len(args))))
    except UnsupportedOpError as e:
        if e.op_name not in DEPS_RULES:
            # A generator emitted an op outside what its family declared: a strategy bug, not a rule bug.
            gens = sorted(set(prog.generators))
            pytest.fail(f"generators {gens} emitted '{e.op_name}', which has no rule; declare it in their "
                        f"`needs`\n{prog.source()}")
        raise
    for fam in sorted({g.family for g in ENABLED if g.name in prog.generators}):
        event(f"family: {fam}")
    res = S.check_program(prog, points=POINTS, analysis=analysis, jacobians=jacobians)
    event(f"finite points: {res.finite_points}/{POINTS}")
    if res.roundoff.size:
        event("roundoff-level entries outside the pattern (ignored)")
    assert res.ok, (
        f"the detected pattern misses {len(res.missed)} nonzero(s) of jax.jacfwd, e.g. (row, col) "
        f"{res.missed[:6].tolist()}\n{prog.source()}\ndetected:\n{res.detected.astype(int)}\n"
        f"numerical:\n{res.numeric.astype(int)}")
    return res


@_SETTINGS
@given(S.programs(ENABLED))
def test_random_programs_are_sound(prog):
    _check(prog)


# ---------------------------------------------------------------------- the strategy itself
def test_core_families_are_enabled():
    """The elementwise and structural families are always available: the test can never be vacuous."""
    fams = {g.family for g in ENABLED}
    assert {"elementwise", "structural"} <= fams


@pytest.mark.parametrize("gen", S.GENERATORS, ids=lambda g: g.name)
def test_every_generator_writes_valid_programs(gen):
    """Each generator (enabled or not yet) writes lines that trace: a family that lands later finds its
    generator already correct.  Tracing only; no rules needed."""
    core = [g for g in S.GENERATORS if g.name in ("unary", "slice", "make_int")]

    @settings(max_examples=3, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(S.programs([gen] + [g for g in core if g is not gen], max_lines=3))
    def run(prog):
        jax.eval_shape(prog.function(), *prog.example_args())

    run()


def test_check_program_catches_a_missed_nonzero():
    """The checker can fail: a pattern that drops a true dependency is reported (not a vacuous test)."""
    prog = S.Program([(3,)], [("v1", "jnp.sin(x0) * x0[0]", "manual")], ["v1"])
    res = S.check_program(prog)
    assert res.ok and res.finite_points == 3
    det = res.detected.copy()
    det[1, 0] = False
    assert np.argwhere(res.numeric & ~det).tolist() == [[1, 0]]

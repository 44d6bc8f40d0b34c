"""Lowering a small program without JAX's per-equation lowering cache (issue 34): the same module, locations
included, for every kind of program; only the thread that asks, only inside the block; and the choice of
:func:`~stablehlo_sparsity.analysis.program.lowering_cache_pays`."""

from __future__ import annotations

import threading

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity import _compat
from stablehlo_sparsity.analysis import program


@jax.custom_jvp
def _custom(x):
    return jnp.sin(x)


_custom.defjvp(lambda p, t: (_custom(p[0]), jnp.cos(p[0]) * t[0]))


def _printed(x):
    jax.debug.print("{}", x[0], ordered=True)   # an ordered effect: tokens through the entry
    return x * 2.0


PROGRAMS = [
    ("rosenbrock", lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2), 6),
    ("broadcast and concat", lambda x: jnp.concatenate([x[:2] + jnp.sum(x), jnp.prod(x)[None] - 1.0]) ** 2, 5),
    ("scan", lambda x: jax.lax.scan(lambda c, v: (c * v + jnp.sin(c), c), x[0], x)[1], 5),
    ("cond", lambda x: jax.lax.cond(x[0] > 0, lambda v: v * 2.0, jnp.cos, x), 5),
    ("while", lambda x: jax.lax.fori_loop(0, 3, lambda i, v: v * v + 1.0, x), 5),
    ("custom_jvp", lambda x: _custom(x) * x, 5),
    ("nested jit", lambda x: jax.jit(lambda y: y[1:] * y[:-1])(x).sum() + jnp.sum(x), 5),
    ("ordered effect", _printed, 4),
    ("linear solve", lambda x: jnp.linalg.solve(jnp.eye(3) + x[:9].reshape(3, 3), x[:3]), 9),
    ("written out", lambda x: sum((x[i] - x[i + 1]) ** 2 for i in range(7)), 8),
]


def _module_text(f, n, uncached: bool) -> str:
    traced = jax.jit(f, keep_unused=True).trace(jnp.ones(n))
    with _compat.innermost_locations():
        if uncached:
            with _compat.uncached_lowering() as active:
                assert active
                lowered = traced.lower()
        else:
            lowered = traced.lower()
    return lowered.compiler_ir("stablehlo").operation.get_asm(enable_debug_info=True)


@pytest.mark.parametrize("name, f, n", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_the_module_is_the_same_without_the_cache(name, f, n):
    assert _module_text(f, n, True) == _module_text(f, n, False)


def test_only_the_asking_thread_and_only_inside_the_block():
    from jax._src.interpreters import mlir

    prim = jax.lax.sin_p
    seen = {}

    def other():
        seen["other"] = prim in mlir._uncacheable_primitives

    with _compat.uncached_lowering():
        inside = prim in mlir._uncacheable_primitives
        t = threading.Thread(target=other)
        t.start()
        t.join()
        with _compat.uncached_lowering():   # (nested: the outer block's answer survives the inner one)
            pass
        still = prim in mlir._uncacheable_primitives
    assert inside and still and seen["other"] is False
    assert prim not in mlir._uncacheable_primitives


def test_jaxs_own_uncacheable_primitives_stay_and_more_can_be_added():
    from jax._src.interpreters import mlir

    with _compat.uncached_lowering():
        pass
    table = mlir._uncacheable_primitives
    assert isinstance(table, set)
    marker = jax.extend.core.Primitive("shs_test_uncacheable")
    assert marker not in table
    table.add(marker)
    try:
        assert marker in table
    finally:
        table.discard(marker)


def test_which_programs_lower_without_the_cache():
    def jaxpr(f, n):
        return jax.make_jaxpr(f)(jnp.ones(n))

    vectorized = PROGRAMS[0][1]
    written = lambda x: sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2 for i in range(7))
    long_distinct = lambda x: jnp.sum(jnp.stack([jnp.sin(x * float(k)) for k in range(140)]))
    assert not program.lowering_cache_pays(jaxpr(vectorized, 8))          # nearly every equation distinct
    assert program.lowering_cache_pays(jaxpr(written, 8))                  # a few equations, repeated
    assert program.lowering_cache_pays(jaxpr(long_distinct, 8))            # past the equations read


def test_the_analyses_lower_small_programs_without_the_cache(monkeypatch):
    asked = []
    original = program.uncached_lowering

    def spy():
        asked.append(True)
        return original()

    monkeypatch.setattr(program, "uncached_lowering", spy)
    f = PROGRAMS[0][1]
    x = jax.random.uniform(jax.random.PRNGKey(0), (6,), minval=0.5, maxval=1.5)
    h = ss.hessian_sparsity(f, x, method="direct").todense()
    j = ss.jacobian_sparsity(jax.grad(f), x).todense()
    assert len(asked) == 2
    numeric = np.asarray(jax.hessian(f)(x)) != 0
    assert not (numeric & ~h).any() and np.array_equal(h, j | j.T)


FRESH = r"""
import jax, jax.numpy as jnp, numpy as np
import stablehlo_sparsity as ss
from stablehlo_sparsity import _compat
from stablehlo_sparsity.analysis import program

def objective(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2) + jnp.prod(x[:4])

x = jnp.ones(12)
traced = jax.jit(objective, keep_unused=True).trace(x)
assert not program.lowering_cache_pays(traced.jaxpr)
with _compat.innermost_locations():
    with _compat.uncached_lowering() as active:
        assert active
        uncached = traced.lower().as_text(debug_info=True)
    cached = jax.jit(objective, keep_unused=True).trace(x).lower().as_text(debug_info=True)
assert uncached == cached
h = ss.hessian_sparsity(objective, x).todense()
for s in range(3):
    p = jax.random.uniform(jax.random.PRNGKey(s), (12,), minval=0.3, maxval=1.7)
    assert not ((np.asarray(jax.hessian(objective)(p)) != 0) & ~h).any()
j = ss.jacobian_sparsity(jax.grad(objective), x).todense()
assert np.array_equal(h, j | j.T)
print("ok")
"""


def test_a_fresh_process_lowers_without_the_cache_and_gets_the_same_module():
    # the set is swapped on first use in a process: nothing an earlier test did here stands in for that
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")

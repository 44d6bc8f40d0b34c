"""Compiled programs shared by prepared derivatives of the same program (issue 48): in memory by the lowered module
(:mod:`stablehlo_sparsity.derivatives.prepared.compiled_cache`), and across processes by JAX's persistent
compilation cache when it is enabled."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity.derivatives.prepared.compiled_cache import PROGRAMS, ProgramCache

X = jnp.linspace(0.1, 1.0, 12)


def test_the_same_program_prepared_twice_is_compiled_once():
    PROGRAMS.clear()
    first = ss.sparse_jacobian(lambda x: jnp.sin(x[1:]) * x[:-1], X)
    second = ss.sparse_jacobian(lambda x: jnp.sin(x[1:]) * x[:-1], X)  # another function object, same program
    np.testing.assert_array_equal(np.asarray(first(X).todense()), np.asarray(second(X).todense()))
    assert (PROGRAMS.hits, PROGRAMS.misses) == (1, 1)
    second(X * 2)  # (its own executable now: no lookup)
    assert (PROGRAMS.hits, PROGRAMS.misses) == (1, 1)


def test_programs_that_differ_in_a_constant_never_share():
    """The key is the module's bytecode, every constant included: closures over different arrays are different
    programs even where their text would elide the constants."""
    PROGRAMS.clear()
    def scaled(scale):
        s = jnp.asarray(scale)
        return lambda x: s * x[1:] * x[:-1]

    scales = (np.linspace(1.0, 2.0, 11), np.linspace(1.0, 3.0, 11))
    made = [np.asarray(ss.sparse_jacobian(scaled(s), X, output="dense")(X)) for s in scales]
    assert PROGRAMS.misses == 2 and PROGRAMS.hits == 0
    for got, s in zip(made, scales):
        np.testing.assert_allclose(got, np.asarray(jax.jacfwd(scaled(s))(X)), rtol=1e-6)


def test_traced_calls_and_other_argument_types_go_through_jit():
    jac = ss.sparse_hessian(lambda x: jnp.sum(x[1:] * x[:-1] ** 2), X, output="dense")
    eager = np.asarray(jac(X))
    np.testing.assert_allclose(np.asarray(jax.jit(jac)(X)), eager)          # traced: jit inlines it
    np.testing.assert_allclose(np.asarray(jax.vmap(jac)(jnp.stack([X, X])))[1], eager)
    np.testing.assert_allclose(np.asarray(jac(np.asarray(X))), eager)       # a NumPy array: the same types
    scalar = ss.sparse_jacobian(lambda x, c: c * x, X, 2.0, output="dense")
    np.testing.assert_allclose(np.asarray(scalar(X, 2.0)), 2 * np.eye(12))
    np.testing.assert_allclose(np.asarray(scalar(X, jnp.asarray(3.0))), 3 * np.eye(12))  # not weakly typed


def test_the_cache_keeps_the_most_recent_programs():
    cache = ProgramCache(size=2)
    lowered = [jax.jit(lambda x, k=k: x * k).lower(X) for k in range(3)]
    for low in lowered:
        cache.compiled(low)
    cache.compiled(lowered[2])
    cache.compiled(lowered[0])  # evicted: compiled again
    assert (cache.hits, cache.misses) == (1, 4)


PERSISTENT = textwrap.dedent("""
    import jax, jax.numpy as jnp
    jax.config.update("jax_compilation_cache_dir", {cache!r})
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    import stablehlo_sparsity as ss
    x = jnp.linspace(0.1, 1.0, 64)
    jac = ss.sparse_jacobian(lambda v: jnp.sin(v[1:]) * v[:-1] + v[1:] ** 2, x)
    print(float(jac(x).data.sum()))
""")


def test_a_fresh_process_reuses_the_persistent_compilation_cache(tmp_path):
    """Our compressed program is the same module in every process (no random names, no addresses), so JAX's
    persistent cache, when the user enables it, serves a second process without compiling again."""
    cache = str(tmp_path / "xla-cache")
    script = PERSISTENT.format(cache=cache)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    outs = []
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        outs.append(run.stdout.strip())
        if len(outs) == 1:
            entries = sorted(os.listdir(cache))
    assert outs[0] == outs[1]
    assert entries and sorted(os.listdir(cache)) == entries  # (the second process added nothing: every hit)


@pytest.mark.parametrize("output", ["bcoo", "dense", "scipy"])
def test_every_output_reads_the_shared_program(output):
    a = ss.sparse_jacobian(lambda x: x[1:] * jnp.cos(x[:-1]), X, output=output)
    b = ss.sparse_jacobian(lambda x: x[1:] * jnp.cos(x[:-1]), X, output=output)
    dense = lambda m: m.todense() if hasattr(m, "todense") else m  # noqa: E731
    np.testing.assert_array_equal(np.asarray(dense(a(X))), np.asarray(dense(b(X))))


def test_the_containers_module_is_imported_beside_the_first_compilation():
    """A fresh process's first BCOO derivative imports jax.experimental.sparse in a thread started when the first
    call's program goes to XLA (whose compilation releases the GIL), not during the preparation, whose Python it
    would compete with; the result is the same either way."""
    script = textwrap.dedent("""
        import sys, threading
        import jax, jax.numpy as jnp
        import stablehlo_sparsity as ss
        from stablehlo_sparsity.derivatives.prepared import outputs
        started = []
        real = threading.Thread.start
        def start(self):
            started.append(self.name)
            return real(self)
        threading.Thread.start = start
        assert "jax.experimental.sparse" not in sys.modules
        x = jnp.linspace(0.1, 1.0, 16)
        jac = ss.sparse_jacobian(lambda v: jnp.sin(v[1:]) * v[:-1], x)
        assert started == [] and "jax.experimental.sparse" not in sys.modules, started
        J = jac(x)
        assert type(J).__name__ == "BCOO" and started == ["import jax.experimental.sparse"], started
        outputs.import_in_background("jax.experimental.sparse")   # (imported: nothing to start)
        outputs.import_in_background(None)
        assert started == ["import jax.experimental.sparse"]
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"}, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]

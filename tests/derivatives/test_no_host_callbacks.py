"""The evaluation programs are backend-neutral: no host callback in the lowered program unless ``f`` has one.

A host callback (``jax.pure_callback``/``io_callback``/``debug.callback``) lowers to a ``stablehlo.custom_call``
whose target names the Python callback (``xla_python_cpu_callback``, ``xla_ffi_python_cpu_callback``, the GPU
variants); such a program runs Python on the host at every call and cannot run on a TPU.  Every prepared
derivative — Jacobians (each mode and strategy), Hessians (each mode and strategy), module derivatives —
must lower to device code only.  The positive control shows the check sees a callback the user wrote.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity.examples import brusselator

N = 3
#: A custom_call target naming a Python host callback (CPU or GPU, legacy or FFI).
CALLBACK_TARGET = re.compile(r"custom_call\s*@\"?[\w.]*callback|call_target_name\s*=\s*\"[^\"]*callback")


def host_callbacks(text: str) -> list[str]:
    """The host-callback custom_call targets in a StableHLO text."""
    return CALLBACK_TARGET.findall(text)


def _x():
    return jnp.asarray(np.random.default_rng(0).uniform(0.5, 1.5, 2 * N * N))


def _f(v):
    return brusselator(v, N)


def _g(v):
    return 0.5 * jnp.sum(brusselator(v, N) ** 2)


@pytest.mark.parametrize("mode", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("strategy", ["vmap", "unrolled", "loop"])
def test_jacobian_programs_have_no_host_callback(mode, strategy):
    jac = ss.sparse_jacobian(_f, _x(), mode=mode, strategy=strategy, output="values")
    for output in ("values", "dense"):
        text = jac.as_text(output=output)
        assert "stablehlo.gather" in text or jac.pattern.nnz == 0
        assert host_callbacks(text) == [], (mode, strategy, output)
    assert host_callbacks(jac.lower(_x()).as_text()) == []


@pytest.mark.parametrize("mode", ["direct", "substitution"])
@pytest.mark.parametrize("strategy", ["vmap", "unrolled", "loop"])
def test_hessian_programs_have_no_host_callback(mode, strategy):
    h = ss.sparse_hessian(_g, _x(), mode=mode, strategy=strategy, output="values")
    assert host_callbacks(h.as_text()) == [] and host_callbacks(h.as_text(output="dense")) == []


def test_sharded_and_module_programs_have_no_host_callback():
    x = _x()
    assert host_callbacks(ss.sparse_jacobian(_f, x, devices=1).as_text()) == []
    assert host_callbacks(ss.sparse_hessian(_g, x, devices=1).as_text()) == []
    from stablehlo_sparsity.derivatives.prepared import evaluation
    from stablehlo_sparsity.derivatives.prepared.sharding import by_rows

    # a result sharded by rows (both methods), with the index arrays as arguments of the program
    evaluation.INDEX_ARGUMENT_ENTRIES, keep = 0, evaluation.INDEX_ARGUMENT_ENTRIES
    try:
        for method in ("scatter", "exchange", "local"):
            jac = ss.sparse_jacobian(_f, x, devices=by_rows(1, method), output="values")
            assert jac.index_arguments
            assert host_callbacks(jac._jitted.lower(jac._index_arguments(), x).as_text()) == []
        assert host_callbacks(ss.sparse_jacobian(_f, x, output="values").as_text()) == []
    finally:
        evaluation.INDEX_ARGUMENT_ENTRIES = keep
    assert host_callbacks(ss.sparse_jacobian(_f, x).export(("cpu", "cuda", "tpu")).mlir_module()) == []
    text = jax.jit(_f).lower(x).as_text()
    assert host_callbacks(ss.sparse_jacobian_module(text, output="values").as_text()) == []
    text = jax.jit(_g).lower(x).as_text()
    assert host_callbacks(ss.sparse_hessian_module(text, output="values").as_text()) == []


def test_a_callback_the_user_wrote_is_seen():
    """The positive control: the same check finds the callback of a function that has one."""
    @jax.custom_jvp
    def host_cos(v):
        return jax.pure_callback(np.cos, jax.ShapeDtypeStruct(v.shape, v.dtype), v, vmap_method="expand_dims")

    host_cos.defjvp(lambda p, t: (host_cos(p[0]), -jnp.sin(p[0]) * t[0]))

    def f(v):
        return v[1:] * v[:-1] + host_cos(v)[1:]

    x = jnp.linspace(0.2, 1.0, 5)
    assert host_callbacks(jax.jit(f).lower(x).as_text())
    # the value f(x) keeps the callback (a pure callback whose result is unused is dead code)
    jac = ss.value_and_sparse_jacobian(f, x, output="values")
    assert host_callbacks(jac.as_text())

"""A derivative's preparation and its first call's tracing and compilation run with Python's cyclic garbage collector
paused, and leave it as they found it (on or off), errors included (issue 48: in a fresh process the full
collection due from the imports, 40–140 ms, otherwise fired inside the first sparse Jacobian).

The user's function records the collector's state each time it is traced: for detection, and again for the
compressed program of the first call; the results are compared with dense JAX."""

from __future__ import annotations

import gc

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity.errors import InputError, LoweringError

X = jnp.linspace(0.2, 1.3, 6)


@pytest.fixture
def collector_restored():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def _recording(seen):
    def f(x):
        seen.append(gc.isenabled())
        return jnp.sin(x[1:]) * x[:-1] ** 2

    return f


@pytest.mark.parametrize("state", [True, False])
@pytest.mark.parametrize("prepare", ["sparse_jacobian", "SparseJacobian", "sparse_hessian", "SparseHessian"])
def test_paused_while_preparing_and_compiling_and_restored(prepare, state, collector_restored):
    seen: list[bool] = []
    f = _recording(seen)
    hessian = "essian" in prepare
    g = (lambda x: jnp.sum(f(x) ** 2)) if hessian else f
    (gc.enable if state else gc.disable)()
    obj = getattr(ss, prepare)(g, X) if prepare.startswith("sparse") else getattr(ss, prepare)(g, (X,))
    assert gc.isenabled() is state
    traced_for_detection = len(seen)
    got = obj(X).todense()
    assert gc.isenabled() is state
    assert len(seen) > traced_for_detection, "the first call traces f again (the compressed program)"
    assert not any(seen), "f was traced with the collector running"
    want = (jax.hessian if hessian else jax.jacfwd)(g)(X)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("state", [True, False])
def test_restored_when_preparation_fails(state, collector_restored):
    (gc.enable if state else gc.disable)()
    with pytest.raises(InputError):
        ss.sparse_jacobian(lambda x: x, jnp.arange(3))  # an integer argument: nothing to differentiate
    assert gc.isenabled() is state
    with pytest.raises(LoweringError, match="inside f"):
        ss.sparse_jacobian(_raises, X)  # f itself fails while it is traced
    assert gc.isenabled() is state


def _raises(x):
    raise ZeroDivisionError("inside f")

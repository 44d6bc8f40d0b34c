"""Sharded evaluation (``devices=``): the colors spread over a mesh give the single-device values.

Four virtual CPU devices need ``--xla_force_host_platform_device_count=4`` before JAX initializes, so the
multi-device checks run in one short subprocess; argument checks run here on the test process's device.
"""

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
from stablehlo_sparsity import InputError

SCRIPT = textwrap.dedent("""
    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import stablehlo_sparsity as ss
    from stablehlo_sparsity.examples import brusselator

    assert len(jax.devices()) == 4, jax.devices()
    N = 5
    f = lambda v: brusselator(v, N)
    x = jnp.asarray(np.random.default_rng(0).uniform(0.5, 1.5, 2 * N * N))
    J = np.asarray(jax.jacfwd(f)(x))
    meshes = {"forward": 4, "reverse": jax.devices()[1:4], "bidirectional": Mesh(np.array(jax.devices()), ("d",))}
    for mode, devices in meshes.items():
        one = ss.sparse_jacobian(f, x, mode=mode, output="values")
        jac = ss.value_and_sparse_jacobian(f, x, mode=mode, output="dense", coloring=one.coloring, devices=devices)
        y, d = jax.jit(jac)(x)
        # the same products, fused differently: equal up to rounding
        np.testing.assert_allclose(np.asarray(d), J, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(np.asarray(y), np.asarray(f(x)), rtol=1e-15)
        np.testing.assert_allclose(np.asarray(jac.values(x)), np.asarray(one.values(x)), rtol=1e-13, atol=1e-15)
        assert len(d.sharding.device_set) == len(jac.devices.devices.flat)  # replicated on the mesh
        # the index tables as arguments, each device holding its own row: the same bits as constants
        from stablehlo_sparsity.derivatives.prepared import evaluation
        evaluation.INDEX_ARGUMENT_ENTRIES, default = 0, evaluation.INDEX_ARGUMENT_ENTRIES
        arg = ss.value_and_sparse_jacobian(f, x, mode=mode, output="dense", coloring=one.coloring, devices=devices)
        evaluation.INDEX_ARGUMENT_ENTRIES = default
        tables = arg._index_arguments()
        assert tables and all(t.sharding.spec[0] == jac.devices.axis_names[0] for t in tables.values())
        assert np.array_equal(np.asarray(arg(x)[1]), np.asarray(d)), mode

    g = lambda v: 0.5 * jnp.sum(brusselator(v, N) ** 2)
    H = np.asarray(jax.hessian(g)(x))
    for mode in ("direct", "substitution"):
        h = ss.sparse_hessian(g, x, mode=mode, output="dense", devices=3)   # colors not a multiple of 3
        np.testing.assert_allclose(np.asarray(h(x)), H, rtol=1e-12, atol=1e-12 * np.abs(H).max())

    # a batch of points on the mesh: vmap of the prepared callable, the batch axis sharded
    jac = ss.sparse_jacobian(f, x, output="values")
    mesh = Mesh(np.array(jax.devices()), ("batch",))
    xs = jax.device_put(jnp.stack([x * (1 + 0.1 * i) for i in range(8)]), NamedSharding(mesh, P("batch")))
    vals = jax.jit(jax.vmap(jac))(xs)
    for i in range(8):
        np.testing.assert_allclose(np.asarray(vals[i]), np.asarray(jac.values(xs[i])), rtol=1e-13, atol=1e-15)

    try:
        ss.sparse_jacobian(f, x, devices=5)
    except ss.InputError as e:
        assert "4 device(s) available" in str(e)
    else:
        raise AssertionError("devices=5 on 4 devices must fail")
    print("SHARDED-OK")
""")


def test_four_virtual_devices_agree_with_one():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0 and "SHARDED-OK" in run.stdout, run.stdout[-2000:] + run.stderr[-4000:]


def test_one_device_mesh_and_argument_errors():
    x = jnp.linspace(0.3, 1.1, 6)
    f = lambda v: v[1:] * v[:-1]  # noqa: E731
    jac = ss.sparse_jacobian(f, x, devices=1, output="dense")
    np.testing.assert_allclose(np.asarray(jac(x)), np.asarray(jax.jacfwd(f)(x)), rtol=1e-14)
    with pytest.raises(InputError, match="device"):
        ss.sparse_jacobian(f, x, devices=len(jax.devices()) + 1)
    with pytest.raises(InputError, match="devices must be"):
        ss.sparse_jacobian(f, x, devices="gpu")
    with pytest.raises(InputError, match="twice"):
        ss.sparse_jacobian(f, x, devices=[jax.devices()[0]] * 2)
    with pytest.raises(InputError, match="device"):
        ss.sparse_hessian(lambda v: jnp.sum(v ** 3), x, devices=0)


def test_result_by_rows_on_one_device_and_its_errors():
    """``devices=by_rows(...)``: a ``(D, width)`` array of row blocks, here one block holding every nonzero; the
    containers other than ``"values"``, substitution and unknown methods are clear errors."""
    from stablehlo_sparsity.derivatives.prepared.sharding import by_rows

    x = jnp.linspace(0.3, 1.1, 6)
    f = lambda v: v[1:] * v[:-1]  # noqa: E731
    one = ss.sparse_jacobian(f, x, output="values")
    for method in ("scatter", "exchange", "local"):
        jac = ss.sparse_jacobian(f, x, devices=by_rows(1, method), output="values")
        vals = jac(x)
        assert vals.shape == (1, one.pattern.nnz) and jac.row_blocks.devices == 1
        assert np.array_equal(jac.row_blocks.values(vals), np.asarray(one(x)))
    with pytest.raises(InputError, match="sharded by rows"):
        jac.blocks(x)
    with pytest.raises(InputError, match="output='values'"):
        ss.sparse_jacobian(f, x, devices=by_rows(1), output="dense")
    with pytest.raises(InputError, match="substitution"):
        ss.sparse_hessian(lambda v: jnp.sum(v ** 3) + v[0] * jnp.sum(v), x, mode="substitution", output="values",
                          devices=by_rows(1))
    with pytest.raises(InputError, match="method"):
        by_rows(1, "rows")

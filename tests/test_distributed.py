"""Multi-process evaluation: two CPU processes joined by ``jax.distributed`` (started by
``python -m stablehlo_sparsity.launch``) shard the colors of a prepared Jacobian and Hessian over a global
mesh and give, bit for bit, what one process gives with its colors sharded over two (virtual) devices — the
same program, with the ``psum`` going over gloo between processes instead of within one.

Skipped, with the reason, where jaxlib has no gloo CPU collectives.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from stablehlo_sparsity import launch
from stablehlo_sparsity.distributed import COORDINATOR

SCRIPT = textwrap.dedent("""
    import os, sys
    out = sys.argv[1]
    from stablehlo_sparsity import distributed
    if distributed.COORDINATOR in os.environ:
        pid, count = distributed.initialize()
    else:  # the single-process reference: the same mesh size, on virtual devices of one process
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        pid, count = 0, 1
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    import stablehlo_sparsity as ss
    from stablehlo_sparsity.examples import brusselator

    assert len(jax.devices()) == 2 and len(jax.local_devices()) == 2 // count, jax.devices()
    N = 6
    f = lambda v: brusselator(v, N)
    g = lambda v: 0.5 * jnp.sum(brusselator(v, N) ** 2)
    x = np.random.default_rng(0).uniform(0.5, 1.5, 2 * N * N)
    mesh = distributed.global_mesh()
    xg = distributed.replicate(x, mesh)
    res = {}
    for mode in ("forward", "reverse"):
        jac = ss.sparse_jacobian(f, jnp.asarray(x), mode=mode, output="values", devices=mesh)
        assert jac.num_colors >= 2
        res["jac_" + mode] = distributed.to_host(jac.values(xg))
    h = ss.sparse_hessian(g, jnp.asarray(x), output="values", devices=jax.devices())
    vals = h.values(xg)
    res["hess"] = distributed.to_host(vals)
    if count > 1:  # this process's row block, as SciPy CSR
        blk, lo = distributed.row_block(h, vals)
        res["block"] = blk.toarray()
        res["block_lo"] = np.array(lo)
    else:
        for pid_ in range(2):
            blk, lo = distributed.row_block(h, vals, pid_, 2)
            res[f"block{pid_}"] = blk.toarray()
            res[f"block{pid_}_lo"] = np.array(lo)
        one = ss.sparse_jacobian(f, jnp.asarray(x), mode="forward", output="values")
        res["jac_one_device"] = np.asarray(one.values(jnp.asarray(x)))
    np.savez(os.path.join(out, f"p{pid}_of{count}.npz"), **res)
    print("DIST-OK", pid)
""")


def _gloo_available() -> str | None:
    try:
        from jax._src.lib import _jax
    except ImportError as e:  # pragma: no cover - depends on jaxlib
        return f"jaxlib internals unavailable: {e}"
    if not hasattr(_jax, "make_gloo_tcp_collectives"):  # pragma: no cover - depends on jaxlib
        return "this jaxlib has no gloo CPU collectives (make_gloo_tcp_collectives)"
    return None


def test_two_processes_agree_with_one_bit_for_bit(tmp_path):
    reason = _gloo_available()
    if reason:
        pytest.skip(reason)
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in (COORDINATOR, "XLA_FLAGS")}
    env["JAX_PLATFORMS"] = "cpu"
    ref = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert ref.returncode == 0 and "DIST-OK" in ref.stdout, ref.stdout[-2000:] + ref.stderr[-4000:]
    run = subprocess.run([sys.executable, "-m", "stablehlo_sparsity.launch", "-n", "2", "--timeout", "240",
                          str(script), str(tmp_path)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0 and run.stdout.count("DIST-OK") == 2, run.stdout[-2000:] + run.stderr[-4000:]

    one = np.load(tmp_path / "p0_of1.npz")
    for pid in range(2):
        got = np.load(tmp_path / f"p{pid}_of2.npz")
        for key in ("jac_forward", "jac_reverse", "hess"):
            assert got[key].dtype == one[key].dtype and got[key].shape == one[key].shape
            assert np.array_equal(got[key], one[key]), (pid, key)  # bit for bit
        assert int(got["block_lo"]) == int(one[f"block{pid}_lo"])
        assert np.array_equal(got["block"], one[f"block{pid}"])
    # and the sharded values are the single-device ones up to the rounding of a differently fused product
    np.testing.assert_allclose(one["jac_forward"], one["jac_one_device"], rtol=1e-13, atol=1e-15)
    stacked = np.vstack([one["block0"], one["block1"]])
    assert stacked.shape == (2 * 6 * 6, 2 * 6 * 6) and np.count_nonzero(stacked) > 0


def test_launcher_reports_a_failing_process(tmp_path, capfd):
    script = tmp_path / "fails.py"
    script.write_text("import os, sys\n"
                      "from stablehlo_sparsity.distributed import PROCESS_ID\n"
                      "sys.exit(3 if os.environ[PROCESS_ID] == '1' else 0)\n")
    assert launch.main(["-n", "2", str(script)]) == 3
    assert "process 1 of 2 exited with code 3" in capfd.readouterr().err
    assert launch.main(["-n", "2", str(tmp_path / "missing.py")]) == 2
    assert "no such script" in capfd.readouterr().err
    assert launch.main(["-n", "0", str(script)]) == 2


def test_initialize_outside_the_launcher_is_a_clear_error(monkeypatch):
    from stablehlo_sparsity import InputError, distributed

    monkeypatch.delenv(COORDINATOR, raising=False)
    with pytest.raises(InputError, match="stablehlo_sparsity.launch"):
        distributed.initialize()
    monkeypatch.setenv(COORDINATOR, "127.0.0.1:1")
    monkeypatch.setenv(distributed.NUM_PROCESSES, "two")
    with pytest.raises(InputError, match="integer"):
        distributed.initialize()

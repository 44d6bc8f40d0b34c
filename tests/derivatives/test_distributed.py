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
from stablehlo_sparsity.derivatives.distributed import COORDINATOR

SCRIPT = textwrap.dedent("""
    import os, sys
    out, size = sys.argv[1], int(sys.argv[2])
    from stablehlo_sparsity.derivatives import distributed
    if distributed.COORDINATOR in os.environ:
        pid, count = distributed.initialize()
    else:  # the single-process reference: the same mesh size, on virtual devices of one process
        os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={size}"
        pid, count = 0, 1
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    import stablehlo_sparsity as ss
    from stablehlo_sparsity.derivatives.prepared import evaluation
    from stablehlo_sparsity.examples import brusselator
    from stablehlo_sparsity.derivatives.prepared.sharding import by_rows
    DEFAULT = evaluation.INDEX_ARGUMENT_ENTRIES

    assert len(jax.devices()) == size and len(jax.local_devices()) == size // count, jax.devices()
    N = 6
    f = lambda v: brusselator(v, N)
    g = lambda v: 0.5 * jnp.sum(brusselator(v, N) ** 2)
    x = np.random.default_rng(0).uniform(0.5, 1.5, 2 * N * N)
    mesh = distributed.global_mesh()
    xg = distributed.replicate(x, mesh)
    res = {}

    def rows(name, prepared):  # a result sharded by rows: the whole (gathered) and this process's own rows
        vals = prepared.values(xg)
        assert vals.shape == (size, prepared.row_blocks.width) and len(vals.addressable_shards) == size // count
        res[name] = prepared.row_blocks.values(distributed.to_host(vals))
        blk, lo = distributed.row_block(prepared, vals)
        res[name + "_own"], res[name + "_own_lo"] = blk.toarray(), np.array(lo)

    for mode in ("forward", "reverse"):
        jac = ss.sparse_jacobian(f, jnp.asarray(x), mode=mode, output="values", devices=mesh)
        assert jac.num_colors >= size
        res["jac_" + mode] = distributed.to_host(jac.values(xg))
        # the index tables as arguments (threshold forced to 0), each process building its devices' rows only
        evaluation.INDEX_ARGUMENT_ENTRIES = 0 if mode == "reverse" else DEFAULT
        method = "scatter" if mode == "forward" else "local"  # and "exchange" for the Hessian
        rows(f"jac_{mode}_rows", ss.sparse_jacobian(f, jnp.asarray(x), mode=mode, output="values",
                                                    coloring=jac.coloring, devices=by_rows(mesh, method)))
        evaluation.INDEX_ARGUMENT_ENTRIES = DEFAULT
    h = ss.sparse_hessian(g, jnp.asarray(x), output="values", devices=jax.devices())
    vals = h.values(xg)
    res["hess"] = distributed.to_host(vals)
    evaluation.INDEX_ARGUMENT_ENTRIES = 0
    rows("hess_rows", ss.sparse_hessian(g, jnp.asarray(x), output="values", coloring=h.coloring,
                                        devices=by_rows(jax.devices(), "exchange")))
    evaluation.INDEX_ARGUMENT_ENTRIES = DEFAULT
    if count > 1:  # this process's row block, as SciPy CSR
        blk, lo = distributed.row_block(h, vals)
        res["block"] = blk.toarray()
        res["block_lo"] = np.array(lo)
    else:
        for pid_ in range(size):
            blk, lo = distributed.row_block(h, vals, pid_, size)
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


def _run_and_compare(tmp_path, size: int) -> None:
    """``size`` processes (one CPU device each) against one process with ``size`` virtual devices."""
    reason = _gloo_available()
    if reason:
        pytest.skip(reason)
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in (COORDINATOR, "XLA_FLAGS")}
    env["JAX_PLATFORMS"] = "cpu"
    ref = subprocess.run([sys.executable, str(script), str(tmp_path), str(size)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert ref.returncode == 0 and "DIST-OK" in ref.stdout, ref.stdout[-2000:] + ref.stderr[-4000:]
    run = subprocess.run([sys.executable, "-m", "stablehlo_sparsity.launch", "-n", str(size), "--timeout", "240",
                          str(script), str(tmp_path), str(size)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert run.returncode == 0 and run.stdout.count("DIST-OK") == size, run.stdout[-2000:] + run.stderr[-4000:]

    one = np.load(tmp_path / "p0_of1.npz")
    m = 2 * 6 * 6
    for pid in range(size):
        got = np.load(tmp_path / f"p{pid}_of{size}.npz")
        for key in ("jac_forward", "jac_reverse", "hess", "jac_forward_rows", "jac_reverse_rows", "hess_rows"):
            assert got[key].dtype == one[key].dtype and got[key].shape == one[key].shape
            assert np.array_equal(got[key], one[key]), (pid, key)  # bit for bit
        assert int(got["block_lo"]) == int(one[f"block{pid}_lo"])
        assert np.array_equal(got["block"], one[f"block{pid}"])
        # each process's own rows of a row-sharded result: block pid of ceil(m / size) rows
        for key in ("jac_forward_rows", "jac_reverse_rows", "hess_rows"):
            lo = int(got[key + "_own_lo"])
            assert lo == pid * -(-m // size)
            own = one[key + "_own"][lo:lo + got[key + "_own"].shape[0]]  # the reference holds every block
            assert np.array_equal(got[key + "_own"], own), (pid, key)
    # the row-sharded results are the replicated ones (psum_scatter: the same sums; all_to_all: the same
    # products, fused into another consumer), up to the rounding of a differently fused product
    assert np.array_equal(one["jac_forward_rows"], one["jac_forward"])
    np.testing.assert_allclose(one["hess_rows"], one["hess"], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(one["jac_reverse_rows"], one["jac_reverse"], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(one["jac_forward"], one["jac_one_device"], rtol=1e-13, atol=1e-15)
    stacked = np.vstack([one[f"block{p}"] for p in range(size)])
    assert stacked.shape == (m, m) and np.count_nonzero(stacked) > 0
    # the exchange-sharded Hessian's own rows against the replicated one's row blocks: the same entries in the same
    # places, up to the rounding of the differently fused product above (XLA 0.12 fuses them differently; the
    # processes still agree with one process bit for bit, checked above)
    assert one["hess_rows_own"].shape == (m, m)
    assert np.array_equal(one["hess_rows_own"] != 0, stacked != 0)
    np.testing.assert_allclose(one["hess_rows_own"], stacked, rtol=1e-13, atol=1e-13)


def test_two_processes_agree_with_one_bit_for_bit(tmp_path):
    _run_and_compare(tmp_path, 2)


@pytest.mark.skipif(not os.environ.get("SHS_LONG"), reason="4 processes each importing JAX: SHS_LONG=1")
def test_four_processes_agree_with_one_bit_for_bit(tmp_path):
    _run_and_compare(tmp_path, 4)


def test_launcher_reports_a_failing_process(tmp_path, capfd):
    script = tmp_path / "fails.py"
    script.write_text("import os, sys\n"
                      "from stablehlo_sparsity.derivatives.distributed import PROCESS_ID\n"
                      "sys.exit(3 if os.environ[PROCESS_ID] == '1' else 0)\n")
    assert launch.main(["-n", "2", str(script)]) == 3
    assert "process 1 of 2 exited with code 3" in capfd.readouterr().err
    assert launch.main(["-n", "2", str(tmp_path / "missing.py")]) == 2
    assert "no such script" in capfd.readouterr().err
    assert launch.main(["-n", "0", str(script)]) == 2


def test_initialize_outside_the_launcher_is_a_clear_error(monkeypatch):
    from stablehlo_sparsity import InputError
    from stablehlo_sparsity.derivatives import distributed

    monkeypatch.delenv(COORDINATOR, raising=False)
    with pytest.raises(InputError, match="stablehlo_sparsity.launch"):
        distributed.initialize()
    monkeypatch.setenv(COORDINATOR, "127.0.0.1:1")
    monkeypatch.setenv(distributed.NUM_PROCESSES, "two")
    with pytest.raises(InputError, match="integer"):
        distributed.initialize()

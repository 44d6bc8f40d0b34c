"""Long runs keep flat memory: analyzing many different functions in one process must not keep their MLIR
modules alive (each lowered module's context is about a megabyte; a cache keyed by MLIR types once kept
thousands of them: +1.2 MB per analysis, gigabytes over a corpus run).

Runs in a fresh interpreter so that nothing else the test session did is counted."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import gc, json
    import jax, jax.numpy as jnp
    from jax._src.interpreters import mlir as jm
    from stablehlo_sparsity import hessian_sparsity, jacobian_sparsity

    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 1e6

    def make(i):  # a fresh closure each time: nothing JAX or we cache can be reused
        c = float(i)
        return lambda x: jnp.sum(jnp.sin(x * c) ** 2) + c * x[0] * x[-1]

    x = jnp.ones(20)
    out = {}
    for i in range(N):
        f = make(i)
        jacobian_sparsity(f, x) if i % 2 else hessian_sparsity(f, x)
        if i + 1 in (N // 3, N):
            gc.collect()
            out[i + 1] = rss_mb()
    out["contexts"] = sum(isinstance(o, jm.JaxIrContext) for o in gc.get_objects())
    print(json.dumps(out))
""")


def test_many_analyses_keep_memory_flat():
    n = 120
    proc = subprocess.run([sys.executable, "-c", f"N = {n}\n" + SCRIPT], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    # Before the fix: every analysis kept its module's context (120 here) and about 1.2 MB.
    assert res["contexts"] <= 4, res
    growth = res[str(n)] - res[str(n // 3)]
    assert growth < 30, f"resident memory grew {growth:.0f} MB over {n - n // 3} analyses ({res})"

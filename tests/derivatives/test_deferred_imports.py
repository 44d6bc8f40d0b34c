"""The containers' import defers ``jax.experimental.sparse.linalg`` (and with it SciPy's sparse linear algebra,
0.2 s of a fresh process) until something reads it: a sparse Jacobian never loads it, and code that uses it
afterwards — ``sparse.linalg.spsolve``, ``from jax.experimental.sparse.linalg import ...`` — gets the real module
and correct results.  Fresh processes: the deferral happens once per process, before the package's first import."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    import jax, jax.numpy as jnp
    import numpy as np
    import stablehlo_sparsity as ss

    x = jnp.linspace(0.1, 1.0, 50)
    f = lambda x: x[1:] ** 2 - jnp.sin(x[:-1])
    J = ss.sparse_jacobian(f, x)(x)
    assert type(J).__name__ == "BCOO"
    np.testing.assert_allclose(J.todense(), jax.jacfwd(f)(x), rtol=1e-6)
    lazy = type(sys.modules["jax.experimental.sparse.linalg"]).__name__ == "DeferredModule"
    print("deferred" if lazy else "eager", "scipy.sparse.linalg" in sys.modules)

    from jax.experimental import sparse
    import jax.experimental.sparse.linalg as linalg_by_import      # (the stub itself: answers from the real one)
    from jax.experimental.sparse.linalg import spsolve
    A = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 2.0]], np.float32)
    M = sparse.BCSR.fromdense(jnp.asarray(A))
    b = jnp.asarray([1.0, 2.0, 3.0], jnp.float32)
    got = spsolve(M.data, M.indices, M.indptr, b)
    np.testing.assert_allclose(got, np.linalg.solve(A, b), rtol=1e-5)
    assert sparse.linalg.spsolve is spsolve is linalg_by_import.spsolve
    assert type(sys.modules["jax.experimental.sparse.linalg"]).__name__ == "module"
    assert callable(sparse.linalg.lobpcg_standard) and "spsolve" in dir(linalg_by_import)
    print("ok")
""")


def _run(**env):
    full = {**os.environ, "JAX_PLATFORMS": "cpu", **env}
    full.pop("SHS_EAGER_IMPORTS", None) if not env else None
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=full, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.split()


def test_a_sparse_jacobian_never_loads_scipy_sparse_linalg_and_the_module_works_after():
    assert _run() == ["deferred", "False", "ok"]


def test_shs_eager_imports_loads_it_as_jax_does():
    assert _run(SHS_EAGER_IMPORTS="1") == ["eager", "True", "ok"]

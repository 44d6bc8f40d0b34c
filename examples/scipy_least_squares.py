"""SciPy ``least_squares`` with the library's sparse Jacobian (``jac=``) or only its pattern (``jac_sparsity=``).

The Broyden tridiagonal problem (Moré, Garbow & Hillstrom 1981), plus a regularization row per unknown:
``n`` unknowns, ``2n`` residuals, each touching at most three neighbours.  Three ways to give SciPy the
Jacobian:

* ``jac=least_squares_jacobian(residual, x0)`` — exact, ``num_colors`` JVPs per call, a CSR matrix;
* ``jac_sparsity=jac_sparsity(residual, x0)`` — only the detected pattern, SciPy groups columns and
  estimates the values by finite differences;
* nothing — SciPy's dense finite differences, ``n + 1`` residual calls per Jacobian.

Run: ``python examples/scipy_least_squares.py [n]``.
"""

from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import least_squares

from stablehlo_sparsity.interop.scipy import jac_sparsity, least_squares_jacobian

jax.config.update("jax_enable_x64", True)


def residual(x):
    left = jnp.concatenate([jnp.zeros(1, x.dtype), x[:-1]])
    right = jnp.concatenate([x[1:], jnp.zeros(1, x.dtype)])
    broyden = (3.0 - 2.0 * x) * x - left - 2.0 * right + 1.0
    return jnp.concatenate([broyden, 0.1 * (x + 1.0)])


def main(n: int = 2000, dense: bool | None = None) -> dict:
    x0 = np.full(n, -1.0)
    fun = jax.jit(residual)
    results = {}

    jac = least_squares_jacobian(residual, x0)
    t0 = time.perf_counter()
    sol = least_squares(lambda x: np.asarray(fun(x)), x0, jac=jac, method="trf", x_scale="jac")
    results["jac="] = dict(cost=sol.cost, nfev=sol.nfev, njev=sol.njev, seconds=time.perf_counter() - t0,
                           colors=jac.sparse_jacobian.num_colors, x=sol.x)

    t0 = time.perf_counter()
    sol = least_squares(lambda x: np.asarray(fun(x)), x0, jac_sparsity=jac_sparsity(residual, x0), method="trf",
                        x_scale="jac")
    results["jac_sparsity="] = dict(cost=sol.cost, nfev=sol.nfev, njev=sol.njev, seconds=time.perf_counter() - t0,
                                    x=sol.x)
    if dense if dense is not None else n <= 200:
        t0 = time.perf_counter()
        sol = least_squares(lambda x: np.asarray(fun(x)), x0, method="trf", x_scale="jac")
        results["dense"] = dict(cost=sol.cost, nfev=sol.nfev, njev=sol.njev, seconds=time.perf_counter() - t0,
                                x=sol.x)
    return results


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    for name, r in main(n).items():
        print(f"{name:15s} cost {r['cost']:.3e}  residual calls {r['nfev']:4d}  Jacobians {r['njev']}  "
              f"{r['seconds']:.2f} s")

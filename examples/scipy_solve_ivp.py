"""SciPy ``solve_ivp`` (BDF and Radau) with the library's sparse Jacobian, and a matrix-free
``LinearOperator`` for a Krylov solver.

A 1-D Brusselator reaction–diffusion system (Hairer & Wanner II, §IV.10): ``2N`` unknowns, stiff for
large ``N``; its Jacobian is banded (each unknown meets its two neighbours and its partner).

* ``jac=ivp_jacobian(rhs, t0, y0)``: ``jac(t, y)`` returns a CSC matrix, exact, a few JVPs per call;
* ``jac_sparsity=``: the detected pattern, values by grouped finite differences (SciPy);
* ``jacobian_operator(f, x)``: ``J v`` and ``Jᵀ u`` by one JVP / VJP each, for ``gmres`` — one implicit
  Euler step solved by Newton–Krylov without forming ``J``.

Run: ``python examples/scipy_solve_ivp.py [N]``.
"""

from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp
from scipy.sparse.linalg import LinearOperator, gmres

from stablehlo_sparsity.interop.scipy import ivp_jacobian, jac_sparsity, jacobian_operator

jax.config.update("jax_enable_x64", True)

A, B, ALPHA = 1.0, 3.0, 0.02


def brusselator_1d(t, y):
    n = y.shape[0] // 2
    u, v = y[:n], y[n:]
    dx2 = (n + 1.0) ** 2

    def lap(w, boundary):
        padded = jnp.concatenate([jnp.array([boundary]), w, jnp.array([boundary])])
        return (padded[2:] - 2.0 * w + padded[:-2]) * dx2

    du = A + u * u * v - (B + 1.0) * u + ALPHA * lap(u, 1.0)
    dv = B * u - u * u * v + ALPHA * lap(v, 3.0)
    return jnp.concatenate([du, dv])


def initial(N: int):
    x = np.arange(1, N + 1) / (N + 1)
    return np.concatenate([1.0 + np.sin(2 * np.pi * x), np.full(N, 3.0)])


def main(N: int = 500, t_end: float = 10.0) -> dict:
    y0 = initial(N)
    rhs = jax.jit(brusselator_1d)
    fun = lambda t, y: np.asarray(rhs(t, y))  # noqa: E731
    results = {}
    jac = ivp_jacobian(brusselator_1d, 0.0, y0)
    for method in ("BDF", "Radau"):
        t0 = time.perf_counter()
        sol = solve_ivp(fun, (0.0, t_end), y0, method=method, jac=jac, rtol=1e-6, atol=1e-8)
        results[f"{method} jac="] = dict(success=sol.success, nfev=sol.nfev, njev=sol.njev, y=sol.y[:, -1],
                                         seconds=time.perf_counter() - t0)
    t0 = time.perf_counter()
    sol = solve_ivp(fun, (0.0, t_end), y0, method="BDF", jac_sparsity=jac_sparsity(brusselator_1d, 0.0, y0, argnums=1),
                    rtol=1e-6, atol=1e-8)
    results["BDF jac_sparsity="] = dict(success=sol.success, nfev=sol.nfev, njev=sol.njev, y=sol.y[:, -1],
                                        seconds=time.perf_counter() - t0)

    # One implicit Euler step y1 = y0 + h f(y1), Newton–Krylov: (I - h J) d = -(y - y0 - h f(y)), J matrix-free.
    h, y = 0.01, y0.copy()
    for _ in range(4):
        J = jacobian_operator(lambda w: brusselator_1d(0.0, w), y)
        M = LinearOperator(J.shape, matvec=lambda v: v - h * J.matvec(v), dtype=np.float64)
        r = y - y0 - h * fun(0.0, y)
        d, info = gmres(M, -r, rtol=1e-10, atol=0.0)
        y = y + d
    results["implicit Euler, gmres"] = dict(residual=float(np.abs(y - y0 - h * fun(0.0, y)).max()), info=info)
    return results


if __name__ == "__main__":
    N = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    for name, r in main(N).items():
        print(name, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items() if k != "y"})

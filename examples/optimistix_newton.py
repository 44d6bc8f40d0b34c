"""optimistix Newton with the library's sparse Jacobian and a sparse direct solve.

The 2-D Bratu problem ``Δu + λ eᵘ = 0`` on the unit square (zero boundary), discretized on an ``N × N``
grid: ``N²`` unknowns, a five-point Jacobian.  ``optx.Newton`` builds the dense Jacobian (``N²`` JVPs) and
factorizes it densely; :class:`~stablehlo_sparsity.interop.lineax.SparseNewton` detects the pattern once
(when the residual is traced), evaluates it with 5 JVPs and solves with ``spsolve``.

Run: ``python examples/optimistix_newton.py [N]``.
"""

from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from stablehlo_sparsity.interop.lineax import SparseNewton

jax.config.update("jax_enable_x64", True)


def bratu(u, lam):
    N = int(round(u.shape[0] ** 0.5))
    g = jnp.pad(u.reshape(N, N), 1)
    h2 = (N + 1.0) ** 2
    lap = (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:] - 4.0 * g[1:-1, 1:-1]) * h2
    return (lap + lam * jnp.exp(g[1:-1, 1:-1])).ravel()


def solve(solver, N: int, lam: float = 5.0):
    run = jax.jit(lambda y0: optx.root_find(bratu, solver, y0, lam, max_steps=50))
    y0 = jnp.zeros(N * N)
    t0 = time.perf_counter()
    sol = run(y0)
    sol.value.block_until_ready()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    sol = run(y0)
    sol.value.block_until_ready()
    return sol, first, time.perf_counter() - t0


def main(N: int = 40, dense: bool | None = None) -> dict:
    results = {}
    sol, first, warm = solve(SparseNewton(rtol=1e-10, atol=1e-10), N)
    results["sparse"] = dict(u=np.asarray(sol.value), steps=int(sol.stats["num_steps"]), first=first, warm=warm,
                             residual=float(jnp.abs(bratu(sol.value, 5.0)).max()))
    if dense if dense is not None else N <= 40:
        sol, first, warm = solve(optx.Newton(rtol=1e-10, atol=1e-10), N)
        results["dense"] = dict(u=np.asarray(sol.value), steps=int(sol.stats["num_steps"]), first=first,
                                warm=warm, residual=float(jnp.abs(bratu(sol.value, 5.0)).max()))
    return results


if __name__ == "__main__":
    N = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    for name, r in main(N).items():
        print(f"{name:6s} {r['steps']} Newton steps, max residual {r['residual']:.1e}, first call {r['first']:.2f} s, "
              f"warm {r['warm'] * 1e3:.1f} ms")

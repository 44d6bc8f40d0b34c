"""diffrax Kvaerno5 on a stiff block-diagonal system with the library's sparse Jacobian (diffrax issue #545).

``B`` independent Robertson reactions (3 species each, rate constants varying per block): ``3B`` unknowns,
a block-diagonal Jacobian of 3×3 blocks.  diffrax's implicit solvers differentiate the stage equation
densely (``3B`` JVPs) and factorize densely (``O(B³)``); with
``root_finder=diffrax.with_stepsize_controller_tols(SparseVeryChord)()`` the Jacobian is detected once,
evaluated with 3 JVPs and factorized sparsely.  Everything else (error control, step sizes) is diffrax's.

Run: ``python examples/diffrax_stiff.py [blocks]``.
"""

from __future__ import annotations

import sys
import time

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

from stablehlo_sparsity.interop.lineax import SparseVeryChord

jax.config.update("jax_enable_x64", True)


def robertson_blocks(t, y, k):
    k1, k2, k3 = k
    a, b, c = y.reshape(-1, 3).T
    da = -k1 * a + k3 * b * c
    db = k1 * a - k3 * b * c - k2 * b ** 2
    dc = k2 * b ** 2
    return jnp.stack([da, db, dc], axis=1).ravel()


def problem(blocks: int):
    s = np.linspace(0.5, 1.5, blocks)
    k = (jnp.asarray(0.04 * s), jnp.asarray(3e7 * s), jnp.asarray(1e4 * s))
    y0 = jnp.tile(jnp.array([1.0, 0.0, 0.0]), blocks)
    return k, y0


def solve(blocks: int, sparse: bool, t_end: float = 100.0):
    k, y0 = problem(blocks)
    root_finder = diffrax.with_stepsize_controller_tols(SparseVeryChord)() if sparse else None
    solver = diffrax.Kvaerno5(root_finder=root_finder) if sparse else diffrax.Kvaerno5()
    run = jax.jit(lambda y0, k: diffrax.diffeqsolve(
        diffrax.ODETerm(robertson_blocks), solver, 0.0, t_end, 1e-4, y0, args=k,
        stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-8), max_steps=100_000))
    t0 = time.perf_counter()
    sol = run(y0, k)
    sol.ys.block_until_ready()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    sol = run(y0, k)
    sol.ys.block_until_ready()
    return sol, first, time.perf_counter() - t0


def main(blocks: int = 100, dense: bool | None = None) -> dict:
    results = {}
    for name, sparse in (("sparse", True), ("dense", False)):
        if not sparse and not (dense if dense is not None else blocks <= 400):
            continue
        sol, first, warm = solve(blocks, sparse)
        y = np.asarray(sol.ys[-1])
        results[name] = dict(y=y, steps=int(sol.stats["num_steps"]), first=first, warm=warm,
                             mass_error=float(np.abs(y.reshape(-1, 3).sum(1) - 1).max()))
    return results


if __name__ == "__main__":
    blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    for name, r in main(blocks).items():
        print(f"{name:6s} n={3 * blocks}: {r['steps']} steps, first call {r['first']:.2f} s, warm {r['warm']:.3f} s, "
              f"max |mass - 1| {r['mass_error']:.1e}")

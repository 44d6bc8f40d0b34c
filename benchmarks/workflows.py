"""Workflows: the sparse path of the integrations against each library's dense default, in one process.

    python benchmarks/workflows.py             # the tables of the README
    python benchmarks/workflows.py --quick     # small sizes (a smoke run)

1. diffrax ``Kvaerno5`` on ``B`` stiff Robertson blocks (``n = 3B``, block-diagonal Jacobian; diffrax issue
   #545): the default root finder (dense Jacobian by ``n`` JVPs, dense LU) against
   ``SparseVeryChord`` (3 JVPs, sparse LU).  Same steps, same answer.
2. optimistix root find of the 2-D Bratu problem on an ``N × N`` grid: ``optx.Newton`` (dense) against
   ``SparseNewton``.
3. SciPy ``solve_ivp(method="BDF")`` of the 1-D Brusselator with ``2N`` unknowns: no ``jac`` (SciPy's dense
   finite differences) against ``jac=ivp_jacobian(...)``.

"first" includes detection, coloring, tracing and XLA compilation; "warm" is the best of ``--repeat`` later
calls.  The dense default is skipped where it would take minutes (shown as —).  Wall-clock times; the
machine line says what ran them.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from detect import machine  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fmt(t):
    return "—" if t is None else (f"{t:.3f}" if t < 10 else f"{t:.1f}")


def ratio(dense, sparse):
    return "—" if dense is None or sparse is None else f"{dense / sparse:.1f}×"


def diffrax_table(sizes, dense_max, repeat):
    import numpy as np

    ds = example("diffrax_stiff")
    print("\n**diffrax Kvaerno5, stiff Robertson blocks** (t = 0 … 100, PID rtol 1e-6, atol 1e-8)\n")
    print("| blocks | n | steps | dense first (s) | dense warm (s) | sparse first (s) | sparse warm (s) | "
          "dense / sparse (warm) | same answer |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
    for b in sizes:
        sol_s, first_s, warm_s = ds.solve(b, True)
        for _ in range(repeat - 1):
            warm_s = min(warm_s, ds.solve(b, True)[2])
        dense = b <= dense_max
        if dense:
            sol_d, first_d, warm_d = ds.solve(b, False)
            same = "yes" if np.allclose(np.asarray(sol_s.ys), np.asarray(sol_d.ys), rtol=1e-8, atol=1e-12) else "NO"
        else:
            first_d = warm_d = None
            same = "—"
        print(f"| {b} | {3 * b:,} | {int(sol_s.stats['num_steps'])} | {fmt(first_d)} | {fmt(warm_d)} | "
              f"{fmt(first_s)} | {fmt(warm_s)} | {ratio(warm_d, warm_s)} | {same} |", flush=True)


def optimistix_table(sizes, dense_max, repeat):
    import numpy as np
    import optimistix as optx

    on = example("optimistix_newton")
    from stablehlo_sparsity.interop.lineax import SparseNewton

    print("\n**optimistix Newton, 2-D Bratu** (λ = 5, rtol = atol = 1e-10)\n")
    print("| N | n | steps | dense first (s) | dense warm (s) | sparse first (s) | sparse warm (s) | "
          "dense / sparse (warm) | same answer |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
    for N in sizes:
        sol_s, first_s, warm_s = on.solve(SparseNewton(rtol=1e-10, atol=1e-10), N)
        if N <= dense_max:
            sol_d, first_d, warm_d = on.solve(optx.Newton(rtol=1e-10, atol=1e-10), N)
            same = "yes" if np.allclose(np.asarray(sol_s.value), np.asarray(sol_d.value), atol=1e-9) else "NO"
        else:
            first_d = warm_d = None
            same = "—"
        print(f"| {N} | {N * N:,} | {int(sol_s.stats['num_steps'])} | {fmt(first_d)} | {fmt(warm_d)} | "
              f"{fmt(first_s)} | {fmt(warm_s)} | {ratio(warm_d, warm_s)} | {same} |", flush=True)


def scipy_table(sizes, dense_max):
    import numpy as np
    from scipy.integrate import solve_ivp

    ex = example("scipy_solve_ivp")
    from stablehlo_sparsity.interop.scipy import ivp_jacobian

    print("\n**SciPy solve_ivp BDF, 1-D Brusselator** (t = 0 … 10, rtol 1e-6, atol 1e-8)\n")
    print("| N | n | no jac: time (s) | no jac: rhs calls | jac=: prepare (s) | jac=: solve (s) | "
          "Jacobians | speed-up | same answer |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
    for N in sizes:
        y0 = ex.initial(N)
        rhs = jax.jit(ex.brusselator_1d)
        fun = lambda t, y: np.asarray(rhs(t, y))  # noqa: E731
        fun(0.0, y0)
        t0 = time.perf_counter()
        jac = ivp_jacobian(ex.brusselator_1d, 0.0, y0)
        jac(0.0, y0)
        prep = time.perf_counter() - t0
        t0 = time.perf_counter()
        s = solve_ivp(fun, (0.0, 10.0), y0, method="BDF", jac=jac, rtol=1e-6, atol=1e-8)
        t_s = time.perf_counter() - t0
        if N <= dense_max:
            t0 = time.perf_counter()
            d = solve_ivp(fun, (0.0, 10.0), y0, method="BDF", rtol=1e-6, atol=1e-8)
            t_d = time.perf_counter() - t0
            same = "yes" if np.allclose(s.y[:, -1], d.y[:, -1], rtol=1e-4, atol=1e-6) else "NO"
            nf = d.nfev
        else:
            t_d, nf, same = None, "—", "—"
        print(f"| {N} | {2 * N:,} | {fmt(t_d)} | {nf} | {fmt(prep)} | {fmt(t_s)} | {s.njev} | {ratio(t_d, t_s)} | "
              f"{same} |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--only", choices=["diffrax", "optimistix", "scipy"])
    a = ap.parse_args(argv)
    print(f"machine: {machine()}; {time.strftime('%Y-%m-%d')}; load average {os.getloadavg()[0]:.1f}")
    if a.only in (None, "diffrax"):
        diffrax_table([10, 30] if a.quick else [100, 300, 1000, 3334], 30 if a.quick else 300, a.repeat)
    if a.only in (None, "optimistix"):
        optimistix_table([8, 16] if a.quick else [16, 32, 48, 128], 16 if a.quick else 48, a.repeat)
    if a.only in (None, "scipy"):
        scipy_table([50, 100] if a.quick else [250, 1000, 5000], 100 if a.quick else 1000)


if __name__ == "__main__":
    main()

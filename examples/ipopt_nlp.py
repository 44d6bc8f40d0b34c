"""IPOPT (cyipopt) with exact sparse first and second derivatives.

A chained Rosenbrock objective with chained equality constraints (Lukšan & Vlček's test problem family):

    minimize   Σ 100 (x[i+1] - x[i]²)² + (1 - x[i])²
    subject to 3 x[k+1]³ + 2 x[k+2] - 5 + sin(x[k+1] - x[k+2]) sin(x[k+1] + x[k+2]) + 4 x[k+1]
               - x[k] exp(x[k] - x[k+1]) - 3 = 0,     k = 0 … n-3

IPOPT wants the constraint Jacobian and the Hessian of the Lagrangian ``σ f + λᵀ c`` as triplets: a fixed
``(rows, cols)`` structure, then values in that order (the Hessian's lower triangle).  :class:`IpoptProblem`
gives exactly the callbacks ``cyipopt.Problem`` calls; the patterns are detected once (for all ``λ``, ``σ``).

cyipopt needs the Ipopt library (``conda install -c conda-forge cyipopt``, or Debian's
``coinor-libipopt-dev`` + ``liblapack-dev`` then ``pip install cyipopt``).  Without it, :func:`layout` still
shows the structures.  Run: ``python examples/ipopt_nlp.py [n]``.
"""

from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from stablehlo_sparsity.interop.ipopt import IpoptProblem

jax.config.update("jax_enable_x64", True)


def objective(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def constraints(x):
    a, b, c = x[:-2], x[1:-1], x[2:]
    return (3.0 * b ** 3 + 2.0 * c - 5.0 + jnp.sin(b - c) * jnp.sin(b + c) + 4.0 * b
            - a * jnp.exp(a - b) - 3.0)


def layout(n: int = 10) -> dict:
    """The structures IPOPT receives (no cyipopt needed)."""
    problem = IpoptProblem(objective, constraints, np.full(n, 3.0))
    jr, jc = problem.jacobianstructure()
    hr, hc = problem.hessianstructure()
    return dict(problem=problem, jacobian_nnz=len(jr), hessian_lower_nnz=len(hr),
                jacobian_dense=n * (n - 2), hessian_lower_dense=n * (n + 1) // 2)


def main(n: int = 1000, print_level: int = 0) -> dict:
    import cyipopt

    x0 = np.full(n, 3.0)
    problem = IpoptProblem(objective, constraints, x0)
    nlp = cyipopt.Problem(n=n, m=problem.m, problem_obj=problem, lb=np.full(n, -1e20), ub=np.full(n, 1e20),
                          cl=np.zeros(problem.m), cu=np.zeros(problem.m))
    nlp.add_option("print_level", print_level)
    nlp.add_option("tol", 1e-8)
    t0 = time.perf_counter()
    x, info = nlp.solve(x0)
    return dict(x=x, status=info["status"], objective=info["obj_val"], seconds=time.perf_counter() - t0,
                constraint_violation=float(np.abs(info["g"]).max()),
                jacobian_nnz=problem.jacobian_.nnz, hessian_lower_nnz=problem.hessian_.nnz)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    lay = layout(n)
    print(f"n={n}: Jacobian {lay['jacobian_nnz']} of {lay['jacobian_dense']} entries, Hessian lower triangle "
          f"{lay['hessian_lower_nnz']} of {lay['hessian_lower_dense']}")
    try:
        r = main(n)
    except ImportError:
        print("cyipopt is not installed: structures only")
    else:
        print(f"status {r['status']}, objective {r['objective']:.6g}, max |c| {r['constraint_violation']:.1e}, "
              f"{r['seconds']:.2f} s")

"""Coloring and compressed-derivative benchmark: ours vs asdex (and dense JAX), in one process.

    python benchmarks/evaluate.py --only scaling   # the 2-D Brusselator table, N = 64 … 1024 (issue 14)
    python benchmarks/evaluate.py                  # every table
    python benchmarks/evaluate.py --quick          # smaller coloring problems, N ≤ 512 for scaling
    python benchmarks/evaluate.py --no-asdex

0. Scaling (``--only scaling``): the 2-D Brusselator (``stablehlo_sparsity.examples.brusselator``, float64,
   n = 2N²) at N = 64, 256, 512, 1024 — Jacobians in forward and in reverse mode, and the Hessian of the
   least-squares residual ½‖F(x)‖².  Per tool: colors, preparation (detection + coloring), first call
   (tracing + XLA compilation), and the warm evaluation: the best of ``--rounds`` calls interleaved round by
   round with the other tool's and the primal's, so load changes on a shared machine hit every contender
   alike.  Both tools return BCOO (ours as prepared, asdex's callable wrapped in ``jax.jit``).  "× primal"
   is the warm evaluation over one jitted ``F(x)``; for the Hessian, over one jitted gradient (the program
   whose Jacobian the Hessian is, so the floor is again about the number of colors).  "asdex / ours" > 1:
   ours is faster.  The values of both tools are compared (the largest difference, relative to the largest
   entry, is printed when above 1e-12).

1. Coloring: colors (forward = columns / reverse = rows) and CPU time for both directions, on patterns given
   as SciPy matrices (so only the coloring is timed).  "bound" is the lower bound (most nonzeros in a row /
   column).  Times: best of ``--repeat`` warm calls (after one call that loads the compiled kernels).
2. Sparse Jacobian evaluation at n ≈ 1e4: the prepared callable (BCOO output) — ours as returned,
   asdex's ``jacobian`` wrapped in ``jax.jit`` as its documentation recommends — and ``jax.jit(jax.jacfwd)``.
   "first" includes detection, coloring, tracing and XLA compilation; "warm" is the best of 30 calls,
   interleaved with the other contenders' calls round by round.  "× primal" is the
   warm time divided by one jitted evaluation of ``f`` (the floor is about the number of colors).
3. Chained Rosenbrock Hessian at n = 1e4: detection (pattern), colors, first call (detection, coloring,
   compilation) and warm evaluation.

Timings are wall-clock; the machine line says what ran them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from detect import machine  # noqa: E402

import stablehlo_sparsity as ss  # noqa: E402
from stablehlo_sparsity.coloring import color_columns, color_rows, color_star, symmetrize  # noqa: E402
from stablehlo_sparsity.examples import brusselator, laplacian_cubic, make_conv2d  # noqa: E402


def best_of(fn, repeat, clock=time.perf_counter):
    """(result, first call time, best warm time)."""
    t0 = clock()
    out = fn()
    first = clock() - t0
    warm = float("inf")
    for _ in range(repeat):
        t0 = clock()
        out = fn()
        warm = min(warm, clock() - t0)
    return out, first, warm


def race(fns: dict, rounds: int) -> dict:
    """Best warm time of each function, calls interleaved round by round so that load changes on a shared
    machine hit every contender alike."""
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def block(x):
    return jax.tree_util.tree_map(lambda a: a.block_until_ready() if hasattr(a, "block_until_ready") else a, x)


# ----------------------------------------------------------------------------------------------- patterns
def grid(nx, ny, nine=False, periodic=False):
    def t(k):
        a = sp.lil_array(sp.diags_array([np.ones(k)] * 3, offsets=[-1, 0, 1], shape=(k, k), dtype=bool))
        if periodic:
            a[0, k - 1] = a[k - 1, 0] = True
        return sp.csr_array(a)
    if nine:
        return sp.csr_array(sp.kron(t(nx), t(ny)), dtype=bool)
    return sp.csr_array(sp.kron(t(nx), sp.identity(ny)) + sp.kron(sp.identity(nx), t(ny)), dtype=bool)


def coloring_problems(quick):
    yield "1-D Laplacian, n=1e6", grid(1, 1_000_000 if not quick else 100_000)
    yield "2-D 5-point, 1000×1000" if not quick else "2-D 5-point, 300×300", grid(*((1000, 1000) if not quick else (300, 300)))
    yield "2-D 9-point, 300×300", grid(300, 300, nine=True)
    for N in (64, 128):
        yield f"Brusselator 2-D periodic, N={N}", ss.jacobian_sparsity(lambda x, N=N: brusselator(x, N),
                                                                       jnp.ones(2 * N * N)).to_scipy()
    conv, n = make_conv2d()
    yield "conv2d 64×64 → 8 ch, 3×3", ss.jacobian_sparsity(conv, jnp.ones(n)).to_scipy()
    rng = np.random.default_rng(0)
    yield "random 2000×2000, 0.3%", sp.csr_array(rng.random((2000, 2000)) < 0.003)


def asdex_pattern(asdex, p):
    r, c = p.nonzero()
    return asdex.SparsityPattern.from_coo(r.astype(np.int32), c.astype(np.int32), p.shape)


def table_coloring(asdex, quick, repeat):
    print("\n### Coloring (both directions)\n")
    print("Time: CPU seconds (process time) for both directions, best of the warm calls — single-threaded work, "
          "so it is robust to other load on the machine.\n")
    hdr = "| problem | n | nnz | bound fwd/rev | ours fwd/rev | ours time (s) |"
    sep = "|---|---:|---:|---:|---:|---:|"
    if asdex is not None:
        hdr += " asdex fwd/rev | asdex time (s) | asdex / ours |"
        sep += "---:|---:|---:|"
    print(hdr)
    print(sep)
    color_columns(grid(4, 4))  # load the compiled kernels
    for name, p in coloring_problems(quick):
        (cc, rc), _, t = best_of(lambda: (color_columns(p), color_rows(p)), repeat, time.process_time)
        line = (f"| {name} | {p.shape[1]:,} | {p.nnz:,} | {cc.lower_bound}/{rc.lower_bound} | "
                f"{cc.num_colors}/{rc.num_colors} | {t:.3f} |")
        if asdex is not None:
            ap = asdex_pattern(asdex, p)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                (ac, ar), _, ta = best_of(lambda: (asdex.color_cols(ap)[1], asdex.color_rows(ap)[1]), repeat,
                                          time.process_time)
            line += f" {ac}/{ar} | {ta:.3f} | {ta / t:.1f}× |"
        print(line, flush=True)
    table_star(asdex, quick, repeat)


def star_problems(quick):
    yield "tridiagonal, n=1e5", grid(1, 100_000)
    yield "2-D 5-point, 300×300", grid(300, 300)
    yield "2-D 9-point, 100×100", grid(100, 100, nine=True)
    yield "Brusselator N=64 (symmetrized)", symmetrize(ss.jacobian_sparsity(lambda x: brusselator(x, 64),
                                                                           jnp.ones(2 * 64 * 64)).to_scipy())
    rng = np.random.default_rng(0)
    a = sp.csr_array(rng.random((2000, 2000)) < 0.002)
    yield "random symmetric 2000, 0.4%", symmetrize(a)


def table_star(asdex, quick, repeat):
    print("\n### Star coloring (symmetric patterns, Hessians)\n")
    hdr = "| problem | n | nnz | ours colors | ours time (s) |"
    sep = "|---|---:|---:|---:|---:|"
    if asdex is not None:
        hdr += " asdex colors | asdex time (s) |"
        sep += "---:|---:|"
    print(hdr)
    print(sep)
    for name, p in star_problems(quick):
        c, _, t = best_of(lambda: color_star(p), repeat, time.process_time)
        line = f"| {name} | {p.shape[0]:,} | {p.nnz:,} | {c.num_colors} | {t:.3f} |"
        if asdex is not None:
            ap = asdex_pattern(asdex, p)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ac, _, ta = best_of(lambda: asdex.color_symmetric(ap)[1], repeat, time.process_time)
            line += f" {ac} | {ta:.3f} |"
        print(line, flush=True)


# ----------------------------------------------------------------------------------------------- evaluation
def evaluation_problems():
    n = 10_000
    x = jnp.asarray(np.random.default_rng(0).uniform(0.5, 1.5, n))
    yield "1-D Laplacian + cubic, n=1e4", laplacian_cubic, x
    N = 71  # 2·71² = 10,082
    xb = jnp.asarray(np.random.default_rng(1).uniform(0, 1, 2 * N * N))
    yield f"Brusselator 2-D, N={N} (n={2 * N * N:,})", (lambda v: brusselator(v, N)), xb
    conv, nc = make_conv2d(size=100)
    yield f"conv2d 100×100 → 8 ch (n={nc:,})", conv, jnp.asarray(np.random.default_rng(2).standard_normal(nc))


def table_evaluation(asdex, repeat, dense):
    print("\n### Sparse Jacobian evaluation (BCOO), n ≈ 1e4\n")
    hdr = ("| problem | nnz | primal (ms) | ours colors | ours first (s) | ours warm (ms) | ours × primal |")
    sep = "|---|---:|---:|---:|---:|---:|---:|"
    if asdex is not None:
        hdr += " asdex colors | asdex first (s) | asdex warm (ms) | asdex × primal | asdex / ours |"
        sep += "---:|---:|---:|---:|---:|"
    if dense:
        hdr += " jacfwd warm (ms) | jacfwd / ours |"
        sep += "---:|---:|"
    print(hdr)
    print(sep)
    for name, f, x in evaluation_problems():
        fj = jax.jit(f)
        t0 = time.perf_counter()
        jac = ss.sparse_jacobian(f, x)
        out = block(jac(x))
        first = time.perf_counter() - t0
        fns = {"primal": lambda: block(fj(x)), "ours": lambda: block(jac(x))}
        if asdex is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                acol = asdex.jacobian_coloring(f, x)
                afn = jax.jit(asdex.jacobian_from_coloring(f, acol))
                aout = block(afn(x))
                afirst = time.perf_counter() - t0
            fns["asdex"] = lambda: block(afn(x))
        m, n = jac.shape
        do_dense = dense and m * n <= 120_000_000  # a dense m×n float64 Jacobian must fit in memory
        if do_dense:
            dj = jax.jit(jax.jacfwd(f))
            block(dj(x))
        best = race(fns, max(repeat, 30))
        tp, warm = best["primal"], best["ours"]
        line = (f"| {name} | {jac.pattern.nnz:,} | {tp * 1e3:.3f} | {jac.num_colors} ({jac.mode[:3]}) | "
                f"{first:.2f} | {warm * 1e3:.3f} | {warm / tp:.1f} |")
        if asdex is not None:
            awarm = best["asdex"]
            err = float(jnp.max(jnp.abs(aout.todense() - out.todense())))
            line += (f" {acol.num_colors} | {afirst:.2f} | {awarm * 1e3:.3f} | {awarm / tp:.1f} | "
                     f"{awarm / warm:.2f}× |")
            if err > 1e-8 * float(jnp.max(jnp.abs(out.data))):
                line += f" (values differ by {err:.2g})"
        if do_dense:
            _, _, dwarm = best_of(lambda: block(dj(x)), 2)
            del dj
            line += f" {dwarm * 1e3:.1f} | {dwarm / warm:.0f}× |"
        elif dense:
            line += f" — ({m * n * 8 / 1e9:.1f} GB) | |"
        print(line, flush=True)


# ----------------------------------------------------------------------------------------------- scaling
def least_squares(N):
    """½‖F(x)‖² of the N×N Brusselator residual: its Hessian couples each point with its stencil's stencil."""
    return lambda v: 0.5 * jnp.sum(brusselator(v, N) ** 2)


def scaling_row(asdex, kind: str, N: int, rounds: int, strategy: str, asdex_hessian_max_n: int = 512):
    """One row of the scaling table (a Markdown line) for ``kind`` in forward / reverse / hessian."""
    import gc

    n = 2 * N * N
    x = jnp.asarray(np.random.default_rng(N).uniform(0, 1, n))
    if kind == "hessian":
        f = least_squares(N)
        ref = jax.jit(jax.grad(f))
    else:
        f = (lambda v, N=N: brusselator(v, N))
        ref = jax.jit(f)
    block(ref(x))
    t0 = time.perf_counter()
    if kind == "hessian":
        ours = ss.sparse_hessian(f, x, strategy=strategy)
    else:
        ours = ss.sparse_jacobian(f, x, mode=kind, strategy=strategy)
    prep = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = block(ours(x))
    first = time.perf_counter() - t0
    fns = {"ref": lambda f=ref: block(f(x)), "ours": lambda f=ours: block(f(x))}
    line = f"| {N} | {n:,} | {ours.pattern.nnz:,} | {ours.num_colors} ({ours.strategy}) | {prep:.2f} | {first:.2f} |"
    aout = None
    skip_asdex = asdex is not None and kind == "hessian" and N > asdex_hessian_max_n
    if skip_asdex:
        # asdex's Hessian detection (Python sets per element) raised MemoryError at N = 1024 under a 14 GB
        # address-space cap on this 23 GB machine, and an uncapped run was killed by the kernel
        asdex = None
    if asdex is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            if kind == "hessian":
                acol = asdex.hessian_coloring(f, x)
                afn = jax.jit(asdex.hessian_from_coloring(f, acol))
            else:
                acol = asdex.jacobian_coloring(f, x, mode="fwd" if kind == "forward" else "rev")
                afn = jax.jit(asdex.jacobian_from_coloring(f, acol))
            aprep = time.perf_counter() - t0
            t0 = time.perf_counter()
            aout = block(afn(x))
            afirst = time.perf_counter() - t0
        fns["asdex"] = lambda: block(afn(x))
    best = race(fns, rounds)
    tp, warm = best["ref"], best["ours"]
    line += f" {warm * 1e3:.2f} |"
    if asdex is not None:
        awarm = best["asdex"]
        line += f" {acol.num_colors} | {aprep:.2f} | {afirst:.2f} | {awarm * 1e3:.2f} |"
    elif skip_asdex:
        line += " — | — | — | — |"
    line += f" {tp * 1e3:.3f} | {warm / tp:.1f} |"
    if skip_asdex:
        line += f" (asdex skipped above N = {asdex_hessian_max_n}: its detection runs out of memory) |"
    if asdex is not None:
        line += f" {awarm / warm:.2f}× |"
        scale = float(jnp.max(jnp.abs(out.data)))
        err = float(jnp.max(jnp.abs(aout.todense() - out.todense()))) if n <= 20_000 else float(
            np.max(np.abs(np.asarray(_sorted_values(aout)) - np.asarray(_sorted_values(out)))))
        if err > 1e-12 * max(scale, 1e-300):
            line += f" (values differ by {err / scale:.1g} relative)"
        del afn, aout
    del ours, out, ref
    gc.collect()
    return line


def _sorted_values(m):
    """The values of a BCOO matrix in row-major order of its indices (to compare two tools' outputs without
    densifying a large matrix)."""
    idx = np.asarray(m.indices)
    order = np.lexsort((idx[:, 1], idx[:, 0]))
    return np.asarray(m.data)[order]


def table_scaling(asdex, sizes, kinds, rounds, strategy, asdex_hessian_max_n=512):
    names = {"forward": "Jacobian, forward mode (JVPs)", "reverse": "Jacobian, reverse mode (VJPs)",
             "hessian": "Hessian of ½‖F(x)‖² (forward-over-reverse HVPs)"}
    for kind in kinds:
        ref = "gradient" if kind == "hessian" else "primal"
        print(f"\n### 2-D Brusselator, {names[kind]}\n")
        hdr = "| N | n | nnz | ours colors (strategy) | ours prep (s) | ours first call (s) | ours eval (ms) |"
        sep = "|---:|---:|---:|---:|---:|---:|---:|"
        if asdex is not None:
            hdr += " asdex colors | asdex prep (s) | asdex first call (s) | asdex eval (ms) |"
            sep += "---:|---:|---:|---:|"
        hdr += f" {ref} (ms) | ours × {ref} |"
        sep += "---:|---:|"
        if asdex is not None:
            hdr += " asdex / ours |"
            sep += "---:|"
        print(hdr)
        print(sep, flush=True)
        for N in sizes:
            print(scaling_row(asdex, kind, N, rounds, strategy, asdex_hessian_max_n), flush=True)


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def table_hessian(asdex, repeat):
    print("\n### Chained Rosenbrock Hessian, n = 1e4\n")
    n = 10_000
    x = jnp.asarray(np.random.default_rng(3).uniform(-1, 1, n))
    fj = jax.jit(rosenbrock)
    _, _, tp = best_of(lambda: block(fj(x)), 10)
    print("| tool | detection first (s) | detection warm (s) | nnz | colors | evaluation first (s) | "
          "evaluation warm (ms) | × primal |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    pat, dfirst, dwarm = best_of(lambda: ss.hessian_sparsity(lambda v: rosenbrock(v), x), repeat)
    t0 = time.perf_counter()
    hess = ss.sparse_hessian(rosenbrock, x)
    out = block(hess(x))
    first = time.perf_counter() - t0
    fns = {"primal": lambda: block(fj(x)), "ours": lambda: block(hess(x))}
    if asdex is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            apat, adfirst, adwarm = best_of(lambda: asdex.hessian_sparsity(lambda v: rosenbrock(v), x), repeat)
            t0 = time.perf_counter()
            acol = asdex.hessian_coloring(rosenbrock, x)
            afn = jax.jit(asdex.hessian_from_coloring(rosenbrock, acol))
            aout = block(afn(x))
            afirst = time.perf_counter() - t0
        fns["asdex"] = lambda: block(afn(x))
    best = race(fns, max(repeat, 30))
    tp, warm = best["primal"], best["ours"]
    print(f"| ours | {dfirst:.3f} | {dwarm:.3f} | {pat.nnz:,} | {hess.num_colors} | {first:.2f} | "
          f"{warm * 1e3:.3f} | {warm / tp:.1f} |")
    if asdex is not None:
        awarm = best["asdex"]
        err = float(jnp.max(jnp.abs(aout.todense() - out.todense())))
        print(f"| asdex | {adfirst:.3f} | {adwarm:.3f} | {apat.nnz:,} | {acol.num_colors} | {afirst:.2f} | "
              f"{awarm * 1e3:.3f} | {awarm / tp:.1f} |")
        print(f"\nasdex / ours: detection {adwarm / dwarm:.0f}×, evaluation {awarm / warm:.2f}×; "
              f"max |H_ours − H_asdex| = {err:.2g}; primal {tp * 1e3:.3f} ms")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-asdex", action="store_true")
    ap.add_argument("--no-dense", action="store_true", help="skip dense jax.jacfwd")
    ap.add_argument("--only", choices=["scaling", "coloring", "evaluation", "hessian"])
    ap.add_argument("--sizes", default=None, help="Brusselator N for the scaling table (default 64,256,512,1024)")
    ap.add_argument("--kinds", default="forward,reverse,hessian", help="scaling table: forward,reverse,hessian")
    ap.add_argument("--rounds", type=int, default=20, help="scaling table: interleaved warm rounds")
    ap.add_argument("--strategy", default="auto", help="our evaluation strategy (auto, vmap, unrolled, loop)")
    ap.add_argument("--asdex-hessian-max-n", type=int, default=512,
                    help="largest N for asdex's Hessian (its detection needs > 14 GB at N = 1024)")
    args = ap.parse_args(argv)
    asdex = None
    if not args.no_asdex:
        try:
            import asdex
        except ImportError:
            print("(asdex not installed: peer columns omitted)", file=sys.stderr)
    jax.config.update("jax_enable_x64", True)
    print(f"Coloring / evaluation benchmark — {time.strftime('%Y-%m-%d')} — {machine()}; "
          f"load average {os.getloadavg()[0]:.1f}; float64")
    if args.only in (None, "scaling"):
        sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes else
                 [64, 256, 512] if args.quick else [64, 256, 512, 1024])
        table_scaling(asdex, sizes, args.kinds.split(","), args.rounds, args.strategy, args.asdex_hessian_max_n)
        print(f"\n(load average at the end: {os.getloadavg()[0]:.1f})")
    if args.only in (None, "coloring"):
        table_coloring(asdex, args.quick, args.repeat)
    if args.only in (None, "evaluation"):
        table_evaluation(asdex, args.repeat, not args.no_dense)
    if args.only in (None, "hessian"):
        table_hessian(asdex, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())

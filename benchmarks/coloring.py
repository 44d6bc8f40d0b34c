"""Coloring benchmark: products per evaluation and coloring time, ours vs asdex, in one process.

    python benchmarks/coloring.py              # all tables
    python benchmarks/coloring.py --quick      # smaller problems (n ≤ 1e5), fewer repeats
    python benchmarks/coloring.py --no-asdex
    python benchmarks/coloring.py --only jacobian|hessian|evaluation

Three tables:

1. Jacobian colorings: forward / reverse colors (the lower bounds: densest row / column), our
   bidirectional coloring (JVPs + VJPs) and what ``mode="auto"`` picks, next to asdex's column and row
   colorings.  Times are CPU seconds (process time: single-threaded work, robust to other load), best of
   ``--repeat`` warm calls; ours "fwd+rev" colors both directions (as asdex's column), "auto" is
   ``color_fewest_products`` (what ``sparse_jacobian(mode="auto")`` runs).
2. Hessian colorings: star (direct recovery) against acyclic (substitution) colors, the longest
   substitution chain, times, and asdex's star coloring (with its post-processing, which drops colors
   never needed).
3. Evaluation: what fewer products buy — warm time of the prepared sparse Jacobian / Hessian (ours in each
   mode, asdex's ``jacobian_from_coloring`` / ``hessian_from_coloring`` under ``jax.jit``), calls
   interleaved round by round; values checked against each other.

Patterns for tables 1–2 are SciPy matrices, so only the coloring is timed.
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
from evaluate import best_of, block, grid  # noqa: E402

import stablehlo_sparsity as ss  # noqa: E402
from stablehlo_sparsity.coloring import (DecompressionPlan, color_acyclic, color_bidirectional,  # noqa: E402
                                         color_columns, color_rows, color_star, symmetrize)
from stablehlo_sparsity.coloring.bicoloring import color_fewest_products  # noqa: E402
from stablehlo_sparsity.examples import brusselator, make_conv2d  # noqa: E402


# ----------------------------------------------------------------------------------------------- patterns
def band(n, w):
    offs = list(range(-w, w + 1))
    return sp.csr_array(sp.diags_array([np.ones(n)] * len(offs), offsets=offs, shape=(n, n), dtype=bool))


def arrowhead(n):
    a = sp.lil_array((n, n), dtype=bool)
    a[0, :] = a[:, 0] = True
    a.setdiag(True)
    return sp.csr_array(a)


def bordered_blocks(nblocks, size, border):
    """Dense ``size × size`` diagonal blocks bordered by ``border`` dense rows and columns (KKT-like)."""
    a = sp.lil_array(sp.block_diag([np.ones((size, size))] * nblocks).astype(bool))
    a[:border, :] = True
    a[:, :border] = True
    return sp.csr_array(a)


def jacobian_problems(quick):
    big = not quick
    yield ("1-D Laplacian, n=1e6" if big else "1-D Laplacian, n=1e5"), grid(1, 1_000_000 if big else 100_000)
    yield ("2-D 5-point, 1000×1000" if big else "2-D 5-point, 300×300"), grid(*((1000, 1000) if big else (300, 300)))
    yield "2-D 9-point, 300×300", grid(300, 300, nine=True)
    for N in (64, 128):
        yield f"Brusselator 2-D periodic, N={N}", ss.jacobian_sparsity(lambda x, N=N: brusselator(x, N),
                                                                       jnp.ones(2 * N * N)).to_scipy()
    conv, n = make_conv2d()
    yield "conv2d 64×64 → 8 ch, 3×3", ss.jacobian_sparsity(conv, jnp.ones(n)).to_scipy()
    rng = np.random.default_rng(0)
    yield "random 2000×2000, 0.3%", sp.csr_array(rng.random((2000, 2000)) < 0.003)
    yield "arrowhead, n=2000", arrowhead(2000)
    yield "bordered block-diagonal (2500 4×4 blocks, 4 dense rows/cols)", bordered_blocks(2500, 4, 4)


def hessian_problems(quick):
    big = not quick
    yield "tridiagonal, n=1e5", band(100_000, 1)
    yield "banded (half-bandwidth 2), n=1e5", band(100_000, 2)
    if big:
        yield "banded (half-bandwidth 2), n=1e6", band(1_000_000, 2)
    yield "banded (half-bandwidth 5), n=1e5", band(100_000, 5)
    yield "2-D 5-point, 316×316", grid(316, 316)
    if big:
        yield "2-D 5-point, 1000×1000", grid(1000, 1000)
    yield "2-D 9-point, 316×316", grid(316, 316, nine=True)
    yield "Brusselator N=64 (symmetrized)", symmetrize(ss.jacobian_sparsity(lambda x: brusselator(x, 64),
                                                                           jnp.ones(2 * 64 * 64)).to_scipy())
    rng = np.random.default_rng(0)
    yield "random symmetric 2000, 0.4%", symmetrize(sp.csr_array(rng.random((2000, 2000)) < 0.002))
    yield "arrowhead, n=2000", arrowhead(2000)


def asdex_pattern(asdex, p):
    r, c = p.nonzero()
    return asdex.SparsityPattern.from_coo(r.astype(np.int32), c.astype(np.int32), p.shape)


def cpu_best(fn, repeat):
    return best_of(fn, repeat, time.process_time)


# ----------------------------------------------------------------------------------------------- tables
def table_jacobian(asdex, quick, repeat):
    print("\n### Jacobian coloring: products per evaluation\n")
    hdr = ("| problem | m × n | nnz | bound fwd/rev | ours fwd/rev | ours bidirectional (JVP+VJP) | ours auto | "
           "ours fwd+rev (s) | ours auto (s) |")
    sep = "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    if asdex is not None:
        hdr += " asdex fwd/rev | asdex fwd+rev (s) | asdex best / ours auto |"
        sep += "---:|---:|---:|"
    print(hdr)
    print(sep)
    color_bidirectional(grid(4, 4))  # load the compiled kernels
    for name, p in jacobian_problems(quick):
        (cc, rc), _, t = cpu_best(lambda: (color_columns(p), color_rows(p)), repeat)
        auto, _, ta = cpu_best(lambda: color_fewest_products(p), repeat)
        bi = color_bidirectional(p)
        assert ss.check_coloring(p, bi) and ss.check_coloring(p, auto)
        m, n = p.shape
        kind = {"column": "fwd", "row": "rev"}.get(auto.kind, "bidir")
        line = (f"| {name} | {m:,} × {n:,} | {p.nnz:,} | {cc.lower_bound}/{rc.lower_bound} | "
                f"{cc.num_colors}/{rc.num_colors} | {bi.num_colors} ({bi.num_column_colors}+{bi.num_row_colors}) | "
                f"**{auto.num_colors}** ({kind}) | {t:.3f} | {ta:.3f} |")
        if asdex is not None:
            ap = asdex_pattern(asdex, p)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                (ac, ar), _, tas = cpu_best(lambda: (asdex.color_cols(ap)[1], asdex.color_rows(ap)[1]), repeat)
            line += f" {ac}/{ar} | {tas:.3f} | {min(ac, ar) / max(auto.num_colors, 1):.1f}× |"
        print(line, flush=True)


def table_hessian(asdex, quick, repeat):
    print("\n### Hessian coloring: star (direct) vs acyclic (substitution)\n")
    hdr = ("| problem | n | nnz | ours star | ours acyclic | longest chain | ours star (s) | ours acyclic (s) | "
           "plan (s) |")
    sep = "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    if asdex is not None:
        hdr += " asdex star | asdex (s) |"
        sep += "---:|---:|"
    print(hdr)
    print(sep)
    color_acyclic(grid(4, 4))
    DecompressionPlan(grid(4, 4), color_acyclic(grid(4, 4)))
    for name, p in hessian_problems(quick):
        star, _, ts = cpu_best(lambda: color_star(p), repeat)
        acyc, _, tac = cpu_best(lambda: color_acyclic(p), repeat)
        plan, _, tp = cpu_best(lambda: DecompressionPlan(p, acyc), 1)
        assert acyc.num_colors <= star.num_colors
        better = f"**{acyc.num_colors}**" if acyc.num_colors < star.num_colors else f"{acyc.num_colors}"
        line = (f"| {name} | {p.shape[0]:,} | {p.nnz:,} | {star.num_colors} | {better} | {plan.longest_chain:,} | "
                f"{ts:.3f} | {tac:.3f} | {tp:.3f} |")
        if asdex is not None:
            ap = asdex_pattern(asdex, p)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ak, _, ta = cpu_best(lambda: min(asdex.color_symmetric(ap, postprocess=True)[1],
                                                 asdex.color_symmetric(ap)[1]), repeat)
            line += f" {ak} | {ta:.3f} |"
        print(line, flush=True)


# ----------------------------------------------------------------------------------------------- evaluation
def arrow_fn(x):
    return jnp.concatenate([jnp.sum(jnp.sin(x) * x[::-1])[None], jnp.cos(x[1:]) * x[0] + x[1:] ** 3])


def banded_energy(x):
    return jnp.sum(jnp.sin(x[2:] * x[:-2])) + jnp.sum(x[1:] ** 2 * x[:-1]) + jnp.sum(x ** 4)


def grid_energy(x, N):
    u = x.reshape(N, N)
    return jnp.sum(jnp.cos(u[1:] - u[:-1])) + jnp.sum(jnp.cos(u[:, 1:] - u[:, :-1])) + jnp.sum(u ** 4)


#: The evaluation clock: wall time (``perf_counter``), or with ``--clock cpu`` the process CPU time — robust
#: on a shared machine when XLA runs single-threaded (``XLA_FLAGS`` as printed in the header).
CLOCK = [time.perf_counter]


def race_clock(fns: dict, rounds: int, clock) -> dict:
    """Best time of each function, calls interleaved round by round (as ``evaluate.race``), on ``clock``."""
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t0 = clock()
            fn()
            best[k] = min(best[k], clock() - t0)
    return best


def table_evaluation(asdex, quick, repeat):
    what = "CPU time, XLA single-threaded" if CLOCK[0] is time.process_time else "wall time"
    print(f"\n### Evaluation: what fewer products buy (float64, warm: best of 50 interleaved calls, {what})\n")
    hdr = "| problem | ours mode | ours products | ours warm (ms) |"
    sep = "|---|---|---:|---:|"
    if asdex is not None:
        hdr += " asdex products | asdex warm (ms) | asdex / ours |"
        sep += "---:|---:|---:|"
    print(hdr)
    print(sep)
    rng = np.random.default_rng(0)
    n_h = 10_000 if quick else 100_000
    N = 100 if quick else 316
    cases = [
        ("arrowhead Jacobian, n=2000", "jacobian", arrow_fn, 2000, ["forward", "auto"]),
        (f"banded Hessian (half-bandwidth 2), n={n_h:,}", "hessian", banded_energy, n_h, ["direct", "substitution"]),
        (f"2-D grid Hessian, {N}×{N}", "hessian", lambda x: grid_energy(x, N), N * N, ["direct", "substitution"]),
    ]
    for name, what, f, n, modes in cases:
        x = jnp.asarray(rng.uniform(-1, 1, n))
        preps = {}
        for mode in modes:
            if what == "jacobian":
                preps[mode] = ss.sparse_jacobian(f, x, mode=mode, output="values")
            else:
                preps[mode] = ss.sparse_hessian(f, x, mode=mode, output="values")
        fns = {mode: (lambda p=p: block(p(x))) for mode, p in preps.items()}
        outs = {mode: np.asarray(fn()) for mode, fn in fns.items()}
        ref = outs[modes[0]]
        for mode in modes[1:]:
            err = np.abs(outs[mode] - ref).max() / max(np.abs(ref).max(), 1e-300)
            assert err < 1e-10, (name, mode, err)
        if asdex is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if what == "jacobian":
                    acol = asdex.jacobian_coloring(f, x)
                    afn = jax.jit(asdex.jacobian_from_coloring(f, acol))
                else:
                    acol = asdex.hessian_coloring(f, x)
                    afn = jax.jit(asdex.hessian_from_coloring(f, acol))
                block(afn(x))
            fns["asdex"] = lambda: block(afn(x))
        best = race_clock(fns, max(repeat, 50), CLOCK[0])
        for mode in modes:
            p = preps[mode]
            line = f"| {name} | {mode} → {p.mode} | {p.num_colors} | {best[mode] * 1e3:.3f} |"
            if asdex is not None:
                line += f" {acol.num_colors} | {best['asdex'] * 1e3:.3f} | {best['asdex'] / best[mode]:.2f}× |"
            print(line, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-asdex", action="store_true")
    ap.add_argument("--only", choices=["jacobian", "hessian", "evaluation"])
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="evaluation timing; 'cpu' = process time, meant for XLA_FLAGS='--xla_cpu_multi_thread_eigen="
                         "false intra_op_parallelism_threads=1' on a shared machine")
    args = ap.parse_args(argv)
    if args.clock == "cpu":
        CLOCK[0] = time.process_time
    asdex = None
    if not args.no_asdex:
        try:
            import asdex
        except ImportError:
            print("(asdex not installed: peer columns omitted)", file=sys.stderr)
    jax.config.update("jax_enable_x64", True)
    flags = f"; XLA_FLAGS={os.environ['XLA_FLAGS']!r}" if os.environ.get("XLA_FLAGS") else ""
    print(f"Coloring benchmark — {time.strftime('%Y-%m-%d')} — {machine()}; "
          f"load average {os.getloadavg()[0]:.1f}{flags}")
    if args.only in (None, "jacobian"):
        table_jacobian(asdex, args.quick, args.repeat)
    if args.only in (None, "hessian"):
        table_hessian(asdex, args.quick, args.repeat)
    if args.only in (None, "evaluation"):
        table_evaluation(asdex, args.quick, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())

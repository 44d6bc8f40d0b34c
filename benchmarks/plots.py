"""The plots of the docs' benchmark page, measured: detection time against n, and colors against the bound.

    python benchmarks/plots.py                       # measures, writes docs/images/*.png and plots.json
    python benchmarks/plots.py --quick --out /tmp/p  # smaller sizes, somewhere else
    python benchmarks/plots.py --no-asdex

Two figures (matplotlib, Agg backend, so no display is needed):

* ``detection_time.png`` — the 1-D Laplacian + cubic (``stablehlo_sparsity.examples.laplacian_cubic``, a
  tridiagonal Jacobian) at growing ``n``: our ``jacobian_sparsity``, asdex's ``jacobian_sparsity``, and the
  dense way (``jax.jit(jax.jacfwd(f))(x) != 0``: every column of the Jacobian, then its nonzeros; the
  ``n × n`` matrix limits it to small ``n``).  Every call wraps ``f`` in a fresh lambda, so each one traces,
  lowers (and for the dense way compiles) again, as for a new user function.  Time is the best of
  ``--repeat`` calls after the first (ours: at least 5; asdex above ``n = 10⁵``: its first call only, as in
  ``detect.py``).
* ``colors.png`` — products per evaluation against the lower bound (the most nonzeros in one row: those
  columns conflict pairwise), for the Jacobian problems of ``benchmarks/coloring.py --quick``: our column
  coloring, asdex's, and what ``sparse_jacobian(mode="auto")`` needs (JVPs and VJPs mixed where that wins:
  the one-direction bound does not hold for it); and for its Hessian problems our star and acyclic colorings
  and asdex's star coloring (no bound there: the densest row does not bound a symmetric coloring — an
  arrowhead's star coloring has 2 colors).

``plots.json`` keeps every number plotted, with the date, the machine and the versions; the docs page quotes
them.  A full run takes under a minute on a 2-core machine (most of it asdex at n = 10⁶).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from coloring import asdex_pattern, hessian_problems, jacobian_problems  # noqa: E402
from detect import _agree, machine  # noqa: E402
from evaluate import grid  # noqa: E402

import stablehlo_sparsity as ss  # noqa: E402
from stablehlo_sparsity.coloring import color_acyclic, color_columns, color_star, lower_bound  # noqa: E402
from stablehlo_sparsity.coloring.bicoloring import color_fewest_products  # noqa: E402
from stablehlo_sparsity.examples import laplacian_cubic  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(os.path.dirname(HERE), "docs", "images")


def timed(fn, repeat):
    """``(result, best time)`` over ``1 + repeat`` calls; ``repeat = 0`` times the first call only."""
    t0 = time.perf_counter()
    out = fn()
    best = time.perf_counter() - t0
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def dense_pattern(f, x):
    """The dense way: the whole Jacobian by ``jax.jacfwd``, then its nonzeros (a pattern at ``x`` only)."""
    return np.asarray(jax.jit(jax.jacfwd(lambda v: f(v)))(x)) != 0


def measure_detection(sizes, dense_max, asdex_max, asdex, repeat):
    rows = []
    for n in sizes:
        x = jnp.linspace(0.5, 1.5, n)
        # Ours is cheap: more repeats make its curve steadier on a shared machine.
        pat, ours = timed(lambda: ss.jacobian_sparsity(lambda v: laplacian_cubic(v), x), max(repeat, 5))
        row = {"n": n, "nnz": pat.nnz, "ours_s": ours}
        if asdex is not None and n <= asdex_max:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                apat, t = timed(lambda: asdex.jacobian_sparsity(lambda v: laplacian_cubic(v), x),
                                repeat if n <= 100_000 else 0)
            row["asdex_s"] = t
            row["asdex_same"] = _agree(pat, apat) == "yes"
        if n <= dense_max:
            dense, t = timed(lambda: dense_pattern(laplacian_cubic, x), repeat)
            row["dense_jacfwd_s"] = t
            row["dense_same"] = bool((pat.to_scipy().toarray() == dense).all())
        rows.append(row)
        print(f"  n={n:,}: " + ", ".join(f"{k} {v:.4g}" for k, v in row.items() if k.endswith("_s")),
              file=sys.stderr, flush=True)
    return rows


def measure_colors(asdex):
    jac, hes = [], []
    for name, p in jacobian_problems(True):
        cols = color_columns(p)
        auto = color_fewest_products(p)
        row = {"problem": name, "bound": lower_bound(p, "column"), "ours_column": cols.num_colors,
               "ours_auto": auto.num_colors, "ours_auto_kind": str(auto.kind)}
        if asdex is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                row["asdex_column"] = int(asdex.color_cols(asdex_pattern(asdex, p))[1])
        jac.append(row)
        print(f"  {name}: {row}", file=sys.stderr, flush=True)
    for name, p in hessian_problems(True):
        row = {"problem": name, "ours_star": color_star(p).num_colors,
               "ours_acyclic": color_acyclic(p).num_colors}
        if asdex is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ap = asdex_pattern(asdex, p)
                row["asdex_star"] = int(min(asdex.color_symmetric(ap, postprocess=True)[1],
                                            asdex.color_symmetric(ap)[1]))
        hes.append(row)
        print(f"  {name}: {row}", file=sys.stderr, flush=True)
    return jac, hes


def plot_detection(rows, stamp, path):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.4), dpi=110)
    for key, label, style in (("ours_s", "stablehlo_sparsity", "o-"), ("asdex_s", "asdex", "s--"),
                              ("dense_jacfwd_s", "dense jax.jacfwd, then != 0", "^:")):
        pts = [(r["n"], r[key]) for r in rows if key in r]
        if pts:
            ax.loglog(*zip(*pts), style, label=label)
    ax.set_xlabel("n (unknowns); the Jacobian has 3n − 2 nonzeros")
    ax.set_ylabel("detection time (s), best warm call")
    ax.set_title("Detection time: 1-D Laplacian + cubic")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.text(0.01, 0.01, stamp, fontsize=6.5, color="0.35")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def plot_colors(jac, hes, stamp, path):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(8, 8.4), dpi=110)
    panels = (
        (axes[0], jac, "Jacobians: products per evaluation",
         (("bound", "lower bound (densest row)"), ("ours_column", "ours, column coloring"),
          ("asdex_column", "asdex, column coloring"), ("ours_auto", "ours, mode=\"auto\" (JVPs + VJPs)"))),
        (axes[1], hes, "Hessians: Hessian-vector products per evaluation",
         (("ours_star", "ours, star (direct)"),
          ("asdex_star", "asdex, star"), ("ours_acyclic", "ours, acyclic (substitution)"))),
    )
    for (ax, rows, title, series), log in zip(panels, (True, False)):
        series = [s for s in series if any(s[0] in r for r in rows)]
        width = 0.8 / len(series)
        x = np.arange(len(rows))
        for k, (key, label) in enumerate(series):
            vals = [r.get(key, np.nan) for r in rows]
            bars = ax.bar(x + (k - (len(series) - 1) / 2) * width, vals, width, label=label)
            for bar, v in zip(bars, vals):
                if v == v:  # not NaN
                    ax.annotate(f"{v:g}", (bar.get_x() + bar.get_width() / 2, bar.get_height()), fontsize=6,
                                ha="center", va="bottom", xytext=(0, 1), textcoords="offset points",
                                rotation=90 if v >= 100 else 0)
        if log:
            ax.set_yscale("log")
            ax.set_ylim(top=ax.get_ylim()[1] * 4)
        ax.set_xticks(x, [_short(r["problem"]) for r in rows], rotation=30, ha="right", fontsize=7)
        ax.set_title(title)
        ax.set_ylabel("colors (log scale)" if log else "colors")
        ax.legend(fontsize=7)
        ax.grid(True, axis="y", which="both", alpha=0.3)
    fig.text(0.01, 0.005, stamp, fontsize=6.5, color="0.35")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def _short(name: str) -> str:
    return name.replace("bordered block-diagonal (2500 4×4 blocks, 4 dense rows/cols)", "bordered block-diagonal") \
        .replace(" (symmetrized)", "").replace("Brusselator 2-D periodic", "Brusselator").replace("half-bandwidth", "hbw")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT, help="directory for the PNGs and plots.json (default docs/images)")
    ap.add_argument("--quick", action="store_true", help="sizes up to 10^5 only")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-asdex", action="store_true")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    asdex = None
    if not args.no_asdex:
        try:
            import asdex
        except ImportError:
            print("(asdex not installed: its series are left out)", file=sys.stderr)
    sizes = [1_000, 3_000, 10_000, 30_000, 100_000] + ([] if args.quick else [300_000, 1_000_000])
    warm = jnp.ones(10)
    ss.jacobian_sparsity(laplacian_cubic, warm)  # imports and first-use costs out of the first point
    dense_pattern(laplacian_cubic, warm)
    color_columns(grid(4, 4))  # load the compiled coloring kernels
    t0 = time.perf_counter()
    detection = measure_detection(sizes, dense_max=10_000, asdex_max=1_000_000, asdex=asdex, repeat=args.repeat)
    jac, hes = measure_colors(asdex)
    date = time.strftime("%Y-%m-%d")
    where = machine()
    load = os.getloadavg()[0]
    stamp = f"{date}; {where}; load average {load:.1f}; python benchmarks/plots.py"
    os.makedirs(args.out, exist_ok=True)
    plot_detection(detection, stamp, os.path.join(args.out, "detection_time.png"))
    plot_colors(jac, hes, stamp, os.path.join(args.out, "colors.png"))
    with open(os.path.join(args.out, "plots.json"), "w") as fh:
        json.dump({"date": date, "machine": where, "load_average": round(load, 1),
                   "command": "python benchmarks/plots.py" + (" --quick" if args.quick else ""),
                   "stablehlo_sparsity": ss.__version__, "detection": detection,
                   "jacobian_colors": jac, "hessian_colors": hes}, fh, indent=1)
        fh.write("\n")
    print(f"wrote detection_time.png, colors.png and plots.json to {args.out} "
          f"({time.perf_counter() - t0:.0f} s of measurement)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

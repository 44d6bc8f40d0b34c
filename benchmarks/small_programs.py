"""Small-program benchmark: ours against `jax.jit(f).lower` alone (the floor under any StableHLO-level tool) and
asdex, on a problem set of small residuals and objectives (n = 2 … 100), in one run.

    python benchmarks/small_programs.py                    # every problem, Jacobians and Hessians
    python benchmarks/small_programs.py --quick            # a handful of problems (smoke run), with a soundness check
    python benchmarks/small_programs.py --kind hessian     # Hessians only
    python benchmarks/small_programs.py --only written     # the problems whose name starts with this
    python benchmarks/small_programs.py --no-asdex --repeat 5

Problems come in two styles of the same functions at the same n:

- "written" — CUTEst style, as SIF translations are: Python loops over indices building scalar expressions term by
  term (``x[i]`` indexing, scalar arithmetic, ``jnp.stack`` of the residuals), 1,000–30,000 StableHLO ops;
- "vec" — the same function as ``jnp`` array expressions (tens of ops).

Jacobian problems are residuals (``stablehlo_sparsity.jacobian_sparsity``), Hessian problems objectives
(``stablehlo_sparsity.hessian_sparsity``).  For each problem: "lower" is ``jax.jit(f).lower(x)`` alone, "ours" the
detection (which pays that lowering first), "asdex" the jaxpr-level peer (``asdex.jacobian_sparsity`` /
``asdex.hessian_sparsity``); every call wraps f in a fresh lambda so no trace cache is reused, and every time is
the best of ``--repeat`` calls (wall seconds; the lowering and ours alternate, call by call, so that both see the
machine in the same states).  "ours / lower" is the ratio of the two; "µs / op" is (ours − lower) / ops, the
cost per StableHLO op beyond lowering.  Our own lowering is not JAX's default one: it keeps one source frame per
location, and a short program whose equations are mostly distinct (every "vec" problem here) is lowered without
JAX's per-equation lowering cache (``stablehlo_sparsity._compat.uncached_lowering``: the same module, locations
included, in about two thirds of the time on jax 0.11 and 0.12).  So "our lowering" is timed inside our call as well — from its start to the end
of our ``jax.stages.Traced.lower`` (:class:`LoweringClock`): tracing, the jaxpr scans before lowering (the
custom-rule check, the Hessian method's cost model) and the lowering — and "ours / our lowering" is what the
analysis adds to it.  "analysis µs / op" is the rest of our call, from the end of our lowering to its end, per op
of JAX's lowering: the analysis alone.  "ops" counts the operations of the ``stablehlo`` dialect in the lowered
module, found by walking every region and block of the module (``func.func``, ``func.return`` and ``func.call``
are not counted; the ops inside called functions are).

"same" compares our pattern with asdex's where both run.  With ``--quick``, "sound" compares it with the union of
the nonzeros of ``jax.jacfwd(f)`` / ``jax.hessian(f)`` at 2 random points: "=" (equal), "⊇ +k" (we report k
entries that vanish at both points: allowed) or "MISSING k" (a numerical nonzero we do not report: a bug).
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

import stablehlo_sparsity as ss


# ---------------------------------------------------------------------------------------------- written out
# Each builder takes n and returns f; the "written" ones index scalars and build every term in a Python loop.
def _consts(n, lo=0.5, hi=2.0):
    return np.random.default_rng(n).uniform(lo, hi, n)


def w_rosenbrock_res(n):
    """Chained Rosenbrock residuals: 10(x_{i+1} − x_i²), 1 − x_i."""
    def f(x):
        r = []
        for i in range(n - 1):
            r.append(10.0 * (x[i + 1] - x[i] * x[i]))
            r.append(1.0 - x[i])
        return jnp.stack(r)
    return f


def w_broyden_tridiagonal(n):
    """Broyden tridiagonal: (3 − 2x_i)x_i − x_{i−1} − 2x_{i+1} + 1."""
    def f(x):
        r = []
        for i in range(n):
            t = (3.0 - 2.0 * x[i]) * x[i] + 1.0
            if i > 0:
                t = t - x[i - 1]
            if i < n - 1:
                t = t - 2.0 * x[i + 1]
            r.append(t)
        return jnp.stack(r)
    return f


def w_broyden_banded(n):
    """Broyden banded: x_i(2 + 5x_i²) + 1 − Σ_{j ∈ J_i} x_j(1 + x_j), J_i = {i−5 … i+1} \\ {i}."""
    def f(x):
        r = []
        for i in range(n):
            t = x[i] * (2.0 + 5.0 * x[i] * x[i]) + 1.0
            for j in range(max(0, i - 5), min(n, i + 2)):
                if j != i:
                    t = t - x[j] * (1.0 + x[j])
            r.append(t)
        return jnp.stack(r)
    return f


def w_bvp(n):
    """Discrete boundary value problem (Moré–Garbow–Hillstrom): 2x_i − x_{i−1} − x_{i+1} + h²(x_i + t_i + 1)³/2."""
    h = 1.0 / (n + 1)

    def f(x):
        r = []
        for i in range(n):
            t = 2.0 * x[i] + 0.5 * h * h * (x[i] + (i + 1) * h + 1.0) ** 3
            if i > 0:
                t = t - x[i - 1]
            if i < n - 1:
                t = t - x[i + 1]
            r.append(t)
        return jnp.stack(r)
    return f


def w_bratu(n):
    """1-D Bratu: x_{i−1} − 2x_i + x_{i+1} + h²λ exp(x_i), zero boundary values."""
    h, lam = 1.0 / (n + 1), 2.0

    def f(x):
        r = []
        for i in range(n):
            t = -2.0 * x[i] + h * h * lam * jnp.exp(x[i])
            if i > 0:
                t = t + x[i - 1]
            if i < n - 1:
                t = t + x[i + 1]
            r.append(t)
        return jnp.stack(r)
    return f


def w_powell(n):
    """Extended Powell singular (n a multiple of 4)."""
    def f(x):
        r = []
        for k in range(0, n - 3, 4):
            r.append(x[k] + 10.0 * x[k + 1])
            r.append(5.0 ** 0.5 * (x[k + 2] - x[k + 3]))
            r.append((x[k + 1] - 2.0 * x[k + 2]) ** 2)
            r.append(10.0 ** 0.5 * (x[k] - x[k + 3]) ** 2)
        return jnp.stack(r)
    return f


def w_brown_almost_linear(n):
    """Brown almost-linear: x_i + Σ_j x_j − (n + 1) for i < n, Π_j x_j − 1; the sums written out per residual
    (dense, n² terms)."""
    def f(x):
        r = []
        for i in range(n - 1):
            t = x[i] - (n + 1.0)
            for j in range(n):
                t = t + x[j]
            r.append(t)
        p = x[0]
        for j in range(1, n):
            p = p * x[j]
        r.append(p - 1.0)
        return jnp.stack(r)
    return f


def w_trigonometric(n):
    """Trigonometric (dense): n − Σ_j cos x_j + (i + 1)(1 − cos x_i) − sin x_i, the sum written out per residual."""
    def f(x):
        r = []
        for i in range(n):
            t = n + (i + 1) * (1.0 - jnp.cos(x[i])) - jnp.sin(x[i])
            for j in range(n):
                t = t - jnp.cos(x[j])
            r.append(t)
        return jnp.stack(r)
    return f


def w_rosenbrock_obj(n):
    """Chained Rosenbrock objective: Σ 100(x_{i+1} − x_i²)² + (1 − x_i)²."""
    def f(x):
        s = 0.0
        for i in range(n - 1):
            s = s + 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
        return s
    return f


def w_scaled_pairs(n):
    """The written-out objective of hessian_detect.py: Σ (c_i x_i x_{i+1} − 1)² + c_i sin x_i."""
    c = _consts(n)

    def f(x):
        s = 0.0
        for i in range(n - 1):
            s = s + (c[i] * x[i] * x[i + 1] - 1.0) ** 2 + jnp.sin(x[i]) * c[i]
        return s
    return f


def w_chained_wood(n):
    """Chained Wood (n a multiple of 2, pairs of pairs overlapping by two)."""
    def f(x):
        s = 0.0
        for k in range(0, n - 3, 2):
            s = (s + 100.0 * (x[k] ** 2 - x[k + 1]) ** 2 + (x[k] - 1.0) ** 2 + 90.0 * (x[k + 2] ** 2 - x[k + 3]) ** 2
                 + (x[k + 2] - 1.0) ** 2 + 10.0 * (x[k + 1] + x[k + 3] - 2.0) ** 2 + 0.1 * (x[k + 1] - x[k + 3]) ** 2)
        return s
    return f


def w_engval(n):
    """ENGVAL1: Σ (x_i² + x_{i+1}²)² − 4x_i + 3."""
    def f(x):
        s = 0.0
        for i in range(n - 1):
            s = s + (x[i] ** 2 + x[i + 1] ** 2) ** 2 - 4.0 * x[i] + 3.0
        return s
    return f


def w_arwhead(n):
    """ARWHEAD (arrowhead Hessian): Σ (x_i² + x_n²)² − 4x_i + 3."""
    def f(x):
        s = 0.0
        for i in range(n - 1):
            s = s + (x[i] * x[i] + x[n - 1] * x[n - 1]) ** 2 - 4.0 * x[i] + 3.0
        return s
    return f


def w_tridia(n):
    """TRIDIA: (x_1 − 1)² + Σ i(2x_i − x_{i−1})²."""
    def f(x):
        s = (x[0] - 1.0) ** 2
        for i in range(1, n):
            s = s + (i + 1) * (2.0 * x[i] - x[i - 1]) ** 2
        return s
    return f


def w_bvp_energy(n):
    """Least squares of the boundary value residuals, written out: Σ r_i²."""
    h = 1.0 / (n + 1)

    def f(x):
        s = 0.0
        for i in range(n):
            t = 2.0 * x[i] + 0.5 * h * h * (x[i] + (i + 1) * h + 1.0) ** 3
            if i > 0:
                t = t - x[i - 1]
            if i < n - 1:
                t = t - x[i + 1]
            s = s + t * t
        return s
    return f


def w_brown_energy(n):
    """Least squares of Brown almost-linear, written out (dense Hessian, n² terms)."""
    def f(x):
        s = 0.0
        for i in range(n - 1):
            t = x[i] - (n + 1.0)
            for j in range(n):
                t = t + x[j]
            s = s + t * t
        p = x[0]
        for j in range(1, n):
            p = p * x[j]
        return s + (p - 1.0) ** 2
    return f


# ---------------------------------------------------------------------------------------------- vectorized
def _tri(x, left, right):
    """x_{i−1}·left + x_{i+1}·right with zero boundary values."""
    z = jnp.zeros(1, x.dtype)
    return left * jnp.concatenate([z, x[:-1]]) + right * jnp.concatenate([x[1:], z])


def v_rosenbrock_res(n):
    return lambda x: jnp.stack([10.0 * (x[1:] - x[:-1] ** 2), 1.0 - x[:-1]], axis=1).reshape(-1)


def v_broyden_tridiagonal(n):
    return lambda x: (3.0 - 2.0 * x) * x + 1.0 + _tri(x, -1.0, -2.0)


def v_broyden_banded(n):
    def f(x):
        g = x * (1.0 + x)
        pad = jnp.concatenate([jnp.zeros(5, x.dtype), g, jnp.zeros(1, x.dtype)])
        band = sum(pad[5 + d:5 + d + n] for d in (-5, -4, -3, -2, -1, 1))
        return x * (2.0 + 5.0 * x * x) + 1.0 - band
    return f


def v_bvp(n):
    h = 1.0 / (n + 1)
    t = jnp.arange(1, n + 1) * h
    return lambda x: 2.0 * x + 0.5 * h * h * (x + t + 1.0) ** 3 + _tri(x, -1.0, -1.0)


def v_bratu(n):
    h = 1.0 / (n + 1)
    return lambda x: -2.0 * x + h * h * 2.0 * jnp.exp(x) + _tri(x, 1.0, 1.0)


def v_powell(n):
    def f(x):
        q = x.reshape(-1, 4)
        a, b, c, d = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
        return jnp.stack([a + 10.0 * b, 5.0 ** 0.5 * (c - d), (b - 2.0 * c) ** 2, 10.0 ** 0.5 * (a - d) ** 2],
                         axis=1).reshape(-1)
    return f


def v_brown_almost_linear(n):
    return lambda x: jnp.concatenate([x[:-1] + jnp.sum(x) - (n + 1.0), jnp.prod(x)[None] - 1.0])


def v_trigonometric(n):
    i = jnp.arange(1, n + 1)
    return lambda x: n - jnp.sum(jnp.cos(x)) + i * (1.0 - jnp.cos(x)) - jnp.sin(x)


def v_rosenbrock_obj(n):
    return lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def v_scaled_pairs(n):
    c = jnp.asarray(_consts(n))
    return lambda x: jnp.sum((c[:-1] * x[:-1] * x[1:] - 1.0) ** 2 + jnp.sin(x[:-1]) * c[:-1])


def v_chained_wood(n):
    def f(x):
        a, b, c, d = x[0:n - 3:2], x[1:n - 2:2], x[2:n - 1:2], x[3:n:2]
        return jnp.sum(100.0 * (a ** 2 - b) ** 2 + (a - 1.0) ** 2 + 90.0 * (c ** 2 - d) ** 2 + (c - 1.0) ** 2
                       + 10.0 * (b + d - 2.0) ** 2 + 0.1 * (b - d) ** 2)
    return f


def v_engval(n):
    return lambda x: jnp.sum((x[:-1] ** 2 + x[1:] ** 2) ** 2 - 4.0 * x[:-1] + 3.0)


def v_arwhead(n):
    return lambda x: jnp.sum((x[:-1] ** 2 + x[-1] ** 2) ** 2 - 4.0 * x[:-1] + 3.0)


def v_tridia(n):
    i = jnp.arange(2, n + 1)
    return lambda x: (x[0] - 1.0) ** 2 + jnp.sum(i * (2.0 * x[1:] - x[:-1]) ** 2)


def v_bvp_energy(n):
    r = v_bvp(n)
    return lambda x: jnp.sum(r(x) ** 2)


def v_brown_energy(n):
    r = v_brown_almost_linear(n)
    return lambda x: jnp.sum(r(x) ** 2)


# ---------------------------------------------------------------------------------------------- the problem set
# (name, builders (written, vectorized), written-out sizes, vectorized sizes).  Written out, every size lands in
# 1,000–30,000 StableHLO ops (about 11–60 ops per index for the banded ones, 3–4 per (i, j) pair for the dense
# ones; the extended Powell function stays below 1,000 ops up to n = 100, so it is vectorized only); the
# vectorized forms cover n = 2 … 100 (tens of ops each).
JACOBIAN = [
    ("rosenbrock_res", (w_rosenbrock_res, v_rosenbrock_res), (64, 100), (2, 50, 100)),
    ("broyden_tridiagonal", (w_broyden_tridiagonal, v_broyden_tridiagonal), (50, 100), (3, 50, 100)),
    ("broyden_banded", (w_broyden_banded, v_broyden_banded), (20, 50, 100), (8, 20, 50, 100)),
    ("bvp", (w_bvp, v_bvp), (50, 100), (5, 50, 100)),
    ("bratu", (w_bratu, v_bratu), (60, 100), (5, 50, 100)),
    ("powell", (w_powell, v_powell), (), (4, 8, 48, 100)),
    ("brown_almost_linear", (w_brown_almost_linear, v_brown_almost_linear), (30, 60, 90), (2, 10, 30, 60, 90)),
    ("trigonometric", (w_trigonometric, v_trigonometric), (30, 60, 85), (2, 10, 30, 60, 85)),
]
HESSIAN = [
    ("rosenbrock", (w_rosenbrock_obj, v_rosenbrock_obj), (64, 100), (2, 50, 100)),
    ("scaled_pairs", (w_scaled_pairs, v_scaled_pairs), (60, 100), (2, 50, 100)),
    ("chained_wood", (w_chained_wood, v_chained_wood), (50, 100), (4, 8, 50, 100)),
    ("engval1", (w_engval, v_engval), (64, 100), (2, 50, 100)),
    ("arwhead", (w_arwhead, v_arwhead), (60, 100), (2, 50, 100)),
    ("tridia", (w_tridia, v_tridia), (92, 100), (2, 50, 100)),
    ("bvp_energy", (w_bvp_energy, v_bvp_energy), (50, 100), (5, 20, 50, 100)),
    ("brown_energy", (w_brown_energy, v_brown_energy), (30, 60, 90), (2, 10, 30, 60, 90)),
]
QUICK = {"jacobian": {"broyden_tridiagonal": 20, "broyden_banded": 20, "brown_almost_linear": 10, "powell": 8},
         "hessian": {"rosenbrock": 20, "arwhead": 20, "chained_wood": 8, "brown_energy": 2}}


def problems(kind: str, quick: bool):
    """``(label, f, n)`` for every problem of this kind: the written-out forms first, then the vectorized."""
    table = JACOBIAN if kind == "jacobian" else HESSIAN
    for style, idx in (("written", 0), ("vec", 1)):
        for name, builders, *size_lists in table:
            sizes = size_lists[idx]
            if quick:
                if name not in QUICK[kind] or not sizes:
                    continue
                sizes = (QUICK[kind][name],)
            for n in sizes:
                yield f"{style}_{name}", builders[idx](n), n


# ---------------------------------------------------------------------------------------------- measurements
def best_of(fn, repeat):
    """``(result of the last call, best wall time over ``repeat`` calls)``."""
    best, out = float("inf"), None
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def count_ops(lowered) -> int:
    """The operations of the ``stablehlo`` dialect in the module, every region and block walked."""
    module = lowered.compiler_ir("stablehlo")
    count = 0
    stack = [module.operation]
    while stack:
        op = stack.pop()
        op = op.operation
        if op.name.startswith("stablehlo."):
            count += 1
        for region in op.regions:
            for block in region.blocks:
                stack.extend(block.operations)
    return count


def dense_bool(pattern) -> np.ndarray:
    if hasattr(pattern, "to_scipy"):
        return np.asarray(pattern.to_scipy().toarray(), bool)
    if hasattr(pattern, "todense"):
        return np.asarray(pattern.todense(), bool)
    return np.asarray(pattern, bool)


def same(ours, theirs) -> str:
    try:
        o, t = dense_bool(ours), dense_bool(theirs)
    except Exception as e:  # pragma: no cover - reporting only
        return f"? ({type(e).__name__})"
    if o.shape != t.shape:
        return "shape differs"
    if (o == t).all():
        return "yes"
    return f"no (+{int((o & ~t).sum())} ours, +{int((t & ~o).sum())} asdex)"


def sound(kind, f, n, ours) -> str:
    """Our pattern against the union of the numerical nonzeros at 2 random points."""
    deriv = jax.jacfwd(f) if kind == "jacobian" else jax.hessian(f)
    rng = np.random.default_rng(1)
    union = None
    for _ in range(2):
        x = jnp.asarray(rng.uniform(0.5, 1.5, n))
        nz = np.asarray(deriv(x)) != 0
        union = nz if union is None else union | nz
    o = dense_bool(ours)
    if o.shape != union.shape:
        return "shape differs"
    missing, extra = int((union & ~o).sum()), int((o & ~union).sum())
    if missing:
        return f"MISSING {missing}"
    return "=" if not extra else f"⊇ +{extra}"


class LoweringClock:
    """When the last ``jax.stages.Traced.lower`` returned: ours lowers through it (``jax.jit(f).trace(x).lower()``),
    so the time from then to the end of our call is our analysis alone and the time before it our lowering, both
    measured inside the one call — unlike (ours − lower), a difference of two calls that also holds how much
    cheaper our lowering is than ``jax.jit(f).lower`` (see the module docstring)."""

    def __init__(self):
        self.end = None

    def __enter__(self):
        self._lower = original = jax.stages.Traced.lower
        clock = self

        def lower(traced, *a, **k):
            out = original(traced, *a, **k)
            clock.end = time.perf_counter()
            return out

        jax.stages.Traced.lower = lower
        return self

    def __exit__(self, *exc):
        jax.stages.Traced.lower = self._lower


def measure(kind, f, n, repeat, asdex, check):
    x = jnp.ones(n)
    ours_fn = ss.jacobian_sparsity if kind == "jacobian" else ss.hessian_sparsity
    # lower and ours alternate, so that both see the machine in the same states (a shared machine drifts)
    t_lower = t_ours = t_analysis = t_our_lowering = float("inf")
    for _ in range(max(repeat, 1)):
        lowered, t = best_of(lambda: jax.jit(lambda v: f(v)).lower(x), 1)
        t_lower = min(t_lower, t)
        with LoweringClock() as clock:
            start = time.perf_counter()
            pat = ours_fn(lambda v: f(v), x)
            done = time.perf_counter()
        t_ours = min(t_ours, done - start)
        if clock.end is not None:
            t_analysis = min(t_analysis, done - clock.end)
            t_our_lowering = min(t_our_lowering, clock.end - start)
    row = {"n": n, "ops": count_ops(lowered), "nnz": pat.nnz, "lower": t_lower, "ours": t_ours,
           "analysis": t_analysis, "our_lowering": t_our_lowering}
    if asdex is not None:
        peer_fn = asdex.jacobian_sparsity if kind == "jacobian" else asdex.hessian_sparsity
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                peer, row["asdex"] = best_of(lambda: peer_fn(lambda v: f(v), x), repeat)
                row["same"] = same(pat, peer)
            except Exception as e:
                row["asdex_error"] = type(e).__name__
    if check:
        row["sound"] = sound(kind, f, n, pat)
    return row


# ---------------------------------------------------------------------------------------------- the report
def ms(t):
    return f"{t * 1e3:.2f}"


def quantiles(values):
    v = np.sort(np.asarray(values, float))
    return float(np.median(v)), float(np.percentile(v, 90)), float(v[-1])


def table(kind, rows, asdex, check):
    hdr = ("| problem | n | ops | nnz | lower (ms) | ours (ms) | ours / lower | our lowering (ms) | ours / our lowering "
           "| µs / op beyond lowering | analysis µs / op |")
    sep = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    if asdex is not None:
        hdr += " asdex (ms) | asdex / ours | same |"
        sep += "---:|---:|:---:|"
    if check:
        hdr += " sound (2 points) |"
        sep += ":---:|"
    print(f"\n### {kind.capitalize()}s\n")
    print(hdr)
    print(sep)
    for r in rows:
        per_op = (r["ours"] - r["lower"]) / max(r["ops"], 1) * 1e6
        line = (f"| {r['label']} | {r['n']} | {r['ops']:,} | {r['nnz']:,} | {ms(r['lower'])} | {ms(r['ours'])} | "
                f"{r['ours'] / r['lower']:.2f} | {ms(r['our_lowering'])} | {over_our_lowering(r)} | {per_op:.1f} | "
                f"{analysis_per_op(r)} |")
        if asdex is not None:
            if "asdex" in r:
                line += f" {ms(r['asdex'])} | {r['asdex'] / r['ours']:.2f} | {r['same']} |"
            else:
                line += f" {r.get('asdex_error', '–')} | – | – |"
        if check:
            line += f" {r['sound']} |"
        print(line)


def analysis_per_op(r) -> str:
    """Our analysis alone (from the end of our lowering to the end of our call) per op of JAX's lowering."""
    return "–" if r["analysis"] == float("inf") else f"{r['analysis'] / max(r['ops'], 1) * 1e6:.1f}"


def over_our_lowering(r) -> str:
    """Ours over our own lowering (from the start of our call to the end of our ``Traced.lower``)."""
    return "–" if r["our_lowering"] == float("inf") else f"{r['ours'] / r['our_lowering']:.2f}"


def summary(rows_by_kind):
    print("\n### Summary\n")
    print("| kind | problems | ours / lower: median | 90th pct | worst | ours / our lowering: median | 90th pct | "
          "written-out µs / op beyond lowering: median | 90th pct | worst | written-out analysis µs / op: median | "
          "90th pct |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind, rows in rows_by_kind.items():
        if not rows:
            continue
        ratio = quantiles([r["ours"] / r["lower"] for r in rows])
        own = [r["ours"] / r["our_lowering"] for r in rows if r["our_lowering"] != float("inf")]
        own_q = " | ".join(f"{v:.2f}" for v in quantiles(own)[:2]) if own else "– | –"
        written_rows = [r for r in rows if r["label"].startswith("w")]
        written = [(r["ours"] - r["lower"]) / max(r["ops"], 1) * 1e6 for r in written_rows]
        per_op = " | ".join(f"{v:.1f}" for v in quantiles(written)) if written else "– | – | –"
        alone = [r["analysis"] / max(r["ops"], 1) * 1e6 for r in written_rows if r["analysis"] != float("inf")]
        alone_q = " | ".join(f"{v:.1f}" for v in quantiles(alone)[:2]) if alone else "– | –"
        print(f"| {kind} | {len(rows)} | {ratio[0]:.2f} | {ratio[1]:.2f} | {ratio[2]:.2f} | {own_q} | {per_op} | "
              f"{alone_q} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a handful of problems, with the soundness check")
    ap.add_argument("--only", default="", help="run only the problems whose name starts with this")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many calls (default 3)")
    ap.add_argument("--no-asdex", action="store_true")
    ap.add_argument("--kind", choices=("jacobian", "hessian"), help="one kind only (default: both)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from detect import machine

    asdex, note = None, ""
    if args.no_asdex:
        note = "asdex omitted (--no-asdex)."
    else:
        try:
            import asdex
        except ImportError:
            note = "asdex omitted: not importable."

    kinds = [args.kind] if args.kind else ["jacobian", "hessian"]
    rows_by_kind = {}
    for kind in kinds:
        rows = []
        for label, f, n in problems(kind, args.quick):
            if not label.startswith(args.only):
                continue
            row = measure(kind, f, n, args.repeat, asdex, args.quick)
            row["label"] = label
            rows.append(row)
            print(f"  {kind} {label} n={n}: {row['ops']} ops, lower {ms(row['lower'])} ms, ours {ms(row['ours'])} ms",
                  file=sys.stderr, flush=True)
        rows_by_kind[kind] = rows

    print(f"Small programs — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} — {machine()}\n")
    print(f"Times: best of {args.repeat} (lower and ours alternating), fresh lambda per call; ops: stablehlo-dialect "
          "operations of the lowered module (walked).  " + note)
    for kind, rows in rows_by_kind.items():
        table(kind, rows, asdex, args.quick)
    summary(rows_by_kind)
    return 0


if __name__ == "__main__":
    sys.exit(main())

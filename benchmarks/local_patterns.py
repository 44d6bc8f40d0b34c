"""Local (point) patterns against global ones: nonzeros, colors and detection time.

    python benchmarks/local_patterns.py            # full table
    python benchmarks/local_patterns.py --quick    # smaller sizes

For each problem, at one random point: the global pattern, the local pattern (``local=True``), the number of
nonzeros of ``jax.jacfwd`` there (where it is affordable: the local pattern should equal it), the column
colors of both, and the detection times (first call; warm = best of ``--repeat`` further calls; every call
wraps the function in a fresh lambda, so no trace is reused).  float64.
"""

from __future__ import annotations

import argparse
import sys
import warnings

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import stablehlo_sparsity as ss  # noqa: E402
from stablehlo_sparsity.examples import brusselator  # noqa: E402

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from detect import best_of, machine  # noqa: E402


def relu_mlp(batch: int, sizes, seed: int = 0):
    """Per-example ReLU MLP (ReLU on every layer, the output too); the input is the flattened batch."""
    rng = np.random.default_rng(seed)
    ws = [jnp.asarray(rng.normal(size=(a, b)) / np.sqrt(a)) for a, b in zip(sizes[:-1], sizes[1:])]
    bs = [jnp.asarray(rng.normal(size=b) * 0.1) for b in sizes[1:]]

    def f(x):
        h = x.reshape(batch, sizes[0])
        for w, b in zip(ws, bs):
            h = jax.nn.relu(h @ w + b)
        return h.ravel()

    return f, batch * sizes[0]


def relu_conv(n: int, layers: int = 3, seed: int = 0):
    """A 1-D ReLU convolution stack over a signal of n samples (banded globally)."""
    rng = np.random.default_rng(seed)
    ks = [jnp.asarray(rng.normal(size=5)) for _ in range(layers)]

    def f(x):
        for k in ks:
            x = jax.nn.relu(jnp.convolve(x, k, mode="same"))
        return x

    return f, n


def maxpool_cnn(size: int, seed: int = 0):
    """conv 3×3 (4 channels) → ReLU → 2×2 max pooling, on a size × size image."""
    rng = np.random.default_rng(seed)
    w = jnp.asarray(rng.normal(size=(4, 1, 3, 3)))

    def f(x):
        h = jax.lax.conv_general_dilated(x.reshape(1, 1, size, size), w, (1, 1), "SAME")
        h = jax.nn.relu(h)
        return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID").ravel()

    return f, size * size


def piecewise(n: int):
    """A piecewise model: each element picks a branch by its interval; neighbours enter some branches."""
    def f(x):
        left, right = jnp.roll(x, 1), jnp.roll(x, -1)
        return jnp.where(x < -0.5, x * left, jnp.where(x < 0.5, jnp.sin(x), jnp.clip(x * right, -1.0, 1.0)))

    return f, n


def problems(quick: bool):
    yield "ReLU MLP 32→64→64→16, batch 64", *relu_mlp(64, [32, 64, 64, 16]), "default", True
    yield "ReLU MLP 32→64→64→16, batch 64", *relu_mlp(64, [32, 64, 64, 16]), "highest", True
    for n in ([10_000] if quick else [10_000, 100_000]):
        yield f"1-D ReLU conv ×3 (5 taps), n={n:,}", *relu_conv(n), "default", n <= 10_000
    for s in ([32] if quick else [32, 128]):
        yield f"conv 3×3 → ReLU → max-pool 2×2, {s}×{s}", *maxpool_cnn(s), "default", s <= 32
    for n in ([10_000] if quick else [10_000, 1_000_000]):
        yield f"piecewise (where/clip), n={n:,}", *piecewise(n), "default", n <= 10_000
    yield "Brusselator 2-D, N=64 (no value decides)", (lambda x: brusselator(x, 64)), 2 * 64 * 64, "default", False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    print(f"Machine: {machine()}\n")
    print("| problem | precision | n | global nnz | local nnz | jacfwd nnz | colors global / local | "
          "global warm (s) | local first (s) | local warm (s) | local / global |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(1)
    for name, f, n, precision, small in problems(args.quick):
        x = jnp.asarray(rng.normal(size=n))
        with jax.default_matmul_precision(precision):
            glob, _, tg = best_of(lambda: ss.jacobian_sparsity(lambda v: f(v), x), args.repeat)
            loc, tl1, tl = best_of(lambda: ss.jacobian_sparsity(lambda v: f(v), x, local=True), args.repeat)
        truth = int((np.abs(np.asarray(jax.jit(jax.jacfwd(f))(x))) > 0).sum()) if small else None
        cg = ss.color_columns(glob).num_colors
        cl = ss.color_columns(loc).num_colors
        print(f"| {name} | {precision} | {n:,} | {glob.nnz:,} | {loc.nnz:,} | "
              f"{'—' if truth is None else f'{truth:,}'} | {cg} / {cl} | {tg:.3f} | {tl1:.3f} | {tl:.3f} | "
              f"{tl / tg:.1f}× |", flush=True)


if __name__ == "__main__":
    main()

"""The held-out objectives of the Hessian method choice: problems ``hessian_sparsity(method="auto")`` was never
fitted on, to check that its choice carries (issue 48).

    python benchmarks/hessian_method.py --held-out          # measure direct, via-gradient and auto on them

None of these families is among the fitted problems (``benchmarks/hessian_method.py``: the Brusselator energy, the
sum of local terms, the test-suite objectives and the Hessian objectives of ``benchmarks/small_programs.py``).
They come in three styles:

- "vec": ``jnp`` array expressions (energies on 1-D/2-D/3-D grids, barrier and penalty terms, CUTEst objectives,
  a graph energy through gathers and a scatter, a small network's loss over its weights), n = 10³ … 10⁶;
- "written": CUTEst style, a Python loop over the indices building scalar terms (thousands of StableHLO ops);
- "blocks": a Python loop over blocks of the unknowns, each block a vectorized expression with its neighbours'
  halo (tens to hundreds of ops over large arrays: the middle ground between the other two).

Each entry of :data:`FAMILIES` is ``(name, style, builder, sizes)``; ``builder(n)`` returns ``(f, n)`` with ``n``
rounded to what the problem's shape allows (a grid's side, a block size).  :func:`point` is a point in the domain
of every objective (the barrier's logarithms are finite there), for the soundness tests against ``jax.hessian``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FAMILIES", "problems", "small", "point"]


def _side(n: int, dims: int) -> int:
    return max(3, int(round(n ** (1.0 / dims))))


def _diff2(u, axis: int):
    """Forward differences of ``u`` along ``axis``, squared."""
    import jax.numpy as jnp

    return jnp.diff(u, axis=axis) ** 2


# ---------------------------------------------------------------------------------------------- vectorized
def ginzburg_landau_2d(n):
    """Ginzburg–Landau energy of a complex field ψ = a + ib on a 2-D grid: |∇ψ|² + κ/2 (1 − |ψ|²)²."""
    import jax.numpy as jnp

    s = _side(n // 2, 2)

    def f(x):
        a, b = x[: s * s].reshape(s, s), x[s * s:].reshape(s, s)
        grad = sum(jnp.sum(_diff2(u, ax)) for u in (a, b) for ax in (0, 1))
        return grad + 2.5 * jnp.sum((1.0 - a * a - b * b) ** 2)

    return f, 2 * s * s


def allen_cahn_1d(n):
    """Allen–Cahn energy on a line: ε²/2 |u'|² + (u² − 1)²/4."""
    import jax.numpy as jnp

    h = 1.0 / n
    return (lambda u: 0.5e-4 / h * jnp.sum(jnp.diff(u) ** 2) + h * jnp.sum((u * u - 1.0) ** 2) / 4.0), n


def allen_cahn_3d(n):
    """Allen–Cahn energy on a 3-D grid."""
    import jax.numpy as jnp

    s = _side(n, 3)

    def f(x):
        u = x.reshape(s, s, s)
        return 0.01 * sum(jnp.sum(_diff2(u, ax)) for ax in range(3)) + jnp.sum((u * u - 1.0) ** 2) / 4.0

    return f, s ** 3


def p_laplacian_2d(n):
    """p-Laplacian energy (p = 3) on a 2-D grid: (|∇u|² + ε)^{p/2} per cell, minus a load."""
    import jax.numpy as jnp

    s = _side(n, 2)

    def f(x):
        u = x.reshape(s, s)
        ux, uy = u[1:, :-1] - u[:-1, :-1], u[:-1, 1:] - u[:-1, :-1]
        return jnp.sum((ux * ux + uy * uy + 1e-3) ** 1.5) - 0.1 * jnp.sum(u)

    return f, s * s


def total_variation_2d(n):
    """Total-variation denoising on a 2-D image: √(|∇u|² + ε) + λ/2 (u − g)²."""
    import jax.numpy as jnp

    s = _side(n, 2)
    g = jnp.asarray(np.random.default_rng(1).uniform(0.0, 1.0, (s, s)))

    def f(x):
        u = x.reshape(s, s)
        ux, uy = u[1:, :-1] - u[:-1, :-1], u[:-1, 1:] - u[:-1, :-1]
        return jnp.sum(jnp.sqrt(ux * ux + uy * uy + 1e-4)) + 5.0 * jnp.sum((u - g) ** 2)

    return f, s * s


def bratu_2d(n):
    """The Bratu energy on a 2-D grid: ½|∇u|² − λ eᵘ."""
    import jax.numpy as jnp

    s = _side(n, 2)

    def f(x):
        u = x.reshape(s, s)
        return 0.5 * (jnp.sum(_diff2(u, 0)) + jnp.sum(_diff2(u, 1))) - 6.0 / (s * s) * jnp.sum(jnp.exp(u))

    return f, s * s


def log_barrier(n):
    """A log-barrier of box and slope constraints: cᵀx − μ Σ log(1 − (x_{i+1} − x_i)²) − μ Σ log(x_i + 2)."""
    import jax.numpy as jnp

    c = jnp.asarray(np.random.default_rng(2).uniform(-1.0, 1.0, n))

    def f(x):
        d = x[1:] - x[:-1]
        return jnp.dot(c, x) - 0.1 * jnp.sum(jnp.log(1.0 - d * d)) - 0.1 * jnp.sum(jnp.log(x + 2.0))

    return f, n


def quadratic_penalty(n):
    """A quadratic penalty of the constraints x_i² + x_{i+1}² ≤ 0.1: ‖x − 1‖² + ρ Σ max(0, g_i)²."""
    import jax.numpy as jnp

    def f(x):
        g = x[:-1] ** 2 + x[1:] ** 2 - 0.1
        return jnp.sum((x - 1.0) ** 2) + 10.0 * jnp.sum(jnp.maximum(g, 0.0) ** 2)

    return f, n


def broyden_tridiagonal(n):
    """Sum of squares of the Broyden tridiagonal residuals (3 − 2x_i)x_i − x_{i−1} − 2x_{i+1} + 1."""
    import jax.numpy as jnp

    def f(x):
        xp = jnp.pad(x, 1)
        r = (3.0 - 2.0 * x) * x - xp[:-2] - 2.0 * xp[2:] + 1.0
        return jnp.sum(r * r)

    return f, n


def extended_powell(n):
    """The extended Powell singular function, blocks of four."""
    import jax.numpy as jnp

    n4 = max(4, n - n % 4)

    def f(x):
        q = x.reshape(-1, 4)
        a, b, c, d = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
        return jnp.sum((a + 10.0 * b) ** 2 + 5.0 * (c - d) ** 2 + (b - 2.0 * c) ** 4 + 10.0 * (a - d) ** 4)

    return f, n4


def dixon_price(n):
    """Dixon–Price: (x₀ − 1)² + Σ i (2x_i² − x_{i−1})²."""
    import jax.numpy as jnp

    i = jnp.arange(2, n + 1, dtype=jnp.float32)
    return (lambda x: (x[0] - 1.0) ** 2 + jnp.sum(i * (2.0 * x[1:] ** 2 - x[:-1]) ** 2)), n


def chained_trig(n):
    """A trigonometric sum of local terms: sin(x_i + x_{i+1}) cos(x_{i+2}) + x_i²/2."""
    import jax.numpy as jnp

    return (lambda x: jnp.sum(jnp.sin(x[:-2] + x[1:-1]) * jnp.cos(x[2:])) + 0.5 * jnp.sum(x * x)), n


def trigonometric(n):
    """The CUTEst trigonometric function: Σ (n − Σ cos x_j + i(1 − cos x_i) − sin x_i)² (a dense Hessian)."""
    import jax.numpy as jnp

    i = jnp.arange(1, n + 1, dtype=jnp.float32)
    return (lambda x: jnp.sum((n - jnp.sum(jnp.cos(x)) + i * (1.0 - jnp.cos(x)) - jnp.sin(x)) ** 2)), n


def _graph(n: int):
    """A ring with random chords (fixed seed): about 2n edges, as index arrays and weights."""
    rng = np.random.default_rng(3)
    ring = np.arange(n)
    src = np.concatenate([ring, rng.integers(0, n, n)])
    dst = np.concatenate([(ring + 1) % n, rng.integers(0, n, n)])
    return src, dst, rng.uniform(0.5, 1.5, src.size)


def graph_energy(n):
    """A graph energy through gathers: Σ_edges w (x_s − x_d)² (1 + (x_s − x_d)²) + Σ x⁴/4."""
    import jax.numpy as jnp

    src, dst, w = (jnp.asarray(a) for a in _graph(n))

    def f(x):
        d = x[src] - x[dst]
        return jnp.sum(w * d * d * (1.0 + d * d)) + 0.25 * jnp.sum(x ** 4)

    return f, n


def graph_laplacian_scatter(n):
    """The nonlinear graph Laplacian xᵀ L(x) with the edge fluxes summed to the nodes by a scatter-add."""
    import jax.numpy as jnp

    src, dst, w = (jnp.asarray(a) for a in _graph(n))

    def f(x):
        flux = w.astype(x.dtype) * jnp.tanh(x[src] - x[dst])
        div = jnp.zeros_like(x).at[src].add(flux).at[dst].add(-flux)
        return jnp.dot(x, div) + jnp.sum(x * x)

    return f, n


def mlp_loss(n):
    """The mean squared loss of a one-hidden-layer tanh network over its weights (flattened): a dense Hessian."""
    import jax.numpy as jnp

    d_in = 8
    h = max(2, n // (d_in + 2))
    rng = np.random.default_rng(4)
    X, y = jnp.asarray(rng.normal(size=(32, d_in))), jnp.asarray(rng.normal(size=32))

    def f(w):
        W1 = w[: d_in * h].reshape(d_in, h)
        b1, W2 = w[d_in * h: d_in * h + h], w[d_in * h + h:]
        return jnp.mean((jnp.tanh(X @ W1 + b1) @ W2 - y) ** 2)

    return f, (d_in + 2) * h


def block_quadratic(n):
    """Σ tanh(X A)² over rows of X = x reshaped (n/8, 8), A a fixed 8×8 matrix: 8×8 dense diagonal blocks."""
    import jax.numpy as jnp

    A = jnp.asarray(np.random.default_rng(5).normal(size=(8, 8)))
    n8 = max(8, n - n % 8)
    return (lambda x: jnp.sum(jnp.tanh(x.reshape(-1, 8) @ A) ** 2)), n8


def lennard_jones_chain(n):
    """A Lennard-Jones-like chain over neighbours 1…3 apart: Σ_k Σ_i (r⁻⁶ − 2r⁻³), r = 1 + (x_{i+k} − x_i)²."""
    import jax.numpy as jnp

    def f(x):
        total = 0.0
        for k in (1, 2, 3):
            r = 1.0 + (x[k:] - x[:-k]) ** 2
            total = total + jnp.sum(r ** -6 - 2.0 * r ** -3)
        return total

    return f, n


def spring_network_2d(n):
    """Nonlinear springs on a 2-D mesh of points (x and y coordinates): Σ (|p_s − p_d| − 1)² over grid edges."""
    import jax.numpy as jnp

    s = _side(n // 2, 2)

    def f(x):
        p = x.reshape(s, s, 2)
        total = 0.0
        for ax in (0, 1):
            d = jnp.diff(p, axis=ax)
            total = total + jnp.sum((jnp.sqrt(jnp.sum(d * d, axis=-1) + 1e-6) - 1.0) ** 2)
        return total

    return f, 2 * s * s


def cahn_hilliard_1d(n):
    """A fourth-order energy on a line: (u_{i+1} − 2u_i + u_{i−1})² + (u² − 1)²."""
    import jax.numpy as jnp

    return (lambda u: jnp.sum((u[2:] - 2.0 * u[1:-1] + u[:-2]) ** 2) + jnp.sum((u * u - 1.0) ** 2)), n


def logistic_banded(n):
    """A logistic loss over a banded design (five-point convolution): Σ log(1 + exp(−y_i (Bx)_i))."""
    import jax
    import jax.numpy as jnp

    y = jnp.asarray(np.sign(np.random.default_rng(6).normal(size=n)))
    kernel = jnp.asarray([[[0.2, -0.5, 1.0, -0.5, 0.2]]])

    def f(x):
        z = jax.lax.conv_general_dilated(x[None, None, :], kernel.astype(x.dtype), (1,), "SAME")[0, 0]
        return jnp.sum(jax.nn.softplus(-y * z)) + 1e-3 * jnp.sum(x * x)

    return f, n


# ---------------------------------------------------------------------------------------------- written out
def written_broyden_tridiagonal(n):
    """:func:`broyden_tridiagonal`, written out term by term."""
    def f(x):
        total = 0.0
        for i in range(n):
            r = (3.0 - 2.0 * x[i]) * x[i] + 1.0
            if i > 0:
                r = r - x[i - 1]
            if i < n - 1:
                r = r - 2.0 * x[i + 1]
            total = total + r * r
        return total

    return f, n


def written_extended_powell(n):
    """:func:`extended_powell`, written out block by block."""
    n4 = max(4, n - n % 4)

    def f(x):
        total = 0.0
        for j in range(0, n4, 4):
            a, b, c, d = x[j], x[j + 1], x[j + 2], x[j + 3]
            total = total + (a + 10.0 * b) ** 2 + 5.0 * (c - d) ** 2 + (b - 2.0 * c) ** 4 + 10.0 * (a - d) ** 4
        return total

    return f, n4


def written_dixon_price(n):
    """:func:`dixon_price`, written out."""
    def f(x):
        total = (x[0] - 1.0) ** 2
        for i in range(1, n):
            total = total + (i + 1) * (2.0 * x[i] ** 2 - x[i - 1]) ** 2
        return total

    return f, n


def written_chained_trig(n):
    """:func:`chained_trig`, written out."""
    import jax.numpy as jnp

    def f(x):
        total = 0.0
        for i in range(n - 2):
            total = total + jnp.sin(x[i] + x[i + 1]) * jnp.cos(x[i + 2]) + 0.5 * x[i] * x[i]
        return total + 0.5 * x[n - 2] * x[n - 2] + 0.5 * x[n - 1] * x[n - 1]

    return f, n


def written_log_barrier(n):
    """:func:`log_barrier`, written out (the linear term a dot product)."""
    import jax.numpy as jnp

    c = np.random.default_rng(2).uniform(-1.0, 1.0, n)

    def f(x):
        total = jnp.dot(jnp.asarray(c), x)
        for i in range(n - 1):
            d = x[i + 1] - x[i]
            total = total - 0.1 * jnp.log(1.0 - d * d) - 0.1 * jnp.log(x[i] + 2.0)
        return total - 0.1 * jnp.log(x[n - 1] + 2.0)

    return f, n


def written_graph_energy(n):
    """:func:`graph_energy`, written out edge by edge (about 2n edges)."""
    src, dst, w = _graph(n)

    def f(x):
        total = 0.0
        for s, d, wi in zip(src.tolist(), dst.tolist(), w.tolist()):
            t = x[s] - x[d]
            total = total + wi * t * t * (1.0 + t * t)
        return total

    return f, n


# ---------------------------------------------------------------------------------------------- blocks
BLOCKS = 32


def blocks_allen_cahn(n, blocks: int = BLOCKS):
    """:func:`allen_cahn_1d` written as a loop over ``blocks`` blocks, each coupled to the next one's first
    element."""
    import jax.numpy as jnp

    b = max(2, n // blocks)

    def f(u):
        total = 0.0
        for k in range(blocks):
            seg = u[k * b: min((k + 1) * b + 1, blocks * b)]
            total = total + 0.01 * jnp.sum(jnp.diff(seg) ** 2) + jnp.sum((u[k * b:(k + 1) * b] ** 2 - 1.0) ** 2)
        return total

    return f, blocks * b


def blocks_ginzburg_landau(n, blocks: int = BLOCKS):
    """:func:`ginzburg_landau_2d` on a grid of ``blocks`` row strips, each strip's energy a separate expression."""
    import jax.numpy as jnp

    rows = blocks
    cols = max(3, (n // 2) // rows)

    def f(x):
        a, b = x[: rows * cols].reshape(rows, cols), x[rows * cols:].reshape(rows, cols)
        total = 0.0
        for k in range(rows):
            for u in (a, b):
                total = total + jnp.sum(jnp.diff(u[k]) ** 2)
                if k + 1 < rows:
                    total = total + jnp.sum((u[k + 1] - u[k]) ** 2)
            total = total + 2.5 * jnp.sum((1.0 - a[k] ** 2 - b[k] ** 2) ** 2)
        return total

    return f, 2 * rows * cols


def blocks_log_barrier(n, blocks: int = BLOCKS):
    """:func:`log_barrier` over ``blocks`` blocks with a one-element halo."""
    import jax.numpy as jnp

    b = max(2, n // blocks)
    c = jnp.asarray(np.random.default_rng(2).uniform(-1.0, 1.0, blocks * b))

    def f(x):
        total = jnp.dot(c, x)
        for k in range(blocks):
            seg = x[k * b: min((k + 1) * b + 1, blocks * b)]
            d = jnp.diff(seg)
            total = total - 0.1 * jnp.sum(jnp.log(1.0 - d * d)) - 0.1 * jnp.sum(jnp.log(x[k * b:(k + 1) * b] + 2.0))
        return total

    return f, blocks * b


# ---------------------------------------------------------------------------------------------- the set
V, W, B = "vec", "written", "blocks"
_VEC = (1_000, 10_000, 100_000, 1_000_000)
#: ``(name, style, builder, sizes)``: the sizes at which ``benchmarks/hessian_method.py --held-out`` measures.
FAMILIES = [
    ("ginzburg_landau_2d", V, ginzburg_landau_2d, _VEC),
    ("allen_cahn_1d", V, allen_cahn_1d, _VEC),
    ("allen_cahn_3d", V, allen_cahn_3d, _VEC),
    ("p_laplacian_2d", V, p_laplacian_2d, _VEC),
    ("total_variation_2d", V, total_variation_2d, _VEC),
    ("bratu_2d", V, bratu_2d, _VEC),
    ("log_barrier", V, log_barrier, _VEC),
    ("quadratic_penalty", V, quadratic_penalty, _VEC),
    ("broyden_tridiagonal", V, broyden_tridiagonal, _VEC),
    ("extended_powell", V, extended_powell, _VEC),
    ("dixon_price", V, dixon_price, _VEC),
    ("chained_trig", V, chained_trig, _VEC),
    ("trigonometric", V, trigonometric, (300, 1_000)),
    ("graph_energy", V, graph_energy, _VEC),
    ("graph_laplacian_scatter", V, graph_laplacian_scatter, _VEC),
    ("mlp_loss", V, mlp_loss, (300, 1_000)),
    ("block_quadratic", V, block_quadratic, _VEC),
    ("lennard_jones_chain", V, lennard_jones_chain, _VEC),
    ("spring_network_2d", V, spring_network_2d, _VEC),
    ("cahn_hilliard_1d", V, cahn_hilliard_1d, _VEC),
    ("logistic_banded", V, logistic_banded, _VEC),
    ("written_broyden_tridiagonal", W, written_broyden_tridiagonal, (100, 300, 1_000)),
    ("written_extended_powell", W, written_extended_powell, (100, 1_000)),
    ("written_dixon_price", W, written_dixon_price, (100, 1_000)),
    ("written_chained_trig", W, written_chained_trig, (100, 1_000)),
    ("written_log_barrier", W, written_log_barrier, (100, 1_000)),
    ("written_graph_energy", W, written_graph_energy, (100, 300)),
    ("blocks_allen_cahn", B, blocks_allen_cahn, (1_000, 10_000, 100_000, 1_000_000)),
    ("blocks_ginzburg_landau", B, blocks_ginzburg_landau, (1_000, 10_000, 100_000)),
    ("blocks_log_barrier", B, blocks_log_barrier, (1_000, 10_000, 100_000, 1_000_000)),
]

#: Sizes at which the tests compare each family's pattern with ``jax.hessian`` (``tests/analysis/
#: test_hessian_method.py``), where the default (16) is too small for the shape: a grid needs a few cells a side.
SMALL_SIZES = {"ginzburg_landau_2d": 32, "allen_cahn_3d": 27, "p_laplacian_2d": 16, "total_variation_2d": 16,
               "bratu_2d": 16, "spring_network_2d": 32, "mlp_loss": 30, "blocks_ginzburg_landau": 24}


def small(name: str) -> tuple:
    """``(f, n)`` of the family ``name`` at a small size (``jax.hessian`` checks it in a second), block loops over 4
    blocks."""
    builder = next(b for fam, _style, b, _sizes in FAMILIES if fam == name)
    n = SMALL_SIZES.get(name, 16)
    return builder(n, blocks=4) if name.startswith("blocks_") else builder(n)


def problems(quick: bool = False):
    """``(label, family, style, f, n)`` for every held-out problem (``quick``: the smallest size of each)."""
    for name, style, builder, sizes in FAMILIES:
        for n in (sizes[:1] if quick else sizes):
            f, n_actual = builder(n)
            yield f"{name} n={n}", name, style, f, n_actual


def point(n: int, seed: int = 0) -> np.ndarray:
    """A random point where every objective is finite (the barrier's arguments stay positive) and every
    penalty active: coordinates in [0.15, 0.45]."""
    return np.random.default_rng(seed).uniform(0.15, 0.45, n).astype(np.float32)

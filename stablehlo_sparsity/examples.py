"""Built-in example problems (plain JAX functions), used by the demo, the docs and the benchmarks.

These are installed with the package and need nothing beyond JAX.  The repository's ``examples/`` folder is
something else: recipes that use the library with SciPy, IPOPT, optimistix, diffrax … (``examples/README.md``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def laplacian_cubic(x):
    """1-D Laplacian (zero Dirichlet boundary) plus a cubic term: tridiagonal Jacobian, 3n - 2 nonzeros."""
    left = jnp.pad(x[:-1], (1, 0))
    right = jnp.pad(x[1:], (0, 1))
    return left - 2.0 * x + right + x**3


def brusselator(x, N: int, alpha: float = 0.1):
    """2-D Brusselator right-hand side on an N×N periodic grid (jnp.roll stencils), n = 2N²."""
    u = x[: N * N].reshape(N, N)
    v = x[N * N:].reshape(N, N)

    def lap(a):
        return jnp.roll(a, 1, 0) + jnp.roll(a, -1, 0) + jnp.roll(a, 1, 1) + jnp.roll(a, -1, 1) - 4.0 * a

    du = 1.0 + u * u * v - 4.4 * u + alpha * lap(u)
    dv = 3.4 * u - u * u * v + alpha * lap(v)
    return jnp.concatenate([du.ravel(), dv.ravel()])


def stencil27(x, L: int):
    """A 3-D 27-point stencil (zero Dirichlet boundary, 27 distinct weights) plus a cubic term on an
    ``L × L × L`` grid, ``n = L³``: row ``i`` of its Jacobian holds the ``3 × 3 × 3`` neighbours of point ``i``
    that exist, ``(3L − 2)³`` nonzeros in all (10⁹ at ``L = 334``)."""
    u = x.reshape(L, L, L)
    p = jnp.pad(u, 1)
    acc = u**3
    t = 0
    for a in range(3):
        for b in range(3):
            for c in range(3):
                t += 1
                acc = acc + (0.5 + 0.03 * t) * p[a:a + L, b:b + L, c:c + L]
    return acc.ravel()


def make_conv2d(out_channels: int = 8, size: int = 64, seed: int = 0):
    """A 2-D 3×3 convolution of a 1×1×size×size image with a fixed random kernel (SAME padding)."""
    w = jnp.asarray(np.random.default_rng(seed).standard_normal((out_channels, 1, 3, 3)))

    def conv(x):
        img = x.reshape(1, 1, size, size)
        return jax.lax.conv_general_dilated(img, w, (1, 1), "SAME").ravel()

    return conv, size * size

"""Prepared sparse Jacobians as values: into ``jit`` as arguments, pickled, saved as one artifact, split into
per-leaf blocks for pytrees, drawn with matplotlib, read as StableHLO, and — for a fixed-point solve with no
reverse-mode derivative — saved forward-only.

Run: ``python examples/prepared_objects.py`` (writes ``jacobian.npz`` and, with matplotlib, ``pattern.png``
into a temporary directory).
"""

from __future__ import annotations

import os
import pickle
import tempfile
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import stablehlo_sparsity as ss

jax.config.update("jax_enable_x64", True)


def model(params, x):
    """A pytree in, a pytree out: a small reaction–diffusion residual with two parameter leaves."""
    lap = jnp.roll(x, 1) - 2.0 * x + jnp.roll(x, -1)
    return {"residual": params["diffusion"] * lap + params["rates"] * x ** 2, "total": jnp.sum(x)}


def main(n: int = 32, directory: str | None = None) -> dict:
    params = {"diffusion": jnp.asarray(0.5), "rates": jnp.linspace(1.0, 2.0, n)}
    x = jnp.linspace(0.0, 1.0, n)
    jac = ss.sparse_jacobian(model, params, x, argnums=1)          # ∂model/∂x, detected and colored once

    # 1. The prepared object is a pytree with static pattern data: pass it into jitted code.
    @jax.jit
    def jacobian_times(jac, params, x, v):
        J = jac(params, x)                                           # BCOO (n+1)×n, nonzeros from 3 JVPs
        return J @ v

    direction = jacobian_times(jac, params, x, jnp.ones(n))

    # 2. Blocks per output leaf, as jax.jacfwd returns them.
    blocks = jac.blocks(params, x)                                   # {"residual": BCOO n×n, "total": BCOO n}
    dense_blocks = jax.jacfwd(model, argnums=1)(params, x)

    # 3. Pickle, or save pattern + compiled program as one .npz artifact (jax.export inside; no pickle).
    directory = directory or tempfile.mkdtemp()
    path = os.path.join(directory, "jacobian.npz")
    jac.save(path)
    loaded = ss.load(path)                                           # another process needs no `model` source
    restored = pickle.loads(pickle.dumps(jac))

    # 4. Look at it: text picture, matplotlib, StableHLO with large constants elided.
    picture = jac.pattern.picture(16, 32)
    png = None
    try:
        import matplotlib

        matplotlib.use("Agg")
        ax = jac.pattern.spy()
        png = os.path.join(directory, "pattern.png")
        ax.figure.savefig(png)
    except ImportError:
        pass
    text = jac.as_text()

    # 5. A fixed-point solve (a while_loop whose trip count depends on x) has no reverse-mode derivative: it is
    #    saved forward-only, evaluates after loading, and says so (ForwardOnlyWarning, repr).
    def solve(x):
        keep_going = lambda s: (s[1] < 50) & (jnp.max(jnp.abs(s[0] - 0.5 * jnp.cos(s[0]) - x)) > 1e-12)  # noqa: E731
        y, _ = jax.lax.while_loop(keep_going, lambda s: (0.5 * jnp.cos(s[0]) + x, s[1] + 1), (x, 0))
        return y[1:] * y[:-1]

    fixed_point = ss.sparse_jacobian(solve, x, output="dense")
    fp_path = os.path.join(directory, "fixed_point.npz")
    fixed_point.save(fp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ss.ForwardOnlyWarning)
        fp_loaded = ss.load(fp_path)
    return dict(fixed_point=np.asarray(fixed_point(x)), fixed_point_loaded=np.asarray(fp_loaded(x)),
                fixed_point_repr=repr(fp_loaded), direction=np.asarray(direction), blocks=blocks,
                dense_blocks=dense_blocks,
                loaded=np.asarray(loaded(params, x).todense()), restored=np.asarray(restored(params, x).todense()),
                reference=np.asarray(jnp.concatenate([dense_blocks["residual"], dense_blocks["total"][None]])),
                picture=picture, png=png, text_length=len(text), path=path)


if __name__ == "__main__":
    r = main()
    print(r["picture"])
    print(f"saved {r['path']} ({os.path.getsize(r['path'])} bytes); StableHLO text {r['text_length']} characters"
          + (f"; spy plot {r['png']}" if r["png"] else ""))
    print(r["fixed_point_repr"])

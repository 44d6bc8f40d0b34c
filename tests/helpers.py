"""Shared test helpers: compare detected patterns with numerical Jacobians at random points."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from stablehlo_sparsity import jacobian_sparsity


def _flat_jacobian(f, args, argnums):
    """The dense (m × n) Jacobian of flattened outputs w.r.t. flattened selected inputs."""
    argnums_t = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    jac = jax.jacfwd(f, argnums=argnums_t)(*args)
    out_leaves = jax.tree_util.tree_leaves(jax.eval_shape(f, *args))
    # jac is a pytree of out leaves, each a tuple (per argnum) of pytrees of in leaves.
    out_struct = jax.tree_util.tree_structure(jax.eval_shape(f, *args))
    per_out = out_struct.flatten_up_to(jac)
    rows = []
    for o, blk in zip(out_leaves, per_out):
        m = int(np.prod(o.shape, dtype=np.int64))
        cols = [np.asarray(leaf).reshape(m, -1) for leaf in jax.tree_util.tree_leaves(blk)]
        rows.append(np.concatenate(cols, axis=1) if cols else np.zeros((m, 0)))
    return np.concatenate(rows, axis=0)


def random_like(x, rng):
    x = jnp.asarray(x)
    if jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.asarray(rng.standard_normal(x.shape), dtype=x.dtype)
    return x


def numerical_pattern(f, *args, argnums=0, points=3, seed=0, sampler=None):
    """Union over random points of ``|jax.jacfwd(f)| > 0`` (flattened, asdex convention)."""
    rng = np.random.default_rng(seed)
    argnums_t = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    acc = None
    for _ in range(points):
        if sampler is not None:
            pt = sampler(rng)
        else:
            pt = [jax.tree_util.tree_map(lambda a: random_like(a, rng), a) if i in argnums_t else a
                  for i, a in enumerate(args)]
        J = _flat_jacobian(f, pt, argnums)
        nz = np.abs(np.nan_to_num(J, nan=1.0)) > 0
        acc = nz if acc is None else (acc | nz)
    return acc


def assert_sound(f, *args, argnums=0, exact=False, points=3, seed=0, sampler=None, **kw):
    """The detected pattern contains every numerical nonzero; with ``exact``, equals the numerical union."""
    pat = jacobian_sparsity(f, *args, argnums=argnums, **kw)
    num = numerical_pattern(f, *args, argnums=argnums, points=points, seed=seed, sampler=sampler)
    det = pat.todense()
    assert det.shape == num.shape, (det.shape, num.shape)
    missed = np.argwhere(num & ~det)
    assert missed.size == 0, f"missed {len(missed)} nonzeros, e.g. {missed[:5].tolist()}\n{pat}"
    if exact:
        extra = np.argwhere(det & ~num)
        assert extra.size == 0, f"{len(extra)} extra nonzeros, e.g. {extra[:5].tolist()}\n{pat}"
    return pat

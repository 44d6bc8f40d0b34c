"""The second-order walk over lazy group unions (a scatter-add's result, :mod:`~stablehlo_sparsity.lattice.
representations.group_parts`): the same Hessian pattern as with eager unions, every nonzero of JAX's Hessian, and
no more than the gradient path's — on scatters summed to a scalar (where the union is never built), scatters read
by a nonlinear op, a stencil, a second scatter and a loop (where it is), with the thresholds lowered so that small
programs take the lazy path."""

from __future__ import annotations

from contextlib import contextmanager
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity.lattice import groups
from stablehlo_sparsity.lattice.representations import group_parts
from test_second_order import check

N = 60
_rng = np.random.default_rng(11)
SRC = np.concatenate([np.arange(N), _rng.integers(0, N, N)])
DST = np.concatenate([(np.arange(N) + 1) % N, _rng.integers(0, N, N)])


@contextmanager
def lazy_groups():
    with mock.patch.object(group_parts, "LAZY_GROUP_MEMBERS", 0), mock.patch.object(group_parts, "LAZY_GROUP_ROWS", 0):
        yield


def laplacian_energy(x):
    """``xᵀ L(x)``: the held-out ``graph_laplacian_scatter`` (the union summed to a scalar: never built)."""
    flux = jnp.tanh(x[SRC] - x[DST])
    div = jnp.zeros_like(x).at[SRC].add(flux).at[DST].add(-flux)
    return jnp.dot(x, div) + jnp.sum(x * x)


def nonlinear_of_scatter(x):
    """A nonlinear op reads the scattered rows (the union is built)."""
    div = jnp.zeros_like(x).at[SRC].add(x[DST] ** 2)
    return jnp.sum(jnp.sin(div) * x)


def stencil_of_scatter(x):
    """Shifted slices of a scatter's result (one union, shared by every shift)."""
    div = jnp.zeros(N + 2).at[SRC + 1].add(x[DST] * x[SRC])
    return jnp.sum((div[2:] - 2 * div[1:-1] + div[:-2]) ** 2)


def segment_energy(x):
    """A segment sum of edge energies, squared per node, partly masked by a select."""
    e = jnp.cos(x[SRC]) * x[DST]
    node = jax.ops.segment_sum(e, SRC % 17, num_segments=17)
    return jnp.sum(jnp.where(jnp.arange(17) % 3 == 0, 0.0, node ** 2))


def scatter_in_a_loop(x):
    """The scatter inside a loop's body, its result carried."""
    def body(_, acc):
        return acc + jnp.zeros_like(x).at[SRC].add(jnp.tanh(acc[DST] * x[SRC]))
    return jnp.sum(jax.lax.fori_loop(0, 3, body, x))


PROGRAMS = [laplacian_energy, nonlinear_of_scatter, stencil_of_scatter, segment_energy, scatter_in_a_loop]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_lazy_group_unions_give_the_same_hessian_pattern(f):
    x = jnp.asarray(np.random.default_rng(0).uniform(-1.0, 1.0, N))
    eager = ss.hessian_sparsity(f, x, method="direct")
    with lazy_groups():
        direct, via, num = check(f, (x,))
        lazy = ss.hessian_sparsity(f, x, method="direct")
    assert lazy == eager
    assert num.any()            # (``check``: no nonzero of JAX's Hessian missed, none beyond the gradient path's)


def test_the_laplacian_union_is_never_built(monkeypatch):
    """On ``x · div``, neither the reduction nor the cross term builds the scattered rows: only their first-order
    columns are grouped."""
    built = []
    base = group_parts.GroupPart.base.fget

    def tracking(self):
        if not self.built:
            built.append(self)
        return base(self)

    monkeypatch.setattr(group_parts.GroupPart, "base", property(tracking))
    x = jnp.asarray(np.random.default_rng(1).uniform(-1.0, 1.0, N))
    created = []
    init = group_parts.GroupPart.__init__

    def counting(self, *args):
        created.append(self)
        init(self, *args)

    monkeypatch.setattr(group_parts.GroupPart, "__init__", counting)
    with lazy_groups(), mock.patch.object(groups, "ONE_GROUP_ROWS", 1):   # (the contraction as at n ≥ 256)
        ss.hessian_sparsity(laplacian_energy, x, method="direct")
    assert created and not built

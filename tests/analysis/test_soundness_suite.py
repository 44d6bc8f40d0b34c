"""The soundness suite: JAX functions whose detected pattern is compared with ``|jax.jacfwd| > 0``.

Every case checks that no numerical nonzero is missed, at several random points.  Where the true global
pattern is known the check is equality: either with the numerical union (``exact``: the union over the
points reaches the global pattern, e.g. for linear maps or products of distinct inputs), or with an
explicitly constructed pattern (``expected``: e.g. a max over a slice, whose global pattern is the whole
slice although each point sees one element).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from stablehlo_sparsity import SparsityWarning, jacobian_sparsity
from stablehlo_sparsity.examples import brusselator, laplacian_cubic
from stablehlo_sparsity.analysis.rules import DEPS_RULES
from helpers import numerical_pattern


@dataclass
class Case:
    f: Callable
    args: tuple
    argnums: int | tuple = 0
    exact: bool = True
    expected: Callable | None = None  # () -> dense bool matrix of the true global pattern
    points: int = 3
    kwargs: dict = field(default_factory=dict)
    has_aux: bool = False
    needs: tuple = ()  # ops whose rule must be registered (skip only while the rule is missing)
    warns: bool = False  # a conservative step is expected to say so (SparsityWarning)


def ones(*shape):
    return jnp.ones(shape)


def rand(*shape, seed=0):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape))


def block_pattern(groups_out, groups_in):
    """Dense pattern where output i depends on input j iff they fall in the same group label."""
    go, gi = np.asarray(groups_out).ravel(), np.asarray(groups_in).ravel()
    return go[:, None] == gi[None, :]


# ---------------------------------------------------------------- the functions
def lap1d_slices(x):
    return x[:-2] - 2 * x[1:-1] + x[2:]


def lap1d_roll(x):
    return jnp.roll(x, 1) - 2 * x + jnp.roll(x, -1) + jnp.sin(x)


def lap2d_slices(u):
    return u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1] + u[1:-1, 1:-1] ** 3


def lap2d_roll(u):
    return sum(jnp.roll(u, s, a) for s in (1, -1) for a in (0, 1)) - 4 * u


def ninepoint_roll(u):
    return sum(jnp.roll(jnp.roll(u, i, 0), j, 1) * (1 + abs(i) + abs(j)) for i in (-1, 0, 1) for j in (-1, 0, 1))


def upwind(x):
    a = jnp.tanh(x)
    return jnp.where(a > 0, a * (x - jnp.roll(x, 1)), a * (jnp.roll(x, -1) - x))


def burgers_flux(x):
    f = 0.5 * x ** 2
    return (f[2:] - f[:-2]) / 2 + 0.1 * (x[2:] - 2 * x[1:-1] + x[:-2])


def gradient_2d(u):
    gy, gx = jnp.gradient(u)
    return gx * gy


def diff2(x):
    return jnp.diff(x, n=2) * x[1:-1]


def conv1d(x):
    return jnp.convolve(x, jnp.array([1.0, -2.0, 1.0]), mode="same")


def cumsum_sq(x):
    return jnp.cumsum(x ** 2)


def reshape_transpose_mix(x):
    return x.reshape(3, 4).T.reshape(-1) * x


def swap_reshape(x):
    return jnp.swapaxes(x.reshape(2, 3, 4), 0, 2).reshape(4, 6) ** 2


def block_transpose(x):
    return x.reshape(2, 2, 3).transpose(1, 0, 2).reshape(-1) * jnp.arange(1.0, 13.0)


def einsum_transpose(x):
    return jnp.einsum("ijk->kij", x) * 3


def outer(x, y):
    return x[:, None] * y[None, :]


def plus_total(x):
    return x + jnp.sum(x)


def row_normalize(x):
    return x / jnp.sum(x ** 2 + 1, axis=1, keepdims=True)


def softmax_rows(x):
    return jax.nn.softmax(x, axis=1)


def center_columns(x):
    return x - jnp.mean(x, axis=0)


def sum_axis(axis):
    return lambda x: jnp.sum(x ** 2, axis=axis)


def prod_02(x):
    return jnp.prod(x, axis=(0, 2))


def max_axis1(x):
    return jnp.max(x, axis=1)


def min_axis0(x):
    return jnp.min(x, axis=0)


def take_argmax(x):
    return x[jnp.argmax(x)] * x


def logsumexp_last(x):
    return jax.scipy.special.logsumexp(x, axis=-1)


def row_norms(x):
    return jnp.linalg.norm(x, axis=1)


def mean_all(x):
    return jnp.mean(jnp.sin(x))


def rank_one(x):
    return jnp.sum(x) * x


def batched_matmul(a, b):
    return jnp.einsum("bij,bjk->bik", a, b)


A_CONST = np.random.default_rng(1).standard_normal((5, 6)) * (np.random.default_rng(2).random((5, 6)) > 0.5)


def sparse_const_matvec(x):
    return jnp.asarray(A_CONST) @ x


def gram(x):
    return x @ x.T


def broadcast_matmul(a, b):
    return jnp.matmul(a, b)


def tensordot(a, x):
    return jnp.tensordot(a, x, axes=([1, 2], [0, 1]))


def kron(x, y):
    return jnp.kron(x, y)


def dict_io(p):
    return {"s": p["a"] + p["b"], "p": p["a"] * p["b"][::-1], "t": jnp.sum(p["c"]) * p["a"]}


def tuple_io(x, yz):
    y, z = yz
    return (x * y, (jnp.roll(z, 1) + x[0], z ** 2))


def three_args(x, y, z):
    return x * y[0] + jnp.cos(z), z[::-1] * x


def list_out(x):
    return [x, x ** 2, jnp.sum(x)]


def with_aux(x):
    y = jnp.roll(x, 1) * x
    return y, {"norm": jnp.linalg.norm(x), "count": 3}


def with_kwargs(x, scale=1.0, stencil="roll"):  # (not ``mode``: a library keyword, never forwarded to f)
    if stencil == "roll":
        return scale * jnp.roll(x, 2) * x
    return scale * x


def nested_dict_out(x):
    return {"a": {"b": x[0] * x[1], "c": jnp.sum(x)}, "d": x[::2]}


def conv2d_strided(x):
    w = jnp.asarray(np.random.default_rng(3).standard_normal((2, 1, 3, 3)))
    return lax.conv_general_dilated(x, w, window_strides=(2, 1), padding="SAME", rhs_dilation=(1, 2))


def conv2d_groups(x):
    w = jnp.asarray(np.random.default_rng(4).standard_normal((4, 1, 2, 2)))
    return lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=2)


def euler_steps(x):
    def step(i, u):
        return u + 0.1 * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1))

    return lax.fori_loop(0, 2, step, x)


def scan_cumprod(x):
    def body(c, xi):
        c = c * jnp.tanh(xi) + xi
        return c, c

    return lax.scan(body, 0.0, x)[1]


IDX = np.array([4, 0, 2, 2, 5])


def gather_const(x):
    return x[IDX] * x[:5]


def scatter_add(x):
    return jnp.zeros(4).at[np.array([0, 3, 3, 1])].add(x[:4] ** 2) + x[4:]


def sort_vals(x):
    return jnp.sort(x)


def cond_branch(x):
    return lax.cond(jnp.sum(x) > 0, lambda v: jnp.roll(v, 1) * v, lambda v: v ** 2, x)


def even_odd(x):
    return x[::2] * x[1::2]


def dyn_slice_const(x):
    return lax.dynamic_slice(x, (2,), (3,)) * x[:3]


def max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (2, 2), "VALID")


def clamp_mix(x, lo, hi):
    return lax.clamp(lo, x, hi) * x


N_BRUSS = 5


def _sum_axis_expected(shape, axis):
    def build():
        idx = np.indices(shape)
        keep = [d for d in range(len(shape)) if d != axis]
        label = np.ravel_multi_index([idx[d] for d in keep], [shape[d] for d in keep])
        out = np.arange(int(np.prod([shape[d] for d in keep])))
        return block_pattern(out, label)

    return build


def _slice_groups(shape, axes):
    """Output element per remaining coordinate; every input in its slice along ``axes``."""
    def build():
        idx = np.indices(shape)
        keep = [d for d in range(len(shape)) if d not in axes]
        label = np.ravel_multi_index([idx[d] for d in keep], [shape[d] for d in keep])
        return block_pattern(np.arange(int(np.prod([shape[d] for d in keep]))), label)

    return build


def _pool_expected():
    idx = np.indices((4, 6))
    label = (idx[0] // 2) * 3 + idx[1] // 2
    return block_pattern(np.arange(6), label)


CASES = {
    # stencils
    "lap1d_slices": Case(lap1d_slices, (ones(9),), points=1),
    "lap1d_roll": Case(lap1d_roll, (ones(8),)),
    "laplacian_cubic": Case(laplacian_cubic, (ones(10),)),
    "lap2d_slices": Case(lap2d_slices, (ones(6, 7),)),
    "lap2d_roll": Case(lap2d_roll, (ones(5, 6),), points=1),
    "ninepoint_roll": Case(ninepoint_roll, (ones(5, 5),), points=1),
    "brusselator_2d": Case(functools.partial(brusselator, N=N_BRUSS), (ones(2 * N_BRUSS ** 2),)),
    "upwind_select": Case(upwind, (ones(7),), exact=False, points=4),
    "burgers_flux": Case(burgers_flux, (ones(9),)),
    "gradient_2d": Case(gradient_2d, (ones(4, 5),)),
    "diff2": Case(diff2, (ones(8),)),
    "conv1d": Case(conv1d, (ones(8),), points=1, needs=("stablehlo.convolution",)),
    "cumsum": Case(cumsum_sq, (ones(6),), needs=("stablehlo.reduce_window",)),
    # reshapes, transposes, broadcasting
    "reshape_transpose_mix": Case(reshape_transpose_mix, (ones(12),)),
    "swap_reshape": Case(swap_reshape, (ones(24),)),
    "block_transpose": Case(block_transpose, (ones(12),), points=1),
    "einsum_transpose": Case(einsum_transpose, (ones(2, 3, 4),), points=1),
    "outer": Case(outer, (ones(4), ones(3)), argnums=(0, 1)),
    "plus_total": Case(plus_total, (ones(5),), points=1, needs=("stablehlo.reduce",)),
    "row_normalize": Case(row_normalize, (ones(3, 4),), needs=("stablehlo.reduce",)),
    "softmax_rows": Case(softmax_rows, (ones(3, 4),), needs=("stablehlo.reduce",)),
    "center_columns": Case(center_columns, (ones(3, 4),), points=1, needs=("stablehlo.reduce",)),
    # reductions over each axis
    "sum_axis0": Case(sum_axis(0), (ones(2, 3, 4),), needs=("stablehlo.reduce",)),
    "sum_axis1": Case(sum_axis(1), (ones(2, 3, 4),), needs=("stablehlo.reduce",)),
    "sum_axis2": Case(sum_axis(2), (ones(2, 3, 4),), needs=("stablehlo.reduce",)),
    "prod_axes02": Case(prod_02, (ones(2, 3, 4),), needs=("stablehlo.reduce",)),
    "max_axis1": Case(max_axis1, (ones(3, 4, 2),), exact=False, expected=_slice_groups((3, 4, 2), (1,)),
                      needs=("stablehlo.reduce",)),
    "min_axis0": Case(min_axis0, (ones(3, 4),), exact=False, expected=_slice_groups((3, 4), (0,)),
                      needs=("stablehlo.reduce",)),
    "take_argmax": Case(take_argmax, (ones(5),), exact=False, warns=True,
                        needs=("stablehlo.reduce", "stablehlo.dynamic_slice")),
    "logsumexp_last": Case(logsumexp_last, (ones(3, 4),), needs=("stablehlo.reduce",)),
    "row_norms": Case(row_norms, (ones(3, 4),), needs=("stablehlo.reduce",)),
    "mean_all": Case(mean_all, (ones(2, 3),), needs=("stablehlo.reduce",)),
    "rank_one": Case(rank_one, (ones(4),), needs=("stablehlo.reduce",)),
    # contractions
    "batched_matmul": Case(batched_matmul, (ones(2, 3, 4), ones(2, 4, 2)), argnums=(0, 1),
                           needs=("stablehlo.dot_general",)),
    "sparse_const_matvec": Case(sparse_const_matvec, (ones(6),), points=1, needs=("stablehlo.dot_general",)),
    "gram": Case(gram, (ones(3, 4),), needs=("stablehlo.dot_general",)),
    "broadcast_matmul": Case(broadcast_matmul, (ones(2, 3, 4), ones(4, 2)), argnums=(0, 1),
                             needs=("stablehlo.dot_general",)),
    "tensordot": Case(tensordot, (ones(3, 2, 4), ones(2, 4)), argnums=(0, 1), needs=("stablehlo.dot_general",)),
    "kron": Case(kron, (ones(2, 2), ones(2, 3)), argnums=(0, 1)),
    # pytrees, argnums, has_aux, kwargs
    "dict_io": Case(dict_io, ({"a": ones(4), "b": ones(4), "c": ones(2)},), needs=("stablehlo.reduce",)),
    "tuple_io": Case(tuple_io, (ones(3), (ones(3), ones(3))), argnums=(0, 1)),
    "argnums_0_2": Case(three_args, (ones(3), ones(2), ones(3)), argnums=(0, 2)),
    "argnums_1": Case(three_args, (ones(3), ones(2), ones(3)), argnums=1),
    "argnums_negative": Case(three_args, (ones(3), ones(2), ones(3)), argnums=(-1, 0)),
    "list_out": Case(list_out, (ones(4),), needs=("stablehlo.reduce",)),
    "has_aux": Case(with_aux, (ones(5),), has_aux=True, needs=("stablehlo.reduce",)),
    "kwargs_roll": Case(with_kwargs, (ones(5),), kwargs={"scale": 2.0, "stencil": "roll"}),
    "kwargs_plain": Case(with_kwargs, (ones(5),), kwargs={"stencil": "plain"}, points=1),
    "nested_dict_out": Case(nested_dict_out, (ones(6),), needs=("stablehlo.reduce",)),
    # convolutions, loops, indexing, sorting, branches, windows
    "conv2d_strided_dilated": Case(conv2d_strided, (ones(1, 1, 6, 7),), points=1, needs=("stablehlo.convolution",)),
    "conv2d_groups": Case(conv2d_groups, (ones(1, 2, 4, 4),), points=1, needs=("stablehlo.convolution",)),
    "fori_euler": Case(euler_steps, (ones(7),), points=1, needs=("stablehlo.while",)),
    "scan_recurrence": Case(scan_cumprod, (ones(5),), needs=("stablehlo.while",)),
    "gather_const": Case(gather_const, (ones(6),), needs=("stablehlo.gather",)),
    "scatter_add": Case(scatter_add, (ones(8),), needs=("stablehlo.scatter",)),
    "sort": Case(sort_vals, (ones(5),), exact=False, expected=lambda: np.ones((5, 5), bool),
                 needs=("stablehlo.sort",)),
    "cond_branch": Case(cond_branch, (ones(4),), exact=False, needs=("stablehlo.case",)),
    "even_odd": Case(even_odd, (ones(8),)),
    "dynamic_slice_const": Case(dyn_slice_const, (ones(6),), needs=("stablehlo.dynamic_slice",)),
    "max_pool": Case(max_pool, (ones(4, 6),), exact=False, expected=_pool_expected,
                     needs=("stablehlo.reduce_window",)),
    "clamp_operand_and_bounds": Case(clamp_mix, (ones(4), ones(4), ones(4)), argnums=(0, 1, 2), exact=False,
                                     expected=lambda: np.hstack([np.eye(4, dtype=bool)] * 3)),
}


def _numerical(case: Case):
    f = functools.partial(case.f, **case.kwargs) if case.kwargs else case.f
    if case.has_aux:
        g = f
        f = lambda *a: g(*a)[0]  # noqa: E731
    return numerical_pattern(f, *case.args, argnums=case.argnums, points=case.points, jit=True)


@pytest.mark.parametrize("name", list(CASES))
def test_sound(name):
    case = CASES[name]
    missing = [op for op in case.needs if op not in DEPS_RULES]
    assert not missing, f"{name} needs ops without a rule: {', '.join(missing)}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pat = jacobian_sparsity(case.f, *case.args, argnums=case.argnums, has_aux=case.has_aux, **case.kwargs)
    said = [w for w in caught if issubclass(w.category, SparsityWarning)]
    assert bool(said) == case.warns, [str(w.message) for w in said]
    det = pat.todense()
    num = _numerical(case)
    assert det.shape == num.shape, (det.shape, num.shape)
    missed = np.argwhere(num & ~det)
    assert missed.size == 0, f"missed {len(missed)} nonzeros, e.g. {missed[:5].tolist()}\n{pat}"
    if case.exact:
        extra = np.argwhere(det & ~num)
        assert extra.size == 0, f"{len(extra)} extra nonzeros, e.g. {extra[:5].tolist()}\n{pat}"
    if case.expected is not None:
        want = case.expected()
        assert np.array_equal(det, want), f"pattern differs from the known global pattern\n{pat}"


def test_suite_size():
    assert len(CASES) >= 50


def test_brusselator_structure():
    """Each u/v element: its own 5-point stencil plus the other species at the same point (6 nonzeros)."""
    N = N_BRUSS
    pat = jacobian_sparsity(functools.partial(brusselator, N=N), jnp.ones(2 * N * N))
    assert pat.shape == (2 * N * N, 2 * N * N)
    assert np.all(pat.row_counts() == 6)
    assert pat.nnz == 12 * N * N


def test_sum_axis_expected_patterns():
    """Reductions over each axis: the exact block pattern (also via the numerical union above)."""
    assert "stablehlo.reduce" in DEPS_RULES
    for axis in range(3):
        pat = jacobian_sparsity(sum_axis(axis), jnp.ones((2, 3, 4)))
        assert np.array_equal(pat.todense(), _sum_axis_expected((2, 3, 4), axis)())

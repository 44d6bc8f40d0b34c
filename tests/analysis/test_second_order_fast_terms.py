"""The cheap paths of the direct Hessian's local terms (issue 34): a product's pairs built from the union of its
factors, a product term of operands made of index parts built as index parts, and the lazy union of an add.
Each gives exactly the pattern of the general machinery, and contains the nonzeros of ``jax.hessian``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import numerical_pattern

from stablehlo_sparsity import hessian_sparsity
from stablehlo_sparsity.analysis.second_order import bodies, encoding, terms
from stablehlo_sparsity.analysis.second_order.interpreter import SecondOrderInterpreter
from stablehlo_sparsity.lattice.core import make_csr


def _numeric_hessian(f, n):
    """The nonzeros of ``jax.hessian(f)`` (the Jacobian of the gradient) at three random points."""
    return numerical_pattern(jax.grad(f), jnp.ones(n), points=3, jit=True)


def _direct(f, n):
    return hessian_sparsity(f, jnp.ones(n), method="direct").todense()


# ------------------------------------------------------------------------------------- products of one group
def _brute_factor_pairs(dense: np.ndarray, members, n: int) -> list[int]:
    codes = set()
    for a in range(len(members)):
        for b in range(len(members)):
            if a != b:
                for u in np.flatnonzero(dense[members[a]]):
                    for v in np.flatnonzero(dense[members[b]]):
                        codes.add(n + min(u, v) * n + max(u, v))
    return sorted(codes)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_products_pairs_from_the_union_are_those_of_every_pair_of_factors(data):
    n = data.draw(st.integers(1, 9))
    k = data.draw(st.integers(1, 7))
    dense = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=k, max_size=k)))
    s = sp.csr_array(dense)
    s.sort_indices()
    s = make_csr(s.indptr.astype(np.int64), s.indices.astype(np.int64), k, n)
    members = np.array(sorted(data.draw(st.sets(st.integers(0, k - 1)))), np.int64)
    got = encoding.distinct_factor_pairs(s, members, n)
    want = _brute_factor_pairs(dense, members, n)
    if got is None:  # declined: one factor holds most columns — the factor-pair path then gives the same
        return
    assert got.rows == 1 and got.n == n + n * n
    assert list(got.to_csr().indices) == want


def test_one_factor_holding_every_column_is_declined():
    # one factor over 300 columns, the others constant: the union's triangle (45,150 codes) would be built
    # for nothing
    n = 300
    dense = np.zeros((4, n), bool)
    dense[0] = True
    s = sp.csr_array(dense)
    s = make_csr(s.indptr.astype(np.int64), s.indices.astype(np.int64), 4, n)
    assert encoding.distinct_factor_pairs(s, np.arange(4), n) is None


PRODUCTS = [
    lambda x: jnp.prod(x),
    lambda x: jnp.prod(x[:3]) + jnp.sum(x ** 2),
    lambda x: jnp.prod(x ** 2),
    lambda x: jnp.prod(jnp.concatenate([x[:2], jnp.sin(x[2:])])),
    lambda x: jnp.prod(x[0] * x),                      # x0 in every factor: {0, 0} and {0, v}
    lambda x: jnp.prod(jnp.stack([x[0], x[0], x[1]])),  # one input in two factors: its square
    lambda x: jnp.prod(jnp.stack([x[0] * x[1], x[2], 2.0])),  # one factor holds two inputs, one constant
    lambda x: jnp.prod(jnp.stack([x[0] * x[1], 3.0])),  # one factor only: nothing beyond its own term
    lambda x: jnp.prod(x[1:] + x[:-1]),
    lambda x: jnp.prod(jnp.where(jnp.arange(6) % 2 == 0, x, 1.0)),
]


@pytest.mark.parametrize("f", PRODUCTS)
def test_products_of_one_group_are_the_numbers_of_jax(f, monkeypatch):
    built = []
    original = bodies.distinct_factor_pairs
    monkeypatch.setattr(bodies, "distinct_factor_pairs", lambda *a: built.append(original(*a)) or built[-1])
    fast = _direct(f, 6)
    assert built and all(b is not None for b in built)     # (the union path was taken)
    assert not (_numeric_hessian(f, 6) & ~fast).any()
    monkeypatch.setattr(bodies, "distinct_factor_pairs", lambda *a: None)
    assert np.array_equal(_direct(f, 6), fast)


# ------------------------------------------------------------------------------------- terms of index parts
OBJECTIVES = [
    lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2),
    lambda x: jnp.sum(x[1:] * x[:-1]),
    lambda x: jnp.sum((x[:-1] ** 2 + x[-1] ** 2) ** 2 - 4.0 * x[:-1]),      # a broadcast row of one input
    lambda x: jnp.sum((x[:-1] + x[0] * x[1]) ** 2),                          # a broadcast row of two inputs
    lambda x: jnp.sum((x[:-1] + x[0] * x[1] * x[2]) ** 2),                   # three: the CSR path
    lambda x: jnp.sum((x[:-1] ** 2 + x[1:] ** 2) ** 2),
    lambda x: jnp.sum(jnp.concatenate([x[:2], jnp.zeros(3)]) ** 2 * x[1:]),  # rows without an input
    lambda x: jnp.sum(jnp.concatenate([x[:2] ** 2, x[2:]]) ** 2),            # a part of pairs beside inputs
    lambda x: jnp.sum(jnp.concatenate([x[:3] ** 2, jnp.sin(x[3:])]) * x[::-1]),
    lambda x: jnp.sum((x[0:5:2] - x[1:6:2]) * (x[0:5:2] + 2.0 * x[1:6:2])),
    lambda x: jnp.sum(jnp.where(jnp.arange(5) > 1, x[1:], 0.0) * x[:-1]),
    lambda x: jnp.sum(((x[1:] - x[:-1]) * (x[1:] + x[:-1])) ** 2 / (1.0 + x[1:] ** 2)),
]


@pytest.mark.parametrize("f", OBJECTIVES)
def test_terms_of_index_parts_are_the_csr_paths_and_the_numbers_of_jax(f, monkeypatch):
    fast = _direct(f, 6)
    assert not (_numeric_hessian(f, 6) & ~fast).any()
    monkeypatch.setattr(terms, "MAX_INDEX_TERMS", -1)
    assert np.array_equal(_direct(f, 6), fast)


def test_the_index_path_is_taken_for_index_operands(monkeypatch):
    calls = []
    original = terms._index_cross

    def spy(*a):
        out = original(*a)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(terms, "_index_cross", spy)
    _direct(OBJECTIVES[0], 6)
    _direct(OBJECTIVES[2], 6)
    assert calls and all(calls)


@pytest.mark.parametrize("f", OBJECTIVES + PRODUCTS)
def test_lazy_unions_of_adds_change_no_pattern(f, monkeypatch):
    lazy = _direct(f, 6)
    monkeypatch.setattr(SecondOrderInterpreter, "eager_unions", True)
    assert np.array_equal(_direct(f, 6), lazy)


FRESH = r"""
import jax, jax.numpy as jnp, numpy as np
import stablehlo_sparsity as ss

def written(x):  # 300+ equations: walked as a copy cleared by cse
    return jnp.stack([x[i] * x[i + 1] - 2.0 * x[i - 1] + jnp.sin(x[i]) for i in range(1, 39)])

def objective(x):  # index-part terms, a broadcast row, a product of one group, a chain of adds
    return (jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
            + jnp.sum((x[:-1] ** 2 + x[-1] ** 2) ** 2) + jnp.prod(x[:5]))

def long_objective(x):
    return sum((x[i] - x[i + 1] ** 2) ** 2 for i in range(39))

x = jnp.ones(40)
points = [jax.random.uniform(jax.random.PRNGKey(s), (40,), minval=0.3, maxval=1.7) for s in range(3)]
jac = ss.jacobian_sparsity(written, x).todense()
assert not any(((np.asarray(jax.jacfwd(written)(p)) != 0) & ~jac).any() for p in points)
for g in (objective, long_objective):
    h = ss.hessian_sparsity(g, x, method="direct").todense()
    assert not any(((np.asarray(jax.hessian(g)(p)) != 0) & ~h).any() for p in points)
    assert (h == ss.hessian_sparsity(g, x, method="via-gradient").todense()).all()
print("ok")
"""


def test_the_cheap_paths_in_a_fresh_process():
    # nothing an earlier test left in this process (JAX's caches of lowered modules, the bindings' objects, our
    # caches of types and triangles) helps the cse copy and the cheap terms there
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")

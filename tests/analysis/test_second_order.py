"""The direct (second-order) Hessian analysis against ``jax.hessian`` and against the gradient path.

Every check is two-sided: the direct pattern contains the union of the numerical Hessian's nonzeros at
random points (soundness), and it is contained in the via-gradient pattern (precision: never worse than the
oracle), except where the list :data:`LARGER_THAN_VIA_GRADIENT` says why.
"""

from __future__ import annotations

import functools
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from jax import lax

import strategies as S
from helpers import numerical_pattern
from stablehlo_sparsity import InputError, hessian_sparsity
from stablehlo_sparsity.analysis.rules import DEPS_RULES
from stablehlo_sparsity.analysis.second_order import KINDS, NotCovered
from stablehlo_sparsity.analysis.second_order.encoding import full_rows, pair_rows, pairs_to_hessian
from stablehlo_sparsity.lattice import Deps
from test_soundness_suite import CASES

LONG = os.environ.get("SHS_LONG", "") not in ("", "0")

#: (case, wrapper) where the direct pattern is larger than the gradient path's, and why.  The gradient program
#: holds the objective's adjoint as folded constants, so it sees linear cancellation: the sum of
#: ``f[2:] - f[:-2]`` telescopes, and the interior squares never reach the output.  A forward lattice cannot
#: see that (the union of ``{i,i}`` over the differences is every ``i``).
LARGER_THAN_VIA_GRADIENT = {("burgers_flux", "sum")}

#: Random-program generators whose constructs the direct analysis may bound more coarsely than the gradient
#: path: a convolution of two unknown operands pairs every lhs element an output reads with every rhs element
#: it reads (sound, cross-only), the gradient path pairs them tap by tap; linear algebra (custom calls) takes
#: the full term.
COARSER_GENERATORS = {"conv", "linalg"}


def numerical_hessian(g, args, argnums, points=2):
    """Union of ``|∇²g| > 0`` at random points (the Jacobian of the gradient, flattened)."""
    an = argnums if isinstance(argnums, tuple) else (argnums,)
    grad = jax.grad(g, argnums=an if len(an) > 1 else an[0])
    return numerical_pattern(grad, *args, argnums=argnums, points=points, jit=True)


def both(g, args, argnums=0):
    direct = hessian_sparsity(g, *args, argnums=argnums, method="direct").todense()
    via = hessian_sparsity(g, *args, argnums=argnums, method="via-gradient").todense()
    return direct, via


def check(g, args, argnums=0, larger_ok=False, points=2):
    direct, via = both(g, args, argnums)
    num = numerical_hessian(g, args, argnums, points)
    assert not (num & ~direct).any(), f"direct misses {np.argwhere(num & ~direct)[:6].tolist()}"
    if not larger_ok:
        assert not (direct & ~via).any(), f"direct exceeds via-gradient at {np.argwhere(direct & ~via)[:6].tolist()}"
    assert (direct == direct.T).all()
    return direct, via, num


# ---------------------------------------------------------------- the encoding
def test_pair_columns_worked_example():
    """The docstring's example: n = 2, d = x0 - x1, d·d pairs {0,0} {0,1} {1,1} at columns 2, 3, 5."""
    import scipy.sparse as sp

    s = sp.csr_array(np.array([[1, 1]], bool))
    d = full_rows(s, 2).to_csr()
    assert d.indices.tolist() == [2, 3, 5]
    cross = pair_rows(np.array([0]), 1, sp.csr_array(np.array([[1, 0]], bool)), np.array([0]),
                      sp.csr_array(np.array([[0, 1]], bool)), np.array([0]), 2).to_csr()
    assert cross.indices.tolist() == [3]  # {0, 1} only: a product of distinct inputs has no diagonal
    h = pairs_to_hessian(Deps.union(Deps.from_csr(d), Deps.empty(1, 6)).to_csr(), 2).toarray()
    assert h.tolist() == [[True, True], [True, True]]


@pytest.mark.parametrize("band", [1, 3, 40_000])
def test_distinct_columns_by_marks_equals_a_sort(band):
    from stablehlo_sparsity.analysis.second_order.encoding import distinct_columns, pair_width

    n = 50_000
    rng = np.random.default_rng(band)
    u = rng.integers(0, n, 20_000)
    v = np.minimum(u + rng.integers(0, band, 20_000), n - 1)
    cols = np.concatenate([n + u * n + v, rng.integers(0, n, 5_000), n + u[:100] * n + v[:100]])
    got = distinct_columns(cols, pair_width(n))
    # band 40,000: marks would be larger than sorting, so the pair codes are sorted (the first-order columns
    # split off first); the answer is the same set either way
    assert np.array_equal(got, np.unique(cols))
    assert distinct_columns(cols, pair_width(n) + 1) is None  # not a pair width


def test_full_reduction_of_a_wide_column_space_sorts_instead_of_marking():
    """Deps.reduce_all over 10⁷ columns with a few entries: no 10⁷-flag vector, the same answer."""
    import scipy.sparse as sp

    n = 10_000_000
    m = sp.csr_array((np.ones(4, bool), (np.array([0, 0, 1, 2]), np.array([9_999_999, 5, 5, 17]))), shape=(3, n))
    d = Deps.union(Deps.from_csr(m), Deps.identity(2, n, 40).gather_rows(np.array([0, -1, 1])))
    assert d.reduce_all().to_csr().indices.tolist() == [5, 17, 40, 41, 9_999_999]


def test_every_first_order_op_is_classified():
    """Every op with a first-order rule has an explicit second-order class (the default full term is sound,
    but a missing entry would be an unreviewed op)."""
    assert sorted(set(DEPS_RULES) - set(KINDS)) == []


# ---------------------------------------------------------------- op classes
def test_product_is_cross_only():
    direct, via, _ = check(lambda x: x[0] * x[1] + x[2] * x[3], (jnp.ones(4),))
    assert direct.sum() == 4 and not direct.diagonal().any()


def test_square_and_divide():
    direct, via, _ = check(lambda x: x[0] ** 2 + x[1] / x[2] + x[3] / 2.0, (jnp.ones(4),))
    expected = np.zeros((4, 4), bool)
    expected[0, 0] = expected[1, 2] = expected[2, 1] = expected[2, 2] = True
    assert (direct == expected).all()


def test_known_zero_factor_kills_the_interaction():
    c = np.array([1.0, 0.0, 2.0])
    direct, _, _ = check(lambda x: jnp.sum(c * jnp.sin(x)), (jnp.ones(3),))
    assert direct.tolist() == np.diag([True, False, True]).tolist()


def test_dot_general_cross_terms():
    direct, via, _ = check(lambda x: x[:3] @ x[3:], (jnp.ones(6),))
    assert direct.sum() == 6 and not direct.diagonal().any()
    direct, via, _ = check(lambda x: x @ x, (jnp.ones(5),))  # Σ x_i²: diagonal only
    assert (direct == np.eye(5, dtype=bool)).all()
    a, b = jnp.ones((2, 3)), jnp.ones((3, 2))
    check(lambda a, b: jnp.sum(jnp.sin(a @ b)), (a, b), argnums=(0, 1))


def test_prod_has_no_diagonal():
    direct, via, _ = check(lambda x: jnp.sum(jnp.prod(x, axis=1)), (jnp.ones((3, 4)),))
    assert not direct.diagonal().any() and direct.sum() == 3 * 12
    check(lambda x: jnp.prod(x[:3] * x[1:]), (jnp.ones(4),))  # shared factors: x1², x2² appear


def test_a_product_of_all_elements_pairs_the_live_factors_only():
    """``jnp.prod`` to one element (its groups: every element, without the first-order rule's sub-analysis) of
    a matrix, with constant factors and factors that are one input twice: exactly the pairs of ``jax.hessian``."""
    w = jnp.asarray([[1.0, 2.0, 0.5], [3.0, 1.5, 2.5]])
    f = lambda x: jnp.prod(jnp.stack([x[0] * x[1], x[2], 2.0, x[3] + x[4], x[2], x[0]])) * jnp.sum(w)  # noqa: E731
    direct, via, _ = check(f, (jnp.ones(5),))
    assert direct.sum() == 5 * 5 - 5  # every pair but {1,1} (x1 once), {3,3}, {4,4} and {3,4} both ways (x3 + x4)
    check(lambda x: jnp.prod(x.reshape(2, 3) ** 2 + 1.0), (jnp.ones(6),))


def test_piecewise_linear_ops_add_nothing():
    f = lambda x: jnp.sum(jnp.abs(x)) + jnp.max(x) + jnp.sum(jnp.clip(x, -1, 1)) + jnp.sum(jnp.sort(x)) \
        + jnp.sum(jnp.where(x > 0, x, 2 * x))
    direct, via, _ = check(f, (jnp.ones(5),))
    assert not direct.any()


def test_max_of_squares_passes_interactions():
    direct, _, _ = check(lambda x: jnp.max(x ** 2) + jnp.max(x[:2] * x[2:4]), (jnp.ones(4),))
    assert direct.sum() == 4 + 4  # the diagonal, and {0,2} {1,3} both ways


def test_loop_with_nonlinear_body_iterates_exactly():
    """A fori_loop whose body multiplies neighbours: the while summary (a first-order relation) is off, so
    each iteration adds its products."""
    def f(x):
        def body(i, u):
            return u + 0.1 * u * jnp.roll(u, 1)
        return jnp.sum(lax.fori_loop(0, 3, body, x))
    direct, via, num = check(f, (jnp.ones(9),))
    assert (direct == num).all()


def test_scan_and_cond():
    def f(x):
        c, ys = lax.scan(lambda c, xi: (c * jnp.tanh(xi) + xi, c * xi), 0.0, x)
        return c + jnp.sum(ys) + lax.cond(x[0] > 0, lambda: x[1] * x[2], lambda: jnp.sin(x[3]))
    check(f, (jnp.ones(6),))


def test_gather_scatter_and_windows():
    idx = np.array([4, 0, 2, 2, 5])
    def f(x):
        y = x[idx] * x[::-1][:5]
        z = jnp.zeros(6).at[idx].add(x[:5] ** 2)
        pooled = lax.reduce_window(x.reshape(2, 3) ** 2, -jnp.inf, lax.max, (1, 2), (1, 1), "VALID")
        return jnp.sum(y) + jnp.sum(jnp.sin(z)) + jnp.sum(pooled) + jnp.sum(jnp.cumsum(x) ** 2)
    check(f, (jnp.ones(6),))


def test_convolution_of_two_unknowns_is_cross_only():
    from jax import lax

    def f(x, w):
        return jnp.sum(lax.conv_general_dilated(x[None, None, :], w[None, None, :], (1,), "SAME"))

    direct, via, _ = check(f, (jnp.ones(6), jnp.ones(3)), argnums=(0, 1), larger_ok=True)
    assert not direct[:6, :6].any() and not direct[6:, 6:].any()  # no pair within one operand
    assert direct.sum() == 36 and via.sum() == 32  # coarser than the taps' exact pairing (documented)


def test_linear_solve_is_conservative_and_sound():
    A = jnp.asarray(np.random.default_rng(0).standard_normal((4, 4)))
    check(lambda x: jnp.sum(jnp.linalg.solve(A + jnp.diag(x), x) ** 2), (jnp.ones(4),), larger_ok=True)


def test_custom_rule_falls_back_to_the_gradient():
    @jax.custom_jvp
    def g(x):
        return jnp.sum(x ** 2)

    g.defjvp(lambda p, t: (g(p[0]), jnp.sum(jnp.roll(p[0], 1) * t[0])))  # a derivative that mixes neighbours
    with pytest.raises(NotCovered):
        hessian_sparsity(g, jnp.ones(4), method="direct")
    auto = hessian_sparsity(g, jnp.ones(4)).todense()
    assert (auto == hessian_sparsity(g, jnp.ones(4), method="via-gradient").todense()).all()


def test_auto_falls_back_when_interactions_exceed_the_budget():
    from stablehlo_sparsity import AnalysisOptions, PatternTooLargeError

    f = lambda x: jnp.sin(x)[0]  # sin(x) holds 20 first-order sets and 20 interactions: 40 > 30
    opts = AnalysisOptions(max_pattern_nnz=30)
    with pytest.raises(PatternTooLargeError):
        hessian_sparsity(f, jnp.ones(20), method="direct", options=opts)
    auto = hessian_sparsity(f, jnp.ones(20), options=opts)
    assert auto.nnz == hessian_sparsity(f, jnp.ones(20), method="via-gradient", options=opts).nnz


def test_bad_method_and_non_scalar():
    with pytest.raises(InputError, match="method"):
        hessian_sparsity(jnp.sum, jnp.ones(3), method="forward")
    with pytest.raises(InputError, match="scalar"):
        hessian_sparsity(jnp.sin, jnp.ones(3), method="direct")
    with pytest.raises(InputError, match="local"):
        hessian_sparsity(jnp.sum, jnp.ones(3), method="direct", local=True)


def test_more_inputs_than_fit_packed_runs():
    """n = 50,000: pair columns pass 2³¹ (the lattice's run-length compaction packs columns in 31 bits and
    must stand aside; it once wrapped around and asked for 10¹⁴ nonzeros)."""
    n = 50_000

    def f(x):  # a 1-D Brusselator-like residual, squared: the banded unions the run compaction likes
        lap = jnp.roll(x, 1) + jnp.roll(x, -1) - 2 * x
        return jnp.sum((x * x * jnp.roll(x, 1) + lap) ** 2)

    h = hessian_sparsity(f, jnp.ones(n), method="direct").to_scipy()
    assert h.nnz == 5 * n  # pentadiagonal, periodic
    assert h[0, n - 1] and h[0, n - 2] and h[7, 9] and not h[0, 3]


def test_direct_never_lowers_the_gradient(monkeypatch):
    """The direct path builds no gradient program: jax.grad is never called."""
    import stablehlo_sparsity.derivatives.hessian as H

    def refuse(*a, **k):
        raise AssertionError("the gradient program was built")

    monkeypatch.setattr(H, "_gradient_program", refuse)
    assert hessian_sparsity(lambda x: jnp.sum(x[1:] * x[:-1]), jnp.ones(5), method="direct").nnz == 8


# ---------------------------------------------------------------- the soundness suite, as objectives
WRAPS = {"sum": lambda y: y, "sin": jnp.sin}


def _objective(case, wrap):
    f = functools.partial(case.f, **case.kwargs) if case.kwargs else case.f

    def g(*a):
        out = f(*a)
        if case.has_aux:
            out = out[0]
        return sum(jnp.sum(wrap(leaf)) for leaf in jax.tree_util.tree_leaves(out))

    return g


SUITE = [(name, w) for name in CASES for w in WRAPS]
if not LONG:  # the normal run: every case summed (the program's own second derivatives); sin under SHS_LONG
    SUITE = [(name, w) for name, w in SUITE if w == "sum"]


@pytest.mark.parametrize("name,wrap", SUITE, ids=[f"{n}-{w}" for n, w in SUITE])
def test_soundness_suite_objectives(name, wrap):
    case = CASES[name]
    g = _objective(case, WRAPS[wrap])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct, via = both(g, case.args, case.argnums)
        num = numerical_hessian(g, case.args, case.argnums, points=2)
    assert not (num & ~direct).any(), f"direct misses {np.argwhere(num & ~direct)[:6].tolist()}"
    if (name, wrap) in LARGER_THAN_VIA_GRADIENT:
        assert (direct & ~via).any(), "fixed: remove it from LARGER_THAN_VIA_GRADIENT"
    else:
        assert not (direct & ~via).any(), f"direct exceeds via-gradient at {np.argwhere(direct & ~via)[:6].tolist()}"


# ---------------------------------------------------------------- random programs
EXAMPLES = int(os.environ.get("SHS_SECOND_ORDER_EXAMPLES", "300" if LONG else "6"))


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(S.programs(S.enabled_generators(), max_lines=6), st.sampled_from(sorted(WRAPS)))
def test_random_programs_direct_hessian(prog, wrap):
    f = prog.function()
    args = prog.example_args()
    w = WRAPS[wrap]

    def g(*xs):
        return sum(jnp.sum(w(o)) for o in jax.tree_util.tree_leaves(f(*xs)))

    argnums = tuple(range(len(args)))
    try:
        jax.jit(jax.hessian(g, argnums=argnums)).lower(*args)
    except Exception:
        reject()  # JAX cannot form this Hessian (a custom_vjp, a while_loop in reverse mode …)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = hessian_sparsity(g, *args, argnums=argnums).todense()
        try:
            num = numerical_hessian(g, args, argnums, points=2)
        except Exception:
            reject()
    cut = 0.0
    missed = num & ~direct
    assert not missed.any(), f"direct misses {np.argwhere(missed)[:6].tolist()} (cut {cut})\n{prog.source()}"
    try:
        via = hessian_sparsity(g, *args, argnums=argnums, method="via-gradient").todense()
    except Exception:
        return
    extra = direct & ~via
    if set(prog.generators) & COARSER_GENERATORS:
        return
    assert not extra.any(), f"direct exceeds via-gradient at {np.argwhere(extra)[:6].tolist()}\n{prog.source()}"

"""Python callbacks as a supported op (``rules/custom_call.py``), and the ODE solves they made refusable.

A Python callback's results are an arbitrary function of its operands: every result element depends on
every operand element, with one warning naming the line.  Tokens of ordered effects carry no data.  Then
real solves that go through callbacks (equinox's runtime checks): diffrax ``Tsit5`` and ``Kvaerno5``
adaptive solves, a vmapped batch of independent solves, and a dynamiqs master equation — analyzed by
default, checked against dense AD (``jax.jacrev`` for diffrax's default adjoint, a ``custom_vjp``;
``jax.jacfwd`` with ``diffrax.ForwardMode``).  The slow ones (tracing diffrax takes seconds) run with
``SHS_LONG=1``.
"""

from __future__ import annotations

import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import io_callback

from helpers import assert_sound, numerical_pattern
from stablehlo_sparsity import SparsityWarning, analyze_module, jacobian_sparsity, lower_and_analyze

LONG = os.environ.get("SHS_LONG", "") not in ("", "0")
long_only = pytest.mark.skipif(not LONG, reason="tracing the solver takes seconds: SHS_LONG=1")


def _cos_cb(x):
    return jax.pure_callback(np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


def _callback_warnings(record):
    return [w for w in record if issubclass(w.category, SparsityWarning) and "Python callback" in str(w.message)]


# ---------------------------------------------------------------------- the rule
def test_every_result_element_depends_on_every_operand_element():
    def f(x):
        y = _cos_cb(x[:3])                  # reads x[0:3] only
        return jnp.concatenate([y, x[3:] * 2.0])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        pat = jacobian_sparsity(f, jnp.ones(5)).todense()
    assert pat[:3, :3].all() and not pat[:3, 3:].any()
    assert np.array_equal(pat[3:], np.eye(5, dtype=bool)[3:])
    (w,) = _callback_warnings(rec)
    assert "test_callbacks.py:" in str(w.message) and "xla_ffi_python_cpu_callback" in str(w.message)


def test_one_warning_per_line_even_in_a_loop():
    f = lambda x: jax.lax.fori_loop(0, 20, lambda i, c: _cos_cb(c) * c, x)  # noqa: E731
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        a = lower_and_analyze(f, jnp.ones(3))
    assert a.pattern.todense().all()
    assert len({str(w.message) for w in _callback_warnings(rec)}) == 1


def test_callback_results_that_feed_only_checks_add_nothing():
    """equinox's runtime checks: the callback's result selects between values that do not depend on it
    (here: a branch index), so the outputs keep their own pattern."""
    def f(x):
        ok = jax.pure_callback(lambda v: np.int32(np.all(np.isfinite(v))), jax.ShapeDtypeStruct((), jnp.int32), x)
        return jax.lax.cond(ok > 0, lambda v: v * 2.0, lambda v: v * 3.0, x)
    assert np.array_equal(jacobian_sparsity(f, jnp.ones(4)).todense(), np.eye(4, dtype=bool))


def test_a_callback_with_a_custom_jvp_is_as_tight_as_its_jvp():
    """The JVP program (analyzed by default for a ``custom_jvp``) multiplies the tangent elementwise by a
    callback's value: the callback's all-to-all dependence is on the primal, not on the tangent."""
    @jax.custom_jvp
    def cos(x):
        return _cos_cb(x)

    cos.defjvp(lambda p, t: (cos(p[0]), -jax.pure_callback(np.sin, jax.ShapeDtypeStruct(p[0].shape, p[0].dtype),
                                                             p[0]) * t[0]))
    pat = assert_sound(lambda x: cos(x) + jnp.roll(x, 1), jnp.ones(5), exact=True)
    assert pat.nnz == 10


def test_debug_callbacks_and_prints_have_no_results():
    def f(x):
        jax.debug.callback(lambda v: None, x)
        jax.debug.print("x = {x}", x=x)
        return jnp.sin(x)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert_sound(f, jnp.ones(3), exact=True)
    assert not _callback_warnings(rec)


def test_ordered_io_callbacks_thread_tokens_through_a_loop():
    def f(x):
        io_callback(lambda a: None, None, x, ordered=True)

        def body(i, c):
            y = io_callback(lambda a: np.cos(a), jax.ShapeDtypeStruct(c.shape, c.dtype), c, ordered=True)
            return c * y
        return jax.lax.fori_loop(0, 3, body, x), x[::-1]
    text = jax.jit(f).lower(jnp.ones(3)).as_text()
    assert text.count("!stablehlo.token") >= 4  # entry argument and result, loop carry, callbacks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SparsityWarning)
        pat = jacobian_sparsity(f, jnp.ones(3)).todense()
        assert np.array_equal(analyze_module(text).pattern.todense(), pat)
    assert pat[:3].all() and np.array_equal(pat[3:], np.fliplr(np.eye(3, dtype=bool)))


@pytest.mark.parametrize("target", ["xla_ffi_python_gpu_callback", "xla_python_cpu_callback",
                                    "xla_ffi_partitioned_python_cpu_callback"])
def test_other_platform_and_legacy_targets(target):
    text = jax.jit(lambda x: _cos_cb(x[:2]).sum() + x).lower(jnp.ones(4)).as_text()
    text = text.replace("xla_ffi_python_cpu_callback", target)
    with pytest.warns(SparsityWarning, match=target):
        pat = analyze_module(text).pattern.todense()
    assert pat[:, :2].all() and np.array_equal(pat[:, 2:], np.eye(4, dtype=bool)[:, 2:])


@pytest.mark.parametrize("method", ["sequential", "expand_dims"])
def test_vmapped_callback(method):
    """``vmap`` of a pure callback: ``sequential`` is a loop over the batch calling back on one slice each
    (a scan: block diagonal, through the loop's summary); ``expand_dims`` is one callback on the whole batch
    (every element on every element: the batch is opaque to the rule)."""
    cb = lambda x: jax.pure_callback(np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x,  # noqa: E731
                                     vmap_method=method)
    f = jax.vmap(lambda x: cb(x) * x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SparsityWarning)
        pat = jacobian_sparsity(f, jnp.ones((3, 2))).todense()
    if method == "sequential":
        assert np.array_equal(pat, np.kron(np.eye(3, dtype=bool), np.ones((2, 2), bool)))
    else:
        assert pat.all()


# ---------------------------------------------------------------------- ODE solves through callbacks
diffrax = pytest.importorskip("diffrax")


def _lotka(y0, adjoint=None):
    def rhs(t, y, args):
        return jnp.stack([1.1 * y[0] - 0.4 * y[0] * y[1], 0.1 * y[0] * y[1] - 0.4 * y[1]])
    kw = {} if adjoint is None else {"adjoint": adjoint}
    sol = diffrax.diffeqsolve(diffrax.ODETerm(rhs), diffrax.Tsit5(), 0.0, 2.0, 0.1, y0,
                              stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-8), max_steps=256, **kw)
    return sol.ys[-1]


def _reverse_pattern(f, x, points=2):
    rng = np.random.default_rng(0)
    acc = None
    jac = jax.jit(jax.jacrev(f))
    for _ in range(points):
        J = np.asarray(jac(x * (1.0 + 0.1 * rng.random(x.shape))))
        nz = np.abs(J.reshape(-1, x.size)) > 0
        acc = nz if acc is None else acc | nz
    return acc


def test_tsit5_solve_forward_mode_is_analyzed_by_default():
    """``diffrax.ForwardMode``: the primal (a ``while`` with equinox's callback checks) is analyzed by
    default and checked against ``jax.jacfwd``."""
    f = lambda y0: _lotka(y0, diffrax.ForwardMode())  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SparsityWarning)
        pat = jacobian_sparsity(f, jnp.array([10.0, 5.0])).todense()
    num = numerical_pattern(f, jnp.array([10.0, 5.0]), points=2, jit=True)
    assert not (num & ~pat).any() and pat.all()


@long_only
def test_tsit5_solve_default_adjoint_against_jacrev():
    x = jnp.array([10.0, 5.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SparsityWarning)
        pat = jacobian_sparsity(_lotka, x).todense()
    assert not (_reverse_pattern(_lotka, x) & ~pat).any()


@long_only
def test_kvaerno5_stiff_solve_against_jacrev():
    def robertson(y0):
        def rhs(t, y, args):
            a, b, c = y[0], y[1], y[2]
            return jnp.stack([-0.04 * a + 1e4 * b * c, 0.04 * a - 1e4 * b * c - 3e7 * b ** 2, 3e7 * b ** 2])
        sol = diffrax.diffeqsolve(diffrax.ODETerm(rhs), diffrax.Kvaerno5(), 0.0, 1.0, 1e-4, y0,
                                  stepsize_controller=diffrax.PIDController(rtol=1e-6, atol=1e-8), max_steps=512)
        return sol.ys[-1]
    x = jnp.array([1.0, 0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SparsityWarning)
        pat = jacobian_sparsity(robertson, x).todense()
    assert not (_reverse_pattern(robertson, x) & ~pat).any()


@long_only
def test_vmapped_independent_solves_are_block_diagonal():
    """Each batch element has its own step-size controller and its own checks (the callbacks are vmapped
    elementwise), so the pattern is exactly block diagonal."""
    B = 4
    f = jax.vmap(_lotka)
    x = jnp.tile(jnp.array([10.0, 5.0]), (B, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SparsityWarning)
        pat = jacobian_sparsity(f, x).todense()
    assert np.array_equal(pat, np.kron(np.eye(B, dtype=bool), np.ones((2, 2), bool)))
    assert not (_reverse_pattern(f, x) & ~pat).any()


@long_only
def test_dynamiqs_master_equation():
    dq = pytest.importorskip("dynamiqs")
    n = 3
    a = dq.tensor(dq.destroy(n), dq.eye(2))
    sm = dq.tensor(dq.eye(n), dq.sigmam())
    H = a.dag() @ sm + sm.dag() @ a
    d = 2 * n

    def f(r):
        rho0 = (r[:d * d].reshape(d, d) + 1j * r[d * d:].reshape(d, d)).astype(jnp.complex128)
        rho0 = dq.asqarray(rho0, dims=(n, 2))
        rho = dq.mesolve(H, [0.3 * a], rho0, jnp.array([0.0, 0.5]), progress_meter=False).states[-1].to_jax()
        return jnp.concatenate([rho.real.reshape(-1), rho.imag.reshape(-1)])
    r0 = np.zeros(2 * d * d)
    r0[0] = 1.0
    x = jnp.asarray(r0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SparsityWarning)
        pat = jacobian_sparsity(f, x).todense()
    assert not (_reverse_pattern(f, x) & ~pat).any()

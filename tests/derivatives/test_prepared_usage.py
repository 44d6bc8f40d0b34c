"""Prepared sparse Jacobians and Hessians in every output format, in every order of use (issue 11, bug 1).

The callables cache device-side index arrays; the bug was that a first use under a trace (``jit``,
``vmap``, ``grad``) cached a tracer, and the next use raised ``UnexpectedTracerError`` blaming the user's
function.  Each test takes one use as the *first* one and then runs all the others, each compared with
dense ``jax.jacfwd`` / ``jax.hessian``:

* ``eager``: a plain call;
* ``jit`` / ``jit2``: two different jitted functions, one returning the container, one converting inside;
* ``vmap``: a batch of points, the container used inside the mapped function;
* ``grad``: reverse mode through ``.values`` (and through the ``"values"`` output itself);
* ``arg``: the prepared object passed *into* a jitted function as an argument (it is a pytree with static
  pattern data);
* ``pickled``: a pickle round trip, then eager, jit, vmap and grad on the restored object.
"""

from __future__ import annotations

import os
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

import stablehlo_sparsity as ss


def f(x):
    return jnp.sin(x[1:]) * x[:-1] + x[1:] ** 2


def g(x):
    return jnp.sum(jnp.sin(x[1:]) * x[:-1] ** 2) + jnp.sum(x ** 3)


LONG = bool(os.environ.get("SHS_LONG"))
X = jnp.linspace(0.3, 1.7, 7)
XS = jnp.stack([X, X * 0.5, X + 1.0])


def _make(kind, output):
    if kind == "jacobian":
        return ss.sparse_jacobian(f, X, output=output)
    return ss.sparse_hessian(g, X, output=output)


def _reference(kind, x):
    return jax.jacfwd(f)(x) if kind == "jacobian" else jax.hessian(g)(x)


def _densify(prepared, out):
    """The prepared result as a dense array (traceable for every jit-compatible format)."""
    if prepared.output in ("bcoo", "bcsr"):
        return out.todense()
    if prepared.output == "values":
        rows, cols = prepared.pattern.to_coo()
        return jnp.zeros(prepared.shape, out.dtype).at[rows, cols].set(out)
    if prepared.output == "scipy":
        return out.toarray()
    return out


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-9)


def use_eager(p, kind):
    _close(_densify(p, p(X)), _reference(kind, X))


def use_jit(p, kind):
    if p.output == "scipy":
        with pytest.raises(ss.InputError, match="cannot be used inside jax.jit"):
            jax.jit(p)(X)
        return
    out = jax.jit(p)(X)  # the container itself crosses the jit boundary
    _close(_densify(p, out), _reference(kind, X))


def use_jit2(p, kind):
    if p.output == "scipy":
        return
    dense = jax.jit(lambda x: _densify(p, p(x)) * 2.0)(X)
    _close(dense, 2.0 * _reference(kind, X))


def use_vmap(p, kind):
    if p.output == "scipy":
        return
    dense = jax.vmap(lambda x: _densify(p, p(x)))(XS)
    _close(dense, jax.vmap(lambda x: _reference(kind, x))(XS))


def use_grad(p, kind):
    rows, cols = p.pattern.to_coo()

    def reference_loss(x):
        return jnp.sum(jnp.sin(_reference(kind, x)[rows, cols]))

    want = jax.grad(reference_loss)(X)
    _close(jax.grad(lambda x: jnp.sum(jnp.sin(p.values(x))))(X), want)
    _close(jax.jit(jax.grad(lambda x: jnp.sum(jnp.sin(p.values(x)))))(X), want)
    if p.output == "values":
        _close(jax.grad(lambda x: jnp.sum(jnp.sin(p(x))))(X), want)
    if p.output in ("bcoo", "bcsr"):
        _close(jax.grad(lambda x: jnp.sum(jnp.sin(p(x).data)))(X), want)


def use_arg(p, kind):
    if p.output == "scipy":
        return
    dense = jax.jit(lambda prepared, x: _densify(prepared, prepared(x)))(p, X)
    _close(dense, _reference(kind, X))


def use_pickled(p, kind):
    q = pickle.loads(pickle.dumps(p))
    assert q.pattern == p.pattern and q.output == p.output and q.num_colors == p.num_colors
    use_eager(q, kind)
    use_jit(q, kind)
    use_jit2(q, kind)
    use_vmap(q, kind)
    use_grad(q, kind)
    use_arg(q, kind)


USES = {"eager": use_eager, "jit": use_jit, "jit2": use_jit2, "vmap": use_vmap, "grad": use_grad,
        "arg": use_arg, "pickled": use_pickled}


#: The default selection of first uses (every one with ``SHS_LONG=1``): each test still runs every use after
#: the first, so every format meets every use; the first use is varied most where indices are cached.
DEFAULT_FIRSTS = {
    ("jacobian", "bcoo"): ("jit", "vmap", "grad", "arg", "pickled"),
    ("jacobian", "bcsr"): ("jit", "vmap"),
    ("jacobian", "dense"): ("jit",),
    ("jacobian", "values"): ("pickled",),
    ("jacobian", "scipy"): ("pickled",),
    ("hessian", "bcoo"): ("vmap",),
    ("hessian", "bcsr"): ("jit",),
    ("hessian", "dense"): ("grad",),
    ("hessian", "values"): ("pickled",),
    ("hessian", "scipy"): ("eager",),
}


def _orders():
    """(kind, output, first use): all of them with ``SHS_LONG=1`` (each test costs several XLA compilations)."""
    for kind in ("jacobian", "hessian"):
        for output in ss.derivatives.jacobian.OUTPUTS:
            for first in USES:
                if LONG or first in DEFAULT_FIRSTS[kind, output]:
                    yield kind, output, first


@pytest.mark.parametrize("kind,output,first", list(_orders()))
def test_every_output_in_every_order(kind, output, first):
    p = _make(kind, output)
    USES[first](p, kind)
    for name, use in USES.items():
        if name != first:
            use(p, kind)


def test_value_and_jacobian_with_aux_after_jit_and_pickle():
    def fa(x):
        return f(x), {"norm": jnp.sum(x ** 2)}

    p = ss.value_and_sparse_jacobian(fa, X, has_aux=True, output="bcoo")
    (y, aux), J = jax.jit(p)(X)
    (y2, aux2), J2 = pickle.loads(pickle.dumps(p))(X)
    for out in ((y, aux, J), (y2, aux2, J2)):
        _close(out[0], f(X))
        _close(out[1]["norm"], jnp.sum(X ** 2))
        _close(out[2].todense(), jax.jacfwd(f)(X))


def test_scipy_output_is_a_csr_array_after_pickle():
    p = pickle.loads(pickle.dumps(ss.sparse_jacobian(f, X, output="scipy")))
    J = p(np.asarray(X))
    assert isinstance(J, sp.csr_array)
    _close(J.toarray(), jax.jacfwd(f)(X))

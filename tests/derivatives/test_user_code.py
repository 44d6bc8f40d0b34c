"""The front door on the code users write (issue 47): each function of the corpus gets its sparse Jacobian (and,
where it is scalar, its sparse Hessian) with the default arguments, equal to dense AD, and ``check_jacobian`` /
``check_hessian`` pass on it.

The corpus: a ``jax.custom_vjp`` (no forward mode in JAX: the default ``mode="auto"`` must not fail at the first
call), a ``custom_vjp`` on an arrowhead (dense row and dense column: the bidirectional coloring, whose JVPs are
transposed VJPs), a ``jax.custom_jvp``, ``jax.checkpoint``, optax losses, an equinox MLP passed as a module (its
activation function is a non-array leaf: static), flax-style parameter dicts with a string in them, and a
dataclass model holding its activation function.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss

jax.config.update("jax_enable_x64", True)
RNG = np.random.default_rng(47)


def _flat(f, args, argnums):
    """``(g, x0)``: ``g(v)`` is ``f`` with the array leaves of the selected arguments taken from the flat vector
    ``v`` (other leaves held fixed, as ``equinox.partition`` does), its output flattened; ``x0`` those leaves."""
    argnums_t = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    leaves, tree = jax.tree_util.tree_flatten(tuple(args[i] for i in argnums_t))
    arrays = [i for i, leaf in enumerate(leaves) if isinstance(leaf, (jax.Array, np.ndarray))]

    def g(v):
        full_leaves, o = list(leaves), 0
        for i in arrays:
            full_leaves[i] = v[o:o + leaves[i].size].reshape(leaves[i].shape)
            o += leaves[i].size
        full = list(args)
        for i, c in zip(argnums_t, jax.tree_util.tree_unflatten(tree, full_leaves)):
            full[i] = c
        return jnp.concatenate([jnp.ravel(o) for o in jax.tree_util.tree_leaves(f(*full))])

    return g, jnp.concatenate([jnp.ravel(leaves[i]) for i in arrays])


def dense_jacobian(f, args, argnums=0):
    """Dense AD (reverse mode: it works on a custom_vjp) as one ``(m, n)`` matrix of flattened leaves."""
    g, x0 = _flat(f, args, argnums)
    return np.asarray(jax.jacrev(g)(x0))


def dense_hessian(f, args, argnums=0):
    """Dense AD (reverse over reverse: it works on a custom_vjp) of a scalar ``f``."""
    g, x0 = _flat(f, args, argnums)
    return np.asarray(jax.jacrev(jax.grad(lambda v: g(v)[0]))(x0))


# ------------------------------------------------------------------------------------------- the corpus
@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


softplus.defvjp(lambda x: (softplus(x), x), lambda x, g: (jax.nn.sigmoid(x) * g,))


@jax.custom_jvp
def safe_log(x):
    return jnp.log(jnp.maximum(x, 1e-12))


@safe_log.defjvp
def _safe_log_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return safe_log(x), t / jnp.maximum(x, 1e-12)


def custom_vjp_chain(x):
    return softplus(x[1:]) * x[:-1] - x[1:]


def custom_vjp_arrowhead(x):  # x[0] in every row and one dense row: the bidirectional coloring wins
    return jnp.concatenate([softplus(x[1:]) * x[0], jnp.sum(softplus(x))[None]])


def custom_jvp_stencil(x):
    return safe_log(1.0 + x[1:] ** 2) - safe_log(1.0 + x[:-1] ** 2)


@jax.checkpoint
def _remat_block(x):
    return jnp.sin(x[1:]) * jnp.cos(x[:-1])


def checkpointed(x):
    return _remat_block(_remat_block(x))


def optax_losses(logits, labels):
    import optax

    return (optax.softmax_cross_entropy(logits, labels) + optax.huber_loss(logits, labels).sum(-1)
            + optax.l2_loss(logits, labels).mean(-1))


def eqx_mlp():
    import equinox as eqx

    return eqx.nn.MLP(in_size=3, out_size=2, width_size=5, depth=2, activation=jax.nn.softplus,
                      key=jax.random.PRNGKey(0))


def eqx_model_output(model, xs):
    return jax.vmap(model)(xs)


def flax_style_apply(params, x):
    h = x
    for name in ("dense_0", "dense_1"):
        layer = params[name]
        h = h @ layer["kernel"] + layer["bias"]
        h = jnp.tanh(h) if layer["activation"] == "tanh" else jax.nn.gelu(h)
    return h


def flax_style_params():
    def layer(i, o, act):
        return {"kernel": jnp.asarray(RNG.standard_normal((i, o))) / 2, "bias": jnp.asarray(RNG.standard_normal(o)),
                "activation": act}

    return {"dense_0": layer(3, 4, "tanh"), "dense_1": layer(4, 2, "gelu"), "name": "tiny"}


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Affine:
    w: jax.Array
    b: jax.Array
    act: object = dataclasses.field(default=jnp.tanh)


def dataclass_apply(model, x):
    return model.act(model.w * x + model.b)


X8 = jnp.asarray(RNG.uniform(0.2, 1.5, 8))
LOGITS = jnp.asarray(RNG.standard_normal((4, 3)))
LABELS = jax.nn.softmax(jnp.asarray(RNG.standard_normal((4, 3))))
XS = jnp.asarray(RNG.standard_normal((4, 3)))

#: (name, f, args, argnums)
JACOBIANS = [
    ("custom_vjp", custom_vjp_chain, (X8,), 0),
    ("custom_vjp_arrowhead", custom_vjp_arrowhead, (X8,), 0),
    ("custom_jvp", custom_jvp_stencil, (X8,), 0),
    ("checkpoint", checkpointed, (X8,), 0),
    ("optax_losses", optax_losses, (LOGITS, LABELS), 0),
    ("eqx_mlp_wrt_inputs", eqx_model_output, (eqx_mlp(), XS), 1),
    ("eqx_mlp_wrt_module", eqx_model_output, (eqx_mlp(), XS), 0),
    ("flax_style_params", flax_style_apply, (flax_style_params(), XS), 0),
    ("dataclass_model", dataclass_apply, (Affine(X8, X8 / 2), X8), (0, 1)),
]


@pytest.mark.parametrize("name,f,args,argnums", JACOBIANS, ids=[c[0] for c in JACOBIANS])
def test_sparse_jacobian_of_user_code_with_the_defaults(name, f, args, argnums):
    jac = ss.sparse_jacobian(f, *args, argnums=argnums)
    got = np.asarray(jac(*args).todense())
    want = dense_jacobian(f, args, argnums)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert not (np.abs(want) > 0)[~jac.pattern.todense()].any()  # (the pattern holds every nonzero)
    assert ss.check_jacobian(f, *args, argnums=argnums, jacobian=jac)


def test_custom_vjp_arrowhead_takes_both_directions_with_transposed_vjps():
    """The arrowhead needs JVPs and VJPs; with a ``custom_vjp`` the JVPs are transposed VJPs, in every mode."""
    jac = ss.sparse_jacobian(custom_vjp_arrowhead, X8)
    assert str(jac.mode) == "bidirectional" and not jac.forward_mode
    want = dense_jacobian(custom_vjp_arrowhead, (X8,))
    for mode in ("forward", "reverse", "bidirectional"):
        for strategy in ("vmap", "unrolled", "loop"):
            j = ss.sparse_jacobian(custom_vjp_arrowhead, X8, mode=mode, strategy=strategy, output="dense")
            np.testing.assert_allclose(np.asarray(j(X8)), want, rtol=1e-10, atol=1e-12, err_msg=f"{mode} {strategy}")
    fwd = ss.sparse_jacobian(custom_vjp_chain, X8, mode="forward")
    assert "transposed VJPs" in repr(fwd)
    vjac = ss.value_and_sparse_jacobian(custom_vjp_chain, X8, mode="forward", strategy="loop")
    y, J = vjac(X8)
    np.testing.assert_allclose(np.asarray(y), np.asarray(custom_vjp_chain(X8)))
    np.testing.assert_allclose(np.asarray(J.todense()), dense_jacobian(custom_vjp_chain, (X8,)), rtol=1e-10)


def test_a_wrong_custom_vjp_jacobian_is_caught():
    """A check is only worth its failures: a candidate off by 0.1% on a custom_vjp function fails (probes too)."""
    jac = ss.sparse_jacobian(custom_vjp_chain, X8)
    for method in ("dense", "probes"):
        report = ss.check_jacobian(lambda x: 1.001 * custom_vjp_chain(x), X8, jacobian=jac, method=method,
                                   raise_on_error=False)
        assert not report, method


#: (name, scalar f, args, argnums)
HESSIANS = [
    ("custom_vjp", lambda x: jnp.sum(custom_vjp_chain(x) ** 2), (X8,), 0),
    ("custom_jvp", lambda x: jnp.sum(custom_jvp_stencil(x) ** 2), (X8,), 0),
    ("checkpoint", lambda x: jnp.sum(checkpointed(x) ** 2), (X8,), 0),
    ("optax_loss", lambda z, y: jnp.sum(optax_losses(z, y)), (LOGITS, LABELS), 0),
    ("eqx_mlp_loss", lambda m, xs: jnp.sum(eqx_model_output(m, xs) ** 2), (eqx_mlp(), XS), 0),
    ("flax_style_loss", lambda p, x: jnp.sum(flax_style_apply(p, x) ** 2), (flax_style_params(), XS), 0),
]


@pytest.mark.parametrize("name,f,args,argnums", HESSIANS, ids=[c[0] for c in HESSIANS])
def test_sparse_hessian_of_user_code_with_the_defaults(name, f, args, argnums):
    hess = ss.sparse_hessian(f, *args, argnums=argnums)
    got = np.asarray(hess(*args).todense())
    np.testing.assert_allclose(got, dense_hessian(f, args, argnums), rtol=1e-9, atol=1e-11)
    assert ss.check_hessian(f, *args, argnums=argnums, hessian=hess)


def test_a_model_prepared_with_static_leaves_refuses_another_activation():
    """A non-array leaf is static: a call with another one would be another program, so it is refused by path."""
    model, xs = eqx_mlp(), XS
    jac = ss.sparse_jacobian(eqx_model_output, model, xs, argnums=1)
    jac(model, xs)  # the same model: fine
    import equinox as eqx

    other = eqx.tree_at(lambda m: m.activation, model, jax.nn.relu)
    with pytest.raises(ss.InputError, match=r"argument leaf model\.activation differs .* prepare the Jacobian again"):
        jac(other, xs)
    with pytest.raises(ss.InputError, match="cannot save: the arguments hold values that are not arrays"):
        jac.save("/nonexistent/never-written.npz")

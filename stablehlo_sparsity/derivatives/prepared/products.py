"""Forward products of a function that JAX can only differentiate in reverse mode.

JAX has no forward-mode derivative of a ``jax.custom_vjp`` (``jax.jvp`` raises "can't apply forward-mode autodiff
(jvp) to a custom_vjp function"), and optax, equinox, flax and many user models define one.  Its Jacobian-vector
products are still there, as the transpose of its vector-Jacobian products: ``u ↦ vjp(u) = Jᵀ u`` is linear, so
its own VJP at any point is ``t ↦ J t``.  :func:`transposed_vjp` forms it by reverse over reverse — one forward
pass and one backward pass of ``f`` shared by every product, then one transposed backward pass per product, about
the cost of a JVP.  The backward rule is differentiated as the code it is, which is what ``jax.jacrev`` of the
function evaluates (where the rule is linear in its cotangent, as a VJP is, the result is exactly ``J t``).

A prepared Jacobian of such a function (:class:`~stablehlo_sparsity.SparseJacobian`, ``analysis.forward_mode``
false) forms its JVP seeds this way, so ``mode="auto"``, ``"forward"`` and ``"bidirectional"`` all work; the checks
(:mod:`stablehlo_sparsity.derivatives.check_reference`) probe with it too.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["transposed_vjp", "transpose_of_vjp"]


def transposed_vjp(h: Callable, primals: tuple, *, has_aux: bool = False) -> tuple[Any, Callable, Any]:
    """``(y, jvp, aux)``: ``y = h(*primals)`` and ``jvp(tangents) = J · tangents`` (``tangents`` a tuple shaped
    like ``primals``; the result shaped like ``y``) from reverse-mode derivatives only (``aux``: ``None`` unless
    ``has_aux``)."""
    import jax

    if has_aux:
        y, vjp_fn, aux = jax.vjp(h, *primals, has_aux=True)
    else:
        (y, vjp_fn), aux = jax.vjp(h, *primals), None
    return y, transpose_of_vjp(vjp_fn, y), aux


def transpose_of_vjp(vjp_fn: Callable, y) -> Callable:
    """``tangents ↦ J · tangents`` from the VJP function ``vjp_fn`` of a function whose output is ``y`` (its
    reverse-mode derivative at the zero cotangent, which is the transpose of a linear ``vjp_fn``)."""
    import jax

    zero = jax.tree_util.tree_map(jax.numpy.zeros_like, y)
    _, transpose = jax.vjp(vjp_fn, zero)

    def jvp(tangents):
        return transpose(tuple(tangents))[0]

    return jvp

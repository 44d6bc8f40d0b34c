"""Auxiliary outputs (``has_aux=True``) at the traced boundary: array leaves are traced, anything else (a string,
an object) is kept aside and put back — what a detection lowers and what a prepared derivative returns."""

from __future__ import annotations

from .arguments import is_traced_leaf as _is_value

__all__ = ["AuxSplit"]


class AuxSplit:
    """Auxiliary data split at the traced boundary: array leaves travel through the compiled program, other
    leaves (strings, objects) are kept here as they were at the last trace and put back by :meth:`join` —
    untouched, as ``jax.jacfwd(has_aux=True)`` would return them.  Auxiliary data made of arrays only passes
    through as it is."""

    def __init__(self):
        self.tree = None
        self.static: dict[int, object] = {}

    def strip(self, aux):
        """``aux`` with its non-array leaves replaced by ``None`` (in the trace), remembering them."""
        import jax

        leaves, self.tree = jax.tree_util.tree_flatten(aux)
        self.static = {i: leaf for i, leaf in enumerate(leaves) if not _is_value(leaf)}
        if not self.static:
            return aux
        return jax.tree_util.tree_unflatten(self.tree, [None if i in self.static else leaf
                                                        for i, leaf in enumerate(leaves)])

    def join(self, aux):
        """``aux`` as :meth:`strip` returned it, with the non-array leaves put back."""
        import jax

        if not self.static:
            return aux
        it = iter(jax.tree_util.tree_leaves(aux))
        leaves = [self.static[i] if i in self.static else next(it) for i in range(self.tree.num_leaves)]
        return jax.tree_util.tree_unflatten(self.tree, leaves)

    @property
    def has_static(self) -> bool:
        return bool(self.static)

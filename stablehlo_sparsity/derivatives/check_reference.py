"""Dense AD of the user's function, the reference of :mod:`stablehlo_sparsity.derivatives.checks`.

:class:`DenseReference` evaluates ``f`` and its dense Jacobian (``n`` batched JVPs) or Hessian (``n``
forward-over-reverse Hessian-vector products) at any point with the structure of the check's arguments, and
the same by reverse mode — the spread between the two estimates dense AD's own rounding error; a function
with a ``custom_vjp`` (no forward mode) falls back to reverse mode, a ``while`` loop (no reverse mode) to
forward only.  Probes (``J v``, ``uᵀ J``, ``H v``) for problems too large to form densely.  The programs are
jitted functions of the array leaves of the arguments, cached per function and argument structure, so that
several candidates or points compile dense AD once per shape.
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import InputError
from ..analysis.arguments import split_statics
from .prepared.inputs import flat, float_outputs
from .prepared.products import transposed_vjp

__all__ = ["DenseReference", "is_array"]


# --------------------------------------------------------------------------------------- batched products
def _split(v, leaves, tree):
    """Rows of ``v`` (``(p, n)``) as a batched pytree shaped like ``leaves``."""
    import jax
    import jax.numpy as jnp

    p = v.shape[0]
    out, o = [], 0
    for leaf in leaves:
        size = int(np.prod(np.shape(leaf), dtype=np.int64))
        out.append(jnp.reshape(v[:, o:o + size], (p,) + tuple(np.shape(leaf))).astype(jnp.result_type(leaf)))
        o += size
    return jax.tree_util.tree_unflatten(tree, out)


def _join(tree, p):
    import jax
    import jax.numpy as jnp

    parts = [jnp.reshape(d, (p, -1)) for d in jax.tree_util.tree_leaves(tree)]
    return jnp.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]


def _jvps(h, sel, v, *, transposed: bool = False):
    """``(p, m)``: row ``q`` is ``J v_q`` for the rows ``v_q`` of ``v`` (``(p, n)``); ``transposed``: as transposed
    VJPs (a function with a ``custom_vjp``, which has no forward mode: :mod:`.prepared.products`)."""
    import jax

    leaves, tree = jax.tree_util.tree_flatten(sel)
    t = _split(v, leaves, tree)
    if transposed:
        _, jvp, _ = transposed_vjp(h, sel)
        ydot = jax.vmap(jvp)(t)
    else:
        ydot = jax.vmap(lambda tq: jax.jvp(h, sel, tq)[1])(t)
    return _join(ydot, v.shape[0])


def _vjps(h, sel, u):
    """``(p, n)``: row ``q`` is ``u_qᵀ J``."""
    import jax

    y, vjp_fn = jax.vjp(h, *sel)
    leaves, tree = jax.tree_util.tree_flatten(y)
    cts = jax.vmap(vjp_fn)(_split(u, leaves, tree))
    return _join(cts, u.shape[0])


def _hvps(h, sel, v):
    """``(p, n)``: row ``q`` is ``H v_q`` (forward over reverse)."""
    import jax

    g = jax.grad(h, argnums=tuple(range(len(sel))))
    leaves, tree = jax.tree_util.tree_flatten(sel)
    t = _split(v, leaves, tree)
    gdot = jax.vmap(lambda tq: jax.jvp(g, sel, tq)[1])(t)
    return _join(gdot, v.shape[0])


# --------------------------------------------------------------------------------------- the user's function
def _scalar(y):
    import jax.numpy as jnp

    y = jnp.asarray(y)
    if y.size != 1:
        raise InputError(f"a Hessian needs a scalar function; f returns shape {y.shape}")
    return jnp.reshape(y, ())


def is_array(leaf) -> bool:
    import jax

    return isinstance(leaf, (np.ndarray, np.generic, jax.Array))


class _Programs:
    """Dense AD of ``f`` for one argument structure, as jitted programs of the array leaves of the arguments
    (the other leaves are static).  Kept in a small cache (:func:`_programs`): checking several candidates
    against the same ``f``, or at several points, compiles dense AD once per shape."""

    def __init__(self, f, kind: str, argnums: tuple, has_aux: bool, tree, layout: tuple, static: tuple):
        self.f, self.kind, self.argnums, self.has_aux = f, kind, argnums, has_aux
        self.tree, self.layout, self.static = tree, layout, static  # layout: which leaves are arrays
        self.reverse_ok: bool | None = None  # (known after the first try: a while loop has no reverse mode)
        self.forward_ok: bool | None = None  # (a custom_vjp has no forward mode)

    def rebuild(self, dyn) -> list:
        import jax

        it_dyn, it_static = iter(dyn), iter(self.static)
        leaves = [next(it_dyn) if is_array else next(it_static) for is_array in self.layout]
        return jax.tree_util.tree_unflatten(self.tree, leaves)

    def selected(self, a):
        """``(h, sel)``: ``h(*sel)`` is ``f`` at ``a`` as a function of the selected arguments, its
        differentiated output flattened (float) for a Jacobian, a scalar for a Hessian."""
        import jax
        import jax.numpy as jnp

        sel = tuple(a[i] for i in self.argnums)
        sel_leaves = jax.tree_util.tree_leaves(sel)
        x_dtype = jnp.result_type(*sel_leaves) if sel_leaves else jnp.float32

        def h(*s):
            b = list(a)
            for i, v in zip(self.argnums, s):
                b[i] = v
            y = self.f(*b)
            y = y[0] if self.has_aux else y
            return _scalar(y) if self.kind == "Hessian" else flat(float_outputs(y, x_dtype))

        return h, sel

    @staticmethod
    def _x_dtype(sel):
        import jax
        import jax.numpy as jnp

        leaves = jax.tree_util.tree_leaves(sel)
        return jnp.result_type(*leaves) if leaves else jnp.float32

    def _eye(self, sel):
        import jax
        import jax.numpy as jnp

        n = int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(sel)))
        return jnp.eye(n, dtype=self._x_dtype(sel))

    @functools.cached_property
    def dense(self):
        """``dyn -> (f, Jᵀ (n, m))`` or ``(f, H)`` by ``n`` batched JVPs (Hessian-vector products)."""
        import jax

        def run(dyn):
            h, sel = self.selected(self.rebuild(dyn))
            if self.kind == "Hessian":
                return h(*sel), _hvps(h, sel, self._eye(sel))
            return h(*sel), _jvps(h, sel, self._eye(sel))

        return jax.jit(run)

    @functools.cached_property
    def reverse(self):
        """``dyn -> (f, J (m, n))`` by ``m`` batched VJPs; for a Hessian ``(f, H)`` by reverse over reverse
        (the reference of a function with a ``custom_vjp``, which has no forward derivative)."""
        import jax
        import jax.numpy as jnp

        def run(dyn):
            h, sel = self.selected(self.rebuild(dyn))
            y = h(*sel)
            if self.kind == "Hessian":
                g = jax.grad(h, argnums=tuple(range(len(sel))))
                return y, _vjps(lambda *s: flat(g(*s)), sel, self._eye(sel))
            return y, _vjps(h, sel, jnp.eye(y.size, dtype=y.dtype))

        return jax.jit(run)

    @functools.cached_property
    def forward_probes(self):
        """``(dyn, v) -> (f, (J vᵀ)ᵀ)`` (``H v`` for a Hessian)."""
        return self._forward_probes(transposed=False)

    @functools.cached_property
    def transposed_probes(self):
        """:attr:`forward_probes` of a Jacobian as transposed VJPs (a ``custom_vjp`` has no forward mode)."""
        return self._forward_probes(transposed=True)

    def _forward_probes(self, transposed: bool):
        import jax

        def run(dyn, v):
            h, sel = self.selected(self.rebuild(dyn))
            x_dtype = self._x_dtype(sel)
            if self.kind == "Hessian":
                return h(*sel), _hvps(h, sel, v.astype(x_dtype))
            return h(*sel), _jvps(h, sel, v.astype(x_dtype), transposed=transposed)

        return jax.jit(run)

    @functools.cached_property
    def reverse_probes(self):
        """``(dyn, u) -> u J`` (Jacobians only)."""
        import jax

        def run(dyn, u):
            h, sel = self.selected(self.rebuild(dyn))
            return _vjps(h, sel, u.astype(jax.eval_shape(h, *sel).dtype))

        return jax.jit(run)


_PROGRAMS: dict = {}
_PROGRAMS_SIZE = 16


def _programs(f, kind, argnums, has_aux, tree, layout, static) -> _Programs:
    key = (f, kind, argnums, has_aux, str(tree), layout, static)
    try:
        hit = _PROGRAMS.pop(key, None)
    except TypeError:  # an unhashable static argument: no reuse
        return _Programs(f, kind, argnums, has_aux, tree, layout, static)
    if hit is None:
        hit = _Programs(f, kind, argnums, has_aux, tree, layout, static)
    _PROGRAMS[key] = hit  # (most recent last)
    while len(_PROGRAMS) > _PROGRAMS_SIZE:
        _PROGRAMS.pop(next(iter(_PROGRAMS)))
    return hit


class DenseReference:
    """Dense AD of the user's ``f`` at any point with the structure of ``args``."""

    def __init__(self, f, args, argnums, has_aux: bool, kind: str):
        import jax
        import jax.numpy as jnp

        # non-array leaves (a model's activation function) are static, as in the derivative checked
        args, self.statics = split_statics(args, f)
        if self.statics is not None:
            f = self.statics.bind(f)
        leaves, self.tree = jax.tree_util.tree_flatten(list(args))
        layout = tuple(is_array(leaf) for leaf in leaves)
        static = tuple(leaf for leaf, is_array in zip(leaves, layout) if not is_array)
        self.argnums, self.kind = tuple(argnums), kind
        self.programs = _programs(f, kind, self.argnums, bool(has_aux), self.tree, layout, static)
        sel_leaves = jax.tree_util.tree_leaves(tuple(args[i] for i in self.argnums))
        self.x_dtype = jnp.result_type(*sel_leaves) if sel_leaves else jnp.float32
        self.n = int(sum(np.size(leaf) for leaf in sel_leaves))

    def _traced(self, args) -> tuple:
        """The traced parts of ``args`` (their non-array leaves must be the check's)."""
        return tuple(args) if self.statics is None else self.statics.check(args, "check")

    def point(self, args) -> list:
        """The array leaves of ``args`` (which must have the structure of the check's arguments)."""
        import jax

        leaves, tree = jax.tree_util.tree_flatten(list(self._traced(args)))
        if str(tree) != str(self.tree):
            raise InputError(f"a point has the argument structure {tree}, the check's arguments have {self.tree}")
        return [leaf for leaf in leaves if is_array(leaf)]

    def out_size(self, args) -> int:
        import jax

        h, sel = self.programs.selected(list(self._traced(args)))
        return int(np.prod(jax.eval_shape(h, *sel).shape, dtype=np.int64))

    def dense(self, dyn):
        """``(value, J or H as float64 (m, n), spread or None)``; the spread is dense AD's disagreement with
        itself (forward vs reverse; ``|H - Hᵀ|``)."""
        if self.programs.forward_ok is not False:
            try:
                y, d = self.programs.dense(dyn)
                self.programs.forward_ok = True
            except TypeError as e:
                if "custom_vjp" not in str(e):
                    raise
                self.programs.forward_ok = False  # a custom_vjp: reverse mode is the only derivative
        if self.programs.forward_ok is False:
            y, d = self.programs.reverse(dyn)
            d = np.asarray(d, np.float64)
            return np.asarray(y, np.float64), d, (np.abs(d - d.T) if self.kind == "Hessian" else None)
        y = np.asarray(y, np.float64)
        d = np.asarray(d, np.float64).T
        if self.kind == "Hessian":
            return y, d, np.abs(d - d.T)
        spread = None
        if self.programs.reverse_ok is not False:
            try:
                rev = np.asarray(self.programs.reverse(dyn)[1], np.float64)
                self.programs.reverse_ok = True
                with np.errstate(invalid="ignore"):
                    spread = np.abs(rev - d)
            except (TypeError, ValueError, NotImplementedError):
                # no reverse derivative (a while loop with a dynamic trip count, a callback): forward only
                self.programs.reverse_ok = False
        return y, d, spread

    def probes(self, dyn, v, u):
        """``(f, (J vᵀ)ᵀ or H vᵀ, u J or an empty array)``: without a reverse derivative (a while loop) the
        probes are JVPs only."""
        try:
            y, jv = self.programs.forward_probes(dyn, v)
        except TypeError as e:
            if "custom_vjp" not in str(e) or self.kind == "Hessian":
                raise
            y, jv = self.programs.transposed_probes(dyn, v)  # a custom_vjp: J v as a transposed VJP
        uj = np.zeros((0, 0))
        if self.kind == "Jacobian" and self.programs.reverse_ok is not False:
            try:
                uj = np.asarray(self.programs.reverse_probes(dyn, u), np.float64)
                self.programs.reverse_ok = True
            except (TypeError, ValueError, NotImplementedError):
                self.programs.reverse_ok = False  # (a while loop with a dynamic trip count, a callback)
        return np.asarray(y, np.float64), np.asarray(jv, np.float64), uj

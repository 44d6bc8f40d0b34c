"""A user's arguments at the traced boundary: array leaves are traced, every other leaf is static.

Models are pytrees that hold more than arrays: an equinox ``Module`` keeps its activation function, a
dataclass its name, a config dict its strings.  JAX refuses to trace those leaves ("Cannot determine dtype of
<PjitFunction>").  Every entry point that takes a user's function splits its arguments here, the way
``equinox.partition(args, equinox.is_array)`` does: the **traced** part is each argument with its non-array
leaves replaced by ``None`` (an empty subtree to JAX), the **static** part holds those leaves, and
:meth:`Statics.bind` gives the function of the traced part that puts them back.  Columns of a pattern are the
traced leaves of the selected arguments, in order; a static leaf has none.

A prepared derivative keeps the static part it was prepared with and checks a call's arguments against it
(:meth:`Statics.check`): another activation function may be another program, with another pattern, so a
changed static leaf is refused, naming its path (``model.act``).

A leaf is traced when JAX can trace it: a JAX or NumPy array, a NumPy scalar, a Python ``bool``/``int``/
``float``/``complex``, a ``jax.ShapeDtypeStruct``, or an object with ``__jax_array__``.

    >>> import jax.numpy as jnp
    >>> traced, statics = split_statics((jnp.ones(2), {"act": jnp.tanh, "w": jnp.ones(3)}))
    >>> statics.paths
    ("args[1]['act']",)
    >>> traced[1]["act"] is None
    True
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import InputError, warn

__all__ = ["is_traced_leaf", "split_statics", "Statics", "argument_names", "check_differentiated", "traced_call",
           "TracedCall", "warn_integer_columns", "check_function_and_arguments"]


def is_traced_leaf(leaf) -> bool:
    """A value JAX can trace (an array, a Python or NumPy number); anything else is static (auxiliary outputs are
    split by this too: :mod:`.auxiliary`)."""
    import jax

    return isinstance(leaf, (jax.Array, np.ndarray, np.generic, bool, int, float, complex)) or hasattr(
        leaf, "__jax_array__")


def _is_argument_leaf(leaf) -> bool:
    """A traced argument leaf: a value (:func:`is_traced_leaf`) or a ``jax.ShapeDtypeStruct`` standing for one."""
    import jax

    return is_traced_leaf(leaf) or isinstance(leaf, jax.ShapeDtypeStruct)


def argument_names(f: Callable | None, count: int) -> list[str]:
    """Names for the first ``count`` positional arguments of ``f`` in messages: its parameters' names where its
    signature says them, else ``args[i]``."""
    names = [f"args[{i}]" for i in range(count)]
    if f is None:
        return names
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        return names
    for i, p in enumerate(params[:count]):
        if p.kind is p.VAR_POSITIONAL:
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names[i] = p.name
    return names


def _is_none(x) -> bool:
    return x is None


def _same(a, b) -> bool:
    """Whether two static leaves are the same value (identity, else ``==`` when it answers a plain bool)."""
    if a is b:
        return True
    try:
        eq = a == b
    except Exception:
        return False
    return bool(eq) if isinstance(eq, (bool, np.bool_)) else False


@dataclass(frozen=True)
class Statics:
    """The static leaves of a call's arguments.

    ``trees``: per argument, the argument with its traced leaves replaced by ``None`` (``None`` for an argument
    with no static leaf); ``paths``: where each static leaf sits (``model.act``), and ``names`` the arguments'
    names, for messages."""

    trees: tuple
    paths: tuple[str, ...]
    names: tuple[str, ...]

    def join(self, traced: Sequence) -> tuple:
        """The arguments whole again: ``traced`` (each argument's traced part) with the static leaves put back."""
        import jax

        def combine(t, s):
            if s is None:
                return t
            return jax.tree_util.tree_map(lambda a, b: b if a is None else a, t, s, is_leaf=_is_none)

        return tuple(combine(t, s) for t, s in zip(traced, self.trees))

    def bind(self, f: Callable) -> Callable:
        """``f`` as a function of the traced parts (the static leaves put back before each call)."""

        def traced_f(*traced, **kwargs):
            return f(*self.join(traced), **kwargs)

        traced_f.__name__ = getattr(f, "__name__", "f")
        traced_f.__qualname__ = getattr(f, "__qualname__", traced_f.__name__)
        traced_f.__module__ = getattr(f, "__module__", None)  # type: ignore[assignment]
        traced_f.__wrapped__ = f  # type: ignore[attr-defined]
        return traced_f

    def check(self, args: Sequence, what: str) -> tuple:
        """The traced parts of a call's ``args`` when their static leaves are those this object holds, else an
        ``InputError`` naming the first that differs (a prepared ``what`` is specific to its static leaves)."""
        import jax

        traced, got = split_statics(args)
        mine = self.trees
        theirs = got.trees if got is not None else (None,) * len(args)
        if len(mine) != len(theirs):
            raise InputError(f"the {what} was prepared for {len(mine)} arguments, got {len(theirs)}")
        for i, (a, b) in enumerate(zip(mine, theirs)):
            la, ta = jax.tree_util.tree_flatten(a, is_leaf=_is_none)
            lb, tb = jax.tree_util.tree_flatten(b, is_leaf=_is_none)
            if str(ta) != str(tb) or not all(_same(x, y) for x, y in zip(la, lb)):
                path = _first_difference(self.names[i], a, b)
                raise InputError(f"{path} differs from the value the {what} was prepared with (a non-array leaf is "
                                 f"static: another value may be another program with another pattern); prepare "
                                 f"the {what} again for it, or make it an array")
        return traced


def _first_difference(name: str, a, b) -> str:
    """The path of the first static leaf of argument ``name`` that differs between ``a`` and ``b`` (messages)."""
    import jax

    pa = jax.tree_util.tree_flatten_with_path(a, is_leaf=_is_none)[0]
    pb = dict((jax.tree_util.keystr(p), v) for p, v in jax.tree_util.tree_flatten_with_path(b, is_leaf=_is_none)[0])
    for p, v in pa:
        key = jax.tree_util.keystr(p)
        if key not in pb or not _same(v, pb[key]):
            return f"argument leaf {name}{key}" if key else f"argument {name}"
    return f"argument {name}"


def split_statics(args: Sequence, f: Callable | None = None) -> tuple[tuple, Statics | None]:
    """``(traced, statics)``: each argument with its non-array leaves replaced by ``None``, and those leaves
    (``None`` when every leaf is traced — the arguments then come back as they were)."""
    import jax

    args = tuple(args)
    flat, _ = jax.tree_util.tree_flatten(args)
    if all(_is_argument_leaf(leaf) for leaf in flat):
        return args, None
    names = argument_names(f, len(args))
    traced: list = []
    trees: list = []
    paths: list[str] = []
    for name, a in zip(names, args):
        with_paths, tree = jax.tree_util.tree_flatten_with_path(a)
        flags = [_is_argument_leaf(leaf) for _, leaf in with_paths]
        if all(flags):
            traced.append(a)
            trees.append(None)
            continue
        leaves = [leaf for _, leaf in with_paths]
        traced.append(jax.tree_util.tree_unflatten(tree, [x if t else None for x, t in zip(leaves, flags)]))
        trees.append(jax.tree_util.tree_unflatten(tree, [None if t else x for x, t in zip(leaves, flags)]))
        paths.extend(f"{name}{jax.tree_util.keystr(p)}" for (p, _), t in zip(with_paths, flags) if not t)
    return tuple(traced), Statics(tuple(trees), tuple(paths), tuple(names))


def check_differentiated(args: Sequence, argnums: Sequence[int], statics: Statics | None, f: Callable | None,
                         what: str) -> None:
    """Every selected argument has a traced leaf to differentiate, else an ``InputError`` naming it and what it
    holds (a string, a function …)."""
    import jax

    names = argument_names(f, len(args))
    for i in argnums:
        if jax.tree_util.tree_leaves(args[i]):
            continue
        held = ""
        if statics is not None and statics.trees[i] is not None:
            kinds = sorted({type(x).__name__ for x in jax.tree_util.tree_leaves(statics.trees[i])})
            held = f" (it holds only {', '.join(kinds)} leaves, which have no derivative)"
        raise InputError(f"{what}: argument {names[i]} (position {i}) has no array to differentiate{held}; "
                         "select array arguments with argnums")


@dataclass(frozen=True)
class TracedCall:
    """A user's call as the analysis and JAX see it (:func:`traced_call`): ``fn`` of the ``args``' traced parts,
    the selected ``argnums`` and the ``statics`` held out (``None``: every leaf is traced, and ``fn`` is the
    user's ``f``)."""

    fn: Callable
    args: tuple
    argnums: tuple[int, ...]
    statics: Statics | None


def check_function_and_arguments(what: str, f, args: Sequence) -> None:
    """An ``InputError`` naming ``what`` unless ``f`` is callable and there is an argument to differentiate."""
    if not callable(f):
        raise InputError(f"{what} takes the function first, got a {type(f).__name__}: {what}(f, *args)")
    if not args:
        raise InputError(f"{what} needs at least one argument to differentiate")


def traced_call(what: str, f: Callable, args: Sequence, argnums, *, unique: bool = False) -> TracedCall:
    """Check a public entry point's function and arguments before anything is traced, and split the arguments
    (:func:`split_statics`): ``f`` must be callable, there must be an argument, ``argnums`` must select existing
    arguments (:func:`~..ir.keywords.parse_indices`; ``unique``: each once) each holding an array.  Errors are
    ``InputError`` naming ``what`` (the entry point) and the fix."""
    from ..ir.keywords import parse_indices

    check_function_and_arguments(what, f, args)
    argnums_t = parse_indices(argnums, len(args), name="argnums", unique=unique)
    traced, statics = split_statics(args, f)
    check_differentiated(traced, argnums_t, statics, f, what)
    return TracedCall(f if statics is None else statics.bind(f), traced, argnums_t, statics)


def warn_integer_columns(call: TracedCall, f: Callable, what: str) -> None:
    """A :class:`~stablehlo_sparsity.errors.SparsityWarning` when a differentiated leaf is an integer or boolean
    array: its columns are empty (integers have no derivative; ``jax.jacfwd`` refuses them)."""
    import jax
    import jax.numpy as jnp

    names = argument_names(f, len(call.args))
    for i in call.argnums:
        paths = jax.tree_util.tree_flatten_with_path(call.args[i])[0]
        bad = [(p, leaf) for p, leaf in paths if not jnp.issubdtype(jnp.result_type(leaf), jnp.inexact)]
        if bad:
            p, leaf = bad[0]
            warn(f"{what}: {names[i]}{jax.tree_util.keystr(p)} has dtype {jnp.result_type(leaf)}: integers "
                         f"and booleans have no derivative, so its columns are empty (differentiate float arrays; "
                         f"pass integer arguments through argnums you do not select)")

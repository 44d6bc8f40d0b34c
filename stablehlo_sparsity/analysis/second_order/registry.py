"""Second-order rules as data: per op, its *local term* — what the op's own second derivative adds.

``LOCAL_TERMS[name](ctx, op, args, results) -> list[Deps | None]`` (:data:`LocalTerm`): for each result, the
interactions ``g''·∇y∇yᵀ`` the op adds on top of what its first-order rule already passed on (``None``: none).
``args``/``results`` are second-order abstract values (:mod:`.encoding`); ``ctx.first_order(av)`` gives a
value's first-order ``(k, n)`` rows.  ``KINDS[name]`` says how the op's second derivative is classified:

* ``ZERO`` — linear or piecewise linear (add, reshape, gather, max, select, sort …): nothing is added;
* ``CROSS`` — locally linear in each operand (multiply, dot_general): ``S_a × S_b ∪ S_b × S_a`` per term;
* ``FULL`` — nonlinear (exp, sin, power …): ``S_y × S_y`` for each result element ``y``;
* ``BODY`` — decided by a region (reduce, scatter, map …): zero when the body is piecewise linear, else full.

An op without an entry gets :func:`~.terms.full_term`, which is sound for *every* op: an element's Hessian
can only pair inputs the element depends on.  So the direct analysis covers every op the first-order
analysis covers; the table only makes it more precise.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

__all__ = ["LOCAL_TERMS", "KINDS", "NOTES", "local_term", "LocalTerm", "ZERO", "CROSS", "FULL", "BODY",
           "PER_TARGET"]

ZERO = "zero"
CROSS = "cross-only"
FULL = "full"
BODY = "by body"
PER_TARGET = "per target"

LocalTerm = Callable[[Any, Any, list, list], Sequence[Any]]

LOCAL_TERMS: dict[str, LocalTerm] = {}
KINDS: dict[str, str] = {}
NOTES: dict[str, str] = {}


def local_term(*names: str, kind: str, note: str = ""):
    """Register the local second-order term of the given ops (full op names), with its kind."""
    if kind not in (ZERO, CROSS, FULL, BODY, PER_TARGET):
        raise ValueError(f"unknown second-order kind {kind!r}")

    def register(fn: LocalTerm) -> LocalTerm:
        for name in names:
            if "." not in name:
                raise ValueError(f"register the full op name, e.g. 'stablehlo.add', not {name!r}")
            if name in LOCAL_TERMS:
                raise RuntimeError(f"duplicate second-order rule for {name}")
            LOCAL_TERMS[name] = fn
            KINDS[name] = kind
            NOTES[name] = note
        return fn

    return register

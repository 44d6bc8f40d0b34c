"""The modes of a prepared derivative, as ``str`` enums (a user's or a saved string compares equal).

A Jacobian's mode says which products it evaluates — JVPs (``forward``: a column coloring), VJPs (``reverse``:
a row coloring), both (``bidirectional``) — and ``auto`` asks for the fewest products.  A Hessian's mode says
how entries are recovered from Hessian-vector products: ``direct`` (a star coloring, each entry read from one
product), ``substitution`` (an acyclic coloring, entries solved along two-colored trees), ``auto``.
"""

from __future__ import annotations


from dataclasses import dataclass
from enum import StrEnum

from ...coloring.kinds import ColoringKind
from ...errors import InputError

__all__ = ["JacobianMode", "HessianMode", "ColoringKind", "mode_of", "parse_mode", "ColoringOptions"]


class JacobianMode(StrEnum):
    AUTO = "auto"
    FORWARD = "forward"
    REVERSE = "reverse"
    BIDIRECTIONAL = "bidirectional"


class HessianMode(StrEnum):
    """How a prepared Hessian's entries are recovered from its Hessian-vector products.  ``"direct"`` is
    :attr:`DIRECT_RECOVERY` here and, as a *method* of ``hessian_sparsity``, the second-order analysis
    (:class:`~stablehlo_sparsity.analysis.second_order.method.HessianMethod`): one string, two names."""

    #: a star coloring; each entry read from one product
    DIRECT_RECOVERY = "direct"
    #: an acyclic coloring; entries solved along two-colored trees
    SUBSTITUTION = "substitution"
    #: substitution only where it saves products and its chains are short enough for the dtype
    AUTO = "auto"


def parse_mode(enum, value):
    """The member of ``enum`` named by ``value`` (a member or its string), or an ``InputError`` naming the
    choices."""
    try:
        return enum(value)
    except ValueError:
        raise InputError(f"mode must be one of {', '.join(m.value for m in enum)}, got {value!r}") from None


#: The products a Jacobian coloring asks for.
_MODE_OF_KIND = {ColoringKind.COLUMN: JacobianMode.FORWARD, ColoringKind.ROW: JacobianMode.REVERSE,
                 ColoringKind.BIDIRECTIONAL: JacobianMode.BIDIRECTIONAL}


def mode_of(coloring) -> JacobianMode:
    """The products a Jacobian coloring asks for: JVPs (column), VJPs (row) or both (bidirectional)."""
    return _MODE_OF_KIND[ColoringKind(coloring.kind)]


@dataclass(frozen=True)
class ColoringOptions:
    """Options forwarded to the coloring functions (see :mod:`stablehlo_sparsity.coloring`)."""

    order: str = "best"
    recolor: str = "auto"
    seed: int = 0

    def kwargs(self) -> dict:
        return {"order": self.order, "recolor": self.recolor, "seed": self.seed}

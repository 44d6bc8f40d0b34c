"""The kinds of coloring, shared by the coloring algorithms and the derivative layer.

A :class:`ColoringKind` is a ``str`` enum: ``ColoringKind.COLUMN == "column"``, so a kind read back from a
saved object, a pattern attribute in the IR or a user's string compares equal to the member.  Code inside the
library compares against the members, never against bare strings.
"""

from __future__ import annotations

from enum import StrEnum


class ColoringKind(StrEnum):
    """What a coloring colors, and so which products a compressed evaluation runs."""

    #: columns of a Jacobian: one JVP per color (Curtis, Powell & Reid 1974)
    COLUMN = "column"
    #: rows of a Jacobian: one VJP per color
    ROW = "row"
    #: rows and columns together: JVPs and VJPs (Coleman & Verma 1998)
    BIDIRECTIONAL = "bidirectional"
    #: variables of a symmetric pattern, star coloring (direct Hessian recovery; Gebremedhin et al. 2005)
    STAR = "star"
    #: variables of a symmetric pattern, acyclic coloring (recovery by substitution)
    ACYCLIC = "acyclic"

    @classmethod
    def parse(cls, value: "str | ColoringKind") -> "ColoringKind":
        """The member named by ``value`` (a member or its string); ``ValueError`` names the choices."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"coloring kind must be one of {', '.join(k.value for k in cls)}, "
                             f"got {value!r}") from None

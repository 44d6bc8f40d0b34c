"""What a representation module sees of a :class:`~..core.Deps`: its slots, as a typed protocol.

The conversions of this package read a value's slots and record what they build there (a value converts once),
without importing :mod:`..core` — so the import graph runs one way, from the value down to its
representations.  The slots, one per form (see the package docstring):

* ``_row`` — the row lane's set (:mod:`.row_lane`), or ``None``;
* ``_stack`` — a lazy vstack's items (:mod:`.lazy_stack`), or ``None``;
* ``_parts`` — the lazy parts (:mod:`.lazy_parts`), ``None`` while the value is a lazy vstack or a lane value
  whose parts were never asked for;
* ``_csr`` — the materialized CSR (:mod:`.csr`), cached once built.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

import scipy.sparse as sp

__all__ = ["Value", "V"]


class Value(Protocol):
    rows: int
    n: int
    _parts: tuple | None
    _stack: tuple | None
    _csr: sp.csr_array | None
    _row: frozenset[int] | None

    @property
    def parts(self) -> tuple: ...

    @property
    def is_empty(self) -> bool: ...

    def _sources(self) -> list: ...

    def _of_row(self, n: int, row: frozenset[int]) -> Any: ...


#: A value of the caller's own type (a conversion that returns one of its operands).
V = TypeVar("V", bound=Value)

"""The representations of :class:`~..core.Deps`, one module each, and the table of conversions between them.

A value's index sets are one ``(rows, n)`` boolean relation; how it is stored depends on where it came from.
A :class:`~..core.Deps` is in one of three *forms* (:func:`~..core.Deps.form`), its parts of four *kinds*:

======================  ====================================================================================
form / kind             module (invariants in its docstring)
======================  ====================================================================================
row lane (form)         :mod:`.row_lane` — a scalar's columns as a ``frozenset``: the unions of a
                        written-out program without NumPy
lazy stack (form)       :mod:`.lazy_stack` — the items of a ``vstack``, nothing copied until read
lazy parts (form)       :mod:`.lazy_parts` — a union of a few parts, nothing materialized; the general form
                        (a materialized value is one CSR part, its CSR cached)
index part (kind)       :mod:`.index_parts` — one column per row (the inputs and their structural moves)
CSR part (kind)         :mod:`.csr` — rows of a canonical bool CSR through a row map
run part (kind)         :mod:`..runs` — a few column intervals per row (a band that widens step by step)
group part (kind)       :mod:`.group_parts` — a large group union (a scatter-add's result), built when read;
                        the full reduction and projections read its groups
======================  ====================================================================================

and two conversions to CSR that are no stored form: :mod:`.small_unions` (few rows, or one row: one sort of
keys, or a few insertions into a long row) and :mod:`.materialize` (any rows, block by block, within the nonzero
budget).

:data:`CONVERSIONS` is the table of moves between forms that :class:`~..core.Deps` dispatches over
(``to_csr``, ``parts``, the lane of ``union`` and ``take_row``): ``CONVERSIONS[source, target](value)``.  The
conversions between part kinds are listed in :data:`PART_CONVERSIONS` (documentation and tests: every entry of
both tables is checked against the general representation, a dense model, by
``tests/lattice/test_representations.py``).

This package imports nothing from :mod:`..core` at run time (a conversion reads the value's slots, typed by the
protocol in :mod:`.value`); the
:class:`~..core.Deps` methods are the only callers outside the lattice.

Rank 1 (``lattice``) in ``tests/test_layout.py``: may import the lattice's budget and rank 0 (``errors``,
``dtypes``, ``_compat``).
"""

from __future__ import annotations

from .lazy_parts import parts_to_csr
from .lazy_stack import stack_to_csr, stack_to_parts
from .row_lane import lane_to_csr, lane_to_parts, parts_to_lane

#: The forms of a value (:meth:`~..core.Deps.form`) and the target ``CSR``.
ROW_LANE, LAZY_STACK, LAZY_PARTS, CSR = "row lane", "lazy stack", "lazy parts", "csr"

#: ``(source form, target) -> fn(value)``: each builds the target from the value's slots, records it there
#: (a value converts once) and returns it; into the row lane: the set, or ``None`` when that is not cheap.
CONVERSIONS = {
    (ROW_LANE, LAZY_PARTS): lane_to_parts,        # the set written as one CSR part (its CSR cached)
    (ROW_LANE, CSR): lane_to_csr,
    (LAZY_STACK, LAZY_PARTS): stack_to_parts,     # part j of every item stacked into one part
    (LAZY_STACK, CSR): stack_to_csr,              # every item's rows written into one output
    (LAZY_PARTS, CSR): parts_to_csr,              # compact move (runs), then one part / small union / blocks
    (LAZY_PARTS, ROW_LANE): parts_to_lane,        # a one-row value's columns as a set, when cheap
}

#: The conversions between part kinds and into CSR, by the function that does each (documentation and tests).
PART_CONVERSIONS = {
    ("index parts", "csr"): "lazy_parts.csr_from_parts (one part as it is; several: index_parts._index_block)",
    ("csr part", "csr"): "lazy_parts.gather_csr_rows (through its row map)",
    ("parts", "csr", "small"): "small_unions._small_union (few rows: one sort of keys)",
    ("parts", "csr", "one row"): "small_unions._scalar_union (one row: insertions into a long row, or one sort)",
    ("parts", "csr", "blocks"): "materialize.materialize (any rows, block by block)",
    ("parts", "runs"): "runs.compact_union (COMPACT_MOVES['union'])",
    ("run part", "csr"): "runs.RunPart.to_csr",
    ("group part", "csr"): "group_parts.GroupPart.base (materialize of GroupRows, block by block)",
    ("group parts", "group part"): "group_parts.combine_group_parts (one source: the groups row by row)",
}

__all__ = ["CONVERSIONS", "PART_CONVERSIONS", "ROW_LANE", "LAZY_STACK", "LAZY_PARTS", "CSR"]

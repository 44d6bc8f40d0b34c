"""The ``sparsity-annotate`` pass: run the analysis and write its lattice into the IR.

What it writes (all discardable attributes under the ``sparsity.`` prefix; ``docs/reference/annotated-ir.md`` has a
worked example):

* every op result the analysis reached: ``sparsity.deps = "<sets>"`` (an ``ArrayAttr`` of such strings, one
  per result, for ops with several results);
* the entry function's arguments (argument attributes): ``sparsity.offset = K : i64``, the first Jacobian
  column of that argument (arguments that are not differentiated carry none);
* the entry function's results (result attributes): ``sparsity.offset`` (first Jacobian row) and
  ``sparsity.deps`` (the final rows of the pattern);
* the entry function itself: ``sparsity.pattern = "shape=MxN nnz=… deps=… distinct=…"``, and, only when
  its ``arg_attrs``/``res_attrs`` list existed with nothing but empty dictionaries (JAX emits such lists),
  ``sparsity.keep = ["arg_attrs"]`` so that ``sparsity-strip`` restores it exactly.

The ``<sets>`` string has two forms, told apart by the first character:

* exact, ``{`` first: one index set per element in row-major order, separated by spaces.  A set lists
  column numbers, with runs of three or more consecutive columns written ``a..b``; ``s*k`` repeats a set
  ``k`` times: ``"{0,1} {1..3} {}*2"`` means ``[{0, 1}, {1, 2, 3}, {}, {}]``;
* summary, for values with more than ``max-elements`` elements or more than ``max-nnz`` dependencies:
  ``"elements=4096 nnz=12288 deps=0..3 distinct=17"`` — the number of elements, of (element, input) pairs,
  the smallest and largest number of inputs one element depends on, and the number of distinct sets.

Both are plain ``StringAttr`` values, so the annotated module parses and verifies with any MLIR tool, and
FileCheck lines match them literally (no ``[[`` that FileCheck would read as a variable).

An op may be visited several times: in every iteration of a ``while`` body, in each branch analysis, in a
private function called from several places with different lattices.  Its annotation is the **union over
all visits** (the lattice's join), i.e. what holds at any execution of the op.  Ops the analysis never
reached (functions not called from the entry, a ``case`` branch ruled out by a known index) carry no
``sparsity.deps``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, Sequence

from stablehlo_sparsity.analysis.program import annotate_module
from stablehlo_sparsity.ir.annotations import (ATTR_DEPS, ATTR_KEEP, ATTR_OFFSET, ATTR_PATTERN,  # noqa: F401
                                               MAX_ELEMENTS, MAX_NNZ, OWN_ATTRS, format_deps, format_sets,
                                               format_summary, parse_sets, resolve_entry, summarize)

from .base import SparsityPass, option

__all__ = [
    "AnnotatePass",
    "AnnotateOptions",
    "annotate",
    "resolve_entry",
    "format_sets",
    "parse_sets",
    "summarize",
    "ATTR_DEPS",
    "ATTR_OFFSET",
    "ATTR_PATTERN",
]

# The attribute format (format_sets, parse_sets, summarize, the ATTR_* names) and the entry's choice
# (resolve_entry) are the IR toolkit's (stablehlo_sparsity.ir.annotations); the analysis that writes them is
# stablehlo_sparsity.analysis.program.annotate_module.  This module is the pass and its options.


@dataclass(frozen=True)
class AnnotatePass(SparsityPass):
    """Run the sparsity analysis and attach each value's index sets as sparsity.* attributes.

    As a Python object it is also the options of :func:`annotate` (``AnnotateOptions``): ``entry`` (default
    ``main``, else the only public function), ``wrt`` (entry argument indices; default argument 0),
    ``on_unknown`` (as in :class:`AnalysisOptions`), ``max_elements`` / ``max_nnz`` (bigger values get a
    summary).

    Examples:
        >>> from stablehlo_sparsity.passes import AnnotatePass
        >>> AnnotatePass.from_options("max-elements=8 wrt=all")
        AnnotatePass(entry=None, wrt='all', on_unknown='error', max_elements=8, max_nnz=1024)
        >>> [o.name for o in AnnotatePass.options()]
        ['entry', 'wrt', 'on-unknown', 'max-elements', 'max-nnz']
    """

    argument: ClassVar[str] = "sparsity-annotate"
    entry: str | None = option(None, "entry function (default: main, else the only public one)", kind="str")
    wrt: Sequence[int] | str | None = option(None, "comma-separated entry argument indices to differentiate, or "
                                             "'all' (default: 0)", kind="ints")
    on_unknown: str = option("error", "ops without a rule: error or conservative", choices=("error", "conservative"))
    max_elements: int = option(MAX_ELEMENTS, "values with more elements get a summary")
    max_nnz: int = option(MAX_NNZ, "values with more dependencies get a summary")

    def run(self, module_op) -> None:
        annotate(module_op, self)


#: The options of :func:`annotate` are the pass's fields.
AnnotateOptions = AnnotatePass


def annotate(module, options: AnnotateOptions | None = None, **kwargs):
    """Analyze ``module`` (an ``ir.Module``, a ``builtin.module`` operation or its op view) and attach the
    lattice as ``sparsity.*`` attributes, in place.  Returns the :class:`stablehlo_sparsity.analysis.api.Analysis`.

    Keyword arguments override fields of ``options`` (``entry=``, ``wrt=``, ``on_unknown=``,
    ``max_elements=``, ``max_nnz=``).  Analysis errors raise :class:`SparsityError` subclasses.

    Raises:
        InputError: no function ``entry`` in the module (or no way to choose one), a bad ``wrt``, or another
            analysis input error.
        UnsupportedOpError: an op without a sparsity rule (with ``on_unknown="error"``).
        UnsupportedTypeError: an element type the analysis cannot represent.
        DynamicShapeError: a tensor with a dynamic (``?``) dimension.
        PatternTooLargeError: an intermediate pattern would exceed the analysis' memory budget.
        TypeError: ``module`` is not a ``builtin.module``.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import annotate
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.reverse %x, dims = [0] : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }''')
        >>> annotate(module).pattern.nnz
        3
        >>> str(module.body.operations[0].attributes["sparsity.pattern"])
        '"shape=3x3 nnz=3 deps=1 distinct=3"'
    """
    opts = options or AnnotatePass()
    if kwargs:
        opts = dataclasses.replace(opts, **kwargs)
    return annotate_module(module, entry=opts.entry, wrt=opts.wrt, on_unknown=opts.on_unknown,
                           max_elements=opts.max_elements, max_nnz=opts.max_nnz)

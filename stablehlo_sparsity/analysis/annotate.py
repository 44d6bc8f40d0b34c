"""The analysis written into its module: every op result's index sets, the entry's offsets and its pattern as
``sparsity.*`` attributes (the format: :mod:`stablehlo_sparsity.ir.annotations`; a worked example:
``docs/reference/annotated-ir.md``).

:class:`Recorder` is the analysis' observer that keeps, for each op, the union of its lattices over every visit
(a ``while`` body's iterations, each branch, each call of a private function); :func:`write_annotations` writes
them and the entry's attributes.  :func:`stablehlo_sparsity.analysis.program.annotate_module` runs both (what
``lower_and_analyze(..., annotate=True)`` and the ``sparsity-annotate`` pass do).
"""

from __future__ import annotations

from typing import Any

from ..ir.annotations import (ATTR_DEPS, ATTR_KEEP, ATTR_OFFSET, ATTR_PATTERN, OWN_ATTRS, format_deps,
                              format_summary, functions_of, set_func_attr_list, strip)
from ..ir.helpers import sym_name
from ..ir.keywords import parse_indices
from ..lattice import Deps

__all__ = ["Recorder", "write_annotations"]


class _Record:
    """Union over visits of one op's result lattices."""

    __slots__ = ("deps",)

    def __init__(self, results):
        self.deps = [r.deps for r in results]

    def add(self, results):
        self.deps = [a if a is r.deps else Deps.union(a, r.deps) for a, r in zip(self.deps, results)]


class Recorder:
    """The analysis' observer (``observer=``) that records each op's result lattices, joined over its visits."""

    __slots__ = ("records",)

    def __init__(self) -> None:
        self.records: dict[Any, _Record] = {}

    def __call__(self, op, results) -> None:
        key = op.operation
        rec = self.records.get(key)
        if rec is None:
            self.records[key] = _Record(results)
        else:
            rec.add(results)


def write_annotations(mod, entry: str, wrt, analysis, recorder: Recorder, max_elements: int, max_nnz: int) -> None:
    """Replace the ``sparsity.*`` attributes the annotation owns in ``mod`` (an op view of a ``builtin.module``)
    by those of ``analysis`` of its function ``entry`` (differentiated in ``wrt``, as the analysis was given
    it), with the op lattices ``recorder`` saw; values over ``max_elements`` / ``max_nnz`` get a summary."""
    from jaxlib.mlir import ir

    with mod.context:
        strip(mod, names=OWN_ATTRS)
        fmt = lambda d: ir.StringAttr.get(format_deps(d.to_csr(), max_elements, max_nnz))  # noqa: E731
        for op, rec in recorder.records.items():
            if not rec.deps:
                continue
            if len(rec.deps) == 1:
                op.attributes[ATTR_DEPS] = fmt(rec.deps[0])
            else:
                op.attributes[ATTR_DEPS] = ir.ArrayAttr.get([fmt(d) for d in rec.deps])

        fn = next(f for f in functions_of(mod) if sym_name(f) == entry)
        i64 = ir.IntegerType.get_signless(64)
        n_args = len(fn.regions[0].blocks[0].arguments)
        wrt = list(range(n_args)) if wrt is None else list(
            parse_indices(wrt, n_args, name="wrt", owner=f"@{entry}", allow_text=True))
        arg_updates = {i: {ATTR_OFFSET: ir.IntegerAttr.get(i64, off)} for i, off in zip(wrt, analysis.input_offsets)}
        keep = []
        if set_func_attr_list(fn, "arg_attrs", n_args, arg_updates):
            keep.append("arg_attrs")
        res_updates = {
            i: {ATTR_OFFSET: ir.IntegerAttr.get(i64, off), ATTR_DEPS: fmt(r.deps)}
            for i, (off, r) in enumerate(zip(analysis.output_offsets, analysis.results))
        }
        n_res = len(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results)
        if set_func_attr_list(fn, "res_attrs", n_res, res_updates):
            keep.append("res_attrs")
        if keep:  # lists of empty dictionaries that were there before (JAX emits some): strip keeps them
            fn.attributes[ATTR_KEEP] = ir.ArrayAttr.get([ir.StringAttr.get(k) for k in keep])
        p = analysis.pattern
        fn.attributes[ATTR_PATTERN] = ir.StringAttr.get(format_summary(p.to_scipy(), p.shape))

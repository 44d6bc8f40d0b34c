"""Detection in bounded memory: the Jacobian pattern in row blocks, streamed.

``jacobian_sparsity_blocks(f, x, rows_per_block=...)`` yields ``(r0, block)`` in row order, where ``block`` is
a ``scipy.sparse.csr_array`` of bool of shape ``(r1 - r0, n)`` holding *exactly* rows ``[r0, r1)`` of
``jacobian_sparsity(f, x)``.  Each block is found by its own analysis, so no process ever holds the whole
pattern; a consumer (the coloring, :func:`write_pattern_shards`) takes the blocks one at a time.

How a block is found — two passes over the same interpreter the whole analysis uses:

1. **Demand** (backwards).  Starting from the requested output rows, mark for every value of the program the
   elements whose index sets can reach those rows.  An op's demanded operand elements are read off the op's
   own forward rule applied to *identity-seeded* operands (operand element ``j`` is column ``j``): row ``e``
   of that result lists exactly the operand rows the rule unions into result row ``e``, whatever the rows
   hold, because every rule is a union of operand rows chosen by the op's structure and its known constants
   (docs/DESIGN.md §2: rows by index map, union, group union, drop).  Elementwise ops, ``reshape``,
   ``slice``, ``reverse`` and ``transpose`` take shortcuts with the same meaning (the spec's index maps on the
   demand itself).  The constants come from one analysis over zero columns (cheap: every index set is empty),
   run once per program.  Ops this cannot see through —
   ``while``/``case``/``if``, ops whose regions read values from outside, calls of a function that is also
   called from somewhere the demand pass does not go (a loop body, a composite), a rule that refuses the
   seeds — demand their whole operands: always sound, it only costs memory.  ``func.call`` of a function
   whose every call site is visited goes *into* the callee (the sites' demands are joined, until nothing
   changes), so ``jnp.roll`` and ``jnp.pad``, which JAX emits as private functions, stay bounded.
2. **Forward, masked**.  The ordinary analysis runs with every visited value's undemanded rows emptied (or
   left partial) right after its op (``Interpreter.result_filter``), and every value's index sets are
   dropped after its last use in its function (``Interpreter.release_dead``).  A demanded row only ever reads
   demanded rows, so it comes out exactly as in the whole analysis; what an undemanded row holds does not
   matter, as long as it is small.  The requested output rows are the block.

Bound.  Per block: the nonzeros of the demanded rows (the block's own rows plus the halo each op adds), plus
bookkeeping linear in the number of elements of the values alive at one time (an ``int32`` column or row
index per element for a masked value, a bit per element for a demand), independent of the pattern's nnz.  The
demand pass costs a pass over the program per block, and the forward pass touches every element of every
value (the rules work on whole tensors), so a block costs about as much *time* as a whole analysis of a
pattern with the block's nonzeros on the whole program's elements.  Measured (``benchmarks/stream_detect.py``,
docs/benchmarks/scaling.md): the 27-point stencil at n = 1e7 takes 3.6 GiB whole and 1.5 GiB in 4 blocks (1.8x the
CPU time); at n = 3.7e7 (1e9 nonzeros) 6 blocks peak at 4.5 GiB.

Processes.  ``process=(i, P)`` gives process ``i`` the contiguous rows ``[i·⌈m/P⌉, (i+1)·⌈m/P⌉)`` — the rows
:func:`stablehlo_sparsity.derivatives.distributed.row_block` hands the same process, so a process detects the rows it
decompresses, and blocks on disk of different processes never interleave.  (Round-robin blocks would balance
uneven rows better; a stencil's rows cost the same, and contiguous rows keep each process's halo small.)
"""

from __future__ import annotations

import functools
import json
import os
import warnings
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from .._compat import constants_in_module, innermost_locations, release_lowering_caches
from .program import (custom_rule_primitives, entry_layout, lowered_layout, norm_argnums, resolve_options,
                      traceable_keyword)
from ..ir.attrs import function_results, symbol_ref
from .engine import single_block
from ..errors import InputError, LoweringError, SparsityError, SparsityWarning
from .interpreter import AnalysisOptions, Interpreter
from .rows import process_row_range
from ..ir.helpers import functions, nested_ops, region_captures
from ..lattice import CsrPart, Deps, IndexPart, nnz_budget
from ..lattice.core import make_csr
from ..ir.parsing import as_module
from ..lattice.pattern import SparsityPattern
from .rules.elementwise import ELEMENTWISE
from .rules.registry import DEPS_RULES
from .rules.structural import reverse_np, slice_np, transpose_np
from .values import AbstractValue, is_differentiable, is_token_type, same_constant, tensor_type
from . import rules as _rules  # noqa: F401  (registers every rule)

__all__ = ["BlockedDetection", "prepare_blocks", "jacobian_sparsity_blocks", "module_sparsity_blocks",
           "write_pattern_shards", "write_blocks", "assemble_blocks", "process_rows",
           "DEFAULT_ROWS_PER_BLOCK"]

#: Rows per block when none is given.
DEFAULT_ROWS_PER_BLOCK = 1 << 20

#: Ops whose NumPy twin (:mod:`.rules.structural`) returns a view of its operand.
VIEW_TWINS = {"stablehlo.slice": slice_np, "stablehlo.reverse": reverse_np, "stablehlo.transpose": transpose_np}

#: Ops whose results the demand pass does not see through: every operand element is demanded.
WHOLE_OPERANDS = frozenset({"stablehlo.while", "stablehlo.case", "stablehlo.if", "func.call", "stablehlo.composite"})


# ---------------------------------------------------------------------------------------------- demand masks
class _Demands:
    """Which elements of each value are demanded: one packed bit per element (``np.packbits``)."""

    def __init__(self):
        self._bits: dict = {}
        self._sizes: dict = {}
        self.version: dict = {}  # how often each value's demand grew (ops whose results did not grow are skipped)

    def get(self, v) -> np.ndarray | None:
        bits = self._bits.get(v)
        return None if bits is None else np.unpackbits(bits, count=self._sizes[v]).view(bool)

    def add(self, v, mask: np.ndarray) -> bool:
        """Join ``mask`` into ``v``'s demand; True when that changed it."""
        mask = np.asarray(mask, bool)
        old = self.get(v)
        if old is not None:
            if not (mask & ~old).any():
                return False
            mask = mask | old
        elif not mask.any():
            return False
        self._bits[v] = np.packbits(mask)
        self._sizes[v] = mask.size
        self.version[v] = self.version.get(v, 0) + 1
        return True

    def take(self, v) -> np.ndarray | None:
        """:meth:`get`, forgetting ``v``'s demand (a value of the entry function is masked once)."""
        mask = self.get(v)
        self._bits.pop(v, None)
        return mask


#: Known values above this many elements that hold one value throughout (a broadcast scalar) are kept as a
#: broadcast view of that value: the 27 folded coefficients of a 27-point stencil cost nothing then.
COMPACT_CONSTANT_ELEMENTS = 4096


def _compact(av: AbstractValue) -> AbstractValue:
    """``av`` with a large uniform known value held as a read-only broadcast view (the same bits)."""
    c = av.const
    if c is None or c.size <= COMPACT_CONSTANT_ELEMENTS or c.strides == (0,) * c.ndim or not c.flags.c_contiguous:
        return av
    bits = c.reshape(-1).view(np.dtype(f"u{c.dtype.itemsize}")) if c.dtype.itemsize in (1, 2, 4, 8) else None
    if bits is None or not (bits == bits[0]).all():
        return av
    return AbstractValue(av.type, av.deps, np.broadcast_to(c.reshape(-1)[0], c.shape), av.uncertainty, av.int_range)


def _unknown(av: AbstractValue) -> AbstractValue:
    return AbstractValue(av.type, av.deps)


def _join_info(a: AbstractValue | None, b: AbstractValue) -> AbstractValue:
    """What every observation of one value agrees on (a constant seen with two values is unknown)."""
    if a is None or a is b:
        return b
    if a.const is not None or b.const is not None:
        if same_constant(a.const, b.const) and a.uncertainty == b.uncertainty:
            return a
        return _unknown(b)
    try:
        same_range = a.int_range == b.int_range
    except Exception:  # pragma: no cover - a range type without equality
        same_range = False
    return a if same_range else _unknown(b)


# ---------------------------------------------------------------------------------------------- the program
@dataclass
class _Site:
    caller: str
    op: Any
    top_level: bool


def _call_sites(funcs: dict) -> dict[str, list[_Site]]:
    """Every reference of each function: ``func.call`` sites (top level of their caller's body or nested in a
    region) and ``composite`` decompositions (never followed: counted as nested)."""
    sites: dict[str, list[_Site]] = {name: [] for name in funcs}
    for caller, fn in funcs.items():
        for block in fn.regions[0].blocks:
            for op in block.operations:
                for o, top in [(op.operation, True)] + [(x, False) for x in nested_ops(op)]:
                    name = o.name
                    if name == "func.call":
                        callee = symbol_ref(o, "callee")
                    elif name == "stablehlo.composite":
                        callee, top = symbol_ref(o, "decomposition"), False
                    else:
                        continue
                    if callee in sites:
                        sites[callee].append(_Site(caller, o, top))
    return sites


def _visited_functions(funcs: dict, entry: str, sites: dict[str, list[_Site]]) -> list[str]:
    """The entry and every function all of whose call sites are at the top level of visited functions, callers
    before callees."""
    order = [entry]
    seen = {entry}
    changed = True
    while changed:
        changed = False
        for name in funcs:
            if name in seen or not sites[name]:
                continue
            if all(s.top_level and s.caller in seen for s in sites[name]):
                order.append(name)
                seen.add(name)
                changed = True
    return order


def _body(fn):
    """The one block of a function's body."""
    return single_block(fn.regions[0])


class BlockedDetection:
    """One program prepared for row-block detection: its module, column layout and the known constants of its
    values (found once); :meth:`block` analyzes one row range.

    ``module`` is a parsed ``ir.Module`` (or anything :func:`stablehlo_sparsity.ir.parsing.as_module` takes);
    ``wrt`` and ``num_outputs`` mean what they mean for :func:`stablehlo_sparsity.analyze_module`."""

    def __init__(self, module, entry: str = "main", *, wrt=None, num_outputs: int | None = None,
                 options: AnalysisOptions | None = None):
        self.module = as_module(module)
        self.entry = entry
        self.options = resolve_options(options)
        with self.module.context:
            self.layout = entry_layout(self.module, entry, wrt)
            self.funcs = functions(self.module)
            res_types = function_results(self.layout.fn)
            self._result_positions = [i for i, t in enumerate(res_types) if not is_token_type(t)]
            if num_outputs is not None:
                if int(num_outputs) < 0:
                    raise InputError(f"num_outputs must be non-negative, got {num_outputs}")
                self._result_positions = self._result_positions[:int(num_outputs)]
            self.output_shapes = [tensor_type(res_types[i]).shape for i in self._result_positions]
            sizes = [int(np.prod(s, dtype=np.int64)) for s in self.output_shapes]
            self.output_offsets = [int(o) for o in np.cumsum([0] + sizes)]
            self.sites = _call_sites(self.funcs)
            self.visited = _visited_functions(self.funcs, entry, self.sites)
            self.tracked = set()
            for name in self.visited:
                for op in _body(self.funcs[name]).operations:
                    self.tracked.update(op.results)
            #: values of the entry function's body: computed once per block (a callee's, once per call)
            self.entry_values = {r for op in _body(self.layout.fn).operations for r in op.results}
            self.info: dict = {}
            self.warnings: list[str] = []
            self._known_values()

    @property
    def shape(self) -> tuple[int, int]:
        return self.output_offsets[-1], self.layout.n

    # ------------------------------------------------------------------------------------------ constants
    def _entry_args(self, width: int, identity: bool) -> list[AbstractValue]:
        layout = self.layout
        return [AbstractValue(t, layout.argument_deps(i, width) if identity else Deps.empty(t.size, width))
                for i, t in enumerate(layout.arg_types)]

    def _known_values(self) -> None:
        """One analysis over zero columns: the constants, errors and ranges of every visited value, joined over
        the calls of a function (its index sets are all empty, so this costs about as much as folding)."""
        def record(op, results):
            for r, av in zip(op.results, results):
                if r in self.tracked:
                    self.info[r] = _join_info(self.info.get(r), _compact(av))

        interp = Interpreter(self.module, 0, self.options, observer=record,
                             result_filter=lambda op, results: [_compact(av) for av in results])
        with warnings.catch_warnings():  # the block analyses report them
            warnings.simplefilter("ignore", SparsityWarning)
            interp.call(self.entry, self._entry_args(0, identity=False))
        for ba, av in zip(_body(self.layout.fn).arguments, self._entry_args(0, identity=False)):
            self.info[ba] = av
        for name in self.visited[1:]:  # a callee's arguments: what its call sites pass (callers come first)
            args = _body(self.funcs[name]).arguments
            for site in self.sites[name]:
                for ba, v in zip(args, site.op.operands):
                    self.info[ba] = _join_info(self.info.get(ba), self._info(v))

    def _info(self, v) -> AbstractValue:
        av = self.info.get(v)
        if av is None:  # not visited: nothing known
            t = tensor_type(v.type)
            return AbstractValue(t, Deps.empty(t.size, 0))
        return av

    # ------------------------------------------------------------------------------------------ demand
    def demand(self, r0: int, r1: int) -> _Demands:
        """The demanded elements of every visited value for the output rows ``[r0, r1)``."""
        d = _Demands()
        body = _body(self.layout.fn)
        returned = list(body.operations)[-1].operands
        for k, pos in enumerate(self._result_positions):
            lo, hi = self.output_offsets[k], self.output_offsets[k + 1]
            a, b = max(r0, lo), min(r1, hi)
            if a < b:
                mask = np.zeros(hi - lo, bool)
                mask[a - lo:b - lo] = True
                d.add(returned[pos], mask)
        seen: dict = {}  # op -> the versions of its results' demands when it was last visited
        changed = True
        while changed:  # the call sites of a function join their demands: go round until nothing changes
            changed = False
            for name in self.visited:
                changed |= self._demand_function(name, d, seen)
        return d

    def _demand_function(self, name: str, d: _Demands, seen: dict) -> bool:
        body = _body(self.funcs[name])
        ops = list(body.operations)
        changed = False
        if name != self.entry:  # the callee returns what its call sites demand of their results
            for site in self.sites[name]:
                for v, r in zip(ops[-1].operands, site.op.results):
                    m = d.get(r)
                    if m is not None:
                        changed |= d.add(v, m)
        for op in reversed(ops[:-1]):
            versions = tuple(d.version.get(r, 0) for r in op.results)
            if not any(versions):
                continue
            if op.operation.name != "func.call" or symbol_ref(op, "callee") not in self.visited:
                # nothing new since the last visit: nothing to add (demands only grow); a visited callee's
                # arguments may have grown through its other call sites, so calls are always looked at
                if seen.get(op) == versions:
                    continue
                seen[op] = versions
            masks = [d.get(r) for r in op.results]
            for v, m in self._operand_demand(op, masks, d):
                changed |= d.add(v, m)
        return changed

    def _operand_demand(self, op, masks, d: _Demands) -> list:
        """``(value, mask)`` pairs: what ``op``'s demanded results read — by the op's shortcut in
        :data:`DEMAND_SHORTCUTS` when it has one that applies, else by its own rule on identity-seeded operands
        (:meth:`_seeded_demand`)."""
        infos = [self._info(r) for r in op.results]
        live = [i for i, (m, av) in enumerate(zip(masks, infos))
                if m is not None and av.const is None and is_differentiable(av.dtype)]
        if not live:
            return []
        shortcut = DEMAND_SHORTCUTS.get(op.operation.name)
        if shortcut is not None:
            out = shortcut(self, op, masks, live, d)
            if out is not None:
                return out
        return self._seeded_demand(op, masks, live, infos)

    # The shortcuts of DEMAND_SHORTCUTS: ``(self, op, masks, live, d)`` -> ``(value, mask)`` pairs, or ``None`` when
    # the shortcut does not apply (the seeded rule decides).
    def _call_demand(self, op, masks, live, d: _Demands) -> list | None:
        """``func.call`` of a visited function: what the callee's arguments demand (its call sites' demands are
        joined in its body); a callee the demand pass does not visit: ``None``."""
        callee = symbol_ref(op, "callee")
        if callee not in self.visited:
            return None
        out = []
        for v, ba in zip(op.operands, _body(self.funcs[callee]).arguments):
            m = d.get(ba)
            if m is not None:
                out.append((v, m))
        return out

    def _elementwise_demand(self, op, masks, live, d: _Demands) -> list:
        """Element ``e`` of each operand reaches element ``e`` of the result (a scalar operand: all of them)."""
        (size,) = {self._info(op.results[i]).size for i in live}
        union = np.any(np.stack([masks[i] for i in live]), axis=0)
        out = []
        for v in op.operands:
            a = self._info(v)
            if a.const is None and is_differentiable(a.dtype):
                out.append((v, union if a.size == size else np.array([union.any()]) if a.size == 1
                            else np.ones(a.size, bool)))
        return out

    def _no_demand(self, op, masks, live, d: _Demands) -> list:
        """An elementwise op whose results have no derivative (``and``, ``compare``, …): nothing is read."""
        return []

    def _reshape_demand(self, op, masks, live, d: _Demands) -> list:
        """§reshape keeps the row-major order: the same elements."""
        return [(op.operands[0], masks[0])] if self._carries(op.operands[0]) else []

    def _view_demand(self, op, masks, live, d: _Demands) -> list | None:
        """§slice, §reverse, §transpose: the NumPy twin of the op (:data:`VIEW_TWINS`) on the operand's demand is a
        view of it, so writing the result's demand into that view marks exactly the operand elements each result
        reads; ``None`` when the twin's answer is not such a view."""
        if not self._carries(op.operands[0]):
            return None
        demand = np.zeros(self._info(op.operands[0]).shape, bool)
        view = VIEW_TWINS[op.operation.name](demand, op)
        if view.size != masks[0].size or not np.shares_memory(view, demand):
            return None
        view |= masks[0].reshape(view.shape)
        return [(op.operands[0], demand.ravel())]

    def _seeded_demand(self, op, masks, live, infos) -> list:
        """The op's own forward rule on identity-seeded operands (operand element ``j`` is column ``j``): row ``e``
        of its answer lists the operand elements result element ``e`` reads.  Ops it cannot see through
        (:data:`WHOLE_OPERANDS`, no rule, regions reading outer values, a rule refusing the seeds) demand their
        whole operands."""
        name = op.operation.name
        rule = DEPS_RULES.get(name)
        captures = region_captures(op) if len(op.regions) else []
        if name in WHOLE_OPERANDS or rule is None or captures:
            return self._whole(list(op.operands) + captures)
        operands = [self._info(v) for v in op.operands]
        seeded = [k for k, a in enumerate(operands) if a.const is None and is_differentiable(a.dtype) and a.size]
        if not seeded:
            return []
        offsets = np.cumsum([0] + [operands[k].size for k in seeded])
        width = int(offsets[-1])
        args = [a.with_deps(Deps.empty(a.size, width)) for a in operands]
        for j, k in enumerate(seeded):
            args[k] = operands[k].with_deps(Deps.identity(operands[k].size, width, int(offsets[j])))
        sub = Interpreter(self.module, width, self.options)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SparsityWarning)
                produced = list(rule(sub, op, args))
        except Exception:  # the rule refuses the seeds: demand everything (sound)
            return self._whole(list(op.operands))
        reached = _reached(produced, live, masks, infos, width)
        if reached is None:
            return self._whole(list(op.operands))
        return [(op.operands[k], reached[offsets[j]:offsets[j + 1]]) for j, k in enumerate(seeded)]

    def _carries(self, v) -> bool:
        """Whether ``v`` can have index sets (not a known constant, a differentiable type)."""
        a = self._info(v)
        return a.const is None and is_differentiable(a.dtype)

    def _whole(self, values) -> list:
        out = []
        for v in values:
            av = self._info(v)
            if av.const is None and is_differentiable(av.dtype):
                out.append((v, np.ones(av.size, bool)))
        return out

    # ------------------------------------------------------------------------------------------ one block
    def block(self, r0: int, r1: int, observer: Callable | None = None) -> sp.csr_array:
        """Rows ``[r0, r1)`` of the pattern, as a bool ``csr_array`` of shape ``(r1 - r0, n)``.

        ``observer(op, results)`` sees every op's (masked) results, as the interpreter's observer does."""
        m, n = self.shape
        r0, r1 = int(r0), int(r1)
        if not 0 <= r0 <= r1 <= m:
            raise InputError(f"row block [{r0}, {r1}) is outside the pattern's {m} rows")
        with self.module.context:
            demands = self.demand(r0, r1)
            # the outputs are cut to the block's rows right after the entry returns: masking them first would
            # only build their rows twice (a final concatenate's stacked rows, on every element)
            tracked = self.tracked - set(list(_body(self.layout.fn).operations)[-1].operands)
            once = self.entry_values
            small: weakref.WeakSet = weakref.WeakSet()

            def mask(op, results):
                out = []
                for r, av in zip(op.results, results):
                    if r in tracked and not av.deps.is_empty:
                        keep = demands.take(r) if r in once else demands.get(r)
                        av = av.with_deps(_masked(av.deps, keep, small))
                    out.append(_compact(av))
                return out

            interp = Interpreter(self.module, n, self.options, observer=observer, result_filter=mask,
                                 release_dead=True)
            results = interp.call(self.entry, self._entry_args(n, identity=True))
            self.warnings = list(interp.warned)
            pieces = []
            for k, pos in enumerate(self._result_positions):
                lo, hi = self.output_offsets[k], self.output_offsets[k + 1]
                a, b = max(r0, lo), min(r1, hi)
                if a < b:
                    pieces.append(results[pos].deps.gather_rows(np.arange(a - lo, b - lo)))
            if not pieces:
                return sp.csr_array((r1 - r0, n), dtype=bool)
            with nnz_budget(self.options.max_pattern_nnz):
                return Deps.vstack(pieces).to_csr()

    def blocks(self, rows_per_block: int = DEFAULT_ROWS_PER_BLOCK, process: tuple[int, int] | str | None = None,
               observer: Callable | None = None) -> Iterator[tuple[int, sp.csr_array]]:
        """``(r0, block)`` for consecutive blocks of ``rows_per_block`` rows, in order — over every row, or over
        this process's rows (:func:`process_rows`) with ``process=(i, P)``."""
        rows_per_block = int(rows_per_block)
        if rows_per_block < 1:
            raise InputError(f"rows_per_block must be positive, got {rows_per_block}")
        lo, hi = process_rows(self.shape[0], process)
        for r0 in range(lo, hi, rows_per_block):
            r1 = min(hi, r0 + rows_per_block)
            yield r0, self.block(r0, r1, observer)


#: Op name -> the demand pass's shortcut for it (:meth:`BlockedDetection._operand_demand`): elementwise ops
#: (:data:`.rules.elementwise.ELEMENTWISE`; those whose results have no derivative read nothing), §reshape, the
#: ops of :data:`VIEW_TWINS`, and ``func.call`` (a visited callee).  Any other op: its rule on seeded operands.
DEMAND_SHORTCUTS: dict[str, Callable[..., list | None]] = {
    "func.call": BlockedDetection._call_demand,
    "stablehlo.reshape": BlockedDetection._reshape_demand,
    **dict.fromkeys(VIEW_TWINS, BlockedDetection._view_demand),
    **{name: BlockedDetection._no_demand if kind == "none" else BlockedDetection._elementwise_demand
       for name, (kind, _) in ELEMENTWISE.items()},
}


def _reached(produced: list, live: list[int], masks: list, infos: list[AbstractValue], width: int) -> np.ndarray | None:
    """The seeded columns (operand elements) that the demanded rows of the live results read, from a rule's
    answer on identity-seeded operands; ``None``: a result has the wrong number of rows (demand everything)."""
    reached = np.zeros(width, bool)
    for i in live:
        res = produced[i]
        deps = res.deps if isinstance(res, AbstractValue) else res
        if deps.rows != infos[i].size:
            return None
        rows = np.flatnonzero(masks[i])
        if all(isinstance(p, IndexPart) for p in deps.parts):  # one column per row: read it off
            for p in deps.parts:
                assert isinstance(p, IndexPart)
                cols = p.cols[rows]
                reached[cols[cols >= 0]] = True
        else:
            reached[deps.gather_rows(rows).to_csr().indices] = True
    return reached


#: A masked value keeps up to this many already-masked parts as a lazy union before they are written into one
#: CSR: a long sum (the 27 terms of a stencil) then rewrites its growing rows every few terms, not every term.
LAZY_MASKED_PARTS = 8


def _masked(deps: Deps, keep: np.ndarray | None, small: weakref.WeakSet) -> Deps:
    """``deps`` with its rows outside ``keep`` emptied or left partial, held compactly.

    Rows outside a value's demand are never read by a demanded row, so they may hold any subset of their true
    index sets: what matters is that no value keeps the unmasked rows alive.  ``small`` holds the parts this
    block already masked; a union of at most :data:`LAZY_MASKED_PARTS` of them (and fresh index parts, masked
    one by one) stays lazy, anything else is written as one CSR of the kept rows."""
    if keep is None:
        return Deps.empty(deps.rows, deps.n)
    if keep.all():
        return deps
    parts = deps.parts
    if len(parts) <= LAZY_MASKED_PARTS and all(p in small or type(p) is IndexPart for p in parts):
        out = []
        for p in parts:
            if p not in small:
                assert isinstance(p, IndexPart)
                p = IndexPart(np.where(keep, p.cols, -1).astype(p.cols.dtype, copy=False))
                small.add(p)
            out.append(p)
        return Deps(deps.rows, deps.n, out)
    rows = np.flatnonzero(keep)
    kept = deps.gather_rows(rows).to_csr()  # only the kept rows are built
    if not kept.nnz:
        return Deps.empty(deps.rows, deps.n)
    counts = np.zeros(deps.rows + 1, np.int64)
    counts[rows + 1] = np.diff(kept.indptr)
    part = CsrPart(make_csr(np.cumsum(counts), kept.indices, deps.rows, deps.n))
    small.add(part)
    return Deps(deps.rows, deps.n, [part])


def process_rows(m: int, process: tuple[int, int] | str | None) -> tuple[int, int]:
    """The rows ``[lo, hi)`` of process ``i`` of ``P`` (``process=(i, P)``): ``⌈m/P⌉`` consecutive rows each, as
    :func:`stablehlo_sparsity.derivatives.distributed.row_block`; ``"jax"``: JAX's process index and count (a script
    started by ``python -m stablehlo_sparsity.launch``); ``None``: every row."""
    if process is None:
        return 0, m
    if process == "jax":  # under stablehlo_sparsity.launch / jax.distributed: this process of all of them
        import jax

        process = (jax.process_index(), jax.process_count())
    try:
        i, count = (int(p) for p in process)
    except (TypeError, ValueError):
        raise InputError(f"process must be a pair (index, count), got {process!r}") from None
    if count < 1 or not 0 <= i < count:
        raise InputError(f"process index must be in [0, count), got {process!r}")
    return process_row_range(m, i, count)


# ---------------------------------------------------------------------------------------------- JAX entry
def _lower(f: Callable, args, argnums, has_aux: bool, kwargs) -> tuple:
    import jax

    if not args:
        raise InputError("jacobian_sparsity_blocks needs at least one argument to differentiate")
    argnums_t = norm_argnums(argnums, len(args))
    traced_kw = {k: v for k, v in kwargs.items() if traceable_keyword(v)}
    static_kw = {k: v for k, v in kwargs.items() if k not in traced_kw}
    fn = functools.partial(f, **static_kw) if static_kw else f
    try:
        traced = jax.jit(fn, keep_unused=True).trace(*args, **traced_kw)
        if custom_rule_primitives(traced.jaxpr, user_only=True):
            raise InputError("f has a custom derivative rule (custom_jvp/custom_vjp): streamed detection analyzes "
                             "the primal program only; use jacobian_sparsity, which analyzes the derivative "
                             "program")
        with innermost_locations(), constants_in_module():
            lowered = traced.lower()
        release_lowering_caches()
    except SparsityError:
        raise
    except Exception as e:
        raise LoweringError(f"could not lower the function with the given arguments: {type(e).__name__}: {e}") from e
    wrt, out_struct = lowered_layout(lowered, args, argnums_t, has_aux)
    return lowered.compiler_ir("stablehlo"), wrt, out_struct.num_leaves


def prepare_blocks(f: Callable, *args, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   options: AnalysisOptions | None = None, **kwargs) -> BlockedDetection:
    """Lower ``f(*args, **kwargs)`` and prepare it for row-block detection (arguments as for
    :func:`stablehlo_sparsity.jacobian_sparsity`; custom derivative rules are refused)."""
    module, wrt, num_out = _lower(f, args, argnums, has_aux, kwargs)
    return BlockedDetection(module, "main", wrt=wrt, num_outputs=num_out, options=options)


def jacobian_sparsity_blocks(f: Callable, *args, rows_per_block: int = DEFAULT_ROWS_PER_BLOCK,
                             process: tuple[int, int] | str | None = None, argnums: int | Sequence[int] = 0,
                             has_aux: bool = False, options: AnalysisOptions | None = None,
                             **kwargs) -> Iterator[tuple[int, sp.csr_array]]:
    """The Jacobian pattern of ``f`` in row blocks: ``(r0, block)`` in row order, ``block`` a bool
    ``csr_array`` of shape ``(rows, n)`` equal to rows ``[r0, r0 + rows)`` of ``jacobian_sparsity(f, *args)``.

    Each block is analyzed on its own (module docstring), so memory is set by ``rows_per_block``, not by the
    pattern's nnz.  ``process=(i, P)``: only process ``i``'s contiguous share of the rows (:func:`process_rows`).
    The program is lowered and its constants found before the first block.

    Raises:
        InputError: no argument to differentiate, an ``argnums`` out of range, ``f`` with a custom derivative rule
            (streamed detection reads the primal program only), a library keyword this function does not take,
            ``options`` that is not an ``AnalysisOptions``, and, when the blocks are iterated,
            ``rows_per_block < 1`` or a bad ``process``; its subclass ``LoweringError`` when JAX cannot trace or
            lower ``f`` with these arguments.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> blocks = ss.jacobian_sparsity_blocks(lambda x: x[1:] * x[:-1], jnp.ones(5), rows_per_block=3)
        >>> [(r0, block.shape, block.nnz) for r0, block in blocks]
        [(0, (3, 5), 6), (3, (1, 5), 2)]
    """
    prepared = prepare_blocks(f, *args, argnums=argnums, has_aux=has_aux, options=options, **kwargs)
    return prepared.blocks(rows_per_block, process)


def module_sparsity_blocks(module_or_text, entry: str = "main", *, wrt=None, num_outputs: int | None = None,
                           rows_per_block: int = DEFAULT_ROWS_PER_BLOCK, process: tuple[int, int] | str | None = None,
                           options: AnalysisOptions | None = None) -> Iterator[tuple[int, sp.csr_array]]:
    """:func:`jacobian_sparsity_blocks` for a StableHLO module (arguments as
    :func:`~stablehlo_sparsity.analyze_module`).

    Raises:
        InputError: the module cannot be read or parsed, it has no function ``entry``, a ``wrt`` index is out of
            range, ``num_outputs`` is negative, ``options`` is not an ``AnalysisOptions``, and, when the blocks
            are iterated, ``rows_per_block < 1`` or a bad ``process``.
        UnsupportedOpError: the module holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the module holds an element type the analysis cannot represent (e.g. f8, i4).
        DynamicShapeError: a tensor of the entry function has a dynamic (``?``) dimension.
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> text = '''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.reverse %x, dims = [0] : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }'''
        >>> blocks = ss.module_sparsity_blocks(text, rows_per_block=2)
        >>> [(r0, block.toarray().astype(int).tolist()) for r0, block in blocks]
        [(0, [[0, 0, 1], [0, 1, 0]]), (2, [[1, 0, 0]])]
    """
    prepared = BlockedDetection(module_or_text, entry, wrt=wrt, num_outputs=num_outputs, options=options)
    return prepared.blocks(rows_per_block, process)


# ---------------------------------------------------------------------------------------------- shards
MANIFEST = "shape.json"


SHARD_FORMATS = ("npz", "mtx")


def write_blocks(directory, blocks, shape: tuple[int, int] | None = None, format: str = "npz") -> list[Path]:
    """Write each ``(r0, block)`` as ``rows-<r0>-<r1>.npz`` (``scipy.sparse.save_npz``) or, with
    ``format="mtx"``, ``rows-<r0>-<r1>.mtx`` (MatrixMarket coordinate pattern, rows counted from the block's
    first row) in ``directory``; with ``shape``, also ``shape.json``.  Returns the files written, in order."""
    if format not in SHARD_FORMATS:
        raise InputError(f"format must be one of {', '.join(SHARD_FORMATS)}, got {format!r}")
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    written = []
    for r0, block in blocks:
        r1 = r0 + block.shape[0]
        path = root / f"rows-{r0:012d}-{r1:012d}.{format}"
        tmp = root / f".partial-{path.name}"
        if format == "npz":
            with open(tmp, "wb") as fh:
                sp.save_npz(fh, sp.csr_array(block), compressed=False)
        else:
            import scipy.io

            with open(tmp, "wb") as fh:
                scipy.io.mmwrite(fh, sp.coo_array(block), field="pattern")
        os.replace(tmp, path)  # a reader never sees half a shard
        written.append(path)
    if shape is not None:
        (root / MANIFEST).write_text(json.dumps({"rows": int(shape[0]), "columns": int(shape[1])}))
    return written


def write_pattern_shards(directory, f: Callable, *args, rows_per_block: int = DEFAULT_ROWS_PER_BLOCK,
                         process: tuple[int, int] | str | None = None, format: str = "npz",
                         argnums: int | Sequence[int] = 0, has_aux: bool = False,
                         options: AnalysisOptions | None = None, **kwargs) -> list[Path]:
    """Detect ``f``'s pattern block by block (this process's rows with ``process=(i, P)``) and write the blocks
    to ``directory`` as NPZ (or MatrixMarket, ``format="mtx"``) shards (:func:`write_blocks`);
    :func:`stablehlo_sparsity.derivatives.shard_io.read_pattern_shards` reads them back.

    Raises:
        InputError: an unknown ``format``, no argument to differentiate, an ``argnums`` out of range, ``f`` with a
            custom derivative rule, a library keyword this function does not take, ``options`` that is not an
            ``AnalysisOptions``, ``rows_per_block < 1`` or a bad ``process``; its subclass ``LoweringError`` when
            JAX cannot trace or lower ``f`` with these arguments.
        UnsupportedOpError: the program holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the program holds an element type the analysis cannot represent (e.g. f8, i4).
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.
        OSError: the directory or a shard cannot be written.

    Examples:
        >>> import tempfile
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> folder = tempfile.mkdtemp()
        >>> files = ss.write_pattern_shards(folder, lambda x: x[1:] * x[:-1], jnp.ones(5), rows_per_block=2)
        >>> [f.name for f in files]
        ['rows-000000000000-000000000002.npz', 'rows-000000000002-000000000004.npz']
    """
    if format not in SHARD_FORMATS:
        raise InputError(f"format must be one of {', '.join(SHARD_FORMATS)}, got {format!r}")
    prepared = prepare_blocks(f, *args, argnums=argnums, has_aux=has_aux, options=options, **kwargs)
    return write_blocks(directory, prepared.blocks(rows_per_block, process), prepared.shape, format)


def assemble_blocks(blocks, n: int | None = None) -> SparsityPattern:
    """One :class:`SparsityPattern` from consecutive ``(r0, block)`` (for checks and small problems: it holds
    the whole pattern).

    Raises:
        InputError: the blocks are not consecutive (a gap or an overlap).

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> f = lambda x: x[1:] * x[:-1]
        >>> blocks = ss.jacobian_sparsity_blocks(f, jnp.ones(5), rows_per_block=3)
        >>> ss.assemble_blocks(blocks) == ss.jacobian_sparsity(f, jnp.ones(5))
        True
    """
    mats, expect = [], 0
    for r0, block in blocks:
        if r0 != expect:
            raise InputError(f"blocks are not consecutive: expected row {expect}, got {r0}")
        mats.append(sp.csr_array(block, dtype=bool))
        expect += block.shape[0]
    if not mats:
        return SparsityPattern(sp.csr_array((0, n or 0), dtype=bool))
    return SparsityPattern(sp.csr_array(sp.vstack(mats, format="csr"), dtype=bool))

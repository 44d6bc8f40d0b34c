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
import re
from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np
import scipy.sparse as sp

from stablehlo_sparsity.ir.helpers import is_public, sym_name

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

ATTR_DEPS = "sparsity.deps"
ATTR_OFFSET = "sparsity.offset"
ATTR_PATTERN = "sparsity.pattern"
ATTR_KEEP = "sparsity.keep"
#: The attributes this pass owns (re-annotating replaces exactly these; ``sparsity.const`` belongs to the
#: constant folder and is left alone).
OWN_ATTRS = (ATTR_DEPS, ATTR_OFFSET, ATTR_PATTERN, ATTR_KEEP)


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
    max_elements: int = option(64, "values with more elements get a summary")
    max_nnz: int = option(1024, "values with more dependencies get a summary")

    def run(self, module_op) -> None:
        annotate(module_op, self)


#: The options of :func:`annotate` are the pass's fields.
AnnotateOptions = AnnotatePass


# --------------------------------------------------------------------------- the attribute format
def _runs(cols: np.ndarray) -> str:
    """``[0, 1, 2, 3, 7, 9, 10]`` → ``"0..3,7,9,10"`` (runs of three or more become ``a..b``)."""
    if len(cols) == 0:
        return ""
    breaks = np.flatnonzero(np.diff(cols) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(cols)]])
    parts = []
    for s, e in zip(starts.tolist(), ends.tolist()):  # one iteration per run, at most max-nnz in total
        a, b = int(cols[s]), int(cols[e - 1])
        if e - s >= 3:
            parts.append(f"{a}..{b}")
        else:
            parts.extend(str(int(c)) for c in cols[s:e])
    return ",".join(parts)


def format_sets(m: sp.csr_array) -> str:
    """The exact form of a (rows × n) boolean CSR matrix: ``"{0,1} {1..3} {}*2"``.

    Only called for values below the ``max-elements``/``max-nnz`` thresholds, so the loop over rows is
    bounded by a small constant.

    Examples:
        >>> import numpy as np, scipy.sparse as sp
        >>> from stablehlo_sparsity.passes import format_sets
        >>> format_sets(sp.csr_array(np.array([[1, 1, 0, 0], [0, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]], bool)))
        '{0,1} {1..3} {}*2'
    """
    indptr, indices = m.indptr, m.indices
    sets = ["{" + _runs(indices[indptr[i]:indptr[i + 1]]) + "}" for i in range(m.shape[0])]
    out: list[str] = []
    i = 0
    while i < len(sets):
        j = i
        while j + 1 < len(sets) and sets[j + 1] == sets[i]:
            j += 1
        out.append(sets[i] if j == i else f"{sets[i]}*{j - i + 1}")
        i = j + 1
    return " ".join(out)


_SET = re.compile(r"\{([0-9.,]*)\}(?:\*(\d+))?")


def parse_sets(text: str, n: int | None = None) -> sp.csr_array:
    """Inverse of :func:`format_sets`: the (rows × n) boolean CSR matrix of an exact ``sparsity.deps``
    string.  ``n`` defaults to one more than the largest column mentioned.  Raises ``ValueError`` on a
    summary or malformed text.

    Raises:
        ValueError: a summary string, or text that is not a list of sets.

    Examples:
        >>> from stablehlo_sparsity.passes import parse_sets
        >>> parse_sets("{0,1} {1..3} {}*2").toarray().astype(int).tolist()
        [[1, 1, 0, 0], [0, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]]
    """
    text = text.strip()
    rows: list[list[int]] = []
    for tok in text.split():
        m = _SET.fullmatch(tok)
        if m is None:
            raise ValueError(f"not an exact sparsity.deps set: {tok!r} (a summary has no sets)")
        cols: list[int] = []
        for item in filter(None, m.group(1).split(",")):
            if ".." in item:
                a, b = item.split("..")
                cols.extend(range(int(a), int(b) + 1))
            else:
                cols.append(int(item))
        rows.extend([cols] * int(m.group(2) or 1))
    width = n if n is not None else (max((max(r) for r in rows if r), default=-1) + 1)
    indptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    indices = np.array([c for r in rows for c in r], dtype=np.int64)
    return sp.csr_array((np.ones(len(indices), bool), indices, indptr), shape=(len(rows), width))


def _distinct_rows(m: sp.csr_array) -> int:
    """Number of distinct rows, vectorized: each row is hashed to 64 bits (the sum of a 64-bit mix of its
    columns, plus its length times an odd constant), and the hashes are counted with one 1-D sort.  Exact
    unless two different rows collide in 64 bits (probability about k²/2⁶⁵ for k rows)."""
    k = m.shape[0]
    if k == 0:
        return 0
    lengths = np.diff(m.indptr).astype(np.uint64)
    keys = np.zeros(k, np.uint64)
    with np.errstate(over="ignore"):
        if m.nnz:
            x = (m.indices.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)) * np.uint64(0xBF58476D1CE4E5B9)
            x ^= x >> np.uint64(31)
            x *= np.uint64(0x94D049BB133111EB)
            x ^= x >> np.uint64(29)
            nonempty = lengths > 0
            keys[nonempty] = np.add.reduceat(x, m.indptr[:-1][nonempty].astype(np.int64))
        keys += lengths * np.uint64(0x9FB21C651E98DF25)
    keys.sort()
    return int(1 + np.count_nonzero(keys[1:] != keys[:-1]))


def summarize(m: sp.csr_array) -> dict:
    """Summary numbers of a pattern: elements, nnz, min/max dependencies per element, distinct rows.

    Examples:
        >>> from stablehlo_sparsity.passes import parse_sets, summarize
        >>> summarize(parse_sets("{0,1} {1..3} {}*2"))
        {'elements': 4, 'nnz': 5, 'min': 0, 'max': 3, 'distinct': 3}
    """
    counts = np.diff(m.indptr)
    return {
        "elements": int(m.shape[0]),
        "nnz": int(m.nnz),
        "min": int(counts.min()) if len(counts) else 0,
        "max": int(counts.max()) if len(counts) else 0,
        "distinct": _distinct_rows(m),
    }


def _span(a: int, b: int) -> str:
    return str(a) if a == b else f"{a}..{b}"


def format_summary(m: sp.csr_array, shape: tuple[int, ...] | None = None) -> str:
    """``"elements=4096 nnz=12288 deps=0..3 distinct=17"`` (``shape=MxN`` instead of ``elements`` for a
    whole pattern)."""
    s = summarize(m)
    head = f"shape={'x'.join(str(d) for d in shape)}" if shape is not None else f"elements={s['elements']}"
    return f"{head} nnz={s['nnz']} deps={_span(s['min'], s['max'])} distinct={s['distinct']}"


def format_deps(m: sp.csr_array, max_elements: int, max_nnz: int) -> str:
    """Exact sets when small enough, else the summary."""
    if m.shape[0] > max_elements or m.nnz > max_nnz:
        return format_summary(m)
    return format_sets(m)


# --------------------------------------------------------------------------- entry functions
def _functions(module) -> list:
    return [op for op in module.body.operations if op.operation.name == "func.func"]


_name = sym_name
_is_public = is_public


def resolve_entry(module, entry: str | None = None) -> str:
    """The entry function's name: ``entry`` if given (it must exist), else ``main``, else the only public
    function.  Raises :class:`InputError` (at the module's location) otherwise.

    Raises:
        InputError: ``entry`` is not a function of the module, the module has no function, or it has no ``main``
            and not exactly one public function.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import resolve_entry
        >>> module = ss.parse_module("func.func @f(%x: tensor<f32>) -> tensor<f32> { return %x : tensor<f32> }")
        >>> resolve_entry(module)                      # no @main: the only public function
        'f'
        >>> resolve_entry(module, "main")
        Traceback (most recent call last):
        ...
        stablehlo_sparsity.errors.InputError: ...no entry function '@main' in the module (functions: @f)
    """
    from stablehlo_sparsity.errors import InputError, format_location

    module = getattr(module, "opview", module)
    funcs = _functions(module)
    names = [_name(f) for f in funcs]
    listing = ", ".join("@" + n for n in names) or "none"
    loc = format_location(module.operation.location)
    if entry is not None:
        if entry not in names:
            raise InputError(f"no entry function '@{entry}' in the module (functions: {listing})", loc)
        return entry
    if "main" in names:
        return "main"
    public = [_name(f) for f in funcs if _is_public(f)]
    if len(public) == 1:
        return public[0]
    if not funcs:
        raise InputError("the module has no func.func to analyze", loc)
    raise InputError(f"cannot choose an entry function among {len(public)} public functions ({listing}); "
                     "name one with entry=NAME (--entry=NAME)", loc)


# --------------------------------------------------------------------------- the pass
class _Record:
    """Union over visits of one op's result lattices."""

    __slots__ = ("deps",)

    def __init__(self, results):
        self.deps = [r.deps for r in results]

    def add(self, results):
        from stablehlo_sparsity.lattice import Deps

        self.deps = [a if a is r.deps else Deps.union(a, r.deps) for a, r in zip(self.deps, results)]


def _set_func_attr_list(fn, attr_name: str, count: int, updates: dict[int, dict]) -> bool:
    """Merge ``updates[i]`` (name → Attribute) into entry ``i`` of ``arg_attrs``/``res_attrs``.  Returns
    True if the list existed with only empty dictionaries (``sparsity-strip`` must then keep it)."""
    from jaxlib.mlir import ir

    old = list(ir.ArrayAttr(fn.attributes[attr_name])) if attr_name in fn.attributes else []
    was_empty = attr_name in fn.attributes and all(len(ir.DictAttr(d)) == 0 for d in old)
    dicts = []
    for i in range(count):
        entries = {}
        if i < len(old):
            d = ir.DictAttr(old[i])
            entries = {d[j].name: d[j].attr for j in range(len(d))}
        entries.update(updates.get(i, {}))
        dicts.append(ir.DictAttr.get(entries))
    if any(len(d) for d in dicts) or attr_name in fn.attributes:
        fn.attributes[attr_name] = ir.ArrayAttr.get(dicts)
    return was_empty and any(len(d) for d in dicts)


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
    from jaxlib.mlir import ir

    from stablehlo_sparsity.analysis.api import analyze_module
    from stablehlo_sparsity.analysis.interpreter import AnalysisOptions
    from stablehlo_sparsity.ir.keywords import parse_indices

    from .strip import strip

    opts = options or AnnotatePass()
    if kwargs:
        opts = dataclasses.replace(opts, **kwargs)
    mod = getattr(module, "opview", module)
    if not hasattr(mod, "body"):
        raise TypeError(f"annotate needs a builtin.module, got {mod.operation.name}")
    entry = resolve_entry(mod, opts.entry)
    records: dict = {}

    def observer(op, results):
        key = op.operation
        rec = records.get(key)
        if rec is None:
            records[key] = _Record(results)
        else:
            rec.add(results)

    analysis = analyze_module(mod, entry=entry, wrt=opts.wrt,
                              options=AnalysisOptions(on_unknown=opts.on_unknown), observer=observer)
    with mod.context:
        strip(mod, names=OWN_ATTRS)
        fmt = lambda d: ir.StringAttr.get(format_deps(d.to_csr(), opts.max_elements, opts.max_nnz))  # noqa: E731
        for op, rec in records.items():
            if not rec.deps:
                continue
            if len(rec.deps) == 1:
                op.attributes[ATTR_DEPS] = fmt(rec.deps[0])
            else:
                op.attributes[ATTR_DEPS] = ir.ArrayAttr.get([fmt(d) for d in rec.deps])

        fn = next(f for f in _functions(mod) if _name(f) == entry)
        i64 = ir.IntegerType.get_signless(64)
        n_args = len(fn.regions[0].blocks[0].arguments)
        wrt = list(range(n_args)) if opts.wrt is None else list(
            parse_indices(opts.wrt, n_args, name="wrt", owner=f"@{entry}", allow_text=True))
        arg_updates = {i: {ATTR_OFFSET: ir.IntegerAttr.get(i64, off)} for i, off in zip(wrt, analysis.input_offsets)}
        keep = []
        if _set_func_attr_list(fn, "arg_attrs", n_args, arg_updates):
            keep.append("arg_attrs")
        res_updates = {
            i: {ATTR_OFFSET: ir.IntegerAttr.get(i64, off), ATTR_DEPS: fmt(r.deps)}
            for i, (off, r) in enumerate(zip(analysis.output_offsets, analysis.results))
        }
        n_res = len(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results)
        if _set_func_attr_list(fn, "res_attrs", n_res, res_updates):
            keep.append("res_attrs")
        if keep:  # lists of empty dictionaries that were there before (JAX emits some): strip keeps them
            fn.attributes[ATTR_KEEP] = ir.ArrayAttr.get([ir.StringAttr.get(k) for k in keep])
        p = analysis.pattern
        fn.attributes[ATTR_PATTERN] = ir.StringAttr.get(format_summary(p.to_scipy(), p.shape))
    return analysis

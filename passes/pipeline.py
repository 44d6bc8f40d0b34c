"""Pass registry and textual pipelines mixing our passes with MLIR's.

jaxlib's ``PassManager.parse`` only knows passes registered in C++, so a textual pipeline such as

    builtin.module(sparsity-fold-constants{materialize=true},canonicalize,func.func(cse),sparsity-annotate)

is split at its top-level commas here: our pass names become Python passes (``pm.add(callable, ...)``),
everything else — builtin passes with their ``{options}``, nested ``func.func(...)`` pipelines — goes to
``pm.add("text")`` unchanged, in order, in one ``PassManager``.  Our passes work on the whole module, so
they cannot be nested inside ``func.func(...)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Union

from stablehlo_sparsity.errors import InputError
from stablehlo_sparsity.ir.parsing import (Diagnostic, DiagnosticError, diagnostic_error,  # noqa: F401
                                                 make_context, parse_source)

from .annotate import AnnotatePass
from .base import SparsityPass, mlir_message  # noqa: F401
from .fold_constants import FoldConstantsPass
from .jacobian import HessianPass, JacobianPass
from .strip import StripPass

__all__ = [
    "PASSES",
    "MlirPass",
    "SparsityStep",
    "PipelineElement",
    "DiagnosticError",
    "make_context",
    "parse_source",
    "split_pipeline",
    "build_pass_manager",
    "run_pipeline",
]


# --------------------------------------------------------------------------- our passes
#: The ``sparsity-*`` passes by their pipeline names: each a :class:`~.base.SparsityPass` whose fields are its
#: options (one declaration per option).
PASSES: dict[str, type[SparsityPass]] = {
    cls.argument: cls for cls in (FoldConstantsPass, AnnotatePass, StripPass, JacobianPass, HessianPass)
}


# --------------------------------------------------------------------------- pipeline elements
@dataclass(frozen=True)
class MlirPass:
    """A builtin MLIR pass (or a nested pipeline such as ``func.func(cse)``), as text for ``pm.add``, with its
    ``{options}``; ``flag`` is the command-line flag it came from (``--canonicalize``), or None."""

    text: str
    flag: str | None = None


@dataclass(frozen=True)
class SparsityStep:
    """One of our passes: ``info`` is its :class:`~.base.SparsityPass` class (from :data:`PASSES`), ``options``
    its parsed options (``info.parse_options``)."""

    info: type[SparsityPass]
    options: dict[str, Any]


#: One element of a pipeline, as :func:`split_pipeline` returns and :func:`build_pass_manager` takes.
PipelineElement = Union[MlirPass, SparsityStep]


# --------------------------------------------------------------------------- pipelines
def _split_top(text: str) -> list[str]:
    """Split at commas outside parentheses, braces and quotes."""
    cur: list[str]
    parts, depth, cur, quote = [], 0, [], False
    for ch in text:
        if ch == '"':
            quote = not quote
        elif not quote and ch in "({":
            depth += 1
        elif not quote and ch in ")}":
            depth -= 1
            if depth < 0:
                raise InputError(f"unbalanced ')' or '}}' in pass pipeline '{text}'")
        if ch == "," and depth == 0 and not quote:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if depth != 0 or quote:
        raise InputError(f"unbalanced brackets in pass pipeline '{text}'")
    tail = "".join(cur).strip()
    if tail or parts:
        parts.append(tail)
    if any(not p for p in parts):
        raise InputError(f"empty element in pass pipeline '{text}'")
    return parts


_ELEMENT = re.compile(r"^([A-Za-z_][\w.\-]*)\s*(?:\{(.*)\}|\((.*)\))?\s*$", re.S)


def split_pipeline(text: str) -> list[PipelineElement]:
    """Elements of a textual pipeline, in order: a :class:`SparsityStep` for each of our passes, a
    :class:`MlirPass` for anything else.

    Accepts ``builtin.module(...)`` or a bare comma-separated list.

    Raises:
        InputError: unbalanced brackets, an empty or unparsable element, options of our passes not in braces, one
            of our passes nested in another pipeline, or an unknown option of our passes.

    Examples:
        >>> from stablehlo_sparsity.passes import split_pipeline
        >>> split_pipeline("builtin.module(canonicalize,sparsity-annotate{max-elements=8})")[0]
        MlirPass(text='canonicalize', flag=None)
        >>> split_pipeline("builtin.module(canonicalize,sparsity-annotate{max-elements=8})")[1].options
        {'max-elements': 8}
    """
    text = text.strip()
    if not text:
        return []
    m = _ELEMENT.match(text)
    if m and m.group(1) == "builtin.module" and m.group(3) is not None:
        text = m.group(3).strip()
        if not text:
            return []
    out: list[PipelineElement] = []
    for el in _split_top(text):
        m = _ELEMENT.match(el)
        if m is None:
            raise InputError(f"cannot parse pass pipeline element '{el}'")
        name, opts, nested = m.groups()
        if name in PASSES:
            if nested is not None:
                raise InputError(f"pass '{name}' takes options in braces: {name}{{key=value ...}}")
            out.append(SparsityStep(PASSES[name], PASSES[name].parse_options(opts or "")))
        else:
            if nested is not None:
                for inner in _split_top(nested) if nested.strip() else []:
                    inner_name = _ELEMENT.match(inner)
                    if inner_name and inner_name.group(1) in PASSES:
                        raise InputError(f"pass '{inner_name.group(1)}' works on the whole module and cannot "
                                         f"be nested in '{name}(...)'")
            out.append(MlirPass(el))
    return out


def build_pass_manager(elements: list[PipelineElement], context=None):
    """A ``PassManager`` on ``builtin.module`` running ``elements`` (from :func:`split_pipeline`) in order.

    Raises:
        InputError: an unknown pass or a malformed pipeline element.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import build_pass_manager, split_pipeline
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.reverse %x, dims = [0] : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }''')
        >>> pm = build_pass_manager(split_pipeline("canonicalize,sparsity-annotate"), module.context)
        >>> pm.run(module.operation)
        >>> "sparsity.deps" in str(module)
        True
    """
    from jaxlib.mlir import ir, passmanager

    ctx = context or ir.Context.current
    pm = passmanager.PassManager("builtin.module", context=ctx)
    for el in elements:
        if isinstance(el, SparsityStep):
            el.info.from_options(el.options).add_to(pm)
        else:
            try:
                pm.add(el.text)
            except ValueError as e:
                msg = str(e).strip().splitlines()
                detail = msg[-1] if msg else ""
                raise InputError(f"unknown pass or bad pipeline element '{el.text}'"
                                 + (f": {detail}" if detail else "")) from None
    return pm


def run_pipeline(module, pipeline: str | list[PipelineElement]) -> None:
    """Run a textual pipeline (or :func:`split_pipeline` elements) on ``module`` in place.

    MLIR errors (including our passes' failures) raise :class:`DiagnosticError`; other Python exceptions
    raised inside a pass propagate unchanged.

    Raises:
        DiagnosticError: MLIR reports errors, including a failure of one of our passes (an ``InputError``).
        InputError: the pipeline text does not parse, or names an unknown pass.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import run_pipeline
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.reverse %x, dims = [0] : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }''')
        >>> run_pipeline(module, "builtin.module(canonicalize,sparsity-annotate{max-elements=8})")
        >>> str(module.body.operations[0].attributes["sparsity.pattern"])
        '"shape=3x3 nnz=3 deps=1 distinct=3"'
        >>> run_pipeline(module, "builtin.module(sparsity-annotate{entry=nope})")
        Traceback (most recent call last):
        ...
        stablehlo_sparsity.ir.parsing.DiagnosticError: ...no entry function '@nope' in the module...
    """
    from jaxlib.mlir import ir

    elements = split_pipeline(pipeline) if isinstance(pipeline, str) else pipeline
    op = module.operation
    with op.context:
        pm = build_pass_manager(elements, op.context)
        try:
            pm.run(op)
        except ir.MLIRError as e:
            raise diagnostic_error(e, "pass pipeline failed") from None

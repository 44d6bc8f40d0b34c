"""The public analysis of a StableHLO module, :func:`analyze_module`: its global pattern (the analysis,
:func:`stablehlo_sparsity.analysis.api.analyze_module_global`), or with ``local_point=`` its pattern at one point
(:func:`stablehlo_sparsity.modules.local.module_local_analysis`: the module replayed in JAX by the importer, which
loads on first use)."""

from __future__ import annotations

from typing import Callable, Sequence

from ..analysis.api import analyze_module_global
from ..analysis.options import AnalysisOptions
from ..analysis.program import Analysis, resolve_options
from ..errors import InputError
from ..ir.keywords import refuse_unknown_keywords
from ..ir.parsing import as_module

__all__ = ["analyze_module"]


def analyze_module(module_or_text, entry: str = "main", *, wrt: Sequence[int] | str | None = None,
                   num_outputs: int | None = None, on_unknown: str = "error",
                   options: AnalysisOptions | None = None, observer: Callable | None = None,
                   local_point: Sequence | None = None, **unknown) -> Analysis:
    """Analyze a StableHLO module (an ``ir.Module``, its text or bytes, a path to a file holding either, or a
    :class:`jax.export.Exported` — see :func:`stablehlo_sparsity.ir.parsing.as_module`) with no JAX function.

    wrt: indices of the entry function's arguments that are inputs (columns).  Default ``None``: argument 0
    only, the rule of ``jax.jacfwd`` (``argnums=0``), :func:`stablehlo_sparsity.jacobian_sparsity` and the driver;
    ``"all"``: every argument.  Arguments not in ``wrt`` are unknown values with no columns.
    num_outputs: analyze only the first results (default all).
    local_point: one array per entry argument — the *local* pattern at that point, valid for those values only
    (see :func:`stablehlo_sparsity.modules.local.module_local_analysis` and docs/explanation/guarantees.md "Local
    patterns").

    Raises:
        InputError: the module cannot be read or parsed, it has no function ``entry`` (or only a declaration), a
            ``wrt`` index is out of range, ``num_outputs`` is negative, or a keyword is unknown.
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
        >>> print(ss.analyze_module(text).pattern.picture())
        ⋅⋅●
        ⋅●⋅
        ●⋅⋅
    """
    refuse_unknown_keywords("analyze_module", unknown)
    if local_point is None:
        return analyze_module_global(module_or_text, entry, wrt=wrt, num_outputs=num_outputs, on_unknown=on_unknown,
                                     options=options, observer=observer)
    module = as_module(module_or_text)
    if num_outputs is not None and int(num_outputs) < 0:
        raise InputError(f"num_outputs must be non-negative, got {num_outputs}")
    opts = resolve_options(options, on_unknown)
    from .local import module_local_analysis  # (the importer: its op tables load on first use)

    return module_local_analysis(module, local_point, entry=entry, wrt=wrt, num_outputs=num_outputs, options=opts,
                                 observer=observer)

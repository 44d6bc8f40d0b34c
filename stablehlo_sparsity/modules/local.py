"""Local patterns of StableHLO modules: the module replayed in JAX (the importer) at a point, met with its
global pattern — what ``analyze_module(..., local_point=point)`` returns (:mod:`.analyze`, the public
``analyze_module``, imports it on first use)."""

from __future__ import annotations

import warnings
from typing import Callable, Sequence

import numpy as np

from ..analysis.local import meet_with_global, point_pattern
from ..analysis.options import AnalysisOptions
from ..ir.parsing import as_module
from ..analysis.program import analyze_entry, resolve_options, resolve_wrt
from ..errors import InputError, SparsityWarning
from .importer import ImportedFunction

__all__ = ["module_local_analysis"]


def module_local_analysis(module_or_text, point: Sequence, *, entry: str = "main", wrt=None,
                          num_outputs: int | None = None, options: AnalysisOptions | None = None,
                          observer: Callable | None = None):
    """The local pattern of a StableHLO module's entry at ``point`` (one array per entry argument), met with
    the module's global pattern (``analyze_module(..., wrt=wrt)``); what ``analyze_module(...,
    local_point=point)`` returns.  The module's derivative is that of its import into JAX (each op's
    ``jax.lax`` twin), as for ``check_jacobian_module``."""
    module = as_module(module_or_text)
    opts = resolve_options(options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SparsityWarning)
        glob = analyze_entry(module, entry, wrt, num_outputs, opts)
    fn = ImportedFunction(module, entry)
    point = list(point)
    if len(point) != len(fn.arg_types):
        raise InputError(f"local_point has {len(point)} value(s); @{entry} takes {len(fn.arg_types)} arguments")
    values = []
    for i, (p, t) in enumerate(zip(point, fn.arg_types)):
        arr = np.asarray(p)
        if arr.shape != tuple(t.shape):
            raise InputError(f"local_point[{i}] has shape {arr.shape}; @{entry} declares {t.shape}")
        values.append(arr.astype(t.dtype, copy=False))
    wrt_list = resolve_wrt(wrt, len(fn.arg_types))
    if len(set(wrt_list)) != len(wrt_list):
        raise InputError(f"wrt {wrt!r} repeats an argument, which a local pattern does not support")
    g: Callable
    if num_outputs is None:
        g = fn
    else:
        k = int(num_outputs)

        def g(*a):
            out = fn(*a)
            return tuple(out if isinstance(out, tuple) else (out,))[:k]
    raw, analysis = point_pattern(g, tuple(values), {}, tuple(wrt_list), False, "jvp", opts, observer)
    return meet_with_global(glob, raw, analysis)

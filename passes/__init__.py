"""MLIR passes (Python-defined, run by jaxlib's PassManager), installed as ``stablehlo_sparsity.passes``.

Passes (their ``--pass-pipeline`` names):

* ``sparsity-fold-constants{materialize=false max-elements=10000000}`` — constant folding
  (:mod:`stablehlo_sparsity.passes.fold_constants`);
* ``sparsity-annotate{entry=main wrt=0,2 on-unknown=error max-elements=64 max-nnz=1024}`` — attach the
  lattice as ``sparsity.*`` attributes (:mod:`.annotate`);
* ``sparsity-strip`` — remove them again (:mod:`.strip`);
* ``sparsity-jacobian{entry=main wrt=0 mode=auto on-unknown=error}`` — add ``@<entry>_jacobian``, the compressed
  Jacobian's nonzeros in CSR order, its pattern recorded as ``sparsity.derivative`` (:mod:`.jacobian`);
* ``sparsity-hessian{entry=main wrt=0 on-unknown=error}`` — add ``@<entry>_hessian`` (the full symmetric
  Hessian of a scalar entry).

Use them from Python directly (``annotate(module)``, ``strip(module)``), or in a ``PassManager`` mixed with
MLIR's own passes::

    from stablehlo_sparsity.passes import run_pipeline
    run_pipeline(module, "builtin.module(canonicalize,func.func(cse),sparsity-annotate{max-elements=8})")

or add one pass — a small dataclass whose fields are its options — to your own ``PassManager``::

    AnnotatePass(max_elements=8).add_to(pm)          # or PASSES["sparsity-annotate"].from_options("max-elements=8")

The folder, beside the passes above: :mod:`.base` (a pass is a small frozen dataclass whose fields are its
options) and :mod:`.pipeline` (the pass registry and textual pipelines mixing these passes with MLIR's).

Rank 5 in ``tests/test_layout.py``: may import ``modules`` and everything below it; sits beside ``interop`` (never
imported).
"""

from .base import SparsityPass  # noqa: F401
from .jacobian import HessianPass, JacobianPass, inject_hessian, inject_jacobian, read_pattern  # noqa: F401
from .annotate import AnnotateOptions, AnnotatePass, annotate, format_sets, parse_sets, resolve_entry, summarize  # noqa: F401
from .fold_constants import FoldConstantsPass  # noqa: F401
from .strip import StripPass  # noqa: F401
from .pipeline import (  # noqa: F401
    PASSES,
    DiagnosticError,
    build_pass_manager,
    make_context,
    parse_source,
    run_pipeline,
    split_pipeline,
)
from .strip import strip  # noqa: F401

__all__ = [
    "SparsityPass",
    "AnnotatePass",
    "FoldConstantsPass",
    "StripPass",
    "JacobianPass",
    "HessianPass",
    "AnnotateOptions",
    "annotate",
    "strip",
    "format_sets",
    "parse_sets",
    "summarize",
    "resolve_entry",
    "PASSES",
    "DiagnosticError",
    "build_pass_manager",
    "make_context",
    "parse_source",
    "run_pipeline",
    "split_pipeline",
    "fold_constants",
]

from .fold_constants import fold_constants  # noqa: E402,F401

"""stablehlo_sparsity: global Jacobian/Hessian sparsity patterns at the StableHLO level.

    >>> import jax.numpy as jnp
    >>> from stablehlo_sparsity import jacobian_sparsity
    >>> jacobian_sparsity(lambda x: x[1:] - x[:-1], jnp.ones(4)).shape
    (3, 4)
"""

import os as _os
import sys as _sys

# The console scripts silence jaxlib's C++ INFO lines (PjRt device counts); the level is read when jaxlib's
# extension loads, which importing this package does, so it is set here, for those two commands only.
if _os.path.basename(_sys.argv[0] if _sys.argv else "") in ("stablehlo-sparsity", "stablehlo-sparsity-opt"):
    _os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

# One clear error for a jax / jaxlib pair outside the supported range (read from the installed metadata, before
# jax is imported: a mismatched pair can fail inside jax's own import).
from ._compat import JaxVersionError, check_jax_versions  # noqa: F401,E402

from .errors import (  # noqa: F401,E402
    DynamicShapeError,
    InputError,
    PatternTooLargeError,
    SparsityError,
    SparsityWarning,
    UnsupportedOpError,
    UnsupportedTypeError,
)
from ._version import __version__  # noqa: F401,E402
from .analysis.interpreter import AnalysisOptions  # noqa: F401,E402
from .lattice import Deps  # noqa: F401,E402
from .lattice.pattern import SparsityPattern  # noqa: F401,E402
from .analysis.api import Analysis, jacobian_sparsity, lower_and_analyze, parse_module  # noqa: F401,E402
from .coloring import (Bicoloring, Coloring, DecompressionPlan, check_coloring, color_acyclic,  # noqa: F401,E402
                       color_bidirectional, color_columns, color_rows, color_star, decompress, seed_matrix)
from .derivatives.jacobian import (Float64Warning, SparseJacobian, jacobian_coloring,  # noqa: F401,E402
                                   sparse_jacobian, value_and_sparse_jacobian)
from .derivatives.hessian import (SparseHessian, hessian_coloring, hessian_sparsity,  # noqa: F401,E402
                                  sparse_hessian, value_and_sparse_hessian)
from .derivatives.saved import ForwardOnlyWarning, load  # noqa: F401,E402
from .derivatives.checks import CheckReport, DerivativeMismatchError, check_hessian, check_jacobian  # noqa: F401,E402
from .modules.module_derivatives import (ModuleSparseHessian, ModuleSparseJacobian,  # noqa: F401,E402
                                         check_hessian_module, check_jacobian_module, sparse_hessian_module,
                                         sparse_jacobian_module)
from .modules.injected import CompiledFunction, InjectedDerivative, compile_module, read_injected  # noqa: F401,E402
from .modules.analyze import analyze_module  # noqa: F401,E402
from ._legacy_paths import install as _install_legacy_paths  # noqa: E402

# Pickles made before the package took its folders name the old module paths: they keep loading.
_install_legacy_paths()

#: Detection in row blocks (:mod:`.analysis.streaming`), loaded on first use like the importer.
_STREAMING = ("jacobian_sparsity_blocks", "module_sparsity_blocks", "write_pattern_shards", "assemble_blocks")


def __getattr__(name):
    # The StableHLO importer loads on first use (its op tables take a noticeable part of the import time,
    # and users of JAX functions never need it).
    if name in ("ImportedFunction", "import_module"):
        from .modules import importer

        return getattr(importer, name)
    if name in _STREAMING:
        from .analysis import streaming

        return getattr(streaming, name)
    if name == "read_pattern_shards":  # shards read back, checked (:mod:`.derivatives.shard_io`)
        from .derivatives import shard_io

        return shard_io.read_pattern_shards
    if name in ("BlockedJacobian", "blocked_jacobian"):  # evaluation from row blocks (:mod:`.derivatives.blocked`)
        from .derivatives import blocked

        return getattr(blocked, name)
    raise AttributeError(f"module 'stablehlo_sparsity' has no attribute {name!r}")


#: Every public name, the lazy ones included (the API reference documents each: tests/test_docs.py).
__all__ = [
    # preparing and evaluating derivatives
    "sparse_jacobian", "value_and_sparse_jacobian", "SparseJacobian", "jacobian_coloring",
    "sparse_hessian", "value_and_sparse_hessian", "SparseHessian", "hessian_coloring",
    "load", "BlockedJacobian", "blocked_jacobian",
    # detection
    "jacobian_sparsity", "hessian_sparsity", "lower_and_analyze", "analyze_module", "parse_module", "Analysis",
    "AnalysisOptions", "SparsityPattern", "Deps",
    "jacobian_sparsity_blocks", "module_sparsity_blocks", "write_pattern_shards", "assemble_blocks",
    "read_pattern_shards",
    # checking
    "check_jacobian", "check_hessian", "check_jacobian_module", "check_hessian_module", "CheckReport",
    # modules from any producer
    "sparse_jacobian_module", "sparse_hessian_module", "ModuleSparseJacobian", "ModuleSparseHessian",
    "compile_module", "read_injected", "CompiledFunction", "InjectedDerivative", "import_module", "ImportedFunction",
    # coloring
    "Coloring", "Bicoloring", "DecompressionPlan", "color_columns", "color_rows", "color_star", "color_acyclic",
    "color_bidirectional", "check_coloring", "seed_matrix", "decompress",
    # errors and warnings
    "SparsityError", "InputError", "UnsupportedOpError", "UnsupportedTypeError", "DynamicShapeError",
    "PatternTooLargeError", "DerivativeMismatchError", "JaxVersionError", "SparsityWarning", "Float64Warning",
    "ForwardOnlyWarning",
    # versions
    "check_jax_versions", "__version__",
]


def __dir__():
    return sorted(set(globals()) | set(__all__))

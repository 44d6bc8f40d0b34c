"""stablehlo_sparsity: global Jacobian/Hessian sparsity patterns at the StableHLO level.

    >>> import jax.numpy as jnp
    >>> from stablehlo_sparsity import jacobian_sparsity
    >>> jacobian_sparsity(lambda x: x[1:] - x[:-1], jnp.ones(4)).shape
    (3, 4)
"""

from .errors import (  # noqa: F401
    DynamicShapeError,
    InputError,
    PatternTooLargeError,
    SparsityError,
    SparsityWarning,
    UnsupportedOpError,
    UnsupportedTypeError,
)
from .interpreter import AnalysisOptions  # noqa: F401
from .lattice import Deps  # noqa: F401
from .pattern import SparsityPattern  # noqa: F401
from .api import Analysis, analyze_module, jacobian_sparsity, lower_and_analyze, parse_module  # noqa: F401

__version__ = "0.1.0"

"""The analysis's options (one dataclass, below the interpreter and the rules that read it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..lattice.budget import default_max_pattern_nnz

__all__ = ["AnalysisOptions"]


@dataclass
class AnalysisOptions:
    """Knobs of the analysis.

    on_unknown: ``"error"`` (default) raises :class:`UnsupportedOpError` for an op without a rule;
        ``"conservative"`` makes every result element depend on everything its operands depend on (warns).
    max_fold_elements: the constant lattice folds values up to this many elements (default 10 million).
    max_loop_iterations: exact abstract iterations of a ``while`` with a known trip count before falling back
        to the fixed point.
    max_pattern_nnz: refuse (before allocating) intermediate patterns with more nonzeros than this.  Default:
        what fits in three quarters of the memory available when the options are made, at the analysis's
        measured peak cost per nonzero (:func:`.budget.default_max_pattern_nnz`).

    Raises:
        ValueError: ``on_unknown`` other than ``"error"`` or ``"conservative"``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> opts = ss.AnalysisOptions(max_loop_iterations=10, max_pattern_nnz=10_000)
        >>> ss.jacobian_sparsity(jnp.cumsum, jnp.ones(3), options=opts).nnz
        6
    """

    on_unknown: str = "error"
    max_fold_elements: int = 10_000_000
    max_loop_iterations: int = 100_000
    max_pattern_nnz: int = field(default_factory=default_max_pattern_nnz)

    def __post_init__(self):
        if self.on_unknown not in ("error", "conservative"):
            raise ValueError("on_unknown must be 'error' or 'conservative'")

"""Op rules, one op family per module.  Importing this package registers every rule (the registry is in
:mod:`.registry`).

* :mod:`.registry` — rules as data: tables keyed by the full op name, and the contract every rule is written against;
* :mod:`.elementwise` — elementwise ops: the *union* and *drop* moves;
* :mod:`.elementwise_trust` — trust in folded elementwise results: their error models;
* :mod:`.structural` — structural ops (reshape, transpose, slice, concatenate, pad …): rows by index map;
* :mod:`.calls` — ops that run another computation: ``func.call``, composite, map;
* :mod:`.reduction` — reduce: the *group union* move, made precise by reading the body;
* :mod:`.dot_general` — contractions: group unions laid out by position maps;
* :mod:`.convolution` — convolution: an index table of (output position, kernel tap) → input position;
* :mod:`.indexing` — gather, scatter, the dynamic slices (constants are values);
* :mod:`.value_ranges` — range rules: bounds of integer and boolean results;
* :mod:`.control_flow` — while, case, if, optimization_barrier;
* :mod:`.loop_plans` — loop plans: what a ``while`` body does with its counters, read off the IR once;
* :mod:`.windows` — reduce_window and select_and_scatter: the *group union* over windows;
* :mod:`.sorting` — sort and ``chlo.top_k``;
* :mod:`.custom_call` — ``stablehlo.custom_call``: rules as data, keyed by ``call_target_name``;
* :mod:`.sparse_kernels` — the sparse-matrix kernels of ``jax.experimental.sparse`` as custom-call targets;
* :mod:`.linalg` — triangular_solve, cholesky, fft, and the matrix-structure helpers of the LAPACK table;
* :mod:`.normalization` — batch normalization (inference, training, grad);
* :mod:`.random_numbers` — rng, rng_bit_generator;
* :mod:`.chlo` — the CHLO ops JAX emits (special functions, broadcasting binary ops, constants);
* :mod:`.dynamic_shapes` — the dynamic-shape ops;
* :mod:`.distribution` — Shardy sharding markers and the collectives of a single-device program;
* :mod:`.refused` — ops deliberately without a rule, and why.

Rank 2 (``analysis``) in ``tests/test_layout.py``: may import the rest of ``analysis`` (values, the IR toolkit,
``folding``), ``lattice`` and rank 0.  A rule uses the lattice's moves, never a representation of ``Deps``.
"""

from . import registry  # noqa: F401
from . import elementwise, elementwise_trust, structural, calls  # noqa: F401
from . import reduction, dot_general, convolution  # noqa: F401
from . import indexing, value_ranges  # noqa: F401
from . import control_flow, windows, sorting  # noqa: F401
from . import custom_call, linalg  # noqa: F401
from . import normalization, random_numbers, chlo, dynamic_shapes, distribution, refused  # noqa: F401

from .registry import COVERAGE, DEPS_RULES, ERROR_RULES, FOLD_RULES, REFUSED, deps_rule, error_rule, fold_rule  # noqa: F401

"""The derivative layer's contract: what every prepared sparse derivative shares.

* :class:`PreparedDerivative` (:mod:`.base`) — the public base of :class:`~stablehlo_sparsity.SparseJacobian`,
  :class:`~stablehlo_sparsity.SparseHessian` and the module derivatives: checks, compiled core, containers,
  blocks, lowering, export, pickling and ``.save``;
* :mod:`.outputs` — one table from an output name to its container (BCOO, BCSR, SciPy, dense, values, and
  the per-block containers);
* :mod:`.seeds` — seeds and decompression plans;
* :mod:`.modes` — the modes as enums (:class:`JacobianMode`, :class:`HessianMode`) beside the coloring kinds
  (:class:`~stablehlo_sparsity.coloring.kinds.ColoringKind`);
* :mod:`.inputs` — argument checks, the binding of the selected arguments, auxiliary data;
* :mod:`.saving` — pytree registration, the serialized program (forward-only when JAX has no reverse-mode
  derivative of it), ``.npz`` files;
* :mod:`.archive` — the ``.npz`` container: a manifest with the SHA-256 of every member, read strictly;
* :mod:`.validation` — the structural checks of everything read back from a file (CSR arrays, colorings,
  decompression indices, a program's signature and custom calls), shared by every reader;
* :mod:`.evaluation` — how the compressed program evaluates its products and writes the nonzeros: the evaluation
  strategies;
* :mod:`.products` — forward products of a function JAX can only differentiate in reverse mode;
* :mod:`.sharding` — the products spread over several devices;
* :mod:`.compiled_cache` — compiled programs shared, in memory, by prepared derivatives of the same program;
* :mod:`.deferred_imports` — submodules the containers' import loads but a derivative never uses, loaded on first use.

Rank 3 (``derivatives``) in ``tests/test_layout.py``: may import ``coloring``, ``analysis``, rank 1 and rank 0,
never the rest of ``derivatives`` (which builds on it).
"""

from .base import ELIDE_CONSTANT_ELEMENTS, PreparedDerivative  # noqa: F401
from .inputs import Float64Warning  # noqa: F401
from .modes import ColoringKind, HessianMode, JacobianMode, mode_of  # noqa: F401
from .outputs import OUTPUTS, Output  # noqa: F401
from .saving import STATE_FORMAT, ForwardOnlyWarning  # noqa: F401

__all__ = ["PreparedDerivative", "OUTPUTS", "Output", "JacobianMode", "HessianMode", "ColoringKind",
           "mode_of", "Float64Warning", "ForwardOnlyWarning", "STATE_FORMAT", "ELIDE_CONSTANT_ELEMENTS"]

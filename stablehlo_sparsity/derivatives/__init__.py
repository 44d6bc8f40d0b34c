"""Prepared sparse Jacobians and Hessians: detect once, color once, evaluate a compiled compressed derivative.

* :mod:`.request` — the public face's keywords, defined once (``KEYWORDS``), read once per call into a frozen
  :class:`~.request.DerivativeRequest` that the rest of the package is handed;
* :mod:`.prepared` — what every prepared derivative shares (the base class, inputs, modes, seeds, outputs,
  evaluation, sharding, saving and the archive format);
* :mod:`.jacobian` — sparse Jacobians (:class:`~stablehlo_sparsity.SparseJacobian`, ``sparse_jacobian``);
* :mod:`.hessian` — sparse Hessians: the pattern (direct or through the gradient program), star coloring,
  Hessian-vector products;
* :mod:`.blocked` — Jacobian values for patterns too large for one prepared object, from row blocks;
* :mod:`.saved` — prepared derivatives read back from disk (:func:`~stablehlo_sparsity.load`);
* :mod:`.shard_io` — pattern shards read back, checked before SciPy sees them;
* :mod:`.checks` — ``check_jacobian`` / ``check_hessian``: a derivative against dense automatic differentiation;
* :mod:`.check_candidates` — what the checks accept: any matrix a user holds, sorted into three kinds;
* :mod:`.check_reference` — dense AD of the user's function, the checks' reference;
* :mod:`.distributed` — joining JAX's distributed runtime from a process started by ``launch``.

Rank 3 in ``tests/test_layout.py``: may import ``coloring``, ``analysis``, rank 1 and rank 0; it knows wrappers
above it (``interop``) only through the ``__sparse_derivative__`` protocol.
"""

"""The IR toolkit: reading and writing StableHLO through jaxlib's MLIR bindings, shared by every layer above.

* :mod:`.parsing` — modules from text, bytes, files or a ``jax.export.Exported`` (``parse_module``,
  ``as_module``), the dialects registered once per context, diagnostics as :class:`~.parsing.DiagnosticError`;
* :mod:`.attrs` — op attributes as Python and NumPy values (integer lists, dense literals, enums, dimension
  numbers);
* :mod:`.helpers` — walking the IR: nested ops, region captures, the functions of a module and their
  visibility, MLIR's ``cse`` on a copy;
* :mod:`.keywords` — the keyword arguments shared by the public entry points (their names, the ``wrt`` /
  ``argnums`` syntax, "did you mean" for a misspelt keyword);
* :mod:`.custom_calls` — the ``stablehlo.custom_call`` targets, described once (the analysis' rules and the
  importer read the same table);
* :mod:`.annotations` — the ``sparsity.*`` attributes the analysis writes into a module and ``sparsity-strip``
  removes: their names, the text of an index set, the entry function they describe.

Rank 1 in ``tests/test_layout.py``: may import ``errors``, ``_compat`` (and jaxlib, NumPy, SciPy) — nothing of the
lattice, the analysis or any layer above; the lattice (:mod:`stablehlo_sparsity.lattice`) and the kernels
(:mod:`stablehlo_sparsity.kernels`) sit beside it.  Nothing here runs an analysis: that is
:mod:`stablehlo_sparsity.analysis`.
"""

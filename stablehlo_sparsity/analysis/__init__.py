"""The analysis of one program: the abstract interpreter over StableHLO, its op rules, and detection.

* :mod:`.api` — the public entry points of detection: lower a JAX function (or take a module) and analyze it,
  for the global pattern or the pattern at one point;
* :mod:`.program` — the analysis of one program: lower, run the interpreter over the entry function, collect the
  :class:`~.program.Analysis`;
* :mod:`.annotate` — the pattern written into the module it came from (``annotate=True``, the analysis pass): the
  recorder of the rows of each value and the ``sparsity.*`` attributes it writes;
* :mod:`.arguments` — a user's arguments at the traced boundary (array leaves are traced, the rest is static);
* :mod:`.auxiliary` — auxiliary outputs (``has_aux=True``) at the traced boundary, kept aside and put back;
* :mod:`.options` — the analysis' options (one dataclass, below the interpreter and the rules that read it);
* :mod:`.values` — abstract values: a tensor's index sets plus, when known, its constant value;
* :mod:`.engine` — the region engine: the one op-by-op walk over StableHLO regions (the analysis and the
  importer drive it);
* :mod:`.interpreter` — the abstract interpreter: propagates the index-set and constant lattices through functions;
* :mod:`.constant_lattice` — the constant lattice over a whole module (for the fold-constants pass);
* :mod:`.local` — local patterns: the Jacobian pattern at one point, where the point's values decide;
* :mod:`.streaming` — detection in bounded memory: the pattern in row blocks, streamed;
* :mod:`.rows` — the one split of a pattern's rows among processes;
* :mod:`.rules` — the op rules, one op family per module, and their registry;
* :mod:`.folding` — what the rules share for folding: trust in folded values, static index maps, integer ranges;
* :mod:`.second_order` — the direct Hessian analysis: a second-order lattice over the primal program.

Rank 2 in ``tests/test_layout.py``, beside ``coloring`` (never imported): may import ``lattice``, ``ir`` and
``kernels`` (rank 1) and rank 0 (``errors``, ``dtypes``, ``_compat``), never a layer above it.
"""

"""StableHLO in, StableHLO out: modules from any producer, replayed in JAX and differentiated.

* :mod:`.importer` — StableHLO → JAX: each op replayed with ``jax.lax``, so JAX's own derivative rules apply;
* :mod:`.module_derivatives` — sparse derivatives of modules: the JAX-callable machinery on the imported function;
* :mod:`.injected` — an injected derivative used from Python: compile a module's function, read the recorded
  pattern;
* :mod:`.local` — local patterns of modules: the module replayed at a point, met with its global pattern;
* :mod:`.analyze` — the public ``analyze_module``: the global pattern of a module, or (``local_point``) its local
  pattern, which needs the importer.

Rank 4 in ``tests/test_layout.py``: may import ``derivatives``, ``coloring``, ``analysis``, rank 1 and rank 0;
never ``interop`` (beside it) or ``passes`` (above it).
"""

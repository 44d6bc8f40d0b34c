"""The command lines (the console scripts of ``pyproject.toml``).

* :mod:`.cli` — ``stablehlo-sparsity``: the user-facing command (``demo`` runs the main job on a built-in example);
* :mod:`.driver` — ``stablehlo-sparsity-opt``: an ``mlir-opt``-style driver for StableHLO sparsity analysis.

Rank 7 in ``tests/test_layout.py``, the top: may import anything, the public face included; nothing imports it.
"""

"""Wrappers for other libraries' solvers, each implementing ``__sparse_derivative__`` so ``check_jacobian`` accepts it.

* :mod:`.scipy` — SciPy: ready ``jac=`` callables, ``jac_sparsity=`` patterns, matrix-free ``LinearOperator`` s;
* :mod:`.ipopt` — IPOPT (through ``cyipopt``): sparse constraint Jacobians and Lagrangian Hessians in its layout;
* :mod:`.lineax` — lineax, optimistix and diffrax with the library's sparse Jacobians.

Rank 5 in ``tests/test_layout.py``: may import ``derivatives`` and everything below it; sits beside ``passes`` and
``modules`` (neither is imported).
"""

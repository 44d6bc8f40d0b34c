"""Constant folding helpers (the constant lattice)."""

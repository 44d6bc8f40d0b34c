"""Graph coloring of sparsity patterns."""

import jax

# Soundness checks compare against float64 Jacobians.
jax.config.update("jax_enable_x64", True)

"""A JAX training step with a linear solve inside (issue 24): a learned feature map
``Z = tanh(X W1)`` and a closed-form ridge-regression head ``w = solve(Z^T Z + lam I, Z^T y)``
(``jnp.linalg.solve``: an LU factorization and two triangular solves, one cuSOLVER/cuBLAS
kernel each), the loss ``mean((Z w - y)^2)``, its gradient through the solve (JAX transposes
the solve into another pair of triangular solves) and an SGD update; batch 8192, 512 input
features, 1024 hidden, fp32.

A JAX problem file: ``Model(*get_init_inputs())`` holds the parameters as ShapeDtypeStructs,
``apply(params, x, y)`` is the step (it returns the updated parameters and the loss).
"""

import jax
import jax.numpy as jnp

REQUIRES = ["jax"]
BATCH, FEATURES, HIDDEN, LAM, LR = 8192, 512, 1024, 1e-2, 1e-3


def loss_fn(params, x, y):
    z = jnp.tanh(x @ params["w1"] + params["b1"])
    gram = z.T @ z + LAM * jnp.eye(z.shape[1], dtype=z.dtype)
    w = jnp.linalg.solve(gram, z.T @ y)
    return jnp.mean((z @ w - y) ** 2)


class Model:
    def __init__(self, features: int = FEATURES, hidden: int = HIDDEN):
        self.params = {
            "w1": jax.ShapeDtypeStruct((features, hidden), jnp.float32),
            "b1": jax.ShapeDtypeStruct((hidden,), jnp.float32),
        }

    def apply(self, params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        new = jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
        return new, loss


def get_inputs():
    return [
        jax.ShapeDtypeStruct((BATCH, FEATURES), jnp.float32),
        jax.ShapeDtypeStruct((BATCH, 1), jnp.float32),
    ]


def get_init_inputs():
    return [FEATURES, HIDDEN]


def init_params(key, features: int, hidden: int):
    """Real parameters for validating on a GPU (small weights keep tanh unsaturated)."""
    return {
        "w1": jax.random.normal(key, (features, hidden), jnp.float32) * features**-0.5,
        "b1": jnp.zeros((hidden,), jnp.float32),
    }

"""Flax linen CNN classifier (NHWC): two conv blocks with ReLU and max pooling, global average
pooling, a dense head; batch 32 of 224x224 RGB images, fp32 (convolutions run as TF32).

A JAX problem file (see solar/frontend/jax/problem.py): ``Model`` is a ``linen.Module``; its
variables come from ``jax.eval_shape(model.init, ...)``, so nothing is allocated.
"""

import jax
import jax.numpy as jnp
from flax import linen as nn

REQUIRES = ["jax", "flax"]
BATCH, SIZE = 32, 224


class Model(nn.Module):
    channels: int = 64
    classes: int = 1000

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(self.channels, (3, 3), name="conv1")(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.relu(nn.Conv(2 * self.channels, (3, 3), strides=(2, 2), name="conv2")(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(self.classes, name="head")(x)


def get_inputs():
    return [jax.ShapeDtypeStruct((BATCH, SIZE, SIZE, 3), jnp.float32)]


def get_init_inputs():
    return [64, 1000]

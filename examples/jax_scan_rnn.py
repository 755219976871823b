"""Plain JAX Elman RNN with ``jax.lax.scan`` (issue 13): ``h = tanh(W h + U x_t + b)`` over 1000
steps, hidden 256, batch 4, fp32; returns every state. The scan is long enough to be lowered
as one looped kernel (``Kernel.loops``), and at batch 4 the chain of 1000 dependent steps,
not the work, bounds it.

A JAX problem file (see solar/frontend/jax/problem.py): ``Model(*get_init_inputs())`` holds
the parameters as ShapeDtypeStructs, ``apply(params, xs, h0)`` is the program.
"""

import jax
import jax.numpy as jnp

REQUIRES = ["jax"]
STEPS, BATCH, INPUT, HIDDEN = 1000, 4, 64, 256


class Model:
    def __init__(self, inputs: int = INPUT, hidden: int = HIDDEN, dtype=jnp.float32):
        self.params = {
            "W": jax.ShapeDtypeStruct((hidden, hidden), dtype),
            "U": jax.ShapeDtypeStruct((inputs, hidden), dtype),
            "b": jax.ShapeDtypeStruct((hidden,), dtype),
        }

    def apply(self, params, xs, h0):
        def step(h, x):
            h = jnp.tanh(h @ params["W"] + x @ params["U"] + params["b"])
            return h, h

        _, hs = jax.lax.scan(step, h0, xs)
        return hs


def get_inputs(steps: int = STEPS, batch: int = BATCH, inputs: int = INPUT, hidden: int = HIDDEN):
    return [
        jax.ShapeDtypeStruct((steps, batch, inputs), jnp.float32),
        jax.ShapeDtypeStruct((batch, hidden), jnp.float32),
    ]


def get_init_inputs():
    return [INPUT, HIDDEN, jnp.float32]


def init_params(key, inputs: int = INPUT, hidden: int = HIDDEN, dtype=jnp.float32):
    """Real parameters at the scale ``torch.nn.RNN`` initialises (uniform in ±1/√hidden), for
    validating on a GPU: with unit-normal weights the 1000-step recurrence is chaotic (a
    rounding difference of 2e-7 grows about 4x a step), and no two implementations agree."""
    bound = hidden**-0.5
    kw, ku, kb = jax.random.split(key, 3)

    def draw(k, shape):
        return jax.random.uniform(k, shape, jnp.float32, -bound, bound).astype(dtype)

    return {
        "W": draw(kw, (hidden, hidden)),
        "U": draw(ku, (inputs, hidden)),
        "b": draw(kb, (hidden,)),
    }

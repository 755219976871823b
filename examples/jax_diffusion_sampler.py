"""A JAX diffusion sampler (DDPM ancestral sampling, Ho et al. 2020): 50 denoising steps of an
MLP noise predictor conditioned on the step, each step drawing fresh Gaussian noise with
``jax.random`` (a key split per step, ``jax.random.normal``); batch 4096 samples of dimension
256, a 1024-wide MLP, fp32.

The random numbers are kernels that compute their values (Threefry-2x32, 72 integer operations
per 32-bit draw), so the IR reproduces JAX's samples bit for bit. A JAX problem file:
``Model(*get_init_inputs())`` holds the parameters, ``apply(params, key, x)`` is the sampler.
"""

import jax
import jax.numpy as jnp

REQUIRES = ["jax"]
BATCH, DIM, WIDTH, STEPS = 4096, 256, 1024, 50


def schedule(steps: int):
    betas = jnp.linspace(1e-4, 0.02, steps, dtype=jnp.float32)
    alphas = 1.0 - betas
    return betas, alphas, jnp.cumprod(alphas)


class Model:
    def __init__(self, dim: int = DIM, width: int = WIDTH):
        f32 = jnp.float32
        self.params = {
            "w1": jax.ShapeDtypeStruct((dim + 1, width), f32),
            "b1": jax.ShapeDtypeStruct((width,), f32),
            "w2": jax.ShapeDtypeStruct((width, width), f32),
            "b2": jax.ShapeDtypeStruct((width,), f32),
            "w3": jax.ShapeDtypeStruct((width, dim), f32),
            "b3": jax.ShapeDtypeStruct((dim,), f32),
        }

    def denoise(self, params, x, t):
        tt = jnp.full((x.shape[0], 1), t / STEPS, x.dtype)
        h = jax.nn.silu(jnp.concatenate([x, tt], axis=1) @ params["w1"] + params["b1"])
        h = jax.nn.silu(h @ params["w2"] + params["b2"])
        return h @ params["w3"] + params["b3"]

    def apply(self, params, key, x):
        betas, alphas, alpha_bars = schedule(STEPS)
        for t in reversed(range(STEPS)):
            key, sub = jax.random.split(key)
            eps = self.denoise(params, x, t)
            mean = (x - betas[t] / jnp.sqrt(1.0 - alpha_bars[t]) * eps) / jnp.sqrt(alphas[t])
            x = mean + jnp.sqrt(betas[t]) * jax.random.normal(sub, x.shape) if t else mean
        return x


def get_inputs():
    key = jax.random.key(0)
    x = jax.ShapeDtypeStruct((BATCH, DIM), jnp.float32)
    return [jax.ShapeDtypeStruct(key.shape, key.dtype), x]


def get_init_inputs():
    return [DIM, WIDTH]


def init_params(key, dim: int, width: int):
    """Real parameters for validating on a GPU (scaled so activations stay O(1))."""
    ks = jax.random.split(key, 3)
    shapes = [(dim + 1, width), (width, width), (width, dim)]
    params = {}
    for i, (k, s) in enumerate(zip(ks, shapes, strict=True), 1):
        params[f"w{i}"] = jax.random.normal(k, s, jnp.float32) * s[0] ** -0.5
        params[f"b{i}"] = jnp.zeros((s[1],), jnp.float32)
    return params

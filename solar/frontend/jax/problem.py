"""JAX problem files, mirroring KernelBench's ``Model`` / ``get_inputs()`` / ``get_init_inputs()``.

A JAX problem file defines one of:

1. A function and its inputs::

       def forward(params, x):            # or forward(x, ...) without parameters
           ...
       def get_params(*init):             # optional: the first argument of forward
           return {"dense1": {"kernel": jax.ShapeDtypeStruct((1024, 4096), jnp.float32), ...}}
       def get_inputs():
           return [jax.ShapeDtypeStruct((8, 1024), jnp.float32)]   # or real arrays
       def get_init_inputs():             # optional: arguments of get_params
           return []

   The program is ``forward(get_params(*get_init_inputs()), *get_inputs())`` (or
   ``forward(*get_inputs())`` without ``get_params``).

2. A Flax model class named ``Model``, built from ``get_init_inputs()``:

   - ``flax.nnx.Module``: ``Model(*get_init_inputs(), rngs=nnx.Rngs(0))`` (``rngs`` only if
     ``__init__`` takes it), built under ``nnx.eval_shape``; the program is
     ``model(*get_inputs())`` with the module's state as weights;
   - ``flax.linen.Module``: ``Model(*get_init_inputs())``, variables from
     ``jax.eval_shape(model.init, jax.random.key(0), *get_inputs())``; the program is
     ``model.apply(variables, *get_inputs())``.

Everything is abstract (``ShapeDtypeStruct`` s, ``eval_shape``): loading a large problem
allocates nothing. :func:`load_jax_problem` returns ``(fn, inputs)`` for
``solar.trace``/``solar.bound``, or None when the module is not a JAX problem file.
"""

from __future__ import annotations

import inspect
from types import ModuleType


def _is_flax_class(obj: object) -> str | None:
    if not isinstance(obj, type):
        return None
    try:
        from flax import linen, nnx
    except ImportError:
        return None
    if issubclass(obj, nnx.Module):
        return "nnx"
    if issubclass(obj, linen.Module):
        return "linen"
    return None


def load_jax_problem(module: ModuleType) -> tuple[object, tuple] | None:
    """``(fn, inputs)`` of a JAX problem file (see the module docstring), or None if
    ``module`` is not one. Raises ValueError with a one-line reason when it is one but cannot
    be built."""
    model_cls = getattr(module, "Model", None)
    kind = _is_flax_class(model_cls)
    forward = getattr(module, "forward", None)
    if kind is None and not (callable(forward) and model_cls is None):
        return None
    if not hasattr(module, "get_inputs"):
        raise ValueError("a JAX problem file needs get_inputs() next to its Model or forward")
    init = list(getattr(module, "get_init_inputs", lambda: [])())
    inputs = tuple(module.get_inputs())
    if kind == "nnx":
        from flax import nnx

        takes_rngs = "rngs" in inspect.signature(model_cls.__init__).parameters  # type: ignore[misc]

        def build() -> object:
            if takes_rngs:
                return model_cls(*init, rngs=nnx.Rngs(0))  # type: ignore[misc]
            return model_cls(*init)  # type: ignore[misc]

        return nnx.eval_shape(build), inputs
    if kind == "linen":
        import jax

        model = model_cls(*init)  # type: ignore[misc]
        variables = jax.eval_shape(model.init, jax.random.key(0), *inputs)
        return model, (variables, *inputs)
    get_params = getattr(module, "get_params", None)
    if get_params is not None:
        return forward, (get_params(*init), *inputs)
    return forward, inputs

"""JAX problem files, mirroring KernelBench's ``Model`` / ``get_inputs()`` / ``get_init_inputs()``.

A JAX problem file imports ``jax`` (or ``flax``) and defines ``get_inputs()`` (arrays or
``jax.ShapeDtypeStruct`` s), optionally ``get_init_inputs()``, and the program as one of:

1. ``Model``, a Flax module class, built from ``get_init_inputs()``:

   - ``flax.nnx.Module``: ``Model(*get_init_inputs(), rngs=nnx.Rngs(0))`` (``rngs`` only if
     ``__init__`` takes it), built under ``nnx.eval_shape``; the program is
     ``model(*get_inputs())`` with the module's state as weights;
   - ``flax.linen.Module``: ``Model(*get_init_inputs())``, variables from
     ``jax.eval_shape(model.init, jax.random.key(0), *get_inputs())``; the program is
     ``model.apply(variables, *get_inputs())``.

2. ``Model``, any other class: ``model = Model(*get_init_inputs())`` holds a pytree
   ``model.params`` (arrays or ShapeDtypeStructs) and a method ``apply(params, *inputs)``;
   the program is ``model.apply(model.params, *get_inputs())`` (KernelBench's layout, with the
   parameters passed explicitly, as JAX code keeps them)::

       class Model:
           def __init__(self, width=1024):
               self.params = {"w": jax.ShapeDtypeStruct((width, width), jnp.float32)}

           def apply(self, params, x):
               return jax.nn.relu(x @ params["w"])

       def get_inputs():
           return [jax.ShapeDtypeStruct((8, 1024), jnp.float32)]

3. A function ``forward(*inputs)``, or ``forward(params, *inputs)`` with
   ``get_params(*get_init_inputs())`` returning the parameter pytree.

A file of kind 2 or 3 that also defines ``get_optimizer()`` (an optax transformation) is a
*training* problem: its program returns the loss, and solar analyses one training step
(``value_and_grad``, the optax update, ``apply_updates``; see
:mod:`solar.frontend.jax.training` and docs/training.md).

Everything may be abstract (``ShapeDtypeStruct`` s, ``eval_shape``): loading a large problem
allocates nothing. :func:`load_jax_problem` returns ``(fn, inputs)`` for
``solar.trace``/``solar.bound``, or None when the module is not a JAX problem file.
"""

from __future__ import annotations

import inspect
from types import ModuleType


def flax_class_kind(obj: object) -> str | None:
    """``"nnx"`` or ``"linen"`` for a Flax module class, else None (Flax need not be installed)."""
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


def imports_jax(module: ModuleType) -> bool:
    """Whether the module imported jax or flax (a module, or something defined in one)."""
    for v in vars(module).values():
        name = v.__name__ if isinstance(v, ModuleType) else getattr(v, "__module__", None)
        if isinstance(name, str) and name.split(".")[0] in ("jax", "flax", "jaxlib"):
            return True
    return False


def load_jax_problem(module: ModuleType) -> tuple[object, tuple] | None:
    """``(fn, inputs)`` of a JAX problem file (see the module docstring), or None if
    ``module`` is not one. Raises ValueError with a one-line reason when it is one but cannot
    be built."""
    model_cls = getattr(module, "Model", None)
    kind = flax_class_kind(model_cls)
    forward = getattr(module, "forward", None)
    if kind is None and not imports_jax(module):
        return None
    if model_cls is None and not callable(forward):
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
    if model_cls is not None:
        model = model_cls(*init)
        if not hasattr(model, "params") or not callable(getattr(model, "apply", None)):
            raise ValueError(
                "a JAX Model needs a params attribute and an apply(params, *inputs) method "
                "(or use a Flax module; see solar/frontend/jax/problem.py)"
            )
        return _maybe_training(module, model.apply, (model.params, *inputs))
    get_params = getattr(module, "get_params", None)
    if get_params is not None:
        return _maybe_training(module, forward, (get_params(*init), *inputs))
    return forward, inputs


def _maybe_training(module: ModuleType, fn, args: tuple) -> tuple[object, tuple]:
    """A file with ``get_optimizer()`` (an optax transformation) is a training problem: the
    program is one step ``(params, opt_state, *batch) -> (params, opt_state, loss)`` of
    ``fn(params, *batch)`` (the loss), with the optimizer state abstract
    (``jax.eval_shape(optimizer.init, params)``)."""
    get_optimizer = getattr(module, "get_optimizer", None)
    if not callable(get_optimizer):
        return fn, args
    import jax

    from solar.frontend.jax.training import make_train_step

    optimizer = get_optimizer()
    params, *batch = args
    state = jax.eval_shape(optimizer.init, params)
    return make_train_step(fn, optimizer), (params, state, *batch)

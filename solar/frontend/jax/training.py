"""JAX training steps: ``jax.value_and_grad`` and an optax update, traced as one jaxpr.

A JAX step needs nothing special to trace: the jaxpr of ``value_and_grad`` holds the forward
(under ``jvp(...)`` in each equation's name stack), the backward (``transpose(jvp(...))``; the
forward a ``jax.checkpoint`` re-runs adds ``rematted_computation``) and, after them, the optax
update. :func:`assign_phases` reads those name stacks into each kernel's ``phase``
(``forward``, ``backward``, ``recompute``, ``optimizer``), as the PyTorch frontend does.

:func:`make_train_step` is the step solar builds for a JAX training problem file
(``forward(params, *batch)`` returning the loss, ``get_optimizer()`` an optax transformation)::

    def train_step(params, opt_state, *batch):
        loss, grads = jax.value_and_grad(forward)(params, *batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss
"""

from __future__ import annotations

from collections.abc import Callable

from solar.ir.program import Program


def assign_phases(program: Program) -> None:
    """Tag each kernel with its phase from its name stack (``module``); nothing for a program
    that takes no gradient. Kernels outside any ``jvp``/``transpose`` are the optimizer once a
    backward kernel has run, the forward before."""
    mods = [k.module for k in program.kernels]
    if not any("jvp(" in m or "transpose(" in m for m in mods):
        return
    outputs = set(program.outputs)
    after_backward = False
    for k in program.kernels:
        m = k.module
        if "rematted_computation" in m and "transpose(" in m:
            k.phase = "recompute"
        elif "transpose(" in m:
            k.phase = "backward"
        elif "jvp(" in m:
            k.phase = "forward"
        else:
            k.phase = "optimizer" if after_backward else "forward"
        after_backward |= k.phase in ("backward", "recompute")
        if k.phase == "optimizer":
            written = [st.out.tensor for st in k.statements if st.out.tensor in outputs]
            k.origin = _names(written)


def _names(names: list[str]) -> str:
    names = list(dict.fromkeys(names))
    if len(names) <= 3:
        return ", ".join(names)
    return f"{names[0]} … {names[-1]} ({len(names)} tensors)"


def make_train_step(loss_fn: Callable, optimizer) -> Callable:
    """The training step of ``loss_fn(params, *batch)`` (a scalar) with optax ``optimizer``
    (see the module docstring); jit it to run it."""
    import jax
    import optax

    def train_step(params, opt_state, *batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return train_step

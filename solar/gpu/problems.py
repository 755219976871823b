"""Problem files with real inputs (docs/validation.md): a KernelBench-style problem file (torch)
or a JAX one built on the target device with real weights and inputs, as a :class:`Subject`; the
problem files of folders; ``--set`` overrides of their module-level constants. Apart from
:mod:`.validate` because ``solar headroom`` loads problem files the same way.

Inputs are never zeros: problem files are built with a fixed seed on the target device, and
every floating parameter, buffer or input that is one constant value (``torch.ones``,
``torch.zeros``: LayerNorm weights, biases, masks), and every constant int8/uint8 parameter
(a quantised weight), is replaced by random values of the same sign and scale
(:func:`randomize_constants`), so a wrong index or a skipped term cannot hide.
"""

from __future__ import annotations

import inspect
import itertools
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from solar.frontend.jax.problem import flax_class_kind
from solar.gpu.subject import Subject, make_subject
from solar.problem import (
    Problem,
    ProblemError,
    build,
    discover,
    is_training_problem,
    load_module,
    set_mode,
    training_step,
)

__all__ = [
    "discover",
    "load_real_problem",
    "parse_sets",
    "problem_subject",
    "randomize_constants",
]


# ---------------------------------------------------------------------------------------------
# Real inputs for problem files


def _fresh_like(t: torch.Tensor, gen: torch.Generator) -> torch.Tensor | None:
    """Random values in place of a constant tensor ``t`` (None: leave it)."""
    if t.numel() <= 1:
        return None
    flat = t.detach().reshape(-1)
    c = flat[0]
    if t.dtype.is_floating_point:
        if not bool(torch.isfinite(c)) or not bool((flat == c).all()):
            return None
        u = torch.rand(t.shape, generator=gen, dtype=torch.float32).to(t.device)
        c = float(c)
        new = (u - 0.5) if c == 0 else c * (0.5 + u)
        return new.to(t.dtype)
    if t.dtype in (torch.int8, torch.uint8):
        if not bool((flat == c).all()):
            return None
        lo, hi = (-128, 128) if t.dtype == torch.int8 else (0, 256)
        return torch.randint(lo, hi, t.shape, generator=gen, dtype=torch.int32).to(t)
    return None


def randomize_constants(model, inputs, *, seed: int = 0) -> tuple[tuple, list[str]]:
    """Replace constant-filled tensors (see the module docstring) with random ones of the same
    sign and scale: parameters and buffers in place, inputs in the returned tuple. Returns
    ``(inputs, notes)``."""
    from torch.utils import _pytree as pytree

    gen = torch.Generator().manual_seed(seed + 1_000_003)
    notes: list[str] = []
    if isinstance(model, torch.nn.Module):
        with torch.no_grad():
            named = [(f"parameter {n}", p, True) for n, p in model.named_parameters()]
            named += [(f"buffer {n}", b, False) for n, b in model.named_buffers()]
            for what, t, is_param in named:
                if t.device.type == "meta" or (not is_param and not t.dtype.is_floating_point):
                    continue
                new = _fresh_like(t, gen)
                if new is not None:
                    t.copy_(new)
                    notes.append(what)
    count = [0]

    def fix(x):
        if isinstance(x, torch.Tensor) and x.device.type != "meta" and x.dtype.is_floating_point:
            new = _fresh_like(x, gen)
            if new is not None:
                count[0] += 1
                return new
        return x

    inputs = pytree.tree_map(fix, tuple(inputs))
    if count[0]:
        notes.append(f"{count[0]} constant input(s)")
    if notes:
        head = "randomized constant-filled tensors (never validate or time on zeros): "
        shown = notes if len(notes) <= 8 else [*notes[:6], f"... {len(notes) - 6} more"]
        notes = [head + ", ".join(shown)]
    return inputs, notes


def load_real_problem(
    path: str | Path,
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
    overrides: Mapping[str, object] | None = None,
    randomize: bool = True,
    strict_overrides: bool = True,
):
    """Build a KernelBench-style problem file with real tensors on ``device``:
    ``Model(*get_init_inputs())`` and ``get_inputs()`` after ``torch.manual_seed(seed)``, in
    eval mode (unless the file sets ``TRAIN_MODE = True``), with constant-filled tensors
    randomized. ``overrides`` sets module-level
    constants first (``{"BATCH": 4}``: small CPU runs of full-size files); a name the file
    lacks is an error, or ignored when ``strict_overrides`` is false (one set for a folder).
    Returns ``(solar.problem.Problem, notes)``."""
    path = Path(path)
    module = load_module(path)
    jax_problem = _real_jax_problem(
        module, path, device=device, seed=seed, overrides=overrides, strict=strict_overrides,
        randomize=randomize,
    )  # fmt: skip
    if jax_problem is not None:
        return jax_problem
    missing = [n for n in ("Model", "get_inputs") if not hasattr(module, n)]
    if missing:
        raise ProblemError(
            f"{path}: defines no {' or '.join(missing)}; a problem file needs a Model class, "
            "get_inputs() and optionally get_init_inputs()"
        )
    notes = apply_overrides(module, path, overrides, strict_overrides)
    init = getattr(module, "get_init_inputs", lambda: [])
    torch.manual_seed(seed)
    model, inputs, more = build(
        lambda: (module.Model(*init()), tuple(module.get_inputs())), path, device=str(device)
    )
    notes += more
    training = is_training_problem(module)
    if not training:
        set_mode(model, module)
    if randomize:
        inputs, more = randomize_constants(model, inputs, seed=seed)
        notes += more
    if training:
        step, args = training_step(module, model, inputs, path)
        with torch.enable_grad():
            step(*args)  # one real step: the optimizer state exists, as in the traced step
        notes.append(
            "training step: one real step run first (the optimizer state exists); the IR is "
            "the next step, validated on the loss, the updated parameters and state, and "
            "per kernel"
        )
        return Problem(path, path.stem, step, args), notes
    return Problem(path, path.stem, model, tuple(inputs)), notes


def apply_overrides(module, path, overrides: Mapping[str, object] | None, strict: bool):
    """Set module-level constants of a problem file (``{"BATCH": 4}``); a name the file lacks
    is an error when ``strict``, else skipped. Returns the notes saying what was set."""
    notes: list[str] = []
    for k, v in (overrides or {}).items():
        if not hasattr(module, k):
            if strict:
                raise ProblemError(f"{path}: has no module-level name {k!r} to override")
            continue
        setattr(module, k, v)
        notes.append(f"{k} = {v!r} (overridden)")
    return notes


def _jax_problem_kind(module) -> str | None:
    """How a JAX problem file defines its program: ``"nnx"``/``"linen"`` (a Flax ``Model``
    class), ``"apply"`` (a plain ``Model`` with ``params`` and ``apply``), ``"forward"`` (a
    ``forward`` function), or None when it is not a JAX problem file."""
    if "jax" not in sys.modules:
        return None
    model_cls = getattr(module, "Model", None)
    kind = flax_class_kind(model_cls)
    if kind is None and model_cls is not None:
        from solar.frontend.jax.problem import imports_jax

        if imports_jax(module):  # a plain Model with params and apply(params, *inputs)
            kind = "apply"
    if kind is None and model_cls is None and callable(getattr(module, "forward", None)):
        kind = "forward"
    return kind


class _RandomArrays:
    """Random JAX arrays from one seed, on one device: :meth:`real` for each
    ``jax.ShapeDtypeStruct`` (normal floats, integers in [0, 8), fair bools, PRNG keys folded
    from the seed), :meth:`fresh` in
    place of a constant-filled float array (never validate on zeros)."""

    def __init__(self, path, seed: int, device) -> None:
        import jax

        want_gpu = torch.device(device).type == "cuda"
        devs = [d for d in jax.devices() if (d.platform == "gpu") == want_gpu] or jax.devices()
        self.path, self.device = path, devs[0]
        self.key = jax.random.key(seed)
        self._count = itertools.count()

    def _next_key(self):
        import jax

        return jax.random.fold_in(self.key, next(self._count))

    @staticmethod
    def is_struct(x) -> bool:
        import jax

        return isinstance(x, jax.ShapeDtypeStruct)

    def real(self, x):
        import jax
        import jax.numpy as jnp

        if not self.is_struct(x):
            return x
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):  # a typed PRNG key array
            k = self._next_key()
            return jax.random.split(k, x.shape) if x.shape else k
        k, dt = self._next_key(), jnp.dtype(x.dtype)
        if jnp.issubdtype(dt, jnp.floating):
            v = jax.random.normal(k, x.shape, jnp.float32).astype(dt)
        elif dt == jnp.bool_:
            v = jax.random.bernoulli(k, 0.5, x.shape)
        elif jnp.issubdtype(dt, jnp.integer):
            v = jax.random.randint(k, x.shape, 0, 8).astype(dt)
        else:
            raise ProblemError(f"{self.path}: cannot make random values of dtype {dt}")
        return jax.device_put(v, self.device)

    def real_tree(self, tree):
        import jax

        return jax.tree_util.tree_map(self.real, tree, is_leaf=self.is_struct)

    def fresh(self, x):
        import jax
        import jax.numpy as jnp

        if not isinstance(x, jax.Array) or x.size <= 1:
            return x
        if not jnp.issubdtype(x.dtype, jnp.floating):
            return x
        flat = x.reshape(-1)
        c = flat[0]
        if not bool(jnp.isfinite(c)) or not bool(jnp.all(flat == c)):
            return x
        u = jax.random.uniform(self._next_key(), x.shape, jnp.float32)
        c = float(c)
        new = (u - 0.5) if c == 0 else c * (0.5 + u)
        return new.astype(x.dtype)

    def fresh_tree(self, tree):
        import jax

        return jax.tree_util.tree_map(self.fresh, tree)


def _jax_program(kind: str, module, rand: _RandomArrays, seed: int, randomize: bool):
    """``(fn, args)`` of a JAX problem file with real arrays: Flax models initialised for real
    with the seed, parameters from the file's ``init_params(key, *get_init_inputs())`` when it
    has one (a trained network's scale: a training step validated on unit-normal weights of a
    deep bf16 model is chaotic), else drawn by ``rand`` like the inputs."""
    model_cls = getattr(module, "Model", None)
    init = list(getattr(module, "get_init_inputs", lambda: [])())
    inputs = rand.real_tree(tuple(module.get_inputs()))
    if kind == "nnx":
        from flax import nnx

        takes = "rngs" in inspect.signature(model_cls.__init__).parameters
        model = model_cls(*init, rngs=nnx.Rngs(seed)) if takes else model_cls(*init)
        if randomize:
            nnx.update(model, rand.fresh_tree(nnx.state(model)))
        return model, inputs
    if kind == "linen":
        model = model_cls(*init)
        variables = model.init(rand.key, *inputs)
        return model, (rand.fresh_tree(variables) if randomize else variables, *inputs)
    init_params = getattr(module, "init_params", None)  # the file's own initialisation
    if kind == "apply":
        model = model_cls(*init)
        params = init_params(rand.key, *init) if callable(init_params) else model.params
        fn, args = model.apply, (rand.real_tree(params), *inputs)
    else:
        get_params = getattr(module, "get_params", None)
        if callable(init_params):
            params = (init_params(rand.key, *init),)
        else:
            params = () if get_params is None else (rand.real_tree(get_params(*init)),)
        fn, args = module.forward, (*params, *inputs)
    args = rand.fresh_tree(args) if randomize else args
    if callable(getattr(module, "get_optimizer", None)):
        return _jax_training(module, fn, args)
    return fn, args


def _jax_training(module, fn, args):
    """A JAX training problem with real arrays: the optimizer state from ``optimizer.init``,
    then one real step, so the state the IR reads is a steady-state one (never zeros)."""
    import jax

    from solar.frontend.jax.training import make_train_step

    optimizer = module.get_optimizer()
    params, *batch = args
    step = make_train_step(fn, optimizer)
    params, state, _ = jax.jit(step)(params, optimizer.init(params), *batch)
    return step, (params, state, *batch)


def _real_jax_problem(module, path, *, device, seed, overrides, strict, randomize):
    """A JAX problem file (see :mod:`solar.frontend.jax.problem`) with real arrays: each
    ``jax.ShapeDtypeStruct`` of ``get_inputs()``/``get_params()`` becomes random values
    (normal floats, integers in [0, 8), fair bools), Flax models are initialised for real
    with the seed, constant-filled weights are randomized. None if not a JAX problem file."""
    kind = _jax_problem_kind(module)
    if kind is None:
        return None
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave memory to torch
    import jax

    notes = apply_overrides(module, path, overrides, strict)
    rand = _RandomArrays(path, seed, device)
    try:
        with jax.default_device(rand.device):
            fn, args = _jax_program(kind, module, rand, seed, randomize)
    except ProblemError:
        raise
    except Exception as e:
        raise ProblemError(
            f"{path}: building the JAX problem with real arrays failed: {type(e).__name__}: {e}"
        ) from e
    notes.append("JAX problem: random arrays from its ShapeDtypeStructs (integers in [0, 8))")
    return Problem(path, path.stem, fn, tuple(args)), notes


def problem_subject(
    path: str | Path,
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
    overrides: Mapping[str, object] | None = None,
    randomize: bool = True,
    precision: str | None = None,
    strict_overrides: bool = True,
) -> Subject:
    """A :class:`Subject` for a problem file built with real tensors on ``device``."""
    problem, notes = load_real_problem(
        path,
        device=device,
        seed=seed,
        overrides=overrides,
        randomize=randomize,
        strict_overrides=strict_overrides,
    )
    return make_subject(
        problem.model,
        problem.inputs,
        name=problem.name,
        precision=precision,
        path=str(path),
        notes=notes,
    )


# ---------------------------------------------------------------------------------------------
# Overriding problem files' constants


def parse_sets(items: Sequence[str] | None) -> dict[str, object]:
    """``["BATCH=4", "DTYPE='x'"]`` -> ``{"BATCH": 4, "DTYPE": "x"}`` (Python literals; other
    text stays a string)."""
    import ast

    out: dict[str, object] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise ValueError(f"--set {item!r}: expected NAME=VALUE")
        try:
            out[name.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            out[name.strip()] = value.strip()
    return out

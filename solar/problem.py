"""KernelBench-style problem files: a ``Model`` class, ``get_inputs()``, ``get_init_inputs()``.

Files are loaded as they are. The model and inputs are built under ``torch.device("meta")``,
so analysing a large problem allocates no weights or activations. A file that also defines
``get_optimizer(model)`` is a *training* problem: the program is one training step
(:func:`training_step`, docs/training.md). JAX problem files (a
``forward`` function or a Flax ``Model``, with ``get_inputs()`` returning arrays or
``jax.ShapeDtypeStruct`` s) follow :mod:`solar.frontend.jax.problem` and are built abstractly.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


class ProblemError(ValueError):
    """A problem file that cannot be used; the message is one line."""


@dataclass
class Problem:
    path: Path
    name: str
    model: object
    inputs: tuple


def load_module(path: str | Path):
    path = Path(path)
    if path.is_dir():
        raise ProblemError(
            f"{path}: is a folder; `solar bound {path}` bounds every problem file in it"
        )
    if not path.is_file():
        raise ProblemError(f"{path}: no such file")
    name = f"solar_problem_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProblemError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:  # the user's file failed to import: one line
        raise ProblemError(f"{path}: importing it failed: {type(e).__name__}: {e}") from e
    return module


def load_problem(path: str | Path, *, device: str = "meta") -> Problem:
    """Build ``Model(*get_init_inputs())`` and ``get_inputs()`` of a problem file."""
    import torch

    path = Path(path)
    module = load_module(path)
    jax_problem = _load_jax_problem(path, module)
    if jax_problem is not None:
        return jax_problem
    missing = [n for n in ("Model", "get_inputs") if not hasattr(module, n)]
    if missing:
        raise ProblemError(
            f"{path}: defines no {' or '.join(missing)}; a problem file needs a Model class, "
            "get_inputs() and optionally get_init_inputs() (JAX: a forward function or a Flax "
            "Model, see solar/frontend/jax/problem.py)"
        )
    init = getattr(module, "get_init_inputs", lambda: [])
    try:
        with torch.device(device):
            model = module.Model(*init())
            inputs = module.get_inputs()
    except Exception as e:
        raise ProblemError(
            f"{path}: building Model/get_inputs on the {device} device failed: "
            f"{type(e).__name__}: {e}"
        ) from e
    if is_training_problem(module):
        step, args = training_step(module, model, inputs, path)
        return Problem(path, path.stem, step, args)
    if isinstance(model, torch.nn.Module):
        model.eval()
    return Problem(path, path.stem, model, tuple(inputs))


def is_training_problem(module) -> bool:
    """A training problem file defines ``get_optimizer`` (see :func:`training_step`)."""
    return callable(getattr(module, "get_optimizer", None))


def training_step(module, model, inputs, path) -> tuple[object, tuple]:
    """``(step, batch)`` of a PyTorch training problem file (docs/training.md): the model in
    train mode, ``optimizer = get_optimizer(model)``, and the file's
    ``train_step(model, optimizer, *batch)`` or, without one, the default step
    (``zero_grad``; ``loss = model(*batch)``; ``loss.backward()``; ``optimizer.step()``)."""
    import functools

    from solar.frontend.torch.training import make_train_step

    model.train()
    try:
        optimizer = module.get_optimizer(model)
    except Exception as e:
        raise ProblemError(f"{path}: get_optimizer(model) failed: {type(e).__name__}: {e}") from e
    custom = getattr(module, "train_step", None)
    if callable(custom):
        return functools.partial(custom, model, optimizer), tuple(inputs)
    return make_train_step(model, tuple(inputs), optimizer=optimizer)


def problem_at(path, param: str, value):
    """A problem file's ``(model, inputs)`` with module constant ``param`` set to
    ``value`` (built on the meta device, like :func:`solar.problem.load_problem`)."""
    import torch

    module = load_module(path)
    if not hasattr(module, param):
        consts = [k for k, v in vars(module).items() if k.isupper() and isinstance(v, int)]
        raise ProblemError(
            f"{path}: has no module constant {param!r} to sweep; integer constants: "
            f"{', '.join(consts) or 'none'}"
        )
    setattr(module, param, value)
    init = getattr(module, "get_init_inputs", lambda: [])
    try:
        with torch.device("meta"):
            model = module.Model(*init())
            inputs = tuple(module.get_inputs())
    except Exception as e:
        raise ProblemError(
            f"{path}: building Model/get_inputs with {param}={value} failed: "
            f"{type(e).__name__}: {e}"
        ) from e
    if is_training_problem(module):
        return training_step(module, model, inputs, path)
    if isinstance(model, torch.nn.Module):
        model.eval()
    return model, inputs


def _load_jax_problem(path: Path, module) -> Problem | None:
    """A JAX problem file (see :mod:`solar.frontend.jax.problem`), or None for anything else."""
    if "jax" not in sys.modules:  # a JAX problem file imports jax
        return None
    from solar.frontend.jax.problem import load_jax_problem

    try:
        loaded = load_jax_problem(module)
    except Exception as e:
        raise ProblemError(
            f"{path}: building the JAX problem failed: {type(e).__name__}: {e}"
        ) from e
    if loaded is None:
        return None
    fn, inputs = loaded
    return Problem(path, path.stem, fn, tuple(inputs))


def discover(paths: Iterable[str | Path]) -> list[Path]:
    """Problem files: each file as given, and every ``*.py`` below each folder (sorted; names
    starting with ``_`` or ``.`` skipped)."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out += sorted(
                f
                for f in p.rglob("*.py")
                if not any(part.startswith(("_", ".")) for part in f.relative_to(p).parts)
            )
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or folder")
    return out

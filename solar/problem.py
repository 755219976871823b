"""KernelBench-style problem files: a ``Model`` class, ``get_inputs()``, ``get_init_inputs()``.

Files are loaded as they are. The model and inputs are built under ``torch.device("meta")``,
so analysing a large problem allocates no weights or activations. A model whose constructor
cannot run on the meta device (it reads a value: ``torch.linspace(0, p, n)[i].item()`` for a
drop-path schedule, ``.tolist()``, a data-dependent shape) is built on the CPU instead, with
real weights, and the report says so (:attr:`Problem.notes`); the analysis still traces on
fake tensors. The model is put in eval mode unless the file sets ``TRAIN_MODE = True`` (a model
analysed as it runs in training: dropout and batch statistics, forward only). A file that also
defines ``get_optimizer(model)`` is a *training* problem: the program is one training step
(:func:`training_step`, docs/training.md). JAX problem files
(a ``forward`` function or a Flax ``Model``, with ``get_inputs()`` returning arrays or
``jax.ShapeDtypeStruct`` s) follow :mod:`solar.frontend.jax.problem` and are built abstractly.

A file that calls ``from_pretrained`` (benchmark suites' model-level problems:
``AutoModelForCausalLM.from_pretrained(name, config=config)`` in ``Model.__init__``,
``AutoConfig.from_pretrained(name)`` at import) is loaded with ``transformers``'
``from_pretrained`` redirected (:mod:`solar.hub.pretrained`): the model is built from its
``config.json`` alone on the meta device, no weights are downloaded, and the report says so.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from solar.frontend.torchvision_ops import torchvision_importable
from solar.hub.models import HubError


class ProblemError(ValueError):
    """A problem file that cannot be used; the message is one line."""


@dataclass
class Problem:
    path: Path
    name: str
    model: object
    inputs: tuple
    notes: list[str] = field(default_factory=list)  # how it was built, for the report


def load_module(path: str | Path, preset: dict | None = None):
    """Import a problem file as a fresh module (``preset``: names its namespace holds before
    its code runs, e.g. a ``range`` that watches its arguments)."""
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
    vars(module).update(preset or {})
    sys.modules[name] = module
    try:
        with torchvision_importable():  # the file may import torchvision
            spec.loader.exec_module(module)
    except HubError as e:  # a from_pretrained whose config.json is nowhere: say which
        raise ProblemError(f"{path}: {e}") from e
    except (Exception, SystemExit) as e:  # the user's file failed to import: one line
        raise ProblemError(f"{path}: importing it failed: {type(e).__name__}: {e}") from e
    return module


def load_problem(path: str | Path, *, device: str = "meta") -> Problem:
    """Build ``Model(*get_init_inputs())`` and ``get_inputs()`` of a problem file (see the
    module docstring for the device and the mode)."""
    path = Path(path)
    # the file, its Model and get_inputs may import torchvision (transformers does, lazily)
    with torchvision_importable(), weights_from_config(path) as built:
        problem = _load_problem(path, device)
    problem.notes[:0] = built
    return problem


def _load_problem(path: Path, device: str) -> Problem:
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
    model, inputs, notes = build(
        lambda: (module.Model(*init()), module.get_inputs()), path, device=device
    )
    if is_training_problem(module):
        step, args = training_step(module, model, inputs, path)
        return Problem(path, path.stem, step, args, notes)
    return Problem(path, path.stem, set_mode(model, module), tuple(inputs), notes)


def build(make: Callable[[], tuple], path: Path, *, device: str = "meta", what: str = ""):
    """``make()`` -> ``(model, inputs)`` under ``torch.device(device)``; when the meta device
    cannot run the constructor (it reads a tensor's value), on the CPU with real weights.
    Returns ``(model, inputs, notes)``; a failure is a one-line :class:`ProblemError`."""
    import torch

    try:
        with torch.device(device):
            model, inputs = make()
        return model, inputs, []
    except torch.cuda.OutOfMemoryError:
        raise
    except HubError as e:  # no config.json for a from_pretrained: the CPU would not help
        raise ProblemError(f"{path}: {e}") from e
    except Exception as e:
        first = e
    if device != "meta":
        raise _build_error(path, device, what, first) from first
    try:
        with torch.device("cpu"):
            model, inputs = make()
    except Exception as e:
        raise _build_error(path, "meta", what, first, also=e) from e
    tensors = [*model.parameters(), *model.buffers()] if isinstance(model, torch.nn.Module) else []
    weights = sum(t.numel() * t.element_size() for t in tensors)
    note = (
        f"built on the CPU with real weights ({weights / 1e6:.3g} MB): the constructor cannot "
        f"run on the meta device ({type(first).__name__}: {_first_line(first)}); traced on "
        "fake tensors as usual"
    )
    return model, inputs, [note]


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__


def _build_error(path, device, what, e, also=None) -> ProblemError:
    with_ = f" with {what}" if what else ""
    msg = f"{path}: building Model/get_inputs{with_} on the {device} device failed: "
    msg += f"{type(e).__name__}: {_first_line(e)}"
    if also is not None:
        msg += f"; on the CPU too: {type(also).__name__}: {_first_line(also)}"
    return ProblemError(msg)


def set_mode(model, module):
    """Eval mode, unless the problem file sets ``TRAIN_MODE = True``."""
    import torch

    if isinstance(model, torch.nn.Module):
        model.train(bool(getattr(module, "TRAIN_MODE", False)))
    return model


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


@contextlib.contextmanager
def weights_from_config(path: Path) -> Iterator[list[str]]:
    """While loading a problem file that calls ``from_pretrained``, ``transformers`` builds
    from ``config.json`` on the meta device (:mod:`solar.hub.pretrained`); yields the notes
    saying so. Other files (and machines without ``transformers``) load untouched."""
    from solar.hub.pretrained import from_config_instead_of_weights, uses_from_pretrained

    if not uses_from_pretrained(path) or importlib.util.find_spec("transformers") is None:
        yield []
        return
    with from_config_instead_of_weights() as notes:
        yield notes


def problem_at(path, param: str, value):
    """A problem file's ``(model, inputs)`` with module constant ``param`` set to
    ``value`` (built on the meta device, like :func:`solar.problem.load_problem`)."""
    return problem_with(path, {param: value})


def problem_with(path, constants: Mapping[str, object]):
    """A problem file's ``(model, inputs)`` with its module ``constants`` set (a training
    problem's ``(step, batch)``), built as :func:`problem_at` builds one."""
    with weights_from_config(Path(path)):
        module = load_module(path)
        for param, value in constants.items():
            if not hasattr(module, param):
                consts = [k for k, v in vars(module).items() if k.isupper() and isinstance(v, int)]
                raise ProblemError(
                    f"{path}: has no module constant {param!r} to sweep; integer constants: "
                    f"{', '.join(consts) or 'none'}"
                )
            setattr(module, param, value)
        init = getattr(module, "get_init_inputs", lambda: [])
        what = ", ".join(f"{k}={v}" for k, v in constants.items())
        model, inputs, _ = build(
            lambda: (module.Model(*init()), module.get_inputs()), path, what=what
        )
        if is_training_problem(module):
            return training_step(module, model, inputs, path)
        return set_mode(model, module), tuple(inputs)


def is_jax_problem(path: Path, module) -> bool:
    """Whether an imported problem file is a JAX one (:mod:`solar.frontend.jax.problem`)."""
    return _load_jax_problem(path, module) is not None


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

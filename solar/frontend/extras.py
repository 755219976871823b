"""Which ``pip install 'solar[EXTRA]'`` brings a missing optional package: one table, one
context manager for every optional import point.

solar's core needs none of the frameworks and libraries its features use; each comes with an
extra of ``pyproject.toml`` (``torch``, ``jax``, ``report``, ``models``, ``ray``; the model
libraries of the tests and the zoo with ``test``). A feature whose package is missing fails
in one line naming the feature, the package and the extra, not with a bare
``ModuleNotFoundError``::

    with optional("hf: models"):
        import transformers  # missing: "transformers is not installed (needed for hf:
                             # models): pip install 'solar[models]'"
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

#: top-level module -> the extra of pyproject.toml that installs it
EXTRAS: dict[str, str] = {
    "torch": "torch",
    "jax": "jax",
    "jaxlib": "jax",
    "flax": "jax",
    "optax": "jax",
    "matplotlib": "report",
    "pandas": "report",
    "tqdm": "report",
    "transformers": "models",
    "huggingface_hub": "models",
    "ray": "ray",
    "timm": "test",
    "diffusers": "test",
    "safetensors": "test",
    "torch_geometric": "zoo",
    "ultralytics": "zoo",
    "segment_anything": "zoo",
    "pynvml": "gpu",
}


class MissingExtra(ModuleNotFoundError):
    """An optional package a feature needs is not installed; the message is one line naming
    the feature, the package and the extra that installs it."""


def extra_for(module: str | None) -> str | None:
    """The extra that installs ``module`` (a dotted name: its top-level package counts)."""
    return EXTRAS.get((module or "").split(".")[0])


def missing_extra(e: ModuleNotFoundError, what: str) -> MissingExtra | None:
    """``e`` as one line naming the extra to install, or None for a module no extra has."""
    extra = extra_for(e.name)
    if extra is None:
        return None
    package = (e.name or "").split(".")[0]
    error = MissingExtra(
        f"{package} is not installed (needed for {what}): pip install 'solar[{extra}]'",
        name=e.name,
    )
    return error


@contextmanager
def optional(what: str) -> Iterator[None]:
    """Imports of the optional packages ``what`` (a feature: "hf: models") needs: a missing
    one raises :class:`MissingExtra` (see :func:`missing_extra`)."""
    try:
        yield
    except MissingExtra:
        raise
    except ModuleNotFoundError as e:
        error = missing_extra(e, what)
        if error is None:
            raise
        raise error from e

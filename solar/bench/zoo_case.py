"""One model of the zoo as built: the model, how to call it, its training step's loss
(:class:`Case`), and how it is built (on meta, else on the CPU, in bf16). Shared by the zoo's
catalogues (:mod:`solar.bench.zoo_models`, :mod:`solar.bench.zoo_families`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn


@dataclass
class Case:
    """One model, built, with how to call it."""

    model: nn.Module
    inputs: tuple
    loss: Callable[..., torch.Tensor]  # (model output, *targets) -> scalar loss
    kwargs: dict = field(default_factory=dict)
    train_inputs: tuple | None = None  # default: inputs
    targets: tuple = ()
    call: str = ""
    notes: list[str] = field(default_factory=list)
    observe: bool = False  # data-dependent sizes as these inputs produce them (real weights)


def on_meta_or_cpu(make: Callable[[], nn.Module], notes: list[str]) -> nn.Module:
    """``make()`` on the meta device, else on the CPU (noted); in bf16."""
    try:
        with torch.device("meta"):
            model = make()
    except Exception as e:  # noqa: BLE001 - any constructor failure: build as users do
        on_meta = f"{type(e).__name__}: {_line(e)}"
        try:
            model = make()
        except Exception as cpu:  # noqa: BLE001
            cpu_error = f"{type(cpu).__name__}: {_line(cpu)}"
            raise BuildError(f"on meta {on_meta}; on the CPU {cpu_error}") from cpu
        notes.append(f"built on the CPU (on meta: {on_meta})")
    return model.to(torch.bfloat16)


class BuildError(RuntimeError):
    """The constructor failed on meta and on the CPU: the library cannot build the model."""


def _line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0][:200]


def main_tensor(out: object) -> torch.Tensor:
    """The main tensor of a model's output (logits of a tuple/ModelOutput, ``out`` of a dict)."""
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, dict):
        return main_tensor(out.get("out", next(iter(out.values()))))
    if isinstance(out, (tuple, list)):
        return main_tensor(out[0])
    return main_tensor(out.sample)  # diffusers outputs

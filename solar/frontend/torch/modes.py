"""What a trace must tell the reader about the mode the program ran in: a model left in train
mode, and the random kernels it launched (their values cannot be reproduced bit for bit)."""

from __future__ import annotations

import torch

from solar.ir.program import Extern, Program, Statement
from solar.ir.scalar import Call


def training_modules(module: torch.nn.Module | None) -> list[str]:
    """Names of the submodules (``""`` for the model itself) left in train mode."""
    if module is None:
        return []
    return [name for name, m in module.named_modules() if m.training]


def draws(st: Statement) -> bool:
    """Whether a statement draws random numbers (``random`` calls, a random permutation)."""
    permutes = isinstance(st, Extern) and st.routine == "randperm"
    return permutes or any(isinstance(e, Call) and e.op == "random" for e in st.expr.walk())


def random_kernels(program: Program) -> list[str]:
    """The ops of the program's kernels that draw random numbers, in order (dropout, rand,
    attention with dropout, ...)."""
    return [k.op for k in program.kernels if any(draws(st) for st in k.statements)]


def mode_notes(module: torch.nn.Module | None, program: Program) -> list[str]:
    """The report lines: train mode (which modules) and random kernels (how many, which)."""
    notes = []
    training = training_modules(module)
    if training:
        kinds = sorted({type(m).__name__ for n, m in module.named_modules() if n in training})  # type: ignore[union-attr]
        shown = ", ".join(kinds[:6]) + (", ..." if len(kinds) > 6 else "")
        notes.append(
            f"traced in train mode ({len(training)} module(s) with training=True: {shown}): "
            "dropout draws masks and batch norm uses batch statistics, as in training; call "
            "model.eval() for inference"
        )
    drawn = random_kernels(program)
    if drawn:
        ops = sorted(set(drawn))
        notes.append(
            f"{len(drawn)} random kernel(s) ({', '.join(ops)}): each draws its values (>= 1 op "
            "per value) and writes its outputs; their values depend on the generator state"
        )
    return notes

"""How much of PyTorch's core ATen opset (operators tagged ``torch.Tag.core``) the frontend
lowers, and why each other operator is refused: the one table of refusal reasons.

An overload counts as lowered when the registry has a loop-nest definition for it (its own,
its packet's, or its functional form's) or when its schema makes it a view (an output aliases
an input and nothing is written: ``resize_`` and ``out=`` overloads alias what they mutate),
which the frontend lowers without a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from solar.frontend.torch import ops  # noqa: F401  (registers the lowerings)
from solar.frontend.torch.lower import is_view
from solar.frontend.torch.registry import find_lowering

NO_DEFINITION = "no loop-nest definition yet"
DECOMPOSED = (
    "decomposed by PyTorch itself before any trace records it (CompositeImplicitAutograd): "
    "programs reach the operators it decomposes into"
)

#: Why an operator (by packet name) is refused, where there is more to say than
#: :data:`NO_DEFINITION`.
REASONS: dict[str, str] = {
    "resize_": "resizes storage in place (an allocator effect, not a loop nest)",
    "_assert_scalar": "a runtime check of a symbolic size, not a kernel",
    "sym_size": "a symbolic size query, not a kernel",
    "sym_numel": "a symbolic size query, not a kernel",
    "sym_stride": "a symbolic size query, not a kernel",
    "sym_storage_offset": "a symbolic size query, not a kernel",
    "sym_is_contiguous": "a symbolic layout query, not a kernel",
}


@dataclass
class Coverage:
    """Core ATen overloads lowered, and each refused one with its reason."""

    lowered: list[str]
    refused: dict[str, str]

    @property
    def total(self) -> int:
        return len(self.lowered) + len(self.refused)

    def summary(self) -> str:
        return f"{len(self.lowered)} of {self.total} core ATen operators lowered"

    def report(self) -> str:
        lines = [self.summary(), *(f"  {op}: {why}" for op, why in sorted(self.refused.items()))]
        return "\n".join(lines)


def core_overloads() -> list[torch._ops.OpOverload]:
    """Every ``torch.ops.aten`` overload tagged ``torch.Tag.core``, from the dispatcher's list
    of every registered operator (``dir(torch.ops.aten)`` lists only the packets loaded so far,
    which depends on what ran before)."""
    found = []
    for name in sorted(torch._C._dispatch_get_all_op_names()):
        if not name.startswith("aten::"):
            continue
        packet_name, _, overload = name[len("aten::") :].partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, packet_name), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        if torch.Tag.core in op.tags:
            found.append(op)
    return found


def core_coverage() -> Coverage:
    lowered, refused = [], {}
    for op in core_overloads():
        if find_lowering(op) is not None or (is_view(op) and not op._schema.is_mutable):
            lowered.append(str(op))
        elif op.overloadpacket.__name__ in REASONS:
            refused[str(op)] = REASONS[op.overloadpacket.__name__]
        elif torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"):
            refused[str(op)] = DECOMPOSED
        else:
            refused[str(op)] = NO_DEFINITION
    return Coverage(sorted(lowered), refused)

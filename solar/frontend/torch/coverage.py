"""How much of PyTorch's core ATen opset (operators tagged ``torch.Tag.core``) the frontend
lowers, and why each other operator is refused: the one table of refusal reasons.

An overload counts as lowered when the registry has a loop-nest definition for it (its own,
its packet's, or its functional form's) or when its schema makes it a view (an output aliases
an input), which the frontend lowers without a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from solar.frontend.torch import ops  # noqa: F401  (registers the lowerings)
from solar.frontend.torch.lower import is_view
from solar.frontend.torch.registry import find_lowering

DATA_DEPENDENT = "data-dependent output size (the number of elements depends on tensor values)"
COMPLEX = "complex dtypes, which the IR does not express yet"
NO_DEFINITION = "no loop-nest definition yet"
DECOMPOSED = (
    "decomposed by PyTorch itself before any trace records it (CompositeImplicitAutograd): "
    "programs reach the operators it decomposes into"
)

#: Why an operator (by packet name) is refused, where there is more to say than
#: :data:`NO_DEFINITION`.
REASONS: dict[str, str] = {
    "nonzero": DATA_DEPENDENT,
    "masked_select": DATA_DEPENDENT,
    "unique": DATA_DEPENDENT,
    "_unique2": DATA_DEPENDENT,
    "unique_dim": DATA_DEPENDENT,
    "unique_consecutive": DATA_DEPENDENT,
    "_local_scalar_dense": "returns a Python number read from the device (data-dependent)",
    "view_as_complex": COMPLEX,
    "view_as_real": COMPLEX,
    "polar": COMPLEX,
    "complex": COMPLEX,
    "_fft_c2c": COMPLEX,
    "_fft_r2c": COMPLEX,
    "_fft_c2r": COMPLEX,
    "resize_": "resizes storage in place (an allocator effect, not a loop nest)",
    "_assert_scalar": "a runtime check of a symbolic size, not a kernel",
    "sym_size": "a symbolic size query, not a kernel",
    "sym_numel": "a symbolic size query, not a kernel",
    "sym_stride": "a symbolic size query, not a kernel",
    "sym_storage_offset": "a symbolic size query, not a kernel",
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
    """Every ``torch.ops.aten`` overload tagged ``torch.Tag.core``."""
    found = []
    for name in dir(torch.ops.aten):
        packet = getattr(torch.ops.aten, name, None)
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if torch.Tag.core in op.tags:
                found.append(op)
    return found


def core_coverage() -> Coverage:
    lowered, refused = [], {}
    for op in core_overloads():
        if find_lowering(op) is not None or is_view(op):
            lowered.append(str(op))
        elif op.overloadpacket.__name__ in REASONS:
            refused[str(op)] = REASONS[op.overloadpacket.__name__]
        elif torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"):
            refused[str(op)] = DECOMPOSED
        else:
            refused[str(op)] = NO_DEFINITION
    return Coverage(sorted(lowered), refused)

"""The device check eager PyTorch makes, made while tracing: a CUDA model fed a CPU input
has no bound.

The trace's fake tensors all live on one device (the first non-meta device of the program's
tensors), so the fake kernels never see two devices. :class:`DeviceTags` keeps each graph
input's device as the user gave it and carries it along the operators' outputs; a call whose
tensors are on two devices is refused, as eager refuses it ("Expected all tensors to be on the
same device, but got mat1 is on cpu, different from other tensors on cuda:0 ..."), except
where eager allows the mix:

- a CPU 0-dim tensor with tensors of another device (a scalar; TensorIterator allows it);
- CPU index tensors of ``aten.index`` / ``index_put`` (eager moves them to the indexed tensor's
  device);
- the copies between devices (``copy_``, ``_to_copy``: ``.to(device)``, ``.cuda()``).

``meta`` is no device here: meta weights or inputs are how a user asks for analysis without
allocating, and they mix with anything. A tensor the program makes itself (a factory call, a
``.to(device)``) has no known device: the program read its device from a fake tensor, which
reports the trace's one device, not the user's. So only the user's tensors and what is computed
from them are checked, and a program whose tensors are all on one device is never checked: a
mix is refused only where eager certainly refuses it, never where it might run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves
from torch.utils.weak import WeakIdKeyDictionary

aten = torch.ops.aten

#: operators that move data between devices: eager allows any mix
COPIES = frozenset(
    {aten.copy_, aten.copy, aten._to_copy, aten._copy_from, aten._copy_from_and_resize}
)

#: (operator, argument) whose CPU index tensors eager accepts for a tensor on another device
CPU_INDICES = frozenset(
    {
        (aten.index, "indices"),
        (aten.index_put, "indices"),
        (aten.index_put_, "indices"),
        (aten._index_put_impl_, "indices"),
    }
)


class DeviceTags:
    """The user's device of each tensor the trace has met, and the check of each call."""

    def __init__(self, pairs: Iterable[tuple[torch.Tensor, torch.device]]) -> None:
        pairs = [(t, d) for t, d in pairs if d.type != "meta"]
        #: whether the user's tensors are on more than one device (else nothing is checked)
        self.active = len({d for _, d in pairs}) > 1
        #: by tensor identity, forgotten with the tensor
        self.tags: WeakIdKeyDictionary = WeakIdKeyDictionary()
        if self.active:
            for t, d in pairs:
                self.tags[t] = d

    def refusal(self, func, named: dict) -> RuntimeError | None:
        """Eager's error for a call whose tensors are on two devices (by the schema's
        argument names), or None."""
        if not self.active or func.overloadpacket in COPIES:
            return None
        common = None
        for name, d in self._tagged(func, named):
            if common is None:
                common = d
            elif d != common:
                return RuntimeError(
                    f"Expected all tensors to be on the same device, but got {name} is on {d}, "
                    f"different from other tensors on {common} (when checking argument in "
                    f"{func})"
                )
        return None

    def carry(self, func, named: dict, out: object) -> None:
        """Give the call's output tensors the device of its tensors (a copy's: of its
        ``self``); none where the call names a device (a factory, ``.to(device)``)."""
        if not self.active or named.get("device") is not None:
            return
        if func.overloadpacket in COPIES:
            found = [d for name, d in self._tagged(func, named, allowed=True) if name == "self"]
        else:
            found = [d for _, d in self._tagged(func, named)]
            found = found or [d for _, d in self._tagged(func, named, allowed=True)]
        if not found:
            return
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.tags[t] = found[0]

    def _tagged(
        self, func, named: dict, allowed: bool = False
    ) -> Iterator[tuple[str, torch.device]]:
        """(argument name, user's device) of the call's tensors of known device, in
        schema order; those eager allows on another device left out unless ``allowed``."""
        for a in func._schema.arguments:
            value = named.get(a.name)
            for t in value if isinstance(value, (list, tuple)) else (value,):
                d = self.tags.get(t) if isinstance(t, torch.Tensor) else None
                if d is None:
                    continue
                if allowed or not _mix_allowed(func, a.name, t, d):
                    yield a.name, d


#: the tensor methods that move a tensor to a device (the dispatcher sees no call where the
#: fake tensor is already on the trace's one device)
MOVES = frozenset({torch.Tensor.to, torch.Tensor.cuda, torch.Tensor.cpu, torch.Tensor.type})


class DeviceMoves(TorchFunctionMode):
    """Forgets the device of a tensor the program moves to a device where, on the trace's one
    device, the move is no call at all (``x.to(w.device)`` returns ``x`` itself): its device
    in eager is the one asked for, which the fake tensors cannot tell."""

    def __init__(self, tags: DeviceTags) -> None:
        super().__init__()
        self.tags = tags

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func in MOVES and args and out is args[0] and _names_a_device(func, args, kwargs):
            self.tags.tags.pop(out, None)
        return out


def _names_a_device(func, args: tuple, kwargs: dict) -> bool:
    """Whether a :data:`MOVES` call asks for a device (``x.to(torch.float32)`` does not)."""
    if func is not torch.Tensor.to:
        return True
    try:
        return torch._C._nn._parse_to(*args[1:], **kwargs)[0] is not None
    except (TypeError, RuntimeError):
        return True


def _mix_allowed(func, name: str, t: torch.Tensor, d: torch.device) -> bool:
    """Whether eager accepts ``t`` (on ``d``) with tensors of another device."""
    if d.type != "cpu":
        return False
    return t.dim() == 0 or (func.overloadpacket, name) in CPU_INDICES

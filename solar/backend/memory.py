"""Peak device memory of a program: live bytes over the kernel order, beside the GPU's HBM.

The rule, a lower bound on the device memory an execution of the kernels *in the traced
order* needs:

- graph inputs, weights and constants are resident for the whole program (the caller holds
  them before the first kernel and after the last);
- every other storage tensor is allocated when the first kernel that touches it starts and
  freed when the last kernel that reads it ends; graph outputs stay until the end;
- while kernel ``k`` runs, the live bytes are the resident bytes plus every such tensor whose
  interval contains ``k`` (a kernel's inputs and outputs are live together).

Whole storage tensors count (an allocation is the whole tensor, not the part a kernel
touches); views cost nothing; kernel-local scratch (role ``local``) stays on chip. Not
counted, so a real run needs at least this much: allocator rounding and fragmentation,
library workspaces (cuBLAS, cuDNN), the CUDA context, and tensors the framework keeps longer
than their last use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from solar.backend.phases import tensor_uses
from solar.frozen import Frozen
from solar.graph.types import Graph

RESIDENT = ("input", "weight", "constant")


@dataclass(frozen=True)
class PeakMemory(Frozen):
    """The live-bytes profile of a program (see the module docstring for the rule)."""

    peak_bytes: int
    peak_kernel: str | None  # the kernel during which the peak is reached (None: no kernels)
    resident_bytes: int  # graph inputs, weights and constants
    at_peak: dict[str, int] = field(default_factory=dict)  # role -> live bytes at the peak
    timeline: tuple[int, ...] = ()  # live bytes while each kernel runs, in kernel order
    # a training step: what the live bytes at the peak hold (weights, optimizer state,
    # gradients, saved activations, ...; see solar.backend.phases.tensor_uses)
    at_peak_use: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = {
            "peak_bytes": self.peak_bytes,
            "peak_kernel": self.peak_kernel,
            "resident_bytes": self.resident_bytes,
            "at_peak": dict(self.at_peak),
        }
        if self.at_peak_use:
            d["at_peak_use"] = dict(self.at_peak_use)
        return d


def live_intervals(g: Graph) -> dict[str, tuple[int, int]]:
    """Storage tensor -> (first kernel touching it, last kernel needing it) for every
    non-resident tensor that a kernel touches; graph outputs last until the end."""
    kernels = g.info.kernels
    tensors = g.info.tensors
    end = len(kernels) - 1
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, k in enumerate(kernels):
        for base in (*k.writes, *k.reads):
            if tensors[base].role in RESIDENT:
                continue
            first.setdefault(base, i)
            last[base] = i
    return {b: (first[b], end if tensors[b].role == "output" else last[b]) for b in first}


def peak_memory(
    g: Graph,
    *,
    sizes: Mapping[str, float] | None = None,
    span: tuple[int, int] | None = None,
) -> PeakMemory:
    """The peak live bytes of graph ``g``'s program over its kernel order.

    ``sizes`` (storage tensor -> bytes) replaces tensors' sizes (one GPU's shards of a
    parallel plan); ``span = (lo, hi)`` keeps kernels ``lo .. hi-1`` only (a pipeline stage):
    then the resident tensors are those those kernels touch, a tensor made before the span is
    live from its first kernel (it was received), and one read after it or a graph output
    until its last (it is sent, or kept)."""
    tensors = g.info.tensors
    kernels = g.info.kernels
    lo, hi = span if span is not None else (0, len(kernels))
    n = hi - lo

    def size(b: str):
        return tensors[b].bytes if sizes is None else sizes.get(b, tensors[b].bytes)

    if span is None:
        resident_set = {t for t, info in tensors.items() if info.role in RESIDENT}
    else:
        resident_set = {
            b for k in kernels[lo:hi] for b in (*k.reads, *k.writes) if tensors[b].role in RESIDENT
        }
    resident = sum(size(t) for t in resident_set)
    # a difference array over kernel indices: +bytes where an interval starts, - after it ends
    delta = [0] * (n + 1)
    intervals = {
        b: (max(a, lo) - lo, min(z, hi - 1) - lo)
        for b, (a, z) in live_intervals(g).items()
        if a < hi and z >= lo
    }
    for base, (a, z) in intervals.items():
        delta[a] += size(base)
        delta[z + 1] -= size(base)
    timeline, live = [], resident
    for i in range(n):
        live += delta[i]
        timeline.append(live)
    if not timeline:
        return PeakMemory(resident, None, resident, _by_role(tensors, resident_set, size), ())
    k = max(range(n), key=timeline.__getitem__)
    alive = resident_set | {b for b, (a, z) in intervals.items() if a <= k <= z}
    name = kernels[lo + k].name
    uses = tensor_uses(g)
    by_use = _by_role(tensors, alive, size, uses) if uses else {}
    by_role = _by_role(tensors, alive, size)
    return PeakMemory(timeline[k], name, resident, by_role, tuple(timeline), by_use)


def _by_role(
    tensors: dict, alive: set[str], size, key: Mapping[str, str] | None = None
) -> dict[str, int]:
    """Live bytes at the peak by role (or by ``key[name]``, the tensors' uses)."""
    out: dict[str, int] = {}
    for name in tensors:
        if name not in alive:
            continue
        k = key[name] if key else tensors[name].role
        out[k] = out.get(k, 0) + size(name)
    return out

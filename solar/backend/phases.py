"""The parts of a training step: forward, backward, recompute (forward kernels a checkpoint
re-runs during the backward) and optimizer, from the ``phase`` each kernel carries.

A :class:`PhaseRow` per phase present sums the phase's kernels: their work, their unfused DRAM
bytes and unfused time (Σ of each kernel's unfused term, max(compute, memory, its launch
and critical-path floor), as the unfused bound), and the compute floor of
the phase's work alone (max over units of its ops / peak). Programs that are not training steps
have no phases (an empty split).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from solar.backend.units import compute_time
from solar.frozen import Frozen

#: The order phases are reported in.
PHASES = ("forward", "backward", "recompute", "optimizer")


@dataclass(frozen=True)
class PhaseRow(Frozen):
    phase: str
    kernels: int
    flops: dict[str, int]
    bytes: int  # DRAM bytes of its kernels, unfused
    unfused_s: float  # Σ over its kernels of max(compute, memory, latency)
    compute_s: float  # its work alone at the peaks (max over units)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def phase_split(kernels, spec) -> list[PhaseRow]:
    """One row per phase present among ``kernels`` (KernelRow-like: ``phase``, ``flops``,
    ``bytes_read``, ``bytes_written``, ``unfused_s``), in :data:`PHASES` order."""
    groups: dict[str, list] = {}
    for k in kernels:
        if getattr(k, "phase", ""):
            groups.setdefault(k.phase, []).append(k)
    rows = []
    for phase in sorted(groups, key=lambda p: (PHASES.index(p) if p in PHASES else len(PHASES), p)):
        ks = groups[phase]
        ops: Counter[str] = Counter()
        for k in ks:
            ops.update(k.flops)
        rows.append(
            PhaseRow(
                phase,
                len(ks),
                dict(ops),
                sum(k.bytes_read + k.bytes_written for k in ks),
                sum(k.unfused_s for k in ks),
                compute_time(dict(ops), spec).seconds,
            )
        )
    return rows


def tensor_uses(g) -> dict[str, str]:
    """What each storage tensor of a training step holds, from the phases of the kernels
    that write and read it (empty for a program without phases):

    - resident tensors: ``weights`` (read by the forward), ``optimizer state`` (touched by the
      optimizer only), ``inputs`` (the batch);
    - the rest: ``saved activations`` (written by the forward or a recompute, read by the
      backward), ``gradients`` (written by the backward, read by the optimizer), ``outputs``
      (the step's results), ``temporaries`` (everything else).
    """
    kernels = g.info.kernels
    if not any(k.phase for k in kernels):
        return {}
    writers: dict[str, set[str]] = {}
    readers: dict[str, set[str]] = {}
    for k in kernels:
        for t in k.writes:
            writers.setdefault(t, set()).add(k.phase)
        for t in k.reads:
            readers.setdefault(t, set()).add(k.phase)
    uses = {}
    for name, t in g.info.tensors.items():
        w, r = writers.get(name, set()), readers.get(name, set())
        role = t.role
        if role in ("weight", "constant", "input"):
            if (w | r) and (w | r) <= {"optimizer"}:
                uses[name] = "optimizer state"
            else:
                uses[name] = "inputs" if role == "input" else "weights"
        elif role == "output":
            uses[name] = "outputs"
        elif w & {"forward", "recompute"} and "backward" in r:
            uses[name] = "saved activations"
        elif "backward" in w and "optimizer" in r:
            uses[name] = "gradients"
        else:
            uses[name] = "temporaries"
    return uses

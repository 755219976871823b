"""The ``energy:`` block of a GPU spec: what one operation, one DRAM byte and one second of the
idle GPU cost in joules, as measured by ``solar calibrate --energy`` (issue 36; the floor that
uses them is :mod:`solar.backend.energy`).

The figures are *measured*, never datasheet guesses: each is the energy of a long kernel that
keeps one unit busy, read from the GPU's cumulative energy counter (NVML), above the idle power
measured in the same run, divided by the operations or bytes it did
(:mod:`solar.gpu.calibrate_energy`). So an energy floor built on them holds "at the energy
efficiency of this GPU's best measured kernels", not as a physical law. A spec without the
block has no energy figures, and no energy floor is given for it.

In a YAML file the block reads::

    energy:
      idle_w: 68.2                  # W, the idle GPU (its static power)
      op_pj: {tc_bf16: 0.41, ...}   # pJ per operation (an FMA counts 2), by rate of the spec
      dram_pj_per_byte: 19.3        # pJ per DRAM byte (read or written)
      measured_on: "GPU, driver, clocks, date"
      method: "how"

In base units (what :meth:`HardwareSpec.to_dict` writes) ``idle_w``, ``op_j`` (J per op) and
``dram_j_per_byte`` (J per byte).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from solar.frozen import Frozen

__all__ = ["EnergyCosts", "energy_yaml_block", "parse_energy"]

#: readable key -> (base key, scale to base units)
_SCALES: dict[str, tuple[str, float]] = {
    "op_pj": ("op_j", 1e-12),
    "dram_pj_per_byte": ("dram_j_per_byte", 1e-12),
}
_KEYS = ("idle_w", "op_j", "dram_j_per_byte", "measured_on", "method")
#: an energy per operation or byte above this (1 nJ) is surely a unit mistake (J given for pJ)
MAX_J_PER_ITEM = 1e-9


@dataclass(frozen=True)
class EnergyCosts(Frozen):
    """A GPU's measured energy costs (base units): ``idle_w`` W while idle, ``op_j`` J per
    operation of each rate (the spec's units: ``tc_bf16``, ``cuda_fp32``, ...), and
    ``dram_j_per_byte`` J per DRAM byte; ``measured_on`` names the GPU, driver, clocks and date,
    ``method`` how they were measured."""

    idle_w: float
    op_j: Mapping[str, float] = field(default_factory=dict)
    dram_j_per_byte: float = 0.0
    measured_on: str = ""
    method: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "idle_w": self.idle_w,
            "op_j": dict(self.op_j),
            "dram_j_per_byte": self.dram_j_per_byte,
            "measured_on": self.measured_on,
            "method": self.method,
        }


def _number(x: Any, where: str, bad) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
        raise bad(f"field 'energy.{where}' must be a number >= 0, got {x!r}")
    return float(x)


def parse_energy(v: Any, bad, units: tuple[str, ...]) -> EnergyCosts | None:
    """``energy:`` of a spec mapping (readable or base units) -> :class:`EnergyCosts`, or None
    when the spec has no block; ``bad(msg)`` builds the one-line error, ``units`` are the
    rate names an ``op_pj`` entry may use."""
    if v is None:
        return None
    if isinstance(v, EnergyCosts):
        return v
    if not isinstance(v, Mapping):
        raise bad(f"field 'energy' must be a mapping, got {v!r}")
    out: dict[str, Any] = {}
    for k, x in v.items():
        k = str(k)
        base, scale = _SCALES.get(k, (k, 1.0))
        if base not in _KEYS:
            known = ", ".join(["idle_w", *_SCALES, "measured_on", "method"])
            raise bad(f"unknown key {k!r} in energy; keys are {known}")
        if base in out:
            raise bad(f"energy gives {base} twice")
        if base in ("measured_on", "method"):
            out[base] = str(x)
        elif base == "op_j":
            if not isinstance(x, Mapping):
                raise bad(f"field 'energy.{k}' must be a mapping unit -> number, got {x!r}")
            for u in x:
                if u not in units:
                    raise bad(f"unknown unit {u!r} in energy.{k}; units are {', '.join(units)}")
            out[base] = {str(u): _number(e, f"{k}.{u}", bad) * scale for u, e in x.items()}
        else:
            out[base] = _number(x, k, bad) * scale
    if "idle_w" not in out:
        raise bad("energy: missing 'idle_w' (the idle GPU's power, W)")
    if not out.get("measured_on"):
        raise bad(
            "energy: missing 'measured_on' (the GPU, driver, clocks and date of the "
            "measurement; figures come from `solar calibrate --energy`)"
        )
    for u, e in [*out.get("op_j", {}).items(), ("dram", out.get("dram_j_per_byte", 0.0))]:
        if e > MAX_J_PER_ITEM:
            raise bad(
                f"energy of {u} = {e!r} J per item is above 1 nJ: give picojoules as op_pj / "
                "dram_pj_per_byte"
            )
    return EnergyCosts(**out)


def energy_yaml_block(e: EnergyCosts, comments: Mapping[str, str] | None = None) -> str:
    """The ``energy:`` block of a YAML spec (readable units), one comment per key."""
    c = dict(comments or {})

    def line(key: str, value: str) -> str:
        return f"  {key}: {value}" + (f"   # {c[key]}" if c.get(key) else "")

    ops = ", ".join(f"{u}: {j * 1e12:.4g}" for u, j in e.op_j.items())
    lines = [
        "energy:",
        line("idle_w", f"{e.idle_w:.4g}"),
        line("op_pj", "{" + ops + "}"),
        line("dram_pj_per_byte", f"{e.dram_j_per_byte * 1e12:.4g}"),
        line("measured_on", _quoted(e.measured_on)),
        line("method", _quoted(e.method)),
    ]
    return "\n".join(lines) + "\n"


def _quoted(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

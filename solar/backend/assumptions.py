"""The assumptions of a bound as records: what is assumed (``kind``) and its numbers
(``values``); the sentence a report shows (``text``) is rendered from them, here and only here.

:func:`solar.backend.analyze.analyze` builds the records; :class:`~solar.backend.result.Bound`
keeps them (``Bound.assumption_records``) and gives their sentences as ``Bound.assumptions``.
Kinds with a template below render from their values; a ``note`` (what another module states
in words: the trace, the latency model, a what-if GPU, a narrow format, a library routine)
carries its sentence as ``values["text"]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from solar.backend.units import SFU_EMULATION_FLOPS
from solar.fmt import fmt_bytes
from solar.frozen import Frozen


def _peaks(v: dict) -> str:
    rates = ", ".join(f"{r} {p / 1e12:.1f} T/s" for r, p in v["peaks"].items())
    return (
        f"peaks: per-SM per-clock dense rates x {v['sm_count']} SMs x max boost clock "
        f"{v['max_clock_hz'] / 1e6:.0f} MHz ({rates}); "
        "an FMA counts 2 flops and CUDA-core ops are assumed to pair into FMAs"
    )


def _dram(v: dict) -> str:
    where = "(the spec's peak; see its notes below)" if v["spec_notes"] else "(datasheet peak)"
    return f"DRAM bandwidth {v['bandwidth'] / 1e12:.3g} TB/s {where}"


def _cache_aware(v: dict) -> str:
    forced = (
        f"({', '.join(v['rules'])}) adds {fmt_bytes(v['extra_bytes'])}"
        if v["rules"]
        else "(none binding at this capacity)"
    )
    return (
        f"cache-aware: on-chip capacity {fmt_bytes(v['capacity'])} = L2 + {v['sm_count']} SMs x "
        "(combined L1/shared memory + registers); traffic forced by that capacity, from proven "
        f"I/O lower bounds {forced}"
    )


def _energy(v: dict) -> str:
    ops = ", ".join(f"{r} {j * 1e12:.3g} pJ/op" for r, j in v["op_j"].items()) or "none"
    text = (
        "energy floor: at the energy efficiency of this GPU's best measured kernels, not a "
        f"physical law (solar calibrate --energy on {v['measured_on']}): work x energy per op "
        f"({ops}) + DRAM bytes x {v['dram_j_per_byte'] * 1e12:.3g} pJ/B, both above idle "
        f"power, + idle power {v['idle_w']:.4g} W x the level's time bound"
    )
    if v["uncharged"]:
        text += f"; no measured cost, charged 0 J: {', '.join(v['uncharged'])}"
    return text


_TEMPLATES: dict[str, Callable[[dict], str]] = {
    "peaks": _peaks,
    "dram": _dram,
    "unfused": lambda v: (
        "unfused: one kernel per source operator, each reading its inputs and writing its "
        "outputs once through DRAM, no cache reuse between kernels"
    ),
    "fused": lambda v: (
        "fused: one pass over graph inputs, weights and outputs; intermediates stay on chip"
    ),
    "cache_aware": _cache_aware,
    "sfu_emulation": lambda v: (
        f"SFU work may be emulated on the FMA pipe at {v['flops']} flops per op where that "
        "is faster"
    ),
    "peak_memory": lambda v: (
        "peak memory: live bytes in the traced kernel order (inputs and weights resident, "
        "every other tensor from the first kernel touching it to the last reading it); "
        "allocator overhead, library workspaces and the CUDA context come on top"
    ),
    "fallback": lambda v: (
        "no native unit, ran on: " + ", ".join(f"{c} -> {r}" for c, r in v["units"].items())
    ),
    "energy": _energy,
    "precision": lambda v: f"fp32 contractions run as: {', '.join(v['precisions'])}",
    "footprints": lambda v: "some footprints are proven lower bounds, not exact counts (marked ≥)",
    "complex": lambda v: (
        "complex arithmetic in real operations: a complex multiply 4 multiplies and 2 adds, "
        "a complex contraction 3 real multiply-adds per product (the 3M algorithm)"
    ),
}


@dataclass(frozen=True)
class Assumption(Frozen):
    """One assumption of a bound: its ``kind`` (a template above, or ``note``) and the
    numbers it states; ``text`` is the sentence, rendered from them."""

    kind: str
    values: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        template = _TEMPLATES.get(self.kind)
        return template(self.values) if template is not None else str(self.values["text"])

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict:
        return {"kind": self.kind, "values": dict(self.values), "text": self.text}

    @classmethod
    def from_dict(cls, d: dict) -> Assumption:
        values = d["values"] if "values" in d else {"text": d.get("text", "")}
        return cls(d["kind"], dict(values))


def note(text: str, kind: str = "note") -> Assumption:
    """An assumption stated in words by another module (``kind`` says which)."""
    return Assumption(kind, {"text": text})


def sfu_emulation() -> Assumption:
    """SFU work may run as a polynomial on the FMA pipe (:mod:`solar.backend.units`)."""
    return Assumption("sfu_emulation", {"flops": SFU_EMULATION_FLOPS})


def energy_assumptions(floor) -> list[Assumption]:
    """What an energy floor (:mod:`solar.backend.energy`) rests on; nothing without one."""
    if not floor.available:
        return []
    lv = floor.levels[0]
    return [
        Assumption(
            "energy",
            {
                "measured_on": floor.measured_on,
                "op_j": {t.what: t.per for t in lv.terms if t.kind == "op" and t.per},
                "dram_j_per_byte": next(t.per for t in lv.terms if t.kind == "dram"),
                "idle_w": next(t.per for t in lv.terms if t.kind == "static"),
                "uncharged": list(floor.uncharged),
            },
        )
    ]

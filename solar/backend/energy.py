"""The energy floor of each bound level (issue 36): joules a program must spend on a GPU.

At each level (unfused, fused, cache-aware)::

    energy = Σ over rates  ops of that rate × J per op        (the units' work)
           + DRAM bytes of the level × J per DRAM byte         (the level's traffic)
           + the GPU's idle power × the level's time bound     (no run is shorter)

Energy adds up where time overlaps, so the terms are summed (a time bound is a max). The
energy costs are the spec's ``energy:`` block (:mod:`solar.hw.energy`), measured above idle
power by ``solar calibrate --energy`` on long kernels that keep one unit busy: the floor holds
at the energy efficiency of this GPU's best measured kernels, not as a physical law. Each op
class is charged at the rate it runs at (``Bound.rates_used``); a rate without a measured cost
is charged 0 J and named (the floor stays a floor). A spec without the block gives no floor:
:class:`EnergyFloor` says why (``reason``), and its levels are ``None``, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from solar.backend.levels import Level
from solar.frozen import Frozen

__all__ = ["EnergyFloor", "EnergyTerm", "LevelEnergy", "energy_floor", "energy_of", "no_floor"]

_LEVELS = (Level.UNFUSED, Level.FUSED, Level.CACHE_AWARE)


@dataclass(frozen=True)
class EnergyTerm(Frozen):
    """One term of a level's floor: ``amount`` (ops, bytes or seconds) × ``per`` (J per op,
    J per byte, or W) = ``joules``. ``kind``: ``op`` (``what`` is the rate), ``dram`` or
    ``static``."""

    kind: str
    what: str
    amount: float
    per: float
    joules: float

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class LevelEnergy(Frozen):
    """The floor of one level: its terms and their sum (J)."""

    level: str
    joules: float
    terms: tuple[EnergyTerm, ...]

    def to_dict(self) -> dict:
        return {
            "level": self.level,
            "joules": self.joules,
            "terms": [t.to_dict() for t in self.terms],
        }


@dataclass(frozen=True)
class EnergyFloor(Frozen):
    """The energy floor of every level, or none and ``reason`` why (a spec without energy
    figures). ``measured_on`` and ``method``: the calibration the costs come from;
    ``uncharged``: the rates the program uses that have no measured cost (charged 0 J)."""

    levels: tuple[LevelEnergy, ...] = ()
    reason: str = ""
    measured_on: str = ""
    method: str = ""
    uncharged: tuple[str, ...] = ()

    @property
    def available(self) -> bool:
        return bool(self.levels)

    def at(self, level: str) -> float | None:
        """Joules at ``level`` (``unfused``, ``fused``, ``cache_aware``); None without a floor."""
        key = level.replace("-", "_").lower()
        if key not in _LEVELS:
            raise ValueError(f"unknown level {level!r}; one of {', '.join(_LEVELS)}")
        for lv in self.levels:
            if lv.level == key:
                return lv.joules
        return None

    def level(self, level: str) -> LevelEnergy | None:
        """The terms of ``level`` (None without a floor)."""
        key = level.replace("-", "_").lower()
        return next((lv for lv in self.levels if lv.level == key), None)

    @property
    def unfused(self) -> float | None:
        return self.at(Level.UNFUSED)

    @property
    def fused(self) -> float | None:
        return self.at(Level.FUSED)

    @property
    def cache_aware(self) -> float | None:
        return self.at(Level.CACHE_AWARE)

    def per(self, items: float, level: str = Level.FUSED) -> float | None:
        """Joules per item (a token of a decode step: ``items`` = the batch) at ``level``."""
        j = self.at(level)
        if j is None:
            return None
        if not items > 0:
            raise ValueError(f"per(): items must be positive, got {items!r}")
        return j / items

    def to_dict(self) -> dict:
        return {
            "levels": [lv.to_dict() for lv in self.levels],
            "reason": self.reason,
            "measured_on": self.measured_on,
            "method": self.method,
            "uncharged": list(self.uncharged),
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> EnergyFloor:
        levels = [
            LevelEnergy(lv["level"], lv["joules"], tuple(EnergyTerm(**t) for t in lv["terms"]))
            for lv in d.get("levels", ())
        ]
        return cls(
            tuple(levels),
            d.get("reason", ""),
            d.get("measured_on", ""),
            d.get("method", ""),
            tuple(d.get("uncharged", ())),
        )


def no_floor(spec_name: str) -> EnergyFloor:
    """The floor of a spec without energy figures: none, and why."""
    return EnergyFloor(
        reason=(
            f"{spec_name} has no measured energy costs (no 'energy:' block in its spec): run "
            "`solar calibrate --energy --out SPEC.yaml` on the GPU and bound with --hw SPEC.yaml"
        )
    )


def energy_floor(
    spec,
    ops: Mapping[str, float],
    rates_used: Mapping[str, str],
    level_bytes: Mapping[str, float],
    level_times: Mapping[str, float],
) -> EnergyFloor:
    """The floor of each level on ``spec``: ``ops`` (op class -> count) charged at the rate
    each class runs at (``rates_used``), ``level_bytes`` and ``level_times`` per level."""
    costs = spec.energy
    if costs is None:
        return no_floor(spec.name)
    per_rate: dict[str, float] = {}
    for cls, n in ops.items():
        rate = rates_used.get(cls, cls)
        per_rate[rate] = per_rate.get(rate, 0) + n
    op_terms = []
    uncharged = []
    for rate in sorted(per_rate):
        j = costs.op_j.get(rate)
        if j is None:
            uncharged.append(rate)
            j = 0.0
        op_terms.append(EnergyTerm("op", rate, per_rate[rate], j, per_rate[rate] * j))
    levels = []
    for lv in _LEVELS:
        nbytes, seconds = level_bytes[lv], level_times[lv]
        terms = (
            *op_terms,
            EnergyTerm(
                "dram", "DRAM", nbytes, costs.dram_j_per_byte, nbytes * costs.dram_j_per_byte
            ),
            EnergyTerm("static", "idle power", seconds, costs.idle_w, seconds * costs.idle_w),
        )
        total = 0.0
        for t in terms:
            total = total + t.joules
        levels.append(LevelEnergy(lv, total, terms))
    return EnergyFloor(tuple(levels), "", costs.measured_on, costs.method, tuple(uncharged))


def energy_of(b, spec) -> EnergyFloor:
    """The floor of a finished bound ``b`` (a :class:`~solar.backend.result.Bound`, maybe read
    from JSON) priced with ``spec``'s energy costs: the same arithmetic as the ``energy`` pass,
    from the work, rates, bytes and times the bound holds (a bound made on a spec without
    energy costs, priced once the GPU is calibrated)."""
    nbytes = {
        Level.UNFUSED: b.bytes_unfused,
        Level.FUSED: b.bytes_fused,
        Level.CACHE_AWARE: b.bytes_cache_aware,
    }
    times = {lv: getattr(b, lv) for lv in _LEVELS}
    return energy_floor(spec, b.flops, b.rates_used, nbytes, times)

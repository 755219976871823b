"""A GPU spec (:class:`HardwareSpec`), its validation and how a mapping becomes one (the
catalogue and ``load_spec`` are :mod:`solar.hw.catalogue`).

A :class:`HardwareSpec` holds upper bounds of what a GPU can do (docs/hardware.md): every compute
peak is a per-SM per-clock dense rate × the SM count × the *maximum* boost clock, so a bound
computed from it is a lower bound on time. Quantities are stored in base units (bytes, bytes/s,
Hz, ops/s); the YAML files use readable units that are named in the field (``max_clock_mhz``,
``dram_bandwidth_gbs``, ``l2_capacity_mib``, ...). Each quantity may also be given in base units
under the dataclass field's own name (``max_clock_hz``, ``dram_bandwidth``, ...), which is what
:meth:`HardwareSpec.to_dict` writes, so ``load_spec(spec.to_dict()) == spec``.

Units (op classes) are counted in operations per clock per SM, dense, an FMA counting as 2;
tensor-core rates are those with FP32 accumulation. See :data:`UNITS`.
"""

from __future__ import annotations

import contextvars
import dataclasses
import difflib
import math
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from solar.hw.energy import EnergyCosts, parse_energy
from solar.hw.interconnect import Interconnect, parse_interconnect
from solar.hw.latency import check_latency, parse_latency

__all__ = [
    "UNITS",
    "UNIT_DESCRIPTIONS",
    "HardwareSpec",
    "Interconnect",
    "SpecError",
    "UnknownUnitError",
]

UNIT_DESCRIPTIONS: dict[str, str] = {
    "tc_fp64": "tensor cores, fp64 inputs (DMMA), flops",
    "tc_tf32": "tensor cores, tf32 inputs, fp32 accumulation, flops",
    "tc_bf16": "tensor cores, bf16 inputs, fp32 accumulation, flops",
    "tc_fp16": "tensor cores, fp16 inputs, fp32 accumulation, flops",
    "tc_fp8": "tensor cores, fp8 (e4m3/e5m2) inputs, fp32 accumulation, flops",
    "tc_int8": "tensor cores, int8 inputs, int32 accumulation, ops",
    "tc_fp4": "tensor cores, fp4 inputs, fp32 accumulation, flops",
    "cuda_fp32": "CUDA cores, fp32 (an FMA counts 2)",
    "cuda_fp64": "fp64 units (an FMA counts 2)",
    "cuda_fp16": "CUDA cores, packed fp16x2 (an FMA counts 2 per lane)",
    "cuda_bf16": "CUDA cores, packed bf16x2 (an FMA counts 2 per lane)",
    "cuda_int32": "integer pipe, 32-bit integer instructions per lane, 1 op each",
    "sfu": "special-function units (MUFU: rcp, rsqrt, lg2, ex2, sin, cos, tanh), results",
}
#: Every unit name a spec may give a rate for, in display order.
UNITS: tuple[str, ...] = tuple(UNIT_DESCRIPTIONS)

_ORIGIN: contextvars.ContextVar[str] = contextvars.ContextVar("_ORIGIN", default="<HardwareSpec>")

# A check against a datasheet figure allows this relative slack at least, and at most the
# rounding of the figure as printed (half a unit in its last digit), capped at _MAX_SLACK: a
# base clock instead of the boost clock is off by 5 % or more, which no rounding hides.
_MIN_SLACK = 1e-3
_MAX_SLACK = 2e-2


class SpecError(ValueError):
    """A hardware spec is malformed, inconsistent or not found (one-line message)."""


class UnknownUnitError(ValueError):
    """A unit was asked for that the spec has no rate for."""


# ---------------------------------------------------------------------------------------------
# The spec


def _frozen_map(m: Mapping[str, float] | None) -> Mapping[str, float]:
    return types.MappingProxyType({str(k): float(v) for k, v in (m or {}).items()})


#: the fields of :class:`HardwareSpec` held as read-only maps
_MAPS = frozenset({"rates", "datasheet_dense", "measured", "latency"})


@dataclass(frozen=True)
class HardwareSpec:
    """One GPU: peaks are upper bounds of the hardware (base units: bytes, bytes/s, Hz, ops/s).

    ``on_chip_capacity`` counts every byte of on-chip storage (L2, combined L1/shared memory and
    registers of every SM) so that a cache-aware bound computed from it stays a lower bound.
    """

    name: str
    key: str
    aliases: tuple[str, ...]
    arch: str
    sm_count: int
    max_clock_hz: float
    rates: Mapping[str, float]  # unit -> ops per clock per SM (dense, FMA = 2)
    dram_bandwidth: float  # bytes/s
    dram_capacity: int  # bytes
    l2_capacity: int  # bytes
    l2_bandwidth: float | None  # bytes/s, None when not known
    smem_per_sm: int  # bytes: the largest shared-memory carve-out of one SM
    registers_per_sm: int  # bytes
    tdp_w: float
    nvlink_bandwidth: float  # bytes/s (all links, both directions), 0 if none
    datasheet_dense: Mapping[str, float] = field(default_factory=dict)  # unit -> ops/s
    measured: Mapping[str, float] = field(default_factory=dict)  # unit/'dram_bandwidth' -> /s
    sources: tuple[str, ...] = ()
    path: str | None = None
    l1_smem_per_sm: int | None = None  # bytes: combined L1 + shared memory of one SM
    compute_capability: str | None = None
    memory_type: str | None = None
    interconnect: Interconnect | None = None  # links to peer GPUs (solar.hw.interconnect)
    latency: Mapping[str, float] = field(default_factory=dict)  # solar.hw.latency (seconds)
    # what a bound on this spec must state: a what-if GPU's changes, figures dropped
    notes: tuple[str, ...] = ()
    # measured energy costs (solar.hw.energy; None: not calibrated, no energy floor)
    energy: EnergyCosts | None = None

    def __post_init__(self) -> None:
        s = object.__setattr__
        for f in ("aliases", "sources", "notes"):
            v = getattr(self, f)
            s(self, f, (v,) if isinstance(v, str) else tuple(v))
        s(self, "rates", _frozen_map(self.rates))
        s(self, "datasheet_dense", _frozen_map(self.datasheet_dense))
        s(self, "measured", _frozen_map(self.measured))
        s(self, "latency", _frozen_map(self.latency))
        if self.l1_smem_per_sm is None:
            s(self, "l1_smem_per_sm", self.smem_per_sm)
        _check_spec(self, _ORIGIN.get())

    def __getstate__(self) -> dict:
        """The fields, each read-only map as a dict (a ``mappingproxy`` does not pickle)."""
        return {k: dict(v) if k in _MAPS else v for k, v in self.__dict__.items()}

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():  # as built: no check again (it held when built)
            object.__setattr__(self, k, _frozen_map(v) if k in _MAPS else v)

    def __hash__(self) -> int:
        return hash(
            (
                self.key,
                self.name,
                self.sm_count,
                self.max_clock_hz,
                tuple(sorted(self.rates.items())),
                self.dram_bandwidth,
                self.l2_capacity,
            )
        )

    # -- compute ------------------------------------------------------------------------------

    @property
    def units(self) -> tuple[str, ...]:
        """The units this GPU has, in :data:`UNITS` order."""
        return tuple(u for u in UNITS if u in self.rates)

    def has_unit(self, unit: str) -> bool:
        return unit in self.rates

    def peak(self, unit: str) -> float:
        """Peak ops/s of ``unit``: rate per clock per SM × SMs × max boost clock."""
        try:
            rate = self.rates[unit]
        except KeyError:
            raise UnknownUnitError(
                f"{self.name} ({self.key}) has no unit {unit!r}; it has: {', '.join(self.units)}"
            ) from None
        return rate * self.sm_count * self.max_clock_hz

    def peaks(self) -> dict[str, float]:
        """unit -> peak ops/s, for every unit the spec has."""
        return {u: self.peak(u) for u in self.units}

    # -- latency (solar.hw.latency; 0 when the spec has no latency block) ---------------------

    @property
    def launch_floor_s(self) -> float:
        """Minimum time per dependent kernel launch (s)."""
        return self.latency.get("kernel_launch", 0.0)

    @property
    def sync_floor_s(self) -> float:
        """Minimum one-way latency of a value from one SM to another (s)."""
        return self.latency.get("sm_sync", 0.0)

    # -- memory -------------------------------------------------------------------------------

    @property
    def on_chip_capacity(self) -> int:
        """All on-chip storage in bytes: L2 + SMs × (combined L1/shared memory + registers)."""
        per_sm = max(self.l1_smem_per_sm or 0, self.smem_per_sm) + self.registers_per_sm
        return self.l2_capacity + self.sm_count * per_sm

    def dram_floor_bytes(self, cold: float, total: float) -> float:
        """The DRAM bytes a run with L2 flushed before it must move for ``total`` bytes of
        reads and writes: its ``cold`` ones (first reads of inputs and weights, which a flushed
        L2 cannot hold) and whatever exceeds what L2 can hold on the way in and out (twice
        its capacity)."""
        return max(cold, total - 2 * float(self.l2_capacity))

    # -- derived specs and export ---------------------------------------------------------------

    def scaled(
        self,
        *,
        bandwidth: float = 1.0,
        compute: float = 1.0,
        capacity: float = 1.0,
        **fields: float | str,
    ) -> HardwareSpec:
        """A what-if GPU (hypothetical hardware) derived from this one.

        Factors: DRAM and L2 bandwidth × ``bandwidth``, every compute rate × ``compute``,
        on-chip capacities (L2, L1/shared memory, registers) × ``capacity`` (rounded to whole
        bytes, at least 1); DRAM capacity, NVLink, SM count, clock and the latency floors stay.

        ``fields`` set single quantities (:func:`solar.hw.whatif.fields` lists them: the
        spec's quantities, a compute unit's peak, a latency floor; short names ``l2``,
        ``clock``), each a number in base units (bytes, bytes/s, Hz, ops/s, s, W) or a string
        with its unit, or a factor: ``scaled(dram_bandwidth="2TB/s", l2="100MiB",
        tc_bf16="x2")``, the same as ``--override`` on the command line. Fields apply after
        the factors.

        Datasheet figures and measurements carry over only where the peak they describe is
        unchanged; the spec's ``notes`` (stated in every bound's assumptions) say what
        changed and which were dropped. Raises :class:`SpecError` with a one-line reason."""
        from solar.hw.whatif import derive, with_fields

        factors = {"bandwidth": bandwidth, "compute": compute, "capacity": capacity}
        for k, f in factors.items():
            if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f < math.inf:
                raise SpecError(f"scaled(): {k} must be a positive finite number, got {f!r}")
        spec = self
        if not bandwidth == compute == capacity == 1:
            tag = ", ".join(f"{k} x{f:g}" for k, f in factors.items() if f != 1)
            kw = dict(
                rates={u: r * compute for u, r in self.rates.items()},
                dram_bandwidth=self.dram_bandwidth * bandwidth,
                l2_bandwidth=None if self.l2_bandwidth is None else self.l2_bandwidth * bandwidth,
                l2_capacity=_scale_bytes(self.l2_capacity, capacity),
                smem_per_sm=_scale_bytes(self.smem_per_sm, capacity),
                l1_smem_per_sm=_scale_bytes(self.l1_smem_per_sm or self.smem_per_sm, capacity),
                registers_per_sm=_scale_bytes(self.registers_per_sm, capacity),
            )
            name, key = f"{self.name} ({tag})", f"{self.key}[{tag.replace(' ', '')}]"
            spec = derive(self, kw, name=name, key=key, what=f"what-if GPU: {name}")
        try:
            return with_fields(spec, fields)
        except ValueError as e:
            raise SpecError(str(e)) from None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict in base units; ``load_spec`` of it gives back an equal spec."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Mapping):
                v = dict(v)
            elif isinstance(v, (Interconnect, EnergyCosts)):
                v = v.to_dict()
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out


def _scale_bytes(n: int, factor: float) -> int:
    return max(1, round(n * factor))


# ---------------------------------------------------------------------------------------------
# Validation of a spec's values (shared by every way of making one)


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _slack(tflops: float) -> float:
    """Allowed shortfall (in the figure's own unit) of a peak below a printed datasheet figure."""
    digits = Decimal(f"{tflops:.6g}").normalize()
    half_unit = 0.5 * 10.0 ** min(digits.as_tuple().exponent, 0)
    return min(max(half_unit, _MIN_SLACK * tflops), _MAX_SLACK * tflops)


def _check_spec(spec: HardwareSpec, where: str) -> None:
    def bad(msg: str) -> SpecError:
        return SpecError(f"hw spec {where}: {msg}")

    for f in ("name", "key", "arch"):
        v = getattr(spec, f)
        if not isinstance(v, str) or not v.strip():
            raise bad(f"field {f!r} must be a non-empty string, got {v!r}")
    if isinstance(spec.sm_count, bool) or not isinstance(spec.sm_count, int) or spec.sm_count <= 0:
        raise bad(f"field 'sm_count' must be a positive integer, got {spec.sm_count!r}")
    positive = (
        "max_clock_hz",
        "dram_bandwidth",
        "dram_capacity",
        "l2_capacity",
        "smem_per_sm",
        "l1_smem_per_sm",
        "registers_per_sm",
        "tdp_w",
    )
    for f in positive:
        v = getattr(spec, f)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
            raise bad(f"field {f!r} must be a positive number, got {v!r}")
    for f in ("dram_capacity", "l2_capacity", "smem_per_sm", "l1_smem_per_sm", "registers_per_sm"):
        if not isinstance(getattr(spec, f), int):
            raise bad(f"field {f!r} must be a whole number of bytes, got {getattr(spec, f)!r}")
    v = spec.nvlink_bandwidth
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
        raise bad(f"field 'nvlink_bandwidth' must be a number >= 0 (0: no NVLink), got {v!r}")
    v = spec.l2_bandwidth
    if v is not None and (
        isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf
    ):
        raise bad(f"field 'l2_bandwidth' must be a positive number or null, got {v!r}")
    ic = spec.interconnect
    if (
        ic is not None
        and spec.nvlink_bandwidth
        and abs(ic.nvlink_bidirectional - spec.nvlink_bandwidth) > 1e6
    ):
        raise bad(
            f"interconnect: {ic.nvlink_links} NVLink links x {ic.nvlink_link_gbs:g} GB/s per "
            f"direction x 2 directions = {_fmt(ic.nvlink_bidirectional / 1e9)} GB/s, but "
            f"nvlink_bandwidth_gbs (both directions) is {_fmt(spec.nvlink_bandwidth / 1e9)}"
        )
    if spec.l1_smem_per_sm < spec.smem_per_sm:
        raise bad(
            f"l1_smem_per_sm ({spec.l1_smem_per_sm} B) is smaller than smem_per_sm "
            f"({spec.smem_per_sm} B): the combined L1/shared memory holds the carve-out"
        )
    if not spec.rates:
        raise bad(f"'rates' is empty: give ops per clock per SM for some of {', '.join(UNITS)}")
    for label, mapping, extra in (
        ("rates", spec.rates, ()),
        ("datasheet_dense", spec.datasheet_dense, ()),
        ("measured", spec.measured, ("dram_bandwidth",)),
    ):
        for u, r in mapping.items():
            if u not in UNITS and u not in extra:
                raise bad(
                    f"unknown unit {u!r} in {label}{_did_you_mean(u, UNITS + extra)}; "
                    f"units are {', '.join(UNITS + extra)}"
                )
            if not 0 < r < math.inf:
                hint = " (omit a unit the GPU lacks)" if label == "rates" else ""
                raise bad(f"{label}.{u} must be a positive number{hint}, got {r!r}")
    for u, ds in spec.datasheet_dense.items():
        if u not in spec.rates:
            raise bad(f"datasheet_dense lists {u} but rates has no {u}: add its per-SM rate")
        pk = spec.peak(u)
        if _below_datasheet(pk, ds):
            raise bad(
                f"peak {u} = {_fmt(pk / 1e12)} TFLOP/s ({_fmt(spec.rates[u])}/clk/SM x "
                f"{spec.sm_count} SMs x {_fmt(spec.max_clock_hz / 1e6)} MHz) is below the "
                f"datasheet's {_fmt(ds / 1e12)}: max_clock_mhz is probably a base clock (use the "
                f"maximum boost clock) or the rate of {u} is too low{_WHATIF_HINT}"
            )
    for u, m in spec.measured.items():
        top = (
            spec.dram_bandwidth
            if u == "dram_bandwidth"
            else spec.peak(u)
            if u in spec.rates
            else None
        )
        if top is None:
            raise bad(f"measured lists {u} but rates has no {u}")
        if _beats(m, top):
            raise bad(
                f"measured {u} = {_fmt(m / 1e12)} T/s beats the peak {_fmt(top / 1e12)} "
                "T/s: a peak must be an upper bound (check the clock, rate or bandwidth)"
                + _WHATIF_HINT
            )
    check_latency(spec.latency, bad)
    if spec.energy is not None:
        for u in spec.energy.op_j:
            if u not in spec.rates:
                raise bad(f"energy lists {u} but rates has no {u}")


_WHATIF_HINT = (
    "; for a what-if GPU load the file by path or use HardwareSpec.scaled() (figures its "
    "peaks no longer reach are then dropped)"
)


def _below_datasheet(peak: float, datasheet: float) -> bool:
    return peak < datasheet - _slack(datasheet / 1e12) * 1e12


def _beats(measured: float, peak: float) -> bool:
    return measured > peak * (1 + _MIN_SLACK)


def _drop_unreached(kw: dict[str, Any]) -> list[str]:
    """Remove from a spec's keywords the datasheet figures and measurements its peaks no longer
    reach (a copied file with edited numbers describes another, hypothetical GPU); the note
    saying which, or none. Figures of units the spec lacks stay, for the check to reject."""
    rates, per_clock = kw["rates"], kw["sm_count"] * kw["max_clock_hz"]
    dropped = []
    for u, ds in list(kw["datasheet_dense"].items()):
        if u in rates and _below_datasheet(rates[u] * per_clock, ds):
            dropped.append(f"datasheet {u} {_fmt(ds / 1e12)} T/s")
            del kw["datasheet_dense"][u]
    for u, m in list(kw["measured"].items()):
        top = kw["dram_bandwidth"] if u == "dram_bandwidth" else rates.get(u, math.inf) * per_clock
        if _beats(m, top):
            dropped.append(f"measured {u} {_fmt(m / 1e12)} T/s")
            del kw["measured"][u]
    if not dropped:
        return []
    return [
        f"figures above this spec's peaks dropped (an edited, what-if GPU; the rest are kept "
        f"and checked): {', '.join(dropped)}"
    ]


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# ---------------------------------------------------------------------------------------------
# Reading a mapping (YAML file, JSON, dict)

# field -> (readable name in the YAML files, its scale to base units, kind)
_QUANTITIES: dict[str, tuple[str | None, float, str]] = {
    "sm_count": (None, 1, "int"),
    "max_clock_hz": ("max_clock_mhz", 1e6, "float"),
    "dram_bandwidth": ("dram_bandwidth_gbs", 1e9, "float"),
    "dram_capacity": ("dram_capacity_gb", 1e9, "bytes"),
    "l2_capacity": ("l2_capacity_mib", 2**20, "bytes"),
    "l2_bandwidth": ("l2_bandwidth_gbs", 1e9, "float"),
    "smem_per_sm": ("smem_per_sm_kib", 2**10, "bytes"),
    "l1_smem_per_sm": ("l1_smem_per_sm_kib", 2**10, "bytes"),
    "registers_per_sm": ("registers_per_sm_kib", 2**10, "bytes"),
    "tdp_w": (None, 1, "float"),
    "nvlink_bandwidth": ("nvlink_bandwidth_gbs", 1e9, "float"),
}
_OPTIONAL = {"l2_bandwidth", "l1_smem_per_sm"}
_NONNEG = {"nvlink_bandwidth"}
# mapping field -> (readable name, scale)
_MAPPINGS: dict[str, tuple[str, float]] = {
    "rates": ("rates_per_sm_per_clock", 1.0),
    "datasheet_dense": ("datasheet_dense_tflops", 1e12),
}
_STRINGS = ("name", "key", "arch", "compute_capability", "memory_type", "path")
_LISTS = ("aliases", "sources", "notes")
_KNOWN = (
    set(_QUANTITIES)
    | {h for h, _, _ in _QUANTITIES.values() if h}
    | set(_MAPPINGS)
    | {h for h, _ in _MAPPINGS.values()}
    | set(_STRINGS)
    | set(_LISTS)
    | {"measured", "interconnect", "latency", "energy"}
)
_NUMBER = re.compile(r"\s*[-+]?(\d[\d_]*\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")


def _number(v: Any, field_name: str, bad) -> float:
    """A finite number; numeric strings count too (YAML reads '1e9' as text)."""
    if isinstance(v, str) and _NUMBER.fullmatch(v):
        v = float(v.replace("_", ""))
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise bad(f"field {field_name!r} must be a number, got {v!r}")
    return float(v)


def _pick(data: Mapping, base: str, readable: str | None, bad) -> tuple[str | None, Any]:
    """(the key used, its value) for a quantity given under its base or readable name."""
    given = [k for k in (readable, base) if k is not None and k in data]
    if len(given) > 1:
        raise bad(f"give either {readable!r} or {base!r}, not both")
    return (given[0], data[given[0]]) if given else (None, None)


def _spec_from_mapping(
    data: Mapping,
    where: str,
    default_key: str | None,
    path: str | None = None,
    *,
    strict: bool = False,
) -> HardwareSpec:
    """A spec from a mapping. ``strict`` (the catalogue: real GPUs) rejects a datasheet figure
    or measurement above the spec's peaks; otherwise (a file by path, a dict: maybe a what-if
    GPU) such figures are dropped and the spec's notes say which."""

    def bad(msg: str) -> SpecError:
        return SpecError(f"hw spec {where}: {msg}")

    if not isinstance(data, Mapping):
        raise bad(f"expected a mapping of fields, got {type(data).__name__}")
    for k in data:
        if k not in _KNOWN:
            raise bad(f"unknown field {k!r}{_did_you_mean(str(k), _KNOWN)}")
    kw: dict[str, Any] = {}

    for f in _STRINGS:
        v = data.get(f)
        if v is None:
            if f in ("name", "arch"):
                raise bad(f"missing field {f!r}")
            continue
        if not isinstance(v, (str, int, float)) or isinstance(v, bool) or not str(v).strip():
            raise bad(f"field {f!r} must be a non-empty string, got {v!r}")
        kw[f] = str(v)
    kw.setdefault("key", default_key or _slug(kw["name"]))
    for f in _LISTS:
        v = data.get(f) or []
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
            raise bad(f"field {f!r} must be a list of strings, got {v!r}")
        kw[f] = tuple(v)

    for base, (readable, scale, kind) in _QUANTITIES.items():
        used, v = _pick(data, base, readable, bad)
        if used is None or (v is None and base in _OPTIONAL):
            if base in _OPTIONAL:
                kw[base] = None
                continue
            alt = f" (or {base!r} in base units)" if readable else ""
            raise bad(f"missing field {readable or base!r}{alt}")
        x = _number(v, used, bad)
        lo_ok = x >= 0 if base in _NONNEG else x > 0
        if not lo_ok:
            want = "a number >= 0 (0: none)" if base in _NONNEG else "a positive number"
            raise bad(f"field {used!r} must be {want}, got {v!r}")
        x = x if used == base else x * scale
        if kind == "int":
            if x != int(x):
                raise bad(f"field {used!r} must be a whole number, got {v!r}")
            x = int(x)
        elif kind == "bytes":
            x = round(x)
        kw[base] = x

    for base, (readable, scale) in _MAPPINGS.items():
        used, v = _pick(data, base, readable, bad)
        if used is None:
            if base == "rates":
                raise bad(f"missing field {readable!r} (ops per clock per SM by unit)")
            kw[base] = {}
            continue
        if not isinstance(v, Mapping):
            raise bad(f"field {used!r} must be a mapping unit -> number, got {v!r}")
        m: dict[str, float] = {}
        for u, x in v.items():
            if u not in UNITS:
                raise bad(
                    f"unknown unit {u!r} in {used}{_did_you_mean(str(u), UNITS)}; "
                    f"units are {', '.join(UNITS)}"
                )
            x = _number(x, f"{used}.{u}", bad)
            if x <= 0:
                hint = " (omit a unit the GPU lacks)" if base == "rates" else ""
                raise bad(f"field '{used}.{u}' must be a positive number{hint}, got {x!r}")
            m[u] = x if used == base else x * scale
        kw[base] = m

    kw["measured"] = _measured(data.get("measured"), bad)
    kw["interconnect"] = parse_interconnect(data.get("interconnect"), bad)
    kw["latency"] = parse_latency(data.get("latency"), bad)
    kw["energy"] = parse_energy(data.get("energy"), bad, UNITS)
    if path is not None:
        kw["path"] = path
    if not strict:
        kw["notes"] = (*kw["notes"], *_drop_unreached(kw))
    token = _ORIGIN.set(where)
    try:
        return HardwareSpec(**kw)
    finally:
        _ORIGIN.reset(token)


def _measured(v: Any, bad) -> dict[str, float]:
    """``measured:`` maps ``<unit>_tflops`` / ``dram_bandwidth_gbs`` (readable) or ``<unit>`` /
    ``dram_bandwidth`` (ops/s, bytes/s) to the best rate measured on a real device."""
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise bad(f"field 'measured' must be a mapping, got {v!r}")
    out: dict[str, float] = {}
    names = UNITS + ("dram_bandwidth",)
    for k, x in v.items():
        k = str(k)
        if k in names:
            unit, scale = k, 1.0
        elif k.endswith("_tflops") and k[: -len("_tflops")] in UNITS:
            unit, scale = k[: -len("_tflops")], 1e12
        elif k == "dram_bandwidth_gbs":
            unit, scale = "dram_bandwidth", 1e9
        else:
            choices = [f"{u}_tflops" for u in UNITS] + ["dram_bandwidth_gbs", *names]
            raise bad(
                f"unknown key {k!r} in measured{_did_you_mean(k, choices)}; use "
                "<unit>_tflops or dram_bandwidth_gbs"
            )
        if unit in out:
            raise bad(f"measured gives {unit} twice")
        x = _number(x, f"measured.{k}", bad)
        if x <= 0:
            raise bad(f"field 'measured.{k}' must be a positive number, got {x!r}")
        out[unit] = x * scale
    return out


def _slug(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_") or "spec"

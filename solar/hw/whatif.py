"""What-if hardware: a catalogue spec with some quantities changed, e.g. an H100 with 2 TB/s of
DRAM bandwidth and a 100 MiB L2 (``--hw H100 --override dram_bandwidth=2TB/s,l2=100MiB``, or
``load_spec("H100").scaled(dram_bandwidth="2TB/s", l2="100MiB")``).

Each field of :func:`fields` is a quantity of the spec with its dimension; values are read by
:func:`solar.hw.quantity.parse_quantity` (a number in base units from Python, a string with
its unit, or a factor ``x1.5``). A compute unit's field (``tc_bf16=1500TFLOP/s``) sets its peak,
which becomes the per-SM per-clock rate at the spec's SM count and clock. Changing
``sm_count`` or ``max_clock_hz`` scales every peak, as on real hardware.

The datasheet figures and measurements of the original GPU (``datasheet_dense``,
``measured``) are kept only where the peak they describe is unchanged; the others are
dropped, and the spec's ``notes`` (stated in every bound's assumptions) say what changed and
which figures were dropped.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from typing import Any

from solar.hw.latency import LATENCY_KEYS
from solar.hw.quantity import Factor, parse_quantity

#: spec field -> dimension, for the plain quantities of a spec
_PLAIN: dict[str, str] = {
    "sm_count": "count",
    "max_clock_hz": "frequency",
    "dram_bandwidth": "bandwidth",
    "dram_capacity": "bytes",
    "l2_capacity": "bytes",
    "l2_bandwidth": "bandwidth",
    "smem_per_sm": "bytes",
    "l1_smem_per_sm": "bytes",
    "registers_per_sm": "bytes",
    "tdp_w": "power",
    "nvlink_bandwidth": "bandwidth",
}
#: short names accepted for a field
ALIASES: dict[str, str] = {"l2": "l2_capacity", "clock": "max_clock_hz"}
_BYTES = {f for f, d in _PLAIN.items() if d == "bytes"}
_BINARY = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1))


def fields(units: tuple[str, ...]) -> dict[str, str]:
    """Every field a what-if may change -> its dimension (compute units: their peak)."""
    return {**_PLAIN, **dict.fromkeys(units, "ops"), **dict.fromkeys(LATENCY_KEYS, "time")}


def parse_overrides(text: str | list[str] | None) -> dict[str, str]:
    """``"dram_bandwidth=2TB/s,l2=100MiB"`` (or several such strings) -> ``{field: value}``."""
    out: dict[str, str] = {}
    for chunk in [text] if isinstance(text, str) else text or []:
        for item in chunk.split(","):
            if not item.strip():
                continue
            name, eq, value = item.partition("=")
            if not eq or not name.strip() or not value.strip():
                raise ValueError(
                    f"--override {item.strip()!r}: write FIELD=VALUE, e.g. dram_bandwidth=2TB/s"
                )
            out[name.strip()] = value.strip()
    return out


def _field_name(name: str, known: dict[str, str], units: tuple[str, ...]) -> str:
    name = ALIASES.get(name, name)
    if name in known:
        return name
    close = difflib.get_close_matches(name, [*known, *ALIASES], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    listed = ", ".join([*_PLAIN, *LATENCY_KEYS]) + ", a compute unit's peak (" + ", ".join(units)
    raise ValueError(
        f"unknown hardware field {name!r}{hint}; fields: {listed}); short names: "
        + ", ".join(f"{a} = {f}" for a, f in ALIASES.items())
    )


def _value(spec, name: str, dimension: str, raw: Any) -> float:
    current = _current(spec, name)
    if isinstance(raw, str):
        try:
            v = parse_quantity(raw, dimension)
        except ValueError as e:
            raise ValueError(f"hardware field {name}={e}") from None
    elif isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise ValueError(f"hardware field {name}: give a number or a string, got {raw!r}")
    else:
        v = float(raw)
    if isinstance(v, Factor):
        v = current * v.value
    if not 0 <= v < float("inf") or (v == 0 and name != "nvlink_bandwidth"):
        raise ValueError(f"hardware field {name} must be positive, got {raw!r}")
    return v


def _current(spec, name: str) -> float:
    if name in spec.rates:
        return spec.peak(name)
    if name in LATENCY_KEYS:
        return spec.latency.get(name, 0.0)
    v = getattr(spec, name, None)
    return float(v) if v is not None else float("nan")


def _show(name: str, dimension: str, v: float) -> str:
    if dimension == "bytes":
        unit, size = next(((u, s) for u, s in _BINARY if v >= s), ("B", 1))
        return f"{v / size:.4g} {unit}"
    scale = {"bandwidth": (1e12, "TB/s"), "frequency": (1e6, "MHz"), "ops": (1e12, "TFLOP/s")}
    scale |= {"time": (1e-6, "us"), "power": (1, "W"), "count": (1, "")}
    div, unit = scale[dimension]
    return f"{v / div:.5g} {unit}".rstrip()


def with_fields(spec, changes: Mapping[str, Any]):
    """``spec`` with the quantities of ``changes`` (field -> value) set: a what-if GPU whose
    ``notes`` say what changed and which datasheet figures and measurements were dropped."""
    if not changes:
        return spec
    known = fields(spec.units)
    values: dict[str, float] = {}
    for name, raw in changes.items():
        f = _field_name(str(name), known, spec.units)
        values[f] = _value(spec, f, known[f], raw)
    kw: dict[str, Any] = {}
    plain = {f: v for f, v in values.items() if f in _PLAIN}
    for f, v in plain.items():
        if f == "sm_count":
            if v != int(v):
                raise ValueError(f"hardware field sm_count must be a whole number, got {v:g}")
            v = int(v)
        elif f in _BYTES:
            v = max(1, round(v))
        kw[f] = v
    if "smem_per_sm" in kw and "l1_smem_per_sm" not in kw:  # the combined L1 holds the carve-out
        kw["l1_smem_per_sm"] = max(kw["smem_per_sm"], spec.l1_smem_per_sm or 0)
    if "nvlink_bandwidth" in kw and spec.interconnect is not None:
        ic = spec.interconnect
        per_link = kw["nvlink_bandwidth"] / 2 / max(ic.nvlink_links, 1) / 1e9
        kw["interconnect"] = dataclasses.replace(ic, nvlink_link_gbs=per_link)
    sms = kw.get("sm_count", spec.sm_count)
    clock = kw.get("max_clock_hz", spec.max_clock_hz)
    rates = dict(spec.rates)
    for u in spec.units:
        if u in values:
            rates[u] = values[u] / (sms * clock)
    kw["rates"] = rates
    latency = dict(spec.latency)
    latency.update({k: v for k, v in values.items() if k in LATENCY_KEYS})
    kw["latency"] = latency
    shown = ", ".join(
        f"{f} {_show(f, known[f], _current(spec, f))} -> {_show(f, known[f], v)}"
        for f, v in values.items()
    )
    tag = ",".join(f"{f}={v}" if isinstance(v, str) else f"{f}={v:g}" for f, v in changes.items())
    return derive(spec, kw, name=f"{spec.name} (what-if: {shown})", key=f"{spec.key}[{tag}]",
                  what=f"what-if GPU from {spec.name}: {shown}")  # fmt: skip


def derive(spec, kw: dict[str, Any], *, name: str, key: str, what: str):
    """``dataclasses.replace(spec, **kw)`` as a hypothetical GPU named ``name``: the datasheet
    figures and measurements of ``spec`` whose peak changed are dropped, the rest kept (and
    checked again), and the new spec's notes say ``what`` and which figures were dropped."""
    draft = dataclasses.replace(spec, **kw, datasheet_dense={}, measured={})
    datasheet = {u: v for u, v in spec.datasheet_dense.items() if _same_peak(spec, draft, u)}
    measured = {u: v for u, v in spec.measured.items() if _same_peak(spec, draft, u)}
    dropped = [f"datasheet {u}" for u in spec.datasheet_dense if u not in datasheet]
    dropped += [f"measured {u}" for u in spec.measured if u not in measured]
    notes = [*spec.notes, what]
    if spec.energy is not None:
        dropped.append("energy calibration (measured on the real GPU)")
    if dropped:
        notes.append(
            f"figures of {spec.name} dropped (the peak they describe changed): "
            + ", ".join(dropped)
        )
    return dataclasses.replace(
        draft,
        name=name,
        key=key,
        aliases=(),
        datasheet_dense=datasheet,
        measured=measured,
        path=None,
        notes=tuple(notes),
        energy=None,
    )


def _same_peak(old, new, unit: str) -> bool:
    if unit == "dram_bandwidth":
        return old.dram_bandwidth == new.dram_bandwidth
    return new.has_unit(unit) and new.peak(unit) == old.peak(unit)

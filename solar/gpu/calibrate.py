"""``solar calibrate``: measure a GPU's ceilings and write a spec with them beside the datasheet's.

Measured (CUDA events, warm-up, median of repetitions; random data, never zeros):

* ``dram_bandwidth`` -- a device-to-device copy of ``max(1 GiB, 8 x L2)``, bytes read + written;
* L2 bandwidth -- copies inside an L2-resident working set (half the L2), replayed from a CUDA
  graph; reported (a YAML comment and the JSON), not a spec field: the spec's
  ``l2_bandwidth`` is an upper bound and a measurement is not;
* GEMM rates through the libraries: fp32 (``cuda_fp32``, tf32 off), tf32 (``tc_tf32``), bf16,
  fp16, fp8 (``torch._scaled_mm``, when the GPU has fp8), int8 (``torch._int_mm``) and fp64
  (``tc_fp64``), ``2 n^3`` ops for an ``n^3`` product;
* ``sfu`` -- a Triton kernel of independent ``exp2`` chains (MUFU.EX2), when Triton is there;
* the latency floors ``kernel_launch`` and ``sm_sync`` (:mod:`solar.gpu.calibrate_latency`),
  written to the spec's ``latency:`` block (:mod:`solar.hw.latency`).

The spec written is the datasheet spec of the GPU (the catalogue's, matched as ``hw="auto"``
does, or ``--base``) with the measurements under ``measured:`` (``<unit>_tflops``,
``dram_bandwidth_gbs``), so ``load_spec(path)`` gives the same peaks and ``spec.measured``.
A measurement above its peak would make the loader reject the file: it is clamped to the peak
and reported (check the clock, the rate, or the spec). For a GPU the catalogue lacks, a spec is
derived: per-SM rates are the highest of catalogue GPUs with the same compute capability (the
same SM design), times the device's SM count and maximum clock (``nvidia-smi``); DRAM bandwidth
from the memory clock and bus width; capacities from the device properties. Check it against
the vendor's datasheet before relying on it.
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
import yaml

from solar.frozen import Frozen
from solar.gpu.calibrate_energy import EnergyCalibration, EnergyRun, measure_energy
from solar.gpu.calibrate_gemm import gemm_call, tf32_mode
from solar.gpu.calibrate_latency import measure_launch, measure_sync, sync_to_write
from solar.gpu.measure import DeviceInfo, detect_spec, device_info, time_fn
from solar.hw import SpecError, list_specs, load_spec
from solar.hw.energy import EnergyCosts, energy_yaml_block
from solar.hw.latency import LATENCY_KEYS, latency_yaml_block
from solar.hw.spec import UNITS, HardwareSpec
from solar.viewable import Viewable

__all__ = [
    "GEMM_UNITS",
    "Calibration",
    "Measurement",
    "calibrate",
    "derive_spec",
    "spec_yaml",
]

#: unit -> (label, how) of the GEMM measured for it
GEMM_UNITS: dict[str, str] = {
    "cuda_fp32": "fp32",
    "tc_tf32": "tf32",
    "tc_bf16": "bf16",
    "tc_fp16": "fp16",
    "tc_fp8": "fp8",
    "tc_int8": "int8",
    "tc_fp64": "fp64",
}


@dataclass(frozen=True)
class Measurement:
    """One measured ceiling (per second: bytes/s or ops/s), against its spec peak."""

    key: str  # a unit, "dram_bandwidth" or "l2_bandwidth"
    value: float | None
    peak: float | None
    method: str
    raw: float | None = None  # before clamping to the peak
    error: str | None = None

    @property
    def clamped(self) -> bool:
        return self.raw is not None and self.value is not None and self.raw > self.value

    @property
    def fraction(self) -> float | None:
        if self.value is None or not self.peak:
            return None
        return (self.raw or self.value) / self.peak

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["clamped"] = self.clamped
        d["fraction_of_peak"] = self.fraction
        return d


def _clamp(key: str, raw: float, peak: float | None, method: str) -> Measurement:
    if peak is not None and raw > peak:
        return Measurement(key, peak, peak, method, raw=raw)
    return Measurement(key, raw, peak, method, raw=raw)


# ---------------------------------------------------------------------------------------------
# Measurements (CUDA)


def _median_seconds(fn: Callable[[], object], device, budget_s: float, min_reps: int = 5) -> float:
    return time_fn(fn, device=device, flush=False, budget_s=budget_s, min_reps=min_reps).median_s


def measure_dram(device, l2_bytes: int, *, quick: bool = False, budget_s: float = 0.5) -> tuple:
    n = max((256 if quick else 1024) * 2**20, 8 * l2_bytes) // 4
    src = torch.randn(n, device=device)
    dst = torch.empty_like(src)
    t = _median_seconds(lambda: dst.copy_(src), device, budget_s)
    nbytes = 2 * 4 * n
    return nbytes / t, f"device-to-device copy of {nbytes / 2 / 2**20:.0f} MiB, read + write"


def measure_l2(device, l2_bytes: int, *, budget_s: float = 0.3, copies: int = 32) -> tuple:
    n = max(l2_bytes // 4 // 4, 1 << 16)  # src + dst = half the L2
    src = torch.randn(n, device=device)
    dst = torch.empty_like(src)

    def many():
        for _ in range(copies):
            dst.copy_(src)

    how = "graph of"
    try:
        s = torch.cuda.Stream(device)
        s.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(s):
            many()
        torch.cuda.current_stream(device).wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            many()
        run = graph.replay
    except Exception:
        run, how = many, "loop of"
    t = _median_seconds(run, device, budget_s)
    nbytes = 2 * 4 * n * copies
    return nbytes / t, (
        f"{how} {copies} copies of {4 * n / 2**20:.1f} MiB inside the L2 (read + write); "
        "launch gaps included, so a lower estimate"
    )


def measure_gemm(device, label: str, *, quick: bool = False, budget_s: float = 0.5) -> tuple:
    n = 4096 if quick else 8192
    with tf32_mode(label):
        fn = gemm_call(device, label, n)
        fn()
        torch.cuda.synchronize(device)
        t = _median_seconds(fn, device, budget_s, min_reps=3)
    return 2 * n**3 / t, f"{n}^3 {label} GEMM through torch (random inputs)"


_SFU_KERNEL = None


def _sfu_kernel():
    global _SFU_KERNEL
    if _SFU_KERNEL is None:
        import triton
        import triton.language as tl

        @triton.jit
        def exp_chains(x_ptr, out_ptr, n_iter, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            a, b, c, d = x, x + 0.125, x + 0.25, x + 0.375
            e, f, g, h = x + 0.5, x + 0.625, x + 0.75, x + 0.875
            for _ in range(n_iter):
                a, b, c, d = tl.exp2(-a), tl.exp2(-b), tl.exp2(-c), tl.exp2(-d)
                e, f, g, h = tl.exp2(-e), tl.exp2(-f), tl.exp2(-g), tl.exp2(-h)
            tl.store(out_ptr + offs, a + b + c + d + e + f + g + h)

        _SFU_KERNEL = exp_chains
    return _SFU_KERNEL


def measure_sfu(device, sm_count: int, *, quick: bool = False, budget_s: float = 0.3) -> tuple:
    kernel = _sfu_kernel()
    block = 1024
    n = sm_count * 16 * block
    n_iter = 256 if quick else 1024
    x = torch.rand(n, device=device)
    out = torch.empty_like(x)

    def fn():
        kernel[(n // block,)](x, out, n_iter, BLOCK=block)

    fn()
    torch.cuda.synchronize(device)
    if not bool(torch.isfinite(out).all()):
        raise RuntimeError("the exp2 kernel produced non-finite values")
    t = _median_seconds(fn, device, budget_s)
    ops = n * n_iter * 8
    return ops / t, f"Triton kernel of 8 independent exp2 chains x {n_iter} over {n} threads"


# ---------------------------------------------------------------------------------------------
# Specs for GPUs the catalogue lacks


def derive_spec(info: DeviceInfo, catalogue: Sequence[HardwareSpec] | None = None):
    """A spec for a GPU the catalogue lacks, from catalogue GPUs of the same compute capability
    (their highest per-SM rates: the same SM design) and the device's own facts (module
    docstring). Raises SpecError naming what is missing."""
    catalogue = list(catalogue) if catalogue is not None else list_specs()
    sibs = [s for s in catalogue if s.compute_capability == info.compute_capability]
    if not sibs:
        raise SpecError(
            f"no catalogue GPU has compute capability {info.compute_capability} to take per-SM "
            f"rates from for {info.name!r}; pass --base NAME (a catalogue GPU of the same design)"
        )
    clock = info.max_clock_mhz
    if not clock or not info.sm_count:
        raise SpecError(
            f"{info.name!r}: the maximum SM clock or the SM count is unknown (nvidia-smi did not "
            "answer); pass --base NAME"
        )
    mem_clock = info.memory_clock_mhz or info.smi_float("clocks.max.mem")
    if not mem_clock or not info.memory_bus_width:
        raise SpecError(
            f"{info.name!r}: the memory clock or bus width is unknown, so no DRAM bandwidth "
            "peak can be derived; pass --base NAME"
        )
    units = sorted({u for s in sibs for u in s.rates}, key=UNITS.index)
    rates = {u: max(s.rates[u] for s in sibs if u in s.rates) for u in units}
    bw = mem_clock * 1e6 * 2 * info.memory_bus_width / 8
    l1 = max(s.l1_smem_per_sm or s.smem_per_sm for s in sibs)
    smem = info.smem_per_sm or max(s.smem_per_sm for s in sibs)
    tdp = info.smi_float("power.max_limit") or max(s.tdp_w for s in sibs)
    return HardwareSpec(
        name=info.name,
        key=re.sub(r"[^0-9a-z]+", "_", info.name.lower()).strip("_") or "gpu",
        aliases=(),
        arch=sibs[0].arch,
        sm_count=int(info.sm_count),
        max_clock_hz=clock * 1e6,
        rates=rates,
        dram_bandwidth=bw,
        dram_capacity=int(info.total_memory or max(s.dram_capacity for s in sibs)),
        l2_capacity=int(info.l2_bytes or max(s.l2_capacity for s in sibs)),
        l2_bandwidth=None,
        smem_per_sm=int(min(smem, l1)),
        registers_per_sm=max(s.registers_per_sm for s in sibs),
        tdp_w=float(tdp),
        nvlink_bandwidth=0.0,
        sources=(
            f"derived by solar calibrate from the device ({info.summary()}) and the per-SM rates "
            f"of {', '.join(s.key for s in sibs)} (compute capability "
            f"{info.compute_capability}); DRAM peak = memory clock {mem_clock:.0f} MHz x 2 x "
            f"{info.memory_bus_width}-bit / 8; NVLink unknown (0). Check against the datasheet.",
        ),
        l1_smem_per_sm=int(l1),
        compute_capability=info.compute_capability,
    )


# ---------------------------------------------------------------------------------------------
# The calibration and its YAML


@dataclass(frozen=True)
class Calibration(Frozen, Viewable):
    """One GPU's measured ceilings against its datasheet spec ``base`` (frozen)."""

    device: DeviceInfo
    base: HardwareSpec
    base_how: str
    results: tuple[Measurement, ...] = ()
    seconds: float = 0.0
    date: str = field(default_factory=lambda: datetime.date.today().isoformat())
    # the energy costs' runs (solar.gpu.calibrate_energy; None: not asked for)
    energy: EnergyCalibration | None = None

    def measured(self) -> dict[str, float]:
        """What goes under ``measured:`` (units and ``dram_bandwidth``; per second)."""
        return {
            r.key: r.value
            for r in self.results
            if r.value is not None and (r.key in UNITS or r.key == "dram_bandwidth")
        }

    def latency(self) -> tuple[dict[str, float], dict[str, str]]:
        """What goes under ``latency:`` (seconds) and a note per key: the measured floors,
        except an ``sm_sync`` above the spec's own on a GPU with clusters (see
        :func:`solar.gpu.calibrate_latency.sync_to_write`)."""
        values: dict[str, float] = dict(self.base.latency)  # kept where not measured
        notes = {k: "the spec's own (not measured)" for k in values}
        for r in self.results:
            if r.key not in LATENCY_KEYS or r.value is None:
                continue
            v, note = r.value, "measured by solar calibrate"
            if r.key == "sm_sync":
                v, kept = sync_to_write(
                    r.value, self.base.latency.get("sm_sync", 0.0), self.device.compute_capability
                )
                note = f"measured {r.value * 1e6:.3g} us; {kept}" if kept else note
            values[r.key], notes[r.key] = v, note
        return values, notes

    def to_dict(self) -> dict:
        return {
            "schema": "solar.calibrate/1",
            "device": self.device.to_dict(),
            "base": self.base.key,
            "base_how": self.base_how,
            "date": self.date,
            "seconds": self.seconds,
            "results": [r.to_dict() for r in self.results],
            "energy": None if self.energy is None else self.energy.to_dict(),
        }

    def to_yaml(self) -> str:
        latency, notes = self.latency()
        costs = getattr(self.energy, "costs", None)
        return spec_yaml(
            self.base,
            self.measured(),
            header=self._header(),
            latency=latency,
            notes=notes,
            energy=costs,
        )

    def _header(self) -> list[str]:
        d = self.device
        clocks = ", ".join(
            f"{k} {d.smi[k]} MHz"
            for k in ("clocks.sm", "clocks.max.sm", "clocks.mem")
            if d.smi.get(k)
        )
        lines = [
            f"Measured by `solar calibrate` on {self.date}: {d.summary()}.",
            "Medians of timed repetitions with CUDA events after warm-up, on random data.",
        ]
        if clocks:
            lines.append(f"Clocks read before measuring: {clocks}.")
        lines.append(f"Datasheet spec: {self.base.key} ({self.base_how}).")
        for r in self.results:
            if r.key == "l2_bandwidth" and r.value is not None:
                lines.append(
                    f"L2 bandwidth (measured; not a spec field): {r.value / 1e9:,.0f} GB/s "
                    f"({r.method})."
                )
            elif r.key in LATENCY_KEYS and r.value is not None:
                default = self.base.latency.get(r.key)
                if default and r.value < default:
                    lines.append(
                        f"WARNING: {r.key} measured {r.value * 1e6:.3g} us, below the spec's "
                        f"{default * 1e6:.3g} us: the catalogue's default is not a lower bound "
                        "for this GPU; lower it in the catalogue (solar/hw/catalog/)."
                    )
            elif r.clamped:
                lines.append(
                    f"{r.key}: measured {r.raw:.6g}/s above the peak {r.peak:.6g}/s, clamped: "
                    "check the clock, rate or bandwidth of the spec."
                )
            elif r.error:
                lines.append(f"{r.key}: not measured ({r.error}).")
        if self.energy is not None:
            lines.append(f"Energy read from the GPU's counter ({self.energy.meter}).")
            lines += [
                f"energy {r.key}: not measured ({r.error})." for r in self.energy.runs if r.error
            ]
            if self.energy.costs is None:
                lines.append("energy: no costs (the idle or DRAM run failed): no energy block.")
        return lines

    def write(self, path: str | Path) -> Path:
        """Write the spec YAML (checked by loading it back) to ``path``."""
        path = Path(path)
        text = self.to_yaml()
        tmp = path.with_name(path.name + ".tmp.yaml")
        tmp.write_text(text)
        try:
            load_spec(tmp, strict=True)  # a real GPU: its measurements must fit its peaks
        except SpecError as e:
            tmp.unlink(missing_ok=True)
            raise SpecError(f"the calibrated spec does not load: {e}") from e
        tmp.replace(path)
        return path


def _readable(spec: HardwareSpec) -> dict:
    d: dict = {
        "name": spec.name,
        "aliases": [],
        "arch": spec.arch,
    }
    if spec.compute_capability:
        d["compute_capability"] = spec.compute_capability
    d["sm_count"] = spec.sm_count
    d["max_clock_mhz"] = spec.max_clock_hz / 1e6
    if spec.memory_type:
        d["memory_type"] = spec.memory_type
    d["dram_bandwidth_gbs"] = spec.dram_bandwidth / 1e9
    d["dram_capacity_gb"] = spec.dram_capacity / 1e9
    d["l2_capacity_mib"] = spec.l2_capacity / 2**20
    if spec.l2_bandwidth is not None:
        d["l2_bandwidth_gbs"] = spec.l2_bandwidth / 1e9
    d["smem_per_sm_kib"] = spec.smem_per_sm / 2**10
    d["l1_smem_per_sm_kib"] = (spec.l1_smem_per_sm or spec.smem_per_sm) / 2**10
    d["registers_per_sm_kib"] = spec.registers_per_sm / 2**10
    d["tdp_w"] = spec.tdp_w
    d["nvlink_bandwidth_gbs"] = spec.nvlink_bandwidth / 1e9
    d["rates_per_sm_per_clock"] = dict(spec.rates)
    if spec.datasheet_dense:
        d["datasheet_dense_tflops"] = {u: v / 1e12 for u, v in spec.datasheet_dense.items()}
    d["sources"] = list(spec.sources)
    return d


def _measured_block(measured: dict[str, float]) -> dict:
    out = {}
    if "dram_bandwidth" in measured:
        out["dram_bandwidth_gbs"] = round(measured["dram_bandwidth"] / 1e9, 3)
    for u in UNITS:
        if u in measured:
            out[f"{u}_tflops"] = round(measured[u] / 1e12, 4)
    return out


_TOP_KEY = re.compile(r"^[A-Za-z_][\w]*\s*:")


def _strip_block(text: str, key: str) -> str:
    """Remove the top-level ``key:`` block (the key's line and its indented/blank followers)."""
    out, skipping = [], False
    for line in text.splitlines():
        if re.match(rf"^{re.escape(key)}\s*:", line):
            skipping = True
            continue
        if skipping and (_TOP_KEY.match(line) or (line.startswith("#") and line.strip())):
            skipping = False
        if not skipping:
            out.append(line)
    return "\n".join(out).rstrip() + "\n"


def spec_yaml(
    spec: HardwareSpec,
    measured: dict[str, float],
    *,
    header: Sequence[str] = (),
    latency: dict[str, float] | None = None,
    notes: dict[str, str] | None = None,
    energy: EnergyCosts | None = None,
) -> str:
    """YAML of ``spec`` with ``measured`` (per second, by unit / ``dram_bandwidth``) as its
    ``measured:`` section and ``latency`` (seconds, :mod:`solar.hw.latency`) as its
    ``latency:`` block when given, and ``energy`` (:mod:`solar.hw.energy`) as its ``energy:``
    block when given. A catalogue spec keeps its file's text and comments (aliases
    dropped, so the file can sit beside the catalogue without clashing); others are written
    out."""
    head = "".join(f"# {h}\n" for h in header)
    block = yaml.safe_dump({"measured": _measured_block(measured)}, sort_keys=False)
    if latency:
        block += latency_yaml_block(latency, notes or {})
    if energy is not None:
        block += energy_yaml_block(energy)
    text = None
    if spec.path and Path(spec.path).is_file():
        text = Path(spec.path).read_text(encoding="utf-8")
        text = _strip_block(text, "measured")
        if latency:
            text = _strip_block(text, "latency")
        if energy is not None:
            text = _strip_block(text, "energy")
        lines = text.splitlines()
        alias = [i for i, ln in enumerate(lines) if re.match(r"^aliases\s*:", ln)]
        if len(alias) == 1 and "[" in lines[alias[0]] and "]" in lines[alias[0]]:
            lines[alias[0]] = "aliases: []   # dropped by solar calibrate (the catalogue has them)"
            text = "\n".join(lines) + "\n"
        elif alias:
            text = None  # a block list of aliases: write the spec out instead
    if text is None:
        readable = _readable(spec)
        if spec.latency and not latency:
            readable["latency"] = {f"{k}_us": v * 1e6 for k, v in spec.latency.items()}
        if spec.energy is not None and energy is None:
            readable["energy"] = {
                "idle_w": spec.energy.idle_w,
                "op_pj": {u: j * 1e12 for u, j in spec.energy.op_j.items()},
                "dram_pj_per_byte": spec.energy.dram_j_per_byte * 1e12,
                "measured_on": spec.energy.measured_on,
                "method": spec.energy.method,
            }
        text = yaml.safe_dump(readable, sort_keys=False, width=100)
    return head + text.rstrip() + "\n\n" + block


def calibrate(
    device: str | torch.device | None = None,
    *,
    base=None,
    quick: bool = False,
    units: Sequence[str] | None = None,
    latency: bool = True,
    energy: bool = False,
    log: Callable[[str], None] | None = None,
) -> Calibration:
    """Measure the ceilings of ``device`` (default: the current CUDA GPU). ``base``: the
    datasheet spec to compare with and write (default: the catalogue's spec of the device,
    else one derived from it). ``units`` limits the compute units measured; ``latency``
    measures the two latency floors too, ``energy`` the energy costs
    (:mod:`solar.gpu.calibrate_energy`: about 20 s of long runs)."""
    if not torch.cuda.is_available():
        raise ValueError("solar calibrate needs a CUDA GPU (torch sees none)")
    dev = torch.device(device or "cuda")
    t_start = time.perf_counter()
    info = device_info(dev)
    if base is not None:
        spec, how = load_spec(base), "given"
    else:
        try:
            spec, how = detect_spec(info)
        except SpecError:
            spec, how = derive_spec(info), "derived (not in the catalogue)"
    results: list[Measurement] = []
    say = log or (lambda s: None)
    l2 = int(info.l2_bytes or spec.l2_capacity)

    def run(key: str, peak: float | None, fn: Callable[[], tuple]) -> None:
        say(f"measuring {key} ...")
        try:
            value, method = fn()
            results.append(_clamp(key, value, peak, method))
        except Exception as e:
            msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
            results.append(Measurement(key, None, peak, "", error=f"{type(e).__name__}: {msg}"))
        finally:
            torch.cuda.empty_cache()

    def run_latency(key: str, fn: Callable[[], tuple]) -> None:
        say(f"measuring {key} ...")
        try:
            value, method = fn()
            results.append(Measurement(key, value, spec.latency.get(key), method, raw=value))
        except Exception as e:
            msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
            peak = spec.latency.get(key)
            results.append(Measurement(key, None, peak, "", error=f"{type(e).__name__}: {msg}"))

    run("dram_bandwidth", spec.dram_bandwidth, lambda: measure_dram(dev, l2, quick=quick))
    run("l2_bandwidth", spec.l2_bandwidth, lambda: measure_l2(dev, l2))
    chosen = list(units) if units is not None else [*GEMM_UNITS, "sfu"]
    for u in chosen:
        if not spec.has_unit(u):
            continue
        if u == "sfu":
            run(u, spec.peak(u), lambda: measure_sfu(dev, spec.sm_count, quick=quick))
        elif u in GEMM_UNITS:
            label = GEMM_UNITS[u]
            run(u, spec.peak(u), lambda label=label: measure_gemm(dev, label, quick=quick))
    if latency:
        run_latency("kernel_launch", lambda: measure_launch(dev, reps=10 if quick else 30))
        run_latency("sm_sync", lambda: measure_sync(dev, round_trips=5000 if quick else 20000))
    costs = None
    if energy:
        try:
            costs = measure_energy(dev, info, spec, quick=quick, log=say)
        except ValueError as e:  # no energy counter: the other ceilings still count
            costs = EnergyCalibration((EnergyRun("meter", 0.0, 0.0, error=str(e)),), None, "none")
    return Calibration(info, spec, how, results, time.perf_counter() - t_start, energy=costs)

"""``solar calibrate --energy``: the energy costs of a GPU spec (:mod:`solar.hw.energy`).

Each measurement runs one long kernel over and over for ``seconds`` (2 s; 1 s with ``quick``)
and reads the GPU's cumulative energy counter before and after (NVML's
``nvmlDeviceGetTotalEnergyConsumption``, millijoules since the driver loaded, through the
``nvidia-ml-py`` package; else ``nvidia-smi --query-gpu=total_energy_consumption``):

* ``idle`` -- nothing runs (a sleep), before the kernels and after them: the lower of the two
  powers is the spec's ``idle_w`` (the idle GPU's static power);
* ``dram`` -- a device-to-device copy of ``max(1 GiB, 8 x L2)``: J per DRAM byte (read +
  written) = (energy - idle power x time) / bytes;
* one GEMM per tensor-core rate the GPU has (bf16, fp16, fp8, tf32, int8: ``8192^3``, inputs
  uniform in [0, 1) as KernelBench's ``torch.rand``: no sign bits toggle, which should cost
  less than signed normal data) and an FMA loop (a Triton kernel of independent fp32 FMA
  chains; an IEEE fp32 GEMM without Triton) for ``cuda_fp32``: J per op = (energy - idle
  power x time - the kernel's compulsory DRAM bytes x J per byte) / ops.

What is left above idle power is charged to the kernel's work, so a floor built on these costs
holds at the energy efficiency of this GPU's best measured kernels (long, large, power-capped
where the GPU caps), not as a physical law; a program running them at the measured rate spends
exactly its floor's dynamic energy. The counter is sampled by the driver (its readings are
coarse in time): every run lasts at least a second so that its resolution does not matter.
"""

from __future__ import annotations

import datetime
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from solar.frozen import Frozen
from solar.gpu.calibrate_gemm import gemm_call, tf32_mode
from solar.gpu.measure import DeviceInfo
from solar.hw.energy import EnergyCosts

__all__ = [
    "ENERGY_GEMMS",
    "EnergyCalibration",
    "EnergyMeter",
    "EnergyRun",
    "cost_per_item",
    "idle_run",
    "measure_energy",
    "run_for",
]

#: the rates whose energy per op a GEMM measures, and its label (solar.gpu.calibrate)
ENERGY_GEMMS: dict[str, str] = {
    "tc_bf16": "bf16",
    "tc_fp16": "fp16",
    "tc_fp8": "fp8",
    "tc_tf32": "tf32",
    "tc_int8": "int8",
}
_ITEMSIZE = {"bf16": 2, "fp16": 2, "fp8": 1, "tf32": 4, "int8": 1, "fp32": 4}
_OUT_ITEMSIZE = {"fp8": 2, "int8": 4}  # fp8 writes bf16, int8 int32


class EnergyMeter:
    """The GPU's cumulative energy counter in joules (``read()``), and its SM clock (MHz) when
    NVML answers (``clock_mhz()``); ``how`` says which source."""

    def __init__(self, read: Callable[[], float], how: str, clock=None) -> None:
        self.read = read
        self.how = how
        self._clock = clock

    def clock_mhz(self) -> float | None:
        try:
            return float(self._clock()) if self._clock is not None else None
        except Exception:
            return None

    @classmethod
    def open(cls, info: DeviceInfo) -> EnergyMeter:
        """The counter of the GPU ``info`` describes: NVML, else nvidia-smi; a one-line
        ValueError when neither answers."""
        errors = []
        try:
            return cls._nvml(info)
        except Exception as e:  # no package, no driver library, an old GPU
            errors.append(f"NVML: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        try:
            return cls._smi(info)
        except Exception as e:
            errors.append(f"nvidia-smi: {e}")
        raise ValueError(
            "no energy counter: " + "; ".join(errors) + " (install nvidia-ml-py: pip install "
            "nvidia-ml-py, or the wheel in bench/wheels/)"
        )

    @classmethod
    def _nvml(cls, info: DeviceInfo) -> EnergyMeter:
        import pynvml

        pynvml.nvmlInit()
        uuid = info.smi.get("uuid")
        h = None
        if uuid:  # CUDA_VISIBLE_DEVICES may renumber: the UUID names the device
            try:
                name = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
                h = pynvml.nvmlDeviceGetHandleByUUID(name.encode())
            except Exception:
                h = None
        if h is None:
            h = pynvml.nvmlDeviceGetHandleByIndex(info.index or 0)
        pynvml.nvmlDeviceGetTotalEnergyConsumption(h)  # fails here on GPUs without it
        return cls(
            lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h) * 1e-3,
            "NVML nvmlDeviceGetTotalEnergyConsumption",
            lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
        )

    @classmethod
    def _smi(cls, info: DeviceInfo) -> EnergyMeter:
        exe = shutil.which("nvidia-smi")
        if exe is None:
            raise ValueError("not found")
        target = info.smi.get("uuid") or str(info.index or 0)

        def read() -> float:
            out = subprocess.run(
                [
                    exe,
                    "-i",
                    target,
                    "--query-gpu=total_energy_consumption",
                    "--format=csv,noheader,nounits",
                ],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout.strip()
            return float(out.splitlines()[0]) * 1e-3  # mJ

        read()
        return cls(read, "nvidia-smi --query-gpu=total_energy_consumption")


@dataclass(frozen=True)
class EnergyRun(Frozen):
    """One measured run: ``joules`` over ``seconds`` (the counter's difference), the ``items``
    done (ops of ``key``'s rate, or DRAM bytes for ``dram``; 0 idle) and the compulsory DRAM
    bytes of the work (``dram_bytes``); the SM clock read at its end."""

    key: str  # "idle", "dram" or a rate
    seconds: float
    joules: float
    items: float = 0.0
    dram_bytes: float = 0.0
    calls: int = 0
    method: str = ""
    clock_mhz: float | None = None
    error: str | None = None

    @property
    def power_w(self) -> float | None:
        return self.joules / self.seconds if self.error is None and self.seconds > 0 else None

    def to_dict(self) -> dict:
        return {**self.__dict__, "power_w": self.power_w}


def cost_per_item(run: EnergyRun, idle_w: float, dram_j_per_byte: float = 0.0) -> float:
    """Joules per item of ``run`` above idle: (energy - idle W x seconds - compulsory DRAM
    bytes x J per byte) / items; never below 0 (a run at idle power costs nothing)."""
    if not run.items > 0:
        raise ValueError(f"run {run.key!r} did no work to divide its energy by")
    above = run.joules - idle_w * run.seconds - run.dram_bytes * dram_j_per_byte
    return max(above, 0.0) / run.items


@dataclass(frozen=True)
class EnergyCalibration(Frozen):
    """The runs of one energy calibration and the costs they give (``costs``: None when the
    idle or DRAM runs failed)."""

    runs: tuple[EnergyRun, ...]
    costs: EnergyCosts | None
    meter: str
    date: str = field(default_factory=lambda: datetime.date.today().isoformat())

    def to_dict(self) -> dict:
        return {
            "meter": self.meter,
            "date": self.date,
            "runs": [r.to_dict() for r in self.runs],
            "costs": None if self.costs is None else self.costs.to_dict(),
        }


# ---------------------------------------------------------------------------------------------
# Runs


def run_for(fn: Callable[[], object], seconds: float, device, meter: EnergyMeter):
    """(seconds, joules, calls, clock) of calling ``fn`` back to back for ``seconds``."""
    for _ in range(3):  # warm-up: libraries, clocks
        fn()
    torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize(device)
    per_call = max(time.perf_counter() - t0, 1e-6)
    batch = max(1, int(0.05 / per_call))  # ~50 ms between host checks
    calls = 0
    e0, t0 = meter.read(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(batch):
            fn()
        calls += batch
    clock = meter.clock_mhz()  # while the last batch still runs
    torch.cuda.synchronize(device)
    t1 = time.perf_counter()
    return t1 - t0, meter.read() - e0, calls, clock


def idle_run(seconds: float, device, meter: EnergyMeter) -> EnergyRun:
    torch.cuda.synchronize(device)
    time.sleep(0.2)  # let the last kernel's power settle
    e0, t0 = meter.read(), time.perf_counter()
    time.sleep(seconds)
    t, e = time.perf_counter() - t0, meter.read() - e0
    return EnergyRun("idle", t, e, clock_mhz=meter.clock_mhz(), method=f"sleep {seconds:g} s")


_FMA_KERNEL = None


def _fma_kernel():
    global _FMA_KERNEL
    if _FMA_KERNEL is None:
        import triton
        import triton.language as tl

        @triton.jit
        def fma_chains(x_ptr, out_ptr, n_iter, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            a, b, c, d = x, x + 0.125, x + 0.25, x + 0.375
            e, f, g, h = x + 0.5, x + 0.625, x + 0.75, x + 0.875
            for _ in range(n_iter):  # 8 independent FMA chains (a*k + m fuses into one FMA)
                a, b, c, d = (
                    a * 0.999 + 0.001,
                    b * 0.999 + 0.001,
                    c * 0.999 + 0.001,
                    d * 0.999 + 0.001,
                )
                e, f, g, h = (
                    e * 0.999 + 0.001,
                    f * 0.999 + 0.001,
                    g * 0.999 + 0.001,
                    h * 0.999 + 0.001,
                )
            tl.store(out_ptr + offs, a + b + c + d + e + f + g + h)

        _FMA_KERNEL = fma_chains
    return _FMA_KERNEL


def fma_call(
    device, sm_count: int, n_iter: int = 4096
) -> tuple[Callable[[], object], float, float, str]:
    """The FMA loop: (function, fp32 ops per call, DRAM bytes per call, how)."""
    kernel = _fma_kernel()
    block = 1024
    n = sm_count * 16 * block
    x = torch.rand(n, device=device)
    out = torch.empty_like(x)

    def fn():
        kernel[(n // block,)](x, out, n_iter, BLOCK=block)

    fn()
    torch.cuda.synchronize(device)
    if not bool(torch.isfinite(out).all()):
        raise RuntimeError("the FMA kernel produced non-finite values")
    how = f"Triton kernel of 8 independent fp32 FMA chains x {n_iter} over {n} threads"
    return fn, 2.0 * 8 * n_iter * n, 8.0 * n, how


def measure_energy(
    device,
    info: DeviceInfo,
    spec,
    *,
    quick: bool = False,
    rates: Sequence[str] | None = None,
    log: Callable[[str], None] | None = None,
) -> EnergyCalibration:
    """The energy calibration of ``device`` (module docstring) against ``spec`` (the rates it
    has); ``rates`` limits the op rates measured."""
    say = log or (lambda s: None)
    meter = EnergyMeter.open(info)
    seconds = 1.0 if quick else 2.0
    n = 8192  # the largest, most efficient GEMMs even when quick: the cheapest J/op measured
    runs: list[EnergyRun] = []

    def run(key: str, make: Callable[[], tuple]) -> None:
        say(f"measuring energy: {key} ...")
        try:
            fn, items, nbytes, how, mode = make()
            with mode:
                t, e, calls, clock = run_for(fn, seconds, device, meter)
            runs.append(
                EnergyRun(key, t, e, items * calls, nbytes * calls, calls, how, clock_mhz=clock)
            )
        except Exception as e:
            msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
            runs.append(EnergyRun(key, 0.0, 0.0, error=f"{type(e).__name__}: {msg}"))
        finally:
            torch.cuda.empty_cache()

    def copy():
        l2 = int(info.l2_bytes or spec.l2_capacity)
        m = max((256 if quick else 1024) * 2**20, 8 * l2) // 4
        src = torch.randn(m, device=device)
        dst = torch.empty_like(src)
        nbytes = 8.0 * m
        how = f"device-to-device copy of {4 * m / 2**20:.0f} MiB, read + write"
        return (lambda: dst.copy_(src)), nbytes, 0.0, how, tf32_mode("")

    def gemm(label: str):
        def make():
            mode = tf32_mode(label)
            with mode:
                fn = gemm_call(device, label, n, positive=True)
            nbytes = (2 * _ITEMSIZE[label] + _OUT_ITEMSIZE.get(label, _ITEMSIZE[label])) * n * n
            return fn, 2.0 * n**3, float(nbytes), f"{n}^3 {label} GEMM through torch", mode

        return make

    def fma():
        try:
            fn, ops, nbytes, how = fma_call(device, spec.sm_count, 1024 if quick else 4096)
            return fn, ops, nbytes, how, tf32_mode("")
        except ImportError:  # no Triton: an IEEE fp32 GEMM runs on the FMA pipe too
            return gemm("fp32")()

    runs.append(idle_run(seconds, device, meter))
    run("dram", copy)
    wanted = list(rates) if rates is not None else [*ENERGY_GEMMS, "cuda_fp32"]
    for rate in wanted:
        if not spec.has_unit(rate):
            continue
        if rate == "cuda_fp32":
            run(rate, fma)
        elif rate in ENERGY_GEMMS:
            run(rate, gemm(ENERGY_GEMMS[rate]))
    runs.append(idle_run(seconds, device, meter))
    return EnergyCalibration(tuple(runs), costs_of(runs, info), meter.how)


def costs_of(
    runs: Sequence[EnergyRun], info: DeviceInfo, date: str | None = None
) -> EnergyCosts | None:
    """The spec's energy costs from the runs (None without an idle power and a DRAM run)."""
    idle = [r.power_w for r in runs if r.key == "idle" and r.power_w is not None]
    dram = next((r for r in runs if r.key == "dram" and r.error is None), None)
    if not idle or dram is None:
        return None
    idle_w = min(idle)
    j_byte = cost_per_item(dram, idle_w)
    op_j = {
        r.key: cost_per_item(r, idle_w, j_byte)
        for r in runs
        if r.key not in ("idle", "dram") and r.error is None and r.items > 0
    }
    clocks = ", ".join(
        f"{r.key} {r.clock_mhz:.0f}" for r in runs if r.clock_mhz and r.key != "idle"
    )
    smi = info.smi
    on = [info.name]
    if smi.get("driver_version"):
        on.append(f"driver {smi['driver_version']}")
    if info.max_clock_mhz:
        on.append(f"max SM clock {info.max_clock_mhz:.0f} MHz")
    if clocks:
        on.append(f"SM clock under load (MHz): {clocks}")
    on.append(f"idle {', '.join(f'{w:.1f}' for w in idle)} W")
    on.append(date or datetime.date.today().isoformat())
    method = (
        "solar calibrate --energy: GPU energy counter over >= 1 s runs of one kernel each, "
        "above the lower idle power of the same run; J/op net of the kernel's compulsory DRAM bytes"
    )
    return EnergyCosts(idle_w, op_j, j_byte, "; ".join(on), method)

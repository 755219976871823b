"""Measuring programs on a GPU (docs/validation.md).

* :func:`device_info` -- what the visible device is: name, SM count, memory, L2, compute
  capability, and clocks/power/driver from ``nvidia-smi`` when it answers.
* :func:`detect_spec` / :func:`resolve_hw` -- ``hw="auto"``: the catalogue spec of the visible GPU,
  by name (``torch.cuda.get_device_name()`` strings resolve through
  :func:`solar.hw.resolve_name`), checked against, or else found by, its SM count and memory.
* :class:`L2Flush` and :func:`time_fn` -- the timing protocol: CUDA events around each
  repetition, warm-up first, the L2 flushed (a buffer of ``max(4 x L2, 128 MiB)`` rewritten)
  before every timed repetition, the median of many repetitions; the number of repetitions
  adapts to a time budget. Off CUDA (or for frameworks whose work torch's stream does not
  see) the host clock around a synchronised call is used instead.
* :func:`profile_events` and :func:`map_kernels` -- per-kernel device times from
  ``torch.profiler``, mapped onto the IR's kernels.

Mapping profiler events onto IR kernels
---------------------------------------
An IR kernel carries ``op``, the aten operator it was traced from (``aten.addmm.default``), in
program order. The profiler gives a tree of CPU operator events (``aten::linear`` >
``aten::addmm`` > ``aten::copy_``) and attaches every device activity (kernel, memcpy,
memset) to the innermost operator that launched it. The mapping:

1. each timed repetition runs inside a ``record_function("solar::rep<i>")`` range; only events
   below such a root count (the L2 flush runs outside);
2. every device activity is charged to an *owner*: the outermost operator on its ancestor chain
   (below the root) whose name is the name of some IR kernel's op -- outermost because the
   tracer records an operator at the level where it reaches the dispatcher, and what that
   operator calls inside (``aten::addmm`` > ``aten::copy_``) belongs to it; ops the tracer
   keeps whole under another name go through :data:`PROFILER_ALIASES` (``solar.sdpa`` is
   ``aten::scaled_dot_product_attention``). Activities with no such ancestor are owned by
   their outermost ``aten::`` ancestor (reported as unmatched device time);
3. owners, in launch order, are aligned with the IR kernels by op name with a longest common
   subsequence (exact DP, vectorised; a greedy resynchronising walk for huge programs);
4. an unmatched IR kernel next to a matched one of the same op (one ``aten::lstm`` call is one
   IR kernel per layer) joins that match: the match's time is then the time of the group.

Unmatched IR kernels (nothing launched: zero-size, or a kernel eager fuses away) and unmatched
owners (device time the IR does not model) are reported, never silently dropped.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import torch

from solar.hw import SpecError, list_specs, load_spec, resolve_name

__all__ = [
    "PROFILER_ALIASES",
    "DeviceInfo",
    "KernelMapping",
    "KernelMatch",
    "L2Flush",
    "OpEvent",
    "Timing",
    "detect_spec",
    "device_info",
    "events_from_profiler",
    "map_kernels",
    "map_reps",
    "profile_events",
    "profiler_name",
    "resolve_hw",
    "time_fn",
]

REP_MARKER = "solar::rep"

# ---------------------------------------------------------------------------------------------
# Device facts

_SMI_FIELDS = (
    "uuid",
    "name",
    "clocks.sm",
    "clocks.max.sm",
    "clocks.mem",
    "clocks.max.mem",
    "power.limit",
    "power.max_limit",
    "driver_version",
    "temperature.gpu",
    "pstate",
    "memory.total",
)


@dataclass
class DeviceInfo:
    """Facts about one device, as read from torch and ``nvidia-smi`` (``smi``: field -> text)."""

    name: str
    kind: str  # "cuda" or "cpu"
    index: int | None = None
    sm_count: int | None = None
    total_memory: int | None = None  # bytes
    l2_bytes: int | None = None
    compute_capability: str | None = None
    clock_mhz: float | None = None  # cudaDeviceProp clock rate (max SM clock), if reported
    memory_clock_mhz: float | None = None
    memory_bus_width: int | None = None  # bits
    smem_per_sm: int | None = None  # bytes
    smi: dict[str, str] = field(default_factory=dict)
    torch_version: str = torch.__version__
    cuda_version: str | None = None

    @classmethod
    def from_props(cls, props, *, index: int | None = None, smi=None) -> DeviceInfo:
        """From a ``torch.cuda.get_device_properties`` object, or anything with its fields."""

        def get(name, scale=None):
            v = getattr(props, name, None)
            if not v:
                return None
            return v * scale if scale is not None else v

        major, minor = getattr(props, "major", None), getattr(props, "minor", None)
        return cls(
            name=str(props.name),
            kind="cuda",
            index=index,
            sm_count=get("multi_processor_count"),
            total_memory=get("total_memory"),
            l2_bytes=get("L2_cache_size"),
            compute_capability=f"{major}.{minor}" if major is not None else None,
            clock_mhz=get("clock_rate", 1e-3),
            memory_clock_mhz=get("memory_clock_rate", 1e-3),
            memory_bus_width=get("memory_bus_width"),
            smem_per_sm=get("shared_memory_per_multiprocessor"),
            smi=dict(smi or {}),
            cuda_version=torch.version.cuda,
        )

    def smi_float(self, key: str) -> float | None:
        try:
            return float(self.smi[key])
        except (KeyError, ValueError):
            return None

    @property
    def max_clock_mhz(self) -> float | None:
        """The maximum SM clock: nvidia-smi's ``clocks.max.sm``, else the device property."""
        return self.smi_float("clocks.max.sm") or self.clock_mhz

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def summary(self) -> str:
        parts = [self.name]
        if self.sm_count:
            parts.append(f"{self.sm_count} SMs")
        if self.total_memory:
            parts.append(f"{self.total_memory / 1e9:.1f} GB")
        if self.l2_bytes:
            parts.append(f"L2 {self.l2_bytes / 2**20:.0f} MiB")
        sm, top = self.smi.get("clocks.sm"), self.max_clock_mhz
        if sm or top:
            parts.append(f"SM clock {sm or '?'} MHz (max {top:.0f})" if top else f"SM {sm} MHz")
        if self.smi.get("driver_version"):
            parts.append(f"driver {self.smi['driver_version']}")
        parts.append(f"torch {self.torch_version}")
        return ", ".join(parts)


def nvidia_smi(uuid: str | None = None, index: int | None = None) -> dict[str, str]:
    """One GPU's ``nvidia-smi --query-gpu`` fields ({} when nvidia-smi is missing or fails).
    The row is picked by UUID when given (CUDA_VISIBLE_DEVICES may renumber), else by index."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {}
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    cells = [[c.strip() for c in line.split(",")] for line in out.splitlines()]
    rows = [dict(zip(_SMI_FIELDS, c)) for c in cells if len(c) == len(_SMI_FIELDS)]
    if not rows:
        return {}
    if uuid:
        want = _norm_uuid(uuid)
        for r in rows:
            if _norm_uuid(r["uuid"]) == want:
                return r
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if index is not None and not visible and index < len(rows):
        return rows[index]
    return rows[0] if len(rows) == 1 else {}


def _norm_uuid(u: object) -> str:
    return str(u).lower().removeprefix("gpu-").replace("-", "")


def device_info(device: str | torch.device | None = None) -> DeviceInfo:
    """Facts about ``device`` (default: the current CUDA device, else the CPU)."""
    dev = torch.device(device) if device is not None else None
    if dev is None:
        dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    if dev.type != "cuda":
        return DeviceInfo(name=platform.processor() or platform.machine() or "cpu", kind="cpu")
    if not torch.cuda.is_available():
        raise ValueError(f"device {dev} asked for, but torch sees no CUDA GPU")
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    return DeviceInfo.from_props(
        props, index=index, smi=nvidia_smi(getattr(props, "uuid", None), index)
    )


# ---------------------------------------------------------------------------------------------
# hw="auto"

_MEMORY_SLACK = 0.12  # torch's total_memory vs the datasheet's capacity (GiB vs GB, ECC, ...)


def _memory_matches(spec, total_memory: int | None) -> bool:
    if not total_memory:
        return True
    return abs(spec.dram_capacity - total_memory) <= _MEMORY_SLACK * spec.dram_capacity


def detect_spec(info: DeviceInfo | None = None, specs=None) -> tuple[object, str]:
    """The catalogue spec of a device and how it was matched: by name (checked against the SM
    count), else the one spec with the device's SM count and memory. ``specs`` defaults to the
    catalogue. Raises :class:`SpecError` pointing to ``solar calibrate`` when none fits."""
    info = info or device_info()
    if info.kind != "cuda":
        raise SpecError(
            "hw='auto' needs a visible CUDA GPU; pass hw= a catalogue name (solar specs), "
            "a spec YAML, a dict or a HardwareSpec"
        )
    catalogue = list(specs) if specs is not None else list_specs()
    why = ""
    by_name = None
    if specs is None:
        try:
            by_name = load_spec(resolve_name(info.name))
        except SpecError:
            by_name = None
    else:
        want = _names(info.name)
        hits = [s for s in catalogue if want & {_n(x) for x in (s.key, s.name, *s.aliases)}]
        by_name = hits[0] if len(hits) == 1 else None
    if by_name is not None:
        if not info.sm_count or by_name.sm_count == info.sm_count:
            return by_name, f"by name {info.name!r} -> {by_name.key}"
        why = (
            f"the name {info.name!r} resolves to {by_name.key}, but that has "
            f"{by_name.sm_count} SMs and this device {info.sm_count}; "
        )
    fits = [
        s
        for s in catalogue
        if info.sm_count and s.sm_count == info.sm_count and _memory_matches(s, info.total_memory)
    ]
    if len(fits) == 1:
        s = fits[0]
        return s, f"{why}by SM count ({info.sm_count}) and memory -> {s.key}"
    desc = (
        f"{info.name!r} ({info.sm_count or '?'} SMs, "
        f"{(info.total_memory or 0) / 1e9:.0f} GB, cc {info.compute_capability or '?'})"
    )
    if len(fits) > 1:
        raise SpecError(
            f"{why}the visible GPU {desc} matches several catalogue specs "
            f"({', '.join(s.key for s in fits)}): pass hw= one of them"
        )
    raise SpecError(
        f"{why}the visible GPU {desc} is not in the catalogue: run `solar calibrate --out "
        "my_gpu.yaml` on it (add --base NAME for a close catalogue GPU) and pass hw=my_gpu.yaml"
    )


def _n(s: str) -> str:
    return re.sub(r"[-_\s]+", "", str(s)).lower()


def _names(name: str) -> set[str]:
    w = _n(name)
    s = w.removeprefix("nvidia")
    return {w, s, s.removeprefix("geforce")}


def resolve_hw(hw, device: str | torch.device | None = None):
    """``load_spec(hw)``, where ``hw="auto"`` (any case) is the spec of the visible GPU."""
    if isinstance(hw, str) and hw.strip().lower() == "auto":
        return detect_spec(device_info(device))[0]
    return load_spec(hw)


# ---------------------------------------------------------------------------------------------
# Timing


class L2Flush:
    """Evicts the L2 by rewriting a buffer of ``max(4 x L2, 128 MiB)`` (a fill with a changing
    non-zero value, so nothing can be skipped as a no-op)."""

    def __init__(self, device: str | torch.device, l2_bytes: int | None = None) -> None:
        self.device = torch.device(device)
        if l2_bytes is None and self.device.type == "cuda":
            idx = self.device.index if self.device.index is not None else None
            l2_bytes = getattr(torch.cuda.get_device_properties(idx), "L2_cache_size", 0)
        self.nbytes = max(4 * int(l2_bytes or 0), 128 * 2**20)
        self.buf = torch.empty(self.nbytes // 4, dtype=torch.float32, device=self.device)
        self._k = 0

    def __call__(self) -> None:
        self._k += 1
        self.buf.fill_(float(self._k % 251 + 1))


@dataclass
class Timing:
    """Repeated timings of one program (seconds)."""

    median_s: float
    min_s: float
    max_s: float
    mean_s: float
    q25_s: float
    q75_s: float
    reps: int
    warmup: int
    timer: str  # "cuda_events" or "host"
    flushed: bool
    times_s: list[float] = field(default_factory=list, repr=False)

    @classmethod
    def of(cls, times: Sequence[float], *, warmup: int, timer: str, flushed: bool) -> Timing:
        if not times:
            raise ValueError("no timed repetitions")
        xs = sorted(float(t) for t in times)
        q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3
        return cls(
            median_s=statistics.median(xs),
            min_s=xs[0],
            max_s=xs[-1],
            mean_s=statistics.fmean(xs),
            q25_s=q[0],
            q75_s=q[2],
            reps=len(xs),
            warmup=warmup,
            timer=timer,
            flushed=flushed,
            times_s=list(times),
        )

    @property
    def spread(self) -> float:
        """Interquartile range over the median."""
        return (self.q75_s - self.q25_s) / self.median_s if self.median_s > 0 else 0.0

    def to_dict(self, times: bool = False) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "times_s"}
        d["spread"] = self.spread
        if times:
            d["times_s"] = list(self.times_s)
        return d


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_fn(
    run: Callable[[], object],
    *,
    device: str | torch.device = "cuda",
    flush: L2Flush | bool | None = True,
    warmup: int = 2,
    reps: int | None = None,
    min_reps: int = 5,
    max_reps: int = 200,
    budget_s: float = 1.0,
    timer: str | None = None,
    sync: Callable[[], None] | None = None,
) -> Timing:
    """Time ``run()`` (which must launch the program and may return its outputs).

    ``timer="cuda_events"`` (default on CUDA): an event pair around each repetition on the
    current stream, read after one synchronisation at the end. ``timer="host"`` (default off
    CUDA; needed when the work runs on streams torch does not own, e.g. JAX): the host clock
    around ``run(); sync()``. ``flush=True`` makes an :class:`L2Flush` (CUDA only) and runs it
    before every timed repetition, outside the timed region. Without ``reps``, the count adapts
    so the timed loop takes about ``budget_s`` (at least ``min_reps``, at most ``max_reps``;
    fewer, down to one, when ``min_reps`` repetitions would take over three budgets).
    """
    device = torch.device(device)
    timer = timer or ("cuda_events" if device.type == "cuda" else "host")
    if timer not in ("cuda_events", "host"):
        raise ValueError(f"unknown timer {timer!r}: 'cuda_events' or 'host'")
    if timer == "cuda_events" and device.type != "cuda":
        raise ValueError("timer='cuda_events' needs a CUDA device")
    done = sync or (lambda: _sync(device))
    if flush is True:
        flusher = L2Flush(device) if device.type == "cuda" else None
    else:
        flusher = flush or None
    flushed = flusher is not None

    def one_host() -> float:
        if flusher is not None:
            flusher()
            done()
        t0 = time.perf_counter()
        run()
        done()
        return time.perf_counter() - t0

    with torch.no_grad():
        for i in range(max(warmup, 0)):
            t0 = time.perf_counter()
            run()
            done()
            if i == 0 and time.perf_counter() - t0 > budget_s:
                break  # a long program: one warm-up is enough
        # estimate one repetition (and the flush) to size the loop
        t_est = one_host()
        if reps is None:
            t_flush = 0.0
            if flusher is not None:
                t0 = time.perf_counter()
                flusher()
                done()
                t_flush = time.perf_counter() - t0
            n = int(budget_s / max(t_est + t_flush, 1e-6))
            floor = min_reps if t_est * min_reps <= 3 * budget_s else 1
            reps = max(floor, min(max_reps, n))
        reps = max(int(reps), 1)
        if timer == "host":
            times = [one_host() for _ in range(reps)]
        else:
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
            for s, e in zip(starts, ends):
                if flusher is not None:
                    flusher()
                s.record()
                run()
                e.record()
            done()
            times = [s.elapsed_time(e) * 1e-3 for s, e in zip(starts, ends)]
    return Timing.of(times, warmup=warmup, timer=timer, flushed=flushed)


# ---------------------------------------------------------------------------------------------
# Profiler events


@dataclass
class OpEvent:
    """One CPU-side operator range of a profile, with the device activities it launched itself
    (``kernels``: (name, seconds)). ``parent`` indexes the enclosing event in the same list."""

    name: str
    start_us: float
    end_us: float
    parent: int | None = None
    kernels: list[tuple[str, float]] = field(default_factory=list)


def events_from_profiler(
    function_events, *, device_kind: str = "cuda", launched: Collection[str] = ()
) -> list[OpEvent]:
    """Convert ``torch.profiler`` FunctionEvents (``prof.events()``) to :class:`OpEvent` s.

    On CUDA each CPU event keeps the device activities attached to it (kernels, memcpys,
    memsets; a user annotation's mirror on the device timeline is dropped). Off CUDA there are
    no device activities: each operator gets one pseudo-activity, its self CPU time, so the
    same mapping yields per-kernel CPU times (used to test the mapping without a GPU).
    ``launched``: kernel names that are launched under a range of their own name (Inductor's
    Triton kernels): such a device activity is the kernel, not the range's mirror."""
    cpu = [
        e
        for e in function_events
        if str(getattr(e, "device_type", "")).endswith("CPU") and not getattr(e, "is_async", False)
    ]
    index = {id(e): i for i, e in enumerate(cpu)}
    out: list[OpEvent] = []
    for e in cpu:
        parent = getattr(e, "cpu_parent", None)
        ev = OpEvent(
            name=e.name,
            start_us=float(e.time_range.start),
            end_us=float(e.time_range.end),
            parent=index.get(id(parent)) if parent is not None else None,
        )
        if device_kind == "cuda":
            for k in getattr(e, "kernels", []) or []:
                if k.name == e.name and k.name not in launched:  # a range's device mirror
                    continue
                ev.kernels.append((k.name, float(k.duration) * 1e-6))
        elif not e.name.startswith(REP_MARKER):
            self_us = getattr(e, "self_cpu_time_total", None)
            if self_us is None:
                self_us = e.time_range.end - e.time_range.start
            ev.kernels.append((e.name, float(self_us) * 1e-6))
        out.append(ev)
    return out


def on_device(model: object, inputs: object, device: str | torch.device | None) -> tuple:
    """``inputs`` as an argument tuple, moved to ``device`` (and ``model`` with them, in place,
    when it is an ``nn.Module``); as they are without a ``device``."""
    from torch.utils import _pytree as pytree

    args = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    if device is None:
        return args
    if isinstance(model, torch.nn.Module):
        model.to(device)
    return pytree.tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, args)


def profile_events(
    run: Callable[[], object],
    *,
    device: str | torch.device = "cuda",
    reps: int = 2,
    flush: L2Flush | bool | None = True,
    warmup: int = 1,
    launched: Collection[str] = (),
) -> list[OpEvent]:
    """Profile ``reps`` runs of ``run()``, each inside ``record_function("solar::rep<i>")`` and
    preceded (outside the range) by an L2 flush; returns the events (see
    :func:`events_from_profiler`, which ``launched`` goes to) for :func:`map_reps`."""
    from torch.profiler import ProfilerActivity, profile, record_function

    device = torch.device(device)
    cuda = device.type == "cuda"
    flusher = (L2Flush(device) if cuda else None) if flush is True else (flush or None)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with torch.no_grad():
        for _ in range(warmup):
            run()
        _sync(device)
        with profile(activities=activities) as prof:
            for i in range(reps):
                if flusher is not None:
                    flusher()
                with record_function(f"{REP_MARKER}{i}"):
                    run()
                _sync(device)
    return events_from_profiler(
        prof.events(), device_kind="cuda" if cuda else "cpu", launched=launched
    )


# ---------------------------------------------------------------------------------------------
# Mapping profiler events onto IR kernels

#: IR op (profiler-normalised) -> the profiler operator names eager runs it as.
PROFILER_ALIASES: dict[str, tuple[str, ...]] = {
    "solar::sdpa": ("aten::scaled_dot_product_attention",),
    "solar::lstm": ("aten::lstm",),
    "solar::gru": ("aten::gru",),
    "solar::rnn_tanh": ("aten::rnn_tanh",),
    "solar::rnn_relu": ("aten::rnn_relu",),
    "solar::lstm_cell": ("aten::_thnn_fused_lstm_cell",),
    "solar::gru_cell": ("aten::_thnn_fused_gru_cell",),
    # a training step's attention backward: whichever backend the forward ran
    "solar::sdpa_backward": (
        "aten::_scaled_dot_product_flash_attention_backward",
        "aten::_scaled_dot_product_efficient_attention_backward",
        "aten::_scaled_dot_product_cudnn_attention_backward",
        "aten::_efficient_attention_backward",
        "aten::_flash_attention_backward",
    ),
    "solar::rms_norm_backward": ("aten::_fused_rms_norm_backward",),
}

_CANONICAL = {a: names[0] for names in PROFILER_ALIASES.values() for a in names[1:]}


def _canonical(name: str) -> str:
    """A profiler operator name, with the variants eager picks among at run time (flash,
    memory-efficient or cuDNN attention backward) folded into the alias listed first."""
    return _CANONICAL.get(name, name)


_OVERLOAD = re.compile(r"^(?P<ns>[A-Za-z_][\w]*)\.(?P<op>[\w]+)(\.(?P<ovl>[\w]+))?$")


def profiler_name(op: str) -> str:
    """``aten.addmm.default`` -> ``aten::addmm``; ``aten::addmm`` stays; aliases applied."""
    op = str(op)
    if "::" not in op:
        m = _OVERLOAD.match(op)
        if m:
            op = f"{m['ns']}::{m['op']}"
    alias = PROFILER_ALIASES.get(op)
    return alias[0] if alias else op


@dataclass
class KernelMatch:
    """IR kernels (indices, consecutive) measured together as one profiler owner op."""

    ir: list[int]
    op: str
    seconds: float
    device_kernels: list[str]


@dataclass
class KernelMapping:
    matches: list[KernelMatch]
    unmatched_ir: list[int]  # IR kernels no device activity was attributed to
    unmatched_device: list[tuple[str, float, list[str]]]  # (owner op, seconds, kernel names)
    total_device_s: float  # all device activity inside the repetitions
    reps: int = 1

    @property
    def matched_s(self) -> float:
        return sum(m.seconds for m in self.matches)

    def seconds_of(self) -> dict[int, float]:
        """IR kernel index -> measured seconds, for kernels measured alone."""
        return {m.ir[0]: m.seconds for m in self.matches if len(m.ir) == 1}

    def to_dict(self, kernel_names: Sequence[str] | None = None) -> dict:
        def nm(i: int):
            return kernel_names[i] if kernel_names is not None else i

        return {
            "reps": self.reps,
            "matched": [
                {
                    "kernels": [nm(i) for i in m.ir],
                    "op": m.op,
                    "seconds": m.seconds,
                    "device_kernels": m.device_kernels,
                }
                for m in self.matches
            ],
            "unmatched_ir": [nm(i) for i in self.unmatched_ir],
            "unmatched_device": [
                {"op": op, "seconds": s, "device_kernels": ks}
                for op, s, ks in self.unmatched_device
            ],
            "total_device_s": self.total_device_s,
            "matched_s": self.matched_s,
        }


@dataclass
class _Group:
    owner: int
    name: str
    start: float
    seconds: float = 0.0
    kernels: list[str] = field(default_factory=list)


def _owner_groups(events: Sequence[OpEvent], root: int, wanted: set[str]) -> list[_Group]:
    """Device activities under ``root``, grouped by owner (see the module docstring)."""
    groups: dict[int, _Group] = {}
    for i, ev in enumerate(events):
        if not ev.kernels or i == root:
            continue
        chain = []
        j: int | None = i
        seen = 0
        while j is not None and j != root and seen < 10_000:
            chain.append(j)
            j = events[j].parent
            seen += 1
        if j != root and not _other_thread_inside(events, chain[-1], root):
            continue  # not inside this repetition
        owner = next((c for c in reversed(chain) if _canonical(events[c].name) in wanted), None)
        if owner is None:
            owner = next((c for c in reversed(chain) if events[c].name.startswith("aten::")), i)
        g = groups.get(owner)
        if g is None:
            name = _canonical(events[owner].name)
            g = groups[owner] = _Group(owner, name, events[owner].start_us)
        for kname, secs in ev.kernels:
            g.seconds += secs
            g.kernels.append(kname)
    return sorted(groups.values(), key=lambda g: (g.start, g.owner))


def _other_thread_inside(events: Sequence[OpEvent], top: int, root: int) -> bool:
    """Whether a top-level event ``top`` that is not under ``root`` ran on another CPU thread
    during the repetition: the autograd engine runs a CUDA backward on its device thread, so a
    training step's backward operators hang under no ``solar::rep`` range, only inside its
    time span."""
    t, r = events[top], events[root]
    if t.parent is not None or t.name.startswith(REP_MARKER):
        return False
    return r.start_us <= t.start_us and t.end_us <= r.end_us


def _lcs_pairs(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of ``a`` and ``b`` (exact, vectorised DP;
    a greedy resynchronising walk when the table would be huge)."""
    import numpy as np

    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return []
    if n * m > 4e7:
        return _greedy_pairs(a, b)
    codes: dict[str, int] = {}
    ca = np.array([codes.setdefault(x, len(codes)) for x in a])
    cb = np.array([codes.setdefault(x, len(codes)) for x in b])
    table = np.zeros((n + 1, m + 1), dtype=np.int32)
    for i in range(1, n + 1):
        prev = table[i - 1]
        eq = (cb == ca[i - 1]).astype(np.int32)
        x = np.maximum(prev[1:], prev[:-1] + eq)
        table[i, 1:] = np.maximum.accumulate(x)
    pairs = []
    i, j = n, m
    while i > 0 and j > 0:
        if ca[i - 1] == cb[j - 1] and table[i, j] == table[i - 1, j - 1] + 1:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif table[i - 1, j] >= table[i, j - 1]:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]


def _greedy_pairs(a: Sequence[str], b: Sequence[str], window: int = 64) -> list[tuple[int, int]]:
    pairs, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
            continue
        skip_b = next((d for d in range(1, window) if j + d < len(b) and b[j + d] == a[i]), None)
        skip_a = next((d for d in range(1, window) if i + d < len(a) and a[i + d] == b[j]), None)
        if skip_b is not None and (skip_a is None or skip_b <= skip_a):
            j += skip_b
        elif skip_a is not None:
            i += skip_a
        else:
            i, j = i + 1, j + 1
    return pairs


def map_kernels(
    ir_ops: Sequence[str], events: Sequence[OpEvent], root: int | None = None
) -> KernelMapping:
    """Map the device activities below event ``root`` (default: the whole list, which must then
    hold one repetition) onto IR kernels whose ops are ``ir_ops`` (in program order)."""
    names = [profiler_name(op) for op in ir_ops]
    wanted = set(names)
    if root is None:
        events = [*events, OpEvent(REP_MARKER, -math.inf, math.inf)]
        root = len(events) - 1
        events = [
            OpEvent(e.name, e.start_us, e.end_us, root if e.parent is None else e.parent, e.kernels)
            if i != root
            else e
            for i, e in enumerate(events)
        ]
    groups = _owner_groups(events, root, wanted)
    total = sum(g.seconds for g in groups)
    pairs = _lcs_pairs(names, [g.name for g in groups])
    by_ir: dict[int, KernelMatch] = {}
    used_groups = set()
    for i, gi in pairs:
        g = groups[gi]
        by_ir[i] = KernelMatch([i], g.name, g.seconds, list(g.kernels))
        used_groups.add(gi)
    # an unmatched IR kernel joins an adjacent match of the same op (one call, several kernels)
    host_of = {i: m for i, m in by_ir.items()}
    for i in range(len(names)):
        if i in host_of:
            continue
        for nb in (i - 1, i + 1):
            host = host_of.get(nb)
            if host is not None and names[nb] == names[i]:
                host.ir = sorted({*host.ir, i})
                host_of[i] = host
                break
    matches = sorted(by_ir.values(), key=lambda m: m.ir[0])
    covered = set(host_of)
    return KernelMapping(
        matches=matches,
        unmatched_ir=[i for i in range(len(names)) if i not in covered],
        unmatched_device=[
            (g.name, g.seconds, list(g.kernels))
            for gi, g in enumerate(groups)
            if gi not in used_groups
        ],
        total_device_s=total,
    )


def map_reps(ir_ops: Sequence[str], events: Sequence[OpEvent]) -> KernelMapping:
    """Map every ``solar::rep<i>`` repetition in ``events`` and combine them: the structure
    (and the unmatched device time) of the first repetition, each match's time the median over
    the repetitions that have it."""
    roots = [i for i, e in enumerate(events) if e.name.startswith(REP_MARKER)]
    if not roots:
        return map_kernels(ir_ops, events)
    maps = [map_kernels(ir_ops, events, r) for r in roots]
    first = maps[0]
    for m in first.matches:
        key = tuple(m.ir)
        secs = [x.seconds for mp in maps for x in mp.matches if tuple(x.ir) == key]
        m.seconds = statistics.median(secs)
    first.total_device_s = statistics.median(mp.total_device_s for mp in maps)
    first.reps = len(maps)
    return first


#: what the profiler's C++ side (Kineto) writes to stderr on every start and stop
_PROFILER_CHATTER = re.compile(r"^(USDT|STAGE):|ActivityProfiler|CuptiActivity")


@contextlib.contextmanager
def profiler_log_filtered():
    """Keep the profiler's own log lines (``USDT:... profiler_start``, ``STAGE:...``) off the
    user's stderr: file descriptor 2 goes to a temporary file while the profiler runs, and
    every other line written meanwhile (the program's own, a warning) is passed on after."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            log.seek(0)
            for line in log.read().decode(errors="replace").splitlines():
                if not _PROFILER_CHATTER.search(line):
                    print(line, file=sys.stderr)

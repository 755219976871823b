"""Headroom per compiled kernel (issue 33): a compiled program measured kernel by kernel against
the bound of what each kernel computes.

The program is compiled (:func:`solar.frontend.torch.compiled.compile_torch`), bounded group by
group (:func:`solar.questions.kernel_groups.bound_kernel_groups`), timed whole (CUDA events, L2
flushed before each repetition, median) and profiled (``torch.profiler``, L2 flushed before each
profiled repetition). Each device activity of a profiled repetition is matched to the generated
kernel that launched it (:func:`match_launches`):

1. a Triton kernel (or a C++ kernel on the CPU) by its name — the device kernel carries it;
2. an extern call by the operator it runs as (``extern_kernels.mm`` -> ``aten::mm``): the
   activities under the k-th such operator belong to the k-th such call;
3. what is left (a CUDA graph replay hides the operators) by position: an activity between
   two matched launches belongs to the first extern call between them not yet matched.

Activities matched to no kernel are listed with the operator that launched them. A group's
measured time is the sum of its kernels' (median over repetitions); the program's time splits
into the three terms of :mod:`solar.questions.kernel_groups`, the last one further into kernel
quality (groups measured − group bounds) and launches, gaps and unmatched work (measured −
groups measured).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from solar.api import compile_program
from solar.fmt import jsonable
from solar.frontend.compiled import CompiledTrace, GeneratedKernel, KernelKind
from solar.frozen import Frozen
from solar.gpu.measure import (
    REP_MARKER,
    DeviceInfo,
    OpEvent,
    Timing,
    device_info,
    on_device,
    profile_events,
    profiler_log_filtered,
    resolve_hw,
    time_fn,
)
from solar.gpu.violations import DEFAULT_TOL
from solar.questions.kernel_groups import CompiledBound, bound_kernel_groups
from solar.viewable import Viewable

__all__ = [
    "SCHEMA",
    "CompiledHeadroom",
    "GroupHeadroom",
    "compiled_headroom",
    "match_launches",
    "measure_compiled",
]

SCHEMA = "solar.compiled_headroom/1"


@dataclass(frozen=True)
class Launch:
    """One device activity of a profiled repetition: its name, seconds and the CPU operators
    around its launch (innermost first)."""

    name: str
    seconds: float
    owners: tuple[str, ...]
    owner_ids: tuple[int, ...]  # the operators' event indices: one call's activities share one

    @property
    def row(self) -> tuple[str, float, str]:
        """``(name, seconds, innermost operator)``, as the report lists it."""
        return (self.name, self.seconds, self.owners[0] if self.owners else "")


@dataclass(frozen=True)
class Matched(Frozen):
    """Per generated kernel: measured seconds (None: no activity matched it), the device
    kernels matched and how (``name``, ``operator``, ``position``)."""

    seconds: float | None
    device_kernels: tuple[str, ...]
    how: str

    def to_dict(self) -> dict:
        return jsonable(dict(self.__dict__))


@dataclass(frozen=True)
class GroupHeadroom(Frozen):
    """One group: its bound, its kernels' measured time and the ratio."""

    index: int
    names: tuple[str, ...]
    sources: tuple[str, ...]
    bound_s: float
    bound_by: str
    measured_s: float | None

    @property
    def headroom(self) -> float | None:
        if self.measured_s is None or not self.bound_s:
            return None
        return self.measured_s / self.bound_s

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["headroom"] = self.headroom
        return d


@dataclass(frozen=True, repr=False)
class CompiledHeadroom(Frozen, Viewable):
    """A compiled program measured kernel group by kernel group against its bounds.

    ``bounds``: per compiled graph, its :class:`CompiledBound`; ``kernels``: per generated
    kernel (all graphs, launch order) what was measured; ``groups``: per group (all graphs)
    bound and measured; ``unmatched``: device activities matched to no kernel (name, seconds,
    the operator that launched it); ``violations``: groups measured below their bound."""

    program: str
    hw: str
    device: Mapping
    mode: str
    measured: Timing | None
    bounds: tuple[CompiledBound, ...]
    kernels: tuple[Matched, ...]
    groups: tuple[GroupHeadroom, ...]
    unmatched: tuple[tuple[str, float, str], ...]
    violations: tuple[str, ...]
    launches: tuple[tuple[str, float, str], ...] = ()
    notes: tuple[str, ...] = ()
    tol: float = DEFAULT_TOL
    path: str | None = None
    seconds: Mapping[str, float] = field(default_factory=dict)

    @property
    def fused_s(self) -> float:
        return sum(b.fused_s for b in self.bounds)

    @property
    def groups_s(self) -> float:
        return sum(b.groups_s for b in self.bounds)

    @property
    def groups_measured_s(self) -> float | None:
        ms = [g.measured_s for g in self.groups]
        return None if any(m is None for m in ms) else sum(ms)  # type: ignore[misc]

    @property
    def terms(self) -> dict[str, float | None]:
        """The program's time in terms that add up: the fused bound, the cost of the fusion
        choices, kernel quality, and launches/gaps/unmatched work (None where not measured)."""
        m = self.measured.median_s if self.measured else None
        gm = self.groups_measured_s
        return {
            "fused_bound_s": self.fused_s,
            "fusion_s": self.groups_s - self.fused_s,
            "kernel_quality_s": None if gm is None else gm - self.groups_s,
            "launch_and_gaps_s": None if gm is None or m is None else m - gm,
            "measured_s": m,
        }

    def to_dict(self) -> dict:
        return jsonable(
            {
                "schema": SCHEMA,
                "program": self.program,
                "path": self.path,
                "hw": self.hw,
                "device": self.device,
                "mode": self.mode,
                "measured": self.measured.to_dict(times=True) if self.measured else None,
                "terms": self.terms,
                "bounds": [b.to_dict() for b in self.bounds],
                "kernels": [k.to_dict() for k in self.kernels],
                "groups": [g.to_dict() for g in self.groups],
                "unmatched": [
                    {"name": n, "seconds": s, "operator": op} for n, s, op in self.unmatched
                ],
                "violations": list(self.violations),
                "launches": [
                    {"name": n, "seconds": s, "operator": op} for n, s, op in self.launches
                ],
                "notes": list(self.notes),
                "tol": self.tol,
                "seconds": dict(self.seconds),
            }
        )

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __repr__(self) -> str:
        m = self.measured.median_s if self.measured else None
        return (
            f"CompiledHeadroom({self.program!r} on {self.hw}, {self.mode}: measured {m}, "
            f"fused bound {self.fused_s:.3g} s, {len(self.groups)} groups, "
            f"{len(self.violations)} violations)"
        )


# ---------------------------------------------------------------------------------------------
# Matching device activities to generated kernels


def _launches(events: Sequence[OpEvent], root: int) -> list[Launch]:
    """The device activities under event ``root`` in start order, with their owners."""
    out: list[tuple[float, Launch]] = []
    for i, ev in enumerate(events):
        if not ev.kernels or i == root:
            continue
        chain, ids, j, inside = [], [], i, False
        while j is not None:
            if j == root:
                inside = True
                break
            chain.append(events[j].name)
            ids.append(j)
            j = events[j].parent
        if not inside:
            continue
        for n, (name, secs) in enumerate(ev.kernels):
            out.append((ev.start_us + n * 1e-6, Launch(name, secs, tuple(chain), tuple(ids))))
    out.sort(key=lambda x: x[0])
    return [launch for _, launch in out]


def match_launches(
    kernels: Sequence[GeneratedKernel], launches: Sequence[Launch]
) -> tuple[list[tuple[float, list[str], str] | None], list[tuple[str, float, str]]]:
    """Per generated kernel ``(seconds, device kernel names, how)`` or None, and the activities
    matched to none (name, seconds, owner), for one repetition (module docstring)."""
    found: list[tuple[float, list[str], str] | None] = [None] * len(kernels)
    taken = [False] * len(launches)
    at: list[int | None] = [None] * len(launches)  # launch -> kernel index

    def add(li: int, ki: int, how: str) -> None:
        taken[li], at[li] = True, ki
        cur = found[ki]
        if cur is None:
            found[ki] = (launches[li].seconds, [launches[li].name], how)
        else:
            found[ki] = (cur[0] + launches[li].seconds, [*cur[1], launches[li].name], cur[2])

    # 1. by name: the n-th launch named like a generated kernel is its n-th occurrence
    by_name: dict[str, list[int]] = {}
    for ki, k in enumerate(kernels):
        if k.kind is not KernelKind.EXTERN:
            for n in dict.fromkeys((*k.launch, k.name)):
                by_name.setdefault(n, []).append(ki)
    used_name: dict[str, int] = {}
    for li, la in enumerate(launches):
        key = next((n for n in (la.name, *la.owners) if _named(n) in by_name), None)
        if key is None:
            continue
        key = _named(key)
        cands = by_name[key]
        n = used_name.get(key, 0)
        add(li, cands[min(n, len(cands) - 1)], "name")
        used_name[key] = n + 1
    # 2. by operator: activities of one extern call share its innermost matching operator
    ext: dict[str, list[int]] = {}
    for ki, k in enumerate(kernels):
        if k.kind is KernelKind.EXTERN:
            ext.setdefault(k.launch[0], []).append(ki)
    calls: dict[str, list[int]] = {}  # operator -> owner event ids in order
    for li, la in enumerate(launches):
        if taken[li]:
            continue
        at_op = next((d for d, o in enumerate(la.owners) if o in ext), None)
        if at_op is None:
            continue
        op, call = la.owners[at_op], la.owner_ids[at_op]
        ids = calls.setdefault(op, [])
        if call not in ids:
            ids.append(call)
        n = ids.index(call)
        if n < len(ext[op]):
            add(li, ext[op][n], "operator")
    # 3. by position, between matched neighbours
    for li in range(len(launches)):
        if taken[li]:
            continue
        prev = next((at[j] for j in range(li - 1, -1, -1) if at[j] is not None), -1)
        nxt = next((at[j] for j in range(li + 1, len(launches)) if at[j] is not None), None)
        hi = len(kernels) if nxt is None else nxt
        for ki in range(prev + 1, hi):
            if kernels[ki].kind is KernelKind.EXTERN and found[ki] is None:
                add(li, ki, "position")
                break
    unmatched = [la.row for li, la in enumerate(launches) if not taken[li]]
    return found, unmatched


def _named(name: str) -> str:
    """A C++ kernel's record-function name ``graph_N_cpp_fused_...`` as the kernel's name."""
    if name.startswith("graph_") and "_cpp_" in name:
        return name[name.index("_cpp_") + 1 :]
    return name


def _match_reps(
    kernels: Sequence[GeneratedKernel], reps: Sequence[Sequence[Launch]]
) -> tuple[list[Matched], list[tuple[str, float, str]], list[tuple[str, float, str]]]:
    """:func:`match_launches` over every profiled repetition: the median per kernel, the
    unmatched activities of the first repetition, and all of its activities."""
    per_rep = [match_launches(kernels, la) for la in reps]
    first = [la.row for la in reps[0]] if reps else []
    out = []
    for ki in range(len(kernels)):
        hits = [f[ki] for f, _ in per_rep if f[ki] is not None]
        if not hits:
            out.append(Matched(None, (), ""))
            continue
        secs = statistics.median(h[0] for h in hits)  # type: ignore[index]
        out.append(Matched(float(secs), tuple(hits[0][1]), hits[0][2]))  # type: ignore[index]
    return out, (per_rep[0][1] if per_rep else []), first


def _torch_launches(
    run: Callable[[], object],
    device: torch.device,
    kernels: Sequence[GeneratedKernel],
    reps: int,
    flush: bool,
) -> list[list[Launch]]:
    """Per profiled repetition (``torch.profiler``, L2 flushed before each; the timed runs
    were the warm-up), its launches."""
    names = {n for k in kernels if k.kind is not KernelKind.EXTERN for n in k.launch}
    with profiler_log_filtered():
        events = profile_events(
            run, device=device, reps=reps, flush=flush, warmup=0, launched=names
        )
    roots = [i for i, e in enumerate(events) if e.name.startswith(REP_MARKER)]
    return [_launches(events, r) for r in roots]


def _xla_launches(run: Callable[[], object], reps: int) -> list[list[Launch]]:
    """Per profiled repetition (the JAX profiler), its launches; the HLO instruction each ran
    stands as its operator."""
    from solar.frontend.jax.profiling import profile_jax

    return [
        [
            Launch(la.name, la.seconds, (la.hlo_op,) if la.hlo_op else (), (i,))
            for i, la in enumerate(rep)
        ]
        for rep in profile_jax(run, reps)
    ]


# ---------------------------------------------------------------------------------------------
# Measuring


def measure_compiled(
    compiled: Sequence[CompiledTrace],
    hw="auto",
    *,
    device: str | torch.device = "cuda",
    reps: int | None = None,
    budget_s: float = 1.0,
    profile_reps: int = 3,
    flush: bool = True,
    tol: float = DEFAULT_TOL,
    name: str | None = None,
    path: str | None = None,
) -> CompiledHeadroom:
    """Bound, time and profile a compiled program (the :class:`CompiledTrace` s of its graphs,
    in the order they run)."""
    import time

    if not compiled:
        raise ValueError(
            "the compiler made no graph of this program: all of it runs eagerly (Dynamo does "
            "not trace nn.LSTM or nn.GRU, or breaks the graph at every call); solar.headroom "
            "without compile= measures what runs"
        )
    device = torch.device(device)
    spec = hw if hasattr(hw, "dram_bandwidth") else resolve_hw(hw, device)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    bounds = tuple(bound_kernel_groups(c, spec) for c in compiled)
    seconds["bound"] = time.perf_counter() - t0
    run = compiled[0].run
    t0 = time.perf_counter()
    timer = "host" if compiled[0].compiler == "xla" else None  # JAX's streams are not torch's
    measured = time_fn(
        run, device=device, flush=flush, reps=reps, budget_s=budget_s, min_reps=3, timer=timer
    )
    seconds["time"] = time.perf_counter() - t0
    cuda = device.type == "cuda"
    kernels = [k for c in compiled for k in c.kernels]
    t0 = time.perf_counter()
    if compiled[0].compiler == "xla":
        reps_launches = _xla_launches(run, profile_reps)
    else:
        reps_launches = _torch_launches(run, device, kernels, profile_reps, flush)
    matched, unmatched, launches = _match_reps(kernels, reps_launches)
    seconds["profile"] = time.perf_counter() - t0
    return compiled_report(
        bounds,
        matched,
        unmatched,
        measured=measured,
        launches=launches,
        info=device_info(device),
        tol=tol,
        name=name,
        path=path,
        notes=[n for c in compiled for n in c.notes]
        + (
            [f"measured on {device.type}, not a GPU: times are host times of {device.type} work"]
            if not cuda
            else []
        ),
        seconds=seconds,
    )


def compiled_report(
    bounds: Sequence[CompiledBound],
    matched: Sequence[Matched],
    unmatched: Sequence[tuple[str, float, str]],
    *,
    measured: Timing | None,
    info: DeviceInfo | Mapping,
    launches: Sequence[tuple[str, float, str]] = (),
    tol: float = DEFAULT_TOL,
    name: str | None = None,
    path: str | None = None,
    notes: Sequence[str] = (),
    seconds: Mapping[str, float] | None = None,
) -> CompiledHeadroom:
    """The report from bounds and measurements (pure: no device needed). Violations are
    looked for only in times measured on a GPU (``info`` names its device type)."""
    dev = info.to_dict() if isinstance(info, DeviceInfo) else dict(info)
    on_gpu = dev.get("kind", "cuda") == "cuda"
    groups: list[GroupHeadroom] = []
    violations: list[str] = []
    offset = 0
    for b in bounds:
        for g in b.groups:
            ms = [matched[offset + i].seconds for i in g.kernels]
            m = None if any(x is None for x in ms) else float(sum(ms))  # type: ignore[arg-type]
            gh = GroupHeadroom(len(groups), g.names, g.sources, g.bound_s, g.bound_by, m)
            groups.append(gh)
            if on_gpu and m is not None and m < g.bound_s * (1 - tol):
                violations.append(
                    f"group {gh.index} ({', '.join(g.names)}) measured {m:.4g} s, below its "
                    f"bound {g.bound_s:.4g} s ({g.bound_by}): a mapping or bound error"
                )
        offset += len(b.kernels)
    return CompiledHeadroom(
        program=name or (bounds[0].program if bounds else "program"),
        hw=bounds[0].hw if bounds else "",
        device=dev,
        mode=bounds[0].mode if bounds else "",
        measured=measured,
        bounds=tuple(bounds),
        kernels=tuple(matched),
        groups=tuple(groups),
        unmatched=tuple(unmatched),
        violations=tuple(violations),
        launches=tuple(launches),
        notes=tuple(dict.fromkeys(notes)),
        tol=tol,
        path=path,
        seconds=dict(seconds or {}),
    )


def compiled_headroom(
    model: Callable | torch.nn.Module,
    inputs: object,
    hw="auto",
    *,
    mode: str = "default",
    kwargs: Mapping[str, object] | None = None,
    device: str | torch.device | None = None,
    precision: str | None = None,
    name: str | None = None,
    reps: int | None = None,
    budget_s: float = 1.0,
    flush: bool = True,
    tol: float = DEFAULT_TOL,
    path: str | None = None,
    framework: str | None = None,
) -> CompiledHeadroom:
    """Compile ``model`` (``torch.compile(mode=mode)``, or ``jax.jit``) and measure each
    generated kernel against the bound of what it computes (module docstring)."""
    import time

    from torch.utils import _pytree as pytree

    args = on_device(model, inputs, device)
    dev = next((x.device for x in pytree.tree_leaves(args) if isinstance(x, torch.Tensor)), None)
    if dev is None:  # a JAX program: where JAX runs
        dev = torch.device("cuda" if _jax_on_gpu() else "cpu")
    t0 = time.perf_counter()
    compiled = compile_program(
        model, args, kwargs=kwargs, mode=mode, name=name, precision=precision, framework=framework
    )
    compile_s = time.perf_counter() - t0
    r = measure_compiled(
        compiled,
        hw,
        device=dev,
        reps=reps,
        budget_s=budget_s,
        flush=flush,
        tol=tol,
        name=name,
        path=path,
    )
    return _with_seconds(r, compile=compile_s)


def _jax_on_gpu() -> bool:
    """Whether JAX runs on a GPU (its default backend)."""
    try:
        import jax

        return jax.default_backend() == "gpu"
    except ImportError:
        return False


def _with_seconds(r: CompiledHeadroom, **extra: float) -> CompiledHeadroom:
    import dataclasses

    return dataclasses.replace(r, seconds={**extra, **r.seconds})

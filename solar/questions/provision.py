"""Inverse roofline (docs/overview.md): what a GPU needs to run a program in a target time.

``provision(model, inputs, hw="H100", target_s=2e-3, level="cache_aware")`` traces once and
answers, for the bound at ``level`` to be at most the target ``T``:

- **compute**: each level is ``max(compute, memory)``, so the two separate. The compute time
  on the reference GPU ``hw`` per physical unit ``t_u`` must shrink to ``T``: every rate of
  unit ``u`` needs ``peak × t_u / T`` (``peaks``); an op class alone would need ``ops / T``
  (``class_peaks``); ``compute_scale`` is the factor by which all of ``hw``'s rates must grow.
- **memory, as a feasible region**: for the cache-aware level, a GPU with on-chip capacity
  ``S`` needs DRAM bandwidth at least ``cache_aware_bytes(S) / T`` — the bandwidth ↔ capacity
  trade-off curve, non-increasing in ``S`` down to ``fused_bytes / T``. Capacities are those
  of ``hw.scaled(capacity=f)`` on a log grid of ``f``, so every point can be re-derived with
  :meth:`~solar.hw.spec.HardwareSpec.scaled`. (Fused: one bandwidth for every capacity.
  Unfused: kernels add up, so with ``hw``'s compute the bandwidth solving
  ``Σ_k max(c_k, bytes_k / BW) = T``.)
- **catalog**: every GPU of :func:`solar.hw.list_specs` with its bound at ``level``, whether it
  meets ``T``, the slack ``T - bound`` and the ratio ``T / bound``, and its energy floor at
  ``level`` where its spec has measured energy costs (:mod:`solar.backend.energy`);
  :attr:`Provision.least_energy` is the GPU meeting ``T`` with the fewest joules.

The reverse question, the best-case latency per problem size, is :mod:`solar.questions.sweep`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from solar.api import bound_graph, trace_and_lift
from solar.backend.result import Bound, level_name
from solar.backend.units import UNIT_OF_RATE, compute_time
from solar.fmt import fmt_rate, fmt_time, jsonable
from solar.frozen import Frozen
from solar.hw import list_specs, load_spec
from solar.questions.plan import GpuCount, gpus_per_gpu_kind
from solar.viewable import Viewable

SCHEMA = "solar.provision/1"

#: Capacity factors of the region grid: 4 per octave from 1/64 to 64 times the reference's.
CAPACITY_FACTORS: tuple[float, ...] = tuple(2.0 ** (k / 4) for k in range(-24, 25))


# ---------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class RegionPoint:
    capacity: float  # on-chip bytes
    capacity_scale: float  # factor of the reference GPU's capacities (HardwareSpec.scaled)
    bandwidth: float  # minimum DRAM bytes/s to meet the target (inf: impossible)
    dram_bytes: float  # the level's DRAM bytes at this capacity


@dataclass(frozen=True)
class CatalogFit:
    key: str
    name: str
    bound_s: float  # the level's bound on this GPU (inf when it cannot run the program)
    bound_by: str
    meets: bool
    slack_s: float  # target - bound
    ratio: float  # target / bound (>= 1 meets)
    on_chip_capacity: int
    dram_bandwidth: float
    bandwidth_needed: float  # at this GPU's capacity (and compute, for unfused)
    compute_needed: float  # compute time / target (<= 1 fits)
    error: str | None = None
    fits: bool | None = None  # the program's peak memory fits in one GPU (None: unknown)
    peak_bytes: float = math.nan  # the program's peak live bytes on one GPU
    energy_j: float | None = None  # the level's energy floor (None: no measured energy costs)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True, repr=False)
class Provision(Frozen, Viewable):
    """What a GPU needs for the bound at ``level`` to meet ``target_s`` (see the module
    docstring), relative to the reference GPU ``hw``, and which catalogue GPUs meet it."""

    program: str
    level: str
    target_s: float
    hw: str  # the reference GPU (peaks and the capacity grid are relative to it)
    hw_key: str
    ops: Mapping[str, int]
    class_peaks: Mapping[str, float]  # op class -> ops/s if it ran alone
    peaks: Mapping[str, float]  # rate key of the reference -> ops/s needed
    compute_scale: float  # the reference's compute rates must grow by this factor
    fused_bytes: int
    bandwidth_floor: float  # the region's asymptote (infinite capacity)
    region: tuple[RegionPoint, ...]
    catalog: tuple[CatalogFit, ...]
    reference: Bound = field(repr=False)  # the bound on ``hw`` (data: no graph kept)
    gpus: tuple[GpuCount, ...] = ()  # per GPU kind: how many meet it

    def bandwidth_needed(self, capacity: float) -> float:
        """Minimum DRAM bandwidth at on-chip ``capacity`` bytes (exact, not interpolated:
        the reference bound's stored cache-aware model)."""
        if self.level == "cache_aware":
            return self.reference.cache_aware_bytes(capacity) / self.target_s
        return self.region[0].bandwidth

    def feasible(self, bandwidth: float, capacity: float, compute_scale: float = math.inf):
        """Whether a GPU with this DRAM bandwidth and on-chip capacity, and the reference's
        compute × ``compute_scale``, meets the target at this level."""
        return compute_scale >= self.compute_scale and bandwidth >= self.bandwidth_needed(capacity)

    @property
    def meeting(self) -> tuple[CatalogFit, ...]:
        return tuple(c for c in self.catalog if c.meets)

    @property
    def least_energy(self) -> CatalogFit | None:
        """Provisioning by energy: of the catalogue GPUs that meet the target, the one whose
        energy floor at this level is lowest (GPUs without measured energy costs take no part;
        None: no such GPU)."""
        known = [c for c in self.meeting if c.energy_j is not None]
        return min(known, key=lambda c: c.energy_j) if known else None

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "program": self.program,
            "level": self.level,
            "target_s": self.target_s,
            "hw": self.hw,
            "hw_key": self.hw_key,
            "compute": {
                "ops": dict(self.ops),
                "class_peaks": dict(self.class_peaks),
                "peaks": dict(self.peaks),
                "compute_scale": self.compute_scale,
            },
            "memory": {
                "fused_bytes": self.fused_bytes,
                "bandwidth_floor": self.bandwidth_floor,
                "region": [p.__dict__ for p in self.region],
            },
            "catalog": [c.to_dict() for c in self.catalog],
            "gpus": [c.to_dict() for c in self.gpus],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(jsonable(self.to_dict()), indent=indent)

    @property
    def reference_spec(self):
        """The reference GPU's spec (rebuilt from the reference bound's figures)."""
        try:
            return self.reference.hardware()
        except ValueError:
            return None

    def __repr__(self) -> str:
        ok = ", ".join(c.key for c in self.meeting) or "none"
        return (
            f"Provision({self.program!r}, {self.level} <= {fmt_time(self.target_s)}: "
            f"compute x{self.compute_scale:.3g} of {self.hw_key}, DRAM >= "
            f"{fmt_rate(self.bandwidth_floor, 'B/s')}; catalog meeting it: {ok})"
        )


# ---------------------------------------------------------------------------------------------
# the computation


def _unfused_bandwidth(compute: Sequence[float], nbytes: Sequence[float], target: float) -> float:
    """Least BW with Σ max(c_k, b_k / BW) <= target (inf when compute alone exceeds it)."""
    if sum(compute) > target:
        return math.inf
    if not any(nbytes):
        return 0.0

    def total(bw: float) -> float:
        return sum(max(c, b / bw) for c, b in zip(compute, nbytes))

    lo, hi = 1.0, 1.0
    while total(hi) > target:
        hi *= 2
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if total(mid) > target:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-12:
            break
    return hi


def _needs(b: Bound, spec, target: float) -> tuple[dict, dict, dict, float]:
    ct = compute_time(b.flops, spec)
    class_peaks = {cls: n / target for cls, n in b.flops.items() if n}
    peaks = {}
    for rate in set(ct.rates_used.values()):
        t_u = ct.per_unit.get(UNIT_OF_RATE[rate], 0.0)
        peaks[rate] = spec.peak(rate) * t_u / target
    return dict(b.flops), class_peaks, peaks, ct.seconds / target


def _unfused_need(b: Bound, target: float) -> tuple[float, float]:
    """(DRAM bandwidth, compute time / target) for the unfused level of ``b`` to meet
    ``target`` with ``b``'s GPU's compute (per-kernel numbers of the bound)."""
    compute = [k.compute_s for k in b.kernels]
    bw = _unfused_bandwidth(compute, [k.bytes_read + k.bytes_written for k in b.kernels], target)
    return bw, sum(compute) / target


def _fit(b: Bound, spec, level: str, target: float) -> CatalogFit:
    t = b.time(level)
    if level == "unfused":
        bw, comp = _unfused_need(b, target)
    else:
        nbytes = b.bytes_cache_aware if level == "cache_aware" else b.bytes_fused
        bw = nbytes / target
        comp = compute_time(b.flops, spec).seconds / target
    return CatalogFit(
        spec.key,
        spec.name,
        t,
        b.bound_by(level),
        t <= target and b.fits is not False,  # a GPU that cannot hold it never meets it
        target - t,
        target / t if t > 0 else math.inf,
        spec.on_chip_capacity,
        spec.dram_bandwidth,
        bw,
        comp,
        fits=b.fits,
        peak_bytes=b.memory.peak_bytes if b.memory is not None else math.nan,
        energy_j=b.energy.at(level),
    )


def _catalog(g, level: str, target: float, specs) -> list[CatalogFit]:
    out = []
    for spec in specs:
        try:
            b = bound_graph(g, spec)
        except ValueError as e:  # e.g. no unit for an op class
            out.append(
                CatalogFit(
                    spec.key,
                    spec.name,
                    math.inf,
                    "-",
                    False,
                    -math.inf,
                    0.0,
                    spec.on_chip_capacity,
                    spec.dram_bandwidth,
                    math.inf,
                    math.inf,
                    str(e).splitlines()[0],
                )
            )
            continue
        out.append(_fit(b, spec, level, target))
    return out


def provision_bound(
    b: Bound, *, target_s: float, level: str = "cache_aware", catalog=(), gpus=()
) -> Provision:
    """:func:`provision` against an existing bound ``b`` (its GPU the reference): the
    compute needs and the bandwidth ↔ capacity region come from ``b``'s data alone (a Bound
    loaded from JSON gives the same answer). The catalogue fits and the GPU counts need the
    program on other GPUs: ``catalog`` and ``gpus`` pass them (:func:`provision_graph`)."""
    level = level_name(level)
    if not (isinstance(target_s, (int, float)) and 0 < target_s < math.inf):
        raise ValueError(f"target time must be a positive number of seconds, got {target_s!r}")
    spec = b.hardware()
    ops, class_peaks, peaks, scale = _needs(b, spec, target_s)
    caps = [
        (f, spec.scaled(capacity=f).on_chip_capacity if f != 1 else spec.on_chip_capacity)
        for f in CAPACITY_FACTORS
    ]
    if level == "cache_aware":
        region = []
        for f, cap in caps:
            nbytes = b.cache_aware_bytes(cap)
            region.append(RegionPoint(float(cap), f, nbytes / target_s, nbytes))
        floor = b.bytes_fused / target_s
    else:
        if level == "fused":
            nbytes, bw = b.bytes_fused, b.bytes_fused / target_s
        else:
            nbytes = sum(k.bytes_read + k.bytes_written for k in b.kernels)
            bw, scale = _unfused_need(b, target_s)
        region = [RegionPoint(float(cap), f, bw, nbytes) for f, cap in caps]
        floor = bw
    return Provision(
        program=b.program,
        level=level,
        target_s=float(target_s),
        hw=b.hw,
        hw_key=b.hw_key,
        ops=ops,
        class_peaks=class_peaks,
        peaks=peaks,
        compute_scale=scale,
        fused_bytes=b.bytes_fused,
        bandwidth_floor=floor,
        region=region,
        catalog=list(catalog),
        reference=b,
        gpus=list(gpus),
    )


def provision_graph(
    g,
    hw="H100",
    *,
    target_s: float,
    level: str = "cache_aware",
    catalog=None,
    max_gpus: int | None = None,
    jobs: int | None = 1,
    ray: str | None = None,
) -> Provision:
    """:func:`provision` on an already lifted graph:
    :func:`provision_bound` of its bound on ``hw``, with the catalogue's GPUs bounded."""
    level = level_name(level)
    ref = bound_graph(g, load_spec(hw))
    p = provision_bound(ref, target_s=target_s, level=level)  # checks the target first
    specs = list_specs() if catalog is None else [load_spec(s) for s in catalog]
    return dataclasses.replace(
        p,
        catalog=_catalog(g, level, target_s, specs),
        gpus=gpus_per_gpu_kind(
            g, specs, target_s, level=level, max_gpus=max_gpus, jobs=jobs, ray=ray
        ),
    )


def provision(
    model,
    inputs,
    hw="H100",
    *,
    target_s: float = 2e-3,
    level: str = "cache_aware",
    precision: str | None = None,
    name: str | None = None,
    catalog: Iterable | None = None,
    max_gpus: int | None = None,
    jobs: int | None = 1,
    ray: str | None = None,
) -> Provision:
    """What a GPU needs for the ``level`` bound of ``model(*inputs)`` to be at most
    ``target_s`` seconds (as every time of the library; ``solar provision --target-ms`` takes
    milliseconds): peaks per unit, the DRAM bandwidth ↔ on-chip capacity
    feasible region, which catalog GPUs (or those of ``catalog``) meet it alone, and per GPU
    kind the fewest GPUs (up to ``max_gpus``, default a host's) that hold it and meet it
    (:mod:`solar.questions.plan`; one task per GPU kind on ``jobs`` processes or ``ray``)."""
    _, g = trace_and_lift(model, inputs, precision=precision, name=name)
    return provision_graph(
        g,
        hw,
        target_s=target_s,
        level=level,
        catalog=catalog,
        max_gpus=max_gpus,
        jobs=jobs,
        ray=ray,
    )

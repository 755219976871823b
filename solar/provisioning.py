"""Inverse roofline (DESIGN.md §8): what a GPU needs to run a program in a target time, and
the reverse, the best-case latency per problem size on a given GPU.

``provision(model, inputs, target_ms=2.0, level="cache_aware", hw="H100")`` traces once and
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
  meets ``T``, the slack ``T - bound`` and the ratio ``T / bound``.

``sweep(model, make_inputs, sizes, hw=...)`` re-traces at each size (``make_inputs(n)`` returns
the inputs, or ``(model, inputs)`` when ``model`` is None) and reports the bounds per size;
:func:`sweep_problem` does the same for a problem file by setting a module constant (``TOKENS``,
``SEQ``, ...) before building its ``Model`` and inputs.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from solar.report import Bound, fmt_bytes, fmt_time

SCHEMA = "solar.provision/1"
SWEEP_SCHEMA = "solar.sweep/1"
LEVELS = ("unfused", "fused", "cache_aware")

#: Capacity factors of the region grid: 4 per octave from 1/64 to 64 times the reference's.
CAPACITY_FACTORS: tuple[float, ...] = tuple(2.0 ** (k / 4) for k in range(-24, 25))


def level_name(level: str) -> str:
    key = level.replace("-", "_").lower()
    if key not in LEVELS:
        raise ValueError(f"unknown level {level!r}; one of {', '.join(LEVELS)}")
    return key


def level_time(b: Bound, level: str) -> float:
    return getattr(b, level_name(level))


def level_bound_by(b: Bound, level: str) -> str:
    return getattr(b, f"{level_name(level)}_bound_by")


def prepare(model, inputs, *, precision=None, name=None):
    """Trace and lift once: (IR program, einsum graph)."""
    from solar.api import trace
    from solar.graph import lift

    traced = trace(model, inputs, precision=precision, name=name)
    return traced.program, lift(traced.program)


def analyse(program, g, spec) -> Bound:
    from solar.backend import analyze

    b = analyze(g, spec)
    b.ir = program
    return b


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

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Provision:
    program: str
    level: str
    target_s: float
    hw: str  # the reference GPU (peaks and the capacity grid are relative to it)
    hw_key: str
    ops: dict[str, int]
    class_peaks: dict[str, float]  # op class -> ops/s if it ran alone
    peaks: dict[str, float]  # rate key of the reference -> ops/s needed
    compute_scale: float  # the reference's compute rates must grow by this factor
    fused_bytes: int
    bandwidth_floor: float  # the region's asymptote (infinite capacity)
    region: list[RegionPoint]
    catalog: list[CatalogFit]
    reference: Bound = field(repr=False)
    spec: object = field(default=None, repr=False)  # the reference HardwareSpec

    def bandwidth_needed(self, capacity: float) -> float:
        """Minimum DRAM bandwidth at on-chip ``capacity`` bytes (exact, not interpolated)."""
        from solar.backend.cache_aware import CacheAwareModel

        if self.level == "cache_aware":
            return CacheAwareModel(self.reference.graph).bytes(capacity) / self.target_s
        return self.region[0].bandwidth

    def feasible(self, bandwidth: float, capacity: float, compute_scale: float = math.inf):
        """Whether a GPU with this DRAM bandwidth and on-chip capacity, and the reference's
        compute × ``compute_scale``, meets the target at this level."""
        return compute_scale >= self.compute_scale and bandwidth >= self.bandwidth_needed(capacity)

    @property
    def meeting(self) -> list[CatalogFit]:
        return [c for c in self.catalog if c.meets]

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
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=_json_default)

    def renderables(self) -> list:
        from rich.table import Table

        title = f"{self.program}: {self.level.replace('_', '-')} bound <= {fmt_time(self.target_s)}"
        need = Table(title=title + f" (relative to {self.hw})")
        for col in ("resource", "needed", f"{self.hw} has", "note"):
            need.add_column(col)
        spec = self.reference_spec
        for rate, v in sorted(self.peaks.items()):
            have = spec.peak(rate) if spec is not None and spec.has_unit(rate) else None
            need.add_row(
                f"peak {rate}",
                fmt_rate(v, "op/s"),
                fmt_rate(have, "op/s") if have else "-",
                "per unit: every rate of a unit scales together",
            )
        need.add_row(
            "compute scale",
            f"x{self.compute_scale:.3g}",
            "x1",
            "meets" if self.compute_scale <= 1 else "too slow",
        )
        need.add_row(
            "DRAM bandwidth (infinite on-chip)",
            fmt_rate(self.bandwidth_floor, "B/s"),
            fmt_rate(spec.dram_bandwidth, "B/s") if spec else "-",
            "fused bytes / target",
        )
        if spec is not None:
            at = self.bandwidth_needed(spec.on_chip_capacity)
            need.add_row(
                f"DRAM bandwidth at {fmt_bytes(spec.on_chip_capacity)} on chip",
                fmt_rate(at, "B/s"),
                fmt_rate(spec.dram_bandwidth, "B/s"),
                "meets" if at <= spec.dram_bandwidth else "too slow",
            )
        region = Table(title="feasible region: minimum DRAM bandwidth per on-chip capacity")
        for col in ("on-chip capacity", "x " + self.hw_key, "min bandwidth", "DRAM bytes"):
            region.add_column(col, justify="right")
        for p in self.region[:: max(1, len(self.region) // 12)]:
            region.add_row(
                fmt_bytes(p.capacity),
                f"{p.capacity_scale:.3g}",
                fmt_rate(p.bandwidth, "B/s"),
                fmt_bytes(p.dram_bytes),
            )
        cat = Table(title="catalog GPUs against the target")
        for col in ("GPU", "bound", "by", "meets", "slack", "target/bound", "BW needed", "BW"):
            cat.add_column(col, justify="left" if col in ("GPU", "by") else "right")
        for c in sorted(self.catalog, key=lambda c: c.bound_s):
            cat.add_row(
                c.name,
                fmt_time(c.bound_s) if math.isfinite(c.bound_s) else "n/a",
                c.bound_by if not c.error else c.error[:40],
                "yes" if c.meets else "no",
                _fmt_signed_time(c.slack_s),
                f"{c.ratio:.3g}",
                fmt_rate(c.bandwidth_needed, "B/s"),
                fmt_rate(c.dram_bandwidth, "B/s"),
            )
        return [need, region, cat]

    @property
    def reference_spec(self):
        return self.spec or getattr(self.reference, "spec", None) or _spec_or_none(self.hw_key)

    def __str__(self) -> str:
        return _render(self.renderables())

    def __repr__(self) -> str:
        ok = ", ".join(c.key for c in self.meeting) or "none"
        return (
            f"Provision({self.program!r}, {self.level} <= {fmt_time(self.target_s)}: "
            f"compute x{self.compute_scale:.3g} of {self.hw_key}, DRAM >= "
            f"{fmt_rate(self.bandwidth_floor, 'B/s')}; catalog meeting it: {ok})"
        )

    def _repr_html_(self) -> str:
        from solar.frame import provision_html

        return provision_html(self)

    def to_dataframe(self, part: str = "catalog"):
        from solar.frame import provision_frame

        return provision_frame(self, part)

    def plot(self, ax=None):
        from solar.plots import region_plot

        return region_plot(self, ax=ax)


def _json_default(x):
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    raise TypeError(type(x).__name__)


def _spec_or_none(key: str):
    from solar.hw import load_spec

    try:
        return load_spec(key)
    except (ValueError, OSError):
        return None


def _render(renderables) -> str:
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=140, color_system=None, force_terminal=False)
    for r in renderables:
        console.print(r)
    return buf.getvalue().rstrip()


def fmt_rate(x: float | None, unit: str) -> str:
    if x is None:
        return "-"
    if not math.isfinite(x):
        return "impossible"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.4g} {prefix}{unit}"
    return f"{x:.4g} {unit}"


def _fmt_signed_time(s: float) -> str:
    if not math.isfinite(s):
        return "-inf" if s < 0 else "inf"
    return ("-" if s < 0 else "+") + fmt_time(abs(s))


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


def _needs(g, spec, target: float) -> tuple[dict, dict, dict, float]:
    from solar.backend.roofline import graph_ops
    from solar.backend.units import UNIT_OF_RATE, compute_time

    ops = graph_ops(g)
    ct = compute_time(ops, spec)
    class_peaks = {cls: n / target for cls, n in ops.items() if n}
    peaks = {}
    for rate in set(ct.rates_used.values()):
        t_u = ct.per_unit.get(UNIT_OF_RATE[rate], 0.0)
        peaks[rate] = spec.peak(rate) * t_u / target
    return ops, class_peaks, peaks, ct.seconds / target


def _fit(b: Bound, spec, level: str, target: float, g) -> CatalogFit:
    from solar.backend.cache_aware import CacheAwareModel
    from solar.backend.roofline import kernel_times
    from solar.backend.units import compute_time

    t = level_time(b, level)
    if level == "unfused":
        ks = kernel_times(g, spec)
        bw = _unfused_bandwidth(
            [k.compute.seconds for k in ks], [k.bytes_read + k.bytes_written for k in ks], target
        )
        comp = sum(k.compute.seconds for k in ks) / target
    else:
        nbytes = (
            CacheAwareModel(g).bytes(spec.on_chip_capacity)
            if level == "cache_aware"
            else b.bytes_fused
        )
        bw = nbytes / target
        comp = compute_time(b.flops, spec).seconds / target
    return CatalogFit(
        spec.key,
        spec.name,
        t,
        level_bound_by(b, level),
        t <= target,
        target - t,
        target / t if t > 0 else math.inf,
        spec.on_chip_capacity,
        spec.dram_bandwidth,
        bw,
        comp,
    )


def _catalog(program, g, level: str, target: float, specs) -> list[CatalogFit]:
    out = []
    for spec in specs:
        try:
            b = analyse(program, g, spec)
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
        out.append(_fit(b, spec, level, target, g))
    return out


def provision_graph(
    program, g, *, target_s: float, level: str = "cache_aware", hw="H100", catalog=None
) -> Provision:
    """:func:`provision` on an already lifted graph (``program`` may be None)."""
    from solar.backend.cache_aware import CacheAwareModel
    from solar.backend.roofline import kernel_times
    from solar.hw import list_specs, load_spec

    level = level_name(level)
    if not (isinstance(target_s, (int, float)) and 0 < target_s < math.inf):
        raise ValueError(f"target time must be a positive number of seconds, got {target_s!r}")
    spec = load_spec(hw)
    ref = analyse(program, g, spec)
    ops, class_peaks, peaks, scale = _needs(g, spec, target_s)
    region = []
    if level == "cache_aware":
        model = CacheAwareModel(g)
        for f in CAPACITY_FACTORS:
            cap = spec.scaled(capacity=f).on_chip_capacity if f != 1 else spec.on_chip_capacity
            nbytes = model.bytes(cap)
            region.append(RegionPoint(float(cap), f, nbytes / target_s, nbytes))
        floor = model.fused / target_s
    else:
        if level == "fused":
            nbytes, bw = ref.bytes_fused, ref.bytes_fused / target_s
        else:
            ks = kernel_times(g, spec)
            nbytes = sum(k.bytes_read + k.bytes_written for k in ks)
            bw = _unfused_bandwidth(
                [k.compute.seconds for k in ks],
                [k.bytes_read + k.bytes_written for k in ks],
                target_s,
            )
            scale = sum(k.compute.seconds for k in ks) / target_s
        for f in CAPACITY_FACTORS:
            cap = spec.scaled(capacity=f).on_chip_capacity if f != 1 else spec.on_chip_capacity
            region.append(RegionPoint(float(cap), f, bw, nbytes))
        floor = bw
    specs = list_specs() if catalog is None else [load_spec(s) for s in catalog]
    return Provision(
        program=ref.program,
        level=level,
        target_s=float(target_s),
        hw=spec.name,
        hw_key=spec.key,
        ops=ops,
        class_peaks=class_peaks,
        peaks=peaks,
        compute_scale=scale,
        fused_bytes=ref.bytes_fused,
        bandwidth_floor=floor,
        region=region,
        catalog=_catalog(program, g, level, target_s, specs),
        reference=ref,
        spec=spec,
    )


def provision(
    model,
    inputs,
    target_ms: float = 2.0,
    level: str = "cache_aware",
    hw="H100",
    *,
    precision: str | None = None,
    name: str | None = None,
    catalog: Iterable | None = None,
) -> Provision:
    """What a GPU needs for the ``level`` bound of ``model(*inputs)`` to be at most
    ``target_ms`` milliseconds: peaks per unit, the DRAM bandwidth ↔ on-chip capacity
    feasible region, and which catalog GPUs (or those of ``catalog``) meet it."""
    program, g = prepare(model, inputs, precision=precision, name=name)
    return provision_graph(
        program, g, target_s=target_ms * 1e-3, level=level, hw=hw, catalog=catalog
    )


# ---------------------------------------------------------------------------------------------
# the reverse form: latency per size


@dataclass
class Sweep:
    program: str
    hw: str
    hw_key: str
    param: str
    sizes: list
    bounds: list[Bound]
    target_s: float | None = None

    def times(self, level: str = "cache_aware") -> list[float]:
        return [level_time(b, level) for b in self.bounds]

    def largest_meeting(self, level: str = "cache_aware") -> object | None:
        """The largest size whose bound meets the target (None without a target or if none)."""
        if self.target_s is None:
            return None
        ok = [n for n, t in zip(self.sizes, self.times(level)) if t <= self.target_s]
        return max(ok) if ok else None

    def to_dict(self) -> dict:
        rows = []
        for n, b in zip(self.sizes, self.bounds):
            rows.append(
                {
                    "size": n,
                    "unfused_s": b.unfused,
                    "fused_s": b.fused,
                    "cache_aware_s": b.cache_aware,
                    "unfused_bound_by": b.unfused_bound_by,
                    "fused_bound_by": b.fused_bound_by,
                    "cache_aware_bound_by": b.cache_aware_bound_by,
                    "flops": sum(b.flops.values()),
                    "bytes_fused": b.bytes_fused,
                    "bytes_cache_aware": b.bytes_cache_aware,
                }
            )
        return {
            "schema": SWEEP_SCHEMA,
            "program": self.program,
            "hw": self.hw,
            "hw_key": self.hw_key,
            "param": self.param,
            "target_s": self.target_s,
            "points": rows,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def renderables(self) -> list:
        from rich.table import Table

        t = Table(title=f"{self.program} on {self.hw}: best-case latency per {self.param}")
        for col in ("size", "unfused", "fused", "cache-aware", "by", "per item (cache-aware)"):
            t.add_column(col, justify="right")
        for n, b in zip(self.sizes, self.bounds):
            per = fmt_time(b.cache_aware / n) if isinstance(n, (int, float)) and n > 0 else "-"
            mark = ""
            if self.target_s is not None:
                mark = " ok" if b.cache_aware <= self.target_s else " over"
            t.add_row(
                str(n),
                fmt_time(b.unfused),
                fmt_time(b.fused),
                fmt_time(b.cache_aware) + mark,
                b.cache_aware_bound_by,
                per,
            )
        return [t]

    def __str__(self) -> str:
        return _render(self.renderables())

    def _repr_html_(self) -> str:
        from solar.frame import sweep_html

        return sweep_html(self)

    def to_dataframe(self):
        from solar.frame import sweep_frame

        return sweep_frame(self)

    def plot(self, ax=None):
        from solar.plots import sweep_plot

        return sweep_plot(self, ax=ax)


def sweep(
    model,
    make_inputs: Callable,
    sizes: Iterable,
    hw="H100",
    *,
    param: str = "size",
    target_ms: float | None = None,
    precision: str | None = None,
    name: str | None = None,
) -> Sweep:
    """Bounds of ``model(*make_inputs(n))`` for each ``n`` in ``sizes`` on ``hw`` (re-traced per
    size). With ``model=None``, ``make_inputs(n)`` returns ``(model, inputs)``."""
    from solar.hw import load_spec

    spec = load_spec(hw)
    sizes = list(sizes)
    if not sizes:
        raise ValueError("sweep needs at least one size")
    bounds = []
    for n in sizes:
        made = make_inputs(n)
        m, inputs = made if model is None else (model, made)
        program, g = prepare(m, inputs, precision=precision, name=name)
        bounds.append(analyse(program, g, spec))
    return Sweep(
        bounds[0].program,
        spec.name,
        spec.key,
        param,
        sizes,
        bounds,
        None if target_ms is None else target_ms * 1e-3,
    )


def problem_at(path, param: str, value):
    """A problem file's ``(name, model, inputs)`` with module constant ``param`` set to
    ``value`` (built on the meta device, like :func:`solar.problem.load_problem`)."""
    import torch

    from solar.problem import ProblemError, load_module

    module = load_module(path)
    if not hasattr(module, param):
        consts = [k for k, v in vars(module).items() if k.isupper() and isinstance(v, int)]
        raise ProblemError(
            f"{path}: has no module constant {param!r} to sweep; integer constants: "
            f"{', '.join(consts) or 'none'}"
        )
    setattr(module, param, value)
    init = getattr(module, "get_init_inputs", lambda: [])
    try:
        with torch.device("meta"):
            model = module.Model(*init())
            inputs = tuple(module.get_inputs())
    except Exception as e:
        raise ProblemError(
            f"{path}: building Model/get_inputs with {param}={value} failed: "
            f"{type(e).__name__}: {e}"
        ) from e
    if isinstance(model, torch.nn.Module):
        model.eval()
    return model, inputs


def sweep_problem(
    path,
    param: str,
    values: Iterable,
    hw="H100",
    *,
    target_ms: float | None = None,
    precision: str | None = None,
) -> Sweep:
    """:func:`sweep` over a problem file's module constant ``param`` (``TOKENS``, ``S``, ...)."""
    from pathlib import Path

    name = Path(path).stem
    return sweep(
        None,
        lambda v: problem_at(path, param, v),
        values,
        hw,
        param=param,
        target_ms=target_ms,
        precision=precision,
        name=name,
    )


# ---------------------------------------------------------------------------------------------
# command line: ``solar provision FILE --target-ms 2``


def parse_sweep(text: str) -> tuple[str, list[int]]:
    """``"TOKENS=1024,2048"`` -> ``("TOKENS", [1024, 2048])``."""
    name, eq, values = text.partition("=")
    try:
        sizes = [int(v) for v in values.split(",") if v.strip()]
    except ValueError:
        sizes = []
    if not eq or not name.strip() or not sizes:
        raise ValueError(f"--sweep wants NAME=v1,v2,... (integers), got {text!r}")
    return name.strip(), sizes


def add_problem_args(sp) -> None:
    sp.add_argument("file", help="KernelBench-style problem file (Model, get_inputs)")
    sp.add_argument(
        "--precision",
        choices=["tf32", "ieee"],
        default=None,
        help="fp32 matmul math (default: the framework's own policy)",
    )


def cmd_provision(args) -> int:
    from solar.cli import _load, _write
    from solar.graph import lift

    _, traced = _load(args)
    p = provision_graph(
        traced.program,
        lift(traced.program),
        target_s=args.target_ms * 1e-3,
        level=args.level,
        hw=args.hw,
    )
    sw = None
    if args.sweep:
        param, sizes = parse_sweep(args.sweep)
        sw = sweep_problem(
            args.file, param, sizes, args.hw, target_ms=args.target_ms, precision=args.precision
        )
    if args.json:
        d = p.to_dict()
        if sw is not None:
            d["sweep"] = sw.to_dict()
        text = json.dumps(d, indent=2, default=_json_default)
    else:
        text = str(p) + ("\n" + str(sw) if sw is not None else "")
    if args.out:
        _write(args.out, text + "\n")
    else:
        print(text)
    return 0


def register(sub) -> None:
    """Add ``solar provision`` to the CLI's subparsers."""
    sp = sub.add_parser(
        "provision",
        help="inverse roofline: bandwidth, capacity and peaks a GPU needs for a target time",
    )
    add_problem_args(sp)
    sp.add_argument("--target-ms", type=float, required=True, help="target latency in ms")
    sp.add_argument(
        "--level",
        default="cache_aware",
        choices=["cache_aware", "cache-aware", "fused", "unfused"],
        help="which bound must meet the target (default cache_aware)",
    )
    sp.add_argument("--hw", default="H100", help="reference GPU for peaks and the capacity grid")
    sp.add_argument(
        "--sweep",
        metavar="NAME=v1,v2,...",
        help="also bound the problem at each value of its module constant NAME on --hw",
    )
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.add_argument("--out", help="write the report to this file instead of stdout")
    sp.set_defaults(func=cmd_provision)

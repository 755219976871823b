"""Cross-GPU comparison (DESIGN.md §8): one program, every level's bound on several GPUs.

``compare(model, inputs, hw=["A100", "H100", "B200"])`` (or ``hw="all"``: the whole catalog)
traces and lifts once, then analyses the same einsum graph against each spec: the work and the
fused bytes are the same on every GPU; compute times, bottlenecks and the cache-aware bytes
(which depend on each GPU's on-chip capacity) differ. A GPU without a unit the program needs
is listed with the reason instead of a bound.

JSON schema ``solar.compare/1``::

    {"schema": "solar.compare/1", "program": str,
     "gpus": [{"hw": str, "hw_key": str, "on_chip_capacity": int, "dram_bandwidth": float,
               "bounds": {"unfused_s", "fused_s", "cache_aware_s": float,
                          "unfused_bound_by", "fused_bound_by", "cache_aware_bound_by": str},
               "bytes": {"unfused": int, "fused": int, "cache_aware": float}}],
     "errors": {hw_key: str}}
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from solar.report import Bound, fmt_bytes, fmt_time

SCHEMA = "solar.compare/1"


def resolve_hw(hw) -> list:
    """``"all"``, ``"A100,H100"``, a name, a spec, or a list of those -> specs."""
    from solar.hw import list_specs, load_spec

    if isinstance(hw, str):
        if hw.strip().lower() == "all":
            return list_specs()
        names: Iterable = [h for h in hw.split(",") if h.strip()] if "," in hw else [hw]
    elif isinstance(hw, Iterable) and not isinstance(hw, dict):
        names = list(hw)
    else:
        names = [hw]
    specs = [load_spec(h.strip() if isinstance(h, str) else h) for h in names]
    if not specs:
        raise ValueError("compare needs at least one GPU")
    return specs


@dataclass
class Comparison:
    program: str
    bounds: list[Bound]
    errors: dict[str, str] = field(default_factory=dict)
    specs: list = field(default_factory=list, repr=False)

    def bound(self, hw: str) -> Bound:
        """The bound on the GPU with this key or name."""
        for b in self.bounds:
            if hw in (b.hw_key, b.hw):
                return b
        from solar.hw import load_spec

        key = load_spec(hw).key
        for b in self.bounds:
            if b.hw_key == key:
                return b
        raise KeyError(f"{hw} is not in this comparison ({', '.join(self.keys)})")

    @property
    def keys(self) -> list[str]:
        return [b.hw_key for b in self.bounds]

    def fastest(self, level: str = "cache_aware") -> Bound:
        from solar.provisioning import level_time

        return min(self.bounds, key=lambda b: level_time(b, level))

    def to_dict(self) -> dict:
        gpus = []
        for b, spec in zip(self.bounds, self.specs or [None] * len(self.bounds)):
            d = b.to_dict()
            gpus.append(
                {
                    "hw": b.hw,
                    "hw_key": b.hw_key,
                    "on_chip_capacity": spec.on_chip_capacity if spec else None,
                    "dram_bandwidth": spec.dram_bandwidth if spec else None,
                    "bounds": d["bounds"],
                    "bytes": d["totals"]["bytes"],
                    "compute_s": d["totals"]["compute_s"],
                }
            )
        return {"schema": SCHEMA, "program": self.program, "gpus": gpus, "errors": self.errors}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def renderables(self) -> list:
        from rich.table import Table

        t = Table(title=f"{self.program}: speed-of-light bounds per GPU")
        cols = ("GPU", "unfused", "by", "fused", "by ", "cache-aware", "by  ", "DRAM bytes (c-a)")
        for col in (*cols, "vs fastest"):
            t.add_column(col, justify="left" if col.strip() in ("GPU", "by") else "right")
        best = self.fastest().cache_aware if self.bounds else 0.0
        for b in sorted(self.bounds, key=lambda b: b.cache_aware):
            t.add_row(
                b.hw,
                fmt_time(b.unfused),
                b.unfused_bound_by,
                fmt_time(b.fused),
                b.fused_bound_by,
                fmt_time(b.cache_aware),
                b.cache_aware_bound_by,
                fmt_bytes(b.bytes_cache_aware),
                f"x{b.cache_aware / best:.3g}" if best > 0 else "-",
            )
        out = [t]
        if self.errors:
            out.append("not comparable: " + "; ".join(f"{k}: {v}" for k, v in self.errors.items()))
        if self.bounds:
            b = self.bounds[0]
            out.append(
                f"same work on every GPU: {sum(b.flops.values()):.4g} ops, fused DRAM bytes "
                f"{fmt_bytes(b.bytes_fused)}; cache-aware bytes depend on each GPU's on-chip "
                "capacity"
            )
        return out

    def __str__(self) -> str:
        from solar.provisioning import _render

        return _render(self.renderables())

    def __repr__(self) -> str:
        parts = ", ".join(f"{b.hw_key} {fmt_time(b.cache_aware)}" for b in self.bounds)
        return f"Comparison({self.program!r}: cache-aware {parts})"

    def _repr_html_(self) -> str:
        from solar.frame import comparison_html

        return comparison_html(self)

    def to_dataframe(self):
        from solar.frame import comparison_frame

        return comparison_frame(self)

    def plot(self, ax=None):
        from solar.plots import compare_plot

        return compare_plot(self, ax=ax)


def compare_graph(program, g, hw="all") -> Comparison:
    """:func:`compare` on an already lifted graph."""
    from solar.provisioning import analyse

    bounds, errors, specs = [], {}, []
    for spec in resolve_hw(hw):
        try:
            bounds.append(analyse(program, g, spec))
            specs.append(spec)
        except ValueError as e:  # a unit the GPU lacks
            errors[spec.key] = str(e).splitlines()[0]
    return Comparison(g.graph["name"], bounds, errors, specs)


def compare(
    model,
    inputs,
    hw=("A100", "H100", "B200"),
    *,
    precision: str | None = None,
    name: str | None = None,
) -> Comparison:
    """Bounds of ``model(*inputs)`` on each GPU of ``hw`` (names, specs, or ``"all"``): traced
    once, analysed per spec."""
    from solar.provisioning import prepare

    program, g = prepare(model, inputs, precision=precision, name=name)
    return compare_graph(program, g, hw)


def cmd_compare(args) -> int:
    from solar.cli import _load, _write
    from solar.graph import lift

    _, traced = _load(args)
    c = compare_graph(traced.program, lift(traced.program), args.hw)
    text = c.to_json() if args.json else str(c)
    if args.out:
        _write(args.out, text + "\n")
    else:
        print(text)
    return 0


def register(sub) -> None:
    """Add ``solar compare`` to the CLI's subparsers."""
    from solar.provisioning import add_problem_args

    sp = sub.add_parser("compare", help="bounds of one program on several GPUs, one table")
    add_problem_args(sp)
    sp.add_argument(
        "--hw",
        default="all",
        help="comma-separated GPU names or 'all' (the catalog; default)",
    )
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.add_argument("--out", help="write the report to this file instead of stdout")
    sp.set_defaults(func=cmd_compare)

"""The user-facing result of an analysis: :class:`Bound`, with a table, JSON and HTML.

JSON schema ``solar.bound/1`` (stable; agents may rely on it)::

    {"schema": "solar.bound/1", "program": str, "hw": str (spec name), "hw_key": str,
     "bounds": {"unfused_s": float, "fused_s": float, "cache_aware_s": float,
                "unfused_bound_by": str, "fused_bound_by": str, "cache_aware_bound_by": str},
     "totals": {"flops": {op_class: int}, "bytes": {"unfused": int, "fused": int,
                "cache_aware": float}, "compute_s": {unit: float}},
     "kernels": [{"name", "op", "source", "module", "flops": {op_class: int},
                  "bytes_read": int, "bytes_written": int, "compute_s", "memory_s",
                  "time_s": float, "bound_by": str, "exact": bool}],
     "assumptions": [str]}

``bound_by`` is a physical unit (``tensor``, ``fma``, ``fp64``, ``int``, ``sfu``) or ``dram``.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

SCHEMA = "solar.bound/1"


@dataclass(frozen=True)
class KernelRow:
    name: str
    op: str
    source: str
    module: str
    flops: dict[str, int]
    bytes_read: int
    bytes_written: int
    compute_s: float
    memory_s: float
    time_s: float
    bound_by: str
    exact: bool

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Bound:
    program: str
    hw: str
    hw_key: str
    unfused: float
    fused: float
    cache_aware: float
    unfused_bound_by: str
    fused_bound_by: str
    cache_aware_bound_by: str
    flops: dict[str, int]
    bytes_unfused: int
    bytes_fused: int
    bytes_cache_aware: float
    compute_s: dict[str, float]
    kernels: list[KernelRow]
    assumptions: list[str]
    graph: object = field(default=None, repr=False)  # the einsum graph (networkx)
    ir: object = field(default=None, repr=False)  # the Affine Loop IR program
    spec: object = field(default=None, repr=False)  # the HardwareSpec the bound is for

    def to_dataframe(self, by: str = "kernel"):
        """pandas DataFrame of the kernels (``by="kernel"``) or of the levels."""
        from solar.frame import bound_frame

        return bound_frame(self, by)

    def plot(self, kind: str = "roofline", **kw):
        """matplotlib figure: ``roofline``, ``capacity`` or ``kernels``."""
        from solar.plots import plot_bound

        return plot_bound(self, kind, **kw)

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "program": self.program,
            "hw": self.hw,
            "hw_key": self.hw_key,
            "bounds": {
                "unfused_s": self.unfused,
                "fused_s": self.fused,
                "cache_aware_s": self.cache_aware,
                "unfused_bound_by": self.unfused_bound_by,
                "fused_bound_by": self.fused_bound_by,
                "cache_aware_bound_by": self.cache_aware_bound_by,
            },
            "totals": {
                "flops": dict(self.flops),
                "bytes": {
                    "unfused": self.bytes_unfused,
                    "fused": self.bytes_fused,
                    "cache_aware": self.bytes_cache_aware,
                },
                "compute_s": dict(self.compute_s),
            },
            "kernels": [k.to_dict() for k in self.kernels],
            "assumptions": list(self.assumptions),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        from rich.console import Console

        buf = io.StringIO()
        console = Console(file=buf, width=140, color_system=None, force_terminal=False)
        for renderable in self.renderables():
            console.print(renderable)
        return buf.getvalue().rstrip()

    def __repr__(self) -> str:
        return (
            f"Bound({self.program!r} on {self.hw}: unfused {fmt_time(self.unfused)}, "
            f"fused {fmt_time(self.fused)}, cache-aware {fmt_time(self.cache_aware)})"
        )

    def renderables(self) -> list:
        from rich.table import Table

        t = Table(title=f"{self.program} on {self.hw}: per-kernel bounds (unfused)")
        for col in (
            "kernel",
            "op",
            "source",
            "work",
            "DRAM bytes",
            "compute",
            "memory",
            "bound",
            "by",
        ):
            t.add_column(col, justify="right" if col not in ("kernel", "op", "source") else "left")
        for k in self.kernels:
            t.add_row(
                k.name,
                k.op,
                k.source,
                fmt_ops(k.flops),
                fmt_bytes(k.bytes_read + k.bytes_written) + ("" if k.exact else "≥"),
                fmt_time(k.compute_s),
                fmt_time(k.memory_s),
                fmt_time(k.time_s),
                k.bound_by,
            )
        s = Table(title="speed-of-light bounds")
        for col in ("level", "time", "bound by", "DRAM bytes", "meaning"):
            s.add_column(col)
        s.add_row(
            "unfused",
            fmt_time(self.unfused),
            self.unfused_bound_by,
            fmt_bytes(self.bytes_unfused),
            "one kernel per operator, DRAM in between",
        )
        s.add_row(
            "fused",
            fmt_time(self.fused),
            self.fused_bound_by,
            fmt_bytes(self.bytes_fused),
            "everything fused, infinite on-chip memory",
        )
        s.add_row(
            "cache-aware",
            fmt_time(self.cache_aware),
            self.cache_aware_bound_by,
            fmt_bytes(self.bytes_cache_aware),
            "everything fused, finite on-chip memory",
        )
        notes = "assumptions:\n" + "\n".join(f"  - {a}" for a in self.assumptions)
        total = "total work: " + fmt_ops(self.flops)
        return [t, s, total, notes]

    def _repr_html_(self) -> str:
        from solar.frame import bound_html

        return bound_html(self)


def fmt_time(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


def fmt_bytes(b: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:.4g} {unit}"
    return f"{b:.0f} B"


def fmt_ops(ops: dict[str, float]) -> str:
    parts = []
    for cls, n in sorted(ops.items(), key=lambda kv: -kv[1]):
        if not n:
            continue
        for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1)):
            if n >= scale:
                parts.append(f"{n / scale:.3g}{unit} {cls}")
                break
    return ", ".join(parts) or "-"

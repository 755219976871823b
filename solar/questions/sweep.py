"""The best-case latency per problem size (the reverse of provisioning): one program re-traced
at each size of a parameter and bounded on one GPU.

``sweep(model, make_inputs, sizes, hw=...)`` re-traces at each size (``make_inputs(n)`` returns
the inputs, or ``(model, inputs)`` when ``model`` is None); :func:`sweep_problem` does the same
for a problem file by setting a module constant (``TOKENS``, ``SEQ``, ...) before building its
``Model`` and inputs (:func:`solar.problem.problem_at`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from solar.api import bound_graph, trace_and_lift
from solar.backend.result import Bound
from solar.hw import load_spec
from solar.problem import problem_at
from solar.viewable import Viewable

SCHEMA = "solar.sweep/1"


@dataclass
class Sweep(Viewable):
    """Bounds of one program at several sizes of one parameter, on one GPU."""

    program: str
    hw: str
    hw_key: str
    param: str
    sizes: list
    bounds: list[Bound]
    target_s: float | None = None

    def times(self, level: str = "cache_aware") -> list[float]:
        return [b.time(level) for b in self.bounds]

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
            "schema": SCHEMA,
            "program": self.program,
            "hw": self.hw,
            "hw_key": self.hw_key,
            "param": self.param,
            "target_s": self.target_s,
            "points": rows,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)


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
    spec = load_spec(hw)
    sizes = list(sizes)
    if not sizes:
        raise ValueError("sweep needs at least one size")
    bounds = []
    for n in sizes:
        made = make_inputs(n)
        m, inputs = made if model is None else (model, made)
        program, g = trace_and_lift(m, inputs, precision=precision, name=name)
        bounds.append(bound_graph(program, g, spec))
    return Sweep(
        bounds[0].program,
        spec.name,
        spec.key,
        param,
        sizes,
        bounds,
        None if target_ms is None else target_ms * 1e-3,
    )


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

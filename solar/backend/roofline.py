"""Unfused and fused speed-of-light bounds (docs/bounds.md), from the einsum graph alone.

- unfused = Σ over launched kernels of max(compute, DRAM bytes / bandwidth), each kernel
  reading its inputs and writing its outputs once through DRAM;
- fused = max(compute of the whole graph, bytes of graph inputs + weights + outputs, each
  once / bandwidth): a lower bound for any implementation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property

from solar.backend.units import ComputeTime, compute_time
from solar.graph.types import Graph


@dataclass(frozen=True)
class KernelTime:
    name: str
    op: str
    source: str
    module: str
    ops: dict[str, int]
    bytes_read: int
    bytes_written: int
    compute: ComputeTime
    memory_s: float
    exact: bool

    # decided once per kernel (a symbolic analysis records the same guard at every reading)
    @cached_property
    def time_s(self) -> float:
        return max(self.compute.seconds, self.memory_s)

    @cached_property
    def bound_by(self) -> str:
        return "dram" if self.memory_s >= self.compute.seconds else self.compute.bound_by


def graph_ops(g: Graph, nodes=None) -> dict[str, int]:
    total: Counter[str] = Counter()
    for rec in g.ops() if nodes is None else map(g.op, nodes):
        if rec is not None:
            total.update(rec.ops)
    return dict(total)


def kernel_times(g: Graph, spec) -> list[KernelTime]:
    rows = []
    for k in g.info.kernels:
        ops = graph_ops(g, k.statements)
        read, written = sum(k.reads.values()), sum(k.writes.values())
        rows.append(
            KernelTime(
                k.name,
                k.op,
                k.source,
                k.module,
                ops,
                read,
                written,
                compute_time(ops, spec),
                (read + written) / spec.dram_bandwidth,
                k.exact,
            )
        )
    return rows


def fused_bytes(g: Graph) -> int:
    return g.info.fused_io.total

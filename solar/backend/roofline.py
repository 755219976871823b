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

import networkx as nx

from solar.backend.units import ComputeTime, compute_time
from solar.graph.types import graph_info, op_node


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


def graph_ops(g: nx.MultiDiGraph, nodes=None) -> dict[str, int]:
    total: Counter[str] = Counter()
    for n in nodes if nodes is not None else g.nodes:
        rec = op_node(g, n)
        if rec is not None:
            total.update(rec.ops)
    return dict(total)


def kernel_times(g: nx.MultiDiGraph, spec) -> list[KernelTime]:
    rows = []
    for k in graph_info(g).kernels:
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


def fused_bytes(g: nx.MultiDiGraph) -> int:
    return graph_info(g).fused_io.total

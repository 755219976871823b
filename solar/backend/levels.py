"""The bounds' vocabulary as enums: the three levels and what binds a time.

:class:`~solar.ir.vocabulary.Word` s (string enums), so a member *is* its string: the JSON
of a Bound, its views and the files written from it keep the strings they always had
(``"cache_aware"``, ``"dram"``).
"""

from __future__ import annotations

from solar.graph.types import Word


class Level(Word):
    """A bound level (docs/bounds.md)."""

    UNFUSED = "unfused"  # one kernel per source operator, DRAM in between
    FUSED = "fused"  # everything fused, infinite on-chip memory
    CACHE_AWARE = "cache_aware"  # everything fused, finite on-chip memory


class Unit(Word):
    """A physical unit of the GPU that runs op classes (:mod:`solar.backend.units`)."""

    TENSOR = "tensor"
    FMA = "fma"
    FP64 = "fp64"
    INT = "int"
    SFU = "sfu"


class BoundBy(Word):
    """What binds a time: a compute unit (the values of :class:`Unit`), DRAM bandwidth, the
    launch/dependence latency floor, or nothing (no work)."""

    TENSOR = "tensor"
    FMA = "fma"
    FP64 = "fp64"
    INT = "int"
    SFU = "sfu"
    DRAM = "dram"
    LATENCY = "latency"
    NONE = "none"

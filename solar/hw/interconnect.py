"""How GPUs of one kind talk to each other: the ``interconnect:`` block of a spec file.

Every bandwidth here is **per GPU and per direction** (bytes/s), the rate at which one GPU can
send (and, at the same time, receive). Vendor figures such as the H100's "NVLink 900 GB/s" are
*bidirectional*: the sum of both directions over all of a GPU's links (18 NVLink-4 links x
25 GB/s each way x 2 directions = 900 GB/s). A collective's time is bytes sent by one GPU /
its per-direction bandwidth, so a bidirectional figure would halve every communication bound.

``link_bandwidth`` is what the communication bounds use: NVLink plus PCIe. Every byte a GPU
sends leaves through one of the two, so their sum is an upper bound of the hardware even
where a library sends only over NVLink.

YAML (readable units, each number with its source in a comment)::

    interconnect:
      nvlink_generation: 4          # null: no NVLink
      nvlink_links: 18
      nvlink_link_gbs: 25           # GB/s per link per direction
      nvswitch: true                # all GPUs of the domain reach each other at full rate
      nvlink_domain_gpus: 8         # GPUs one NVLink fabric (or bridge) connects
      in_network_reduction: true    # the switch adds (NVLink SHARP)
      pcie_generation: 5
      pcie_lanes: 16
      host_gpus: 8                  # GPUs of this kind in one host: the largest plan searched
      sources: [...]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: PCIe signalling rate per lane (GT/s) by generation; one transfer carries one bit, so
#: GT/s x lanes / 8 is an upper bound in GB/s per direction (128b/130b coding only lowers it).
PCIE_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}

_FIELDS = {
    "nvlink_generation": "int_or_none",
    "nvlink_links": "int",
    "nvlink_link_gbs": "number",
    "nvswitch": "bool",
    "nvlink_domain_gpus": "int",
    "in_network_reduction": "bool",
    "pcie_generation": "int",
    "pcie_lanes": "int",
    "host_gpus": "int",
    "sources": "list",
}


@dataclass(frozen=True)
class Interconnect:
    """One GPU's links to its peers (see the module docstring; bandwidths per direction)."""

    nvlink_generation: int | None
    nvlink_links: int
    nvlink_link_gbs: float  # GB/s per link per direction
    nvswitch: bool
    nvlink_domain_gpus: int
    in_network_reduction: bool
    pcie_generation: int
    pcie_lanes: int
    host_gpus: int
    sources: tuple[str, ...] = ()

    @property
    def nvlink_bandwidth(self) -> float:
        """NVLink bytes/s per direction, all links of one GPU (0 without NVLink)."""
        return self.nvlink_links * self.nvlink_link_gbs * 1e9

    @property
    def nvlink_bidirectional(self) -> float:
        """The vendor's "NVLink N GB/s" figure: both directions added (bytes/s)."""
        return 2 * self.nvlink_bandwidth

    @property
    def pcie_bandwidth(self) -> float:
        """PCIe bytes/s per direction (raw signalling rate, an upper bound)."""
        return PCIE_GTS[self.pcie_generation] * self.pcie_lanes / 8 * 1e9

    @property
    def link_bandwidth(self) -> float:
        """All of one GPU's links, one direction: NVLink + PCIe (bytes/s)."""
        return self.nvlink_bandwidth + self.pcie_bandwidth

    def reduces_in_network(self, n: int) -> bool:
        """Whether an all-reduce over ``n`` GPUs may be reduced by the switch (it moves less
        only for ``n > 2``: two GPUs exchange ``M`` either way)."""
        return self.in_network_reduction and self.nvswitch and 2 < n <= self.nvlink_domain_gpus

    def describe(self) -> str:
        if self.nvlink_generation is None:
            nv = "no NVLink"
        else:
            fabric = (
                f"NVSwitch, {self.nvlink_domain_gpus} GPUs"
                if self.nvswitch
                else f"bridged groups of {self.nvlink_domain_gpus}"
            )
            nv = (
                f"NVLink {self.nvlink_generation}: {self.nvlink_links} links x "
                f"{self.nvlink_link_gbs:g} GB/s = {self.nvlink_bandwidth / 1e9:g} GB/s per "
                f"direction ({self.nvlink_bidirectional / 1e9:g} GB/s bidirectional), {fabric}"
            )
        return (
            f"{nv}; PCIe Gen{self.pcie_generation} x{self.pcie_lanes} "
            f"{self.pcie_bandwidth / 1e9:g} GB/s per direction"
        )

    def to_dict(self) -> dict[str, Any]:
        return {f: list(v) if isinstance(v, tuple) else v for f, v in self.__dict__.items()}


def parse_interconnect(data: Any, bad) -> Interconnect | None:
    """The ``interconnect:`` mapping of a spec (None when absent); ``bad(msg)`` makes the
    one-line SpecError naming the field."""
    if data is None:
        return None
    if isinstance(data, Interconnect):
        return data
    if not isinstance(data, Mapping):
        raise bad(f"field 'interconnect' must be a mapping, got {data!r}")
    for k in data:
        if k not in _FIELDS:
            raise bad(f"unknown field 'interconnect.{k}'; fields are {', '.join(_FIELDS)}")
    kw: dict[str, Any] = {}
    for f, kind in _FIELDS.items():
        v = data.get(f)
        where = f"interconnect.{f}"
        if f == "sources":
            v = [v] if isinstance(v, str) else (v or [])
            if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
                raise bad(f"field '{where}' must be a list of strings, got {v!r}")
            kw[f] = tuple(v)
        elif kind == "bool":
            if not isinstance(v, bool):
                raise bad(f"field '{where}' must be true or false, got {v!r}")
            kw[f] = v
        elif kind == "int_or_none" and v is None:
            kw[f] = None
        elif kind in ("int", "int_or_none"):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise bad(f"field '{where}' must be a whole number >= 0, got {v!r}")
            kw[f] = v
        else:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
                raise bad(f"field '{where}' must be a number >= 0, got {v!r}")
            kw[f] = float(v)
    ic = Interconnect(**kw)
    _check(ic, bad)
    return ic


def _check(ic: Interconnect, bad) -> None:
    if ic.pcie_generation not in PCIE_GTS:
        raise bad(
            f"interconnect.pcie_generation {ic.pcie_generation} is not one of "
            f"{', '.join(map(str, PCIE_GTS))}"
        )
    if ic.pcie_lanes not in (1, 2, 4, 8, 16):
        raise bad(f"interconnect.pcie_lanes must be 1, 2, 4, 8 or 16, got {ic.pcie_lanes}")
    if ic.host_gpus < 1:
        raise bad("interconnect.host_gpus must be at least 1")
    has_links = ic.nvlink_links > 0 and ic.nvlink_link_gbs > 0
    if (ic.nvlink_generation is None) == has_links:
        raise bad(
            "interconnect: give nvlink_generation with nvlink_links and nvlink_link_gbs > 0, "
            "or nvlink_generation: null with 0 links (no NVLink)"
        )
    if ic.nvlink_generation is None and (ic.nvswitch or ic.in_network_reduction):
        raise bad("interconnect: nvswitch / in_network_reduction need NVLink")
    if ic.in_network_reduction and not ic.nvswitch:
        raise bad("interconnect.in_network_reduction needs an NVSwitch (nvswitch: true)")

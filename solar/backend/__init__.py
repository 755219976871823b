"""Analytical backends: compute units, unfused/fused rooflines, cache-aware I/O bounds, and the
result they assemble (:class:`~solar.backend.result.Bound`, :mod:`.analyze`).

Layer: reads only the einsum graph (:mod:`solar.graph`) and a hardware spec (:mod:`solar.hw`);
imports nothing above them. A new frontend gets every bound for free; a new bound works for
every frontend.
"""

from solar.backend.analyze import analyze

__all__ = ["analyze"]

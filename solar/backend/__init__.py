"""Analytical backends: compute units, unfused/fused rooflines, cache-aware I/O bounds."""

from solar.backend.analyze import analyze

__all__ = ["analyze"]

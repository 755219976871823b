"""The answer of every footprint count."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Footprint:
    """Distinct elements touched; ``exact=False`` means a proven lower bound."""

    elements: int
    exact: bool

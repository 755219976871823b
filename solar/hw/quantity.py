"""Quantities written with their units (``2TB/s``, ``100MiB``, ``1.98GHz``, ``1000TFLOP/s``,
``2us``, ``700W``) read into base units (bytes/s, bytes, Hz, ops/s, seconds, watts): the one
parser of what-if hardware (:mod:`solar.hw.whatif`).

Decimal prefixes are powers of 1000 (k, M, G, T, P), binary ones powers of 1024 (Ki, Mi, Gi,
Ti; bytes and bandwidths only), and times take m, u (or µ), n. ``x1.5`` (or ``1.5x``) is a
factor of the current value rather than a quantity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: dimension -> what it is called in a message
NAMES: dict[str, str] = {
    "bandwidth": "a bandwidth",
    "bytes": "a size in bytes",
    "frequency": "a frequency",
    "ops": "a compute rate",
    "time": "a time",
    "power": "a power",
    "count": "a whole number",
}
#: dimension -> (unit symbols, an example for error messages)
DIMENSIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "bandwidth": (("B/s",), "2TB/s"),
    "bytes": (("B",), "100MiB"),
    "frequency": (("Hz",), "1.98GHz"),
    "ops": (("FLOP/s", "FLOPS", "OP/s", "OPS"), "1000TFLOP/s"),
    "time": (("s",), "2us"),
    "power": (("W",), "700W"),
    "count": ((), "132"),
}

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
_SMALL = {"": 1.0, "m": 1e-3, "u": 1e-6, "µ": 1e-6, "n": 1e-9}
_PREFIXES: dict[str, dict[str, float]] = {
    "bandwidth": {**_DECIMAL, **_BINARY},
    "bytes": {**_DECIMAL, **_BINARY},
    "frequency": _DECIMAL,
    "ops": _DECIMAL,
    "time": _SMALL,
    "power": _DECIMAL,
    "count": {"": 1.0},
}
_TEXT = re.compile(r"\s*([-+]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S*)\s*")
_FACTOR = re.compile(r"\s*(?:[x*]\s*([\d.eE+-]+)|([\d.eE+-]+)\s*x)\s*")


@dataclass(frozen=True)
class Factor:
    """``x1.5``: a multiple of the current value, not a quantity."""

    value: float


def example(dimension: str) -> str:
    """A well-formed value of ``dimension`` (for error messages)."""
    return DIMENSIONS[dimension][1]


def parse_quantity(text: str, dimension: str) -> float | Factor:
    """``text`` in the base unit of ``dimension`` (a :class:`Factor` for ``x1.5``). Raises
    ValueError with a one-line reason naming the value and an example of a good one."""
    m = _FACTOR.fullmatch(text)
    if m:
        try:
            f = float(m.group(1) or m.group(2))
        except ValueError:
            f = float("nan")
        if not 0 < f < float("inf"):
            raise ValueError(f"{text!r}: a factor must be a positive number (e.g. x1.5)")
        return Factor(f)
    m = _TEXT.fullmatch(text)
    want = NAMES[dimension]
    good = f"e.g. {example(dimension)}" + (" or a factor x1.5" if dimension != "count" else "")
    if not m:
        raise ValueError(f"{text!r} is not {want} ({good})")
    number, unit = float(m.group(1).replace("_", "")), m.group(2)
    if dimension == "count":
        if unit or number != int(number):
            raise ValueError(f"{text!r} is not {want} ({good})")
        return number
    if not unit:
        raise ValueError(f"{text!r} has no unit: give {want} with its unit ({good})")
    for symbol in sorted(DIMENSIONS[dimension][0], key=len, reverse=True):
        if unit.endswith(symbol) and unit[: -len(symbol)] in _PREFIXES[dimension]:
            return number * _PREFIXES[dimension][unit[: -len(symbol)]]
    other = next((d for d in DIMENSIONS if d != dimension and _fits(unit, d)), None)
    got = f" ({unit} is {NAMES[other]})" if other else ""
    raise ValueError(f"{text!r} is not {want}{got} ({good})")


def _fits(unit: str, dimension: str) -> bool:
    return any(
        unit.endswith(s) and unit[: -len(s)] in _PREFIXES[dimension]
        for s in DIMENSIONS[dimension][0]
    )

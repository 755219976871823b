"""Human-readable numbers: times, bytes, op counts and rates.

The lowest layer of solar: every module may use it, and it imports nothing of solar.
"""

from __future__ import annotations

import math


def fmt_time(s: float) -> str:
    """``0.0123`` -> ``"12.3 ms"`` (4 significant digits; s, ms, us or ns)."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


def fmt_signed_time(s: float) -> str:
    """A time difference with its sign: ``"+1.2 ms"``, ``"-3 us"``, ``"-inf"``."""
    if not math.isfinite(s):
        return "-inf" if s < 0 else "inf"
    return ("-" if s < 0 else "+") + fmt_time(abs(s))


def fmt_bytes(b: float) -> str:
    """``3.2e9`` -> ``"3.2 GB"`` (decimal units)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:.4g} {unit}"
    return f"{b:.0f} B"


def fmt_ops(ops: dict[str, float]) -> str:
    """Op counts per op class, largest first: ``"275G cuda_fp32, 33.6M sfu"``."""
    parts = []
    for cls, n in sorted(ops.items(), key=lambda kv: -kv[1]):
        if not n:
            continue
        for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1)):
            if n >= scale:
                parts.append(f"{n / scale:.3g}{unit} {cls}")
                break
    return ", ".join(parts) or "-"


def fmt_rate(x: float | None, unit: str) -> str:
    """``2e12, "B/s"`` -> ``"2 TB/s"``; ``None`` -> ``"-"``; infinite -> ``"impossible"``."""
    if x is None:
        return "-"
    if not math.isfinite(x):
        return "impossible"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.4g} {prefix}{unit}"
    return f"{x:.4g} {unit}"


def jsonable(x):
    """A JSON-safe copy: non-finite floats become strings (``"inf"``, ``"nan"``)."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    return x

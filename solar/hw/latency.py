"""The ``latency:`` block of a GPU spec: floors on time that no amount of bandwidth or compute
removes (issue 13; the bounds that use them are in :mod:`solar.backend.latency`).

Two constants, both *lower* estimates (a bound built on them stays a lower bound only if they
never exceed the real floor of the GPU):

- ``kernel_launch``: the minimum time between the ends of two dependent kernels launched one
  after the other on one stream -- measured by ``solar calibrate`` as the time per kernel of a
  CUDA-graph replay of a chain of empty kernels (the fastest way to run a sequence of kernels);
- ``sm_sync``: the minimum time for a value written by one SM to be read by another SM (one
  way), by any path (the L2, or distributed shared memory between the SMs of a cluster) --
  measured by ``solar calibrate`` as half the round trip of a flag ping-ponged between two
  thread blocks through the L2.

In a YAML file the block reads ``kernel_launch_us`` / ``sm_sync_us`` (microseconds); in base
units (what :meth:`HardwareSpec.to_dict` writes) ``kernel_launch`` / ``sm_sync`` (seconds). A
spec without the block has no latency floor (both 0).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from typing import Any

#: key (base units: seconds) -> what it is
LATENCY_KEYS: dict[str, str] = {
    "kernel_launch": "minimum time per dependent kernel launch (CUDA-graph replay of empty "
    "kernels)",
    "sm_sync": "minimum one-way latency of a value from one SM to another",
}
#: A latency above this is surely a unit mistake (seconds given where microseconds were meant).
MAX_LATENCY_S = 1e-3


def parse_latency(v: Any, bad) -> dict[str, float]:
    """``latency:`` of a spec mapping -> ``{key: seconds}``; ``bad(msg)`` builds the error."""
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise bad(f"field 'latency' must be a mapping, got {v!r}")
    out: dict[str, float] = {}
    for k, x in v.items():
        k = str(k)
        if k in LATENCY_KEYS:
            key, scale = k, 1.0
        elif k.endswith("_us") and k[: -len("_us")] in LATENCY_KEYS:
            key, scale = k[: -len("_us")], 1e-6
        else:
            choices = [f"{c}_us" for c in LATENCY_KEYS] + list(LATENCY_KEYS)
            close = difflib.get_close_matches(k, choices, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise bad(
                f"unknown key {k!r} in latency{hint}; use "
                + " or ".join(f"{c}_us" for c in LATENCY_KEYS)
            )
        if key in out:
            raise bad(f"latency gives {key} twice")
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise bad(f"field 'latency.{k}' must be a number, got {x!r}")
        out[key] = float(x) * scale
    return out


def check_latency(latency: Mapping[str, float], bad) -> None:
    """Values in seconds, ``0 <= value <= MAX_LATENCY_S``."""
    for k, s in latency.items():
        if k not in LATENCY_KEYS:
            raise bad(f"unknown latency key {k!r}; keys are {', '.join(LATENCY_KEYS)}")
        if not 0 <= s <= MAX_LATENCY_S:
            raise bad(
                f"latency.{k} = {s!r} s is not between 0 and {MAX_LATENCY_S:g} s (give "
                f"microseconds as {k}_us)"
            )


def latency_yaml_block(latency: Mapping[str, float], comments: Mapping[str, str]) -> str:
    """The ``latency:`` block of a YAML spec (microseconds), one comment per key."""
    lines = ["latency:"]
    for k in LATENCY_KEYS:
        if k in latency:
            note = f"   # {comments[k]}" if comments.get(k) else ""
            lines.append(f"  {k}_us: {latency[k] * 1e6:.4g}{note}")
    return "\n".join(lines) + "\n"

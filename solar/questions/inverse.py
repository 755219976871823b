"""Questions about sizes, answered on a symbolic bound (:func:`solar.bound` with
``symbolic=``) without tracing again, each as an exact integer and one line:

- :func:`largest_meeting`: the largest size whose bound at a level meets a target time
  (:meth:`~solar.symbolic.symbolic_bound.SymbolicBound.solve`: bisection on exact evaluations; it
  assumes the bound grows with the size, as a program's work and bytes do);
- :func:`memory_limit`: the size where the program's peak memory reaches the GPU's DRAM
  capacity (bisection on exact evaluations of the peak, in integers; it assumes the peak
  grows with the size);
- :func:`crossovers`: where a level's bound-by term changes (memory-bound below, tensor
  cores above), from the guards of the analysis' pieces, among the sizes that fit.

Single sizes are evaluated by :meth:`~solar.symbolic.symbolic_bound.SymbolicBound.numeric_at` (the
graph evaluated there, analysed as numbers: exact, and cheaper for one point than a new
piece); the crossovers walk the pieces, each analysed once.

Every answer lies inside the sizes the trace counts exactly (its count region along that
size, the other sizes at their traced values or those given): at its ends the answer says
so instead of claiming beyond.
"""

from __future__ import annotations

from dataclasses import dataclass

from solar.algebra.size import symbol
from solar.backend.result import level_name
from solar.fmt import fmt_bytes, fmt_time
from solar.symbolic.symbolic_bound import SymbolicBound

#: the largest size a question searches up to (the count region may end sooner)
HI = 1 << 40


@dataclass(frozen=True)
class Answer:
    """One question's answer: ``value`` (an int, None, or crossovers ``[(size, below,
    above)]``) and the one line that says it."""

    question: str  # "largest_meeting", "memory_limit" or "crossovers"
    size: str
    value: object
    text: str

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict:
        return {
            "question": self.question,
            "size": self.size,
            "value": self.value,
            "text": self.text,
        }


def span(b: SymbolicBound, size: str, hi: int = HI, **fixed: int) -> tuple[int, int]:
    """The integers of ``size`` (others at ``fixed`` or traced) inside the count region,
    through the traced value: ``(lo, hi)``."""
    if size not in b.sizes:
        raise ValueError(f"unknown size {size!r}; this bound's sizes are {', '.join(b.sizes)}")
    point = {symbol(k): v for k, v in {**b.sizes, **fixed}.items()}
    if b.counts_region is None:
        return 1, hi
    return b.counts_region.interval(symbol(size), point, hi=hi)


def largest_meeting(
    b: SymbolicBound,
    size: str,
    target_s: float,
    level: str = "cache_aware",
    hi: int = HI,
    **fixed: int,
) -> Answer:
    """The largest ``size`` whose ``level`` bound is at most ``target_s`` seconds
    (:meth:`~solar.symbolic.symbolic_bound.SymbolicBound.solve`)."""
    level = level_name(level)
    lo, top = span(b, size, hi, **fixed)
    x = b.solve(level, target_s, size, hi=hi, **fixed)
    goal = f"{fmt_time(target_s)} ({level.replace('_', '-')} bound on {b.hw_key})"

    def t(v: int) -> str:
        return _time(b.numeric_at(**{**fixed, size: v}).time(level), target_s)

    if x is None:
        text = f"no {size} meets {goal}: {size}={lo} already takes {t(lo)}"
    elif x >= top:
        text = f"every {size} from {lo} to {x} meets {goal} ({t(x)} at {x}; {_end(top, hi)})"
    else:
        text = f"{size} <= {x} meets {goal}: {t(x)} at {x}, {t(x + 1)} at {x + 1}"
    return Answer("largest_meeting", size, x, text)


def memory_limit(b: SymbolicBound, size: str, hi: int = HI, **fixed: int) -> Answer:
    """The largest ``size`` whose peak memory fits the GPU's DRAM capacity (one more is
    where it reaches the capacity), or None when the smallest size already exceeds it."""
    capacity = b.dram_capacity
    if not capacity:
        raise ValueError(f"{b.hw_key} states no DRAM capacity; the peak cannot be compared")
    lo, top = span(b, size, hi, **fixed)

    def peak(x: int) -> int:
        m = b.numeric_at(**{**fixed, size: x}).memory
        return m.peak_bytes if m is not None else 0

    cap = f"{b.hw_key}'s {fmt_bytes(capacity)} ({capacity:,} B)"
    x = _largest(lambda v: peak(v) <= capacity, lo, top)
    if x is None:
        text = f"at {size}={lo} the peak memory {peak(lo):,} B already exceeds {cap}"
    elif x >= top:
        text = f"the peak memory fits {cap} for every {size} up to {x} ({_end(top, hi)})"
    else:
        text = (
            f"the peak memory reaches {cap} at {size}={x + 1} ({peak(x + 1):,} B); "
            f"{size} <= {x} fits ({peak(x):,} B)"
        )
    return Answer("memory_limit", size, x, text)


def crossovers(
    b: SymbolicBound, size: str, level: str = "fused", hi: int | None = None, **fixed: int
) -> Answer:
    """Where ``level``'s bound-by term changes along ``size`` up to ``hi`` (default: the
    largest size whose peak memory fits the GPU, :func:`memory_limit`): exact, from the
    pieces of the analysis (each piece met is analysed once, symbolically)."""
    level = level_name(level)
    upto = ""
    if hi is None:
        hi = memory_limit(b, size, **fixed).value or HI  # type: ignore[assignment]
        upto = " (the sizes whose peak memory fits)"
    lo, top = span(b, size, hi, **fixed)  # type: ignore[arg-type]
    found = b.crossovers(size, level, lo=lo, hi=top, **fixed)
    first = b.piece_at(**{**fixed, size: lo}).bound.bound_by(level)
    head = f"{level.replace('_', '-')} bound on {b.hw_key} along {size} in [{lo}, {top}]{upto}: "
    if not found:
        return Answer("crossovers", size, [], head + f"{first}-bound throughout")
    parts = [f"{first}-bound below {found[0][0]}"]
    parts += [f"{above}-bound from {x}" for x, _, above in found]
    return Answer("crossovers", size, [list(c) for c in found], head + ", ".join(parts))


def _largest(ok, lo: int, hi: int) -> int | None:
    """The largest ``x`` in ``[lo, hi]`` with ``ok(x)`` (``ok`` true up to some size, false
    above: doubling, then bisection), or None when ``ok(lo)`` is false."""
    if not ok(lo):
        return None
    good, bad = lo, min(2 * lo, hi)
    while bad < hi and ok(bad):
        good, bad = bad, min(2 * bad, hi)
    if bad == hi and ok(hi):
        return hi
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if ok(mid) else (good, mid)
    return good


def _end(top: int, hi: int) -> str:
    return "the sizes this trace counts exactly end there" if top < hi else "searched to there"


def _time(t: float, like: float) -> str:
    """``t`` in the unit ``fmt_time`` gives ``like``, with 7 significant digits (two times
    either side of a target must read apart)."""
    unit = fmt_time(like).split()[-1]
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]
    return f"{t / scale:.7g} {unit}"


def size_answers(
    b: SymbolicBound,
    size: str,
    *,
    target_s: float | None = None,
    level: str = "cache_aware",
    **fixed: int,
) -> list[Answer]:
    """The crossovers of every level, the memory limit and (with a target) the largest
    size meeting it, along ``size``."""
    memory = memory_limit(b, size, **fixed)
    hi = memory.value or HI
    out = [crossovers(b, size, lv, hi, **fixed) for lv in ("unfused", "fused", "cache_aware")]
    out.append(memory)
    if target_s is not None:
        out.append(largest_meeting(b, size, target_s, level, **fixed))
    return out

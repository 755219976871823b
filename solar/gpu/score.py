"""The SOL score of SOL-ExecBench: how much of the way from a baseline to the speed of light a
candidate implementation went.

    S = 1 / (1 + (T_k - T_sol) / (T_b - T_sol))

``T_k`` is the candidate's measured time, ``T_b`` the baseline's (e.g. eager PyTorch) and
``T_sol`` a speed-of-light bound (solar's fused or cache-aware bound). S = 0.5 when the
candidate is as fast as the baseline, S -> 1 as it approaches the bound, S -> 0 as it gets
slower. S > 1 means the candidate beat the bound: a violation (see :mod:`solar.gpu.headroom`);
when ``T_k`` is so far below the bound that the denominator is not positive, S is ``inf``.
"""

from __future__ import annotations

import math

__all__ = ["sol_score"]


def _positive(name: str, t: float) -> float:
    try:
        x = float(t)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a time in seconds, got {t!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise ValueError(f"{name} must be a positive finite time in seconds, got {t!r}")
    return x


def sol_score(t_candidate: float, t_baseline: float, t_sol: float) -> float:
    """SOL-ExecBench's score ``1 / (1 + (t_candidate - t_sol) / (t_baseline - t_sol))``.

    Raises ValueError when a time is not positive and finite, or when the baseline is not
    slower than the bound (the score is then undefined: the baseline itself is at or beyond
    the speed of light).
    """
    tk = _positive("t_candidate", t_candidate)
    tb = _positive("t_baseline", t_baseline)
    ts = _positive("t_sol", t_sol)
    if tb <= ts:
        raise ValueError(
            f"the baseline ({tb:.4g} s) is not slower than the SOL bound ({ts:.4g} s): the score "
            "is undefined (a baseline at or below the bound is itself a violation)"
        )
    denom = 1.0 + (tk - ts) / (tb - ts)
    return math.inf if denom <= 0 else 1.0 / denom

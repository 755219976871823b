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
from dataclasses import asdict, dataclass, field, fields

from solar.frozen import Frozen, thaw
from solar.gpu.correctness import Correctness

__all__ = ["STATUSES", "WorkloadScore", "score_solution", "score_workload", "sol_score"]


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


# --------------------------------------------------------------------------------------------
# Scoring a solution on a definition's workloads


#: trace statuses (SOL-ExecBench's, and solar's NO_BOUND: the workload could not be bounded)
STATUSES = (
    "PASSED",
    "INCORRECT_SHAPE",
    "INCORRECT_NUMERICAL",
    "INCORRECT_DTYPE",
    "RUNTIME_ERROR",
    "COMPILE_ERROR",
    "REWARD_HACK",
    "INVALID_REFERENCE",
    "NO_BOUND",
)


@dataclass(frozen=True)
class WorkloadScore(Frozen):
    """One workload of a solution: ``status`` (:data:`STATUSES`), the check of its outputs,
    the median times (seconds) of the solution ``t_k`` and the reference ``t_b``, their means
    (as SOL-ExecBench's traces report), solar's ``t_sol`` at ``level`` and what binds it, the
    SOL score (``None`` where undefined: not passed, or a reference at or below the bound) and
    ``violation``: a time below the bound, with the numbers (the score is never capped)."""

    uuid: str
    axes: dict
    status: str
    workload: dict = field(default_factory=dict)  # the workload line as written
    correctness: Correctness | None = None
    t_k: float = 0.0
    t_b: float = 0.0
    mean_k: float = 0.0
    mean_b: float = 0.0
    t_sol: float = 0.0
    level: str = "cache_aware"
    bound_by: str = ""
    score: float | None = None
    violation: str = ""
    note: str = ""

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["correctness"] = asdict(self.correctness) if self.correctness else None
        return thaw(d)


def time_pair(reference, solution, device, budget_s: float = 1.0) -> tuple:
    """The timings of ``reference()`` and ``solution()`` with the L2 flushed before every
    repetition (:func:`solar.gpu.measure.time_fn`, about ``budget_s`` each)."""
    from solar.gpu.measure import time_fn

    return (
        time_fn(reference, device=device, budget_s=budget_s),
        time_fn(solution, device=device, budget_s=budget_s),
    )


def allocate_outputs(defn, axes: dict, device) -> dict:
    """Destination-passing style: the outputs, zeroed, from the definition's shapes/dtypes."""
    import torch

    from solar.definition.axes import shape_of
    from solar.definition.inputs import torch_dtype

    return {
        n: torch.zeros(
            shape_of(s, axes) if not s.is_scalar else (), dtype=torch_dtype(s.dtype), device=device
        )
        for n, s in defn.outputs.items()
    }


def score_workload(
    defn,
    wl,
    built,
    module,
    spec,
    snap,
    *,
    level: str = "cache_aware",
    device="cuda",
    budget_s: float = 1.0,
) -> WorkloadScore:
    """Bound, check, time and score one workload of ``built`` (a
    :class:`~solar.gpu.solution.Built`), the defences of :mod:`solar.gpu.defences` applied
    around every call of the solution (``snap``: taken before it was imported)."""
    import torch

    from solar.definition.inputs import make_inputs
    from solar.definition.outputs import check_outputs, named_outputs
    from solar.definition.schema import DefinitionError
    from solar.definition.workload import bound_workload
    from solar.gpu.correctness import compare_outputs
    from solar.gpu.defences import (
        GamedTiming,
        check_one_stream,
        check_plain_tensors,
        check_threads,
        check_untouched,
        running_threads,
    )
    from solar.gpu.measure import _sync

    row = {"uuid": wl.uuid, "workload": wl.raw or {"uuid": wl.uuid, "axes": wl.axes}}
    wb = bound_workload(defn, wl, spec, module)
    if wb.status != "ok":
        return WorkloadScore(axes={}, status="NO_BOUND", note=f"bound: {wb.error}", **row)
    bound = {
        "t_sol": getattr(wb, level),
        "level": level,
        "bound_by": getattr(wb, f"{level}_bound_by"),
    }
    dev = torch.device(device)
    inputs = make_inputs(defn, wl, module=module, device=device, real_floats=True)
    args = [inputs.values[n] for n in defn.inputs]
    row = {**row, "axes": inputs.axes, **bound}
    sol = built.solution
    outs = allocate_outputs(defn, inputs.axes, dev) if sol.destination_passing_style else {}

    def call_solution():
        result = built.function(*args, *outs.values())
        return outs if sol.destination_passing_style else result

    with torch.no_grad():
        try:
            ref = check_outputs(defn, inputs.axes, module.run(*args))
        except DefinitionError as e:
            return WorkloadScore(status="INVALID_REFERENCE", note=str(e), **row)
        try:
            before = running_threads()
            result = call_solution()
            _sync(dev)
            check_threads(before)
            check_untouched(snap)
            got = (
                result
                if sol.destination_passing_style
                else named_outputs(defn, result, "the solution")
            )
            check_plain_tensors(got)
        except GamedTiming as e:
            return WorkloadScore(status="REWARD_HACK", note=str(e), **row)
        except DefinitionError as e:
            return WorkloadScore(status="INCORRECT_SHAPE", note=str(e).split(": ", 1)[-1], **row)
        except Exception as e:  # the solution's own failure: one line
            return WorkloadScore(status="RUNTIME_ERROR", note=_one_line(e), **row)
        checked = compare_outputs(ref, got, wl.tolerance)
        if not checked.passed:
            return WorkloadScore(
                status=checked.status, correctness=checked, note=checked.note, **row
            )
        try:
            before = running_threads()
            tb, tk = time_pair(lambda: module.run(*args), call_solution, dev, budget_s)
            check_one_stream(call_solution, tk.median_s, dev)
            check_threads(before)
            check_untouched(snap)
        except GamedTiming as e:
            return WorkloadScore(status="REWARD_HACK", correctness=checked, note=str(e), **row)
        except Exception as e:  # the solution failed while it was timed: one line
            return WorkloadScore(
                status="RUNTIME_ERROR", correctness=checked, note=_one_line(e), **row
            )
    t_sol = bound["t_sol"]
    return WorkloadScore(
        status="PASSED",
        correctness=checked,
        t_k=tk.median_s,
        t_b=tb.median_s,
        mean_k=tk.mean_s,
        mean_b=tb.mean_s,
        score=sol_score(tk.median_s, tb.median_s, t_sol) if tb.median_s > t_sol else None,
        violation=violation(tk.median_s, tb.median_s, t_sol, bound["bound_by"]),
        **row,
    )


def _one_line(e: Exception) -> str:
    msg = str(e).strip()
    return f"{type(e).__name__}: {msg.splitlines()[0] if msg else ''}"


def violation(t_k: float, t_b: float, t_sol: float, bound_by: str) -> str:
    """One line naming each time below the bound ``t_sol``, with the numbers; ``""`` if none."""
    from solar.fmt import fmt_time

    below = [(who, t) for who, t in (("solution", t_k), ("reference", t_b)) if t < t_sol]
    if not below:
        return ""
    said = " and ".join(f"the {who} ({fmt_time(t)})" for who, t in below)
    return (
        f"{said} faster than solar's bound T_SOL = {fmt_time(t_sol)} (bound by {bound_by}): "
        "the kernel is wrong, the timing gamed, or the bound's assumptions do not hold"
    )


def score_solution(
    defn, workloads, sol, spec, *, level="cache_aware", device="cuda", budget_s: float = 1.0
) -> tuple:
    """Every workload of ``workloads`` scored for solution ``sol`` (a
    :class:`~solar.gpu.solution.Solution`): built once (a build that fails or a toolchain that
    is missing is a ``COMPILE_ERROR`` row per workload), the defences' snapshot taken before
    it is imported; ``budget_s``: about how long each timing takes)."""
    from solar.definition.inputs import reference_module
    from solar.gpu.defences import GamedTiming, check_untouched, take_snapshot
    from solar.gpu.solution import SolutionError, build

    module = reference_module(defn)
    snap = take_snapshot()
    try:
        built = build(sol)
        check_untouched(snap)
    except (SolutionError, GamedTiming) as e:
        status = "REWARD_HACK" if isinstance(e, GamedTiming) else "COMPILE_ERROR"
        return tuple(WorkloadScore(wl.uuid, {}, status, wl.raw, note=str(e)) for wl in workloads)
    return tuple(
        score_workload(
            defn, wl, built, module, spec, snap, level=level, device=device, budget_s=budget_s
        )
        for wl in workloads
    )

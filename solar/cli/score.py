"""``solar score definition.json --workloads workload.jsonl --solution FILE``: the SOL score of a
solution on a GPU, per workload.

For each workload: the solution's outputs are checked against the reference's (the workload's
tolerance), both are timed with the L2 flushed before every repetition
(:func:`solar.gpu.measure.time_fn`), and the score ``S = (T_b - T_SOL) / ((T_k - T_SOL) +
(T_b - T_SOL))`` is computed against solar's bound ``T_SOL`` (1 at the speed of light, 0.5 at
the reference; when ``T_b <= T_SOL``: 1 if ``T_k <= T_SOL`` else 0). A time below the bound is
a faster-than-light violation (the kernel is wrong, or games the timer) and is reported as one.
A solution is a Python file with ``run(...)`` taking the definition's inputs in order.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from solar.cli.options import add_hw_option, add_output_args, check_out, emit, hw_from_args
from solar.fmt import fmt_time

LEVELS = ("cache_aware", "fused")


def add_parser(sub):
    sp = sub.add_parser("score", help="SOL score of a solution to a definition (needs a CUDA GPU)")
    sp.add_argument("definition", help="a FlashInfer-Trace definition.json")
    sp.add_argument("--workloads", metavar="FILE", default=None, help="workload.jsonl")
    sp.add_argument("--solution", required=True, metavar="FILE", help="Python file with run(...)")
    add_hw_option(sp, default="auto", help="spec of the GPU (default: detect it)")
    sp.add_argument("--level", choices=LEVELS, default="cache_aware", help="T_SOL's bound level")
    sp.add_argument("--sample", type=int, default=None, metavar="N", help="score N workloads")
    add_output_args(sp)
    return sp


@dataclass
class ScoreRow:
    uuid: str
    axes: dict
    status: str  # "ok", "incorrect", "violation" or "error"
    t_k: float = 0.0
    t_b: float = 0.0
    t_sol: float = 0.0
    score: float = 0.0
    max_abs_error: float = 0.0
    note: str = ""


def score(t_k: float, t_b: float, t_sol: float) -> float:
    """SOL-ExecBench's score, with its rule for a baseline at or below the bound."""
    from solar.gpu.score import sol_score

    if t_b <= t_sol:
        return 1.0 if t_k <= t_sol else 0.0
    return sol_score(t_k, t_b, t_sol)


def _outputs(x) -> list:
    import torch

    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _outputs(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _outputs(v)]
    return []


def compare(ref, got, tol: dict) -> tuple[bool, float, str]:
    """Outputs equal within ``tol`` (``atol``/``rtol``; integer outputs exactly)."""
    import torch

    a, b = _outputs(ref), _outputs(got)
    if len(a) != len(b):
        return False, float("inf"), f"{len(b)} outputs, the reference has {len(a)}"
    worst = 0.0
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x.shape != y.shape:
            return (
                False,
                float("inf"),
                f"output {i} has shape {tuple(y.shape)}, not {tuple(x.shape)}",
            )
        xf, yf = x.float(), y.float()
        err = (xf - yf).abs().max().item() if x.numel() else 0.0
        worst = max(worst, err)
        exact = not x.is_floating_point()
        atol, rtol = (0.0, 0.0) if exact else (tol.get("atol", 1e-2), tol.get("rtol", 1e-2))
        if not torch.allclose(yf, xf, atol=atol, rtol=rtol, equal_nan=True):
            return False, worst, f"output {i} differs (max abs error {err:.3g})"
    return True, worst, ""


def score_workload(defn, wl, solution, module, spec, level: str, device: str = "cuda") -> ScoreRow:
    """Check, time and score one workload (``device``: where both run)."""
    import torch

    from solar.definition.inputs import make_inputs
    from solar.definition.workload import bound_workload
    from solar.gpu.measure import time_fn

    wb = bound_workload(defn, wl, spec, module)
    if wb.status != "ok":
        return ScoreRow(wl.uuid, {}, "error", note=f"bound: {wb.error}")
    t_sol = getattr(wb, level)
    inputs = make_inputs(defn, wl, module=module, device=device, real_floats=True)
    args = [inputs.values[n] for n in defn.inputs]
    with torch.no_grad():
        ref = module.run(*args)
        try:
            got = solution.run(*args)
        except Exception as e:
            return ScoreRow(wl.uuid, inputs.axes, "error", t_sol=t_sol, note=f"solution: {e}")
        ok, err, why = compare(ref, got, wl.tolerance)
        if not ok:
            return ScoreRow(
                wl.uuid, inputs.axes, "incorrect", t_sol=t_sol, max_abs_error=err, note=why
            )
        t_b = time_fn(lambda: module.run(*args), device=device).median_s
        t_k = time_fn(lambda: solution.run(*args), device=device).median_s
    row = ScoreRow(wl.uuid, inputs.axes, "ok", t_k, t_b, t_sol, score(t_k, t_b, t_sol), err)
    slow = [n for n, t in (("solution", t_k), ("reference", t_b)) if t < t_sol]
    if slow:
        row.status = "violation"
        row.note = f"{' and '.join(slow)} faster than the bound: wrong, or gaming the timer"
    return row


def run(args) -> int:
    import torch

    if not torch.cuda.is_available():
        raise ValueError(
            "solar score needs a CUDA GPU (none is visible); `solar bound` gives "
            "the bounds without one"
        )
    from solar.definition import load_definition, load_workloads
    from solar.definition.inputs import reference_module
    from solar.definition.schema import default_workloads_path
    from solar.gpu.measure import resolve_hw
    from solar.problem import load_module

    check_out(args.out)
    defn = load_definition(args.definition)
    wl_path = args.workloads or (default_workloads_path(defn.path) if defn.path else None)
    if wl_path is None:
        raise ValueError(f"{args.definition}: no workloads; pass --workloads FILE")
    wls = load_workloads(wl_path, defn)
    if args.sample and len(wls) > args.sample:
        step = (len(wls) - 1) / max(args.sample - 1, 1)
        wls = [wls[round(i * step)] for i in range(args.sample)]
    spec = resolve_hw(hw_from_args(args, "cuda"))
    solution = load_module(args.solution)
    if not callable(getattr(solution, "run", None)):
        raise ValueError(f"{args.solution}: defines no run(...) function")
    module = reference_module(defn)
    rows = [score_workload(defn, wl, solution, module, spec, args.level) for wl in wls]
    if args.json:
        doc = {
            "definition": defn.name,
            "hw": spec.name,
            "level": args.level,
            "workloads": [asdict(r) for r in rows],
        }
        emit(json.dumps(doc, indent=2), args.out)
    else:
        emit(score_table(defn.name, spec.name, args.level, rows), args.out)
    return 0 if all(r.status == "ok" for r in rows) else 1


def score_table(name: str, hw: str, level: str, rows: list[ScoreRow]) -> str:
    lines = [
        f"{name} on {hw}: SOL score against the {level.replace('_', '-')} bound",
        "| workload | axes | T_k | T_b | T_SOL | score | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        axes = " ".join(f"{k}={v}" for k, v in r.axes.items())
        t = [fmt_time(x) if x else "-" for x in (r.t_k, r.t_b, r.t_sol)]
        s = f"{r.score:.3f}" if r.status in ("ok", "violation") else "-"
        status = r.status + (f": {r.note}" if r.note else "")
        lines.append(f"| {r.uuid[:8]} | {axes} | {t[0]} | {t[1]} | {t[2]} | {s} | {status} |")
    ok = [r.score for r in rows if r.status == "ok"]
    if ok:
        lines.append(f"mean score over {len(ok)} correct workloads: {sum(ok) / len(ok):.3f}")
    return "\n".join(lines)

"""``solar score``: the SOL score of a kernel engineer's solution, per workload, on a GPU.

    solar score problem/solution_triton.json            # a SOL-ExecBench solution JSON
    solar score problem/ --solution solution.json       # a problem folder and a solution
    solar score definition.json --workloads workload.jsonl --solution run.py

A solution is SOL-ExecBench's JSON (:mod:`solar.gpu.solution`: sources written to a scratch
folder, the entry point imported or built as a PyTorch extension, destination-passing style
honoured) or a Python file whose ``run(...)`` returns the outputs. Its problem is the folder
holding ``definition.json`` and ``workload.jsonl`` (the solution JSON's own folder when no
other is given). For each workload (:func:`solar.gpu.score.score_workload`): the outputs are
checked against the reference's within the workload's tolerance, the defences against gamed
timings are applied, both are timed with the L2 flushed, and the score ``S = (T_b - T_SOL) /
((T_k - T_SOL) + (T_b - T_SOL))`` is computed against solar's bound ``T_SOL`` (1 at the speed of
light, 0.5 at the reference). A time below the bound is a violation, printed with its numbers;
the score is never capped. ``--json`` writes one SOL-ExecBench trace record per workload (JSON
lines) with solar's ``sol`` object added (:mod:`solar.gpu.trace`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from solar.cli.options import add_hw_option, add_output_args, check_out, emit, hw_from_args
from solar.fmt import fmt_time

LEVELS = ("cache_aware", "fused")


def add_parser(sub):
    sp = sub.add_parser("score", help="SOL score of a solution to a definition (needs a CUDA GPU)")
    sp.add_argument(
        "problem",
        help="a solution JSON (its folder is the problem), a problem folder (definition.json "
        "+ workload.jsonl) or a definition.json",
    )
    sp.add_argument("--workloads", metavar="FILE", default=None, help="workload.jsonl")
    sp.add_argument(
        "--solution",
        metavar="FILE",
        default=None,
        help="a SOL-ExecBench solution JSON, or a Python file whose run(...) returns the outputs",
    )
    add_hw_option(sp, default="auto", help="spec of the GPU (default: detect it)")
    sp.add_argument("--level", choices=LEVELS, default="cache_aware", help="T_SOL's bound level")
    sp.add_argument("--sample", type=int, default=None, metavar="N", help="score N workloads")
    sp.add_argument(
        "--device",
        default="cuda",
        help="where to run (default cuda; cpu checks outputs and defences only: host times "
        "are not comparable to a GPU's bound)",
    )
    sp.add_argument(
        "--budget",
        type=float,
        default=1.0,
        metavar="S",
        help="about how long each timing takes, in seconds (default 1)",
    )
    add_output_args(sp)
    return sp


def problem_files(args) -> tuple[Path, Path | None, Path]:
    """``(definition.json, workload.jsonl or None, solution file)`` from the arguments."""
    from solar.gpu.solution import is_solution_json

    target = Path(args.problem)
    solution = Path(args.solution) if args.solution else None
    if solution is None:
        if not is_solution_json(target):
            raise ValueError(
                f"{target}: pass --solution FILE (a solution JSON or a Python file with run(...))"
            )
        solution, target = target, target.parent
    if target.is_dir():
        definition = target / "definition.json"
        if not definition.is_file():
            raise ValueError(f"{target}: holds no definition.json; pass the definition's path")
        workloads = target / "workload.jsonl"
        return definition, workloads if workloads.is_file() else None, solution
    if not target.is_file():
        raise ValueError(f"{target}: no such file or folder")
    return target, None, solution


def run(args) -> int:
    import torch

    from solar.definition import load_definition, load_workloads
    from solar.definition.schema import default_workloads_path
    from solar.gpu.measure import resolve_hw
    from solar.gpu.score import score_solution
    from solar.gpu.solution import is_solution_json, load_solution, python_file_solution
    from solar.gpu.trace import environment, trace_record

    on_gpu = torch.device(args.device).type == "cuda"
    if on_gpu and not torch.cuda.is_available():
        raise ValueError(
            "solar score needs a CUDA GPU (none is visible); `solar bound` gives the bounds "
            "without one, `--device cpu` checks a solution's outputs without timing it on a GPU"
        )
    check_out(args.out)
    def_path, wl_path, sol_path = problem_files(args)
    defn = load_definition(def_path)
    wl_path = args.workloads or wl_path or default_workloads_path(def_path)
    if wl_path is None:
        raise ValueError(f"{def_path}: no workloads; pass --workloads FILE")
    wls = load_workloads(wl_path, defn)
    if args.sample and len(wls) > args.sample:
        step = (len(wls) - 1) / max(args.sample - 1, 1)
        wls = [wls[round(i * step)] for i in range(args.sample)]
    if is_solution_json(sol_path):
        sol = load_solution(sol_path)
    elif sol_path.suffix == ".py":
        sol = python_file_solution(sol_path)
    else:
        raise ValueError(f"{sol_path}: not a solution JSON (spec, sources) nor a Python file")
    if sol.definition and sol.definition != defn.name:
        raise ValueError(
            f"{sol_path}: solves definition {sol.definition!r}, not {defn.name!r} ({def_path})"
        )
    hw = hw_from_args(args, "cuda")
    if not on_gpu and str(hw).lower() == "auto":
        hw = "H100"
    spec = resolve_hw(hw)
    if not args.budget > 0:
        raise ValueError(f"--budget {args.budget}: give a positive number of seconds")
    rows = score_solution(
        defn, wls, sol, spec, level=args.level, device=args.device, budget_s=args.budget
    )
    if rows and all(r.status == "COMPILE_ERROR" for r in rows):
        raise ValueError(rows[0].note)  # a missing toolchain or a failed build: one line
    if args.json:
        env = environment(
            torch.cuda.get_device_name() if on_gpu else f"cpu (bound for {spec.name})"
        )
        lines = [json.dumps(trace_record(defn.name, sol.name, r, env, spec.name)) for r in rows]
        emit("\n".join(lines), args.out)
    else:
        emit(score_table(defn.name, sol.name, spec.name, args.level, rows), args.out)
    return 0 if all(r.status == "PASSED" and not r.violation for r in rows) else 1


def score_table(name: str, solution: str, hw: str, level: str, rows) -> str:
    """The rows as a Markdown table, violations and failures spelled out below it."""
    lines = [
        f"{solution} on {name}, {hw}: SOL score against the {level.replace('_', '-')} bound",
        "| workload | axes | T_k | T_b | T_SOL | bound by | score | status |",
        "|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for r in rows:
        axes = " ".join(f"{k}={v}" for k, v in r.axes.items())
        t = [fmt_time(x) if x else "-" for x in (r.t_k, r.t_b, r.t_sol)]
        s = "-" if r.score is None else ("inf" if math.isinf(r.score) else f"{r.score:.3f}")
        status = r.status + (" VIOLATION" if r.violation else "")
        lines.append(
            f"| {r.uuid[:12]} | {axes} | {t[0]} | {t[1]} | {t[2]} | {r.bound_by or '-'} | {s} "
            f"| {status} |"
        )
        for text in (r.violation, r.note):
            if text:
                notes.append(f"{r.uuid[:12]}: {text}")
    scores = [r.score for r in rows if r.status == "PASSED" and r.score is not None]
    if scores:
        lines.append(
            f"mean score over {len(scores)} passed workloads: {sum(scores) / len(scores):.3f}"
        )
    return "\n".join(lines + notes)

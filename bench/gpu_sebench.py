#!/usr/bin/env python3
"""SOL-ExecBench's public example solutions scored by ``solar score`` from their solution JSON
files, per workload, on the GPU.

    PYTHONPATH=. python bench/gpu_sebench.py OUTDIR [--sample 3] [--budget 0.25]
    PYTHONPATH=. python bench/gpu_sebench.py OUTDIR --dry-run     # list what would run (CPU)

Every ``solution*.json`` of ``bench/sebench_examples/`` (NVIDIA/SOL-ExecBench's ``examples/``,
its test samples and its gamed rmsnorm solutions; copies of one solution scored once) runs as
``python -m solar score SOLUTION.json --json --sample N --budget S`` in its own process (a gamed
solution patches the process it runs in), with a time limit per solution. A solution whose
toolchain this machine lacks (cuDNN or CUTLASS headers, CuTe DSL, cuTile, nvcc) is listed with
the missing piece; one that fails is a row, never the end of the run. Writes
OUTDIR/summary.md (solution, workload, measured T_k, reference T_b, T_SOL, score, status),
OUTDIR/summary.json and OUTDIR/traces/<solution>.jsonl (SOL-ExecBench's trace records with
solar's ``sol`` object). Exit status 1 when a solution beat solar's bound (a violation) or a
gamed solution was not caught.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "bench" / "sebench_examples"
#: gamed solutions: each must come out REWARD_HACK (or fail to run), never with a score
GAMED = ("hack_samples/",)


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--sample", type=int, default=3, help="workloads per solution (default 3)")
    p.add_argument("--budget", type=float, default=0.25, help="seconds per timing")
    p.add_argument("--timeout", type=float, default=300, help="seconds per solution")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dry-run", action="store_true", help="list the solutions and commands")
    p.add_argument("--compiled", action="store_true", help="only the compiled solutions (C++/CUDA)")
    return p.parse_args(argv)


def solutions() -> list[Path]:
    """Every solution JSON with a definition beside it, one of each identical copy."""
    seen: dict[str, Path] = {}
    for path in sorted(EXAMPLES.rglob("solution*.json")):
        if not (path.parent / "definition.json").is_file():
            continue  # SOL-ExecBench's evil_* samples: their definition lives in its test code
        problem = path.parent
        key = hashlib.sha256(
            path.read_bytes() + (problem / "definition.json").read_bytes()
        ).hexdigest()
        seen.setdefault(key, path)
    for path in sorted(EXAMPLES.glob("hack_samples/*/solution*.json")):  # rmsnorm's, gamed
        seen.setdefault(path.name, path)
    return sorted(seen.values(), key=lambda p: (_builds(p), str(p)))


def _builds(path: Path) -> bool:
    """Whether a solution is compiled (C++/CUDA, CUTLASS, cuDNN: minutes each): run last, so
    that a run cut short has scored the Python and Triton ones."""
    text = path.read_text()
    return any(f'"{lang}"' in text for lang in ("cuda_cpp", "cutlass", "cudnn", "cuda"))


def command(path: Path, args) -> list[str]:
    """``solar score`` of one solution (paths relative to the checkout, where it runs)."""
    rel = path.relative_to(ROOT)
    problem = [str(rel)]
    if "hack_samples" in path.parts:
        problem = [
            str((EXAMPLES / "samples" / "rmsnorm").relative_to(ROOT)),
            "--solution",
            str(rel),
        ]
    return [
        sys.executable,
        "-m",
        "solar",
        "score",
        *problem,
        "--json",
        "--sample",
        str(args.sample),
        "--budget",
        str(args.budget),
        "--device",
        args.device,
    ]


def language(path: Path) -> str:
    spec = json.loads(path.read_text()).get("spec", {})
    langs = spec.get("languages", spec.get("language", "?"))
    return ",".join(langs) if isinstance(langs, list) else str(langs)


def run_one(path: Path, args, traces: Path) -> dict:
    name = str(path.relative_to(EXAMPLES))
    item = {"solution": name, "language": language(path), "rows": [], "error": None}
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        r = subprocess.run(
            command(path, args),
            capture_output=True,
            text=True,
            timeout=args.timeout,
            env=env,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        item["error"] = f"timed out after {args.timeout:.0f} s"
        return item
    item["seconds"] = round(time.perf_counter() - t0, 1)
    records = []
    for line in r.stdout.splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    if records:
        out = traces / (name.replace("/", "__").removesuffix(".json") + ".jsonl")
        out.write_text("".join(json.dumps(t) + "\n" for t in records))
    if not records:
        err = (r.stderr.strip().splitlines() or ["no output"])[-1]
        item["error"] = err.removeprefix("solar: error: ")
    item["rows"] = [row_of(t) for t in records]
    return item


def row_of(t: dict) -> dict:
    ev, sol = t["evaluation"], t["sol"]
    return {
        "workload": t["workload"].get("uuid", ""),
        "axes": t["workload"].get("axes", {}),
        "status": ev["status"],
        "t_k_ms": sol["latency_median_ms"],
        "t_b_ms": sol["reference_latency_median_ms"],
        "t_sol_ms": sol["t_sol_ms"],
        "bound_by": sol["bound_by"],
        "score": sol["sol_score"],
        "violation": sol["violation"],
        "log": ev["log"],
    }


def _ms(x) -> str:
    if x is None:
        return "-"
    return f"{x * 1e3:.2f} us" if x < 1 else f"{x:.3f} ms"


def summary(items: list[dict], args, hw: str) -> tuple[str, list[str]]:
    lines = [
        "# SOL-ExecBench's public solutions scored by `solar score`",
        "",
        f"`PYTHONPATH=. python bench/gpu_sebench.py OUTDIR --sample {args.sample} "
        f"--budget {args.budget}` on {hw}. T_k: the solution, T_b: the reference (medians, "
        "L2 flushed), T_SOL: solar's cache-aware bound; score S = (T_b - T_SOL) / "
        "((T_k - T_SOL) + (T_b - T_SOL)).",
        "",
        "| solution | language | workload | axes | T_k | T_b | T_SOL | bound by | score | status |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    problems, notes = [], []
    for it in items:
        gamed = it["solution"].startswith(GAMED)
        if it["error"]:
            lines.append(
                f"| {it['solution']} | {it['language']} | - | - | - | - | - | - | - | "
                f"not run: {it['error']} |"
            )
            continue
        for r in it["rows"]:
            axes = " ".join(f"{k}={v}" for k, v in r["axes"].items())
            score = "-" if r["score"] is None else f"{r['score']:.3f}"
            status = r["status"] + (" VIOLATION" if r["violation"] else "")
            lines.append(
                f"| {it['solution']} | {it['language']} | {r['workload'][:12]} | {axes} | "
                f"{_ms(r['t_k_ms'])} | {_ms(r['t_b_ms'])} | {_ms(r['t_sol_ms'])} | "
                f"{r['bound_by'] or '-'} | {score} | {status} |"
            )
            if r["violation"]:
                problems.append(f"{it['solution']} {r['workload']}: {r['violation']}")
            if gamed and r["status"] == "PASSED":
                problems.append(f"{it['solution']} {r['workload']}: a gamed solution PASSED")
            if r["log"] and r["status"] != "PASSED":
                notes.append(f"- {it['solution']} {r['workload'][:12]}: {r['log']}")
    lines += ["", "## Violations and uncaught gamed solutions", ""]
    lines += [f"- {p}" for p in problems] or ["none"]
    lines += ["", "## Notes", "", *(notes or ["none"])]
    return "\n".join(lines) + "\n", problems


def main(argv=None) -> int:
    args = parse(argv)
    out = Path(args.outdir)
    todo = [p for p in solutions() if _builds(p) or not args.compiled]
    if args.dry_run:
        for path in todo:
            print(" ".join(command(path, args)[1:]))
        return 0
    traces = out / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    hw = args.device
    try:
        import torch

        if args.device == "cuda" and torch.cuda.is_available():
            hw = torch.cuda.get_device_name()
    except Exception:
        pass
    items = []
    for path in todo:
        item = run_one(path, args, traces)
        items.append(item)
        got = item["error"] or ", ".join(r["status"] for r in item["rows"])
        print(f"{item['solution']:<64} {got}", flush=True)
        # written after each solution: a run cut short keeps the table of those done
        text, problems = summary(items, args, hw)
        (out / "summary.md").write_text(text)
        (out / "summary.json").write_text(json.dumps({"hw": hw, "solutions": items}, indent=1))
    print(f"{len(items)} solutions; tables in {out / 'summary.md'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

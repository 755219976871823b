#!/usr/bin/env python3
"""Every KernelBench level 1-3 problem compiled with ``torch.compile`` and measured kernel by
kernel against the bound of what each generated kernel computes (issue 33).

    PYTHONPATH=. python bench/gpu_compiled.py OUTDIR [--levels level1,level2,level3] [--jobs 8]
    PYTHONPATH=. python bench/gpu_compiled.py OUTDIR --dry-run        # list the problems (CPU)

Each problem runs in its own process (``--one``: load it on the GPU, compile it with Inductor
in ``--mode``, bound each group of generated kernels, time the program and profile it; see
``solar/gpu/compiled_headroom.py``), up to ``--jobs`` at once with a time limit each: the
compiles overlap, while the timing and profiling of one problem at a time holds a lock
(``OUTDIR/gpu.lock``), so no two problems' kernels share the GPU while they are measured.
Inductor's own compile workers are capped (``TORCHINDUCTOR_COMPILE_THREADS``).

Writes ``OUTDIR/LEVEL/NAME.json`` (the full :class:`CompiledHeadroom`, or the error) as each
problem ends, and at the end ``OUTDIR/summary.md`` and ``OUTDIR/summary.json``: per level the
generated kernels mapped / unmapped (with their reasons), device activities matched, groups
measured below their bound (violations), and the three-term decomposition (fused bound ->
sum of group bounds -> measured) as medians of each term's share of the measured time.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELBENCH = ROOT / "bench" / "kernelbench"


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--levels", default="level1,level2,level3")
    p.add_argument("--mode", default="default", help="torch.compile mode")
    p.add_argument("--jobs", type=int, default=8, help="problems compiled at once")
    p.add_argument("--timeout", type=float, default=300, help="seconds per problem")
    p.add_argument("--budget", type=float, default=0.25, help="seconds of timing per problem")
    p.add_argument("--only", default="", help="comma-separated substrings of file names")
    p.add_argument("--deadline", type=float, default=0, help="stop starting problems after S s")
    p.add_argument("--device", default="cuda", help="cuda, or cpu to try the script here")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a module-level constant of every problem that has it (batch_size=2): "
        "small sizes for a run on the CPU",
    )
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--one", nargs=2, metavar=("PROBLEM", "OUT_JSON"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def problems(args) -> list[tuple[str, Path]]:
    out = []
    only = [s for s in args.only.split(",") if s]
    for level in args.levels.split(","):
        for p in sorted((KERNELBENCH / level).glob("*.py"), key=lambda p: p.name):
            if not only or any(s in p.name for s in only):
                out.append((level, p))
    return out


@contextmanager
def gpu_lock(path: Path):
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def one(
    problem: Path, out: Path, mode: str, budget: float, lock: Path, device: str, sets: dict
) -> int:
    """Compile, bound, time and profile one problem; write its JSON (or its error)."""
    import torch

    from solar.frontend.torch.compiled import compile_torch
    from solar.gpu.compiled_headroom import measure_compiled
    from solar.gpu.problems import load_real_problem

    row: dict = {"problem": problem.stem, "level": problem.parent.name, "status": "error"}
    t0 = time.perf_counter()
    try:
        p, _ = load_real_problem(problem, device=device, overrides=sets, strict_overrides=False)
        compiled = compile_torch(p.model, p.inputs, mode=mode, name=problem.stem)
        row["compile_s"] = time.perf_counter() - t0
        with gpu_lock(lock):
            hw = "auto" if device == "cuda" else "H100"
            r = measure_compiled(
                compiled, hw, device=device, budget_s=budget, name=problem.stem, path=str(problem)
            )
        row.update(status="ok", report=r.to_dict())
    except torch.cuda.OutOfMemoryError as e:
        row["error"] = f"out of memory: {str(e).splitlines()[0]}"
    except Exception as e:  # one row per failure, never the end of the run
        row["error"] = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}"
        if "made no graph" in str(e):
            row["status"] = "eager"  # Dynamo runs it all eagerly: nothing compiled to map
    row["seconds"] = time.perf_counter() - t0
    out.write_text(json.dumps(row) + "\n")
    return 0


def summarize(rows: list[dict], head: list[str]) -> tuple[str, dict]:
    lines = [*head, ""]
    summary: dict = {}
    for level in sorted({r["level"] for r in rows}):
        rs = [r for r in rows if r["level"] == level]
        ok = [r for r in rs if r["status"] == "ok"]
        kernels = mapped = device = matched_dev = 0
        why: Counter = Counter()
        violations: list[str] = []
        shares: dict[str, list[float]] = {"fused": [], "fusion": [], "quality": [], "launch": []}
        ratios: dict[str, list[float]] = {
            "groups/fused": [],
            "measured/groups": [],
            "measured/fused": [],
        }
        unmatched_ops: Counter = Counter()
        for r in ok:
            rep = r["report"]
            for b in rep["bounds"]:
                for k in b["kernels"]:
                    kernels += 1
                    if k["group"] is not None:
                        mapped += 1
                    else:
                        why[k["unmapped"].split(":")[0][:90]] += 1
            n_meas = sum(1 for k in rep["kernels"] if k["seconds"] is not None)
            device += n_meas + len(rep["unmatched"])
            matched_dev += n_meas
            for u in rep["unmatched"]:
                unmatched_ops[u["operator"] or u["name"]] += 1
            violations += [f"{r['problem']}: {v}" for v in rep["violations"]]
            t = rep["terms"]
            m = t["measured_s"]
            if m and t["kernel_quality_s"] is not None:
                shares["fused"].append(t["fused_bound_s"] / m)
                shares["fusion"].append(t["fusion_s"] / m)
                shares["quality"].append(t["kernel_quality_s"] / m)
                shares["launch"].append(t["launch_and_gaps_s"] / m)
            groups_s = t["fused_bound_s"] + t["fusion_s"]
            if t["fused_bound_s"]:
                ratios["groups/fused"].append(groups_s / t["fused_bound_s"])
                if m:
                    ratios["measured/fused"].append(m / t["fused_bound_s"])
            if m and groups_s:
                ratios["measured/groups"].append(m / groups_s)
        med = {k: (statistics.median(v) if v else None) for k, v in shares.items()}
        medr = {k: (statistics.median(v) if v else None) for k, v in ratios.items()}
        summary[level] = {
            "problems": len(rs),
            "ok": len(ok),
            "errors": {r["problem"]: r.get("error") for r in rs if r["status"] == "error"},
            "generated_kernels": kernels,
            "mapped_kernels": mapped,
            "unmapped_reasons": dict(why),
            "device_activities": device,
            "matched_activities": matched_dev,
            "unmatched_operators": dict(unmatched_ops.most_common(12)),
            "violations": violations,
            "median_share_of_measured": med,
            "median_ratios": medr,
        }
        eager = [r["problem"] for r in rs if r["status"] == "eager"]
        summary[level]["eager"] = eager
        lines += [
            f"## {level}: {len(ok)} of {len(rs)} problems compiled and measured"
            + (f"; {len(eager)} run all eagerly under torch.compile (no graph)" if eager else ""),
            "",
            f"- generated kernels: {kernels}, mapped to solar's graph: {mapped}, unmapped: "
            f"{kernels - mapped}" + (f" ({dict(why)})" if why else ""),
            f"- device activities in a profiled run: {device}, matched to a generated kernel: "
            f"{matched_dev}",
            f"- groups measured below their bound: {len(violations)}",
            "- three-term decomposition, median share of the measured time: "
            + ", ".join(f"{k} {v:.1%}" for k, v in med.items() if v is not None),
            "- median ratios: " + ", ".join(f"{k} {v:.3g}" for k, v in medr.items() if v),
            "",
        ]
        for v in violations[:20]:
            lines.append(f"  - violation: {v}")
        for name, err in list(summary[level]["errors"].items())[:30]:
            lines.append(f"  - error: {name}: {err}")
        lines.append("")
    return "\n".join(lines), summary


def main(argv=None) -> int:
    args = parse(argv)
    if args.one:
        out = Path(args.one[1])
        lock = out.parent.parent / "gpu.lock"
        sets = dict(kv.split("=", 1) for kv in args.set)
        sets = {k: int(v) if v.lstrip("-").isdigit() else v for k, v in sets.items()}
        return one(Path(args.one[0]), out, args.mode, args.budget, lock, args.device, sets)
    todo = problems(args)
    outdir = Path(args.outdir)
    if args.dry_run:
        for level, p in todo:
            print(level, p.name)
        print(f"{len(todo)} problems")
        return 0
    outdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "2", "PYTHONPATH": str(ROOT)}
    t_start = time.time()

    def job(item):
        level, p = item
        out = outdir / level / f"{p.stem}.json"
        out.parent.mkdir(exist_ok=True)
        if out.exists():
            return
        if args.deadline and time.time() - t_start > args.deadline:
            return
        cmd = [
            sys.executable,
            __file__,
            str(outdir),
            "--mode",
            args.mode,
            "--budget",
            str(args.budget),
            "--device",
            args.device,
            "--one",
            str(p),
            str(out),
        ]
        try:
            r = subprocess.run(cmd, env=env, timeout=args.timeout, capture_output=True, text=True)
            if not out.exists():
                tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or [f"exit {r.returncode}"]
                out.write_text(
                    json.dumps(
                        {
                            "problem": p.stem,
                            "level": level,
                            "status": "error",
                            "error": f"crashed: {tail[0][:300]}",
                        }
                    )
                    + "\n"
                )
        except subprocess.TimeoutExpired:
            out.write_text(
                json.dumps(
                    {
                        "problem": p.stem,
                        "level": level,
                        "status": "error",
                        "error": f"timed out after {args.timeout:.0f} s",
                    }
                )
                + "\n"
            )
        print(f"{level}/{p.stem} done at {time.time() - t_start:.0f} s", flush=True)

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(job, todo))
    # what ran out of device memory beside other problems runs again, alone
    for level, p in todo:
        out = outdir / level / f"{p.stem}.json"
        if out.exists() and "out of memory" in json.loads(out.read_text()).get("error", ""):
            out.unlink()
            job((level, p))
    rows = [json.loads(f.read_text()) for f in sorted(outdir.glob("level*/*.json"))]
    import torch

    head = [
        "# KernelBench compiled: headroom per generated kernel",
        "",
        f"command: `PYTHONPATH=. python bench/gpu_compiled.py {' '.join(argv or sys.argv[1:])}`",
        f"device: {torch.cuda.get_device_name() if torch.cuda.is_available() else 'none'}, "
        f"torch {torch.__version__}, mode {args.mode}",
    ]
    text, summary = summarize(rows, head)
    (outdir / "summary.md").write_text(text + "\n")
    (outdir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

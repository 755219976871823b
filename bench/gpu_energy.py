#!/usr/bin/env python3
"""Energy floors against the GPU's own meter (issue 36): calibrate, then measure programs.

    PYTHONPATH=. python bench/gpu_energy.py OUTDIR [--every 2] [--budget-s 240] [--jobs 14]
    PYTHONPATH=. python bench/gpu_energy.py OUTDIR --dry-run [--only 1_,19_] [--hw H100]

1. Calibrate (``solar calibrate --energy --quick``: 1 s runs): idle power before and after,
   J per DRAM byte (a copy), J per op of each tensor-core rate (GEMMs) and of ``cuda_fp32``
   (an FMA loop), all from NVML's cumulative energy counter (``nvidia-ml-py``: imported from
   the wheel in ``bench/wheels/`` when the machine has no such package). Writes
   OUTDIR/calibration.json and OUTDIR/<gpu>_energy.yaml, the GPU's spec with the ``energy:``
   block (copy that block into ``solar/hw/catalog/<gpu>.yaml``).
2. Bound every selected program on the GPU's spec, on ``--jobs`` CPU processes while the GPU
   measures (spawned before CUDA starts; a bound is priced with the calibrated costs
   afterwards: ``solar.backend.energy.energy_of``).
3. Measure each program on the GPU: built with real inputs (seed 0, ``solar.gpu.problems``),
   called back to back for at least ``--run-s`` (1 s) after warm-up, energy from the same
   counter: joules per call against the floor at every level, ``measured / floor``. A program
   below its fused or cache-aware floor (any implementation) is a violation; the unfused floor
   holds for eager PyTorch (one kernel per operator) only.

Programs: KernelBench level 1 and level 2 (``bench/kernelbench/``, copied from
ScalingIntelligence/KernelBench, MIT), every ``--every``-th file of each level in file-name
order (default 2: the 1st, 3rd, 5th, ... -- 50 + 50 of 200, to fit ~6 minutes of GPU), after
the three training steps ``examples/train_gpt.py``, ``examples/train_resnet.py``,
``examples/train_hf_llama.py`` (measured first). ``--budget-s`` (240 s from the calibration's
start) stops measuring, the rest marked skipped; bounds still running then get a minute more.
Each program fails soft (its error recorded). Writes OUTDIR/energy.json (rewritten after every
program) and OUTDIR/summary.md (the command, the calibration, measured / floor per level:
min, median, max per group, the programs below a floor, and one row per program).

``--dry-run`` (no GPU): bounds the selected programs on ``--hw`` and prints what it would
measure, with the floors where ``--hw`` has energy costs.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

LEVELS = ("unfused", "fused", "cache_aware")
KERNELBENCH = ROOT / "bench" / "kernelbench"
TRAINING = ("train_gpt.py", "train_resnet.py", "train_hf_llama.py")


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--every", type=int, default=2, help="every N-th file of each level (1: all)")
    p.add_argument("--only", default="", help="comma-separated substrings of names to keep")
    p.add_argument("--levels", default="level1,level2", help="KernelBench levels to measure")
    p.add_argument("--no-training", action="store_true", help="skip the three training steps")
    p.add_argument("--budget-s", type=float, default=240.0, help="stop measuring after this")
    p.add_argument("--run-s", type=float, default=1.0, help="seconds of calls per program")
    p.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 3) - 2))
    p.add_argument("--hw", default="auto", help="spec (default: the GPU's, matched)")
    p.add_argument("--dry-run", action="store_true", help="no GPU: bound and list only")
    return p.parse_args(argv)


def programs(args) -> list[tuple[str, Path]]:
    """(group, path) of every program measured, by the fixed rule of the module docstring."""
    out = []
    if not args.no_training:  # first: the budget never skips them
        out += [("training", ROOT / "examples" / name) for name in TRAINING]
    for level in args.levels.split(","):
        files = sorted((KERNELBENCH / level).glob("*.py"), key=lambda p: p.name)
        out += [(level, p) for p in files[:: max(1, args.every)]]
    keep = [s for s in args.only.split(",") if s]
    if keep:
        out = [(g, p) for g, p in out if any(s in p.name for s in keep)]
    return out


def bound_one(path: str, hw: dict) -> dict:
    """Bound a problem file in a worker process (the Bound's JSON, or the error's line)."""
    try:
        from solar.questions.batch import bound_problem

        return {"bound": bound_problem(path, hw).to_dict()}
    except BaseException as e:  # a worker never dies: the program records the error
        return {"error": f"{type(e).__name__}: {_first_line(e)}"}


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0][:300] if str(e).strip() else ""


def ratios(measured_j: float, floor) -> dict:
    """measured / floor at each level (None without a floor)."""
    return {
        lv: (measured_j / floor.at(lv) if floor.at(lv) else None) if floor else None
        for lv in LEVELS
    }


def pricing(bound_dict: dict, spec):
    """The bound and its energy floor on ``spec``'s costs."""
    from solar.backend.energy import energy_of
    from solar.backend.result import Bound

    b = Bound.from_dict(bound_dict)
    return b, energy_of(b, spec)


def _load_nvml() -> None:
    """Make ``import pynvml`` work from the wheel in bench/wheels/ (pure Python, zipimport)."""
    try:
        import pynvml  # noqa: F401

        return
    except ImportError:
        pass
    for whl in sorted((ROOT / "bench" / "wheels").glob("nvidia_ml_py-*.whl")):
        sys.path.insert(0, str(whl))


def measure_program(path: Path, run_s: float, meter) -> dict:
    """Joules and seconds per call of one program file on the GPU."""
    import torch

    from solar.gpu.calibrate_energy import run_for
    from solar.gpu.problems import load_real_problem

    problem, _ = load_real_problem(path, device="cuda")
    model, inputs = problem.model, problem.inputs
    training = path.name in TRAINING
    ctx = torch.enable_grad if training else torch.no_grad

    def call():
        with ctx():
            return model(*inputs)

    seconds, joules, calls, clock = run_for(call, run_s, torch.device("cuda"), meter)
    return {
        "seconds": seconds,
        "joules": joules,
        "calls": calls,
        "j_per_call": joules / calls,
        "s_per_call": seconds / calls,
        "clock_mhz": clock,
    }


def _fmt_ratio(x) -> str:
    return "-" if x is None else f"{x:.3g}"


def summarize(rows: list[dict], head: list[str]) -> str:
    """The summary: per group and level, min / median / max of measured / floor; violations."""
    lines = [*head, "", "## measured / floor (energy), per group and level", ""]
    lines += [
        "| group | programs | level | min | median | max | below floor |",
        "|---|---|---|---|---|---|---|",
    ]
    for group in ("level1", "level2", "training"):
        done = [r for r in rows if r["group"] == group and r.get("ratio")]
        if not done:
            continue
        for lv in LEVELS:
            xs = [r["ratio"][lv] for r in done if r["ratio"].get(lv)]
            if not xs:
                continue
            below = sum(x < 1 for x in xs)
            lines.append(
                f"| {group} | {len(xs)} | {lv} | {min(xs):.3g} | {statistics.median(xs):.3g} | "
                f"{max(xs):.3g} | {below} |"
            )
    bad = [
        r
        for r in rows
        if r.get("ratio") and any((r["ratio"].get(lv) or 2) < 1 for lv in ("fused", "cache_aware"))
    ]
    lines += ["", f"programs below their fused or cache-aware floor: {len(bad)}"]
    lines += [f"- {r['name']}: {r['ratio']}" for r in bad]
    lines += ["", "## programs", ""]
    lines += [
        "| group | program | J / call | s / call | floor c-a (J) | unfused | fused | cache-aware "
        "| note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        m, rt = r.get("measured") or {}, r.get("ratio") or {}
        floor = (r.get("floor_j") or {}).get("cache_aware")
        lines.append(
            f"| {r['group']} | {r['name']} | {m.get('j_per_call', float('nan')):.4g} | "
            f"{m.get('s_per_call', float('nan')):.4g} | "
            f"{'-' if floor is None else f'{floor:.4g}'} | {_fmt_ratio(rt.get('unfused'))} | "
            f"{_fmt_ratio(rt.get('fused'))} | {_fmt_ratio(rt.get('cache_aware'))} | "
            f"{r.get('error') or r.get('status', '')} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = parse(argv)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    todo = programs(args)
    command = "PYTHONPATH=. python bench/gpu_energy.py " + " ".join(argv or sys.argv[1:])
    # the bound workers start before CUDA does (spawned: nothing of the parent's CUDA state)
    pool = cf.ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=mp.get_context("spawn"))

    from solar.hw import load_spec

    if args.dry_run:
        spec = load_spec("H100" if args.hw == "auto" else args.hw)
    else:
        import torch

        from solar.gpu.measure import resolve_hw

        if not torch.cuda.is_available():
            print("gpu_energy: needs a CUDA GPU (torch sees none); --dry-run bounds only")
            return 2
        spec = resolve_hw(args.hw)
    futures = {p: pool.submit(bound_one, str(p), spec.to_dict()) for _, p in todo}
    print(f"{len(todo)} programs on {spec.name}; bounding on {args.jobs} processes", flush=True)

    if args.dry_run:
        rows = []
        for group, p in todo:
            r = futures[p].result()
            row = {"group": group, "name": p.stem, "path": str(p.relative_to(ROOT))}
            if "error" in r:
                row["error"] = r["error"]
            else:
                b, floor = pricing(r["bound"], spec)
                row["bound_s"] = {lv: b.time(lv) for lv in LEVELS}
                row["floor_j"] = {lv: floor.at(lv) for lv in LEVELS}
            rows.append(row)
            what = row.get("error") or (
                f"bound {row['bound_s']['cache_aware']:.3g} s, floor "
                + (
                    f"{row['floor_j']['cache_aware']:.4g} J"
                    if row["floor_j"]["cache_aware"] is not None
                    else "none: the spec has no energy costs"
                )
            )
            print(f"would measure {group}/{p.name}: {what}", flush=True)
        (out / "energy.json").write_text(json.dumps({"dry_run": True, "programs": rows}, indent=2))
        pool.shutdown()
        return 0

    import torch

    _load_nvml()
    from solar.gpu.calibrate import calibrate
    from solar.gpu.calibrate_energy import EnergyMeter, idle_run

    t_start = time.perf_counter()
    cal = calibrate("cuda", base=spec, quick=True, units=[], latency=False, energy=True, log=print)
    (out / "calibration.json").write_text(json.dumps(cal.to_dict(), indent=2, default=str))
    print(cal)
    if cal.energy is None or cal.energy.costs is None:
        print("gpu_energy: the calibration gave no energy costs; see calibration.json")
        pool.shutdown(cancel_futures=True)
        return 1
    spec_path = out / f"{spec.key}_energy.yaml"
    cal.write(spec_path)
    priced = load_spec(spec_path)
    meter = EnergyMeter.open(cal.device)
    rows: list[dict] = []
    deadline = t_start + args.budget_s

    def save():
        (out / "energy.json").write_text(
            json.dumps(
                {
                    "schema": "solar.energy-bench/1",
                    "command": command,
                    "spec": str(spec_path.name),
                    "costs": priced.energy.to_dict(),
                    "calibration": cal.energy.to_dict(),
                    "programs": rows,
                },
                indent=2,
                default=str,
            )
        )

    for group, p in todo:
        row = {"group": group, "name": p.stem, "path": str(p.relative_to(ROOT))}
        rows.append(row)
        if time.perf_counter() > deadline:
            row["status"] = "skipped (budget)"
            continue
        try:
            row["measured"] = measure_program(p, args.run_s, meter)
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {_first_line(e)}"
            traceback.print_exc(limit=2)
        torch.cuda.empty_cache()  # the program's tensors are gone with measure_program's frame
        got = row.get("measured", {}).get("j_per_call")
        print(f"{group}/{p.name}: {got} J/call {row.get('error', '')}", flush=True)
        save()
    row_idle = idle_run(1.0, torch.device("cuda"), meter)
    wait_until = time.perf_counter() + 60  # the bounds still running get a minute more
    for row, (_, p) in zip(rows, todo):
        try:
            r = futures[p].result(timeout=max(0.1, wait_until - time.perf_counter()))
        except Exception as e:
            r = {"error": f"bound not ready: {type(e).__name__}"}
        if "error" in r:
            row.setdefault("error", r["error"])
            continue
        b, floor = pricing(r["bound"], priced)
        row["bound_s"] = {lv: b.time(lv) for lv in LEVELS}
        row["floor_j"] = {lv: floor.at(lv) for lv in LEVELS}
        if "measured" in row:
            row["ratio"] = ratios(row["measured"]["j_per_call"], floor)
            s_call = row["measured"]["s_per_call"]
            row["time_ratio"] = {lv: s_call / b.time(lv) if b.time(lv) else None for lv in LEVELS}
    pool.shutdown(cancel_futures=True)
    save()
    c = priced.energy
    head = [
        f"# Energy floors against measured energy on {cal.device.summary()}",
        "",
        f"command: `{command}`",
        f"spec with the calibrated costs: {spec_path.name}",
        f"costs: idle {c.idle_w:.1f} W; DRAM {c.dram_j_per_byte * 1e12:.3g} pJ/B; "
        + ", ".join(f"{u} {j * 1e12:.3g} pJ/op" for u, j in c.op_j.items()),
        f"measured on: {c.measured_on}",
        f"idle power at the end of the run: {row_idle.power_w:.1f} W",
        f"selection: every {args.every}-th KernelBench file of level 1 and 2 (file-name order) "
        f"+ 3 training steps; each program called back to back for >= {args.run_s:g} s",
    ]
    (out / "summary").with_suffix(".md").write_text(summarize(rows, head))
    print((out / "summary").with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Issue 13 on a GPU: measure the latency floors, then the headroom of recurrences and
small-kernel programs before and after the latency bounds, and check the corpus for violations.

    PYTHONPATH=. python bench/gpu_latency.py OUTDIR [--budget 300] [--no-corpus]

1. ``solar calibrate --units tc_tf32 --out OUTDIR/calibrated.yaml``: the GPU's measured ceilings
   and its two latency floors (kernel launch: CUDA-graph replay of empty kernels; SM-to-SM
   handoff: a flag ping-ponged between two SMs); the catalogue's defaults must be at or below
   them.
2. ``solar headroom`` (the same API) on the RNN/scan examples and the small-kernel programs
   (ViT-B/16 at batch 1, ResNet-18 at batch 2, 100 tiny kernels): each program is timed once
   (eager, CUDA events, L2 flushed, median) and bounded three ways -- *before* (throughput only,
   what solar reported before issue 13), with the catalogue spec's latency floors, and with the
   calibrated ones. Printed as a table of headrooms (measured / bound) per level.
3. Unless ``--no-corpus``: every example, timed (no validation, no profiling, within
   ``--budget`` seconds), bounded with both specs: any measurement below a bound (1 % margin)
   is listed. The expected result is none.

Writes OUTDIR/calibrated.yaml, OUTDIR/latency_headroom.json, OUTDIR/latency_corpus.json, and
prints the tables (the before/after table last).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from solar.backend.result import LEVELS  # noqa: E402  (after the path setup)

TOL = 0.01
# (problem file, overrides): recurrences first, then small-kernel programs
FOCUS = [
    ("model_gru_stack.py", {}),
    ("op_gru.py", {}),
    ("op_lstm.py", {}),
    ("op_rnn.py", {}),
    ("model_lstm_lm.py", {}),
    ("jax_scan_rnn.py", {}),
    ("chain_tiny_kernels.py", {}),
    ("model_vit_b16.py", {"BATCH": 1}),
    ("model_resnet18_bf16.py", {"BATCH": 2}),
]


def fmt_t(s) -> str:
    if s is None or (isinstance(s, float) and not math.isfinite(s)):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g}{unit}"
    return f"{s / 1e-9:.3g}ns"


def fmt_x(x) -> str:
    return "-" if x is None else f"{x:.3g}x"


def calibrate(out: Path) -> str:
    """Run ``solar calibrate`` (the console entry point as a module) and return the spec path."""
    path = out / "calibrated.yaml"
    cmd = [sys.executable, "-m", "solar", "calibrate", "--units", "tc_tf32", "--out", str(path)]
    print("$", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    print(r.stdout)
    if r.returncode != 0:
        print(r.stderr[-3000:])
        raise SystemExit(f"solar calibrate failed ({r.returncode})")
    return str(path)


def bounds_with(path, spec) -> dict:
    """The problem file's program bounded on ``spec`` (no new measurement; traced again: a
    report's Bound keeps no graph)."""
    from solar.api import bound_graph
    from solar.cli.options import lifted

    _, g = lifted(str(path), None)
    b = bound_graph(g, spec)
    return {
        "bounds": {lv: b.time(lv) for lv in LEVELS},
        "bound_by": {lv: b.bound_by(lv) for lv in LEVELS},
        "throughput": dict(b.latency.throughput),
        "launches": b.latency.launches,
        "critical_path_s": b.latency.critical_path_s,
        "critical_steps": b.latency.critical_steps,
        "chains": [c.to_dict() for c in b.latency.chains[:3]],
    }


def violations(measured: float, bounds: dict) -> list[str]:
    return [lv for lv in LEVELS if measured < bounds[lv] * (1 - TOL)]


def focus(out: Path, catalogue, calibrated, budget_s: float, device: str) -> list[dict]:
    from solar.gpu.headroom_batch import headroom_problem

    rows = []
    for name, overrides in FOCUS:
        path = ROOT / "examples" / name
        t0 = time.perf_counter()
        entry = headroom_problem(
            path,
            catalogue,
            device=device,
            overrides=overrides or None,
            validate=False,
            profile=False,
            budget_s=budget_s,
        )
        row = {"program": path.stem, "overrides": overrides, "status": entry.status}
        if entry.report is None or entry.report.measured is None:
            row["error"] = entry.error or "; ".join(entry.report.errors.values())
            print(f"{path.stem}: {row['error']}", flush=True)
            rows.append(row)
            continue
        m = entry.report.measured.median_s
        row["measured_s"] = m
        row["catalogue"] = bounds_with(path, catalogue)
        row["calibrated"] = bounds_with(path, calibrated)
        row["violations"] = {
            "before": violations(m, row["catalogue"]["throughput"]),
            "catalogue": violations(m, row["catalogue"]["bounds"]),
            "calibrated": violations(m, row["calibrated"]["bounds"]),
        }
        before = row["catalogue"]["throughput"]["fused"]
        print(
            f"{path.stem}: measured {fmt_t(m)}, fused bound {fmt_t(before)} -> "
            f"{fmt_t(row['catalogue']['bounds']['fused'])} (catalogue) / "
            f"{fmt_t(row['calibrated']['bounds']['fused'])} (calibrated) "
            f"[{time.perf_counter() - t0:.0f}s]",
            flush=True,
        )
        rows.append(row)
    (out / "latency_headroom.json").write_text(json.dumps(rows, indent=2, default=str) + "\n")
    return rows


def corpus(out: Path, catalogue, calibrated, budget: float) -> dict:
    from solar.gpu.headroom_batch import headroom_paths
    from solar.gpu.validate import discover

    files = discover([ROOT / "examples"])
    jax_last = sorted(files, key=lambda p: ("jax" in p.read_text(errors="replace"), str(p)))
    batch = headroom_paths(
        jax_last,
        calibrated,
        device="cuda",
        validate=False,
        profile=False,
        budget_total_s=budget,
        show_progress=False,
    )
    found, timed = [], 0
    for e in batch.entries:
        if e.report is None or e.report.measured is None:
            continue
        timed += 1
        m = e.report.measured.median_s
        for label, spec in (("catalogue", catalogue), ("calibrated", calibrated)):
            b = bounds_with(e.path, spec)
            for lv in violations(m, b["bounds"]):
                found.append(
                    {
                        "program": e.name,
                        "spec": label,
                        "level": lv,
                        "measured_s": m,
                        "bound_s": b["bounds"][lv],
                        "bound_by": b["bound_by"][lv],
                    }
                )
    summary = {
        "programs": len(batch.entries),
        "timed": timed,
        "skipped": sum(e.status == "skipped" for e in batch.entries),
        "errors": {e.name: e.error for e in batch.entries if e.status == "error"},
        "violations": found,
    }
    (out / "latency_corpus.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary


def table(rows: list[dict]) -> str:
    head = (
        f"{'program':<22} {'measured':>9} | {'fused: before':>13} {'catalogue':>10} "
        f"{'calibr.':>9} | {'unfused: before':>15} {'catalogue':>10} {'calibr.':>9} | "
        f"{'launches':>8} {'crit. path (steps)':>19} {'bound by (cal.)':>16} {'viol.':>5}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        if "measured_s" not in r:
            lines.append(f"{r['program']:<22} error: {r.get('error', '?')[:100]}")
            continue
        m, cat, cal = r["measured_s"], r["catalogue"], r["calibrated"]

        def h(b, lv, m=m):
            return fmt_x(m / b[lv]) if b[lv] else "-"

        nviol = sum(len(v) for v in r["violations"].values())
        cp = f"{fmt_t(cal['critical_path_s'])} ({cal['critical_steps']})"
        lines.append(
            f"{r['program']:<22} {fmt_t(m):>9} | {h(cat['throughput'], 'fused'):>13} "
            f"{h(cat['bounds'], 'fused'):>10} {h(cal['bounds'], 'fused'):>9} | "
            f"{h(cat['throughput'], 'unfused'):>15} {h(cat['bounds'], 'unfused'):>10} "
            f"{h(cal['bounds'], 'unfused'):>9} | {cal['launches']:>8} {cp:>19} "
            f"{cal['bound_by']['fused']:>16} {nviol:>5}"
        )
    lines.append(
        "headroom = measured / bound; before = throughput only (solar before issue 13); "
        "catalogue / calibr. = with the latency floors of hw_specs/h100_sxm.yaml / of the "
        "calibrated spec; viol. = measurements below a bound (all three, all levels)"
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--budget", type=float, default=300.0, help="seconds for the corpus pass")
    p.add_argument("--budget-s", type=float, default=1.0, help="timing budget per program")
    p.add_argument("--no-corpus", action="store_true")
    p.add_argument("--spec", default=None, help="use this calibrated spec, skip calibrate")
    p.add_argument("--hw", default="auto", help="the catalogue spec (auto: the visible GPU's)")
    p.add_argument("--device", default="cuda", help=argparse.SUPPRESS)  # cpu: a dry run
    args = p.parse_args(argv)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)

    import torch

    from solar.gpu.measure import resolve_hw
    from solar.hw import load_spec

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    t0 = time.perf_counter()
    catalogue = resolve_hw(args.hw, torch.device(args.device))
    calibrated = load_spec(args.spec or calibrate(out))
    print(
        f"latency floors: catalogue {catalogue.key}: launch {catalogue.launch_floor_s * 1e6:.3g} "
        f"us, sync {catalogue.sync_floor_s * 1e6:.3g} us; calibrated: launch "
        f"{calibrated.launch_floor_s * 1e6:.3g} us, sync {calibrated.sync_floor_s * 1e6:.3g} us; "
        "defaults at or below the measurement: "
        f"{catalogue.launch_floor_s <= calibrated.launch_floor_s}, "
        f"{catalogue.sync_floor_s <= calibrated.sync_floor_s}",
        flush=True,
    )
    rows = focus(out, catalogue, calibrated, args.budget_s, args.device)
    if not args.no_corpus:
        s = corpus(out, catalogue, calibrated, args.budget)
        print(
            f"\ncorpus: {s['timed']} of {s['programs']} programs timed ({s['skipped']} skipped by "
            f"the budget, {len(s['errors'])} errors); violations with the latency bounds: "
            f"{len(s['violations'])}"
        )
        for v in s["violations"]:
            print(
                f"  VIOLATION {v['program']} ({v['spec']} spec) {v['level']}: measured "
                f"{fmt_t(v['measured_s'])} < bound {fmt_t(v['bound_s'])} ({v['bound_by']})"
            )
        for name, err in list(s["errors"].items())[:10]:
            print(f"  error {name}: {str(err)[:120]}")
    print(f"\n[{time.perf_counter() - t0:.0f}s]\n" + table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

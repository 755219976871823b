#!/usr/bin/env python3
"""Definitions on the GPU: every definition's IR executed against its reference, the reference
timed against its bounds, and ``solar score`` on three solutions.

    python bench/gpu_definitions.py OUT_DIR [--hw auto] [--defs examples/definitions]
    python bench/gpu_definitions.py OUT_DIR --small      # CPU, the definitions with small inputs

For every definition, on its two first workloads (built on the device: index tensors from the
definition's input maker, float tensors random): the IR of the reference (traced with the index
values real) is executed and compared with the reference's outputs (``solar.gpu.validate``);
the reference is timed with the L2 flushed (median of CUDA-event timings) and must not be
faster than its unfused/fused/cache-aware bounds. Then the SOL score of three solutions of
``silu_and_mul_i14336`` (``bench/solutions/``: a Triton kernel, ``torch.compile`` of the
reference, the reference itself, which must score 0.5 up to timing noise) on every workload.
Writes OUT_DIR/definitions.md (tables), OUT_DIR/definitions.json; a failing definition is a row,
never the end of the run. Exit status 1 when a check failed.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SOLUTIONS = ("silu_and_mul_triton", "silu_and_mul_compiled", "silu_and_mul_reference")
SMALL_BYTES = 64 * 2**20  # --small: definitions whose first workload's inputs fit this


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--hw", default="auto")
    p.add_argument("--defs", default=str(ROOT / "examples" / "definitions"))
    p.add_argument("--small", action="store_true", help="CPU, small definitions, one workload")
    p.add_argument("--workloads", type=int, default=2, help="workloads per definition")
    return p.parse_args(argv)


def input_bytes(inputs) -> int:
    import torch

    return sum(
        v.numel() * v.element_size() for v in inputs.values.values() if isinstance(v, torch.Tensor)
    )


def check_definition(path: Path, spec, device: str, n_workloads: int, small: bool) -> list[dict]:
    from solar.definition.inputs import make_inputs, reference_module
    from solar.definition.schema import default_workloads_path, load_definition, load_workloads
    from solar.definition.workload import bound_workload, traced_reference
    from solar.gpu.measure import time_fn
    from solar.gpu.validate import validate

    defn = load_definition(path)
    module = reference_module(defn)
    rows = []
    for wl in load_workloads(default_workloads_path(path), defn)[:n_workloads]:
        row = {"definition": defn.name, "workload": wl.uuid, "status": "ok"}
        t0 = time.perf_counter()
        try:
            meta = make_inputs(defn, wl, module=module)
            row["axes"] = meta.axes
            if (
                small
                and input_bytes(make_inputs(defn, wl, module=module, real_floats=True))
                > SMALL_BYTES
            ):
                row["status"] = "skipped"
                row["note"] = "inputs over 64 MiB (--small)"
                rows.append(row)
                continue
            wb = bound_workload(defn, wl, spec, module)
            if wb.status != "ok":
                raise RuntimeError(wb.error)
            inputs = make_inputs(defn, wl, module=module, device=device, real_floats=True)
            fn, tensors = traced_reference(defn, inputs, module)
            rep = validate(fn, tensors, name=defn.name)
            row["validation"] = rep.status
            if not rep.ok:
                row["status"] = "failed"
                row["note"] = rep.reason or (str(rep.worst) if rep.worst else "")
            t = time_fn(functools.partial(fn, *tensors), device=device, budget_s=0.3).median_s
            row.update(t_ref=t, unfused=wb.unfused, fused=wb.fused, cache_aware=wb.cache_aware)
            below = [lv for lv in ("unfused", "fused", "cache_aware") if t < row[lv]]
            if below and device == "cuda":
                row["status"] = "violation"
                row["note"] = f"reference faster than the {', '.join(below)} bound"
        except Exception as e:  # one definition's failure is a row
            row["status"] = "error"
            row["note"] = (
                f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
            )
        row["seconds"] = time.perf_counter() - t0
        rows.append(row)
        print(f"{defn.name:<48} {wl.uuid[:8]} {row['status']:<9} {row.get('note', '')}", flush=True)
    return rows


def score_solutions(spec, device: str, small: bool) -> tuple[list[str], list[dict]]:
    from solar.cli.score import score_table
    from solar.definition.schema import default_workloads_path, load_definition, load_workloads
    from solar.gpu.score import score_solution
    from solar.gpu.solution import python_file_solution

    path = ROOT / "examples" / "definitions" / "silu_and_mul_i14336.json"
    defn = load_definition(path)
    wls = load_workloads(default_workloads_path(path), defn)
    if small:
        wls = wls[:2]
    tables, data = [], []
    for name in SOLUTIONS:
        try:
            solution = python_file_solution(ROOT / "bench" / "solutions" / f"{name}.py")
            rows = score_solution(defn, wls, solution, spec, device=device)
        except Exception as e:
            tables.append(f"### {name}\n\nerror: {type(e).__name__}: {e}\n")
            continue
        table = score_table(defn.name, name, spec.name, "cache_aware", rows)
        tables.append(f"### {name}\n\n{table}\n")
        data.append({"solution": name, "rows": [r.to_dict() for r in rows]})
    return tables, data


def main(argv=None) -> int:
    args = parse(argv)
    import torch

    from solar.definition import discover_definitions
    from solar.gpu.measure import resolve_hw
    from solar.hw import load_spec

    device = "cpu" if args.small or not torch.cuda.is_available() else "cuda"
    spec = load_spec("H100") if device == "cpu" else resolve_hw(args.hw)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    n = 1 if args.small else args.workloads
    rows = []
    for path in discover_definitions([args.defs]):
        rows += check_definition(path, spec, device, n, args.small)
    tables, scores = score_solutions(spec, device, args.small)
    lines = [f"# Definitions on {spec.name} ({device})", "",
             "| definition | workload | axes | IR vs reference | T_ref | unfused | fused | cache-aware | status |",  # noqa: E501
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    from solar.fmt import fmt_time

    for r in rows:
        axes = " ".join(f"{k}={v}" for k, v in (r.get("axes") or {}).items())
        t = [
            fmt_time(r[k]) if k in r else "-" for k in ("t_ref", "unfused", "fused", "cache_aware")
        ]
        status = r["status"] + (f": {r['note']}" if r.get("note") else "")
        lines.append(f"| {r['definition']} | {r['workload'][:8]} | {axes} | {r.get('validation', '-')} | "  # noqa: E501
                     f"{' | '.join(t)} | {status} |")  # fmt: skip
    lines += ["", "## SOL scores of three solutions (`solar score`)", "", *tables]
    (out / "definitions.md").write_text("\n".join(lines) + "\n")
    (out / "definitions.json").write_text(json.dumps({"hw": spec.name, "device": device, "rows": rows, "scores": scores}, indent=1, default=str))  # fmt: skip  # noqa: E501
    bad = [r for r in rows if r["status"] not in ("ok", "skipped")]
    ref = next((s for s in scores if s["solution"] == "silu_and_mul_reference"), None)
    if ref and device == "cuda":
        off = [
            r
            for r in ref["rows"]
            if r["status"] == "PASSED" and r["score"] is not None and abs(r["score"] - 0.5) > 0.1
        ]
        if off:
            print(f"the reference scored away from 0.5 on {len(off)} workloads (timing noise?)")
    print(f"{len(rows)} workloads checked, {len(bad)} failed; tables in {out / 'definitions.md'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Validate and measure the training-step examples on the visible GPU; print a table last.

    PYTHONPATH=. python bench/gpu_training.py OUTDIR [--budget-s 2] [--only gpt,resnet]

For each training problem file (docs/training.md: ``examples/train_gpt.py``,
``examples/train_resnet.py``, ``examples/train_hf_llama.py``,
``examples/jax_twin_train_gpt_torch.py``,
``examples/jax_twin_train_gpt.py``), at full size on CUDA, seed 0:

- build it for real, run one real step (the optimizer state exists), trace the next step
  (forward, backward, optimizer) and bound it on the GPU's spec (``--hw auto``);
- validate: execute the IR of the step on the same parameters, optimizer state and batch, and
  compare the loss and every updated parameter, optimizer-state tensor and buffer with the real
  step's; PyTorch steps also per kernel (every kernel's output against PyTorch's own operator
  on the same inputs: the gradients included);
- time the real step (CUDA events, L2 flushed, median; JAX with the host clock), profile the
  PyTorch steps' kernels onto the IR kernels, and classify every measurement below a bound;
- report, per program: headroom = measured / bound at each level, the SOL utilisation =
  fused bound / measured (how close the step is to its speed of light), and the conventional
  MFU = the step's model FLOPs (the IR's tensor-core FLOPs of forward and backward, no
  recompute) / (measured time x the GPU's datasheet dense peak of that tensor-core dtype).

Writes OUTDIR/<program>.json (schema ``solar.headroom/1``) and OUTDIR/training_summary.txt;
prints the table last. A failing program is recorded and the others still run; JAX runs last
(it keeps the GPU memory it takes). Needs optax for the JAX example (``pip install --no-deps
wheels/*.whl`` when the machine has none).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

EXAMPLES = [
    "train_gpt.py",
    "train_resnet.py",
    "train_hf_llama.py",
    "jax_twin_train_gpt_torch.py",
    "jax_twin_train_gpt.py",  # JAX last
]


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--hw", default="auto")
    p.add_argument("--budget-s", type=float, default=2.0, help="timing budget per program")
    p.add_argument("--only", default="", help="comma-separated substrings of names to keep")
    p.add_argument("--device", default="cuda", help="cuda (default); cpu for a smoke test")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a module constant of every file that has it (small runs)",
    )
    return p.parse_args(argv)


def model_flops(bound) -> tuple[int, str | None]:
    """Tensor-core FLOPs of the forward and backward phases (the model's FLOPs: no recompute)
    and the tensor-core op class carrying most of them."""
    per: dict[str, int] = {}
    for ph in bound.phases:
        if ph.phase in ("forward", "backward"):
            for unit, n in ph.flops.items():
                if unit.startswith("tc_"):
                    per[unit] = per.get(unit, 0) + n
    if not per:
        return 0, None
    unit = max(per, key=per.__getitem__)
    return sum(per.values()), unit


def row(name: str, r) -> dict:
    """One line of the table from a HeadroomReport."""
    out = {"program": name}
    m = r.measured.median_s if r.measured else None
    b = r.bound
    out["measured_s"] = m
    out.update({f"{lv}_s": v for lv, v in r.bounds.items()})
    out["headroom"] = {lv: (m / v if m and v else None) for lv, v in r.bounds.items()}
    out["sol_utilisation"] = r.bounds["fused"] / m if m else None
    flops, unit = model_flops(b) if b is not None else (0, None)
    spec = b.hardware() if b is not None else None
    peak = None
    if spec is not None and unit is not None:
        peak = spec.datasheet_dense.get(unit) or spec.peak(unit)
    out["model_flops"], out["tc_unit"], out["peak_flops"] = flops, unit, peak
    out["mfu"] = flops / (m * peak) if m and peak else None
    v = r.validation
    out["validation"] = v.status if v is not None else "not run"
    if v is not None and v.kernels is not None:
        out["kernels_ok"] = f"{sum(k.ok for k in v.kernels)}/{len(v.kernels)}"
    out["worst"] = v.summary() if v is not None else ""
    out["violations"] = len(r.violations)
    out["violation_kinds"] = sorted({x.kind for x in r.violations})
    out["program_violations"] = sum(x.scope == "program" for x in r.violations)
    out["kernel_flags"] = sum(x.scope == "kernel" for x in r.violations)
    out["phases"] = {p.phase: p.unfused_s for p in (b.phases if b is not None else [])}
    if r.mapping:
        out["profiled_s"] = r.mapping.get("total_device_s")
        out["unmatched_ir"] = len(r.mapping.get("unmatched_ir", []))
    out["errors"] = dict(r.errors)
    return out


def fmt(x, spec=".3g", scale=1.0, unit="") -> str:
    return "-" if x is None else f"{x * scale:{spec}}{unit}"


def table(rows: list[dict]) -> str:
    head = ["program", "valid", "kernels", "measured", "unfused", "fused", "headroom",
            "SOL util", "MFU", "viol", "kernel flags"]  # fmt: skip
    lines = []
    for r in rows:
        if "error" in r:
            lines.append([r["program"], "error", "-", "-", "-", "-", "-", "-", "-", "-", "-"])
            continue
        h = r["headroom"]
        lines.append(
            [
                r["program"],
                r["validation"],
                r.get("kernels_ok", "-"),
                fmt(r["measured_s"], ".4g", 1e3, " ms"),
                fmt(r["unfused_s"], ".4g", 1e3, " ms"),
                fmt(r["fused_s"], ".4g", 1e3, " ms"),
                f"{fmt(h['unfused'], '.2f')}x / {fmt(h['fused'], '.2f')}x",
                fmt(r["sol_utilisation"], ".1%"),
                fmt(r["mfu"], ".1%"),
                str(r["program_violations"]),
                f"{r['kernel_flags']} ({', '.join(r['violation_kinds'])})"
                if r["kernel_flags"]
                else "0",
            ]
        )
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    out.append("-" * len(out[0]))
    out += ["  ".join(str(c).ljust(w) for c, w in zip(line, widths)) for line in lines]
    out.append(
        "headroom: measured / unfused bound and measured / fused bound; SOL util: fused bound / "
        "measured; MFU: forward+backward tensor-core FLOPs / (measured x datasheet dense peak); "
        "viol: program measurements below a bound (must be 0); kernel flags: kernels that ran "
        "faster than their per-kernel DRAM bound, classified (cache_effect: served by L2)"
    )
    return "\n".join(out)


def main(argv=None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    from solar.gpu.headroom_batch import headroom_problem
    from solar.gpu.problems import parse_sets

    names = [n for n in EXAMPLES if not args.only or any(s in n for s in args.only.split(","))]
    cuda = args.device == "cuda"
    gpu = torch.cuda.get_device_name(0) if cuda else args.device
    print(f"device: {gpu}, torch {torch.__version__}", flush=True)
    sets = parse_sets(args.set)
    rows = []
    for name in names:
        path = ROOT / "examples" / name
        t0 = time.perf_counter()
        try:
            e = headroom_problem(
                path,
                args.hw if cuda else ("H100" if args.hw == "auto" else args.hw),
                device=args.device,
                budget_s=args.budget_s,
                overrides=sets,
                strict_overrides=False,
            )
            if e.report is None:
                raise RuntimeError(e.error)
            r = e.report
            (out / f"{path.stem}.json").write_text(r.to_json() + "\n")
            rows.append(row(path.stem, r))
            print(f"{path.stem}: {time.perf_counter() - t0:.0f} s", flush=True)
            print(r, flush=True)
        except Exception as ex:  # keep going: one line, the traceback in the summary
            rows.append({"program": path.stem, "error": f"{type(ex).__name__}: {ex}"})
            print(f"{path.stem}: FAILED {type(ex).__name__}: {ex}", flush=True)
            traceback.print_exc()
        if cuda:
            torch.cuda.empty_cache()
    (out / "training_rows.json").write_text(json.dumps(rows, indent=2, default=str) + "\n")
    text = table(rows)
    details = [f"{r['program']}: {r.get('worst') or r.get('error')}" for r in rows]
    (out / "training_summary.txt").write_text(text + "\n\n" + "\n".join(details) + "\n")
    print("\n".join(details))
    print()
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

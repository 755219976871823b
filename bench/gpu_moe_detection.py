#!/usr/bin/env python3
"""Mixture of experts and data-dependent sizes on the visible GPU: validate, time, bound.

    PYTHONPATH=. python bench/gpu_moe_detection.py OUTDIR [--small] [--only moe,detection]

Cases (seed 0, bf16 MoE, fp32 detection):

- a Mixtral-style MoE model (Mixtral-8x7B widths, 1 layer: 8 experts, top-2) called the
  default way, prefill (1 x 2048 tokens) and one decode step (batch 16, context 4096, static
  cache), each with transformers' default experts path (``torch._grouped_mm``) and the eager
  one (a GEMM per expert hit);
- torchvision's Faster R-CNN v2 (``weights=None, weights_backbone=None``) on one 800 x 800
  image, with the sizes its NMS and score thresholds produce (``observe=True``).

For each: the IR traced with ``observe=True`` is executed on the same inputs and compared with
the program's outputs (solar.gpu.compare's tolerances); the program is timed (CUDA events, L2
flushed, median); its bounds are computed with the observed sizes and, for the MoE, with
``routing="any"`` (valid for every routing) and ``routing="balanced"``. A measured time below
the observed or the "any" bound is a violation (the balanced bound assumes a routing the random
router need not produce, so it is shown, not judged). Writes OUTDIR/moe_detection.json and
OUTDIR/moe_detection.md (the table, also printed). ``--small``: tiny sizes on the CPU (a smoke
test of the script itself; the timings mean nothing).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import solar  # noqa: E402
from solar.gpu.measure import time_fn  # noqa: E402


def mixtral(small: bool, impl: str, device: str):
    import transformers

    width = (
        dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2)
        if small
        else dict(
            hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8
        )
    )
    cfg = transformers.MixtralConfig(
        **width, num_hidden_layers=1, num_local_experts=8, num_experts_per_tok=2, vocab_size=32000
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.MixtralForCausalLM(cfg).to(torch.bfloat16).eval()
    model.config._experts_implementation = impl
    return model


def moe_cases(small: bool, device: str):
    from solar.llm import decode_step, prefill

    for impl in ("grouped_mm", "eager"):
        model = mixtral(small, impl, device)
        tokens, (batch, context) = (16, (4, 32)) if small else (2048, (16, 4096))
        yield f"mixtral prefill {tokens} ({impl})", prefill(model, batch=1, context=tokens), True
        yield (
            f"mixtral decode b{batch} ctx{context} ({impl})",
            decode_step(model, batch, context),
            True,
        )


def detection_cases(small: bool, device: str):
    from torchvision.models import detection

    torch.manual_seed(0)
    size = 128 if small else 800
    model = detection.fasterrcnn_resnet50_fpn_v2(
        weights=None, weights_backbone=None, min_size=size, max_size=size
    )
    model = model.to(device).eval()
    image = [torch.rand(3, size, size, device=device)]

    def run(images):
        return model(images)

    yield f"fasterrcnn_resnet50_fpn_v2 {size}px", (run, (image,)), False


def validate(program, inputs) -> tuple[bool, str]:
    """solar's validation of the IR traced at the observed sizes: outputs compared, and where
    rounding moves a data-dependent size (one more box kept, one token routed elsewhere) every
    kernel checked on the source's inputs (solar/gpu/validate.py)."""
    trace = solar.trace(program, inputs, observe=True)
    rep = solar.validate(program, inputs, per_kernel="auto", trace=trace)
    worst = rep.worst
    err = f"max rel error {worst.rel_err:.2e}" if worst is not None else ""
    notes = [n for n in rep.notes if not rep.reason or rep.reason not in n]  # said once
    return rep.status == "passed", "; ".join(x for x in (err, rep.reason or "", *notes) if x)


def one(name: str, phase, moe: bool, hw: str, device: str, budget_s: float) -> dict:
    program, inputs = phase
    row: dict = {"case": name}
    t0 = time.perf_counter()
    try:
        row["valid"], row["validation"] = validate(program, inputs)
        with torch.no_grad():
            timing = time_fn(lambda: program(*inputs), device=device, budget_s=budget_s)
        row["measured_s"] = timing.median_s
        bounds = {"observed": solar.bound(program, inputs, hw=hw, observe=True)}
        if moe:
            for routing in ("any", "balanced"):
                bounds[routing] = solar.bound(program, inputs, hw=hw, routing=routing)
        row["bounds"] = {k: {"fused_s": b.fused, "unfused_s": b.unfused} for k, b in bounds.items()}
        judged = [k for k in bounds if k != "balanced"]
        row["violations"] = [
            f"{k} {level}"
            for k in judged
            for level in ("fused", "unfused")
            if timing.median_s < row["bounds"][k][f"{level}_s"]
        ]
    except Exception as e:  # record and go on with the next case
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
        traceback.print_exc()
    row["seconds"] = time.perf_counter() - t0
    print(json.dumps(row, default=str), flush=True)
    return row


def table(rows: list[dict]) -> str:
    def us(s: float | None) -> str:
        return "" if s is None else f"{s * 1e6:,.1f}"

    out = [
        "| case | valid | measured us | fused us (observed / any / balanced) "
        "| unfused us (observed) | violations |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['case']} | error | | | | {r['error']} |")
            continue
        b = r["bounds"]
        fused = " / ".join(
            us(b[k]["fused_s"]) if k in b else "-" for k in ("observed", "any", "balanced")
        )
        out.append(
            f"| {r['case']} | {'yes' if r['valid'] else 'NO'} ({r['validation']}) | "
            f"{us(r['measured_s'])} | {fused} | {us(b['observed']['unfused_s'])} | "
            f"{', '.join(r['violations']) or 'none'} |"
        )
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--small", action="store_true", help="tiny sizes on the CPU (smoke test)")
    p.add_argument("--only", default="", help="comma-separated: moe, detection")
    p.add_argument("--budget-s", type=float, default=2.0)
    args = p.parse_args(argv)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    device = "cpu" if args.small else "cuda"
    if args.small:
        hw = "H100"
    else:  # the visible GPU's catalogue spec (solar.bound takes a name, not "auto")
        from solar.gpu.measure import resolve_hw

        hw = resolve_hw("auto", device)
    only = set(filter(None, args.only.split(","))) or {"moe", "detection"}
    rows = []
    if "moe" in only:
        rows += [
            one(n, ph, m, hw, device, args.budget_s) for n, ph, m in moe_cases(args.small, device)
        ]
    if "detection" in only:
        rows += [
            one(n, ph, m, hw, device, args.budget_s)
            for n, ph, m in detection_cases(args.small, device)
        ]
    (out / "moe_detection.json").write_text(json.dumps(rows, indent=2, default=str) + "\n")
    md = table(rows)
    (out / "moe_detection.md").write_text(md + "\n")
    print(md)
    return 0 if all("error" not in r and r["valid"] and not r["violations"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

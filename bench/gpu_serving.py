#!/usr/bin/env python3
"""Issue 35 on a GPU: decode steps measured against their bounds (no step may be faster).

    PYTHONPATH=. python bench/gpu_serving.py OUTDIR [--dry-run]

For a GPT-2-medium-shaped and a 1B-LLaMA-shaped model (transformers classes built from their
configs, random weights, bf16) at batch 1, 8 and 64 with ``CONTEXT`` cached tokens: the decode
step of :func:`solar.llm.decode_step` (a ``StaticCache`` written in place, the step the
serving frontier traces) captured in a CUDA graph and replayed (CUDA events, median of
``REPLAYS``; the weights, 0.7 and 2.5 GB, are far larger than the L2, so each replay reads them
from DRAM), against the same step's bounds on the visible GPU (``hw="auto"``), traced on the
meta device. A step whose capture fails is timed eagerly and marked so; an item that fails is
recorded with its error and the rest go on.

Writes OUTDIR/serving.json (every row) and OUTDIR/summary.md (the table and the command).
``--dry-run``: the bounds alone, on the CPU, for an H100 (checks everything but the timing).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CONTEXT = 512
BATCHES = (1, 8, 64)
REPLAYS = 30
TOL = 0.01  # a measurement below (1 - TOL) x its bound is a violation
MODELS = {
    "gpt2-medium": {
        "model_type": "gpt2", "n_layer": 24, "n_embd": 1024, "n_head": 16, "n_positions": 1024,
        "vocab_size": 50257,
    },
    "llama-1b": {  # Llama-3.2-1B's shape
        "model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
        "num_hidden_layers": 16, "vocab_size": 128256, "max_position_embeddings": 131072,
        "tie_word_embeddings": True,
    },
}  # fmt: skip


def build(shape: dict, device: str):
    import torch
    import transformers

    kind = shape["model_type"]
    config = transformers.AutoConfig.for_model(
        kind, **{k: v for k, v in shape.items() if k != "model_type"}
    )
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    return model.eval()


def bound_of(meta_model, batch: int, spec):
    import solar

    b = solar.bound(*solar.llm.decode_step(meta_model, batch=batch, context=CONTEXT), hw=spec)
    return {"fused": b.fused, "cache_aware": b.cache_aware, "unfused": b.unfused,
            "fused_bound_by": b.fused_bound_by, "bytes_fused": b.bytes_fused}  # fmt: skip


def measure(model, batch: int) -> tuple[float, str]:
    """Median seconds of one decode step, and how it ran (``cuda graph`` or ``eager``)."""
    import torch

    import solar

    step, inputs = solar.llm.decode_step(model, batch=batch, context=CONTEXT)
    with torch.inference_mode():
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):  # warm-up, outside the graph
                step(*inputs)
        torch.cuda.current_stream().wait_stream(stream)
        how = "cuda graph"
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step(*inputs)
            run = graph.replay
        except Exception as e:  # capture not possible: time it eagerly, and say so
            how = f"eager ({type(e).__name__})"

            def run():
                step(*inputs)

        times = []
        for _ in range(REPLAYS):
            a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            run()
            z.record()
            z.synchronize()
            times.append(a.elapsed_time(z) * 1e-3)
    return statistics.median(times), how


def fmt(s) -> str:
    if s is None:
        return "-"
    return f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.3f} ms"


def summary(rows: list[dict], device: str, command: str) -> str:
    lines = [
        f"# Decode steps against their bounds ({device})",
        "",
        f"`{command}`",
        "",
        f"Static KV cache of {CONTEXT} tokens + 1, bf16, random weights; CUDA-graph replay, "
        f"median of {REPLAYS}. A violation is a step measured below (1 - {TOL}) x its bound.",
        "",
        "| model | batch | measured | fused bound | bound by | cache-aware | measured / fused | "
        "how | violation |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['batch']} | error: {r['error']} ||||||||")
            continue
        m, b = r.get("measured_s"), r["bound"]
        ratio = f"{m / b['fused']:.2f}" if m else "-"
        lines.append(
            f"| {r['model']} | {r['batch']} | {fmt(m)} | {fmt(b['fused'])} | "
            f"{b['fused_bound_by']} | {fmt(b['cache_aware'])} | {ratio} | {r.get('how', '-')} | "
            f"{'YES' if r.get('violation') else 'no'} |"
        )
    bad = [r for r in rows if r.get("violation")]
    lines += ["", f"Violations: {len(bad)} of {len(rows)} steps."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--dry-run", action="store_true", help="bounds only, on the CPU, for an H100")
    args = p.parse_args(argv)
    from solar.frontend.torchvision_ops import ensure_torchvision_ops

    ensure_torchvision_ops()
    import torch

    from solar.hw import load_spec

    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    if args.dry_run:
        spec, device = load_spec("H100"), "dry run on the CPU, bounds for H100"
    else:
        from solar.gpu.measure import resolve_hw

        spec = resolve_hw("auto", "cuda")
        device = f"{torch.cuda.get_device_name()}, spec {spec.key}"
    rows: list[dict] = []
    start = time.perf_counter()
    for name, shape in MODELS.items():
        try:
            meta = build(shape, "meta")
            real = None if args.dry_run else build(shape, "cuda")
        except Exception as e:
            rows += [
                {"model": name, "batch": b, "error": f"{type(e).__name__}: {e}"} for b in BATCHES
            ]
            continue
        for batch in BATCHES:
            row: dict = {"model": name, "batch": batch, "context": CONTEXT}
            try:
                row["bound"] = bound_of(meta, batch, spec)
                if real is not None:
                    row["measured_s"], row["how"] = measure(real, batch)
                    row["violation"] = row["measured_s"] < (1 - TOL) * row["bound"]["fused"]
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            rows.append(row)
            print(json.dumps(row), flush=True)
        del real
        if not args.dry_run:
            torch.cuda.empty_cache()
    command = "PYTHONPATH=. python bench/gpu_serving.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    (out / "serving.json").write_text(
        json.dumps(
            {"device": device, "seconds": time.perf_counter() - start, "rows": rows}, indent=2
        )  # fmt: skip
    )
    (out / "summary.md").write_text(summary(rows, device, command))
    print(summary(rows, device, command))
    return 1 if any(r.get("violation") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

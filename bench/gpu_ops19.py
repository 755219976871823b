#!/usr/bin/env python3
"""Validate and time the models of the newly covered operator families on the visible GPU.

    PYTHONPATH=. python bench/gpu_ops19.py OUTDIR [--only unet,vae,raft] [--small]

Three models, called the way their libraries document, at full size on CUDA, seed 0:

- ``unet``: diffusers' ``UNet2DConditionModel()`` with its default (Stable-Diffusion-style)
  config in bf16: a 1x4x64x64 latent, timestep 10, 1x77 text states of the config's
  ``cross_attention_dim`` (nearest 2x upsampling, group norm, cross-attention);
- ``vae``: the decoder of diffusers' ``AutoencoderKL`` with Stable Diffusion's VAE config
  (block channels 128/256/512/512) in bf16: a 1x4x64x64 latent to a 512x512 image;
- ``raft``: torchvision's ``raft_small(weights=None)`` in fp32 on a 1x3x368x496 image pair,
  12 flow updates (``linspace``, ``grid_sample`` in the correlation lookup, bilinear
  ``F.interpolate``, ``F.unfold`` in the convex upsampling).

For each: :func:`solar.headroom` on the GPU's spec (``--hw auto``): the IR executed on the same
weights and inputs and compared with the model's outputs (per kernel too), the real forward
timed (CUDA events, L2 flushed, median) and every measurement below a bound classified. No
program may be faster than any of its bounds. Writes OUTDIR/<model>.json and OUTDIR/ops19.md
(a markdown table), and prints the table last. ``--small`` runs tiny configs on the CPU (a
smoke test of this script; nothing is timed against a GPU).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODELS = ("unet", "vae", "raft")


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--hw", default="auto")
    p.add_argument("--only", default="", help="comma-separated model names (unet, vae, raft)")
    p.add_argument("--budget-s", type=float, default=2.0, help="timing budget per model")
    p.add_argument("--small", action="store_true", help="tiny configs on the CPU (smoke test)")
    return p.parse_args(argv)


def build(name: str, small: bool):
    """``(model, inputs, dtype)`` of one case, built on the CPU with random weights."""
    import torch

    torch.manual_seed(0)
    if name == "unet":
        from diffusers import UNet2DConditionModel

        kw = {}
        if small:
            kw = dict(
                sample_size=16,
                block_out_channels=(32, 64),
                down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
                cross_attention_dim=32,
                layers_per_block=1,
                attention_head_dim=8,
                norm_num_groups=8,
            )
        model = UNet2DConditionModel(**kw).eval()
        side = 16 if small else 64
        states = torch.randn(1, 77, model.config.cross_attention_dim)
        return model, (torch.randn(1, 4, side, side), torch.tensor([10]), states), torch.bfloat16
    if name == "vae":
        from diffusers import AutoencoderKL

        channels = (32, 64) if small else (128, 256, 512, 512)
        vae = AutoencoderKL(
            block_out_channels=channels,
            down_block_types=("DownEncoderBlock2D",) * len(channels),
            up_block_types=("UpDecoderBlock2D",) * len(channels),
            layers_per_block=1 if small else 2,
            norm_num_groups=8 if small else 32,
        ).eval()
        side = 8 if small else 64
        return vae.decoder, (torch.randn(1, 4, side, side),), torch.bfloat16
    if name == "raft":
        import torchvision

        class Flow(torch.nn.Module):
            """RAFT as called for a flow estimate: the last of its flow predictions."""

            def __init__(self, updates: int) -> None:
                super().__init__()
                self.raft = torchvision.models.optical_flow.raft_small(weights=None)
                self.updates = updates

            def forward(self, a, b):
                return self.raft(a, b, num_flow_updates=self.updates)[-1]

        h, w = (128, 128) if small else (368, 496)
        model = Flow(2 if small else 12).eval()
        return model, (torch.rand(1, 3, h, w) * 2 - 1, torch.rand(1, 3, h, w) * 2 - 1), None
    raise ValueError(f"unknown model {name!r}; one of {', '.join(MODELS)}")


def run_one(name: str, args) -> dict:
    import torch

    import solar

    model, inputs, dtype = build(name, args.small)
    device = "cpu" if args.small else "cuda"
    if dtype is not None:
        model = model.to(dtype)
        inputs = tuple(x.to(dtype) if x.is_floating_point() else x for x in inputs)
    model.to(device)
    inputs = tuple(x.to(device) for x in inputs)
    hw = "H100" if args.small and args.hw == "auto" else args.hw
    with torch.no_grad():
        r = solar.headroom(model, inputs, hw, name=name, budget_s=args.budget_s)
    (Path(args.outdir) / f"{name}.json").write_text(r.to_json() + "\n")
    print(r, flush=True)
    m = r.measured.median_s if r.measured else None
    v = r.validation
    return {
        "model": name,
        "validation": v.status if v is not None else "not run",
        "kernels_ok": f"{sum(k.ok for k in v.kernels)}/{len(v.kernels)}"
        if v is not None and v.kernels is not None
        else "-",
        "measured_s": m,
        **{f"{lv}_s": b for lv, b in r.bounds.items()},
        "violations": sum(x.scope == "program" for x in r.violations),
        "kernel_flags": sum(x.scope == "kernel" for x in r.violations),
    }


def ms(x) -> str:
    return "-" if x is None else f"{x * 1e3:.4g} ms"


def table(rows: list[dict]) -> str:
    head = "| model | validation | kernels ok | measured | unfused | fused | cache-aware | " \
        "below a bound (program) | kernel flags |"  # fmt: skip
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | error: {r['error']} | - | - | - | - | - | - | - |")
            continue
        lines.append(
            f"| {r['model']} | {r['validation']} | {r['kernels_ok']} | {ms(r['measured_s'])} | "
            f"{ms(r.get('unfused_s'))} | {ms(r.get('fused_s'))} | {ms(r.get('cache_aware_s'))} "
            f"| {r['violations']} | {r['kernel_flags']} |"
        )
    lines.append("")
    lines.append(
        "below a bound (program): measurements of the whole forward faster than one of its "
        "bounds (must be 0); kernel flags: kernels faster than their own DRAM bound, classified "
        "in the JSON (cache effects)."
    )
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    names = [n for n in MODELS if not args.only or n in args.only.split(",")]
    device = "cpu" if args.small else torch.cuda.get_device_name(0)
    print(f"device: {device}, torch {torch.__version__}", flush=True)
    rows = []
    for name in names:
        t0 = time.perf_counter()
        try:
            rows.append(run_one(name, args))
            print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
        except Exception as ex:  # keep going: one line here, the traceback above
            traceback.print_exc()
            rows.append({"model": name, "error": f"{type(ex).__name__}: {str(ex)[:200]}"})
        if not args.small:
            torch.cuda.empty_cache()
    text = table(rows)
    (out / "ops19.md").write_text(f"device: {device}\n\n{text}\n")
    print(text)
    return 0 if all("error" not in r and r["violations"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

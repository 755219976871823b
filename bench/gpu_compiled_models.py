#!/usr/bin/env python3
"""A GPT-2 block and a ResNet-50 stage under ``torch.compile``, measured kernel by kernel against
the bound of what each generated kernel computes (issue 33; the tables in docs/compiled.md).

    PYTHONPATH=. python bench/gpu_compiled_models.py OUTDIR [--mode default] [--small]

- GPT-2 block: ``transformers``' ``GPT2Block`` with GPT-2 small's config (768 wide, 12 heads,
  SDPA attention), batch 8 x 1024 tokens, bf16, eval;
- ResNet-50 stage: ResNet-50's ``layer2`` (four bottleneck blocks, 256 -> 512 channels, the
  first with stride 2), built from KernelBench's ``Bottleneck`` (level3/10_ResNet101.py, the
  same block as torchvision's), batch 32 x 256 x 56 x 56, fp32, eval.

``--small`` shrinks both (a CPU check of the script). Writes ``OUTDIR/NAME.txt`` (the report as
``solar`` prints it), ``OUTDIR/NAME.json`` and ``OUTDIR/NAME.png`` for each.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import sys
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def gpt2_block(small: bool, device: str):
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    cfg = GPT2Config(n_embd=64, n_head=4) if small else GPT2Config()
    cfg._attn_implementation = "sdpa"
    dtype = torch.float32 if small else torch.bfloat16
    block = GPT2Block(cfg).to(device=device, dtype=dtype).eval()
    b, s = (2, 32) if small else (8, 1024)
    x = torch.randn(b, s, cfg.n_embd, device=device, dtype=dtype)
    return block, (x,)


def resnet50_stage(small: bool, device: str):
    spec = importlib.util.spec_from_file_location(
        "kb_resnet101", ROOT / "bench/kernelbench/level3/10_ResNet101.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    bottleneck = mod.Bottleneck
    inp, width, blocks = 256, 128, 4  # ResNet-50 layer2
    down = torch.nn.Sequential(
        torch.nn.Conv2d(inp, width * 4, 1, stride=2, bias=False), torch.nn.BatchNorm2d(width * 4)
    )
    layers = [bottleneck(inp, width, stride=2, downsample=down)]
    layers += [bottleneck(width * 4, width) for _ in range(blocks - 1)]
    stage = torch.nn.Sequential(*layers).to(device).eval()
    n, hw = (2, 16) if small else (32, 56)
    return stage, (torch.randn(n, inp, hw, hw, device=device),)


MODELS = {"gpt2_block": gpt2_block, "resnet50_stage": resnet50_stage}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--mode", default="default")
    p.add_argument("--small", action="store_true")
    p.add_argument("--device", default="cuda")
    args = p.parse_args(argv)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    from solar.gpu.compiled_headroom import compiled_headroom

    hw = "auto" if args.device == "cuda" else "H100"
    status = 0
    for name, build in MODELS.items():
        try:
            model, inputs = build(args.small, args.device)
            r = compiled_headroom(model, inputs, hw, mode=args.mode, name=name, budget_s=0.5)
            (out / f"{name}.txt").write_text(str(r) + "\n")
            (out / f"{name}.json").write_text(r.to_json() + "\n")
            with contextlib.suppress(ImportError):  # no matplotlib: no plot
                r.plot(str(out / f"{name}.png"))
            print(r)
        except Exception:
            status = 1
            (out / f"{name}.error.txt").write_text(traceback.format_exc())
            traceback.print_exc()
    return status


if __name__ == "__main__":
    sys.exit(main())

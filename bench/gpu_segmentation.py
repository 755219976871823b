#!/usr/bin/env python3
"""torchvision's segmentation models (bilinear upsampling heads with non-integer scales)
validated and timed on the visible GPU against their bounds; writes a markdown table.

    PYTHONPATH=. python bench/gpu_segmentation.py OUT_DIR [--small] [--hw auto] [--budget-s 2]

Each model is built as its users build it (``torchvision.models.get_model(name,
weights=None, weights_backbone=None)``, random initialisation, seed 0), in eval mode, fp32, on
one 3 x 520 x 520 image (torchvision's evaluation size): DeepLabV3 with a MobileNetV3 backbone
(its head upsamples 33 x 33 to 520 x 520: 1,089 affine classes), LR-ASPP MobileNetV3 and FCN
ResNet-50. For each: bound on the GPU's spec, the IR executed against the model (validation),
the forward timed (CUDA events, L2 flushed, median) and profiled. No measurement may be below
a bound.

``--small``: one 64 x 64 image on the CPU, LR-ASPP only unless ``--models`` says otherwise (a
smoke test of this script). Writes OUT_DIR/<model>.json and OUT_DIR/segmentation.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpu_batch import device_name, finish, fmt_t, report_row, run_cases  # noqa: E402

import solar  # noqa: E402,F401  (before torchvision: it makes it importable beside a CPU torch)

MODELS = ["deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large", "fcn_resnet50"]


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("outdir")
    p.add_argument("--small", action="store_true", help="a 64 x 64 image on the CPU")
    p.add_argument("--models", default="", help="comma-separated torchvision model names")
    p.add_argument("--hw", default="auto")
    p.add_argument("--budget-s", type=float, default=2.0, help="timing budget per model")
    return p.parse_args(argv)


class Logits(torch.nn.Module):
    """The segmentation logits (``model(x)["out"]``), the output users read."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def run_one(name: str, args) -> dict:
    import torchvision

    from solar.gpu.headroom import measure_subject
    from solar.gpu.subject import make_subject

    device = "cpu" if args.small else "cuda"
    hw = "H100" if args.small else args.hw
    torch.manual_seed(0)
    kw = {"weights": None, "weights_backbone": None}
    model = Logits(torchvision.models.get_model(name, **kw)).eval().to(device)
    side = 64 if args.small else 520
    x = torch.randn(1, 3, side, side, device=device)
    subject = make_subject(model, (x,), name=name)
    rep = measure_subject(
        subject, hw, validate=True, profile=not args.small, budget_s=args.budget_s
    )
    (Path(args.outdir) / f"{name}.json").write_text(rep.to_json())
    return report_row(name, rep) | {
        "kernels": len(rep.bound.kernels) if rep.bound is not None else None,
        "errors": dict(rep.errors),
    }


def table(rows: list[dict], device: str) -> str:
    head = (
        f"Segmentation models on {device}\n\n"
        "| model | kernels | validation | measured | unfused bound | fused bound "
        "| cache-aware bound | measured / fused | violations |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | error: {r['error']} |" + " |" * 7)
            continue
        b = r["bounds"]
        ratio = f"{r['measured'] / b['fused']:.2f}x" if r["measured"] and b.get("fused") else "-"
        lines.append(
            f"| {r['name']} | {r['kernels']} | {r['validation']} | {fmt_t(r['measured'])} | "
            f"{fmt_t(b.get('unfused'))} | {fmt_t(b.get('fused'))} | "
            f"{fmt_t(b.get('cache_aware'))} | {ratio} | {r['violations']} |"
        )
    return head + "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = parse(argv if argv is not None else sys.argv[1:])
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    names = [s for s in args.models.split(",") if s] or (
        ["lraspp_mobilenet_v3_large"] if args.small else MODELS
    )
    rows = run_cases((name, lambda name=name: run_one(name, args)) for name in names)
    return finish(out, "segmentation", rows, table(rows, device_name(args.small)))


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Validate and time the issue-24 examples (FFT, linear algebra, complex numbers, JAX random
keys) on the visible GPU; write a markdown table.

    PYTHONPATH=. python bench/gpu_spectral.py OUT_DIR [--small] [--hw auto] [--budget-s 2]

For each of ``examples/op_spectral_conv_fno.py`` (FNO spectral convolution: rfft2, complex
einsum, irfft2), ``examples/jax_linear_solve_train.py`` (a training step through
``jnp.linalg.solve``) and ``examples/jax_diffusion_sampler.py`` (50 steps drawing noise with
``jax.random``), built at full size on CUDA with seed 0: trace and bound it on the GPU's spec,
execute the IR on the same parameters and inputs and compare every output with the source
(the JAX random draws value for value: the IR computes Threefry exactly), time the source
(median; CUDA events for PyTorch, the host clock around ``block_until_ready`` for JAX) and
classify every measurement below a bound (there must be none).

``--small``: tiny sizes on the CPU (a smoke test of this script). Writes OUT_DIR/<name>.json
(schema ``solar.headroom/1``) and OUT_DIR/spectral.md (the table), and prints the table.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# example file -> module constants for --small
CASES = {
    "op_spectral_conv_fno.py": {"BATCH": 2, "IN_CH": 3, "OUT_CH": 4, "SIZE": 16, "MODES": 4},
    "jax_linear_solve_train.py": {"BATCH": 64, "FEATURES": 16, "HIDDEN": 24},
    "jax_diffusion_sampler.py": {"BATCH": 8, "DIM": 8, "WIDTH": 16, "STEPS": 4},
}
from gpu_batch import device_name, finish, fmt_t, report_row, run_cases  # noqa: E402

from solar.backend.result import LEVELS  # noqa: E402  (after the path setup)


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--small", action="store_true", help="tiny sizes on the CPU")
    p.add_argument("--hw", default="auto", help="spec: auto (the visible GPU), name or YAML")
    p.add_argument("--budget-s", type=float, default=2.0, help="timing budget per program")
    return p.parse_args(argv)


def run_one(path: Path, args) -> dict:
    from solar.gpu.headroom import measure_subject
    from solar.gpu.problems import problem_subject

    device = "cpu" if args.small else "cuda"
    hw = "H100" if args.small else args.hw
    overrides = CASES[path.name] if args.small else None
    subject = problem_subject(path, device=device, seed=0, overrides=overrides)
    jax_program = "jax" in path.name
    rep = measure_subject(
        subject, hw, validate=True, profile=not (jax_program or args.small),
        budget_s=args.budget_s,
    )  # fmt: skip
    (Path(args.outdir) / f"{path.stem}.json").write_text(rep.to_json())
    row = report_row(path.stem, rep)
    row["bounds"] = {lv: rep.bounds.get(lv) for lv in LEVELS}
    return row


def table(rows: list[dict], device: str) -> str:
    head = (
        f"Issue-24 examples on {device}\n\n"
        "| program | validation | measured | unfused bound | fused bound | cache-aware bound "
        "| measured / fused | violations |\n|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | error: {r['error']} | - | - | - | - | - | - |")
            continue
        b = r["bounds"]
        ratio = f"{r['measured'] / b['fused']:.2f}x" if r["measured"] and b["fused"] else "-"
        lines.append(
            f"| {r['name']} | {r['validation']} | {fmt_t(r['measured'])} | "
            f"{fmt_t(b['unfused'])} | {fmt_t(b['fused'])} | {fmt_t(b['cache_aware'])} | "
            f"{ratio} | {r['violations']} |"
        )
    return head + "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = parse(argv if argv is not None else sys.argv[1:])
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [ROOT / "examples" / name for name in CASES]  # PyTorch first: JAX keeps its memory
    rows = run_cases((p.stem, lambda p=p: run_one(p, args)) for p in paths)
    return finish(out, "spectral", rows, table(rows, device_name(args.small)))


if __name__ == "__main__":
    sys.exit(main())

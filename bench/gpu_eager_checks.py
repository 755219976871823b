#!/usr/bin/env python3
"""Does solar refuse exactly the programs eager PyTorch refuses on the GPU? (issue 37, item 1)

    PYTHONPATH=. python bench/gpu_eager_checks.py results/gpu_h100_2026-12-05/eager_checks

The trace checks dtypes as eager's CPU kernels do (``solar/frontend/torch/eager_checks.py``);
the target is CUDA. For every program of ``tests/eager_check_cases.py`` (refused ones, per
family of the rules; legal mixes; CUDA-autocast ones) this runs eager PyTorch on the device
(``cuda`` when there is one, else ``cpu``) and ``solar.bound`` on the same tensors, and writes
one row per program into OUT/eager_checks.json and .md: what eager did (ran, or its exception
and message), what solar did (bounded, or refused with which message), and whether they agree
(solar refuses iff eager raises). Tiny tensors: seconds in all. A failing case is a row.
Exit status 0 when every row agrees. On CUDA it also measures what the trace does not check
yet, mixed devices (a CUDA model fed a CPU tensor), as rows it does not count.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import eager_check_cases as cases  # noqa: E402

import solar  # noqa: E402

#: the family of programs the trace does not check yet (measured, not counted)
GAP = "devices: not checked yet"


def mixed_devices() -> list[tuple[str, object, tuple]]:
    """Programs mixing CUDA and CPU tensors, which eager CUDA refuses and the trace (one device
    for all its fake tensors) does not check yet; built on the GPU (``_on`` leaves their CPU
    tensors where they are: it moves to ``cuda`` what is already there)."""
    lin = torch.nn.Linear(64, 32).cuda()
    return [
        ("cuda-linear-cpu-input", lin, (torch.randn(8, 64),)),
        (
            "cpu-scalar-with-cuda",
            lambda x, s: x * s,
            (torch.randn(8, device="cuda"), torch.tensor(2.0)),
        ),
    ]


def _on(device: str, fn: object, inputs: tuple, family: str = "") -> tuple[object, tuple]:
    if family == GAP:  # the devices are the program's
        return fn, inputs
    moved = tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs)
    if isinstance(fn, torch.nn.Module):
        fn = fn.to(device)
    return fn, moved


def _first(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def row(name: str, family: str, fn: object, inputs: tuple, device: str) -> dict:
    fn, inputs = _on(device, fn, inputs, family)
    try:
        with torch.no_grad():
            fn(*inputs)
        eager = "ran"
    except Exception as e:  # noqa: BLE001 - what eager says is the measurement
        eager = _first(e)
    try:
        solar.bound(fn, list(inputs), hw="H100")
        got = "bounded"
    except solar.api.ProgramError as e:
        got = "refused: " + _first(e.original)
    except Exception as e:  # noqa: BLE001
        got = "error: " + _first(e)
    agrees = (eager == "ran") == (got == "bounded")
    return {"name": name, "family": family, "eager": eager, "solar": got, "agrees": agrees}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="folder for eager_checks.json and eager_checks.md")
    p.add_argument("--limit", type=int, default=None, help="the first N programs (a smoke run)")
    args = p.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    todo = [(n, fam, f, i) for n, fam, f, i in cases.REFUSED]
    todo += [(n, "legal", f, i) for n, f, i in cases.LEGAL]
    todo += [(n, "cuda-only", f, i) for n, f, i in cases.CUDA_ONLY if device == "cuda"]
    gaps = [(n, GAP, f, i) for n, f, i in mixed_devices()] if device == "cuda" else []
    rows = []
    for name, family, fn, inputs in todo[: args.limit] + gaps:
        try:
            rows.append(row(name, family, fn, inputs, device))
        except Exception as e:  # noqa: BLE001 - one failing case does not stop the others
            rows.append({"name": name, "family": family, "error": _first(e), "agrees": False})
        print(rows[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    lines = [
        f"eager PyTorch {torch.__version__} on {name} vs solar.bound",
        "",
        "| program | family | eager | solar | agrees |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        eager, got = r.get("eager", r.get("error", "")), r.get("solar", "")
        lines.append(f"| {r['name']} | {r['family']} | {eager} | {got} | {r['agrees']} |")
    checked = [r for r in rows if r["family"] != GAP]
    agree = sum(r["agrees"] for r in checked)
    lines += ["", f"{agree} of {len(checked)} agree (rows of '{GAP}' not counted)"]
    (out / "eager_checks.md").write_text("\n".join(lines) + "\n")
    (out / "eager_checks.json").write_text(json.dumps(rows, indent=1))
    print("\n".join(lines))
    return 0 if agree == len(checked) else 1


if __name__ == "__main__":
    sys.exit(main())

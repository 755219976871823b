#!/usr/bin/env python3
"""Does solar refuse exactly the programs eager PyTorch refuses on the GPU? (issue 37, item 1)

    PYTHONPATH=. python bench/gpu_eager_checks.py results/gpu_h100_2026-12-05/eager_checks

The trace checks dtypes as eager's CPU kernels do, plus the dtypes CUDA's GEMM kernels lack
and mixed devices (``solar/frontend/torch/eager_checks.py``, ``eager_devices.py``); the
target is CUDA. For every program of ``tests/eager_check_cases.py`` (refused ones, per family
of the rules; legal mixes; on CUDA also the CUDA-autocast ones, the integer GEMMs CUDA refuses
and CUDA models fed CPU tensors) this runs eager PyTorch on the device (``cuda`` when there is
one, else ``cpu``) and ``solar.bound`` on the same tensors, and writes one row per program into
OUT/eager_checks.json and .md: what eager did (ran, or its exception and message), what solar
did (bounded, or refused with which message), and whether they agree (solar refuses iff eager
raises). Tiny tensors: seconds in all. A failing case is a row. Exit status 0 when every row
agrees.
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

#: the families whose tensors stay on the devices the program gives them
OWN_DEVICES = ("devices", "legal-devices")


class Indexed(torch.nn.Module):
    """A CUDA buffer indexed by a CPU index tensor: eager moves the indices (legal)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.zeros(10, 4))

    def forward(self, i):
        return self.table[i] * 2


def mixed_devices() -> list[tuple[str, str, object, tuple]]:
    """Models on the GPU fed CPU tensors: ``tests/eager_check_cases.py``'s, and a CPU index
    tensor of a CUDA buffer (which a CPU-only machine cannot trace). Family "devices" where
    eager refuses the mix, "legal-devices" where it runs it."""
    cuda = lambda m: m.cuda()  # noqa: E731
    own = [
        (n, f if f == "devices" else "legal-devices", p, i)
        for n, f, p, i in cases.device_cases(cuda)
    ]
    return [
        *own,
        ("cuda-index-cpu-indices", "legal-devices", cuda(Indexed()), (torch.tensor([1, 3]),)),
    ]


def _on(device: str, fn: object, inputs: tuple, family: str = "") -> tuple[object, tuple]:
    if family in OWN_DEVICES:  # the devices are the program's
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
    if device == "cuda":
        todo += [(n, "cuda-only", f, i) for n, f, i in cases.CUDA_ONLY]
        todo += [(n, fam, f, i) for n, fam, f, i, _ in cases.CUDA_REFUSED]
        todo += mixed_devices()
    rows = []
    for name, family, fn, inputs in todo[: args.limit]:
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
    agree = sum(r["agrees"] for r in rows)
    lines += ["", f"{agree} of {len(rows)} agree"]
    (out / "eager_checks.md").write_text("\n".join(lines) + "\n")
    (out / "eager_checks.json").write_text(json.dumps(rows, indent=1))
    print("\n".join(lines))
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())

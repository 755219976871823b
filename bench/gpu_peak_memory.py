"""Peak memory of problem files on the GPU against solar's peak-memory bound.

``python bench/gpu_peak_memory.py examples/model_transformer_encoder.py ...``: each file's
model and inputs on CUDA in the mode the file asks (eval unless it says train), one forward
under ``torch.no_grad()`` after a warm-up, ``torch.cuda.max_memory_allocated()`` from a reset
with the weights and inputs resident; against ``solar.bound(...).memory.peak_bytes`` (weights,
inputs and the intermediates live at the peak). solar's figure must not exceed the measured
one (the caching allocator only rounds up). Prints one line per file."""

from __future__ import annotations

import sys

import torch

import solar
from solar.problem import load_problem


def measure(path: str) -> tuple[int, int]:
    p = load_problem(path, device="cuda")
    bound = solar.bound(p.model, p.inputs, hw="H100").memory.peak_bytes
    model, inputs = p.model, p.inputs
    with torch.no_grad():
        model(*inputs)  # warm-up: workspaces, lazy inits
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        model(*inputs)
        torch.cuda.synchronize()
    return bound, torch.cuda.max_memory_allocated()


if __name__ == "__main__":
    print(f"{'file':44} {'solar peak B':>14} {'measured B':>14}  ok")
    for f in sys.argv[1:]:
        b, m = measure(f)
        print(f"{f:44} {b:>14} {m:>14}  {'yes' if b <= m else 'NO: solar above the measured peak'}")

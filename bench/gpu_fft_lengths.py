#!/usr/bin/env python3
"""FFTs of lengths that are not powers of two (the counts of solar/ir/fft_counts.py) validated
and timed on the visible GPU against their bounds; writes a markdown table.

    PYTHONPATH=. python bench/gpu_fft_lengths.py OUT_DIR [--small] [--hw auto] [--budget-s 1]

Each case is one ``torch.fft`` call on a batch of rows (about 2^24 complex or real fp32
elements at full size): ``fft`` (complex to complex), ``rfft`` and ``irfft`` along the last
axis and ``rfft2`` over the last two, at lengths whose cheapest known algorithm differs:
3^5 (mixed radix), 1000 = 2^3 5^3 and 48000 = 2^7 3 5^3 (prime factor and Cooley-Tukey),
primes 251 and 1009 (Rader), 10007 (Bluestein), 4096 (split radix, the control). For each:
bound on the GPU's spec, the IR executed against torch.fft (validation), the call timed (CUDA
events, L2 flushed, median), and the compute term (the count's flops at the fp32 peak) shown
beside the DRAM term, which binds. No measurement may be below a bound.

``--small``: 1/256 of the rows on the CPU (a smoke test of this script); ``--only``: the
named cases. Writes
OUT_DIR/fft_lengths.json and OUT_DIR/fft_lengths.md, and prints the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpu_batch import device_name, finish, fmt_t, report_row, run_cases  # noqa: E402

ELEMENTS = 1 << 24  # elements per case at full size
#: (name, torch.fft function, the transformed length(s), real input)
CASES = [
    ("fft", "fft", (243,), False),
    ("fft", "fft", (251,), False),
    ("fft", "fft", (1000,), False),
    ("fft", "fft", (1009,), False),
    ("fft", "fft", (4096,), False),
    ("fft", "fft", (10007,), False),
    ("fft", "fft", (48000,), False),
    ("rfft", "rfft", (1000,), True),
    ("rfft", "rfft", (1009,), True),
    ("rfft", "rfft", (48000,), True),
    ("irfft", "irfft", (1000,), False),
    ("irfft", "irfft", (10007,), False),
    ("rfft2", "rfft2", (243, 250), True),
]


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("outdir")
    p.add_argument("--small", action="store_true", help="tiny batches on the CPU")
    p.add_argument("--hw", default="auto")
    p.add_argument("--budget-s", type=float, default=1.0, help="timing budget per case")
    p.add_argument("--only", default="", help="comma-separated cases, e.g. 'fft 251,rfft2 243x250'")
    return p.parse_args(argv)


def case_inputs(fn: str, lengths: tuple[int, ...], real: bool, small: bool, device: str):
    """The call and its input: rows of ``lengths`` (an irfft's input is the half spectrum)."""
    import torch

    n = 1
    for s in lengths:
        n *= s
    rows = max(1, ELEMENTS // n // (256 if small else 1))
    gen = torch.Generator(device=device).manual_seed(0)
    shape = (rows, *lengths)
    if fn == "irfft":
        shape = (rows, lengths[0] // 2 + 1)
    x = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
    if not real:
        x = torch.complex(x, torch.randn(shape, generator=gen, device=device))
    call = getattr(torch.fft, fn)
    if fn == "irfft":
        return (lambda x, n=lengths[0]: call(x, n=n)), x
    return call, x


def label_of(name: str, lengths: tuple[int, ...]) -> str:
    return f"{name} {'x'.join(map(str, lengths))}"


def run_one(name: str, fn: str, lengths: tuple[int, ...], real: bool, args) -> dict:
    from solar.gpu.headroom import measure_subject
    from solar.gpu.subject import make_subject
    from solar.ir.fft_counts import complex_plan

    device = "cpu" if args.small else "cuda"
    hw = "H100" if args.small else args.hw
    call, x = case_inputs(fn, lengths, real, args.small, device)
    label = label_of(name, lengths)
    subject = make_subject(call, (x,), name=label)
    rep = measure_subject(subject, hw, validate=True, profile=False, budget_s=args.budget_s)
    (Path(args.outdir) / f"{label.replace(' ', '_')}.json").write_text(rep.to_json())
    kernels = rep.bound.to_dict()["kernels"] if rep.bound is not None else []
    return report_row(label, rep) | {
        "rows": int(x.shape[0]),
        "plans": [complex_plan(n).kind for n in lengths],
        "kernels": [k["op"] for k in kernels],
        "compute_s": sum(k["compute_s"] for k in kernels) if kernels else None,
        "dram_s": sum(k["memory_s"] for k in kernels) if kernels else None,
        "fused": rep.bounds.get("fused"),
    }


def table(rows: list[dict], device: str) -> str:
    head = (
        f"FFT lengths on {device}\n\n"
        "| case | rows | plan (per axis) | validation | measured | fused bound | compute term "
        "| DRAM term | measured / fused | violations |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | error: {r['error']} |" + " |" * 8)
            continue
        ratio = f"{r['measured'] / r['fused']:.2f}x" if r["measured"] and r["fused"] else "-"
        lines.append(
            f"| {r['name']} | {r['rows']} | {', '.join(r['plans'])} | {r['validation']} | "
            f"{fmt_t(r['measured'])} | {fmt_t(r['fused'])} | {fmt_t(r['compute_s'])} | "
            f"{fmt_t(r['dram_s'])} | {ratio} | {r['violations']} |"
        )
    return head + "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = parse(argv if argv is not None else sys.argv[1:])
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    only = {c.strip() for c in args.only.split(",") if c.strip()}
    cases = [c for c in CASES if not only or label_of(c[0], c[2]) in only]
    rows = run_cases((label_of(c[0], c[2]), lambda c=c: run_one(*c, args)) for c in cases)
    return finish(out, "fft_lengths", rows, table(rows, device_name(args.small)))


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Measure 2-GPU tensor-parallel runs against solar's 2-GPU bounds (issue 15).

    python bench/gpu_parallel.py OUTDIR [--size full|small] [--device cuda|cpu] [--hw auto]

Two workloads from the examples, each run Megatron-style on 2 processes with torch.distributed
(NCCL on GPUs, gloo on CPU): ``examples/mlp_bf16.py`` (x + W2 gelu(W1 x): W1 column-parallel,
W2 row-parallel, one all-reduce) and ``examples/model_gpt_block.py`` (attention heads and MLP
hidden units split: two all-reduces). For each:

- solar bounds the example's own single-GPU program on 2 GPUs with ``tp=2``
  (:func:`solar.api.bound_parallel`): the split it derives from the einsum graph, its
  collectives and their communication bounds, the per-GPU peak memory;
- every process builds the full model from one seed and keeps its shards; the 2-process
  output is checked against the one-process output (the split does the same work);
- timing: warm-up, then repetitions with the L2 flushed (a buffer of twice the L2 written)
  and a barrier before each, CUDA events (the host clock on CPU), the median per process, the
  slowest process; the all-reduce alone on a tensor of the size solar's collective moves;
- memory: ``torch.cuda.max_memory_allocated`` of the one-GPU eager forward must be at least
  solar's peak memory, and per process of the TP forward at least the plan's per-GPU peak.

Prints one line per check and the headroom table (measured / bound) last; writes
OUTDIR/parallel_results.json. On CPU (``--device cpu``, small sizes, fp32) it only shows that
the script works: CPU times say nothing about the GPU bounds.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import socket
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

WORLD = 2
SIZES = {  # workload -> size -> (constructor args, input shape)
    "mlp_tp2": {"full": ((2048,), (4096, 2048)), "small": ((64,), (128, 64))},
    "gpt_block_tp2": {
        "full": ((2048, 16), (8, 2048, 2048)),
        "small": ((64, 4), (2, 32, 64)),
    },
}
EXAMPLE = {"mlp_tp2": "mlp_bf16.py", "gpt_block_tp2": "model_gpt_block.py"}
# the axes the TP implementations below split (graph tensor names), and their all-reduces
SPLIT = {"mlp_tp2": ["up_weight:0"], "gpt_block_tp2": ["c_attn_weight:0", "c_fc_weight:0"]}
ALL_REDUCES = {"mlp_tp2": 1, "gpt_block_tp2": 2}


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--size", choices=("full", "small"), default=None, help="default: full on cuda")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--hw", default="auto", help="spec: auto (the visible GPU), a name or YAML")
    p.add_argument("--fallback-hw", default="H200")
    p.add_argument("--reps", type=int, default=None, help="timed repetitions (default 50 / 5)")
    p.add_argument("--only", default="", help="comma-separated workloads")
    args = p.parse_args(argv)
    args.size = args.size or ("full" if args.device == "cuda" else "small")
    args.reps = args.reps or (50 if args.device == "cuda" else 5)
    return args


# ---------------------------------------------------------------------------------------------
# the programs and their tensor-parallel versions


def example_module(name: str):
    path = ROOT / "examples" / EXAMPLE[name]
    spec = importlib.util.spec_from_file_location(f"_example_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build(name: str, size: str, dtype, device):
    """The example's model (its own class, at ``size``) and an input, on ``device``."""
    ctor, shape = SIZES[name][size]
    mod = example_module(name)
    with torch.device(device):
        model = mod.Model(*ctor).to(dtype)
        x = torch.randn(shape, dtype=dtype) if device != "meta" else torch.empty(shape, dtype=dtype)
    return model.eval(), x


def _rows(t: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    n = t.shape[0] // world
    return t[rank * n : (rank + 1) * n].clone()


def _cols(t: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    n = t.shape[1] // world
    return t[:, rank * n : (rank + 1) * n].clone()


class TPMLP(nn.Module):
    """x + down(gelu(up(x))) with ``up`` column-parallel and ``down`` row-parallel."""

    def __init__(self, full, rank: int, world: int):
        super().__init__()
        self.w_up = nn.Parameter(_rows(full.up.weight.data, rank, world))
        self.b_up = nn.Parameter(_rows(full.up.bias.data, rank, world))
        self.w_down = nn.Parameter(_cols(full.down.weight.data, rank, world))
        self.b_down = nn.Parameter(full.down.bias.data.clone())

    def forward(self, x):
        y = F.linear(F.gelu(F.linear(x, self.w_up, self.b_up), approximate="tanh"), self.w_down)
        dist.all_reduce(y)
        y += self.b_down
        return x + y


class TPBlock(nn.Module):
    """The GPT block of examples/model_gpt_block.py with its heads and MLP units split."""

    def __init__(self, full, rank: int, world: int):
        super().__init__()
        c = full.c_attn.in_features
        self.h = full.heads // world
        self.dh = c // full.heads
        self.ln_1, self.ln_2 = full.ln_1, full.ln_2
        w, b = full.c_attn.weight.data, full.c_attn.bias.data
        part = self.h * self.dh
        pieces = [slice(j * c + rank * part, j * c + (rank + 1) * part) for j in range(3)]
        self.w_qkv = nn.Parameter(torch.cat([w[s] for s in pieces]).clone())
        self.b_qkv = nn.Parameter(torch.cat([b[s] for s in pieces]).clone())
        self.w_proj = nn.Parameter(_cols(full.c_proj.weight.data, rank, world))
        self.b_proj = nn.Parameter(full.c_proj.bias.data.clone())
        self.w_fc = nn.Parameter(_rows(full.c_fc.weight.data, rank, world))
        self.b_fc = nn.Parameter(_rows(full.c_fc.bias.data, rank, world))
        self.w_mlp = nn.Parameter(_cols(full.mlp_proj.weight.data, rank, world))
        self.b_mlp = nn.Parameter(full.mlp_proj.bias.data.clone())

    def forward(self, x):
        b, t, _ = x.shape
        part = self.h * self.dh
        q, k, v = F.linear(self.ln_1(x), self.w_qkv, self.b_qkv).split(part, dim=2)
        q, k, v = (z.view(b, t, self.h, self.dh).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = F.linear(y.transpose(1, 2).contiguous().view(b, t, part), self.w_proj)
        dist.all_reduce(y)
        y += self.b_proj
        x = x + y
        z = F.linear(
            F.gelu(F.linear(self.ln_2(x), self.w_fc, self.b_fc), approximate="tanh"), self.w_mlp
        )
        dist.all_reduce(z)
        z += self.b_mlp
        return x + z


TP = {"mlp_tp2": TPMLP, "gpt_block_tp2": TPBlock}


# ---------------------------------------------------------------------------------------------
# solar's bounds (in the parent process, on the meta device)


def resolve_hw(args):
    from solar.hw import load_spec

    if args.hw != "auto":
        return load_spec(args.hw)
    if args.device == "cuda" and torch.cuda.is_available():
        try:
            return load_spec(torch.cuda.get_device_name(0))
        except ValueError:
            pass
    return load_spec(args.fallback_hw)


def analyse(name: str, size: str, dtype, spec) -> dict:
    import solar
    from solar.api import bound_parallel

    model, x = build(name, size, dtype, "meta")
    _, g = solar.trace_and_lift(model, [x], name=name)
    one = solar.api.bound_graph(g, spec)
    pb = bound_parallel(g, spec, WORLD, tp=WORLD, split=SPLIT[name], single=one)
    found = bound_parallel(g, spec, WORLD, tp=WORLD, single=one)
    return {
        "plan": pb.plan.describe(),
        "search_split": [g["label"] for g in found.tp_groups],  # what solar picks by itself
        "split": [g["label"] for g in pb.tp_groups],
        "one_gpu": {"fused_s": one.fused, "peak_bytes": one.memory.peak_bytes},
        "bounds": {"unfused_s": pb.unfused, "fused_s": pb.fused, "cache_aware_s": pb.cache_aware},
        "ideal_s": pb.ideal_s,
        "peak_bytes_per_gpu": pb.peak_bytes,
        "collectives": [
            {k: c[k] for k in ("tensor", "kind", "n", "tensor_bytes", "bytes_per_gpu", "time_s")}
            for c in pb.collectives
        ],
        "link_bandwidth": pb.link_bandwidth,
    }


# ---------------------------------------------------------------------------------------------
# the measurement (one process per GPU)


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _barrier(device):
    if device.type == "cuda":
        dist.barrier(device_ids=[device.index])
    else:
        dist.barrier()


def time_it(fn, device, reps: int, flush=None, before=None) -> float:
    """Median seconds of ``fn()`` over ``reps`` (after warm-up), L2 flushed and all processes
    lined up before each repetition."""
    for _ in range(3):
        if before:
            before()
        fn()
    _sync(device)
    times = []
    for _ in range(reps):
        if before:
            before()
        if flush is not None:
            flush.zero_()
        _sync(device)
        _barrier(device)
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def slowest(value: float, device) -> float:
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def peak_memory(device) -> float:
    return float(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else math.nan


def measure(name: str, args, dtype, device, rank: int, bounds: dict) -> dict:
    torch.manual_seed(0)
    full, x = build(name, args.size, dtype, device)
    out: dict = {}
    with torch.no_grad():
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
        ref = full(x)
        _sync(device)
        out["one_gpu_peak_bytes"] = peak_memory(device)
        ref = ref.cpu()  # off the device, so that it does not count in the TP run's memory
        tp = TP[name](full, rank, WORLD)
        del full
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(device)
        y = tp(x)
        _sync(device)
        out["tp_peak_bytes"] = peak_memory(device)
        scale = ref.float().abs().max().item() or 1.0
        out["max_rel_err"] = (y.cpu().float() - ref.float()).abs().max().item() / scale
        del ref, y
        flush = None
        if device.type == "cuda":
            l2 = torch.cuda.get_device_properties(device).L2_cache_size
            flush = torch.empty(2 * l2 // 4 + 1, dtype=torch.float32, device=device)
        out["tp_s"] = slowest(time_it(lambda: tp(x), device, args.reps, flush), device)
        coll = bounds["collectives"][0]
        numel = int(coll["tensor_bytes"]) // x.element_size()
        src = torch.randn(numel, dtype=dtype, device=device)
        buf = src.clone()
        out["all_reduce_s"] = slowest(
            time_it(
                lambda: dist.all_reduce(buf),
                device,
                args.reps,
                flush,
                before=lambda: buf.copy_(src),
            ),
            device,
        )
    return out


def worker(rank: int, args, port: int, bounds: dict, dtype) -> None:
    device = torch.device(f"cuda:{rank}") if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD
    )
    try:
        results = {name: measure(name, args, dtype, device, rank, b) for name, b in bounds.items()}
        if rank == 0:
            (Path(args.outdir) / "measured_rank0.json").write_text(json.dumps(results, indent=1))
    finally:
        dist.destroy_process_group()


# ---------------------------------------------------------------------------------------------
# the report


def fmt_t(s: float) -> str:
    if not isinstance(s, (int, float)) or not math.isfinite(s):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


def fmt_b(b: float) -> str:
    if not isinstance(b, (int, float)) or not math.isfinite(b):
        return "-"
    return f"{b / 1e6:.4g} MB"


def table(rows: list[list[str]], head: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths))
    out = [line, "-" * len(line)]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def report(bounds: dict, measured: dict, spec, args) -> tuple[str, bool]:
    rows, ok_all, lines = [], True, []
    tol = 1e-2 if args.device == "cuda" else 1e-4
    for name, b in bounds.items():
        m = measured[name]
        fused = b["bounds"]["fused_s"]
        kinds = [c["kind"] for c in b["collectives"]]
        checks = {
            "solar derives the implemented all-reduces": kinds
            == ["all-reduce"] * ALL_REDUCES[name],
            "TP output = 1-process output": m["max_rel_err"] <= tol,
            "TP time >= fused bound": m["tp_s"] >= fused,
            "TP time >= cache-aware bound": m["tp_s"] >= b["bounds"]["cache_aware_s"],
            "TP time >= unfused bound (eager)": m["tp_s"] >= b["bounds"]["unfused_s"],
            "all-reduce time >= its bound": m["all_reduce_s"] >= b["collectives"][0]["time_s"],
        }
        if args.device == "cuda":
            checks["1-GPU max_memory_allocated >= peak bound"] = (
                m["one_gpu_peak_bytes"] >= b["one_gpu"]["peak_bytes"]
            )
            checks["TP max_memory_allocated >= per-GPU peak bound"] = (
                m["tp_peak_bytes"] >= b["peak_bytes_per_gpu"]
            )
        for what, ok in checks.items():
            lines.append(f"{name}: {what}: {'ok' if ok else 'VIOLATED'}")
            ok_all &= ok
        lines.append(
            f"{name}: solar's plan {b['plan']}, split {', '.join(b['split'])} (its own search "
            f"splits {', '.join(b['search_split']) or 'nothing'}); collectives "
            + ", ".join(
                f"{c['kind']} {c['tensor']} {fmt_b(c['tensor_bytes'])}" for c in b["collectives"]
            )
        )
        c0 = b["collectives"][0]
        rows.append(
            [
                name,
                "forward (2 GPUs)",
                fmt_t(m["tp_s"]),
                fmt_t(fused),
                fmt_t(b["bounds"]["cache_aware_s"]),
                fmt_t(b["bounds"]["unfused_s"]),
                f"{m['tp_s'] / fused:.3g} (unfused {m['tp_s'] / b['bounds']['unfused_s']:.3g})",
                f"{m['max_rel_err']:.2g}",
            ]
        )
        rows.append(
            [
                name,
                f"all-reduce {fmt_b(c0['tensor_bytes'])}",
                fmt_t(m["all_reduce_s"]),
                fmt_t(c0["time_s"]),
                "-",
                "-",
                f"{m['all_reduce_s'] / c0['time_s']:.3g}",
                "-",
            ]
        )
        if args.device == "cuda":
            rows.append(
                [
                    name,
                    "peak memory 1 GPU",
                    fmt_b(m["one_gpu_peak_bytes"]),
                    fmt_b(b["one_gpu"]["peak_bytes"]),
                    "-",
                    "-",
                    f"{m['one_gpu_peak_bytes'] / b['one_gpu']['peak_bytes']:.3g}",
                    "-",
                ]
            )
            rows.append(
                [
                    name,
                    "peak memory per GPU (TP)",
                    fmt_b(m["tp_peak_bytes"]),
                    fmt_b(b["peak_bytes_per_gpu"]),
                    "-",
                    "-",
                    f"{m['tp_peak_bytes'] / b['peak_bytes_per_gpu']:.3g}",
                    "-",
                ]
            )
    head = [
        "workload",
        "what",
        "measured",
        "bound (fused)",
        "cache-aware",
        "unfused",
        "headroom = measured / bound",
        "rel err",
    ]
    title = (
        f"2-process tensor parallel on {args.device} ({spec.name} bounds, link "
        f"{bounds[next(iter(bounds))]['link_bandwidth'] / 1e9:g} GB/s per GPU per direction)"
    )
    text = "\n".join(lines) + "\n\n" + title + "\n" + table(rows, head)
    return text, ok_all


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None) -> int:
    args = parse(argv)
    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    if args.device == "cuda" and torch.cuda.device_count() < WORLD:
        print(f"needs {WORLD} GPUs, sees {torch.cuda.device_count()}", file=sys.stderr)
        return 2
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    spec = resolve_hw(args)
    names = [n for n in SIZES if not args.only or n in args.only.split(",")]
    bounds = {n: analyse(n, args.size, dtype, spec) for n in names}
    import torch.multiprocessing as mp

    mp.spawn(worker, args=(args, free_port(), bounds, dtype), nprocs=WORLD, join=True)
    measured = json.loads((outdir / "measured_rank0.json").read_text())
    text, ok = report(bounds, measured, spec, args)
    doc = {
        "schema": "solar.gpu-parallel/1",
        "device": args.device,
        "hw": spec.key,
        "size": args.size,
        "bounds": bounds,
        "measured": measured,
        "ok": ok,
    }
    (outdir / "parallel_results.json").write_text(json.dumps(doc, indent=1))
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())

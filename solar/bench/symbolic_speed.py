"""``python -m solar.bench.symbolic_speed``: symbolic bounds against numeric ones, in time.

For each workload (an example's size constant, or the LLaMA decode step's batch) and the
1,000 sizes 1..1000 of that size:

- **trace**: ``solar.bound`` with the size as a symbol (:func:`solar.symbolic.trace.
  bound_symbolic`, the dims found as the sweep finds them: :mod:`solar.questions.marks`)
  against the numeric ``solar.bound``, both at the sweep's trace point (the median size);
- **sweep**: the 1,000 points from the formulas of that trace
  (:func:`solar.questions.along.along`: pieces met, points analysed as numbers where the
  analysis specializes the size), and the whole ``solar.sweep`` (probe, symbolic trace,
  the check trace, the points outside the count region traced) against re-tracing every
  point: re-tracing is *extrapolated* from 10 sizes spread over 1..1000 (their total x 100).

Each stage runs in a fresh Python process (the framework imported and a small program bounded
first, so first-call costs are not charged to the workload; no cache shared between the
symbolic and numeric traces). Writes ``bench/results/symbolic_speed.md`` and ``.json``;
``python -m solar.bench.symbolic_speed attention_bf16`` measures one workload and prints its row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from solar.bench.models import ROOT

RESULTS = ROOT / "bench" / "results"
POINTS = list(range(1, 1001))
RETRACED = [1, 112, 223, 334, 445, 556, 667, 778, 889, 1000]  # 10 sizes spread over 1..1000
#: workload -> (problem file or None, size swept, what it is)
WORKLOADS = {
    "mlp": ("examples/mlp.py", "TOKENS", "Linear-ReLU-Linear 4096 wide, fp32"),
    "attention_bf16": ("examples/attention_bf16.py", "S", "softmax(QK^T)V, B=8 H=16 D=64, bf16"),
    "model_gru_stack": ("examples/model_gru_stack.py", "STEPS", "6-layer GRU, batch 10, fp32"),
    "conv": (
        "examples/op_conv2d_strided_dilated.py",
        "SIZE",
        "dilated + strided 3x3 convs, 512 channels, batch 16 (height = width = SIZE)",
    ),
    "llama_decode": (
        None,
        "batch",
        "LLaMA decode step (solar.llm.decode_step, static cache of 1024 tokens), LLaMA-7B "
        "dims with 2 layers, bf16",
    ),
}
STAGES = ("symbolic", "sweep", "numeric")


def builder(workload: str):
    """``build(n) -> (model, inputs)`` of a workload at size ``n`` (meta tensors)."""
    path, param, _ = WORKLOADS[workload]
    if path is not None:
        from solar.problem import problem_at

        return lambda n: problem_at(ROOT / path, param, n)
    import torch
    import transformers

    from solar.llm import decode_step

    cfg = transformers.LlamaConfig(
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=2,
        num_attention_heads=32,
        num_key_value_heads=32,
        vocab_size=32000,
        max_position_embeddings=4096,
    )
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    return lambda n: tuple(decode_step(model, n, 1024))


def _warm() -> None:
    """Import the stack and bound a small program: first-call costs are nobody's."""
    import torch

    import solar

    torch.set_num_threads(1)
    solar.bound(torch.nn.Linear(8, 8, device="meta"), [torch.empty(4, 8, device="meta")])


def run_stage(workload: str, stage: str) -> dict:
    """Measure ``stage`` of ``workload`` in this process (see the module docstring)."""
    _warm()
    from solar.api import bound_graph, trace_and_lift
    from solar.collector import full_collections_deferred
    from solar.hw import load_spec
    from solar.questions.formula import probe_sizes

    spec = load_spec("H100")
    _, param, _ = WORKLOADS[workload]
    build = builder(workload)
    n0, n1 = probe_sizes(POINTS)  # type: ignore[misc]
    out: dict = {"workload": workload, "stage": stage, "param": param, "traced_at": n0}

    def numeric(n: int):
        _, g = trace_and_lift(*build(n))
        return bound_graph(g, spec)

    if stage == "numeric":
        t0 = time.perf_counter()
        numeric(n0)
        out["trace_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for n in RETRACED:
            numeric(n)
        out["retrace_10_s"] = time.perf_counter() - t0
    elif stage == "sweep":
        from solar.questions.sweep import sweep

        t0 = time.perf_counter()
        with full_collections_deferred():  # as the commands run a sweep
            s = sweep(None, build, POINTS, spec, param=param, symbolic=True)
        out["sweep_s"] = time.perf_counter() - t0
        out["how"] = s.how
        out["sources"] = {k: sum(p.source == k for p in s.points) for k in ("formula", "graph")}
    else:
        out.update(_symbolic(build, param, n0, n1, spec))
    return out


def _symbolic(build, param: str, n0: int, n1: int, spec) -> dict:
    from solar.collector import full_collections_deferred
    from solar.questions.along import along
    from solar.questions.executors import one_line
    from solar.questions.marks import size_marks
    from solar.symbolic.trace import bound_symbolic

    built0, built1 = build(n0), build(n1)
    places, why = size_marks(param, built0, built1, n0, n1)
    if places is None:
        return {"why": why}
    t0 = time.perf_counter()
    try:
        sb = bound_symbolic(*built0, spec, {param: places})
    except Exception as e:
        return {"why": f"symbolic trace failed: {one_line(e)}"}
    out: dict = {"trace_s": time.perf_counter() - t0}
    specialized = sb.counts_region.specializations.get(param) if sb.counts_region else None
    if specialized:
        return {**out, "why": f"the trace specializes {param} at {specialized}"}
    t0 = time.perf_counter()
    with full_collections_deferred():  # as the commands take a sweep's points
        rows = along(sb, param, POINTS)
    out["eval_s"] = time.perf_counter() - t0
    out["pieces"] = rows.pieces
    out["inside"] = int(rows.inside.sum())
    out["numeric"] = int(rows.numeric.sum())
    return out


def _child(workload: str, stage: str) -> dict:
    cmd = [sys.executable, "-m", "solar.bench.symbolic_speed", "--child", workload, stage]
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"workload": workload, "stage": stage, "error": last}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(workloads: list[str], repeat: int) -> list[dict]:
    """Per workload, each stage's best run (by its main time) of ``repeat``; the stages take
    turns so that a slow spell of the shared machine hits them alike."""
    rows = []
    for w in workloads:
        runs: dict[str, list[dict]] = {s: [] for s in STAGES}
        for _ in range(repeat):
            for s in STAGES:
                sym = runs["symbolic"][-1] if s == "sweep" else {}
                if "why" in sym or "error" in sym:  # the sweep would re-trace every point
                    runs[s].append({"skipped": "no formula: the sweep traces every point"})
                    continue
                runs[s].append(_child(w, s))
        key = {"symbolic": "trace_s", "sweep": "sweep_s", "numeric": "trace_s"}
        row = {"workload": w}
        for s, rs in runs.items():
            ok = [r for r in rs if key[s] in r]
            row[s] = min(ok, key=lambda r: r[key[s]]) if ok else rs[-1]
        rows.append(row)
        print(_line(row), file=sys.stderr)
    return rows


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _line(row: dict) -> str:
    sym, sw, num = row["symbolic"], row["sweep"], row["numeric"]
    path, param, what = WORKLOADS[row["workload"]]
    retrace = num["retrace_10_s"] * len(POINTS) / len(RETRACED) if "retrace_10_s" in num else None
    ratio = sym["trace_s"] / num["trace_s"] if "trace_s" in sym and "trace_s" in num else None
    speed = retrace / sw["sweep_s"] if retrace and "sweep_s" in sw else None
    evaluated = (
        f"{_s(sym['eval_s'])} ({sym['pieces']} pieces"
        + (f", {sym['numeric']} analysed as numbers" if sym.get("numeric") else "")
        + ")"
        if "eval_s" in sym
        else f"- ({sym.get('why') or sym.get('error')})"
    )
    return (
        f"| {row['workload']} | {param} | {_s(sym.get('trace_s'))} | {_s(num.get('trace_s'))} | "
        f"{'-' if ratio is None else f'{ratio:.1f}x'} | {evaluated} | {_s(sw.get('sweep_s'))} | "
        f"{_s(retrace)} | {'-' if speed is None else f'{speed:.0f}x'} | "
        f"{sw.get('how') or sw.get('error') or sw.get('skipped', '')} |"
    )


def markdown(doc: dict) -> str:
    m = doc["machine"]
    out = [
        "# Symbolic bounds: trace and sweep speed",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB RAM; {m['os']}; Python "
        f"{m['python']}, torch {m['torch']}; solar at commit {m['commit']}; {m['date']}. Load "
        f"average (1, 5, 15 min) {tuple(round(x, 2) for x in m['load_avg_start'])} at the start, "
        f"{tuple(round(x, 2) for x in m['load_avg_end'])} at the end (a shared machine).",
        "",
        f"Command: `{doc['command']}`. Each stage runs in a fresh process (see "
        f"`solar/bench/symbolic_speed.py`); times are the best of {doc['repeat']} run(s), "
        "on H100's "
        "spec, for the sizes 1..1000 of the size named. *symbolic trace*: `solar.bound` with the "
        "size a symbol, at the sweep's trace point (size 501); *numeric trace*: `solar.bound` "
        "there. *formula, 1,000 points*: every point from that trace's formulas, after the "
        "trace (the analysis' pieces met along the way are analysed then; where the analysis "
        "specializes the size, points are analysed as numbers on the trace's graph). "
        "*`solar.sweep`, 1,000 points*: the whole sweep (build at two sizes, symbolic trace, "
        "the points, one check trace, the points outside the trace's count region traced). "
        f"*re-tracing*: one `solar.bound` per point, **extrapolated** from {len(RETRACED)} "
        f"sizes ({', '.join(map(str, RETRACED))}): their total x {len(POINTS) // len(RETRACED)}.",
        "",
        "| workload | size | symbolic trace s | numeric trace s | ratio | formula, 1,000 points "
        "s | `solar.sweep`, 1,000 points s | re-tracing, 1,000 points s (extrapolated) | "
        "speed-up | the sweep says |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *[_line(r) for r in doc["rows"]],
        "",
        "Workloads:",
        "",
        *[f"- `{w}`: {WORKLOADS[w][2]}; `{WORKLOADS[w][1]}` swept" for w in doc["workloads"]],
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m solar.bench.symbolic_speed", description=__doc__)
    p.add_argument("workloads", nargs="*", metavar="WORKLOAD", help=", ".join(WORKLOADS))
    p.add_argument("--child", nargs=2, metavar=("WORKLOAD", "STAGE"), help=argparse.SUPPRESS)
    p.add_argument("--repeat", type=int, default=1, help="runs per stage (best kept; default 1)")
    p.add_argument("--out", default=str(RESULTS), help="results folder of a full run")
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(run_stage(*args.child)))
        return 0
    unknown = [w for w in args.workloads if w not in WORKLOADS]
    if unknown:
        p.error(f"unknown workload {unknown[0]!r}; one of: {', '.join(WORKLOADS)}")
    from solar.bench.__main__ import machine

    workloads = args.workloads or list(WORKLOADS)
    doc = {
        "machine": machine(),
        "command": "python -m solar.bench.symbolic_speed"
        + "".join(f" {w}" for w in args.workloads),
        "repeat": args.repeat,
        "workloads": workloads,
    }
    doc["rows"] = measure(workloads, args.repeat)
    doc["machine"]["load_avg_end"] = os.getloadavg()
    text = markdown(doc)
    if not args.workloads:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "symbolic_speed.json").write_text(json.dumps(doc, indent=2) + "\n")
        (out / "symbolic_speed.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

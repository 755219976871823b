"""Bound every workload of every definition of the corpus on H100 and B200, and record the
analysis time per workload (trace + lift + bound; the reference module built once per
definition), wall and CPU.

    python bench/definitions_speed.py [--hw H100 B200] [--out bench/results] [--no-freeze]

Process start-up is measured apart and is in no workload's time: importing solar's torch
frontend and torch's FakeTensorMode (whose first instance imports ``torch._dynamo``, which
imports ``torch.distributed``). After it the import-time objects are frozen (``gc.freeze``),
as ``solar bound`` on definitions does, so that a full collection of Python's cyclic garbage
collector during a workload walks the analysis's objects only, not the ~300,000 objects of
the imported frameworks (0.2-0.6 s per full collection on the project's machine); and each
definition's workloads run with full collections deferred, as ``solar bound`` runs them
(:mod:`solar.collector`). ``--no-freeze`` leaves the imports to the collector, as
a library call does.

Writes ``definitions_speed.md`` (per definition: workloads, median and largest seconds per
workload, per GPU) and ``definitions_speed.json`` (every workload). The target: under a
second per workload.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solar.bench.__main__ import machine  # noqa: E402
from solar.cli.targets.definitions import freeze_imports  # noqa: E402
from solar.collector import full_collections_deferred  # noqa: E402
from solar.definition import discover_definitions, load_definition  # noqa: E402
from solar.definition.inputs import reference_module  # noqa: E402
from solar.definition.schema import default_workloads_path, load_workloads  # noqa: E402
from solar.definition.workload import bound_workload  # noqa: E402
from solar.hw import load_spec  # noqa: E402


def start_up(freeze: bool) -> float:
    """Seconds of the one-time imports every process pays before its first trace, frozen
    after as ``solar bound`` does (:func:`~solar.cli.targets.definitions.freeze_imports`),
    unless not ``freeze``."""
    t0 = time.perf_counter()
    freeze_imports()
    seconds = time.perf_counter() - t0
    if not freeze:
        gc.unfreeze()
    return seconds


def bound_one(path: Path, hws: list[str]) -> list[dict]:
    """One row per GPU: every workload of the definition at ``path`` bounded, timed."""
    defn = load_definition(path)
    module = reference_module(defn)
    wls = load_workloads(default_workloads_path(path), defn)
    rows = []
    with full_collections_deferred():  # as solar bound runs a definition's workloads
        for hw in hws:
            rows.append(_bound_on(defn, module, wls, hw))
    return rows


def _bound_on(defn, module, wls, hw: str) -> dict:
    """The row of one GPU: each workload bounded and timed (wall and CPU)."""
    spec = load_spec(hw)
    per = []
    for wl in wls:
        c0 = time.process_time()
        row = bound_workload(defn, wl, spec, module)
        d = row.to_dict()
        d["cpu_seconds"] = time.process_time() - c0
        per.append(d)
    secs = [w["seconds"] for w in per]
    r = {
        "definition": defn.name, "hw": hw, "workloads": len(per),
        "ok": sum(w["status"] == "ok" for w in per),
        "median_s": statistics.median(secs), "max_s": max(secs),
        "max_cpu_s": max(w["cpu_seconds"] for w in per),
        "kernels_max": max(w["kernels"] for w in per), "per_workload": per,
    }  # fmt: skip
    print(f"{defn.name:<48} {hw:<5} {r['ok']}/{len(secs)} ok  median {r['median_s']:.3f} s"
          f"  max {r['max_s']:.3f} s (CPU {r['max_cpu_s']:.3f} s)", flush=True)  # fmt: skip
    return r


def clear_caches() -> None:
    """Forget what PyTorch's fake-tensor dispatch cache and solar's structure and footprint
    caches hold: the state the first GPU of a definition meets for a workload's new shapes."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from solar.graph.cache import CACHE
    from solar.ir.footprint import domain, forms

    FakeTensorMode.cache_clear()
    CACHE.clear()
    domain.domain.cache_clear()
    forms._form_set.cache_clear()


def stages(path: str, uuid: str, hw: str, repeat: int = 3, cold: bool = False) -> dict[str, float]:
    """CPU seconds (best of ``repeat``, caches warm; ``cold``: the caches cleared before the
    trace and before the bare trace, :func:`clear_caches`) of one workload's stages through
    solar (inputs, trace: make_fx + lowering, lift, bounds) and of PyTorch's bare ``make_fx``
    of the same reference on the same fake tensors (no solar mode, no lowering): the floor of
    its trace."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from solar.api import bound_graph, lift, trace
    from solar.definition.inputs import make_inputs
    from solar.definition.workload import charge_gathered_rows, traced_reference

    defn = load_definition(path)
    module = reference_module(defn)
    wl = next(w for w in load_workloads(default_workloads_path(Path(path)), defn) if w.uuid == uuid)
    spec = load_spec(hw)
    best: dict[str, float] = {}
    for _ in range(repeat):
        if cold:
            clear_caches()
        clock = [time.process_time()]
        inputs = make_inputs(defn, wl, module=module)
        clock.append(time.process_time())
        fn, tensors = traced_reference(defn, inputs, module)
        traced = trace(fn, tensors, name=defn.name)
        clock.append(time.process_time())
        g = lift(traced.program, verified=True)
        charge_gathered_rows(g, fn, inputs)
        clock.append(time.process_time())
        bound_graph(g, spec)
        if cold:
            clear_caches()
        clock.append(time.process_time())
        fn, tensors = traced_reference(defn, inputs, module)
        with FakeTensorMode(allow_non_fake_inputs=True):
            fakes = [torch.empty(t.shape, dtype=t.dtype) for t in tensors]
        with torch.no_grad():
            gm = make_fx(fn, tracing_mode="fake")(*fakes)
        clock.append(time.process_time())
        got = dict(zip(("inputs", "trace", "lift", "bound", "bare_make_fx"),
                       (b - a for a, b in zip(clock, clock[1:]))))  # fmt: skip
        got["fx_nodes"] = len(gm.graph.nodes)
        best = {k: min(v, best.get(k, v)) for k, v in got.items()}
    return best


def _split(stage: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.3f}" for k, v in stage.items() if k != "fx_nodes")


def _load(avg) -> str:
    return "(" + ", ".join(f"{x:.2f}" for x in avg) + ")"


def markdown(meta: dict, rows: list[dict], hws: list[str]) -> str:
    m = meta["machine"]
    n, defs = meta["workloads"], len(rows) // len(hws)
    freeze = (
        "frozen after it, as `solar bound` on definitions does (`gc.freeze`: a full "
        "collection walks the analysis's objects only)"
        if meta["gc_freeze"]
        else "not frozen (`--no-freeze`: a full collection walks every object of the process)"
    )
    lines = [
        "# Definitions: analysis time per workload",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores (shared); Python {m['python']}, torch "
        f"{m['torch']}; solar at commit {m['commit']}; {m['date']}. Load average (1, 5, 15 "
        f"min) {_load(m['load_avg_start'])} at the start, {_load(meta['load_avg_end'])} at "
        "the end (other engineers' jobs share the machine).",
        "",
        f"`python bench/definitions_speed.py`: {defs} definitions x {len(hws)} GPUs "
        f"({', '.join(hws)}), {n} workloads bounded in {meta['total_s']:.1f} s; per "
        f"workload median {meta['median_s']:.3f} s, largest {meta['max_s']:.3f} s (wall; "
        f"largest CPU {meta['max_cpu_s']:.3f} s); {len(meta['failures'])} failures. "
        f"Target: under 1 s per workload.",
        "",
        f"Process start-up, {meta['startup_s']:.2f} s, is in no row: importing solar's torch "
        "frontend and PyTorch's FakeTensorMode (its first instance imports torch._dynamo, "
        "which imports torch.distributed), once per process before the first trace. The "
        f"objects those imports made are {freeze}. Each definition's workloads run with the "
        "collector's full collections deferred, as `solar bound` runs them "
        "(`solar/collector.py`).",
        "",
        "A workload's time is its trace (PyTorch's make_fx on fake tensors, with the index "
        "tensors' real values shadowing them, and the lowering to the IR), lift and bounds, "
        "with the reference module built once per definition. The GPUs of a definition run "
        "one after another in one process, so the second GPU finds PyTorch's fake-tensor "
        "cache and solar's structure cache warm for the same shapes. References with Python "
        "loops over batch entries unroll: the largest paged-decode workloads trace about 30 "
        "operators per sequence (960 fx nodes at batch 32), and PyTorch's make_fx takes about "
        "three quarters of their time.",
        "",
        f"The slowest workload, {meta['slowest']['definition']} {meta['slowest']['uuid'][:8]} "
        f"on {meta['slowest']['hw']}, again with every cache warm (CPU s, best of 3): "
        + _split(meta["slowest_stages"])
        + f" ({meta['slowest_stages']['fx_nodes']} fx nodes); with PyTorch's fake-tensor "
        "cache and solar's structure and footprint caches cleared before each trace, as the "
        "first GPU meets a workload's new shapes: "
        + _split(meta["slowest_stages_cold"])
        + ". bare_make_fx is PyTorch's make_fx of the same reference on the same fake "
        "tensors without solar (no mode of solar's, no lowering): the floor of its trace.",
        "",
        "| definition | GPU | workloads | bounded | largest kernels | median s | max s | "
        "max CPU s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {r['definition']} | {r['hw']} | {r['workloads']} | {r['ok']} | "
              f"{r['kernels_max']} | {r['median_s']:.3f} | {r['max_s']:.3f} | "
              f"{r['max_cpu_s']:.3f} |" for r in rows]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hw", nargs="+", default=["H100", "B200"])
    ap.add_argument("--defs", default=str(ROOT / "examples" / "definitions"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--no-freeze", action="store_true", help="leave the import-time objects "
                    "to the garbage collector (as a library call does)")  # fmt: skip
    args = ap.parse_args(argv)
    info = machine()
    startup = start_up(freeze=not args.no_freeze)
    rows: list[dict] = []
    t0 = time.perf_counter()
    for path in discover_definitions([args.defs]):
        rows += bound_one(path, args.hw)
    total = time.perf_counter() - t0
    every = [w for r in rows for w in r["per_workload"]]
    r_max, w_max = max(((r, w) for r in rows for w in r["per_workload"]),
                       key=lambda rw: rw[1]["seconds"])  # fmt: skip
    slowest = {"definition": r_max["definition"], "hw": r_max["hw"], "uuid": w_max["uuid"]}
    path = next(p for p in discover_definitions([args.defs]) if p.stem == slowest["definition"])
    split = stages(str(path), slowest["uuid"], slowest["hw"])
    cold = stages(str(path), slowest["uuid"], slowest["hw"], cold=True)
    failures = [(r["definition"], r["hw"], w["uuid"], w["error"])
                for r in rows for w in r["per_workload"] if w["status"] != "ok"]  # fmt: skip
    meta = {"machine": info, "load_avg_end": os.getloadavg(), "startup_s": startup,
            "gc_freeze": not args.no_freeze, "total_s": total, "workloads": len(every),
            "max_s": max(w["seconds"] for w in every),
            "max_cpu_s": max(w["cpu_seconds"] for w in every),
            "median_s": statistics.median(w["seconds"] for w in every),
            "failures": failures, "slowest": slowest, "slowest_stages": split,
            "slowest_stages_cold": cold}  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "definitions_speed.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (out / "definitions_speed.md").write_text(markdown(meta, rows, args.hw))
    print(f"start-up {startup:.2f} s; {len(every)} workloads in {total:.1f} s; median "
          f"{meta['median_s']:.3f} s, max {meta['max_s']:.3f} s; "
          f"{len(failures)} failures")  # fmt: skip
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())

"""Analysis speed and memory: ``python bench/run.py`` (results in ``bench/results/``).

Per model (``bench/models.py``, all on the ``meta`` device), each stage in a fresh Python
process so that its time and peak memory are its own:

- ``make_fx``: the bare trace solar starts from: ``make_fx`` on fake tensors of the model
  called through ``torch.func.functional_call`` (parameters and buffers as graph inputs), and
  nothing else;
- ``bound``: ``solar.bound(model, inputs, hw="H100")``: solar's trace (make_fx with stack
  traces and module paths) and lowering to the Affine Loop IR, lifting to the einsum graph,
  the three bounds; broken down into those parts;
- ``bound_nocache``: the same with the structure cache off (:mod:`solar.cache`), for the
  scaling sweep: what the cache saves.

Wall time is the best of ``--repeat`` runs (the machine is shared; the best run is the least
disturbed), CPU time (``time.process_time``) is that run's. Peak memory is the stage process's
peak resident set (``ru_maxrss``), imports and the meta model included; "RSS before" is the
same figure just before the stage starts. Then:

- scaling: the LLaMA-7B configuration with 1, 2, 4, 8, 16, 32 layers;
- the examples corpus as a batch (:func:`solar.batch.bound_paths`), serially and on a local
  process pool of ``--jobs`` workers.

``--quick`` runs one repeat of the small models only (a smoke test of this script).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
MODEL_ORDER = ("gpt2_small", "gpt_24l", "resnet50", "vit_b16", "llama7b", "llama70b")
TARGET_RATIO = 2.0  # solar.bound <= 2 x the bare trace
TARGET_70B_S, TARGET_70B_MB = 60.0, 4096.0
TARGET_CORPUS_S = 120.0


def _peak_rss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024


# ----------------------------------------------------------------------------------------------
# stages (run in a child process)


def bare_make_fx(model, inputs, **options):
    """``make_fx`` on fake tensors, parameters and buffers as graph inputs; nothing more
    (``options``: make_fx's recording options, none for the bare trace)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    params, buffers = dict(model.named_parameters()), dict(model.named_buffers())
    tensors = [*params.values(), *buffers.values(), *inputs]
    with FakeTensorMode(allow_non_fake_inputs=True):
        fakes = [torch.empty(tuple(t.shape), dtype=t.dtype, device="cpu") for t in tensors]
    n_p, n_b = len(params), len(buffers)

    def run(*flat):
        p = dict(zip(params, flat[:n_p]))
        b = dict(zip(buffers, flat[n_p : n_p + n_b]))
        return torch.func.functional_call(model, (p, b), tuple(flat[n_p + n_b :]))

    run._orig_mod = model  # type: ignore[attr-defined]  # make_fx: module paths, if recorded
    with torch.no_grad():
        return make_fx(run, tracing_mode="fake", **options)(*fakes)


def _build(workload: str):
    sys.path.insert(0, str(HERE))
    import models

    if workload.startswith("llama7b_L"):
        return models.scaling(int(workload.removeprefix("llama7b_L")))
    return models.MODELS[workload][1]()


class _Timers:
    """Wall time of solar.bound's parts, by wrapping the functions it calls."""

    def __init__(self) -> None:
        self.t: dict[str, float] = {}

    def wrap(self, owner, attr: str, key: str) -> None:
        fn = getattr(owner, attr)

        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.t[key] = self.t.get(key, 0.0) + time.perf_counter() - t0

        setattr(owner, attr, timed)


def run_stage(workload: str, stage: str, jobs: int) -> dict:
    import torch

    torch.set_num_threads(1)  # analysis is single-threaded; keep the measurement so
    if workload == "corpus":
        return _corpus(stage, jobs)
    import solar
    import solar.api
    from solar.cache import CACHE
    from solar.frontend.torch.lower import Lowerer

    t0 = time.perf_counter()
    model, inputs = _build(workload)
    build_s = time.perf_counter() - t0
    out: dict = {"workload": workload, "stage": stage, "build_s": build_s}
    out["rss_before_mb"] = _peak_rss_mb()
    timers = _Timers()
    if stage.startswith("bound"):
        timers.wrap(solar.api, "trace", "trace")
        timers.wrap(solar.api, "lift", "lift")
        timers.wrap(solar.api, "analyze", "analyze")
        timers.wrap(Lowerer, "run", "lower")
        CACHE.enabled = stage != "bound_nocache"
    t0, c0 = time.perf_counter(), time.process_time()
    if stage == "make_fx":
        gm = bare_make_fx(model, inputs)
        out["fx_nodes"] = len(gm.graph.nodes)
    elif stage == "make_fx_solar":  # the options solar's frontend traces with
        gm = bare_make_fx(model, inputs, record_stack_traces=True, record_module_stack=True)
        out["fx_nodes"] = len(gm.graph.nodes)
    elif stage in ("bound", "bound_nocache"):
        b = solar.bound(model, inputs, hw="H100", name=workload)
        out.update(kernels=len(b.kernels), fused_s=b.fused, cache_aware_s=b.cache_aware)
        out.update(unfused_s=b.unfused, cache=CACHE.stats())
    else:
        raise ValueError(f"unknown stage {stage!r}")
    out["wall_s"] = time.perf_counter() - t0
    out["cpu_s"] = time.process_time() - c0
    out["peak_rss_mb"] = _peak_rss_mb()
    if timers.t:
        t = timers.t
        parts = {
            "make_fx_s": t["trace"] - t.get("lower", 0.0),
            "lower_s": t.get("lower", 0.0),
            "lift_s": t["lift"],
            "analyze_s": t["analyze"],
        }
        out["parts"] = parts
    return out


def _corpus(stage: str, jobs: int) -> dict:
    from solar.batch import bound_paths, discover

    files = discover([ROOT / "examples"])
    n = 1 if stage == "serial" else jobs
    t0, c0 = time.perf_counter(), time.process_time()
    results = bound_paths(files, "H100", jobs=n)
    wall = time.perf_counter() - t0
    status = {s: sum(r.status == s for r in results) for s in ("ok", "error", "skipped")}
    return {
        "workload": "corpus",
        "stage": stage,
        "jobs": n,
        "files": len(files),
        "wall_s": wall,
        "cpu_s_parent": time.process_time() - c0,
        "task_s_sum": sum(r.seconds for r in results),
        "peak_rss_mb_parent": _peak_rss_mb(),
        **status,
        "errors": {r.name: r.error for r in results if r.status == "error"},
    }


# ----------------------------------------------------------------------------------------------
# the driver


def _child(workload: str, stage: str, jobs: int) -> dict:
    cmd = [sys.executable, str(Path(__file__)), "--child", workload, stage, "--jobs", str(jobs)]
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"workload": workload, "stage": stage, "error": last}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _best(workload: str, stage: str, repeat: int, jobs: int) -> dict:
    runs = [_child(workload, stage, jobs) for _ in range(repeat)]
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return runs[-1]
    best = min(ok, key=lambda r: r["wall_s"])
    best["walls_s"] = [r["wall_s"] for r in ok]
    best["peak_rss_mb"] = max(r.get("peak_rss_mb", 0.0) for r in ok)
    return best


def machine() -> dict:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        mem_gb = float("nan")
    import torch

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(mem_gb, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "commit": commit,
        "load_avg_start": os.getloadavg(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def run_all(args) -> dict:
    doc: dict = {"machine": machine(), "repeat": args.repeat, "models": [], "scaling": []}
    models = [m for m in MODEL_ORDER if not args.models or m in args.models]
    if args.quick:
        models = [m for m in models if m in ("gpt2_small", "resnet50")]
    for m in models:
        rep = 1 if args.quick else (max(1, args.repeat - 1) if m == "llama70b" else args.repeat)
        fx = _best(m, "make_fx", rep, args.jobs)
        fxs = _best(m, "make_fx_solar", rep, args.jobs)
        bd = _best(m, "bound", rep, args.jobs)
        print(
            f"{m}: make_fx {fx.get('wall_s', float('nan')):.2f} s, bound "
            f"{bd.get('wall_s', float('nan')):.2f} s",
            file=sys.stderr,
        )
        doc["models"].append({"model": m, "make_fx": fx, "make_fx_solar": fxs, "bound": bd})
    if not args.quick and not args.models:
        for n in args.layers:
            w = f"llama7b_L{n}"
            row = {"layers": n}
            for stage in ("make_fx", "bound", "bound_nocache"):
                row[stage] = _best(w, stage, max(1, args.repeat - 1), args.jobs)
            print(f"{w}: bound {row['bound'].get('wall_s', float('nan')):.2f} s", file=sys.stderr)
            doc["scaling"].append(row)
        doc["corpus"] = {
            "serial": _child("corpus", "serial", args.jobs),
            "pool": _child("corpus", "pool", args.jobs),
        }
    doc["machine"]["load_avg_end"] = os.getloadavg()
    return doc


# ----------------------------------------------------------------------------------------------
# report


def _f(x, fmt=".2f") -> str:
    return "-" if x is None else format(x, fmt)


def markdown(doc: dict) -> str:
    sys.path.insert(0, str(HERE))
    import models

    m = doc["machine"]
    out = [
        "# Analysis speed and memory",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB RAM; {m['os']}; "
        f"Python {m['python']}, torch {m['torch']}; solar at commit {m['commit']}; {m['date']}. "
        f"Load average (1, 5, 15 min) {tuple(round(x, 2) for x in m['load_avg_start'])} at the "
        f"start, {tuple(round(x, 2) for x in m['load_avg_end'])} at the end (a shared machine).",
        "",
        f"Each stage runs in a fresh process; wall time is the best of {doc['repeat']} runs "
        "(LLaMA-70B and the scaling sweep: one fewer), CPU time that run's. `make_fx` is the bare "
        'trace (fake tensors, parameters as graph inputs); "make_fx as solar calls it" adds the '
        "recording of stack traces and module paths that solar's frontend asks for (so that every "
        "kernel names its source line and module); `solar.bound` is trace + lowering + "
        "lift + bounds, split into its parts. Peak RSS is the stage process's (torch and the meta "
        "model included); RSS before is the same just before the stage. "
        "Regenerate: `python bench/run.py` (about 15 minutes).",
        "",
        "## Per model",
        "",
        "| model | make_fx s | solar.bound s | ratio | CPU ratio | make_fx as solar calls it s | "
        "ratio to it | parts: make_fx / lower / lift / bounds s | kernels | RSS before MB | "
        "peak RSS MB | cache hits / entries |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in doc["models"]:
        fx, fxs, bd = row["make_fx"], row["make_fx_solar"], row["bound"]
        if any("error" in r for r in (fx, fxs, bd)):
            why = fx.get("error") or fxs.get("error") or bd.get("error")
            out.append(f"| {row['model']} | error: {why} |")
            continue
        p = bd["parts"]
        c = bd.get("cache", {})
        out.append(
            f"| {row['model']} | {fx['wall_s']:.2f} | {bd['wall_s']:.2f} | "
            f"{bd['wall_s'] / fx['wall_s']:.2f}x | {bd['cpu_s'] / fx['cpu_s']:.2f}x | "
            f"{fxs['wall_s']:.2f} | {bd['wall_s'] / fxs['wall_s']:.2f}x | "
            f"{p['make_fx_s']:.2f} / {p['lower_s']:.2f} / {p['lift_s']:.2f} / "
            f"{p['analyze_s']:.2f} | {bd['kernels']} | {bd['rss_before_mb']:.0f} | "
            f"{bd['peak_rss_mb']:.0f} | {c.get('hits', 0)} / {c.get('entries', 0)} |"
        )
    out += ["", "Models:", ""]
    for row in doc["models"]:
        out.append(f"- `{row['model']}`: {models.MODELS[row['model']][0]}")
    if doc.get("scaling"):
        out += [
            "",
            "## Scaling with graph size (LLaMA-7B configuration, 1 to 32 layers)",
            "",
            "| layers | kernels | make_fx s | solar.bound s | lift s | lift s, no structure cache "
            "| solar.bound s, no structure cache | bound s per layer (vs 1 layer) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        base = None
        for row in doc["scaling"]:
            fx, bd, nc = row["make_fx"], row["bound"], row["bound_nocache"]
            if any("error" in r for r in (fx, bd, nc)):
                out.append(f"| {row['layers']} | error |")
                continue
            if base is None:
                base = (row["layers"], bd["wall_s"])
            per = (
                (bd["wall_s"] - base[1]) / (row["layers"] - base[0])
                if row["layers"] != base[0]
                else None
            )
            out.append(
                f"| {row['layers']} | {bd['kernels']} | {fx['wall_s']:.2f} | {bd['wall_s']:.2f} | "
                f"{bd['parts']['lift_s']:.3f} | {nc['parts']['lift_s']:.3f} | {nc['wall_s']:.2f} | "
                f"{_f(per, '.3f')} |"
            )
    if doc.get("corpus"):
        out += ["", "## The examples corpus as a batch", ""]
        out += ["| executor | files | ok | error | skipped | wall s | sum of task s |"]
        out += ["|---|---|---|---|---|---|---|"]
        for key, label in (("serial", "serial (jobs=1)"), ("pool", "process pool")):
            r = doc["corpus"][key]
            if "error" in r and isinstance(r["error"], str):
                out.append(f"| {label} | error: {r['error']} |")
                continue
            if key == "pool":
                label = f"process pool (jobs={r['jobs']})"
            out.append(
                f"| {label} | {r['files']} | {r['ok']} | {r['error']} | {r['skipped']} | "
                f"{r['wall_s']:.1f} | {r['task_s_sum']:.1f} |"
            )
        errs = doc["corpus"]["pool"].get("errors") or {}
        for name, e in errs.items():
            out.append(f"\n- `{name}`: {e}")
    out += ["", "## Targets", ""] + [f"- {t}" for t in targets(doc)]
    return "\n".join(out) + "\n"


def targets(doc: dict) -> list[str]:
    lines = []
    ok_rows = [r for r in doc["models"] if "error" not in {**r["make_fx"], **r["bound"]}]
    if ok_rows:
        worst = max(ok_rows, key=lambda r: r["bound"]["wall_s"] / r["make_fx"]["wall_s"])
        ratio = worst["bound"]["wall_s"] / worst["make_fx"]["wall_s"]
        verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
        lines.append(
            f"solar.bound <= {TARGET_RATIO:g}x the bare trace for every model: {verdict} "
            f"(worst: {worst['model']}, {ratio:.2f}x)"
        )
    big = next((r for r in doc["models"] if r["model"] == "llama70b"), None)
    if big and "error" not in big["bound"]:
        b = big["bound"]
        met = b["wall_s"] < TARGET_70B_S and b["peak_rss_mb"] < TARGET_70B_MB
        verdict = "met" if met else "NOT met"
        lines.append(
            f"LLaMA-70B in under {TARGET_70B_S:g} s and {TARGET_70B_MB / 1024:g} GB: {verdict} "
            f"({b['wall_s']:.1f} s, peak RSS {b['peak_rss_mb']:.0f} MB)"
        )
    c = (doc.get("corpus") or {}).get("pool")
    if c and "wall_s" in c:
        verdict = "met" if c["wall_s"] < TARGET_CORPUS_S else "NOT met"
        lines.append(
            f"examples corpus in under {TARGET_CORPUS_S:g} s: {verdict} ({c['wall_s']:.1f} s, "
            f"{c['files']} files, jobs={c['jobs']})"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--child", nargs=2, metavar=("WORKLOAD", "STAGE"), help=argparse.SUPPRESS)
    p.add_argument("--models", nargs="*", choices=MODEL_ORDER, help="only these models")
    p.add_argument("--repeat", type=int, default=3, help="runs per stage (best wall time kept)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="corpus pool workers")
    p.add_argument("--layers", type=int, nargs="*", default=[1, 2, 4, 8, 16, 32])
    p.add_argument("--quick", action="store_true", help="small models, one run each")
    p.add_argument("--out", default=str(RESULTS), help="results folder (bench/results)")
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(run_stage(*args.child, args.jobs)))
        return 0
    doc = run_all(args)
    text = markdown(doc)
    if not args.quick and not args.models:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "analysis_speed.json").write_text(json.dumps(doc, indent=2) + "\n")
        (out / "analysis_speed.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

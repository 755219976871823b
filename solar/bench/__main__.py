"""``python -m solar.bench``: analysis speed and memory against the bare trace.

With no workload named, runs the whole benchmark and writes ``bench/results/analysis_speed.md``
and ``.json`` (about 15 minutes on 2 cores): every model of :mod:`solar.bench.models` (bare
trace vs ``solar.bound``), the linear-scaling sweep (the LLaMA-7B configuration with 1 to 32
layers, with and without the structure cache) and the examples corpus as a batch (serially and
on a process pool). ``python -m solar.bench llama7b gpt2_small`` measures just those models and
prints the table; ``python -m solar.bench startup`` measures the start-up of the commands that
need no framework (:mod:`solar.bench.startup`). Each stage runs in a fresh Python process
(:mod:`solar.bench.stages`); wall time is the best of ``--repeat`` runs, the stages of a
workload taking turns so that a slow spell of a shared machine hits them alike.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from solar.bench.models import MODELS, ROOT, SCALING_LAYERS
from solar.bench.report import ISSUE_MODELS, markdown
from solar.collector import pause_gc_wanted

RESULTS = ROOT / "bench" / "results"
# the issue's models, then the other frontends' (run when their framework is installed)
EXTRA = {"llama7b_hf": "transformers", "gpt2_small_jax": "jax"}


def _child(workload: str, stage: str, jobs: int) -> dict:
    """Run one stage in a fresh Python process; its JSON result, or ``{"error": ...}``."""
    cmd = [sys.executable, "-m", "solar.bench", "--child", workload, stage, "--jobs", str(jobs)]
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=path), cwd=ROOT
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"workload": workload, "stage": stage, "error": last}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _best(workload: str, stages: tuple[str, ...], repeat: int, jobs: int) -> dict[str, dict]:
    """Per stage, the run with the best wall time (all runs' walls and the largest peak RSS
    kept); the stages take turns, so a slow spell of the shared machine hits them alike."""
    runs: dict[str, list[dict]] = {s: [] for s in stages}
    for _ in range(repeat):
        for s in stages:
            runs[s].append(_child(workload, s, jobs))
    out = {}
    for s, rs in runs.items():
        ok = [r for r in rs if "error" not in r]
        if not ok:
            out[s] = rs[-1]
            continue
        best = min(ok, key=lambda r: r["wall_s"])
        best["walls_s"] = [r["wall_s"] for r in ok]
        best["peak_rss_mb"] = max(r.get("peak_rss_mb", 0.0) for r in ok)
        out[s] = best
    return out


def machine() -> dict:
    """What the numbers were measured on."""
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
        "commit": commit or "unknown",
        "load_avg_start": os.getloadavg(),
        "pause_gc": pause_gc_wanted(),  # SOLAR_PAUSE_GC: the stages' processes inherit it
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def _models(named: list[str], quick: bool) -> list[str]:
    if named:
        return named
    if quick:
        return ["gpt2_small", "resnet50"]
    extra = [m for m, pkg in EXTRA.items() if importlib.util.find_spec(pkg) is not None]
    return [*ISSUE_MODELS, "llama7b_train", *extra]


def run_all(args) -> dict:
    doc: dict = {"machine": machine(), "repeat": args.repeat, "models": [], "scaling": []}
    full = not args.quick and not args.models
    for m in _models(args.models, args.quick):
        best = _best(m, ("trace", "bound"), 1 if args.quick else args.repeat, args.jobs)
        doc["models"].append({"model": m, **best})
        fx, bd = best["trace"], best["bound"]
        print(
            f"{m}: bare trace {fx.get('wall_s', float('nan')):.2f} s, solar.bound "
            f"{bd.get('wall_s', float('nan')):.2f} s {bd.get('error', '')}",
            file=sys.stderr,
        )
    if full:
        for n in args.layers:
            w = f"llama7b_L{n}"
            row = {"layers": n}
            row.update(_best(w, ("trace", "bound", "bound_nocache"), args.repeat, args.jobs))
            print(f"{w}: bound {row['bound'].get('wall_s', float('nan')):.2f} s", file=sys.stderr)
            doc["scaling"].append(row)
        doc["corpus"] = {
            "serial": _child("corpus", "serial", args.jobs),
            "pool": _child("corpus", "pool", args.jobs),
        }
    doc["machine"]["load_avg_end"] = os.getloadavg()
    return doc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m solar.bench", description=__doc__.split("\n")[0])
    p.add_argument(
        "models", nargs="*", metavar="MODEL", help=f"of: {', '.join(MODELS)}; or startup"
    )
    p.add_argument("--child", nargs=2, metavar=("WORKLOAD", "STAGE"), help=argparse.SUPPRESS)
    p.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="runs per stage (best wall time kept; default 3) or, for startup, per command "
        "(median kept; default 9)",
    )
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="corpus pool workers")
    p.add_argument("--layers", type=int, nargs="*", default=list(SCALING_LAYERS))
    p.add_argument("--quick", action="store_true", help="two small models, one run each")
    p.add_argument("--out", default=str(RESULTS), help="results folder of a full run")
    args = p.parse_args(argv)
    if args.child:
        from solar.bench.stages import run_stage

        print(json.dumps(run_stage(*args.child, args.jobs)))
        return 0
    if args.models == ["startup"]:
        from solar.bench.startup import main as startup

        return startup(args.repeat or 9)
    args.repeat = args.repeat or 3
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        p.error(f"unknown model {unknown[0]!r}; one of: {', '.join(MODELS)}")
    doc = run_all(args)
    text = markdown(doc)
    if not args.quick and not args.models:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "analysis_speed.json").write_text(json.dumps(doc, indent=2) + "\n")
        (out / "analysis_speed.md").write_text(text)
    print(text)
    return 1 if any("error" in r["trace"] or "error" in r["bound"] for r in doc["models"]) else 0


if __name__ == "__main__":
    sys.exit(main())

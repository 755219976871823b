"""The benchmark's results document: Markdown tables and the targets, met or not."""

from __future__ import annotations

from solar.bench.models import MODELS

TARGET_RATIO = 2.0  # solar.bound <= 2 x the bare trace
# the models the issue names; the other workloads cover transformers and the JAX frontend
ISSUE_MODELS = ("gpt2_small", "gpt_24l", "resnet50", "vit_b16", "llama7b", "llama70b")
TARGET_70B_S, TARGET_70B_MB = 60.0, 4096.0
TARGET_CORPUS_S = 120.0
TARGET_TRAIN_S, TARGET_TRAIN_MB = 120.0, 4096.0  # a LLaMA-7B training step on meta


def _f(x, fmt=".2f") -> str:
    return "-" if x is None else format(x, fmt)


def markdown(doc: dict) -> str:
    """The results document as Markdown (``bench/results/analysis_speed.md``)."""
    m = doc["machine"]
    gc_note = (
        "was paused during each analysis (`SOLAR_PAUSE_GC=1`)"
        if m.get("pause_gc")
        else "ran as in any library call (on; `SOLAR_PAUSE_GC=1` pauses it, see "
        "`solar.collector.gc_paused`), as in the bare trace"
    )
    out = [
        "# Analysis speed and memory",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB RAM; {m['os']}; "
        f"Python {m['python']}, torch {m['torch']}; solar at commit {m['commit']}; {m['date']}. "
        f"Load average (1, 5, 15 min) {tuple(round(x, 2) for x in m['load_avg_start'])} at the "
        f"start, {tuple(round(x, 2) for x in m['load_avg_end'])} at the end (a shared machine).",
        "",
        f"Each stage runs in a fresh process; wall time is the best of {doc['repeat']} runs "
        "(the stages of a model take turns), CPU time that run's. The bare trace is what solar "
        "starts from and nothing more: `make_fx` on fake tensors with parameters as graph inputs "
        "(PyTorch), `jax.make_jaxpr` (JAX). `solar.bound` is solar's trace (which also records "
        "each node's source line and module path) + lowering to the IR + lift + bounds, split "
        "into its parts, with reading the hardware spec catalogue; Python's cyclic garbage "
        f"collector {gc_note}. Peak RSS is the stage "
        "process's (the framework and the meta model included); RSS before is the same just "
        "before the stage. Regenerate: `python -m solar.bench` (about 15 minutes).",
        "",
        "## Per model",
        "",
        "| model | bare trace s | solar.bound s | ratio | CPU ratio | "
        "parts: trace / lower / lift / bounds s | graph nodes | kernels | RSS before MB | "
        "peak RSS MB | cache hits / entries |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in doc["models"]:
        fx, bd = row["trace"], row["bound"]
        if "error" in fx or "error" in bd:
            out.append(f"| {row['model']} | error: {fx.get('error') or bd.get('error')} |")
            continue
        p = bd["parts"]
        c = bd.get("cache", {})
        out.append(
            f"| {row['model']} | {fx['wall_s']:.2f} | {bd['wall_s']:.2f} | "
            f"{bd['wall_s'] / fx['wall_s']:.2f}x | {bd['cpu_s'] / fx['cpu_s']:.2f}x | "
            f"{p['trace_s']:.2f} / {_f(p.get('lower_s'))} / {p['lift_s']:.2f} / "
            f"{p['analyze_s']:.2f} | {fx['graph_nodes']} | {bd['kernels']} | "
            f"{bd['rss_before_mb']:.0f} | {bd['peak_rss_mb']:.0f} | "
            f"{c.get('hits', 0)} / {c.get('entries', 0)} |"
        )
    out += ["", "Models:", ""]
    for row in doc["models"]:
        out.append(f"- `{row['model']}`: {MODELS[row['model']][0]}")
    if doc.get("scaling"):
        out += [
            "",
            "## Scaling with graph size (LLaMA-7B configuration, 1 to 32 layers)",
            "",
            "| layers | kernels | bare trace s | solar.bound s | lift s | "
            "lift s, no structure cache | solar.bound s, no structure cache | "
            "bound s per layer (vs 1 layer) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        base = None
        for row in doc["scaling"]:
            fx, bd, nc = row["trace"], row["bound"], row["bound_nocache"]
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
    """Each of the issue's targets, met or not, with the measured number."""
    lines = []
    ok_rows = [r for r in doc["models"] if "error" not in {**r["trace"], **r["bound"]}]
    groups = (
        ("the issue's models", [r for r in ok_rows if r["model"] in ISSUE_MODELS]),
        ("the other workloads", [r for r in ok_rows if r["model"] not in ISSUE_MODELS]),
    )
    for label, rows in groups:
        if not rows:
            continue
        worst = max(rows, key=lambda r: r["bound"]["wall_s"] / r["trace"]["wall_s"])
        ratio = worst["bound"]["wall_s"] / worst["trace"]["wall_s"]
        verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
        lines.append(
            f"solar.bound <= {TARGET_RATIO:g}x the bare trace for {label}: {verdict} "
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
    step = next((r for r in doc["models"] if r["model"] == "llama7b_train"), None)
    if step and "error" not in step["bound"]:
        b = step["bound"]
        met = b["wall_s"] < TARGET_TRAIN_S and b["peak_rss_mb"] < TARGET_TRAIN_MB
        lines.append(
            f"LLaMA-7B training step in under {TARGET_TRAIN_S:g} s and "
            f"{TARGET_TRAIN_MB / 1024:g} GB: {'met' if met else 'NOT met'} "
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

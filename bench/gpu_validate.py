#!/usr/bin/env python3
"""Validate, measure, bound and compare every example program on the visible GPU.

    python bench/gpu_validate.py OUTDIR [--examples examples] [--hw auto] [--budget 400]

For each problem file (``examples/**/*.py``, built at full size on CUDA with seed 0, constant
tensors randomized): trace it, bound it on the GPU's spec (``--hw auto``: matched from the
device), execute the IR on the same weights and inputs and compare every output with the source
(the first differing kernel is located when an output fails), time eager PyTorch (CUDA events,
L2 flushed before each repetition, median), profile the kernels and map them onto the IR
kernels, and report headroom (measured / bound per level and per kernel) and classified
violations (see ``solar/gpu/headroom.py``).

Robust and bounded: a failing program is recorded and the batch goes on; each program gets a
share of the time left (fewer repetitions, no profiling when short), programs not reached by
``--budget`` seconds are marked skipped; when a program leaves the CUDA context unusable the
script saves what it has and restarts itself on the remaining programs. JAX problem files run
last (JAX keeps the GPU memory it takes), with real random arrays in place of their
ShapeDtypeStructs, timed with the host clock around ``block_until_ready`` and not profiled.
Needs no network and no optional package (matplotlib is used when present).

Writes OUTDIR/results.json (schema ``solar.headroom-batch/1``, rewritten after every program),
OUTDIR/headroom.png (when matplotlib is there), OUTDIR/summary.txt; prints one line per program,
the violations, and a compact summary table last.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# JAX (for the JAX problem files) must not grab most of the GPU's memory up front
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from solar.backend.result import LEVELS  # noqa: E402  (after the path setup)


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir", help="folder for results.json, headroom.png, summary.txt")
    p.add_argument("--examples", nargs="+", default=[str(ROOT / "examples")])
    p.add_argument("--only", default="", help="comma-separated substrings of names to keep")
    p.add_argument("--hw", default="auto", help="spec: auto (the visible GPU), name or YAML")
    p.add_argument("--fallback-hw", default="H100", help="spec when auto finds none")
    p.add_argument("--device", default="cuda")
    p.add_argument("--budget", type=float, default=400.0, help="seconds for the whole batch")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--per-kernel", action="store_true", help="always validate every kernel")
    # internal: a restart after a lost CUDA context
    p.add_argument("--resume", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)
    p.add_argument("--restarts", type=int, default=0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def uses_jax(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(k in text for k in ("import jax", "from jax", "import flax", "from flax"))


def fmt_t(s) -> str:
    if s is None or (isinstance(s, float) and not math.isfinite(s)):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g}{unit}"
    return f"{s / 1e-9:.3g}ns"


def fmt_h(h) -> str:
    return f"{h:.3g}" if isinstance(h, (int, float)) and h and math.isfinite(h) else "-"


def write_json(path: Path, doc: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)


def viol_codes(rep: dict) -> str:
    prog = [v for v in rep.get("violations", []) if v["scope"] == "program"]
    kern = [v for v in rep.get("violations", []) if v["scope"] == "kernel"]
    parts = [f"{v['level'][:3]}:{v['kind']}" for v in prog]
    kinds: dict[str, int] = {}
    for v in kern:
        kinds[v["kind"]] = kinds.get(v["kind"], 0) + 1
    parts += [f"{n}k:{k}" for k, n in sorted(kinds.items())]
    return " ".join(parts)


def row_of(entry: dict) -> list[str]:
    rep = entry.get("report")
    name = entry.get("name", "?")
    if not rep:
        m = (entry.get("measured") or {}).get("median_s")
        why = f"{entry.get('stage') or ''}: {entry.get('error') or ''}".strip(": ")
        return [name, entry.get("status", "?"), "-", fmt_t(m), "-", "-", "-", "-", "-", why[:60]]
    val = rep.get("validation") or {}
    vs = val.get("status", "-")
    if vs == "failed":
        worst = max((o["rel_err"] for o in val.get("outputs", []) if not o["ok"]), default=None)
        if isinstance(worst, (int, float)):
            vs += f"({worst:.2g})"
        if val.get("first_bad_kernel"):
            vs += f"@{val['first_bad_kernel']}"
    m = (rep.get("measured") or {}).get("median_s")
    h = rep.get("headroom") or {}
    ks = rep.get("kernels") or []
    mapped = f"{sum(k.get('measured_s') is not None for k in ks)}/{len(ks)}"
    if rep.get("mapping") is None:
        mapped = "-"
    errs = ",".join(rep.get("errors") or {})
    v = viol_codes(rep) + (f" err:{errs}" if errs else "")
    return [
        name,
        entry.get("status", "?"),
        vs,
        fmt_t(m),
        fmt_t((rep.get("bounds") or {}).get("unfused_s")),
        *(fmt_h(h.get(lv)) for lv in LEVELS),
        mapped,
        v,
    ]


HEADERS = ["program", "status", "valid", "eager", "b_unf", "h_unf", "h_fus", "h_ca", "kmap", "viol"]


def table(entries: list[dict]) -> str:
    rows = [row_of(e) for e in entries]
    widths = [len(h) for h in HEADERS]
    for r in rows:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))
    line = "  ".join(h.ljust(w) for h, w in zip(HEADERS, widths))
    return "\n".join(
        [line, "-" * len(line)]
        + ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    )


def summary(entries: list[dict], seconds: float) -> str:
    n = len(entries)
    st: dict[str, int] = {}
    val: dict[str, int] = {}
    kinds: dict[str, int] = {}
    geo: dict[str, list[float]] = {lv: [] for lv in LEVELS}
    for e in entries:
        st[e.get("status", "?")] = st.get(e.get("status", "?"), 0) + 1
        rep = e.get("report")
        if not rep:
            continue
        s = (rep.get("validation") or {}).get("status", "not run")
        val[s] = val.get(s, 0) + 1
        for v in rep.get("violations", []):
            k = f"{v['scope']}:{v['kind']}"
            kinds[k] = kinds.get(k, 0) + 1
        for lv in LEVELS:
            h = (rep.get("headroom") or {}).get(lv)
            if isinstance(h, (int, float)) and h > 0 and math.isfinite(h):
                geo[lv].append(h)
    g = ", ".join(
        f"{lv} {math.exp(sum(map(math.log, hs)) / len(hs)):.3g}x" for lv, hs in geo.items() if hs
    )
    return (
        f"{n} programs {st}; IR validation {val}; violations {kinds or 'none'}; "
        f"geomean headroom {g or '-'}; {seconds:.0f} s"
    )


def violation_lines(entries: list[dict]) -> list[str]:
    out = []
    for e in entries:
        rep = e.get("report") or {}
        for v in rep.get("violations", []):
            if v["scope"] == "kernel" and v["kind"] == "cache_effect":
                continue  # expected per-kernel L2 reuse; counted in the summary
            ev = v.get("evidence", {})
            out.append(
                f"  {e['name']} {v['scope']} {v['name'][:40]} [{v['level']}] {v['kind']}/"
                f"{v['cause']}: measured {fmt_t(v['measured_s'])} < bound {fmt_t(v['bound_s'])}"
                f" (by {ev.get('bound_by')}, floor {fmt_t(ev.get('floor_s'))})"
            )
    return out


def plot(entries: list[dict], path: Path) -> str:
    try:
        from solar.report.plots import plot_headroom
    except Exception as e:  # pragma: no cover
        return f"no plot: {e}"
    reps = [e["report"] for e in entries if e.get("report") and e["report"].get("measured")]
    if not reps:
        return "no plot: nothing measured"
    try:
        plot_headroom(reps, path)
    except ImportError as e:
        return f"no plot: {e}"
    except Exception as e:
        return f"no plot: {type(e).__name__}: {e}"
    return f"plot: {path}"


def main(argv=None) -> int:
    args = parse(argv)
    t_start = time.time()
    deadline = args.deadline or (t_start + args.budget)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.json"

    import torch

    from solar.gpu import headroom_batch as H
    from solar.gpu import measure as M
    from solar.gpu.validate import discover
    from solar.hw import SpecError, load_spec

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("gpu_validate: no CUDA GPU visible", file=sys.stderr)
        return 2
    info = M.device_info(device)
    notes = [
        f"torch {torch.__version__}, CUDA {torch.version.cuda}; matmul allow_tf32="
        f"{torch.backends.cuda.matmul.allow_tf32}, cudnn allow_tf32="
        f"{torch.backends.cudnn.allow_tf32}",
    ]
    if args.hw == "auto":
        try:
            spec, how = M.detect_spec(info)
            notes.append(f"spec {spec.key}: {how}")
        except SpecError as e:
            spec = load_spec(args.fallback_hw)
            notes.append(f"hw auto failed ({e}); using {spec.key}")
    else:
        spec = load_spec(args.hw)
    print(f"device: {info.summary()}\nspec: {spec.name} ({spec.key}); {notes[-1]}", flush=True)

    files = discover(args.examples)
    if args.only:
        keys = [k for k in args.only.split(",") if k]
        files = [f for f in files if any(k in f.stem for k in keys)]
    # PyTorch programs first: JAX's allocator keeps what it takes, so JAX files run last
    files = sorted(files, key=uses_jax)
    done: list[dict] = []
    if args.resume and results.exists():
        try:
            done = json.loads(results.read_text()).get("programs", [])
        except (OSError, ValueError):
            done = []
    entries: list[dict] = list(done)
    done_paths = {e["path"] for e in done}
    todo = [f for f in files if str(f) not in done_paths]
    print(f"{len(files)} programs, {len(todo)} to run, budget {deadline - time.time():.0f} s")

    def save(final: bool = False) -> None:
        doc = {
            "schema": H.BATCH_SCHEMA,
            "hw": spec.name,
            "hw_key": spec.key,
            "device": info.to_dict(),
            "notes": notes,
            "complete": final,
            "seconds": time.time() - t_start,
            "programs": entries,
        }
        write_json(results, doc)

    count = [len(done)]

    def on_entry(entry) -> None:
        d = entry.to_dict()
        entries.append(d)
        count[0] += 1
        r = row_of(d)
        print(
            f"[{count[0]}/{len(files)}] {r[0]:<32} {r[1]:<7} valid={r[2]:<10} eager={r[3]:<8} "
            f"h={r[5]}/{r[6]}/{r[7]} kmap={r[8]} {r[9]} ({entry.seconds:.1f}s)",
            flush=True,
        )
        save()

    kw = {"profile": not args.no_profile}
    if args.per_kernel:
        kw["per_kernel_validation"] = True
    try:
        H.headroom_paths(
            todo,
            spec,
            device=device,
            seed=args.seed,
            budget_total_s=max(deadline - time.time(), 0.0),
            show_progress=False,
            on_entry=on_entry,
            **kw,
        )
    except H.DeviceLost as e:
        save()
        print(f"gpu_validate: {e}", flush=True)
        if args.restarts < 3 and time.time() < deadline:
            argv2 = [sys.executable, str(Path(__file__).resolve()), str(out)]
            argv2 += ["--examples", *args.examples, "--hw", args.hw, "--device", args.device]
            argv2 += ["--seed", str(args.seed), "--resume", "--deadline", str(deadline)]
            argv2 += ["--restarts", str(args.restarts + 1), "--fallback-hw", args.fallback_hw]
            if args.only:
                argv2 += ["--only", args.only]
            if args.no_profile:
                argv2.append("--no-profile")
            if args.per_kernel:
                argv2.append("--per-kernel")
            print("gpu_validate: restarting on the remaining programs", flush=True)
            sys.stdout.flush()
            os.execv(sys.executable, argv2)
    save(final=True)
    msg = plot(entries, out / "headroom.png")
    lines = violation_lines(entries)
    text = "\n".join(
        [
            f"{spec.name} ({spec.key}) on {info.summary()}",
            *notes,
            "",
            "violations (program level, and kernel level except cache effects):",
            *(lines or ["  none"]),
            "",
            table(entries),
            "",
            summary(entries, time.time() - t_start),
        ]
    )
    (out / "summary.txt").write_text(text + "\n")
    print(msg)
    print()
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

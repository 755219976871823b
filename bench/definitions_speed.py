"""Bound every workload of every definition of the corpus on H100 and B200, and record the
analysis time per workload (trace + lift + bound; the reference module built once per
definition).

    python bench/definitions_speed.py [--hw H100 B200] [--out bench/results]

Writes ``definitions_speed.md`` (per definition: workloads, median and largest seconds per
workload, per GPU) and ``definitions_speed.json`` (every workload). The target: under a
second per workload.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solar.definition import bound_definition, discover_definitions  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hw", nargs="+", default=["H100", "B200"])
    ap.add_argument("--defs", default=str(ROOT / "examples" / "definitions"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args(argv)
    rows, failures = [], []
    t0 = time.perf_counter()
    for path in discover_definitions([args.defs]):
        for hw in args.hw:
            db = bound_definition(path, hw=hw)
            secs = [w.seconds for w in db.workloads]
            failures += [(db.name, hw, w.uuid, w.error) for w in db.workloads if w.status != "ok"]
            rows.append({
                "definition": db.name, "hw": hw, "workloads": len(secs),
                "ok": sum(w.status == "ok" for w in db.workloads),
                "median_s": statistics.median(secs), "max_s": max(secs),
                "per_workload": [w.to_dict() for w in db.workloads],
            })  # fmt: skip
            r = rows[-1]
            print(f"{db.name:<48} {hw:<5} {r['ok']}/{len(secs)} ok  "
                  f"median {r['median_s']:.3f} s  max {r['max_s']:.3f} s", flush=True)  # fmt: skip
    total = time.perf_counter() - t0
    n = sum(r["workloads"] for r in rows)
    worst = max(r["max_s"] for r in rows)
    med = statistics.median(w["seconds"] for r in rows for w in r["per_workload"])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "total_s": total, "workloads": n, "max_s": worst,
            "median_s": med, "failures": failures}  # fmt: skip
    (out / "definitions_speed.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [
        "# Definitions: analysis time per workload",
        "",
        f"`python bench/definitions_speed.py`: {len(rows) // len(args.hw)} definitions x "
        f"{len(args.hw)} GPUs ({', '.join(args.hw)}), {n} workloads bounded in {total:.1f} s "
        f"on {os.cpu_count()} shared CPU cores; median {med:.3f} s, largest {worst:.3f} s per "
        f"workload; {len(failures)} failures.",
        "",
        "| definition | GPU | workloads | bounded | median s | max s |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {r['definition']} | {r['hw']} | {r['workloads']} | {r['ok']} | "
              f"{r['median_s']:.3f} | {r['max_s']:.3f} |" for r in rows]  # fmt: skip
    (out / "definitions_speed.md").write_text("\n".join(lines) + "\n")
    print(f"{n} workloads in {total:.1f} s; median {med:.3f} s, max {worst:.3f} s; "
          f"{len(failures)} failures")  # fmt: skip
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())

"""``python -m solar.bench.same_numbers``: hold a change to "every bound equal".

A refactoring of the core must leave every number of every example unchanged, except the
improvements it names. ``record OUT`` bounds the examples corpus (the problem files of
``examples/`` and every workload of ``examples/definitions/``) through the ``solar`` command
and writes its JSON; ``compare BEFORE AFTER`` lists every number that differs between two
records (bounds, totals, memory, latency, per-kernel work and bytes, per-workload bounds),
program by program, and exits 1 when any differs. Run times of the analysis itself
(``seconds``) are not compared.

    python -m solar.bench.same_numbers record /tmp/before.json     # at the old commit
    python -m solar.bench.same_numbers record /tmp/after.json      # at the new one
    python -m solar.bench.same_numbers compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from solar.bench.models import ROOT

#: fields that measure the analysis, not the program
IGNORED = frozenset({"seconds", "path"})


def record(out: Path, jobs: int = 1) -> None:
    """Bound the corpus with the ``solar`` command of this interpreter; write one JSON."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    doc = {}
    with tempfile.TemporaryDirectory() as tmp:
        for key, args in (
            ("problems", ["examples/", "--jobs", str(jobs)]),
            ("definitions", ["examples/definitions", "--jobs", "1"]),
        ):
            path = Path(tmp) / f"{key}.json"
            cmd = [sys.executable, "-m", "solar", "bound", *args, "--json", "--out", str(path)]
            subprocess.run(cmd, cwd=ROOT, env=env, check=False, stderr=subprocess.DEVNULL)
            doc[key] = json.loads(path.read_text())
    out.write_text(json.dumps(doc) + "\n")


def _programs(doc: dict) -> dict[str, object]:
    """Every program (problem files) and definition workload of a record, by a stable key."""
    out: dict[str, object] = {}
    for p in doc.get("problems", {}).get("programs", []):
        out[f"problem {p['name']}"] = p
    for d in doc.get("definitions", {}).get("definitions", []):
        for w in d.get("workloads", []):
            out[f"definition {d['name']} {w.get('uuid', '')}"] = w
    return out


def _leaves(x: object, path: str = "") -> Iterator[tuple[str, object]]:
    if isinstance(x, dict):
        for k, v in x.items():
            if k not in IGNORED:
                yield from _leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, x


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def compare(before: dict, after: dict) -> list[tuple[str, str, object, object]]:
    """``(program, field, before, after)`` for every number or string that differs or that
    ``after`` no longer has; a program present in one record only is one row with field ``""``.
    Fields only ``after`` has (a result that carries more) are not differences: see
    :func:`added_fields`."""
    a, b = _programs(before), _programs(after)
    rows: list[tuple[str, str, object, object]] = []
    for name in sorted(a.keys() | b.keys()):
        if name not in a or name not in b:
            seen = ("present" if name in a else "-", "present" if name in b else "-")
            rows.append((name, "", *seen))
            continue
        la, lb = dict(_leaves(a[name])), dict(_leaves(b[name]))
        for f in sorted(la):
            if not _same(la[f], lb.get(f, _MISSING)):
                rows.append((name, f, la[f], lb.get(f, "-")))
    return rows


_MISSING = object()


def added_fields(before: dict, after: dict) -> set[str]:
    """Fields (with list positions dropped) that ``after`` has and ``before`` lacks."""
    a, b = _programs(before), _programs(after)
    out: set[str] = set()
    for name in a.keys() & b.keys():
        la = dict(_leaves(a[name]))
        out |= {re.sub(r"\[\d+\]", "[]", f) for f, _ in _leaves(b[name]) if f not in la}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m solar.bench.same_numbers", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="bound the examples corpus, write its numbers")
    r.add_argument("out", type=Path)
    r.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    c = sub.add_parser("compare", help="list every number that differs between two records")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "record":
        record(args.out, args.jobs)
        doc = json.loads(args.out.read_text())
        print(f"{len(_programs(doc))} programs and workloads recorded in {args.out}")
        return 0
    rows = compare(json.loads(args.before.read_text()), json.loads(args.after.read_text()))
    for name, field, x, y in rows:
        print(f"{name}: {field or 'program'}: {x} -> {y}")
    n = len({r[0] for r in rows})
    print(f"{n} programs differ ({len(rows)} numbers)" if rows else "every number is equal")
    added = sorted(
        added_fields(json.loads(args.before.read_text()), json.loads(args.after.read_text()))
    )
    if added:
        print(
            f"fields only the second record has ({len(added)}): {', '.join(added[:12])}"
            + (" ..." if len(added) > 12 else "")
        )
    return 1 if rows else 0


if __name__ == "__main__":
    sys.exit(main())

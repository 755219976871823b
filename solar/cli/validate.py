"""``solar validate FILE|DIR ...``: execute the IR at full size on a device and compare every
output with the source program's."""

from __future__ import annotations

import json
from pathlib import Path

from solar.cli.options import add_device_option, add_set_option, problem_sets, resolve_device
from solar.fmt import jsonable
from solar.gpu.validate import discover, validate_paths


def add_parser(sub):
    p = sub.add_parser(
        "validate",
        help="execute the IR at full size and compare with the source program's outputs",
    )
    p.add_argument("paths", nargs="+", help="problem files or folders of them")
    add_device_option(p)
    p.add_argument("--seed", type=int, default=0, help="seed of weights and inputs (0)")
    p.add_argument(
        "--per-kernel",
        action="store_true",
        help="also compare every kernel's outputs (default: only when an output fails)",
    )
    p.add_argument("--tol", type=float, default=None, help="override the relative tolerance")
    p.add_argument("--precision", choices=["tf32", "ieee"], default=None)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--out", help="also write the JSON report to this file")
    add_set_option(p)
    return p


def run(args) -> int:
    files = discover(args.paths)
    device = resolve_device(args.device)
    sets = problem_sets(args.set, files)
    reports = validate_paths(
        files,
        device=device,
        seed=args.seed,
        per_kernel=True if args.per_kernel else "auto",
        tol=args.tol,
        precision=args.precision,
        show_progress=len(files) > 1 and not args.json,
        overrides=sets,
    )
    if args.json or args.out:
        if len(reports) == 1:
            doc = reports[0].to_dict()
        else:
            doc = {
                "schema": "solar.validate-batch/1",
                "device": device,
                "programs": [r.to_dict() for r in reports],
            }
        text = json.dumps(jsonable(doc), indent=2)
        if args.out:
            Path(args.out).write_text(text + "\n")
        else:
            print(text)
    if not args.json:
        if len(reports) == 1:
            print(reports[0])
        else:
            for r in reports:
                print(r.summary())
            n_ok = sum(r.ok for r in reports)
            print(f"{n_ok} of {len(reports)} programs passed")
    return 0 if all(r.status in ("passed", "skipped") for r in reports) else 1

"""What ``solar bound`` does with definition files: its options, and the report of one
definition (one row per workload) or of a folder (one line per definition)."""

from __future__ import annotations

import json

from solar.definition.bound import bound_definition, bound_definitions
from solar.definition.table import definitions_batch_table


def add_definition_args(sp) -> None:
    sp.add_argument(
        "--workloads",
        metavar="FILE",
        default=None,
        help="definition files: the workload.jsonl to bound (default: <name>.workloads.jsonl "
        "or workload.jsonl next to the definition)",
    )
    sp.add_argument(
        "--sample",
        type=int,
        default=None,
        metavar="N",
        help="definition files: bound N workloads spread over the file (first and last included)",
    )


def definitions_report(args) -> tuple[str, bool]:
    """``(text, all bounded)`` for ``solar bound`` on definition files (``--json``: data)."""
    if len(args.paths) == 1 and args.paths[0].endswith(".json"):
        db = bound_definition(args.paths[0], args.workloads, args.hw, **_batch(args))
        return (db.to_json() if args.json else str(db)), db.ok
    if args.workloads:
        raise ValueError("--workloads goes with one definition file, not a folder")
    results = bound_definitions(args.paths, args.hw, **_batch(args))
    if args.json:
        text = json.dumps({"hw": args.hw, "definitions": [r.to_dict() for r in results]}, indent=2)
    else:
        text = definitions_batch_table(results)
    return text, all(r.ok for r in results)


def _batch(args) -> dict:
    """How the workloads run: ``--sample``, and ``--jobs`` worker processes (default: one per
    CPU core), ``--ray``, ``--timeout`` as for a batch of problem files."""
    return {"sample": args.sample, "jobs": args.jobs, "ray": args.ray, "timeout": args.timeout}

"""``solar bound definition.json [--workloads workload.jsonl]``: one row per workload; a folder
of definitions is a batch (one line per definition)."""

from __future__ import annotations

import json

from solar.cli.common import check_out, emit
from solar.definition import bound_definition, bound_definitions
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


def run_definitions(args) -> int:
    check_out(args.out)
    if len(args.paths) == 1 and args.paths[0].endswith(".json"):
        db = bound_definition(args.paths[0], args.workloads, args.hw, sample=args.sample)
        emit(db.to_json() if args.json else str(db), args.out)
        return 0 if db.ok else 1
    if args.workloads:
        raise ValueError("--workloads goes with one definition file, not a folder")
    results = bound_definitions(args.paths, args.hw, sample=args.sample)
    if args.json:
        text = json.dumps({"hw": args.hw, "definitions": [r.to_dict() for r in results]}, indent=2)
    else:
        text = definitions_batch_table(results)
    emit(text, args.out)
    return 0 if all(r.ok for r in results) else 1

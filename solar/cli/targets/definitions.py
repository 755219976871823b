"""``solar bound`` on definition files: its options, the collector of its process, and the
report of one definition (one row per workload) or of a folder (one line per definition);
:mod:`solar.definition` holds the library calls."""

from __future__ import annotations

import gc
import json

from solar.collector import full_collections_deferred
from solar.definition.bound_definitions import bound_definition, bound_definitions
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


def freeze_imports() -> None:
    """Import what every trace needs (solar's torch frontend; PyTorch's FakeTensorMode, whose
    first instance imports torch._dynamo and with it torch.distributed), then move every
    object alive so far out of the cyclic garbage collector's sight (``gc.freeze``): a full
    collection during a workload then walks the analysis's objects only, not the ~300,000
    objects of the imported frameworks (0.2-0.6 s a full collection on a 2-core machine).
    For ``solar bound``'s own process (and its benchmark), never a library call: the
    collector is the process's."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    import solar.frontend.torch  # noqa: F401

    FakeTensorMode()
    gc.freeze()


def definitions_report(args) -> tuple[str, bool]:
    """``(text, all bounded)`` for ``solar bound`` on definition files (``--json``: data;
    ``--symbolic``, with no names: the var axes as symbols, :mod:`solar.definition.symbolic_axes`).
    The command's process is its own: the imports are frozen and no full collection starts
    during the batch (:mod:`solar.collector`)."""
    if args.symbolic:
        raise ValueError(
            f"--symbolic {args.symbolic}: a definition's symbols are its var axes; give "
            "--symbolic alone"
        )
    freeze_imports()
    with full_collections_deferred():
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
    """How the workloads run: ``--sample``, ``--symbolic`` (from formulas), and ``--jobs``
    worker processes (default: one per CPU core), ``--ray``, ``--timeout`` as for a batch of
    problem files."""
    return {
        "sample": args.sample,
        "jobs": args.jobs,
        "ray": args.ray,
        "timeout": args.timeout,
        "symbolic": args.symbolic is not None,
    }

"""``solar bound FILE|DIR ...``: the unfused, fused and cache-aware bounds of problem files.

One file prints its report; several files or a folder run as a batch (a process pool, or one
Ray task per file with ``--ray``) and print one line per program.
"""

from __future__ import annotations

from pathlib import Path

from solar.api import bound_graph, bound_parallel
from solar.cli.options import (
    Progress,
    add_gpus_args,
    add_hw_option,
    add_output_args,
    add_problem_args,
    add_timeout_option,
    check_out,
    emit,
    hw_from_args,
    lifted,
    plan_kwargs,
    within_time_limit,
)
from solar.cli.targets.definitions import add_definition_args, definitions_report
from solar.cli.targets.hub import add_hub_args, bound_hub_from_args
from solar.collector import full_collections_deferred, gc_paused
from solar.definition import is_definition_path
from solar.hub.programs import is_hub_name
from solar.hw import load_spec
from solar.problem import discover
from solar.questions.batch import batch_json, bound_paths
from solar.report.table import bound_batch_text


def add_parser(sub):
    sp = sub.add_parser("bound", help="print the unfused, fused and cache-aware bounds")
    add_problem_args(sp, many=True)
    add_hw_option(sp)
    add_gpus_args(sp)
    add_output_args(sp)
    sp.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="for several files or a folder: bound them N at a time in local worker processes "
        "(default: one per CPU core; 1: in this process)",
    )
    sp.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=None,
        help="run the batch on a Ray cluster, one task per file: 'auto' (the running cluster), "
        "'local' (a Ray instance on this machine) or HOST:PORT (needs solar[ray])",
    )
    sp.add_argument(
        "--symbolic",
        metavar="NAME[,NAME...]",
        nargs="?",
        const="",
        default=None,
        help="module constants of one PyTorch problem file as symbols (e.g. BATCH,SEQ; "
        "NAME=VALUE traces at VALUE): print the bound at the file's sizes, then its formulas "
        "in those names, the crossovers along each and where they hold. On definition files, "
        "alone (no names): their var axes are the symbols, each workload bounded from one "
        "trace's formula where it holds (the 'from' column says which)",
    )
    add_timeout_option(sp)
    # hf:ID / hf:FOLDER: a Hugging Face model built from its config.json (--batch: above)
    add_hub_args(sp, batch=False)
    add_definition_args(sp)
    return sp


def run(args) -> int:
    if args.symbolic is not None and not any(is_definition_path(p) for p in args.paths):
        return _run_symbolic(args)
    if is_hub_name(args.paths[0]):
        return _run_hub(args)
    if any(is_definition_path(p) for p in args.paths):  # FlashInfer-Trace definitions
        check_out(args.out)
        text, ok = definitions_report(args)
        emit(text, args.out)
        return 0 if ok else 1
    multi = args.gpus != 1 or plan_kwargs(args)
    if len(args.paths) > 1 or Path(args.paths[0]).is_dir() or args.ray:
        if multi:
            raise ValueError("--gpus and plan options bound one problem file, not a batch")
        return _run_batch(args)
    check_out(args.out)
    spec = load_spec(hw_from_args(args))

    def one_file():
        with gc_paused(default=True):  # the command's process is its own
            _, g = lifted(args.paths[0], args.precision)
            if multi:
                return bound_parallel(g, spec, args.gpus, **plan_kwargs(args))
            return bound_graph(g, spec)

    b = within_time_limit(one_file, args.paths[0], args.timeout)
    emit(b.to_json() if args.json else str(b), args.out)
    return 0


def _run_symbolic(args) -> int:
    """``solar bound FILE --symbolic NAMES``: one problem file with module constants as
    symbols (solar/symbolic/problem.py), its formulas printed (solar/report/symbolic_views.py)."""
    import json

    from solar.report.symbolic_views import symbolic_dict, symbolic_text
    from solar.symbolic.problem import bound_problem, parse_symbolic

    path = args.paths[0]
    if len(args.paths) > 1 or Path(path).is_dir() or args.ray or is_hub_name(path):
        raise ValueError("--symbolic bounds one problem file: give one FILE")
    if not args.symbolic:
        raise ValueError("--symbolic on a problem file names its constants: --symbolic B,S")
    if args.gpus != 1 or plan_kwargs(args):
        raise ValueError("--symbolic bounds one GPU: leave out --gpus and the plan options")
    check_out(args.out)
    names = parse_symbolic(args.symbolic)
    spec = load_spec(hw_from_args(args))

    def one_file():
        with gc_paused(default=True):  # the command's process is its own
            return bound_problem(path, names, spec, precision=args.precision)

    b = within_time_limit(one_file, path, args.timeout)
    emit(json.dumps(symbolic_dict(b), indent=2) if args.json else symbolic_text(b), args.out)
    return 0


def _run_batch(args) -> int:
    check_out(args.out)
    hw = hw_from_args(args)
    files = discover(args.paths)
    bar = Progress.maybe(len(files), "bound")
    try:
        with full_collections_deferred():  # the command's batch: one full collection after it
            results = bound_paths(
                files,
                hw,
                precision=args.precision,
                jobs=args.jobs,
                ray=args.ray,
                on_done=(lambda i, r: bar.advance(r.name, _status(r))) if bar else None,
                timeout=args.timeout,
            )
    finally:
        if bar:
            bar.close()
    emit(
        batch_json(results, hw if isinstance(hw, str) else hw.key)
        if args.json
        else bound_batch_text(results),
        args.out,
    )
    return 0 if all(r.status in ("ok", "skipped") for r in results) else 1


def _status(r) -> str:
    """A batch result's status for the progress line: ``ok``, or the status and reason."""
    return r.status if r.ok or not r.error else f"{r.status}: {r.error}"


def _run_hub(args) -> int:
    """``solar bound hf:ID``: a model by name (solar/hub/), ``--batch`` its batch size."""
    check_out(args.out)
    plan = {k: v for k, v in plan_kwargs(args).items() if k != "batch"}

    def one_model():
        with gc_paused(default=True):  # the command's process is its own
            return bound_hub_from_args(args, plan)

    b = within_time_limit(one_model, args.paths[0], args.timeout)
    emit(b.to_json() if args.json else str(b), args.out)
    return 0

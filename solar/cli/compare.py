"""``solar compare FILE|hf:ID --hw all [--gpus N]``: one program's bounds on several GPUs, one table
(and with ``--gpus N`` each GPU kind's best plan of N GPUs)."""

from __future__ import annotations

from solar.cli.options import (
    add_gpus_args,
    add_hw_option,
    add_output_args,
    add_problem_args,
    emit,
    hw_from_args,
)
from solar.cli.targets.hub import add_hub_args, lifted_target
from solar.questions.compare import compare_graph


def add_parser(sub):
    sp = sub.add_parser("compare", help="bounds of one program on several GPUs, one table")
    add_problem_args(sp)
    add_hw_option(
        sp, default="all", help="comma-separated GPU names or 'all' (the catalog; default)"
    )
    add_gpus_args(sp, plan=False)
    add_output_args(sp)
    add_hub_args(sp)  # hf:ID: the same model options as solar bound
    return sp


def run(args) -> int:
    hw = hw_from_args(args)
    _, g = lifted_target(args.file, args)
    c = compare_graph(g, hw, args.gpus)
    emit(c.to_json() if args.json else str(c), args.out)
    return 0

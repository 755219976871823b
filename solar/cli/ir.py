"""``solar ir FILE``: the Affine Loop IR of a problem file, printed as loops."""

from __future__ import annotations

from solar.api import trace
from solar.cli.options import add_problem_args
from solar.problem import load_problem


def add_parser(sub):
    sp = sub.add_parser("ir", help="print the Affine Loop IR as loops")
    add_problem_args(sp)
    return sp


def run(args) -> int:
    problem = load_problem(args.file)
    print(trace(problem.model, problem.inputs, precision=args.precision, name=problem.name).program)
    return 0

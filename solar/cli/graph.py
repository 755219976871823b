"""``solar graph FILE``: the einsum graph of a problem file (text, node-link JSON, DOT)."""

from __future__ import annotations

from solar.cli.options import add_problem_args, lifted, write
from solar.graph.export import to_dot, to_json, to_text


def add_parser(sub):
    sp = sub.add_parser("graph", help="print the einsum graph")
    add_problem_args(sp)
    sp.add_argument("--dot", metavar="FILE", help="also write a Graphviz drawing")
    sp.add_argument("--json", action="store_true", help="node-link JSON instead of text")
    return sp


def run(args) -> int:
    _, g = lifted(args.file, args.precision)
    if args.dot:
        write(args.dot, to_dot(g))
    print(to_json(g) if args.json else to_text(g))
    return 0

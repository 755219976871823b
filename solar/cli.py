"""The ``solar`` command line: bound, ir, graph, specs."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

EXPECTED_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, OSError, KeyError)


def _load(args):
    from solar.api import trace
    from solar.problem import load_problem

    problem = load_problem(args.file)
    return problem, trace(
        problem.model, problem.inputs, precision=args.precision, name=problem.name
    )


def _write(path: str, text: str) -> None:
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, target)


def cmd_bound(args) -> int:
    from solar.backend import analyze
    from solar.graph import lift
    from solar.hw import load_spec

    spec = load_spec(args.hw)
    _, traced = _load(args)
    b = analyze(lift(traced.program), spec, notes=getattr(traced, "assumptions", None))
    text = b.to_json() if args.json else str(b)
    if args.out:
        _write(args.out, text + "\n")
    else:
        print(text)
    return 0


def cmd_ir(args) -> int:
    _, traced = _load(args)
    print(traced.program)
    return 0


def cmd_graph(args) -> int:
    from solar.graph import lift
    from solar.graph.export import to_dot, to_json, to_text

    _, traced = _load(args)
    g = lift(traced.program)
    if args.dot:
        _write(args.dot, to_dot(g))
    print(to_json(g) if args.json else to_text(g))
    return 0


def cmd_specs(args) -> int:
    from solar.hw import list_specs

    for s in list_specs():
        tc = s.peak("tc_bf16") / 1e12 if s.has_unit("tc_bf16") else float("nan")
        print(
            f"{s.key:<16} {s.name:<32} {s.sm_count:>4} SMs {s.max_clock_hz / 1e6:>6.0f} MHz "
            f"bf16 {tc:7.1f} TFLOP/s  DRAM {s.dram_bandwidth / 1e12:5.2f} TB/s  "
            f"aliases: {', '.join(s.aliases)}"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="solar", description="Speed-of-light bounds of PyTorch programs on NVIDIA GPUs."
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True)

    def problem_cmd(name: str, help: str):
        sp = sub.add_parser(name, help=help)
        sp.add_argument("file", help="KernelBench-style problem file (Model, get_inputs)")
        sp.add_argument(
            "--precision",
            choices=["tf32", "ieee"],
            default=None,
            help="fp32 matmul math (default: the framework's own policy)",
        )
        return sp

    b = problem_cmd("bound", "print the unfused, fused and cache-aware bounds")
    b.add_argument("--hw", default="H100", help="GPU name, alias or spec YAML (default H100)")
    b.add_argument("--json", action="store_true", help="machine-readable output")
    b.add_argument("--out", help="write the report to this file instead of stdout")
    b.set_defaults(func=cmd_bound)
    problem_cmd("ir", "print the Affine Loop IR as loops").set_defaults(func=cmd_ir)
    g = problem_cmd("graph", "print the einsum graph")
    g.add_argument("--dot", metavar="FILE", help="also write a Graphviz drawing")
    g.add_argument("--json", action="store_true", help="node-link JSON instead of text")
    g.set_defaults(func=cmd_graph)
    sub.add_parser("specs", help="list the GPU spec catalogue").set_defaults(func=cmd_specs)
    from solar.gpu import register as register_gpu_commands  # validate, headroom, calibrate

    register_gpu_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except EXPECTED_ERRORS as e:
        if args.debug:
            raise
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"solar: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

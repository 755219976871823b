"""``solar provision FILE|hf:ID --target-ms T``: the inverse roofline (what hardware meets T), per
GPU kind the fewest GPUs that hold the program and meet T (with the plan), and with
``--sweep NAME=v1,v2,...`` the bounds per size of a module constant."""

from __future__ import annotations

import json

from solar.cli.options import (
    add_hw_option,
    add_output_args,
    add_problem_args,
    emit,
    hw_from_args,
)
from solar.cli.targets.hub import add_hub_args, lifted_target
from solar.collector import full_collections_deferred
from solar.fmt import jsonable
from solar.hub.programs import is_hub_name
from solar.questions.provision import provision_graph
from solar.questions.sweep import parse_sweep, sweep_problem


def add_parser(sub):
    sp = sub.add_parser(
        "provision",
        help="inverse roofline: bandwidth, capacity and peaks a GPU needs for a target time",
    )
    add_problem_args(sp)
    sp.add_argument("--target-ms", type=float, required=True, help="target latency in ms")
    sp.add_argument(
        "--level",
        default="cache_aware",
        choices=["cache_aware", "cache-aware", "fused", "unfused"],
        help="which bound must meet the target (default cache_aware)",
    )
    add_hw_option(sp, help="reference GPU for peaks and the capacity grid (default H100)")
    sp.add_argument(
        "--max-gpus",
        type=int,
        default=None,
        metavar="N",
        help="largest GPU count searched per GPU kind (default: the GPUs of one host)",
    )
    sp.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="search the GPU kinds N at a time in local processes (default 1)",
    )
    sp.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=None,
        help="search the GPU kinds on a Ray cluster, one task each ('auto', 'local', HOST:PORT)",
    )
    sp.add_argument(
        "--sweep",
        metavar="NAME=v1,v2,...",
        help="also bound the problem at each value of its module constant NAME on --hw",
    )
    add_output_args(sp)
    add_hub_args(sp)  # hf:ID: the same model options as solar bound
    return sp


def run(args) -> int:
    hw = hw_from_args(args)
    if args.sweep and is_hub_name(args.file):
        raise ValueError(
            "--sweep varies a problem file's module constant: for hf: models, run provision "
            "once per --seq (or --batch)"
        )
    _, g = lifted_target(args.file, args)
    p = provision_graph(
        g,
        target_s=args.target_ms * 1e-3,
        level=args.level,
        hw=hw,
        max_gpus=args.max_gpus,
        jobs=args.jobs,
        ray=args.ray,
    )
    sw = None
    if args.sweep:
        param, sizes = parse_sweep(args.sweep)
        with full_collections_deferred():  # the command's batch of sizes
            sw = sweep_problem(
                args.file,
                param,
                sizes,
                hw,
                target_s=args.target_ms * 1e-3,
                precision=args.precision,
            )
    if args.json:
        d = p.to_dict()
        if sw is not None:
            d["sweep"] = sw.to_dict()
        text = json.dumps(jsonable(d), indent=2)
    else:
        text = str(p) + ("\n" + str(sw) if sw is not None else "")
    emit(text, args.out)
    return 0

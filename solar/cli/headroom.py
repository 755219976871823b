"""``solar headroom FILE|DIR ...``: measure programs on the GPU, bound them, and report the
headroom (measured / bound) per level and per kernel, with violations classified."""

from __future__ import annotations

from pathlib import Path

from solar.cli.common import add_hw_option, add_set_option, default_device, hw_from_args
from solar.gpu.headroom_batch import headroom_paths, headroom_problem
from solar.gpu.problems import parse_sets
from solar.gpu.validate import discover
from solar.gpu.violations import DEFAULT_TOL


def add_parser(sub):
    p = sub.add_parser(
        "headroom",
        help="measure programs on the GPU, bound them, report headroom and violations",
    )
    p.add_argument("paths", nargs="+", help="problem files or folders of them")
    add_hw_option(p, default="auto", help="GPU spec: auto (the visible GPU), name or YAML")
    p.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    p.add_argument("--out", help="write the JSON results here")
    p.add_argument("--plot", help="write the headroom plot (PNG) here (default: beside --out)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reps", type=int, default=None, help="timed repetitions (default: adaptive)")
    p.add_argument("--budget-s", type=float, default=None, help="timing budget per program (s)")
    p.add_argument("--tol", type=float, default=DEFAULT_TOL, help="violation margin (0.01)")
    p.add_argument("--no-validate", action="store_true", help="skip IR validation")
    p.add_argument("--no-profile", action="store_true", help="skip per-kernel profiling")
    p.add_argument("--precision", choices=["tf32", "ieee"], default=None)
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=None,
        help="run on a Ray cluster, one task and one GPU per program: 'auto' (the running "
        "cluster), 'local' (a Ray instance on this machine) or HOST:PORT (needs solar[ray])",
    )
    add_set_option(p)
    return p


def run(args) -> int:
    device = args.device or ("cuda" if args.ray else default_device())
    hw = hw_from_args(args, device)
    files = discover(args.paths)
    kw = dict(
        validate=not args.no_validate,
        profile=not args.no_profile,
        reps=args.reps,
        tol=args.tol,
    )
    if args.budget_s is not None:
        kw["budget_s"] = args.budget_s
    sets = parse_sets(args.set)
    if len(files) == 1 and not Path(args.paths[0]).is_dir() and not args.ray:
        entry = headroom_problem(
            files[0],
            hw,
            device=device,
            seed=args.seed,
            precision=args.precision,
            overrides=sets,
            **kw,
        )
        if entry.report is None:
            raise ValueError(f"{files[0]}: {entry.error}")
        r = entry.report
        if args.out:
            Path(args.out).write_text(r.to_json() + "\n")
        print(r.to_json() if args.json else r)
        if args.plot:
            r.plot(args.plot)
        return 0
    batch = headroom_paths(
        files,
        hw,
        device=device,
        seed=args.seed,
        precision=args.precision,
        show_progress=not args.json,
        overrides=sets,
        ray=args.ray,
        **kw,
    )
    if args.out:
        Path(args.out).write_text(batch.to_json() + "\n")
    plot = args.plot or (str(Path(args.out).with_suffix(".png")) if args.out else None)
    if plot:
        try:
            batch.plot(plot)
        except ImportError as e:
            print(f"solar: no plot: {e}")
    print(batch.to_json() if args.json else batch)
    return 0

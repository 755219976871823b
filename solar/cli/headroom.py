"""``solar headroom FILE|DIR ...``: measure programs on the GPU, bound them, and report the
headroom (measured / bound) per level and per kernel, with violations classified."""

from __future__ import annotations

import sys
from pathlib import Path

from solar.cli.options import (
    Progress,
    add_device_option,
    add_hw_option,
    add_set_option,
    add_timeout_option,
    hw_from_args,
    problem_sets,
    resolve_device,
)
from solar.frontend.compiled import MODES
from solar.gpu.headroom_batch import headroom_paths, headroom_problem
from solar.gpu.validate import discover
from solar.gpu.violations import DEFAULT_TOL


def add_parser(sub):
    p = sub.add_parser(
        "headroom",
        help="measure programs on the GPU, bound them, report headroom and violations",
    )
    p.add_argument("paths", nargs="+", help="problem files or folders of them")
    add_hw_option(p, default="auto", help="GPU spec: auto (the visible GPU), name or YAML")
    add_device_option(p)
    p.add_argument("--out", help="write the JSON results here")
    p.add_argument(
        "--plot", help="write the headroom plot (PNG) here (default: with --out, beside it)"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reps", type=int, default=None, help="timed repetitions (default: adaptive)")
    p.add_argument("--budget-s", type=float, default=None, help="timing budget per program (s)")
    p.add_argument("--tol", type=float, default=DEFAULT_TOL, help="violation margin (0.01)")
    p.add_argument("--no-validate", action="store_true", help="skip IR validation")
    p.add_argument("--no-profile", action="store_true", help="skip per-kernel profiling")
    p.add_argument("--precision", choices=["tf32", "ieee"], default=None)
    p.add_argument(
        "--compile",
        nargs="?",
        const="default",
        default=None,
        choices=MODES,
        metavar="MODE",
        help="measure the program as torch.compile runs it (MODE: default, reduce-overhead, "
        "max-autotune, max-autotune-no-cudagraphs), kernel by generated kernel against the "
        "bound of what each computes (docs/compiled.md)",
    )
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=None,
        help="run on a Ray cluster, one task and one GPU per program: 'auto' (the running "
        "cluster), 'local' (a Ray instance on this machine) or HOST:PORT (needs solar[ray])",
    )
    add_set_option(p)
    add_timeout_option(p)
    return p


def run(args) -> int:
    device = (args.device or "cuda") if args.ray else resolve_device(args.device)
    if args.hw == "auto" and not args.ray and not device.startswith("cuda"):
        raise ValueError(
            "--hw auto measures the visible CUDA GPU and there is none: pass --hw NAME (solar "
            "specs lists them) or --hw SPEC.yaml, the GPU whose bounds to compare with"
        )
    hw = hw_from_args(args, device)
    files = discover(args.paths)
    plot = args.plot or (str(Path(args.out).with_suffix(".png")) if args.out else None)
    kw = dict(
        validate=not args.no_validate,
        profile=not args.no_profile,
        reps=args.reps,
        tol=args.tol,
    )
    if args.budget_s is not None:
        kw["budget_s"] = args.budget_s
    sets = problem_sets(args.set, files)
    if args.compile:
        return _compiled(args, files, hw, device, sets, plot)
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
        if plot:
            _plot(r, plot)
        return 0
    bar = Progress.maybe(len(files), "headroom")
    try:
        batch = headroom_paths(
            files,
            hw,
            device=device,
            seed=args.seed,
            precision=args.precision,
            show_progress=False,
            on_entry=(lambda e: bar.advance(e.name, _status(e))) if bar else None,
            overrides=sets,
            ray=args.ray,
            timeout=args.timeout,
            **kw,
        )
    finally:
        if bar:
            bar.close()
    if args.out:
        Path(args.out).write_text(batch.to_json() + "\n")
    if plot:
        _plot(batch, plot)
    print(batch.to_json() if args.json else batch)
    return 0


def _compiled(args, files, hw, device: str, sets, plot) -> int:
    """``--compile``: each problem compiled, bounded per generated kernel and measured, one at
    a time on this machine."""
    from solar.gpu.compiled_headroom import compiled_headroom
    from solar.gpu.problems import load_real_problem

    if args.ray:
        raise ValueError("--compile runs on this machine: drop --ray (or --compile)")
    reports = []
    for path in files:
        problem, _ = load_real_problem(path, device=device, seed=args.seed, overrides=sets)
        kw = {"budget_s": args.budget_s} if args.budget_s is not None else {}
        reports.append(
            compiled_headroom(
                problem.model,
                problem.inputs,
                hw,
                mode=args.compile,
                precision=args.precision,
                name=problem.name,
                reps=args.reps,
                tol=args.tol,
                path=str(path),
                **kw,
            )
        )
    if args.out:
        body = reports[0].to_json() if len(reports) == 1 else _json_list(reports)
        Path(args.out).write_text(body + "\n")
    print("\n\n".join(r.to_json() if args.json else str(r) for r in reports))
    if plot and len(reports) == 1:
        _plot(reports[0], plot)
    return 0


def _json_list(reports) -> str:
    import json

    return json.dumps([r.to_dict() for r in reports], indent=2)


def _status(entry) -> str:
    """A batch entry's status for the progress line: ``ok``, or the status and reason."""
    return (
        entry.status
        if entry.status == "ok" or not entry.error
        else (f"{entry.status}: {entry.error}")
    )


def _plot(report, path: str) -> None:
    """Write ``report``'s plot to ``path``; without matplotlib, say so on stderr."""
    try:
        report.plot(path)
    except ImportError as e:
        print(f"solar: no plot: {e}", file=sys.stderr)

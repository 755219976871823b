"""``solar plot FILE --out DIR``: trace a problem file once and write its plots as PNGs
(roofline, capacity, kernels, region, compare, and with ``--sweep`` latency per size)."""

from __future__ import annotations

from pathlib import Path

from solar.api import bound_graph
from solar.cli.options import add_hw_option, add_problem_args, hw_from_args, lifted
from solar.collector import full_collections_deferred
from solar.hw import load_spec
from solar.questions.compare import compare_graph
from solar.questions.provision import provision_graph
from solar.questions.sweep import parse_sweep, sweep_problem
from solar.report.plots import KINDS, compare_plot, plot_bound, region_plot, sweep_plot


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=120, metadata={"Software": None})
    return path


def save_all(
    file,
    out,
    *,
    hw="H100",
    kinds=KINDS,
    target_ms: float | None = None,
    compare_hw="all",
    sweep: str | None = None,
    precision: str | None = None,
) -> list[Path]:
    """Trace problem ``file`` once and write the plots of ``kinds`` as PNGs into ``out``.
    The region uses ``target_ms`` (default: the cache-aware bound on ``hw``, so the region is
    "at least as fast as hw for this program")."""
    import matplotlib

    matplotlib.use("Agg")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _, g = lifted(file, precision)
    spec = load_spec(hw)
    b = bound_graph(g, spec)
    written = []
    for kind in kinds:
        if kind in ("roofline", "capacity", "kernels"):
            fig = plot_bound(b, kind)
        elif kind == "region":
            t = target_ms * 1e-3 if target_ms is not None else b.cache_aware
            fig = region_plot(provision_graph(g, target_s=t, hw=spec))
        elif kind == "compare":
            fig = compare_plot(compare_graph(g, compare_hw))
        else:
            raise ValueError(f"unknown plot kind {kind!r}; kinds: {', '.join(KINDS)}")
        written.append(_save(fig, out / f"{kind}.png"))
    if sweep:
        param, sizes = parse_sweep(sweep)
        target_s = None if target_ms is None else target_ms * 1e-3
        with full_collections_deferred():  # the command's batch of sizes
            s = sweep_problem(file, param, sizes, spec, target_s=target_s, precision=precision)
        written.append(_save(sweep_plot(s), out / "sweep.png"))
    return written


def add_parser(sub):
    sp = sub.add_parser("plot", help="write the roofline, capacity, kernel, region, compare PNGs")
    add_problem_args(sp)
    sp.add_argument("--out", default=".", help="directory for the PNGs (created if missing)")
    add_hw_option(sp, help="GPU for the per-program plots (default H100)")
    sp.add_argument(
        "--kind", action="append", choices=KINDS, help="which plot (repeatable); default: all"
    )
    sp.add_argument("--all", action="store_true", help="every plot (the default)")
    sp.add_argument("--target-ms", type=float, default=None, help="target for the region plot")
    sp.add_argument("--compare-hw", default="all", help="GPUs of the compare plot")
    sp.add_argument("--sweep", metavar="NAME=v1,v2,...", help="also plot latency per size")
    return sp


def run(args) -> int:
    paths = save_all(
        args.file,
        args.out,
        hw=hw_from_args(args),
        kinds=tuple(args.kind) if args.kind and not args.all else KINDS,
        target_ms=args.target_ms,
        compare_hw=args.compare_hw,
        sweep=args.sweep,
        precision=args.precision,
    )
    for p in paths:
        print(p)
    return 0

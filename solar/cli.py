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


def _check_out(path: str | None) -> None:
    """Fail before any analysis when ``path`` cannot be written: its folder must exist and be
    writable, and it must not be a folder itself."""
    if not path:
        return
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise IsADirectoryError(f"cannot write {path}: it is a folder")
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"cannot write {path}: folder {folder} is not writable")


def _write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` all at once: a temporary file in the same folder, renamed
    over ``path``; on any failure the temporary file is removed and ``path`` is untouched."""
    import tempfile

    _check_out(path)
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cmd_bound(args) -> int:
    from solar.backend import analyze
    from solar.graph import lift
    from solar.hw import load_spec

    if Path(args.file).is_dir() or args.ray:
        return cmd_bound_batch(args)
    from solar.api import _gc_paused

    _check_out(args.out)
    spec = load_spec(args.hw)
    with _gc_paused():
        _, traced = _load(args)
        b = analyze(lift(traced.program), spec, notes=getattr(traced, "assumptions", None))
    text = b.to_json() if args.json else str(b)
    if args.out:
        _write(args.out, text + "\n")
    else:
        print(text)
    return 0


def cmd_bound_batch(args) -> int:
    """``solar bound DIR``: every problem file below DIR, one task each (solar.batch)."""
    from solar.batch import batch_json, bound_paths, discover, format_batch

    _check_out(args.out)
    files = discover([args.file])
    bar = _progress(len(files)) if sys.stderr.isatty() and len(files) > 1 else None
    try:
        results = bound_paths(
            files,
            args.hw,
            precision=args.precision,
            jobs=args.jobs,
            ray=args.ray,
            on_done=(lambda i, r: bar.advance(r.name)) if bar else None,
        )
    finally:
        if bar:
            bar.close()
    text = batch_json(results, args.hw) if args.json else format_batch(results)
    if args.out:
        _write(args.out, text + "\n")
    else:
        print(text)
    return 0 if all(r.status in ("ok", "skipped") for r in results) else 1


class _progress:
    """A progress bar on stderr (rich), advanced as batch tasks finish."""

    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import Progress

        self._p = Progress(console=Console(stderr=True), transient=True)
        self._p.start()
        self._task = self._p.add_task("bound", total=total)

    def advance(self, name: str) -> None:
        self._p.update(self._task, advance=1, description=f"bound {name[:30]}")

    def close(self) -> None:
        self._p.stop()


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
    b.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="FILE may be a folder: bound every problem file in it, N at a time in local "
        "worker processes (default: one per CPU core; 1: in this process)",
    )
    b.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=None,
        help="run the batch on a Ray cluster, one task per file: 'auto' (the running cluster), "
        "'local' (a Ray instance on this machine) or HOST:PORT (needs solar[ray])",
    )
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
    import logging

    args = build_parser().parse_args(argv)
    # torch logs a failing fake-tensor kernel's traceback; the one-line error says it
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    level = fake_log.level
    if not args.debug:
        fake_log.setLevel(logging.CRITICAL)
    try:
        return args.func(args)
    except EXPECTED_ERRORS as e:
        if args.debug:
            raise
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if isinstance(e, KeyError):  # str(KeyError) is the repr of the key alone
            msg = f"KeyError: {msg}"
        print(f"solar: error: {msg}", file=sys.stderr)
        return 2
    except Exception as e:  # anything else (a framework error in user code, a bug): one line
        if args.debug:
            raise
        lines = str(e).strip().splitlines()
        msg = f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__
        print(f"solar: error: {msg} (--debug shows the traceback)", file=sys.stderr)
        return 2
    finally:
        fake_log.setLevel(level)


if __name__ == "__main__":
    sys.exit(main())

"""What the commands share: problem-file arguments, tracing a problem file, writing a report
to ``--out`` all at once (or printing it), and a progress bar for batches."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from solar.api import lift_problem
from solar.problem import load_problem

T = TypeVar("T")


def add_problem_args(sp, *, many: bool = False) -> None:
    """The problem-file positional (``file``, or ``paths`` with ``many``) and ``--precision``."""
    if many:
        sp.add_argument(
            "paths",
            nargs="+",
            help="KernelBench-style problem files (Model, get_inputs), or folders",
        )
    else:
        sp.add_argument("file", help="KernelBench-style problem file (Model, get_inputs)")
    sp.add_argument(
        "--precision",
        choices=["tf32", "ieee"],
        default=None,
        help="fp32 matmul math (default: the framework's own policy)",
    )


def add_hw_option(
    sp, *, default: str = "H100", help: str = "GPU name, alias or spec YAML (default H100)"
) -> None:
    """``--hw`` and ``--override FIELD=VALUE,...`` (what-if hardware), the same in every
    command that takes a GPU."""
    sp.add_argument("--hw", default=default, help=help)
    sp.add_argument(
        "--override",
        action="append",
        metavar="FIELD=VALUE,...",
        help="what-if hardware: change quantities of the --hw spec, e.g. "
        "dram_bandwidth=2TB/s,l2=100MiB (the spec's fields, a unit's peak as tc_bf16=1500TFLOP/s, "
        "kernel_launch=2us; a factor as x1.5); repeatable",
    )


def hw_from_args(args, device: str | None = None):
    """``--hw`` with ``--override`` applied: the ``--hw`` text as given when nothing is
    overridden (names, ``all``, ``auto`` are resolved where they are used); else the what-if
    spec, a list of them for ``all`` or a comma-separated list, and for ``auto`` the visible
    GPU's spec (on ``device``) changed."""
    from solar.hw import list_specs, load_spec
    from solar.hw.whatif import parse_overrides

    changes = parse_overrides(getattr(args, "override", None))
    if not changes:
        return args.hw
    hw = str(args.hw).strip()
    if hw.lower() == "auto":
        from solar.gpu.measure import resolve_hw

        return resolve_hw(hw, device).scaled(**changes)
    if hw.lower() == "all":
        return [s.scaled(**changes) for s in list_specs()]
    if "," in hw:
        return [load_spec(h.strip()).scaled(**changes) for h in hw.split(",") if h.strip()]
    return load_spec(hw).scaled(**changes)


def add_output_args(sp) -> None:
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.add_argument("--out", help="write the report to this file instead of stdout")


def add_gpus_args(sp, *, plan: bool = True) -> None:
    """``--gpus N`` (and, with ``plan``, the degrees and micro-batches that pin a plan)."""
    sp.add_argument(
        "--gpus",
        type=int,
        default=1,
        metavar="N",
        help="bound the best tensor/pipeline/data-parallel plan of N GPUs of each spec (default 1)",
    )
    if not plan:
        return
    for flag, what in (("tp", "tensor"), ("pp", "pipeline"), ("dp", "data")):
        sp.add_argument(
            f"--{flag}", type=int, default=None, metavar="K", help=f"pin the {what}-parallel degree"
        )
    sp.add_argument(
        "--micro-batches", type=int, default=None, metavar="M", help="pipeline micro-batches"
    )
    sp.add_argument(
        "--batch",
        default=None,
        metavar="INPUT[:AXIS]",
        help="the axis data parallelism and micro-batches split (default: axis 0 of the first "
        "input)",
    )


def plan_kwargs(args) -> dict:
    """The plan keywords of :func:`solar.api.bound_parallel` given on the command line."""
    keys = ("tp", "pp", "dp", "micro_batches", "batch")
    return {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}


def add_set_option(sp) -> None:
    sp.add_argument(
        "--set",
        action="append",
        metavar="NAME=VALUE",
        help="override a module-level constant of the problem files (e.g. --set BATCH=4), "
        "for small runs; repeatable; every NAME must be defined by the file (or, for a "
        "folder, by at least one of its files)",
    )


def problem_sets(items: list[str] | None, files: list[Path]) -> dict[str, object]:
    """The ``--set`` values, checked the same way by every command that takes them: each name
    must be a module-level name of at least one of ``files`` (read, not run), so a typo is an
    error instead of a silently ignored setting."""
    from solar.gpu.problems import parse_sets

    sets = parse_sets(items)
    if not sets:
        return sets
    defined = [module_names(f) for f in files]
    for name in sets:
        if not any(name in names for names in defined):
            one = len(files) == 1
            where = f"{files[0].name} defines no" if one else f"none of the {len(files)} files"
            where += "" if one else " defines a"
            known = sorted({n for names in defined for n in names if n.isupper()})
            hint = f" (constants: {', '.join(known)})" if known else ""
            raise ValueError(f"--set {name}: {where} module-level {name}{hint}; check the name")
    return sets


def module_names(path: Path) -> set[str]:
    """The names a Python file binds at module level (assignments, imports, defs, classes),
    from its syntax tree; an unparsable file binds none here (loading it says why)."""
    import ast

    try:
        tree = ast.parse(Path(path).read_text())
    except (SyntaxError, ValueError, OSError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        targets: list = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        for t in targets:
            names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def add_device_option(sp) -> None:
    sp.add_argument("--device", default=None, help="cuda (default when available) or cpu")


def resolve_device(requested: str | None) -> str:
    """The ``--device`` of a command that runs programs: the one asked for, checked (a CUDA
    device on a machine without one is an error naming the way out), else ``cuda`` when a
    CUDA device is visible and ``cpu`` otherwise."""
    import torch

    if requested is None:
        return default_device()
    try:
        kind = torch.device(requested).type
    except RuntimeError:
        raise ValueError(f"--device {requested}: not a device; use cuda, cuda:N or cpu") from None
    if kind == "cuda" and not torch.cuda.is_available():
        why = (
            "this PyTorch is built without CUDA"
            if torch.version.cuda is None
            else ("no CUDA GPU is visible")
        )
        raise ValueError(
            f"--device {requested}: {why}; use --device cpu (small sizes: --set NAME=VALUE)"
        )
    return requested


def lifted(path: str, precision: str | None):
    """Load a problem file and trace and lift it once: ``(IR program, einsum graph)``."""
    return lift_problem(load_problem(path), precision=precision)


def check_out(path: str | None) -> None:
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


def write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` all at once: a temporary file in the same folder, renamed
    over ``path``; on any failure the temporary file is removed and ``path`` is untouched."""
    check_out(path)
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def emit(text: str, out: str | None) -> None:
    """The report: to ``out`` when given, else to stdout."""
    if out:
        write(out, text + "\n")
    else:
        print(text)


def add_timeout_option(sp) -> None:
    """``--timeout S``: the time limit of each problem of a batch, or of the one problem."""
    from solar.questions.executors import DEFAULT_TIMEOUT_S

    sp.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help="stop a problem still running after S seconds: one file ends with that error; in "
        "a batch (several files or a folder) it is recorded as 'timeout' and the rest goes on "
        f"(default {DEFAULT_TIMEOUT_S:g})",
    )


def within_time_limit(run: Callable[[], T], path: str, timeout: float | None) -> T:
    """``run()`` for one problem (``path``), stopped after ``timeout`` seconds with the one
    line a batch records for it: ``PATH: no result within the time limit of S s (--timeout)``
    (a TimeoutError). The limit interrupts Python code, as in a batch run in this process
    (:func:`~solar.questions.executors.call_with_time_limit`)."""
    from solar.questions.executors import call_with_time_limit

    if timeout is not None and timeout <= 0:
        raise ValueError(f"--timeout must be a positive number of seconds, got {timeout:g}")
    result = call_with_time_limit(run, (), timeout)
    if isinstance(result, TimeoutError):
        raise TimeoutError(f"{Path(path).name}: {result}")
    return result


class Progress:
    """Progress of a batch on stderr, advanced as problems finish: a bar (rich) on a terminal,
    else one line per problem (``solar: [2/5] name: ok``), so logs and CI show it too."""

    def __init__(self, total: int, label: str) -> None:
        self._label, self._total, self._done = label, total, 0
        self._p = None
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import Progress as RichProgress

            self._p = RichProgress(console=Console(stderr=True), transient=True)
            self._p.start()
            self._task = self._p.add_task(label, total=total)

    @classmethod
    def maybe(cls, total: int, label: str) -> Progress | None:
        """A progress for a batch of ``total`` problems; None for one problem."""
        return cls(total, label) if total > 1 else None

    def advance(self, name: str, status: str = "") -> None:
        self._done += 1
        if self._p is not None:
            self._p.update(self._task, advance=1, description=f"{self._label} {name[:30]}")
        else:
            tail = f": {status}" if status else ""
            print(f"solar: [{self._done}/{self._total}] {name}{tail}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._p is not None:
            self._p.stop()


def default_device() -> str:
    """``cuda`` when a CUDA device is visible, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"

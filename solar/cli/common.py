"""What the commands share: problem-file arguments, tracing a problem file, writing a report
to ``--out`` all at once (or printing it), and a progress bar for batches."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from solar.api import lift_problem
from solar.problem import load_problem


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
        "for small runs; repeatable",
    )


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


class Progress:
    """A progress bar on stderr (rich), advanced as batch tasks finish; ``None`` when stderr is
    not a terminal or there is one task (see :meth:`maybe`)."""

    def __init__(self, total: int, label: str) -> None:
        from rich.console import Console
        from rich.progress import Progress as RichProgress

        self._label = label
        self._p = RichProgress(console=Console(stderr=True), transient=True)
        self._p.start()
        self._task = self._p.add_task(label, total=total)

    @classmethod
    def maybe(cls, total: int, label: str) -> Progress | None:
        return cls(total, label) if sys.stderr.isatty() and total > 1 else None

    def advance(self, name: str) -> None:
        self._p.update(self._task, advance=1, description=f"{self._label} {name[:30]}")

    def close(self) -> None:
        self._p.stop()


def default_device() -> str:
    """``cuda`` when a CUDA device is visible, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"

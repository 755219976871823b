"""Batch analysis: many problem files, one task per file, on a chosen executor.

    results = bound_paths(["examples/"], hw="H100", jobs=2)      # local process pool
    results = bound_paths(["examples/"], ray="auto")             # a Ray cluster (solar[ray])

The executors (serial, a local process pool, Ray) are :mod:`solar.questions.executors`.
Results come back in input order whatever the executor, so every executor gives the same list.
A task never raises: a problem file that fails becomes a :class:`BatchResult` with
``status="error"`` and a one-line reason; one whose ``REQUIRES = [...]`` packages are missing
is ``"skipped"``; one still running after its time limit (``timeout``, default
:data:`~solar.questions.executors.DEFAULT_TIMEOUT_S`) is stopped and ``"timeout"``.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from solar.api import bound_graph, lift_problem
from solar.frozen import Frozen, thaw
from solar.hw import load_spec
from solar.problem import discover, load_problem
from solar.questions.executors import (
    DEFAULT_TIMEOUT_S,
    map_tasks,
    one_line,
    resolve_executor,
    run_on_copy,
)

BATCH_SCHEMA = "solar.bound-batch/1"


# ----------------------------------------------------------------------------------------------
# one task: bound one problem file


@dataclass(frozen=True)
class BatchResult(Frozen):
    """The outcome of one problem file: ``bound`` is :meth:`solar.backend.result.Bound.to_dict` when
    ``status == "ok"``; ``error`` a one-line reason otherwise."""

    path: str
    name: str
    status: str  # "ok", "error", "timeout" or "skipped"
    seconds: float = 0.0
    bound: Mapping | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return thaw(asdict(self))


def requirements(source: str) -> list[str]:
    """Packages a problem file declares in a module-level ``REQUIRES = [...]``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "REQUIRES" for t in node.targets
        ):
            try:
                return [str(x) for x in ast.literal_eval(node.value)]
            except ValueError:
                return []
    return []


def bound_problem(path: str | Path, hw="H100", *, precision: str | None = None):
    """:func:`solar.bound` of a problem file, PyTorch or JAX (:func:`solar.problem.load_problem`
    builds either)."""
    spec = load_spec(hw)
    _, g = lift_problem(load_problem(path), precision=precision)
    return bound_graph(g, spec)


def analyse_file(
    path: str | Path, hw="H100", precision: str | None = None, source: str | None = None
) -> BatchResult:
    """Bound one problem file; never raises. ``source``: the file's text, written to a
    temporary file of the same name first (how a remote worker receives a problem)."""
    path = Path(path)
    if source is not None:
        return run_on_copy(analyse_file, path, source, hw, precision)
    t0 = time.perf_counter()
    try:
        missing = [m for m in requirements(path.read_text()) if importlib.util.find_spec(m) is None]
        if missing:
            return BatchResult(str(path), path.stem, "skipped", error=f"needs {', '.join(missing)}")
        b = bound_problem(path, hw, precision=precision)
        return BatchResult(str(path), path.stem, "ok", time.perf_counter() - t0, b.to_dict())
    except (Exception, SystemExit) as e:  # a task never raises: the batch goes on
        return BatchResult(
            str(path), path.stem, "error", time.perf_counter() - t0, None, one_line(e)
        )


def _analysis_crashed(path: str, reason: str, status: str = "error") -> BatchResult:
    return BatchResult(str(path), Path(path).stem, status, error=reason)


analyse_file.crash_result = _analysis_crashed  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------------------------
# batches of problem files


def bound_paths(
    paths: Iterable[str | Path],
    hw="H100",
    *,
    precision: str | None = None,
    jobs: int | None = None,
    ray: str | None = None,
    executor: str | None = None,
    on_done: Callable[[int, BatchResult], None] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
) -> list[BatchResult]:
    """Bound every problem file under ``paths`` (files, or folders searched for ``*.py``); one
    task per file on the executor chosen by ``jobs``/``ray``/``executor`` (see
    :func:`map_tasks`), each stopped after ``timeout`` seconds (None: no limit) and then
    recorded as ``"timeout"``. A bad spec fails at once, before any task runs."""
    files = discover(paths)
    spec = load_spec(hw)  # a malformed spec is one error, not one per file
    # names and paths travel as they are; anything else as the spec's dict (picklable)
    hw_arg = str(hw) if isinstance(hw, (str, Path)) else spec.to_dict()
    kind = resolve_executor(jobs, ray, executor)
    if kind == "ray":  # remote workers may not see this file system: ship the sources
        items = [(str(f), hw_arg, precision, f.read_text()) for f in files]
    else:
        items = [(str(f), hw_arg, precision) for f in files]
    if timeout is not None and timeout <= 0:
        raise ValueError(f"--timeout must be a positive number of seconds, got {timeout:g}")
    return map_tasks(
        analyse_file, items, jobs=jobs, ray=ray, executor=kind, on_done=on_done, timeout=timeout
    )


def batch_json(results: Sequence[BatchResult], hw: object = None) -> str:
    """``{"schema": "solar.bound-batch/1", "hw": ..., "programs": [BatchResult...]}``."""
    doc = {
        "schema": BATCH_SCHEMA,
        "hw": hw if isinstance(hw, str) else None,
        "programs": [r.to_dict() for r in results],
    }
    return json.dumps(doc, indent=2)

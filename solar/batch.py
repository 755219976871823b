"""Batch analysis: many problem files, one task per file, on a chosen executor.

    results = bound_paths(["examples/"], hw="H100", jobs=2)      # local process pool
    results = bound_paths(["examples/"], ray="auto")             # a Ray cluster (solar[ray])

Executors (:func:`map_tasks`, reusable for any picklable top-level task function):

- ``serial``: in this process, one task after another (``jobs=1``);
- ``process``: a local :class:`~concurrent.futures.ProcessPoolExecutor` of ``jobs`` workers
  (default: the CPU count), each with one torch thread (tasks, not threads, use the cores).
  Workers are forked (fast: they start with this process's imports) unless JAX is loaded here
  (JAX is multithreaded and must not be forked), then started by a fork server. A worker that
  dies (a crash, the OOM killer) fails only its own task: the tasks it took down with it are
  re-run, each alone in a fresh worker;
- ``ray``: one Ray task per item on the cluster at ``ray`` (``"auto"``, ``"local"`` for a new
  local cluster, or an address); see :mod:`solar.ray_backend`.

Results come back in input order whatever the executor, so every executor gives the same list.
A task never raises: a problem file that fails becomes a :class:`BatchResult` with
``status="error"`` and a one-line reason; one whose ``REQUIRES = [...]`` packages are missing
is ``"skipped"``.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import logging
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass
from pathlib import Path

from solar.problem import discover

EXECUTORS = ("serial", "process", "ray")
BATCH_SCHEMA = "solar.bound-batch/1"


# ----------------------------------------------------------------------------------------------
# one task: bound one problem file


@dataclass
class BatchResult:
    """The outcome of one problem file: ``bound`` is :meth:`solar.report.Bound.to_dict` when
    ``status == "ok"``; ``error`` a one-line reason otherwise."""

    path: str
    name: str
    status: str  # "ok", "error" or "skipped"
    seconds: float = 0.0
    bound: dict | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return asdict(self)


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
    import solar
    from solar.problem import load_problem

    problem = load_problem(path)
    return solar.bound(problem.model, problem.inputs, hw=hw, precision=precision, name=problem.name)


def one_line(e: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(e).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(e).__name__}: {first}" if first else type(e).__name__


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


def _analysis_crashed(path: str, reason: str) -> BatchResult:
    return BatchResult(str(path), Path(path).stem, "error", error=reason)


analyse_file.crash_result = _analysis_crashed  # type: ignore[attr-defined]


def run_on_copy(task: Callable, path: Path, source: str, *args, **kwargs):
    """``task(copy, *args, **kwargs)`` on a temporary copy of a problem file made from its
    ``source`` text, keeping the file's name (a remote worker need not see the driver's file
    system); the result's ``path`` and ``error`` name the original ``path``."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="solar-task-") as d:
        local = Path(d) / path.name
        local.write_text(source)
        result = task(local, *args, **kwargs)
    result.path = str(path)
    if result.error:  # name the file as the caller knows it
        result.error = result.error.replace(str(local), str(path))
    return result


# ----------------------------------------------------------------------------------------------
# executors


def resolve_executor(jobs: int | None = None, ray: str | None = None, executor: str | None = None):
    """The executor a (jobs, ray, executor) choice means: an explicit ``executor`` wins; a Ray
    address means ``ray``; ``jobs == 1`` means ``serial``; otherwise ``process``."""
    if executor is not None:
        if executor not in EXECUTORS:
            raise ValueError(f"unknown executor {executor!r}; one of {', '.join(EXECUTORS)}")
        return executor
    if ray:
        return "ray"
    if jobs is not None and jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    return "serial" if jobs == 1 else "process"


def _warm() -> None:
    """Worker initialiser: import the analysis stack once per worker, not per task."""
    import torch

    import solar.api  # noqa: F401
    import solar.frontend.torch  # noqa: F401

    torch.set_num_threads(1)  # one task per worker: no intra-op threads competing for cores
    # A failing fake-tensor kernel logs its traceback; the task's one-line error says it.
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)


def map_tasks(
    fn: Callable,
    items: Sequence[tuple],
    *,
    jobs: int | None = None,
    ray: str | None = None,
    executor: str | None = None,
    on_done: Callable[[int, object], None] | None = None,
    mp_context: str | None = None,
) -> list:
    """``[fn(*item) for item in items]`` on the chosen executor (:func:`resolve_executor`), in
    input order. ``fn`` must be a picklable top-level function that does not raise (wrap
    failures into its result, as :func:`analyse_file` does); ``on_done(i, result)`` is called
    in this process as each item finishes (for progress bars). ``mp_context``: how process
    workers start (``fork``, ``forkserver``, ``spawn``; default: see the module docstring)."""
    kind = resolve_executor(jobs, ray, executor)
    items = list(items)
    done = on_done or (lambda i, r: None)
    if kind == "serial" or (kind == "process" and len(items) <= 1):
        out = []
        for i, item in enumerate(items):
            out.append(fn(*item))
            done(i, out[-1])
        return out
    if kind == "ray":
        from solar.ray_backend import ray_map

        return ray_map(fn, items, address=ray or "auto", on_done=done)
    return _process_map(fn, items, jobs or os.cpu_count() or 1, done, mp_context)


def _start_method() -> str:
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and not any(m in sys.modules for m in ("jax", "jaxlib")):
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


# What a fork server imports once, so that the workers it forks start warm.
_PRELOAD = ["torch", "solar.api", "solar.frontend.torch", "solar.batch"]


def _process_map(fn, items, jobs, done, mp_context) -> list:
    ctx = multiprocessing.get_context(mp_context or _start_method())
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(_PRELOAD)  # no effect once the server runs
    results: list = [None] * len(items)
    broken: list[int] = []
    workers = min(jobs, len(items))
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_warm) as pool:
        futures: dict[Future, int] = {pool.submit(fn, *item): i for i, item in enumerate(items)}
        for fut in as_completed(futures):
            i = futures[fut]
            try:
                results[i] = fut.result()
            except BrokenProcessPool:
                broken.append(i)
                continue
            done(i, results[i])
    for i in sorted(broken):  # alone in a fresh worker: only the task that crashes fails
        with ProcessPoolExecutor(1, mp_context=ctx, initializer=_warm) as pool:
            try:
                results[i] = pool.submit(fn, *items[i]).result()
            except BrokenProcessPool as e:
                results[i] = _crashed(fn, items[i], e)
        done(i, results[i])
    return results


def _crashed(fn, item, e: BaseException):
    """The result of a task whose worker process died: ``fn.crash_result(item[0], reason)``
    when the task function has one (problem-file tasks do), else a RuntimeError."""
    reason = f"the worker process died ({one_line(e)}): a crash or out of memory"
    make = getattr(fn, "crash_result", None)
    return make(item[0], reason) if make is not None else RuntimeError(reason)


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
) -> list[BatchResult]:
    """Bound every problem file under ``paths`` (files, or folders searched for ``*.py``); one
    task per file on the executor chosen by ``jobs``/``ray``/``executor`` (see
    :func:`map_tasks`). A bad spec fails at once, before any task runs."""
    from solar.hw import load_spec

    files = discover(paths)
    spec = load_spec(hw)  # a malformed spec is one error, not one per file
    # names and paths travel as they are; anything else as the spec's dict (picklable)
    hw_arg = str(hw) if isinstance(hw, (str, Path)) else spec.to_dict()
    kind = resolve_executor(jobs, ray, executor)
    if kind == "ray":  # remote workers may not see this file system: ship the sources
        items = [(str(f), hw_arg, precision, f.read_text()) for f in files]
    else:
        items = [(str(f), hw_arg, precision) for f in files]
    return map_tasks(analyse_file, items, jobs=jobs, ray=ray, executor=kind, on_done=on_done)


def format_batch(results: Sequence[BatchResult]) -> str:
    """One line per problem file: the three bounds, or the reason it has none."""
    from solar.report import fmt_time

    width = max([len(r.name) for r in results] + [7])
    head = f"{'program':<{width}}  {'fused':>10}  {'cache-aware':>11}  {'unfused':>10}  status"
    lines = [head, "-" * len(head)]
    for r in results:
        if r.ok and r.bound is not None:
            b = r.bound["bounds"]
            lines.append(
                f"{r.name:<{width}}  {fmt_time(b['fused_s']):>10}  "
                f"{fmt_time(b['cache_aware_s']):>11}  {fmt_time(b['unfused_s']):>10}  ok"
            )
        else:
            lines.append(
                f"{r.name:<{width}}  {'-':>10}  {'-':>11}  {'-':>10}  {r.status}: {r.error}"
            )
    n_ok = sum(r.ok for r in results)
    n_skip = sum(r.status == "skipped" for r in results)
    lines.append(
        f"{n_ok} of {len(results)} bounded, {len(results) - n_ok - n_skip} failed, {n_skip} skipped"
    )
    return "\n".join(lines)


def batch_json(results: Sequence[BatchResult], hw: object = None) -> str:
    """``{"schema": "solar.bound-batch/1", "hw": ..., "programs": [BatchResult...]}``."""
    doc = {
        "schema": BATCH_SCHEMA,
        "hw": hw if isinstance(hw, str) else None,
        "programs": [r.to_dict() for r in results],
    }
    return json.dumps(doc, indent=2)

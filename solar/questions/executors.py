"""Executors: run a picklable top-level task function over many items, in input order.

:func:`map_tasks` picks one (:func:`resolve_executor`):

- ``serial``: in this process, one task after another (``jobs=1``);
- ``process``: a local :class:`~concurrent.futures.ProcessPoolExecutor` of ``jobs`` workers
  (default: the CPU count), each with one torch thread (tasks, not threads, use the cores).
  Workers are forked (fast: they start with this process's imports) unless JAX is loaded here
  (JAX is multithreaded and must not be forked), then started by a fork server. A worker that
  dies (a crash, the OOM killer) fails only its own task: the tasks it took down with it are
  re-run, each alone in a fresh worker;
- ``ray`` (:func:`ray_map`, ``pip install solar[ray]``): one Ray task per item on the cluster at
  ``address``: ``"local"`` starts a Ray instance on this machine for the batch (shut down
  afterwards); ``"auto"`` connects to the running cluster (``ray start --head``,
  ``RAY_ADDRESS``); ``"HOST:PORT"`` or ``"ray://HOST:PORT"`` connects to that cluster. The
  driver's ``solar`` package is shipped to the workers (Ray's ``py_modules``), so every worker
  runs the same code as the driver; workers need PyTorch (and JAX for JAX problems) installed.
  Ray is imported only when this executor is asked for.

Results come back in input order whatever the executor, so every executor gives the same list.
A task function never raises (it wraps failures into its result); one whose worker dies becomes
``fn.crash_result(item[0], reason)`` when the function has one.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

EXECUTORS = ("serial", "process", "ray")


def one_line(e: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(e).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(e).__name__}: {first}" if first else type(e).__name__


def run_on_copy(task: Callable, path: Path, source: str, *args, **kwargs):
    """``task(copy, *args, **kwargs)`` on a temporary copy of a problem file made from its
    ``source`` text, keeping the file's name (a remote worker need not see the driver's file
    system); the result's ``path`` and ``error`` name the original ``path``."""
    with tempfile.TemporaryDirectory(prefix="solar-task-") as d:
        local = Path(d) / path.name
        local.write_text(source)
        result = task(local, *args, **kwargs)
    result.path = str(path)
    if result.error:  # name the file as the caller knows it
        result.error = result.error.replace(str(local), str(path))
    return result


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
        return ray_map(fn, items, address=ray or "auto", on_done=done)
    return _process_map(fn, items, jobs or os.cpu_count() or 1, done, mp_context)


def _start_method() -> str:
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and not any(m in sys.modules for m in ("jax", "jaxlib")):
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


# What a fork server imports once, so that the workers it forks start warm.
_PRELOAD = ["torch", "solar.api", "solar.frontend.torch", "solar.questions.batch"]


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
# Ray


INSTALL_HINT = "the Ray executor needs Ray: pip install 'solar[ray]' (or pip install ray)"


def require_ray():
    """The ``ray`` module, or an ImportError with the install hint."""
    try:
        import ray
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return ray


def _init(ray, address: str, ship_code: bool, num_cpus: int | None) -> bool:
    """Connect (or start); True when this call initialised Ray (and so must shut it down)."""
    if ray.is_initialized():
        return False
    kwargs: dict = {"include_dashboard": False, "log_to_driver": False}
    if ship_code:
        # the solar package itself (imported: this module is part of it) for Ray to ship
        kwargs["runtime_env"] = {"py_modules": [sys.modules[__name__.split(".")[0]]]}
    if address == "local":
        if num_cpus is not None:
            kwargs["num_cpus"] = num_cpus
        ray.init(**kwargs)
    else:
        try:
            ray.init(address=address, **kwargs)
        except ConnectionError as e:
            raise ConnectionError(
                f"no Ray cluster at {address!r}: start one with `ray start --head`, or use "
                "--ray local for a Ray instance on this machine"
            ) from e
    return True


def _apply(fn: Callable, *args):
    """The Ray task: ``fn(*args)`` (any picklable callable, builtins included)."""
    return fn(*args)


def ray_map(
    fn: Callable,
    items: Sequence[tuple],
    *,
    address: str = "auto",
    on_done: Callable[[int, object], None] | None = None,
    ship_code: bool = True,
    num_cpus: int | None = None,
    gpus_per_task: float = 0,
    fresh_worker: bool = False,
) -> list:
    """``[fn(*item) for item in items]`` with one Ray task per item, in input order.
    ``num_cpus``: the CPUs of a ``"local"`` instance (default: all). ``gpus_per_task``: the
    GPUs Ray reserves for each task (it sets ``CUDA_VISIBLE_DEVICES`` so a task sees only its
    own). ``fresh_worker``: each task in a new worker process (a task that leaves its CUDA
    context unusable cannot break the next). A task whose worker dies (after Ray's own
    retries) becomes the task function's crash result (see :func:`map_tasks`)."""
    ray = require_ray()
    owned = _init(ray, address, ship_code, num_cpus)
    try:
        options: dict = {"num_cpus": 1, "num_gpus": gpus_per_task}
        if fresh_worker:
            options["max_calls"] = 1
        remote = ray.remote(**options)(_apply)
        refs = [remote.remote(fn, *item) for item in items]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list = [None] * len(items)
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                i = index[ref]
                try:
                    results[i] = ray.get(ref)
                except ray.exceptions.RayError as e:  # worker died, OOM, task cancelled
                    results[i] = _crashed(fn, items[i], e)
                if on_done is not None:
                    on_done(i, results[i])
        return results
    finally:
        if owned:
            ray.shutdown()

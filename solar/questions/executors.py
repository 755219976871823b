"""Executors: run a picklable top-level task function over many items, in input order.

:func:`map_tasks` picks one (:func:`resolve_executor`):

- ``serial``: in this process, one task after another (``jobs=1``); a time limit stops Python
  code by a timer signal (:func:`call_with_time_limit`);
- ``process``: ``jobs`` local worker processes (default: the CPU count), each with one torch
  thread (tasks, not threads, use the cores) and one task at a time. Workers are forked (fast:
  they start with this process's imports) unless JAX is loaded here (JAX is multithreaded and
  must not be forked), then started by a fork server. A worker that dies (a crash, the OOM
  killer) fails only its own task, and one past the time limit is killed and its task
  recorded as timed out; a fresh worker takes the next task;
- ``ray`` (:func:`ray_map`, ``pip install solar[ray]``): one Ray task per item on the cluster at
  ``address``: ``"local"`` starts a Ray instance on this machine for the batch (shut down
  afterwards); ``"auto"`` connects to the running cluster (``ray start --head``,
  ``RAY_ADDRESS``); ``"HOST:PORT"`` or ``"ray://HOST:PORT"`` connects to that cluster. The
  driver's ``solar`` package is shipped to the workers (Ray's ``py_modules``), so every worker
  runs the same code as the driver; workers need PyTorch (and JAX for JAX problems) installed.
  Ray is imported only when this executor is asked for.

Results come back in input order whatever the executor, so every executor gives the same list.
A task function never raises (it wraps failures into its result); one whose worker dies becomes
``fn.crash_result(item[0], reason)`` when the function has one, and one past its time limit
``fn.crash_result(item[0], reason, status="timeout")``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait as mp_wait
from pathlib import Path

from solar.collector import full_collections_deferred, pause_gc_wanted, paused
from solar.frontend.extras import optional

EXECUTORS = ("serial", "process", "ray")


def one_line(e: BaseException) -> str:
    """``Type: first line of the message`` (an error the user's program raised: where, then
    that; see :class:`solar.api.ProgramError`)."""
    summary = getattr(e, "summary", None)
    if summary:
        return summary
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
    changes = {"path": str(path)}
    if result.error:  # name the file as the caller knows it
        changes["error"] = result.error.replace(str(local), str(path))
    return dataclasses.replace(result, **changes)


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


def _import_stack() -> None:
    """Import the analysis stack (before a task's clock starts: not part of its time)."""
    import solar.api  # noqa: F401
    import solar.frontend.torch  # noqa: F401


def _warm() -> None:
    """Worker initialiser: import the analysis stack once per worker, not per task."""
    import torch

    _import_stack()
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
    timeout: float | None = None,
) -> list:
    """``[fn(*item) for item in items]`` on the chosen executor (:func:`resolve_executor`), in
    input order. ``fn`` must be a picklable top-level function that does not raise (wrap
    failures into its result, as :func:`analyse_file` does); ``on_done(i, result)`` is called
    in this process as each item finishes (for progress bars). ``mp_context``: how process
    workers start (``fork``, ``forkserver``, ``spawn``; default: see the module docstring).
    ``timeout``: each task's time limit in seconds (None: none); a task past it becomes
    ``fn.crash_result(item[0], reason, status="timeout")`` (see :func:`timed_out`)."""
    kind = resolve_executor(jobs, ray, executor)
    items = list(items)
    done = on_done or (lambda i, r: None)
    if kind == "serial" or (kind == "process" and len(items) <= 1 and timeout is None):
        if timeout is not None:
            _import_stack()
        out = []
        for i, item in enumerate(items):
            out.append(call_with_time_limit(fn, item, timeout))
            done(i, out[-1])
        return out
    if kind == "ray":
        return ray_map(fn, items, address=ray or "auto", on_done=done, timeout=timeout)
    return _process_map(fn, items, jobs or os.cpu_count() or 1, done, mp_context, timeout)


# ----------------------------------------------------------------------------------------------
# time limits


#: the default time limit of one problem of a batch, in seconds (``--timeout``)
DEFAULT_TIMEOUT_S = 600.0


class TaskTimeout(BaseException):
    """A task running in this process passed its time limit. A BaseException, so that a
    task function's ``except Exception`` (which turns failures into results) lets it through."""


def timed_out(fn: Callable, item: tuple, timeout: float):
    """The result of a task stopped at its time limit: ``fn.crash_result(item[0], reason,
    status="timeout")`` when the task function has one, else a TimeoutError."""
    reason = f"no result within the time limit of {timeout:g} s (--timeout)"
    make = getattr(fn, "crash_result", None)
    return make(item[0], reason, status="timeout") if make is not None else TimeoutError(reason)


def call_with_time_limit(fn: Callable, item: tuple, timeout: float | None):
    """``fn(*item)`` in this process, stopped after ``timeout`` seconds by a SIGALRM timer
    (its result is then :func:`timed_out`'s). The timer interrupts Python code (a loop, a
    sleep, a blocking read), not one long call inside a C extension, which is stopped when it
    returns. No limit where there is no timer: off the main thread, on Windows, or with
    ``timeout=None``."""
    usable = (
        timeout is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        return fn(*item)

    def expire(signum, frame):  # type: ignore[no-untyped-def]
        raise TaskTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return fn(*item)
    except TaskTimeout:
        return timed_out(fn, item, timeout)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ----------------------------------------------------------------------------------------------
# local worker processes


def _start_method() -> str:
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and not any(m in sys.modules for m in ("jax", "jaxlib")):
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


# What a fork server imports once, so that the workers it forks start warm.
_PRELOAD = ["torch", "solar.api", "solar.frontend.torch", "solar.questions.batch"]


def _serve(conn, fn: Callable, pause: bool) -> None:
    """A worker process: warm up, then for each ``(i, item)`` received say ``("start", i)``
    and send ``("done", i, ok, fn(*item) or the exception)``; stop on ``None`` or EOF. The
    process is the batch's, so it tunes its collector (:mod:`solar.collector`): no full
    collection during a task (one may start between tasks), paused when ``pause`` (the
    driver's ``SOLAR_PAUSE_GC=1``, decided there: a fork server's children inherit the
    server's environment, not the driver's of now)."""
    _warm()
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        i, item = task
        conn.send(("start", i))
        try:
            with full_collections_deferred(), paused(pause):
                result = fn(*item)
            conn.send(("done", i, True, result))
        except Exception as e:  # fn broke its contract: the driver re-raises it
            conn.send(("done", i, False, e))


class _Worker:
    """One worker process of :func:`_process_map` and the task it runs (at most one, so a
    death or a time limit concerns that task alone)."""

    def __init__(self, ctx, fn: Callable) -> None:
        self.conn, child = ctx.Pipe()
        args = (child, fn, pause_gc_wanted())
        self.proc = ctx.Process(target=_serve, args=args, name="solar-worker")
        self.proc.start()
        child.close()
        self.task: int | None = None
        self.deadline: float | None = None

    def give(self, i: int, item: tuple) -> None:
        self.task, self.deadline = i, None  # the clock starts when the worker says "start"
        self.conn.send((i, item))

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                self.proc.kill()
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def _process_map(fn, items, jobs, done, mp_context, timeout) -> list:
    """``fn`` over ``items`` on ``jobs`` worker processes, one task per worker at a time: a
    worker that dies fails only its task, and one past ``timeout`` seconds (counted from when
    it started the task) is killed and its task recorded as timed out; a fresh worker
    replaces either."""
    ctx = multiprocessing.get_context(mp_context or _start_method())
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(_PRELOAD)  # no effect once the server runs
    results: list = [None] * len(items)
    queue = list(range(len(items)))[::-1]  # popped from the end: input order
    workers = [_Worker(ctx, fn) for _ in range(min(jobs, len(items)))]

    def finish(w: _Worker, result) -> None:
        i = w.task
        results[i], w.task, w.deadline = result, None, None
        done(i, result)

    def feed(w: _Worker) -> _Worker:
        if queue:
            w.give(queue[-1], items[queue.pop()])
        return w

    try:
        for w in workers:
            feed(w)
        while any(w.task is not None for w in workers):
            busy = [w for w in workers if w.task is not None]
            deadlines = [w.deadline for w in busy if w.deadline is not None]
            wait_s = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            mp_wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], wait_s)
            for k, w in enumerate(workers):
                if w.task is None:
                    continue
                try:
                    while w.task is not None and w.conn.poll():
                        msg = w.conn.recv()
                        if msg[0] == "start":
                            w.deadline = None if timeout is None else time.monotonic() + timeout
                        elif msg[2]:
                            finish(w, msg[3])
                            feed(w)
                        else:
                            raise msg[3]
                except (EOFError, OSError):
                    pass  # the worker died: its sentinel says so below
                if w.task is None:
                    continue
                if not w.proc.is_alive():
                    code = w.proc.exitcode
                    w.stop(kill=True)
                    finish(w, _crashed(fn, items[w.task], f"exit code {code}"))
                    workers[k] = feed(_Worker(ctx, fn)) if queue else w
                elif w.deadline is not None and time.monotonic() >= w.deadline:
                    i = w.task
                    w.stop(kill=True)
                    finish(w, timed_out(fn, items[i], timeout))
                    workers[k] = feed(_Worker(ctx, fn)) if queue else w
    finally:
        for w in workers:
            if not w.conn.closed:
                w.stop(kill=w.task is not None)
    return results


def _crashed(fn, item, why: str):
    """The result of a task whose worker process died: ``fn.crash_result(item[0], reason)``
    when the task function has one (problem-file tasks do), else a RuntimeError."""
    reason = f"the worker process died ({why}): a crash or out of memory"
    make = getattr(fn, "crash_result", None)
    return make(item[0], reason) if make is not None else RuntimeError(reason)


# ----------------------------------------------------------------------------------------------
# Ray


def require_ray():
    """The ``ray`` module, or a one-line :class:`~solar.frontend.extras.MissingExtra` naming
    the extra that installs it."""
    with optional("the Ray executor"):
        import ray
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


def _apply_limited(fn: Callable, timeout: float, *args):
    """The Ray task with a time limit: ``fn(*args)`` stopped after ``timeout`` seconds."""
    return call_with_time_limit(fn, args, timeout)


#: seconds (or the limit itself, when longer) the driver waits past a Ray task's time limit,
#: counted from its submission, before cancelling it: room for a worker's start-up
RAY_GRACE = 60.0


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
    timeout: float | None = None,
) -> list:
    """``[fn(*item) for item in items]`` with one Ray task per item, in input order.
    ``num_cpus``: the CPUs of a ``"local"`` instance (default: all). ``gpus_per_task``: the
    GPUs Ray reserves for each task (it sets ``CUDA_VISIBLE_DEVICES`` so a task sees only its
    own). ``fresh_worker``: each task in a new worker process (a task that leaves its CUDA
    context unusable cannot break the next). A task whose worker dies (after Ray's own
    retries) becomes the task function's crash result (see :func:`map_tasks`).

    ``timeout``: each task's time limit in seconds, kept twice. In the worker, a timer
    started with the task stops Python code at the limit (:func:`call_with_time_limit`; the
    worker's start-up is not counted). From the driver, a task that has not returned
    :data:`RAY_GRACE` later than the limit after its submission (a hang in C code, a worker
    that never started) is cancelled, its worker killed. Ray does not tell when a queued task
    starts, so only as many tasks are in flight as the cluster has slots for (its CPUs, or
    GPUs for GPU tasks, when this batch began). Either way the task becomes
    :func:`timed_out`'s result."""
    ray = require_ray()
    owned = _init(ray, address, ship_code, num_cpus)
    try:
        options: dict = {"num_cpus": 1, "num_gpus": gpus_per_task}
        if fresh_worker:
            options["max_calls"] = 1
        remote = ray.remote(**options)(_apply if timeout is None else _apply_limited)
        slots = len(items)
        if timeout is not None:
            have = ray.cluster_resources()
            per_gpu = have.get("GPU", 0) // gpus_per_task if gpus_per_task else None
            slots = max(1, int(per_gpu if per_gpu is not None else have.get("CPU", 1)))
        results: list = [None] * len(items)
        index: dict = {}
        deadline: dict = {}
        waiting = list(range(len(items)))[::-1]
        pending: list = []

        def submit() -> None:
            while waiting and len(pending) < slots:
                i = waiting.pop()
                args = items[i] if timeout is None else (timeout, *items[i])
                ref = remote.remote(fn, *args)
                index[ref] = i
                if timeout is not None:
                    deadline[ref] = time.monotonic() + timeout + max(RAY_GRACE, timeout)
                pending.append(ref)

        def finish(ref, result) -> None:
            i = index[ref]
            results[i] = result
            if on_done is not None:
                on_done(i, result)

        submit()
        while pending:
            wait_s = None
            if deadline:
                wait_s = max(0.0, min(deadline[r] for r in pending) - time.monotonic())
            ready, pending = ray.wait(pending, num_returns=1, timeout=wait_s)
            for ref in ready:
                deadline.pop(ref, None)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError as e:  # worker died, OOM, task cancelled
                    result = _crashed(fn, items[index[ref]], one_line(e))
                finish(ref, result)
            now = time.monotonic()
            for ref in [r for r in pending if deadline.get(r, math.inf) <= now]:
                ray.cancel(ref, force=True)
                pending.remove(ref)
                deadline.pop(ref)
                finish(ref, timed_out(fn, items[index[ref]], timeout))
            submit()
        return results
    finally:
        if owned:
            ray.shutdown()

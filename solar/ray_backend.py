"""Batch analysis on a Ray cluster: one Ray task per problem (``pip install solar[ray]``).

:func:`ray_map` is the ``ray`` executor of :func:`solar.batch.map_tasks`. ``address``:

- ``"local"``: start a Ray instance on this machine for the batch (shut down afterwards);
- ``"auto"``: connect to the running cluster (``ray start --head``, ``RAY_ADDRESS``);
- ``"HOST:PORT"`` or ``"ray://HOST:PORT"``: connect to that cluster.

The driver's ``solar`` package is shipped to the workers (Ray's ``py_modules``), so every
worker runs the same code as the driver; workers need PyTorch (and JAX for JAX problems)
installed. :func:`solar.batch.bound_paths` sends each problem file's text with its task, so
workers need not see the driver's file system. Results come back in input order, like the
local executors'. Ray is imported only here, and only when this executor is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

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
        import solar

        kwargs["runtime_env"] = {"py_modules": [solar]}
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
    retries) becomes the task function's crash result (see :func:`solar.batch.map_tasks`)."""
    from solar.batch import _crashed

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

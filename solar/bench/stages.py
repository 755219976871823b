"""One benchmark stage of one workload, measured in this process (the driver runs each in a
fresh Python process so that its time and peak memory are its own).

- ``trace``: the bare trace solar starts from, and nothing else: ``make_fx`` on fake tensors of
  the model called through ``torch.func.functional_call`` (parameters and buffers as graph
  inputs), ``jax.make_jaxpr`` for a JAX workload, or for a training step solar's make_fx of
  the step (parameters and optimizer state swapped for fakes, phases recorded) before lowering;
- ``bound``: ``solar.bound(model, inputs, hw="H100")``: trace (with each node's source line and
  module path), lowering to the Affine Loop IR, lifting to the einsum graph, the three bounds;
  timed in those parts (the lowering apart from the trace for PyTorch only);
- ``bound_nocache``: the same with the structure cache (:mod:`solar.cache`) off;
- ``serial`` / ``pool``: the examples corpus as a batch (:func:`solar.batch.bound_paths`), on
  one process or a pool of ``jobs`` workers.
"""

from __future__ import annotations

import resource
import sys
import time

STAGES = ("trace", "bound", "bound_nocache", "serial", "pool")


def peak_rss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024


def bare_make_fx(model, inputs):
    """``make_fx`` on fake tensors, parameters and buffers as graph inputs; nothing more."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    params, buffers = dict(model.named_parameters()), dict(model.named_buffers())
    tensors = [*params.values(), *buffers.values(), *inputs]
    with FakeTensorMode(allow_non_fake_inputs=True):
        fakes = [torch.empty(tuple(t.shape), dtype=t.dtype, device="cpu") for t in tensors]
    n_p, n_b = len(params), len(buffers)

    def run(*flat):
        p = dict(zip(params, flat[:n_p]))
        b = dict(zip(buffers, flat[n_p : n_p + n_b]))
        return torch.func.functional_call(model, (p, b), tuple(flat[n_p + n_b :]))

    with torch.no_grad():
        return make_fx(run, tracing_mode="fake")(*fakes)


def bare_trace(model, inputs) -> int:
    """The framework's own trace of ``model(*inputs)``; returns its number of graph nodes
    (fx nodes, or jaxpr equations at the top level)."""
    import torch

    if isinstance(model, torch.nn.Module):
        return len(bare_make_fx(model, inputs).graph.nodes)
    from solar.frontend.torch.training import is_training_step, trace_step_graph

    if is_training_step(model):  # a training step: its make_fx graph, before lowering
        return len(trace_step_graph(model, inputs).gm.graph.nodes)
    import jax

    return len(jax.make_jaxpr(model)(*inputs).eqns)


class Timers:
    """Wall time of solar.bound's parts, by wrapping the functions it calls."""

    def __init__(self) -> None:
        self.t: dict[str, float] = {}

    def wrap(self, owner, attr: str, key: str) -> None:
        fn = getattr(owner, attr)

        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.t[key] = self.t.get(key, 0.0) + time.perf_counter() - t0

        setattr(owner, attr, timed)


def run_stage(workload: str, stage: str, jobs: int = 1) -> dict:
    """Measure ``stage`` of ``workload`` (a :mod:`solar.bench.models` name) in this process."""
    import torch

    torch.set_num_threads(1)  # analysis is single-threaded; keep the measurement so
    if stage in ("serial", "pool"):
        return _corpus(stage, jobs)
    import solar
    import solar.api
    from solar.bench.models import build
    from solar.collector import gc_paused
    from solar.graph.cache import CACHE

    t0 = time.perf_counter()
    model, inputs = build(workload)
    out: dict = {"workload": workload, "stage": stage, "build_s": time.perf_counter() - t0}
    out["rss_before_mb"] = peak_rss_mb()
    timers = Timers()
    if stage.startswith("bound"):
        timers.wrap(solar.api, "trace", "trace")
        timers.wrap(solar.api, "lift", "lift")
        timers.wrap(solar.api, "analyze", "analyze")
        from solar.frontend.torch.training import is_training_step

        if isinstance(model, torch.nn.Module) or is_training_step(model):
            from solar.frontend.torch.lower import Lowerer

            timers.wrap(Lowerer, "run", "lower")
        CACHE.enabled = stage != "bound_nocache"
    t0, c0 = time.perf_counter(), time.process_time()
    if stage == "trace":
        out["graph_nodes"] = bare_trace(model, inputs)
    elif stage in ("bound", "bound_nocache"):
        with gc_paused():  # the stage's process is its own: SOLAR_PAUSE_GC=1 pauses it
            b = solar.bound(model, inputs, hw="H100", name=workload)
        out.update(kernels=len(b.kernels), fused_s=b.fused, cache_aware_s=b.cache_aware)
        out.update(unfused_s=b.unfused, cache=CACHE.stats())
    else:
        raise ValueError(f"unknown stage {stage!r}; one of {', '.join(STAGES)}")
    out["wall_s"] = time.perf_counter() - t0
    out["cpu_s"] = time.process_time() - c0
    out["peak_rss_mb"] = peak_rss_mb()
    if timers.t:
        t = timers.t
        out["parts"] = {"trace_s": t["trace"], "lift_s": t["lift"], "analyze_s": t["analyze"]}
        if "lower" in t:  # PyTorch: the trace's lowering to the IR, apart
            out["parts"].update(trace_s=t["trace"] - t["lower"], lower_s=t["lower"])
    return out


def _corpus(stage: str, jobs: int) -> dict:
    from solar.bench.models import ROOT
    from solar.problem import discover
    from solar.questions.batch import bound_paths

    files = discover([ROOT / "examples"])
    n = 1 if stage == "serial" else jobs
    t0, c0 = time.perf_counter(), time.process_time()
    results = bound_paths(files, "H100", jobs=n)
    wall = time.perf_counter() - t0
    status = {s: sum(r.status == s for r in results) for s in ("ok", "error", "skipped")}
    return {
        "workload": "corpus",
        "stage": stage,
        "jobs": n,
        "files": len(files),
        "wall_s": wall,
        "cpu_s_parent": time.process_time() - c0,
        "task_s_sum": sum(r.seconds for r in results),
        "peak_rss_mb_parent": peak_rss_mb(),
        **status,
        "errors": {r.name: r.error for r in results if r.status == "error"},
    }

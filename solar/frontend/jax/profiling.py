"""The kernels one run of a compiled JAX program launches, and how long each took, read from
the JAX profiler's own trace (``jax.profiler.ProfileData``: no TensorFlow, no TensorBoard).

Each repetition runs inside a ``TraceAnnotation`` (``solar_rep_<k>``) on the host; a kernel
belongs to the repetition whose annotation its start falls in (the run blocks until the
device is done, so each repetition's kernels start inside its annotation; should no launch
fall in any, the launches are split evenly, the repetitions being alike). Kernels are:

- on a GPU, the events of the device planes' stream lines (``/device:GPU:0``, ``Stream
  #13(...)``): the device kernel's own name (``loop_add_fusion``, a cuBLAS kernel's name) and
  the HLO instruction it ran (the ``hlo_op`` stat XLA attaches, the
  :class:`~solar.frontend.compiled.GeneratedKernel` ``name``), timed by CUPTI;
- on the CPU, the host events XLA's runtime records per instruction it runs as a task of
  its own (a library call such as a dot; fusions compiled inline into the program's host code
  record no event): name and ``hlo_op`` are the instruction's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ANNOTATION = "solar_rep_"


class Launch(NamedTuple):
    """One kernel launch: the kernel's name, its duration in seconds, and the HLO instruction
    it ran (``""`` when the profiler did not say)."""

    name: str
    seconds: float
    hlo_op: str = ""


def profile_jax(run: Callable[[], object], reps: int = 3) -> list[list[Launch]]:
    """``reps`` runs of ``run`` (a call that runs the compiled program once and waits for it,
    :attr:`CompiledTrace.run <solar.frontend.compiled.CompiledTrace.run>`) under the JAX
    profiler, after one warm-up run: per repetition, its kernel launches in start order."""
    import jax
    from jax.profiler import ProfileData

    if reps < 1:
        raise ValueError(f"reps must be at least 1, not {reps}")
    run()  # compiled and warm: the profile holds the program's kernels only
    with tempfile.TemporaryDirectory(prefix="solar_jax_profile_") as out:
        jax.profiler.start_trace(out)
        try:
            for k in range(reps):
                with jax.profiler.TraceAnnotation(f"{ANNOTATION}{k}"):
                    run()
        finally:
            jax.profiler.stop_trace()
        files = sorted(Path(out).rglob("*.xplane.pb"), key=lambda p: p.stat().st_mtime)
        if not files:
            raise RuntimeError("the JAX profiler wrote no trace (*.xplane.pb) for the runs")
        data = ProfileData.from_file(str(files[-1]))
    return launches(data, reps)


def launches(data: object, reps: int) -> list[list[Launch]]:
    """Per repetition, the kernel launches of a profile (``ProfileData``) whose repetitions
    ran inside ``solar_rep_<k>`` annotations."""
    windows: dict[int, tuple[float, float]] = {}
    events: list[tuple[float, Launch]] = []
    for plane in data.planes:  # type: ignore[attr-defined]
        device = plane.name.startswith("/device:") and "CPU" not in plane.name
        for line in plane.lines:
            for ev in line.events:
                if ev.name.startswith(ANNOTATION):
                    k = int(ev.name[len(ANNOTATION) :])
                    windows[k] = (ev.start_ns, ev.start_ns + ev.duration_ns)
                    continue
                launch = _launch(ev, device, line.name)
                if launch is not None:
                    events.append((ev.start_ns, launch))
    events.sort(key=lambda e: e[0])
    out: list[list[Launch]] = [[] for _ in range(reps)]
    for start, launch in events:
        for k, (lo, hi) in windows.items():
            if lo <= start <= hi and k < reps:
                out[k].append(launch)
                break
    if events and not any(out) and len(events) % reps == 0:
        # no launch inside any annotation (a device clock the profiler did not align with
        # the host's): the repetitions launched alike, so split the launches evenly
        n = len(events) // reps
        out = [[launch for _, launch in events[k * n : (k + 1) * n]] for k in range(reps)]
    return out


def _launch(ev: object, device: bool, line: str) -> Launch | None:
    """The launch an event records, or None (annotations, the runtime's own events)."""
    name: str = ev.name  # type: ignore[attr-defined]
    stats = dict(ev.stats)  # type: ignore[attr-defined]
    seconds = ev.duration_ns * 1e-9  # type: ignore[attr-defined]
    hlo_op = str(stats.get("hlo_op", ""))
    if device:
        if not line.startswith("Stream"):  # derived lines: XLA Ops, XLA Modules, Steps
            return None
        return Launch(name, seconds, hlo_op)
    if not hlo_op or name.startswith("end: ") or line == "python":
        return None
    return Launch(name, seconds, hlo_op)

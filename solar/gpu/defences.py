"""Defences against a solution that games its timing, after SOL-ExecBench's: a solution runs
in the scorer's process, so it could replace the timer or the scorer's own functions, start
threads that work after the timed region, or return an object that computes only when read.

:func:`take_snapshot` (before the solution is imported) records what the timing rests on
(:data:`GUARDED`: CUDA events, the host clock, synchronisation, solar's timing and comparison
functions and these checks themselves); :func:`check_untouched` after the import and after
every call finds any of them replaced; :func:`check_threads` finds threads the solution left
running; :func:`check_plain_tensors` finds outputs that are not plain ``torch.Tensor`` (a
subclass, a lazy proxy); :func:`check_one_stream` (CUDA only) finds work the solution put on
another CUDA stream, which the timed stream's events do not see. Each raises
:class:`GamedTiming` with one line naming what it found.
"""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass

#: the host clock as it was when solar imported this module (a solution cannot swap it out)
_clock = time.perf_counter

__all__ = [
    "GUARDED",
    "GamedTiming",
    "Snapshot",
    "check_one_stream",
    "check_plain_tensors",
    "check_threads",
    "check_untouched",
    "running_threads",
    "take_snapshot",
]


class GamedTiming(RuntimeError):
    """A solution caught gaming its timing; the message is one line."""


#: what the timing and the scoring rest on: (module, attribute path)
GUARDED: tuple[tuple[str, str], ...] = (
    ("torch.cuda", "Event.elapsed_time"),
    ("torch.cuda", "Event.record"),
    ("torch.cuda", "Event.synchronize"),
    ("torch.cuda", "synchronize"),
    ("time", "perf_counter"),
    ("solar.gpu.measure", "time_fn"),
    ("solar.gpu.measure", "L2Flush"),
    ("solar.gpu.correctness", "compare_outputs"),
    ("solar.gpu.score", "score_workload"),
    ("solar.gpu.score", "time_pair"),
    ("solar.gpu.defences", "check_untouched"),
    ("solar.gpu.defences", "check_threads"),
    ("solar.gpu.defences", "check_plain_tensors"),
    ("solar.gpu.defences", "check_one_stream"),
)


def _resolve(module: str, attr: str):
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class Snapshot:
    """The guarded objects as they were, and the threads alive, before the solution ran."""

    objects: tuple[tuple[str, object], ...]
    threads: frozenset[int]


def take_snapshot() -> Snapshot:
    """What :data:`GUARDED` names, now (call before importing the solution)."""
    objects = tuple((f"{m}.{a}", _resolve(m, a)) for m, a in GUARDED)
    return Snapshot(objects, running_threads())


def check_untouched(snap: Snapshot) -> None:
    """Raise :class:`GamedTiming` if anything :data:`GUARDED` names was replaced."""
    for (name, was), (m, a) in zip(snap.objects, GUARDED, strict=True):
        try:
            now = _resolve(m, a)
        except AttributeError:
            now = None
        if now is not was:
            raise GamedTiming(f"the solution replaced {name}, which the timing rests on")


def running_threads() -> frozenset[int]:
    """The threads alive now (to pass to :func:`check_threads` after a call)."""
    return frozenset(t.ident for t in threading.enumerate() if t.ident is not None)


def check_threads(before: frozenset[int]) -> None:
    """Raise :class:`GamedTiming` if a thread not in ``before`` is still running (work done
    after the timed region, or a thread that rewrites results or timers)."""
    new = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    if new:
        raise GamedTiming(
            f"the solution left {len(new)} thread(s) running ({new[0].name!r}): work outside "
            "the timed region"
        )


def check_plain_tensors(outputs: dict) -> None:
    """Raise :class:`GamedTiming` unless every output is exactly a ``torch.Tensor`` (a
    subclass or proxy could compute only when it is compared, outside the timed region)."""
    import torch

    for name, t in outputs.items():
        if type(t) is not torch.Tensor:
            raise GamedTiming(
                f"output {name!r} is a {type(t).__module__}.{type(t).__qualname__}, not a plain "
                "torch.Tensor: a lazy or proxy output"
            )


#: a call's device-wide time may exceed its timed-stream time by this factor plus
#: :data:`SYNC_SLACK_S` (the host's launch and synchronisation latency) before it is gaming
STREAM_FACTOR = 2.0
SYNC_SLACK_S = 100e-6


def check_one_stream(run, timed_s: float, device, reps: int = 3) -> None:
    """Raise :class:`GamedTiming` if ``run()``, waited for on the whole device (the host clock
    around the call and ``torch.cuda.synchronize``, best of ``reps``), takes more than
    :data:`STREAM_FACTOR` times ``timed_s`` (its time on the timed stream's CUDA events) plus
    :data:`SYNC_SLACK_S`: work queued on another stream, outside the timed region. The events
    start before the call is made, so host-side work inside the call is in ``timed_s``; only
    work the timed stream does not wait for is not. No check off CUDA."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return
    torch.cuda.synchronize(device)
    best = float("inf")
    for _ in range(reps):
        t0 = _clock()
        run()
        torch.cuda.synchronize(device)
        best = min(best, _clock() - t0)
    if best > STREAM_FACTOR * timed_s + SYNC_SLACK_S:
        raise GamedTiming(
            f"a call takes {best * 1e6:.1f} us to finish on the whole device but "
            f"{timed_s * 1e6:.1f} us on the timed stream: work on another CUDA stream"
        )

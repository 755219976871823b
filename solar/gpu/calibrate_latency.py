"""``solar calibrate``: the two latency floors of a GPU spec (:mod:`solar.hw.latency`).

* ``kernel_launch`` -- a chain of ``n`` launches of an empty kernel (Triton; a one-element
  in-place add through torch without Triton) on one stream, captured in a CUDA graph and
  replayed: the replay's time / ``n`` is the time per dependent launch. The minimum over
  replays is the floor (a replay cannot be faster than the GPU can run its chain); the median
  is reported beside it, with a chain of one-element torch adds for comparison.
* ``sm_sync`` -- two thread blocks (on two SMs) pass a counter back and forth through one word
  of global memory (an atomic write, volatile polls: both through the L2), ``n`` round trips
  in one kernel: the time / ``2n`` is one handoff from one SM to another. Every spin loop
  gives up after a bounded number of polls (the kernel always ends; a give-up marks the
  measurement failed).

On GPUs with thread-block clusters (compute capability 9.0 and later) the SMs of a cluster can
also hand a value over through distributed shared memory, which this Triton kernel cannot
measure and which may be faster than the L2: the spec written then keeps the smaller of the
measurement and the spec's own (lower-estimate) ``sm_sync``, and says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch

_KERNELS: dict[str, object] = {}


def _triton_kernels():
    if not _KERNELS:
        import triton
        import triton.language as tl

        @triton.jit
        def empty(x_ptr):
            pass

        @triton.jit
        def pingpong(flag_ptr, err_ptr, n_iter, max_spin):
            # block `pid` waits for the counter to reach 2i + pid, then hands it on: every
            # handoff is a write by one SM seen by a poll of the other (volatile loads go to
            # the L2; the write is an atomic, performed there)
            pid = tl.program_id(0)
            for i in range(n_iter):
                want = 2 * i + pid
                cur = tl.load(flag_ptr, volatile=True)
                spins = pid * 0  # an int32 scalar (a loop-carried tensor, not a constant)
                while (cur != want) & (spins < max_spin):
                    cur = tl.load(flag_ptr, volatile=True)
                    spins += 1
                if spins >= max_spin:
                    tl.atomic_xchg(err_ptr, 1)
                tl.atomic_xchg(flag_ptr, want + 1)

        _KERNELS.update(empty=empty, pingpong=pingpong)
    return _KERNELS


def _graph_of(fn: Callable[[], object], n: int, device) -> Callable[[], object]:
    """A CUDA graph of ``n`` calls of ``fn`` on one stream, as a replay function."""
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        fn()  # warm-up (compiles a Triton kernel) outside the capture
    torch.cuda.current_stream(device).wait_stream(side)
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(n):
            fn()
    return graph.replay


def _event_times(run: Callable[[], object], device, reps: int) -> list[float]:
    """Seconds of each of ``reps`` calls of ``run`` (CUDA events), after two warm-up calls."""
    for _ in range(2):
        run()
    torch.cuda.synchronize(device)
    out = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1e-3)
    return out


def per_launch(times: list[float], n: int) -> tuple[float, float]:
    """(minimum, median) seconds per launch of replays of ``n`` launches each."""
    if not times or n <= 0:
        raise ValueError("no timed replays")
    return min(times) / n, statistics.median(times) / n


def measure_launch(device, *, n: int = 1000, reps: int = 30) -> tuple[float, str]:
    """Seconds per dependent launch (minimum over replays) and how it was measured."""
    x = torch.zeros(1, device=device)
    tiny = _graph_of(lambda: x.add_(1.0), n, device)
    t_tiny = per_launch(_event_times(tiny, device, reps), n)
    try:
        empty = _triton_kernels()["empty"]
        run = _graph_of(lambda: empty[(1,)](x, num_warps=1), n, device)  # type: ignore[index]
        what = "an empty Triton kernel"
    except Exception:  # no Triton: the one-element add is the emptiest kernel torch has
        run, what = tiny, "a one-element torch add"
    lo, med = per_launch(_event_times(run, device, reps), n) if run is not tiny else t_tiny
    return lo, (
        f"CUDA-graph replay of {n} dependent launches of {what}: min {lo * 1e6:.3g} us, median "
        f"{med * 1e6:.3g} us per launch ({reps} replays); one-element torch adds: min "
        f"{t_tiny[0] * 1e6:.3g} us, median {t_tiny[1] * 1e6:.3g} us"
    )


def one_way(times: list[float], round_trips: int) -> float:
    """Seconds per one-way handoff: the fastest run's time / (2 x round trips)."""
    if not times or round_trips <= 0:
        raise ValueError("no timed runs")
    return min(times) / (2 * round_trips)


def measure_sync(device, *, round_trips: int = 20000, reps: int = 5) -> tuple[float, str]:
    """Seconds of one SM-to-SM handoff through the L2 (one way) and how it was measured."""
    pingpong = _triton_kernels()["pingpong"]
    flag = torch.zeros(1, dtype=torch.int32, device=device)
    err = torch.zeros(1, dtype=torch.int32, device=device)
    max_spin = 1 << 22
    times = []
    for _ in range(reps + 1):  # the first run compiles the kernel: not counted
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        flag.zero_()
        start.record()
        pingpong[(2,)](flag, err, round_trips, max_spin, num_warps=1)  # type: ignore[index]
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    if int(err.item()) or int(flag.item()) != 2 * round_trips:
        raise RuntimeError(
            "the two blocks did not alternate (a spin loop gave up): they were not both "
            "resident, or the GPU is shared"
        )
    s = one_way(times[1:], round_trips)
    return s, (
        f"a counter ping-ponged {round_trips} times between 2 thread blocks through one word of "
        f"global memory (Triton atomics): fastest of {reps} runs / {2 * round_trips} handoffs"
    )


def sync_to_write(measured: float, spec_value: float, compute_capability: str | None):
    """The ``sm_sync`` a calibrated spec gets, and a note when it is not the measurement."""
    try:
        major = int(str(compute_capability).split(".")[0])
    except ValueError:
        major = 0
    if major >= 9 and spec_value and spec_value < measured:
        return spec_value, (
            f"kept the spec's {spec_value * 1e6:.3g} us: the SMs of a cluster can also hand "
            "values over through distributed shared memory, which the L2 ping-pong does not "
            "measure"
        )
    return measured, ""

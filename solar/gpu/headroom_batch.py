"""Headroom of a folder of problem files: one program after another on this machine's GPU, or
one Ray task per program with a GPU each on a cluster (``solar headroom DIR --ray ADDRESS``,
the ``solar[ray]`` extra); and the ``solar headroom`` command.

A failing program never stops a batch: its entry records the stage (load, trace, measure) and
a one-line error; one still running after its time limit (``timeout``, default
:data:`~solar.questions.executors.DEFAULT_TIMEOUT_S`) is stopped and recorded as ``timeout``.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

from solar.fmt import jsonable
from solar.frozen import Draft, Frozen
from solar.gpu.headroom import LEVELS, HeadroomReport, measure_subject
from solar.gpu.measure import DeviceInfo, Timing, device_info, resolve_hw, time_fn
from solar.gpu.validate import (
    _free,
    _line,
    discover,
    load_real_problem,
    make_subject,
    progress,
)
from solar.hw import load_spec
from solar.questions.executors import (
    DEFAULT_TIMEOUT_S,
    call_with_time_limit,
    ray_map,
    run_on_copy,
)
from solar.viewable import Viewable

BATCH_SCHEMA = "solar.headroom-batch/1"

# ---------------------------------------------------------------------------------------------
# Batches


@dataclass
class BatchEntry:
    path: str
    name: str
    status: str  # "ok", "error", "timeout" or "skipped"
    stage: str | None = None  # where an error happened: load, trace, measure
    error: str | None = None
    report: HeadroomReport | None = None
    measured: Timing | None = None  # when only the source could be timed
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return jsonable(
            {
                "path": self.path,
                "name": self.name,
                "status": self.status,
                "stage": self.stage,
                "error": self.error,
                "seconds": self.seconds,
                "measured": self.measured.to_dict() if self.measured else None,
                "report": self.report.to_dict() if self.report else None,
            }
        )


@dataclass(frozen=True)
class BatchReport(Frozen, Viewable):
    """Every program of a batch measured on one GPU (frozen: tuples, read-only mappings)."""

    hw: str
    hw_key: str
    device: Mapping
    entries: tuple[BatchEntry, ...] = ()
    seconds: float = 0.0
    notes: tuple[str, ...] = ()

    def summary(self) -> dict:
        reps = [e.report for e in self.entries if e.report is not None]
        val: dict[str, int] = {}
        for r in reps:
            st = r.validation.status if r.validation else "not run"
            val[st] = val.get(st, 0) + 1
        kinds: dict[str, int] = {}
        for r in reps:
            for v in r.violations:
                kinds[f"{v.scope}:{v.kind}"] = kinds.get(f"{v.scope}:{v.kind}", 0) + 1
        geo = {}
        for lv in LEVELS:
            hs = [r.levels[lv] for r in reps if r.levels.get(lv)]
            geo[lv] = math.exp(statistics.fmean(math.log(h) for h in hs)) if hs else None
        return {
            "programs": len(self.entries),
            "ok": sum(e.status == "ok" for e in self.entries),
            "errors": sum(e.status == "error" for e in self.entries),
            "timeouts": sum(e.status == "timeout" for e in self.entries),
            "skipped": sum(e.status == "skipped" for e in self.entries),
            "validation": val,
            "violations": kinds,
            "programs_with_violations": sorted(
                r.program for r in reps if any(v.scope == "program" for v in r.violations)
            ),
            "geomean_headroom": geo,
            "seconds": self.seconds,
        }

    def to_dict(self) -> dict:
        return jsonable(
            {
                "schema": BATCH_SCHEMA,
                "hw": self.hw,
                "hw_key": self.hw_key,
                "device": self.device,
                "summary": self.summary(),
                "notes": list(self.notes),
                "programs": [e.to_dict() for e in self.entries],
            }
        )

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)


def headroom_problem(
    path: str | Path,
    hw="auto",
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
    overrides: Mapping[str, object] | None = None,
    strict_overrides: bool = True,
    precision: str | None = None,
    info: DeviceInfo | None = None,
    **kw,
) -> BatchEntry:
    """Measure one problem file; failures are recorded in the entry, never raised."""
    path = Path(path)
    t0 = time.perf_counter()
    entry = BatchEntry(str(path), path.stem, "error")
    try:
        entry.stage = "load"
        problem, notes = load_real_problem(
            path,
            device=device,
            seed=seed,
            overrides=overrides,
            strict_overrides=strict_overrides,
        )
        entry.stage = "trace"
        try:
            subject = make_subject(
                problem.model,
                problem.inputs,
                name=problem.name,
                precision=precision,
                path=str(path),
                notes=notes,
            )
        except Exception as e:
            entry.error = f"tracing failed: {type(e).__name__}: {_line(e)}"
            try:  # still time the source program
                model, args = problem.model, problem.inputs
                entry.measured = time_fn(
                    lambda: model(*args), device=device, budget_s=kw.get("budget_s", 0.5)
                )
            except Exception:
                pass
            return entry
        entry.stage = "measure"
        entry.report = measure_subject(subject, hw, info=info, **kw)
        entry.status = "ok"
        entry.stage = None
    except torch.cuda.OutOfMemoryError as e:
        entry.error = f"out of device memory: {_line(e)}"
    except Exception as e:
        entry.error = f"{type(e).__name__}: {_line(e)}"
    finally:
        entry.seconds = time.perf_counter() - t0
        _free(device)
    return entry


class DeviceLost(RuntimeError):
    """The CUDA context is unusable (a sticky error such as an illegal memory access)."""


def _check_device(device) -> None:
    if torch.device(device).type != "cuda":
        return
    try:
        torch.cuda.synchronize()
        x = torch.ones(8, device=device)
        if float((x + 1).sum()) != 16.0:
            raise RuntimeError("arithmetic check failed")
    except Exception as e:
        raise DeviceLost(f"the CUDA context is unusable after the last program: {_line(e)}") from e


def headroom_task(
    path: str,
    hw: object,
    device: str,
    seed: int,
    precision: str | None,
    overrides: Mapping[str, object] | None,
    options: Mapping[str, object],
    source: str | None = None,
) -> BatchEntry:
    """One problem of a distributed batch (a Ray task): :func:`headroom_problem` on this
    worker's device, from the file's ``source`` text when given (workers need not see the
    driver's file system). ``hw``: a name, a path, ``"auto"`` (this worker's GPU) or a
    spec's dict."""
    if source is not None:
        return run_on_copy(
            headroom_task, Path(path), source, hw, device, seed, precision, overrides, options
        )
    spec = resolve_hw(hw, torch.device(device))
    return headroom_problem(
        path,
        spec,
        device=device,
        seed=seed,
        precision=precision,
        overrides=overrides,
        strict_overrides=False,
        **options,
    )


def _task_crashed(path: str, reason: str, status: str = "error") -> BatchEntry:
    return BatchEntry(str(path), Path(path).stem, status, stage="measure", error=reason)


headroom_task.crash_result = _task_crashed  # type: ignore[attr-defined]


def headroom_paths(
    paths: Iterable[str | Path],
    hw="auto",
    *,
    device: str | torch.device | None = None,
    seed: int = 0,
    precision: str | None = None,
    budget_total_s: float | None = None,
    show_progress: bool = True,
    on_entry: Callable[[BatchEntry], None] | None = None,
    skip: Iterable[str] = (),
    overrides: Mapping[str, object] | None = None,
    ray: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    **kw,
) -> BatchReport:
    """Measure every problem file under ``paths``. A failing program never stops the batch.
    ``budget_total_s`` bounds the whole batch: each program gets a share of what is left for
    timing and profiling, and programs not reached are marked skipped. ``overrides`` set
    module-level constants of the files that define them. ``on_entry`` is called
    after each program (to save partial results); ``skip`` lists paths already done. Raises
    :class:`DeviceLost` when a program leaves the CUDA context unusable (the entries so far
    have been passed to ``on_entry``). ``ray``: run on a Ray cluster instead (see
    :func:`headroom_paths_ray`). ``timeout``: each program's time limit in seconds (None:
    none); in this process a timer signal stops Python code
    (:func:`solar.questions.executors.call_with_time_limit`), not one long GPU call."""
    if ray is not None:
        if budget_total_s is not None:
            raise ValueError(
                "a total time budget needs programs run one after another; with ray, give "
                "each program its own budget (budget_s)"
            )
        return headroom_paths_ray(
            paths, hw, ray=ray, device=device, seed=seed, precision=precision,
            show_progress=show_progress, on_entry=on_entry, skip=skip, overrides=overrides,
            timeout=timeout, **kw,
        )  # fmt: skip
    t_start = time.perf_counter()
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    info = device_info(device)
    spec = hw if hasattr(hw, "dram_bandwidth") else resolve_hw(hw, device)
    files = [p for p in discover(paths) if str(p) not in set(map(str, skip))]
    batch = Draft(BatchReport, spec.name, spec.key, info.to_dict(), [])
    for n, path in enumerate(progress(files, desc="headroom", enable=show_progress)):
        opts = dict(kw)
        if budget_total_s is not None:
            left = budget_total_s - (time.perf_counter() - t_start)
            share = left / max(len(files) - n, 1)
            if left <= 0:
                entry = BatchEntry(str(path), Path(path).stem, "skipped", error="time budget")
                batch.entries.append(entry)
                if on_entry:
                    on_entry(entry)
                continue
            opts.setdefault("budget_s", max(0.05, min(1.0, 0.15 * share)))
            if share < 1.5:
                opts["profile"] = False
            elif share < 4:
                opts.setdefault("profile_reps", 1)
        problem = partial(
            headroom_problem,
            device=device,
            seed=seed,
            precision=precision,
            info=info,
            overrides=overrides,
            strict_overrides=False,
            **opts,
        )
        problem.crash_result = _task_crashed  # type: ignore[attr-defined]
        entry = call_with_time_limit(problem, (path, spec), timeout)
        batch.entries.append(entry)
        if on_entry:
            on_entry(entry)
        if entry.status in ("error", "timeout"):
            _check_device(device)
    batch.seconds = time.perf_counter() - t_start
    return batch.build()


def headroom_paths_ray(
    paths: Iterable[str | Path],
    hw="auto",
    *,
    ray: str = "auto",
    device: str | torch.device | None = None,
    seed: int = 0,
    precision: str | None = None,
    show_progress: bool = True,
    on_entry: Callable[[BatchEntry], None] | None = None,
    skip: Iterable[str] = (),
    overrides: Mapping[str, object] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    **kw,
) -> BatchReport:
    """:func:`headroom_paths` on the Ray cluster at ``ray`` (``"auto"``, ``"local"`` or an
    address; :func:`solar.questions.executors.ray_map`): one task per problem file, its text
    shipped with it.
    On ``device="cuda"`` (the default: the workers' GPUs, whether or not this machine has
    one) each task holds one GPU and runs in a fresh worker process; ``hw="auto"`` is each
    worker's own GPU. Entries come back in file order."""
    t_start = time.perf_counter()
    device = torch.device(device or "cuda")
    files = [p for p in discover(paths) if str(p) not in set(map(str, skip))]
    if hasattr(hw, "dram_bandwidth"):
        hw_arg: object = hw.to_dict()  # type: ignore[attr-defined]
    elif str(hw) == "auto":
        hw_arg = "auto"
    else:
        load_spec(hw)  # a bad spec is one error here, not one per task
        hw_arg = str(hw)
    on_gpu = device.type == "cuda"
    items = [
        (str(f), hw_arg, str(device), seed, precision, overrides, dict(kw), f.read_text())
        for f in files
    ]
    bar = progress(range(len(items)), desc="headroom", enable=show_progress)
    ticks = iter(bar)

    def done(i: int, entry: BatchEntry) -> None:
        next(ticks, None)
        if on_entry:
            on_entry(entry)

    entries = ray_map(
        headroom_task,
        items,
        address=ray,
        on_done=done,
        gpus_per_task=1 if on_gpu else 0,
        fresh_worker=on_gpu,
        timeout=timeout,
    )
    next(ticks, None)  # close the bar
    reports = [e.report for e in entries if e.report is not None]
    names = sorted({r.hw for r in reports})
    if reports:
        hw_name, hw_key, info = ", ".join(names), reports[0].hw_key, reports[0].device
    else:
        spec = None if hw_arg == "auto" else load_spec(hw if hasattr(hw, "key") else hw_arg)
        hw_name, hw_key, info = (spec.name, spec.key, {}) if spec else ("auto", "auto", {})
    notes = [f"the workers' GPUs differ: {', '.join(names)}"] if len(names) > 1 else []
    notes.append(f"run on Ray ({ray}): one task per program, {len(files)} tasks")
    return BatchReport(hw_name, hw_key, info, entries, time.perf_counter() - t_start, notes)

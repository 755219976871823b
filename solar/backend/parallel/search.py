"""The best parallel plan of a program on ``N`` GPUs of one spec: a search over TP x PP x DP.

For every factorisation ``N = tp * pp * dp``:

- **tp**: which split groups to split ``tp`` ways. Candidates are the splittable groups that
  hold a weight axis (tensor parallelism splits weights) and whose extent ``tp`` divides; two
  groups that meet in one statement exclude each other. Each candidate is scored alone by the
  time its split saves on one GPU, ``(1 - 1/tp) x (compute of its statements + reading its
  weights)``, minus the time of the collectives it forces; the chosen set is built greedily by
  score and improved by swaps (one chosen group against the non-conflicting set it excludes:
  a model-width split against per-layer head and MLP splits);
- **dp**: the batch group split ``dp`` ways (it must divide the batch);
- **pp**: stage cuts from :func:`solar.backend.pipeline.partition`, and micro-batch counts
  ``m`` (powers of two dividing the batch per replica, or the one asked for).

Every candidate plan is then bounded exactly (:meth:`ParallelModel.evaluate`); the best at the
chosen level wins, among plans that fit in device memory when any does. The result is the
bound of the best plan found: a lower bound for that plan, not for every possible plan.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from solar.backend.parallel.assign import collectives_of
from solar.backend.parallel.model import ParallelModel, link_bandwidth
from solar.backend.parallel.parallel_bound import ParallelBound, Plan
from solar.backend.parallel.pipeline import candidate_cuts, crossings, partition
from solar.backend.result import Bound, level_name
from solar.backend.units import compute_time


def factorisations(n: int) -> list[tuple[int, int, int]]:
    """Every ``(tp, pp, dp)`` with ``tp * pp * dp == n``."""
    out = []
    for tp in range(1, n + 1):
        if n % tp:
            continue
        for pp in range(1, n // tp + 1):
            if (n // tp) % pp == 0:
                out.append((tp, pp, n // tp // pp))
    return out


def tp_groups(model: ParallelModel, spec, tp: int, batch: int | None) -> tuple[int, ...]:
    """The groups to split ``tp`` ways (see the module docstring); () when none pays."""
    if tp <= 1:
        return ()
    index = model.index
    tensors = model.g.info.tensors
    cand = [
        grp.id
        for grp in index.splittable
        if grp.id != batch
        and grp.extent % tp == 0
        and any(tensors[t].role == "weight" for t, _ in grp.axes)
    ]
    scores = {gid: _score(model, spec, gid, tp) for gid in cand}
    positive = sorted((gid for gid in cand if scores[gid] > 0), key=lambda x: (-scores[x], x))
    conflicts = _conflicts(model, positive)
    chosen = _greedy(positive, conflicts, set())
    improved = True
    while improved:
        improved = False
        for x in sorted(chosen):
            others = chosen - {x}
            free = [y for y in positive if y not in chosen and not conflicts[y] & others]
            swap = _greedy(free, conflicts, others)
            if sum(scores[y] for y in swap) > scores[x] * (1 + 1e-9):
                chosen = others | swap
                improved = True
                break
    return tuple(sorted(chosen))


def _score(model: ParallelModel, spec, gid: int, tp: int) -> float:
    g = model.g
    grp = model.index.groups[gid]
    ops: dict[str, float] = {}
    for n in grp.nodes:
        for cls, c in g.op(n).ops.items():
            ops[cls] = ops.get(cls, 0.0) + c
    reads = g.info.fused_io.reads
    weights = {t for t, _ in grp.axes if g.info.tensors[t].role == "weight"}
    saved = (
        compute_time(ops, spec).seconds
        + sum(reads.get(t, 0) for t in weights) / spec.dram_bandwidth
    )
    link = link_bandwidth(spec, tp)
    ic = spec.interconnect
    comm = sum(
        c.bytes_per_gpu(ic.reduces_in_network(c.n))
        for c in collectives_of(model.index, {gid: ("tp", tp)})
    )
    return (1 - 1 / tp) * saved - comm / link


def _conflicts(model: ParallelModel, groups: list[int]) -> dict[int, set[int]]:
    wanted = set(groups)
    out = {gid: set() for gid in groups}
    for n in model.index.op_nodes:
        here = model.index.node_groups[n] & wanted
        for a in here:
            out[a] |= here - {a}
    return out


def _greedy(order: list[int], conflicts: dict[int, set[int]], taken: set[int]) -> set[int]:
    chosen: set[int] = set()
    for gid in order:
        if not conflicts[gid] & (chosen | taken):
            chosen.add(gid)
    return chosen


def candidate_plans(
    model: ParallelModel,
    spec,
    gpus: int,
    *,
    micro_batches: int | None = None,
    batch: int | None = None,
    fixed: dict[str, int] | None = None,
    split: tuple[int, ...] | None = None,
) -> Iterator[Plan]:
    """Every plan the search bounds for ``gpus`` GPUs (see the module docstring); ``fixed``
    pins degrees (``{"tp": 2}``), ``split`` the groups tensor parallelism splits."""
    batch_extent = model.index.groups[batch].extent if batch is not None else 1
    n_k = len(model.g.info.kernels)
    fixed = {k: v for k, v in (fixed or {}).items() if v is not None}
    for tp, pp, dp in factorisations(gpus):
        if any(dict(tp=tp, pp=pp, dp=dp)[k] != v for k, v in fixed.items()):
            continue
        if dp > 1 and (batch is None or batch_extent % dp):
            continue
        if pp > n_k:
            continue
        if split is not None and tp > 1:
            groups = tuple(g for g in split if model.index.groups[g].splits(tp))
            if len(groups) < len(split):
                continue
        else:
            groups = tp_groups(model, spec, tp, batch)
        if tp > 1 and not groups:
            continue
        base = Plan(tp=tp, pp=1, dp=dp, tp_groups=groups, batch_group=batch)
        if pp == 1:
            yield base
            continue
        starts = _stage_starts(model, spec, base, pp)
        if starts is None:
            continue
        per_replica = batch_extent // dp
        counts = [micro_batches] if micro_batches else _powers_of_two(per_replica)
        for m in counts:
            if m >= 1 and per_replica % m == 0 and (m == 1 or batch is not None):
                yield Plan(tp, pp, dp, m, groups, batch, starts)


def _powers_of_two(n: int, cap: int = 64) -> list[int]:
    out, m = [], 1
    while m <= min(n, cap):
        if n % m == 0:
            out.append(m)
        m *= 2
    return out


def _stage_starts(model: ParallelModel, spec, base: Plan, pp: int) -> tuple[int, ...] | None:
    costs = model.costs(base)
    cross, _ = crossings(model.g, costs.storage)
    cuts = candidate_cuts(cross, pp)
    weights_at = [0.0] * len(costs.kernel_ops)
    for b, v in costs.io_bytes.items():
        ks = costs.io_kernels.get(b)
        if ks and model.g.info.tensors[b].role == "weight":
            weights_at[ks[0]] += v
    per_kernel = [
        compute_time(ops, spec).seconds + w / spec.dram_bandwidth
        for ops, w in zip(costs.kernel_ops, weights_at)
    ]
    return partition(per_kernel, cuts, pp)


def best_plan(
    model: ParallelModel,
    spec,
    gpus: int,
    *,
    level: str = "fused",
    micro_batches: int | None = None,
    batch: int | None = None,
    single: Bound | None = None,
    fixed: dict[str, int] | None = None,
    split: tuple[int, ...] | None = None,
) -> ParallelBound | None:
    """The plan of ``gpus`` GPUs with the lowest bound at ``level`` (fitting in memory when
    any plan does); None when no plan splits the program ``gpus`` ways. ``fixed`` pins
    degrees (``{"tp": 2}``), ``split`` the groups tensor parallelism splits."""
    level = level_name(level)
    best = None
    plans = candidate_plans(
        model, spec, gpus, micro_batches=micro_batches, batch=batch, fixed=fixed, split=split
    )
    for plan in plans:
        pb = model.evaluate(plan, spec, single)
        single = pb.single
        if best is None or _better(pb, best, level):
            best = pb
    return best


def _better(a: ParallelBound, b: ParallelBound, level: str) -> bool:
    """Fitting first, then the level's bound; ties by the other levels, then less memory."""
    if a.fits != b.fits:
        return a.fits
    for lv in (level, "cache_aware", "unfused"):
        ta, tb = a.time(lv), b.time(lv)
        if not math.isclose(ta, tb, rel_tol=1e-12):
            return ta < tb
    return (a.peak_bytes, a.plan.pp, a.plan.micro_batches) < (
        b.peak_bytes,
        b.plan.pp,
        b.plan.micro_batches,
    )

"""Speed-of-light bounds of one program on ``N`` GPUs of one spec under a parallel plan.

A :class:`Plan` is ``TP x PP x DP`` (``tp * pp * dp = N``):

- **tensor parallel** (``tp``): the split groups in ``tp_groups`` (:mod:`.groups`,
  e.g. a transformer's attention heads and MLP hidden units: Megatron's column- and
  row-parallel linears) are split ``tp`` ways; the collectives this forces come from the
  graph (:mod:`solar.backend.parallel.assign`);
- **data parallel** (``dp``): the batch group (axis 0 of the first input, unless told) is
  split ``dp`` ways; what reduces over the batch (weight gradients of a training step) is
  partial and all-reduced;
- **pipeline parallel** (``pp``, ``micro_batches = m``): the kernel order is cut into ``pp``
  stages (:mod:`solar.backend.parallel.pipeline`); the batch runs as ``m`` micro-batches; a stage
  sends what crosses its cut to the next.

The bound of a plan, per level (unfused, fused, cache-aware), is a lower bound on the time of
any implementation of *that plan* on GPUs with the spec's peaks and links:

- a stage's own work ``X_s``: the level's single-GPU rule applied to one GPU's share (its
  per-GPU ops, and DRAM bytes of its tensor shards);
- a stage's communication ``C_s`` = (bytes its collectives make one GPU send, plus the larger
  of what it sends to the next stage and receives from the previous) / the GPU's link
  bandwidth per direction (:mod:`solar.backend.parallel.collectives`); it may overlap the work, so
  each stage is at least ``max(X_s, C_s)``;
- pipeline fill and drain: the work of stage ``b`` that depends on what it receives and that
  what it sends depends on (its *path*, ``W_b``; :func:`solar.backend.pipeline.stage_paths`)
  happens between the first micro-batch's arrival and the last one's departure; before that
  the first micro-batch crosses the stages before ``b``, after it the last crosses those
  after ``b``. With ``τ_s`` a lower bound on one micro-batch along stage ``s``'s path (its
  batch-proportional compute, bytes and collectives / m; all of it when m = 1) and ``δ_c``
  one micro-batch crossing cut ``c``::

      T >= max_b  max( X_b,  C_b,  Σ_{s<b} (τ_s + δ) + W_b + Σ_{s>b} (δ + τ_s) )

  (with ``pp = 1``: ``max(X, C)``). For balanced stages this is the usual
  ``(m + pp - 1) / m`` of a stage's time: the bubble is ``(pp - 1) / (m + pp - 1)``. Work
  off the path (on weights alone, side outputs) may run during fill and drain.

The plan's per-GPU peak memory is the live-bytes rule (:mod:`solar.backend.memory`) over a
stage's kernels with tensor shards, and batch-carrying activations of one micro-batch: a
lower bound, so "does not fit" is proven and "fits" means not ruled out.
"""

from __future__ import annotations

import dataclasses
import math

from solar.backend.analyze import analyze
from solar.backend.cache_aware import BarrierIO, CacheAwareModel, ContractionIO
from solar.backend.memory import peak_memory
from solar.backend.narrow import recharge_narrow
from solar.backend.parallel.assign import ShardCosts, shard
from solar.backend.parallel.groups import SplitIndex
from solar.backend.parallel.parallel_bound import ParallelBound, Plan, StageBound
from solar.backend.parallel.pipeline import crossings, stage_paths, stage_ranges
from solar.backend.result import LEVELS, Bound
from solar.backend.units import compute_time
from solar.graph.types import Graph


class NoInterconnectError(ValueError):
    """The spec has no ``interconnect:`` block, so no communication bound."""


class ParallelModel:
    """One einsum graph prepared for plan evaluation: its split groups, a cache of shard
    costs per assignment, and its cache-aware I/O items. Spec-independent."""

    def __init__(self, g: Graph) -> None:
        # the graph the single-GPU bound analyses: dequantised contractions recharged
        g = recharge_narrow(g).graph
        self.g = g
        self.index = SplitIndex(g)
        self._costs: dict = {}
        self._io_items = CacheAwareModel(g).items

    def costs(self, plan: Plan) -> ShardCosts:
        assign = plan.assignment()
        key = (tuple(sorted(assign.items())), plan.batch_group)
        if key not in self._costs:
            self._costs[key] = shard(self.index, assign, plan.batch_group)
        return self._costs[key]

    def evaluate(self, plan: Plan, spec, single: Bound | None = None) -> ParallelBound:
        """The bounds of ``plan`` on GPUs of ``spec`` (see the module docstring)."""
        link = link_bandwidth(spec, plan.gpus)
        costs = self.costs(plan)
        n_k = len(self.g.info.kernels)
        ranges = stage_ranges(plan.starts, n_k)
        m = plan.micro_batches if plan.pp > 1 else 1
        cross, cross_b = crossings(self.g, costs.storage, costs.batch_tensors)
        stage_of = [0] * n_k
        for s, r in enumerate(ranges):
            for k in r:
                stage_of[k] = s
        colls = _collective_rows(costs, spec, link, stage_of)
        work = _Work(self, costs, spec, link, colls, m)
        last = len(ranges) - 1
        stages = [self._stage(work, r, cross, s == last) for s, r in enumerate(ranges)]
        # one micro-batch across each cut: what has no batch axis crosses whole
        deltas = [
            ((cross[r.start] - cross_b[r.start]) + cross_b[r.start] / m) / link for r in ranges
        ]
        deltas[0] = 0.0
        totals, by = _totals(stages, spec, deltas)
        single = single if single is not None else _single(self.g, spec)
        return ParallelBound(
            program=self.g.info.name,
            hw=spec.name,
            hw_key=spec.key,
            gpus=plan.gpus,
            plan=plan,
            tp_groups=[_group_row(self.index, gid) for gid in plan.tp_groups]
            if plan.tp > 1
            else [],
            batch=self.index.groups[plan.batch_group].label
            if plan.batch_group is not None
            else None,
            unfused=totals["unfused"],
            fused=totals["fused"],
            cache_aware=totals["cache_aware"],
            fused_bound_by=by,
            stages=stages,
            collectives=colls,
            peak_bytes=max(s.peak_bytes for s in stages),
            dram_capacity=spec.dram_capacity,
            ideal_s=_ideal(single, spec, plan.gpus),
            link_bandwidth=link,
            bubble=(plan.pp - 1) / (m + plan.pp - 1),
            assumptions=_assumptions(spec, plan, link),
            single=single,
        )

    def _stage(self, work: _Work, r: range, cross, last: bool) -> StageBound:
        kernels = self.g.info.kernels
        whole = work.levels(r)
        send = cross[r.stop] if r.stop < len(cross) else 0.0
        recv = cross[r.start] if r.start > 0 else 0.0
        comm = (work.coll_bytes(r) + max(send, recv)) / work.link
        to_next, to_end = stage_paths(self.g, r)
        costs, m = work.costs, work.m
        mb_sizes = {
            b: v / m
            if b in costs.batch_tensors
            and self.g.info.tensors[b].role not in ("input", "weight", "constant")
            else v
            for b, v in costs.storage.items()
        }
        peak = peak_memory(self.g, sizes=mb_sizes, span=(r.start, r.stop)).peak_bytes
        return StageBound(
            kernels[r.start].name,
            kernels[r.stop - 1].name,
            len(r),
            whole["compute"],
            whole["compute_by"],
            whole["bytes_fused"],
            whole["bytes_cache_aware"],
            sum(costs.kernel_bytes[k] for k in r),
            whole["unfused"],
            comm,
            _pick(work.levels(to_end if last else to_next), LEVELS),
            work.microbatch(to_next),
            work.microbatch(to_end),
            peak,
        )

    def _extra_bytes(self, costs: ShardCosts, kernels, capacity: float) -> float:
        """Cache-aware traffic beyond the compulsory bytes, per GPU, for the I/O items of
        the stage's nodes: a contraction split ``f`` ways runs ``V/f`` products (its other
        facts stay upper bounds; the fewest products of an output element is dropped when a
        reduced rank is split); a split barrier is not charged (sound: less traffic)."""
        extra = 0.0
        for item in self._io_items:
            k = self.index.node_kernel.get(item.node)
            if k is None or k not in kernels:
                continue
            f = costs.node_factor.get(item.node, 1)
            if isinstance(item, BarrierIO):
                if f == 1:
                    extra += max(0.0, item.traffic_bytes(capacity) - item.compulsory_bytes)
                continue
            if f > 1:
                item = _split_contraction(item, f, self._partial(costs, item.node))
            extra += max(0.0, item.traffic_bytes(capacity) - item.compulsory_bytes)
        return extra

    def _partial(self, costs: ShardCosts, node: str) -> bool:
        out = next(a for a in self.index.accesses[node] if a.write)
        return any(gid not in out.linked for gid in costs.split[node].values())


def _split_contraction(item: ContractionIO, f: int, partial: bool) -> ContractionIO:
    seg = dataclasses.replace(
        item.segment,
        volume=item.segment.volume / f,
        k_min=None if partial else item.segment.k_min,
    )
    return dataclasses.replace(item, volume=item.volume / f, segment=seg)


def link_bandwidth(spec, gpus: int) -> float:
    """Per-GPU link bandwidth per direction for a plan of ``gpus`` GPUs of ``spec``."""
    ic = spec.interconnect
    if gpus <= 1:
        return ic.link_bandwidth if ic is not None else math.inf
    if ic is None:
        raise NoInterconnectError(
            f"hw spec {spec.key}: no 'interconnect:' block, so no bound for {gpus} GPUs; add one "
            "(see h100_sxm.yaml in solar/hw/catalog/)"
        )
    if gpus > ic.host_gpus:
        raise ValueError(
            f"{gpus} GPUs of {spec.name}: one host holds at most {ic.host_gpus} "
            "(interconnect.host_gpus); plans across hosts are not modelled"
        )
    return ic.link_bandwidth


def _collective_rows(costs: ShardCosts, spec, link: float, stage_of) -> list[dict]:
    ic = spec.interconnect
    rows = []
    for c in costs.collectives:
        in_net = ic.reduces_in_network(c.n) if ic is not None else False
        b = c.bytes_per_gpu(in_net)
        rows.append(
            {
                **c.to_dict(),
                "in_network": in_net,
                "bytes_per_gpu": b,
                "time_s": b / link,
                "stage": stage_of[c.kernel],
            }
        )
    return rows


def _pick(d: dict, keys) -> dict:
    return {k: d[k] for k in keys}


class _Work:
    """Per-GPU work of a set of kernels under one plan, per level (seconds): compute, DRAM
    bytes, and the collectives that happen in them (they may overlap, so the max)."""

    def __init__(self, model: ParallelModel, costs: ShardCosts, spec, link, colls, m: int):
        self.model, self.costs, self.spec, self.link, self.colls, self.m = (
            model,
            costs,
            spec,
            link,
            colls,
            m,
        )

    def coll_bytes(self, kernels, batch_only: bool = False) -> float:
        ks = set(kernels)
        return sum(
            c["bytes_per_gpu"]
            for c in self.colls
            if c["kernel"] in ks and (c["batch"] or not batch_only)
        )

    def io(self, kernels, batch_only: bool = False) -> float:
        ks = set(kernels)
        return sum(
            v
            for b, v in self.costs.io_bytes.items()
            if (not batch_only or b in self.costs.batch_tensors)
            and any(k in ks for k in self.costs.io_kernels.get(b, ()))
        )

    def levels(self, kernels) -> dict:
        spec, costs = self.spec, self.costs
        bw = spec.dram_bandwidth
        ct = compute_time(costs.ops(kernels), spec)
        fused_b = self.io(kernels)
        ca_b = fused_b + self.model._extra_bytes(costs, set(kernels), spec.on_chip_capacity)
        comm = self.coll_bytes(kernels) / self.link
        unfused = sum(
            max(compute_time(costs.kernel_ops[k], spec).seconds, costs.kernel_bytes[k] / bw)
            for k in kernels
        )
        return {
            "compute": ct.seconds,
            "compute_by": ct.bound_by,
            "bytes_fused": fused_b,
            "bytes_cache_aware": ca_b,
            "fused": max(ct.seconds, fused_b / bw, comm),
            "cache_aware": max(ct.seconds, ca_b / bw, comm),
            "unfused": max(unfused, comm),
        }

    def microbatch(self, kernels) -> float:
        """A lower bound on one micro-batch through ``kernels``: with one micro-batch all of
        their work; with ``m``, their batch-proportional work / m (work without the batch axis
        may be done once, at any time)."""
        if self.m == 1:
            return self.levels(kernels)["fused"]
        compute = compute_time(self.costs.batch_ops(kernels), self.spec).seconds
        return (
            max(
                compute,
                self.io(kernels, batch_only=True) / self.spec.dram_bandwidth,
                self.coll_bytes(kernels, batch_only=True) / self.link,
            )
            / self.m
        )


def _totals(stages: list[StageBound], spec, deltas: list[float]) -> tuple[dict[str, float], str]:
    """Each level's plan bound, ``max_b max(X_b, C_b, fill_b + W_b + drain_b)``, and what binds
    the fused one (``link``, ``dram`` or a compute unit; ``+ pipeline`` when fill and drain
    add to it). ``deltas[c]``: one micro-batch across the cut before stage ``c``."""
    bw = spec.dram_bandwidth
    work = {
        "unfused": [s.unfused_work_s for s in stages],
        "fused": [max(s.compute_s, s.bytes_fused / bw) for s in stages],
        "cache_aware": [max(s.compute_s, s.bytes_cache_aware / bw) for s in stages],
    }
    totals, by = {}, "none"
    for level, xs in work.items():
        best, why = 0.0, "none"
        for b, (x, st) in enumerate(zip(xs, stages)):
            fill = sum(s.fill_s for s in stages[:b]) + sum(deltas[1 : b + 1])
            drain = sum(s.drain_s for s in stages[b + 1 :]) + sum(deltas[b + 1 :])
            piped = fill + st.path_s[level] + drain if len(stages) > 1 else 0.0
            t = max(x, st.comm_s, piped)
            if t > best:
                best = t
                if st.comm_s >= max(x, piped):
                    why = "link"
                else:
                    why = "dram" if st.bytes_fused / bw >= st.compute_s else st.compute_by
                    why += " + pipeline" if piped > x else ""
        totals[level] = best
        if level == "fused":
            by = why
    return totals, by


def _single(g, spec) -> Bound:
    return analyze(g, spec)


def _ideal(single: Bound, spec, n: int) -> float:
    compute = compute_time(single.flops, spec).seconds
    return max(compute, single.bytes_fused / spec.dram_bandwidth) / n


def _group_row(index: SplitIndex, gid: int) -> dict:
    grp = index.groups[gid]
    kernels = sorted({index.node_kernel[n] for n in grp.nodes})
    names = [index.g.info.kernels[k].name for k in kernels]
    return {
        "label": grp.label,
        "extent": grp.extent,
        "statements": len(grp.nodes),
        "kernels": names,
    }


def _assumptions(spec, plan: Plan, link: float) -> list[str]:
    ic = spec.interconnect
    out = [
        f"{plan.gpus} GPUs of {spec.name} in one host, {plan.describe()}",
        (
            f"links: {ic.describe()}; a GPU sends and receives at most {link / 1e9:g} GB/s "
            "each way (NVLink + PCIe: every byte crosses one of them)"
            if ic is not None
            else "one GPU: no communication"
        ),
        "collectives: all-gather and reduce-scatter move (n-1)/n of the tensor per GPU; "
        "all-reduce 2(n-1)/n without in-network reduction, 1x with NVLink SHARP; all-to-all "
        "(n-1)/n^2; lower bounds for any algorithm (solar/backend/parallel/collectives.py); "
        "latency not counted",
        "split: statements of a split group run 1/t of their instances; partial results are "
        "reduced where a reader needs them whole; graph inputs and weights start where the "
        "plan wants them; graph outputs may stay sharded (partial ones are all-reduced)",
        "per GPU: compute of its share; DRAM bytes of its shards (the busiest GPU touches at "
        "least its share); communication may overlap compute, so each stage is the max",
        *spec.notes,
        "a lower bound for this plan; another split of the same program may be faster "
        "(ideal: a perfect split with no communication)",
    ]
    if plan.pp > 1:
        out.append(
            f"pipeline: {plan.pp} stages, {plan.micro_batches} micro-batches; bubble "
            f"(pp-1)/(m+pp-1) = {(plan.pp - 1) / (plan.micro_batches + plan.pp - 1):.3g} for "
            "balanced stages; the bound adds, to the bottleneck stage, one micro-batch through "
            "every other stage and across every cut"
        )
    out.append(
        "peak memory per GPU: live bytes of a stage's kernels with tensor shards and one "
        "micro-batch of activations; weights and inputs resident; a lower bound"
    )
    return out

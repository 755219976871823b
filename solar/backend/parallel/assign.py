"""What splitting some groups across GPUs forces: per-GPU work, bytes, memory and the
collectives it cannot avoid. Spec-independent; :mod:`.bound` turns it into time.

An *assignment* maps split groups (:mod:`solar.backend.parallel.groups`) to a mesh axis and its
degree: ``{gid: ("tp", 2), batch_gid: ("dp", 4)}``. A statement that iterates an assigned
group of mesh axis ``μ`` runs ``1/deg(μ)`` of its instances (at most one group per mesh axis
per statement: two would not be one block per GPU). Then, per tensor and mesh axis:

- its state: **sharded** when every writer splits a group that indexes one of its axes,
  **partial** when a writer splits a group it does not index (a reduced rank, a scatter), else
  **whole** (also when a writer splits it through an unaligned view: counting no collective
  there keeps the bound low, so sound);
- a reader reads it **locally** when it splits a group the access indexes, else needs it
  whole; from these the collective (:mod:`.collectives`): partial -> all-reduce
  (reduce-scatter when every reader is local), sharded -> all-gather (all-to-all when read
  locally on another group); graph inputs and weights are placed sharded where every reader
  is local, whole otherwise, at no cost; graph outputs may stay sharded, partial outputs are
  all-reduced.

Per-GPU bytes of a tensor in a kernel (or in the fused program): its footprint ``F`` times
``1/deg(μ)`` for each mesh axis ``μ`` on which some access of it is split. The GPUs that
differ only along those axes together touch all of ``F``, so the busiest touches at least
that share (pigeonhole); along any other axis every GPU repeats the same accesses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from solar.backend.parallel.collectives import Collective
from solar.backend.parallel.groups import SplitIndex

WHOLE, PARTIAL = "whole", "partial"


class PlanConflict(ValueError):
    """Two groups of one mesh axis meet in one statement."""


@dataclass
class ShardCosts:
    """Per-GPU costs of one assignment (spec-independent)."""

    degrees: dict[str, int]
    split: dict[str, dict[str, int]]  # node -> mesh -> gid it splits
    kernel_ops: list[dict[str, float]]  # per GPU, per kernel
    kernel_batch_ops: list[dict[str, float]]  # the part iterating the batch group
    kernel_bytes: list[float]  # per GPU, per kernel, DRAM bytes read + written (unfused)
    io_bytes: dict[str, float]  # graph input/weight/output storage -> per-GPU fused bytes
    io_kernels: dict[str, list[int]]  # ... -> the kernels touching it
    storage: dict[str, float]  # storage tensor -> per-GPU bytes it occupies
    states: dict[str, dict[str, str]]  # storage -> mesh -> whole | partial | sharded:<gid>
    collectives: list[Collective]
    batch_tensors: set[str] = field(default_factory=set)  # storage with a batch-group axis
    node_factor: dict[str, int] = field(default_factory=dict)

    def ops(self, kernels=None) -> dict[str, float]:
        return _sum_ops(self.kernel_ops, kernels)

    def batch_ops(self, kernels=None) -> dict[str, float]:
        return _sum_ops(self.kernel_batch_ops, kernels)


def _sum_ops(rows, kernels) -> dict[str, float]:
    total: dict[str, float] = {}
    for i in kernels if kernels is not None else range(len(rows)):
        for cls, n in rows[i].items():
            total[cls] = total.get(cls, 0.0) + n
    return total


def shard(
    index: SplitIndex, assign: dict[int, tuple[str, int]], batch: int | None = None
) -> ShardCosts:
    """Costs of ``assign`` (group id -> (mesh axis, degree)) on ``index``'s graph; ``batch``:
    the batch group (for what micro-batches shrink)."""
    g = index.g
    degrees = _degrees(assign)
    split, factor = _split_nodes(index, assign)
    kernels = g.info.kernels
    kernel_ops = [dict() for _ in kernels]
    kernel_batch_ops = [dict() for _ in kernels]
    shares: dict[tuple[int, str, bool], set[str]] = {}  # (kernel, base, write) -> split meshes
    io_meshes: dict[str, set[str]] = {}
    io_kernels: dict[str, list[int]] = {}
    for n in index.op_nodes:
        k = index.node_kernel[n]
        f = factor.get(n, 1)
        in_batch = batch is not None and batch in index.node_groups[n]
        for cls, cnt in g.op(n).ops.items():
            kernel_ops[k][cls] = kernel_ops[k].get(cls, 0.0) + cnt / f
            if in_batch:
                kernel_batch_ops[k][cls] = kernel_batch_ops[k].get(cls, 0.0) + cnt / f
        mine = split.get(n, {})
        for a in index.accesses[n]:
            meshes = {m for m, gid in mine.items() if gid in a.linked}
            shares.setdefault((k, a.base, a.write), set()).update(meshes)
            if a.role in ("input", "weight", "constant", "output"):
                io_meshes.setdefault(a.base, set()).update(meshes)
                ks = io_kernels.setdefault(a.base, [])
                if not ks or ks[-1] != k:
                    ks.append(k)

    def scale(meshes) -> float:
        s = 1.0
        for m in meshes:
            s /= degrees[m]
        return s

    kernel_bytes = []
    for k, kern in enumerate(kernels):
        total = 0.0
        for write, io in ((False, kern.reads), (True, kern.writes)):
            for base, nbytes in io.items():
                total += nbytes * scale(shares.get((k, base, write), ()))
        kernel_bytes.append(total)
    fio = g.info.fused_io
    io_bytes: dict[str, float] = {}
    for io in (fio.reads, fio.writes):
        for base, nbytes in io.items():
            io_bytes[base] = io_bytes.get(base, 0.0) + nbytes * scale(io_meshes.get(base, ()))
    states = _states(index, split, degrees)
    storage = {}
    for base, info in g.info.tensors.items():
        sharded = [m for m, s in states.get(base, {}).items() if s.startswith("sharded")]
        storage[base] = info.bytes * scale(sharded)
    batch_tensors = (
        {t for (t, _), gid in index.axis_group.items() if gid == batch}
        if batch is not None
        else set()
    )
    colls = _collectives(index, split, states, degrees, storage, batch_tensors)
    return ShardCosts(
        degrees,
        split,
        kernel_ops,
        kernel_batch_ops,
        kernel_bytes,
        io_bytes,
        io_kernels,
        storage,
        states,
        colls,
        batch_tensors,
        factor,
    )


def collectives_of(index: SplitIndex, assign: dict[int, tuple[str, int]]) -> list[Collective]:
    """Only the collectives of ``assign`` (cheap: it visits the split statements' tensors)."""
    degrees = _degrees(assign)
    split, _ = _split_nodes(index, assign)
    states = _states(index, split, degrees)
    tensors = index.g.info.tensors
    storage = {}
    for base, per in states.items():
        s = tensors[base].bytes
        for m, st in per.items():
            if st.startswith("sharded"):
                s /= degrees[m]
        storage[base] = s
    return _collectives(index, split, states, degrees, storage, set())


def _degrees(assign) -> dict[str, int]:
    degrees: dict[str, int] = {}
    for mesh, deg in assign.values():
        if degrees.setdefault(mesh, deg) != deg:
            raise ValueError(f"mesh axis {mesh} given two degrees ({degrees[mesh]}, {deg})")
    return degrees


def _split_nodes(index: SplitIndex, assign):
    """Statement -> {mesh: group it splits} and its work factor, for split statements only."""
    split: dict[str, dict[str, int]] = {}
    factor: dict[str, int] = {}
    for gid, (mesh, deg) in assign.items():
        for n in index.groups[gid].nodes:
            mine = split.setdefault(n, {})
            if mesh in mine:
                a, b = index.groups[mine[mesh]].label, index.groups[gid].label
                raise PlanConflict(f"{n} iterates two {mesh} groups ({a}, {b})")
            mine[mesh] = gid
            factor[n] = factor.get(n, 1) * deg
    return split, factor


def _write_state(split_n: dict[str, int], acc, mesh: str) -> str:
    gid = split_n.get(mesh)
    if gid is None:
        return WHOLE
    if gid in acc.linked:
        return f"sharded:{gid}"
    return WHOLE if gid in acc.touched else PARTIAL


def _states(index: SplitIndex, split, degrees) -> dict[str, dict[str, str]]:
    """Storage -> mesh -> state, for the tensors split statements touch (others: whole)."""
    bases = {a.base for n in split for a in index.accesses[n]}
    out: dict[str, dict[str, str]] = {}
    for base in bases:
        writers = index.writers.get(base)
        readers = index.readers.get(base, [])
        per = {}
        for mesh in degrees:
            if writers:
                states = {_write_state(split.get(n, {}), a, mesh) for n, a in writers}
                if PARTIAL in states:
                    per[mesh] = PARTIAL
                elif len(states) == 1:
                    per[mesh] = states.pop()
                else:
                    per[mesh] = WHOLE
            else:  # placed: sharded when every reader reads it locally on one group
                groups = {split.get(n, {}).get(mesh) for n, _ in readers}
                local = all(split.get(n, {}).get(mesh) in a.linked for n, a in readers)
                per[mesh] = f"sharded:{groups.pop()}" if local and len(groups) == 1 else WHOLE
        out[base] = per
    return out


def _collectives(index, split, states, degrees, storage, batch_tensors) -> list[Collective]:
    tensors = index.g.info.tensors
    out: list[Collective] = []
    for base in sorted(states):
        writers = index.writers.get(base)
        if not writers:
            continue
        readers = index.readers.get(base, [])
        last = max(index.node_kernel[n] for n, _ in writers)
        whole_bytes = tensors[base].bytes or 1
        for mesh, state in states[base].items():
            if state == WHOLE:
                continue
            wanting = [a for n, a in readers if split.get(n, {}).get(mesh) not in a.linked]
            output = tensors[base].role == "output"
            # the part of the tensor the readers need: the largest single read (a slice needs
            # only its part moved); a graph output needs all of it
            need = 1.0 if output else max((a.footprint for a in wanting), default=0) / whole_bytes
            if state == PARTIAL:
                if wanting or output:
                    kind = "all-reduce"
                elif readers:
                    kind = "reduce-scatter"
                    need = max(a.footprint for _, a in readers) / whole_bytes
                else:
                    continue
                held = storage[base]  # a partial buffer is whole along this mesh axis
            else:
                gid = int(state.split(":")[1])
                others = {split.get(n, {}).get(mesh) for n, _ in readers} - {gid}
                if wanting:
                    kind = "all-gather"
                elif others:
                    kind, need = "all-to-all", 1.0
                else:
                    continue
                held = storage[base] * degrees[mesh]  # the whole tensor along this mesh axis
            out.append(
                Collective(
                    base,
                    kind,
                    mesh,
                    degrees[mesh],
                    held,
                    last,
                    base in batch_tensors,
                    min(need, 1.0),
                )
            )
    return out

"""Which ranks of a program can be split across GPUs: split groups, from the einsum graph.

A rank of the graph (one letter: a loop dim of every statement it appears in and the tensor
axes those dims index directly) can be split into ``t`` parts, one per GPU: each GPU runs the
statement instances of its part and holds its part of every tensor axis the rank indexes.
Ranks split together when a view links them: a view axis and an axis of its storage tensor
with the same *outer* boundary in memory (the head axis of ``q.view(b, s, heads, d)`` and the
feature axis of the linear that wrote ``q``; the token axis of ``x.view(b * s, d)`` and the
batch axis of ``x``): splitting either into ``t`` contiguous blocks splits the storage the
same way. A **split group** is a class of ranks and storage axes under direct indexing and
these links; a degree ``t`` may split it when it divides every extent in it.

Not splittable (``SplitGroup.reason`` says why): a group holding a kernel's sequential loop, a
scan axis or the row of an extern routine (their instances depend on each other), two ranks of
one statement or two axes of one tensor (the split would not be one block per GPU), or views
that impose different blocks on one index space (a whole-axis view and slice views of the same
axis). Slices of one axis (a fused QKV projection split into q, k and v) impose one block of
each slice per GPU, Megatron's interleaved layout; the statements that read or write the axis
directly take the same partition (a statement may run any subset of a rank's indices).

What a split forces, and its costs, are :mod:`solar.backend.parallel.assign`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from solar.graph.types import ExternNode, Graph, ScanNode, ViewInfo

RESIDENT = ("input", "weight", "constant")


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


@dataclass(frozen=True)
class AccessInfo:
    """One access of one statement, as the split analysis sees it."""

    base: str  # storage tensor
    role: str
    write: bool
    linked: frozenset[int]  # groups that index an axis of the storage through this access
    touched: frozenset[int]  # groups of every rank in the access (linked or not)
    footprint: int = 0  # bytes of the storage a read touches (0 when unknown or a write)


@dataclass(frozen=True)
class SplitGroup:
    """Ranks and storage axes that split together (see the module docstring)."""

    id: int
    ranks: tuple[str, ...]
    axes: tuple[tuple[str, int], ...]  # (storage tensor, axis)
    extent: int  # every degree that splits the group divides this
    nodes: tuple[str, ...]  # op nodes that iterate it
    reason: str | None  # why it cannot be split; None: it can
    label: str  # a human name: the weight (or tensor) axis it splits

    def splits(self, degree: int) -> bool:
        return self.reason is None and degree >= 1 and self.extent % degree == 0


def _contiguous(shape) -> list[int]:
    out = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        out[i] = out[i + 1] * shape[i + 1]
    return out


def linked_axis(view: ViewInfo, base_shape, v: int) -> tuple[int, int, int] | None:
    """``(j, start, length)``: the storage axis ``j`` whose outer boundary view axis ``v``
    shares, and the range of axis ``j`` whose ``t`` contiguous blocks a ``t``-way split of
    ``v`` gives each GPU; None when they are not so linked."""
    strides, shape = view.strides, view.shape
    s_v, e_v = strides[v], shape[v]
    if s_v <= 0 or e_v <= 1:
        return None
    c = _contiguous(base_shape)
    span = s_v * e_v
    for j, (cj, ej) in enumerate(zip(c, base_shape)):
        if ej <= 1 or not cj <= s_v < cj * ej:
            continue
        if s_v % cj:
            return None
        step = s_v // cj  # axis-j indices per step of v
        # where v's blocks begin along axis j: an offset inside one step (a slice of an inner
        # factor, as rotary embeddings take of a head) does not move the blocks
        start = (view.offset // cj) % ej // step * step
        if span <= cj * ej:  # v walks inside axis j: it must be the outermost view axis there
            inner = any(
                s_v < strides[u] < cj * ej and shape[u] > 1 for u in range(len(shape)) if u != v
            )
            return None if inner else (j, start, span // cj)
        # v merges axis j with outer axes: link to the outermost, which must end where v ends
        for k, (ck, ek) in enumerate(zip(c, base_shape)):
            if ek > 1 and ck * ek == span and ck % s_v == 0 and view.offset == 0:
                return (k, 0, ek)
        return None
    return None


def _extent(x) -> int | None:
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


class SplitIndex:
    """The split groups of one einsum graph and, per statement, its accesses in their terms.
    Built once per graph; spec-independent."""

    def __init__(self, g: Graph) -> None:
        self.g = g
        tensors = g.info.tensors
        views = g.info.views
        kernel_index = {k.name: i for i, k in enumerate(g.info.kernels)}
        self.op_nodes = [d.id for d in g.ops()]
        self.node_kernel = {d.id: kernel_index[d.kernel] for d in g.ops()}
        direct, groups = _UnionFind(), _UnionFind()
        raw: dict[str, list] = {}
        imposed: list[tuple[tuple, tuple[int, int]]] = []  # (storage axis, (start, length))
        for d in g.ops():
            n, ranks = d.id, d.ranks
            for r in ranks:
                direct.find(("rank", r))
                groups.find(("rank", r))
            touched = {k: e.footprint_bytes for _, k, e in g.in_edges(n)}
            out = []
            for acc, write in [(d.output, True)] + [(a, False) for a in d.operands]:
                tensor, base = acc.tensor, acc.base
                view = views.get(tensor) if tensor != base else None
                shape = view.shape if view else tensors[base].shape
                rank_axes = []
                for v, r in enumerate(acc.ranks):
                    if r is None:
                        continue
                    ext = _extent(shape[v])
                    if ext is None or ext <= 1 or _extent(ranks.get(r)) != ext:
                        rank_axes.append((r, None))
                        continue
                    if view is None:
                        direct.union(("rank", r), ("axis", base, v))
                        groups.union(("rank", r), ("axis", base, v))
                        rank_axes.append((r, v))
                        continue
                    link = linked_axis(view, tensors[base].shape, v)
                    if link is None:
                        rank_axes.append((r, None))
                        continue
                    j, start, length = link
                    groups.union(("rank", r), ("axis", base, j))
                    imposed.append((("axis", base, j), (start, length)))
                    rank_axes.append((r, j))
                fp = 0 if write else touched.get(tensor, 0)
                out.append((base, tensors[base].role, write, rank_axes, fp))
            raw[n] = out
        self._build_groups(g, groups, direct, imposed)
        self.accesses: dict[str, list[AccessInfo]] = {}
        for n, accs in raw.items():
            infos = []
            for base, role, write, rank_axes, fp in accs:
                linked = frozenset(self.rank_group[r] for r, j in rank_axes if j is not None)
                touched = frozenset(self.rank_group[r] for r, _ in rank_axes)
                infos.append(AccessInfo(base, role, write, linked, touched, fp))
            self.accesses[n] = infos
        self.node_groups = {
            n: frozenset(self.rank_group[r] for r in g.op(n).ranks) for n in self.op_nodes
        }

    # -- groups -------------------------------------------------------------------------------

    def _build_groups(self, g, uf: _UnionFind, direct: _UnionFind, imposed) -> None:
        tensors = g.info.tensors
        members: dict = {}
        for x in list(uf.parent):
            members.setdefault(uf.find(x), []).append(x)
        roots = sorted(members, key=lambda r: str(min(members[r], key=str)))
        self.groups: list[SplitGroup] = []
        self.rank_group: dict[str, int] = {}
        self.axis_group: dict[tuple[str, int], int] = {}
        rank_nodes: dict[str, list[str]] = {}
        bad_rank: dict[str, str] = {}
        for d in g.ops():
            n = d.id
            for r in d.ranks:
                rank_nodes.setdefault(r, []).append(n)
            fixed = list(d.loops)
            if isinstance(d, ScanNode):
                fixed.append(d.scan)
            if isinstance(d, ExternNode):
                fixed += list(d.reduction_ranks)
            for r in fixed:
                bad_rank.setdefault(r, f"{r} is a sequential loop, scan or extern row of {n}")
        conflicts = _imposed_conflicts(direct, imposed)
        for gid, root in enumerate(roots):
            ranks = sorted(x[1] for x in members[root] if x[0] == "rank")
            axes = sorted((x[1], x[2]) for x in members[root] if x[0] == "axis")
            for r in ranks:
                self.rank_group[r] = gid
            for a in axes:
                self.axis_group[a] = gid
            nodes = sorted({n for r in ranks for n in rank_nodes.get(r, ())})
            extents = [_extent(tensors[t].shape[j]) for t, j in axes]
            for n in nodes:
                extents += [_extent(g.op(n).ranks[r]) for r in ranks if r in g.op(n).ranks]
            extent = 0 if any(e is None for e in extents) else math.gcd(*extents)
            reason = next((bad_rank[r] for r in ranks if r in bad_rank), None)
            if reason is None:
                reason = _shape_conflict(g, ranks, axes, nodes)
            if reason is None and any(direct.find(("axis", t, j)) in conflicts for t, j in axes):
                reason = "views impose different blocks on one of its axes"
            if reason is None and extent <= 1:
                reason = "extent 1"
            self.groups.append(
                SplitGroup(
                    gid,
                    tuple(ranks),
                    tuple(axes),
                    extent,
                    tuple(nodes),
                    reason,
                    _label(tensors, axes, ranks),
                )
            )

    @cached_property
    def writers(self) -> dict[str, list[tuple[str, AccessInfo]]]:
        """Storage tensor -> the (statement, access) pairs that write it."""
        out: dict[str, list] = {}
        for n in self.op_nodes:
            for a in self.accesses[n]:
                if a.write:
                    out.setdefault(a.base, []).append((n, a))
        return out

    @cached_property
    def readers(self) -> dict[str, list[tuple[str, AccessInfo]]]:
        """Storage tensor -> the (statement, access) pairs that read it, but for a statement
        that also writes it (an accumulator needs no collective to read its own partials)."""
        out: dict[str, list] = {}
        for n in self.op_nodes:
            written = {a.base for a in self.accesses[n] if a.write}
            for a in self.accesses[n]:
                if not a.write and a.base not in written:
                    out.setdefault(a.base, []).append((n, a))
        return out

    @cached_property
    def splittable(self) -> list[SplitGroup]:
        return [grp for grp in self.groups if grp.reason is None]

    def group_of_axis(self, tensor: str, axis: int) -> int | None:
        return self.axis_group.get((tensor, axis))

    def batch_group(self, tensor: str | None = None, axis: int = 0) -> int | None:
        """The group of ``tensor``'s ``axis`` (default: axis 0 of the first graph input whose
        axis 0 is splittable): what data parallelism and micro-batches split."""
        tensors = self.g.info.tensors
        names = [tensor] if tensor else [t for t, i in tensors.items() if i.role == "input"]
        for t in names:
            if t not in tensors:
                raise ValueError(
                    f"no tensor {t!r} in {self.g.info.name}; inputs: "
                    + ", ".join(x for x, i in tensors.items() if i.role == "input")
                )
            gid = self.axis_group.get((t, axis))
            if gid is not None and self.groups[gid].reason is None:
                return gid
            if tensor:
                why = "it is not split-able" if gid is None else self.groups[gid].reason
                raise ValueError(f"cannot split {t} axis {axis}: {why}")
        return None


def _imposed_conflicts(direct: _UnionFind, imposed) -> set:
    """Index spaces (direct classes) on which views impose overlapping, unequal ranges."""
    ranges: dict = {}
    for axis, rng in imposed:
        ranges.setdefault(direct.find(axis), set()).add(rng)
    bad = set()
    for space, rs in ranges.items():
        rs = sorted(rs)
        for (s1, l1), (s2, _) in zip(rs, rs[1:]):
            if s2 < s1 + l1:  # overlapping and (being distinct) unequal
                bad.add(space)
    return bad


def _shape_conflict(g, ranks, axes, nodes) -> str | None:
    tensors_seen: dict[str, int] = {}
    for t, _ in axes:
        tensors_seen[t] = tensors_seen.get(t, 0) + 1
        if tensors_seen[t] > 1:
            return f"two axes of {t} in one group"
    rs = set(ranks)
    for n in nodes:
        if len(rs & set(g.op(n).ranks)) > 1:
            return f"two loops of {n} in one group"
    return None


def _label(tensors, axes, ranks) -> str:
    """The axis of the largest weight (else of the largest tensor) the group splits."""
    order = ("weight", "input", "output", "intermediate", "constant", "local")
    for role in order:
        mine = [(t, j) for t, j in axes if tensors[t].role == role]
        if mine:
            t, j = min(mine, key=lambda a: (-tensors[a[0]].bytes, a))
            return f"{t}[{j}]"
    return f"rank {ranks[0]}" if ranks else "?"

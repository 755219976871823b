"""Cache-aware bound: DRAM traffic forced by a finite on-chip memory (docs/bounds.md).

Capacity ``S`` is *all* on-chip storage (L2 + combined L1/shared memory + registers of every
SM): data may live in any of them, so only their total keeps the bound a lower bound. The
proofs are in :mod:`solar.backend.io_bounds`; this module reads the einsum graph, decides which
of them apply to which node, and adds them up soundly.

Per operator (the ``rules`` of a report name the bound binding at the capacity):

=====================================  =========================================================
matmul / linear, C a graph output      ``RULE_SMITH`` (Smith et al. 2022, ``2V/sqrt(S) - 2S``)
                                       or ``RULE_SEGMENT``, whichever is larger
batched matmul, einsum, C in DRAM      ``RULE_SEGMENT``: segment + Loomis–Whitney (Hong–Kung;
                                       Irony–Toledo–Tiskin), ``~sqrt(2) V/sqrt(S) - 4S``
GEMM / QKᵀ whose C stays on chip        ``RULE_SEGMENT_ONCHIP``: the same with on-chip
(fused epilogue, attention scores)     completion; attention: ``~N²d²/S`` (FlashAttention
                                       Prop. 3; Saha & Ye 2024)
convolution (strided, dilated,         ``RULE_CONV``: segment + HBL over ``G`` tap classes
grouped, transposed)                   (Demmel & Dinh 2018 style), ``~sqrt(2/G) V/sqrt(S)``
normalisation by global statistics     ``RULE_BARRIER``: live-set (Hong–Kung) re-read
(BatchNorm training, ``x / x.sum()``)
=====================================  =========================================================

Which nodes, which bound:

- **contraction** nodes ``C[..] += A[..] * B[..]`` (matmul, batched matmul, einsum, the
  ``QKᵀ`` and ``PV`` of attention, convolutions incl. strided, dilated, grouped and transposed)
  whose A and B are DRAM-resident (graph inputs, weights, constants: they cannot be produced
  on chip — otherwise a producer fused into the node could feed it from chip, as FlashAttention
  does with ``P``, and no extra traffic is charged):

  - index analysis: each tensor axis is an affine form of the node's ranks (the access
    records' ``Affine`` index entries, :class:`solar.graph.types.TensorAccess`). An axis over one
    rank, or over several in mixed radix (``8g + c`` with ``c < 8``), is injective; an axis
    ``σp + δr`` over two ranks that can collide is a *tap axis* (conv windows); anything else,
    a rank in two axes of one tensor, or a data-dependent index makes the node unanalysable
    (no extra traffic). A view operand must be injective on what it touches: when its view
    ``strides`` do not overlap, broadcast (stride-0) axes are dropped and it is; otherwise its
    footprint (edge ``footprint_bytes``) must equal its index-tuple count.
  - every rank (of extent > 1) must index at least two of A, B, C (Loomis–Whitney), and an
    (A element, B element) pair must fix every rank (each product serves one instance); then
    :class:`~solar.backend.io_bounds.SegmentBound` (segment / Hölder–Brascamp–Lieb argument,
    tap classes for convolutions) gives a proven ``Q(S)``; a plain matrix product whose C is
    a graph output (no batch rank, no guards) also gets Smith et al.'s tight
    ``2V/sqrt(S) - 2S``; the larger applies;
  - C written to DRAM (a graph output) or kept on chip for a fused consumer (intermediate or
    kernel-local: attention scores) are different cases: on chip, a C element can be consumed
    once complete, which is what makes attention's ``QKᵀ`` cost ``Θ(N²d²/S)`` and no more.
    That case needs ``k_min``, the fewest products of any C element: the full reduction
    extent when every instance executes (the node's work equals its loop box) or the node's
    ``guards`` touch output ranks only (causal attention's ``k <= q``); unknown otherwise.

- **barrier** (live-set) spills: a reduction ``R[κ] = ⊕_ρ T[κ,ρ]`` of a DRAM-resident ``T``
  whose consumer ``Y`` is a map writing a graph output element ``Y[κ,ρ]`` from ``T[κ,ρ]`` and
  ``R[κ]`` (directly or through maps of ``R``): every element of a group (``Π_ρ N_ρ``) is
  needed after its reduction completes, so what does not fit on chip is transferred again
  (normalisation layers: BatchNorm in training, ``x / x.sum()``). Not charged: an
  intermediate ``T`` (it could be recomputed), a consumer that is itself a reduction (Welford,
  one-pass argmax) or feeds one on chip (a linear consumer absorbs the normaliser: online
  softmax).

- **attention score matrices** are never charged a spill: a tiled-fused implementation
  (FlashAttention, online softmax) keeps only a tile of them on chip. The unavoidable cost of
  not materialising them is the re-reading of Q and K, which the ``QKᵀ`` contraction bound
  with on-chip output charges.

Soundness of the sum: each bound counts the I/O on its own tensors (A, B and C of a
contraction, ``T`` of a barrier) over the whole run, so bounds on disjoint tensor sets add.
The program's cache-aware bytes are therefore fused bytes + Σ over a set of tensor-disjoint
items of (the item's bound − its tensors' compulsory bytes)⁺. The set is chosen without looking
at the capacity (largest work first), so the total is a sum of non-increasing functions of the
capacity — monotone — and equals the fused bytes as the capacity goes to infinity. Sizes in a
bound are in words of the smallest element size among its tensors (``S_w = S / w``).
Assumptions: operands of a contraction DRAM-resident as above, classical algorithm and no
recomputation (see :mod:`solar.backend.io_bounds`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from solar.algebra.size import gcd, to_real
from solar.backend.io_bounds import SegmentBound, barrier_spill_bytes, smith_matmul_words
from solar.backend.roofline import fused_bytes
from solar.graph.access_shapes import AccessShape, access_indices, access_shape, layout
from solar.graph.types import Graph, OpNode, TensorAccess

DRAM_RESIDENT = ("input", "weight", "constant")

RULE_SMITH = "Smith et al. 2022 (matmul, C in DRAM)"
RULE_SEGMENT = "segment/Loomis-Whitney (Hong-Kung)"
RULE_SEGMENT_ONCHIP = "segment/Loomis-Whitney, C consumed on chip (FlashAttention/Saha-Ye)"
RULE_CONV = "segment/HBL with tap classes (conv, Demmel-Dinh)"
RULE_BARRIER = "live-set barrier (reduction before its consumer)"

# ---------------------------------------------------------------------------------------------
# index expressions


def _tap_classes(shapes: Sequence[AccessShape], ranks: dict[str, int]) -> tuple[int, bool] | None:
    """The tap-class count G and whether an array is partitioned by the classes, for the
    cheapest choice of tap rank per tap axis (None: conflicting choices)."""
    axes = [(i, t) for i, s in enumerate(shapes) for t in s.taps]
    if not axes:
        return 1, True
    if len(axes) > 8:
        return None
    best: tuple[float, int, bool] | None = None
    for choice in itertools.product((0, 1), repeat=len(axes)):
        chosen: dict[str, int] = {}
        ok = True
        for (_, (p, r, cp, cr)), pick in zip(axes, choice):
            g = gcd(abs(cp), abs(cr))
            tap, other = (r, cp) if pick == 0 else (p, cr)
            block = abs(other) // g
            if tap in chosen:
                ok = False
                break
            chosen[tap] = -(-ranks[tap] // block)
        if not ok:
            continue
        classes = math.prod(chosen.values())
        tapped = {i for i, _ in axes}
        partitioned = any(
            i not in tapped and not s.taps and set(chosen) <= s.deps for i, s in enumerate(shapes)
        )
        lam2 = classes if partitioned else classes * classes
        if best is None or lam2 < best[0]:
            best = (lam2, classes, partitioned)
    return None if best is None else (best[1], best[2])


# ---------------------------------------------------------------------------------------------
# items: one proven traffic bound on a set of tensors


@dataclass(frozen=True)
class ContractionIO:
    """The I/O lower bound of one contraction node on its tensors A, B and C."""

    node: str
    tensors: frozenset[str]
    volume: int  # multiply-adds executed
    reduction: int  # product of the reduction extents
    word: int  # bytes per word (smallest element size of A, B, C)
    output_in_dram: bool
    compulsory_bytes: int  # this node's share of the fused bytes (A, B, and C if an output)
    rule: str  # the argument family (capacity-independent)
    segment: SegmentBound = field(repr=False)
    smith: bool = False  # a plain matmul with C in DRAM: Smith et al. applies too

    @property
    def priority(self) -> float:
        return to_real(self.volume)

    def words(self, capacity: float) -> tuple[float, str]:
        """(Lower bound on I/O words, the rule that gives it) at ``capacity`` bytes."""
        s = capacity / self.word
        q, rule = self.segment.words(s), self.rule
        if self.smith:
            q_smith = smith_matmul_words(self.volume, s)
            if q_smith >= q:
                q, rule = q_smith, RULE_SMITH
        return q, rule

    def traffic_bytes(self, capacity: float) -> float:
        """Proven lower bound on DRAM bytes moved for A, B (and C) at this capacity."""
        if not math.isfinite(capacity):
            return to_real(self.compulsory_bytes)
        return max(to_real(self.compulsory_bytes), self.words(capacity)[0] * self.word)

    def binding_rule(self, capacity: float) -> str:
        return self.words(capacity)[1]

    def to_dict(self) -> dict:
        """JSON-able fields (``kind``: ``contraction``); :func:`io_item` reads it back."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {
            "kind": "contraction",
            **d,
            "tensors": sorted(self.tensors),
            "segment": dataclasses.asdict(self.segment),
        }

    @classmethod
    def from_dict(cls, d: dict) -> ContractionIO:
        fields = {k: v for k, v in d.items() if k != "kind"}
        fields["tensors"] = frozenset(d["tensors"])
        fields["segment"] = SegmentBound(**d["segment"])
        return cls(**fields)


@dataclass(frozen=True)
class BarrierIO:
    """Live-set bound: a DRAM-resident tensor read again after a reduction over it."""

    node: str  # the consumer node
    tensors: frozenset[str]
    group_bytes: int
    compulsory_bytes: int
    transfers: int = 1
    rule: str = RULE_BARRIER

    @property
    def priority(self) -> float:
        return to_real(self.group_bytes)

    def traffic_bytes(self, capacity: float) -> float:
        spill = barrier_spill_bytes(self.group_bytes, capacity, self.transfers)
        return self.compulsory_bytes + spill

    def binding_rule(self, capacity: float) -> str:
        return self.rule

    def to_dict(self) -> dict:
        """JSON-able fields (``kind``: ``barrier``); :func:`io_item` reads it back."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {"kind": "barrier", **d, "tensors": sorted(self.tensors)}

    @classmethod
    def from_dict(cls, d: dict) -> BarrierIO:
        fields = {k: v for k, v in d.items() if k != "kind"}
        return cls(**{**fields, "tensors": frozenset(d["tensors"])})


IOItem = ContractionIO | BarrierIO


def io_item(d: dict) -> IOItem:
    """An item from its :meth:`to_dict` (``kind``: ``contraction`` or ``barrier``)."""
    kinds = {"contraction": ContractionIO, "barrier": BarrierIO}
    if d.get("kind") not in kinds:
        raise ValueError(
            f"unknown cache-aware item kind {d.get('kind')!r}; one of {', '.join(kinds)}"
        )
    return kinds[d["kind"]].from_dict(d)


def _edge_footprint(g: Graph, node: str, tensor: str) -> int | None:
    for _, key, e in g.in_edges(node):
        if key == tensor:
            return e.footprint_bytes
    return None


def _injective_storage(
    g, node: str, acc: TensorAccess, shape: AccessShape, known: bool, is_output: bool
) -> bool:
    """Distinct index tuples touch distinct storage elements."""
    if known or is_output:
        return True  # row-major or checked strides; writes through an aliasing view would race
    fp = _edge_footprint(g, node, acc.tensor)
    return fp is not None and shape.tuples is not None and fp == shape.tuples * acc.itemsize


def _pairs_determine_instances(a: AccessShape, b: AccessShape, ranks: dict[str, int]) -> bool:
    """Whether an (A element, B element) pair fixes every rank, so each product serves one
    instance (no product reuse across segments to account for)."""
    known = set()
    for s in (a, b):
        tapped = {r for t in s.taps for r in t[:2]}
        known |= s.deps - tapped
    changed = True
    while changed:
        changed = False
        for p, r, _, _ in (*a.taps, *b.taps):
            if (p in known) != (r in known):
                known |= {p, r}
                changed = True
    return all(r in known for r, n in ranks.items() if n > 1)


def _k_min(d: OpNode, c: AccessShape, box: int, volume: int, ranks: dict[str, int]) -> int | None:
    """Fewest products of any executed C element (None when it cannot be shown): the full
    reduction extent when every instance executes, or when the guards touch output ranks only
    (an executed C element then runs all its products)."""
    if c.taps:
        return None
    full = math.prod(n for r, n in ranks.items() if r not in c.deps)
    if volume == box:
        return full
    if d.guards and all(gd.ranks <= c.deps for gd in d.guards):
        return full
    return None


def contraction_item(g: Graph, d: OpNode) -> ContractionIO | None:
    """The bound of a contraction node, or None when no proof here applies."""
    if len(d.operands) != 2:
        return None
    a, b = d.operands
    c = d.output
    if a.role not in DRAM_RESIDENT or b.role not in DRAM_RESIDENT:
        return None
    if len({a.base, b.base, c.base}) != 3:
        return None
    ranks = dict(d.ranks)
    indices = access_indices(d)
    if indices is None or any(r not in ranks for ix in indices for co, _ in ix for r in co):
        return None
    info = g.info
    shapes = []
    for acc, axes, is_out in zip((a, b, c), indices, (False, False, True)):
        base = info.tensors.get(acc.base)
        lay = None if base is None else layout(acc, axes)
        if lay is None:
            return None
        s = access_shape(lay[0], lay[1], ranks, math.prod(base.shape))
        if s is None or not _injective_storage(g, d.id, acc, s, lay[2], is_out):
            return None
        shapes.append(s)
    sa, sb, sc = shapes
    if any(sum(r in s.deps for s in shapes) < 2 for r, e in ranks.items() if e > 1):
        return None  # Loomis-Whitney needs every rank (of extent > 1) in two of A, B, C
    if not _pairs_determine_instances(sa, sb, ranks):
        return None
    taps = _tap_classes(shapes, ranks)
    if taps is None:
        return None
    classes, partitioned = taps
    box = math.prod(ranks.values())
    # 2 ops of the contraction's class per multiply-add (the node's only, hence largest, class)
    volume = min(box, max(d.ops.values(), default=0) // 2)
    if volume <= 0:
        return None
    c_in_dram = c.role == "output"
    fio = info.fused_io
    compulsory = fio.reads.get(a.base, 0) + fio.reads.get(b.base, 0)
    if c_in_dram:
        compulsory += fio.writes.get(c.base, 0)
    segment = SegmentBound(
        volume=volume,
        a_size=sa.size,
        b_size=sb.size,
        c_size=sc.size,
        a_mult=sa.mult,
        b_mult=sb.mult,
        c_mult=sc.mult,
        output_in_dram=c_in_dram,
        k_min=None if c_in_dram else _k_min(d, sc, box, volume, ranks),
        classes=classes,
        partitioned=partitioned,
    )
    plain = not (sa.taps or sb.taps or sc.taps)
    smith = (
        c_in_dram
        and plain
        and volume == box
        and all(sum(r in s.deps for s in shapes) == 2 for r, e in ranks.items() if e > 1)
    )
    if not plain:
        rule = RULE_CONV
    elif c_in_dram:
        rule = RULE_SEGMENT
    else:
        rule = RULE_SEGMENT_ONCHIP
    reduction = math.prod(ranks[r] for r in d.reduction_ranks)
    return ContractionIO(
        node=d.id,
        tensors=frozenset({a.base, b.base, c.base}),
        volume=volume,
        reduction=reduction,
        word=min(a.itemsize, b.itemsize, c.itemsize),
        output_in_dram=c_in_dram,
        compulsory_bytes=compulsory,
        rule=rule,
        segment=segment,
        smith=smith,
    )


def contraction_io(g: Graph) -> list[ContractionIO]:
    """The contraction nodes the cache-aware bound applies to (see the module docstring)."""
    out = []
    for d in g.ops():
        if d.op_kind == "contraction":
            item = contraction_item(g, d)
            if item is not None:
                out.append(item)
    return out


def _plain_ranks(acc: TensorAccess) -> tuple[str, ...] | None:
    ranks = acc.ranks
    if any(r is None for r in ranks) or len(set(ranks)) != len(ranks):
        return None
    return ranks  # type: ignore[return-value]


def _producer(g: Graph, node: str, tensor: str) -> OpNode | None:
    for src, key, _ in g.in_edges(node):
        if key == tensor and g.op(src) is not None:
            return g.op(src)
    return None


def barrier_io(g: Graph) -> list[BarrierIO]:
    """Live-set barriers (see the module docstring)."""
    fio = g.info.fused_io
    out = []
    for dy in g.ops():
        if dy.op_kind != "map" or dy.output.role != "output":
            continue
        y_ranks = _plain_ranks(dy.output)
        for t_acc in dy.operands:
            if t_acc.role not in DRAM_RESIDENT:
                continue
            t_ranks = _plain_ranks(t_acc)
            if t_ranks is None or y_ranks is None or set(y_ranks) != set(t_ranks):
                continue
            full = math.prod(dy.ranks[r] for r in t_ranks) * t_acc.itemsize
            if _edge_footprint(g, dy.id, t_acc.tensor) != full:
                continue
            for z_acc in dy.operands:
                if z_acc is t_acc:
                    continue
                group = _reduction_group(g, dy.id, z_acc, t_acc, t_ranks, full)
                if group:
                    out.append(
                        BarrierIO(
                            dy.id,
                            frozenset({t_acc.base}),
                            group * min(t_acc.itemsize, dy.output.itemsize),
                            fio.reads.get(t_acc.base, 0),
                        )
                    )
                    break
    return out


def _reduction_group(
    g, y: str, z_acc: TensorAccess, t_acc: TensorAccess, t_ranks, full: int
) -> int:
    """Elements per group when ``z_acc`` (read by ``y``) is a reduction of ``t_acc``'s tensor
    over some of its ranks, reached through maps; 0 otherwise."""
    z_ranks = _plain_ranks(z_acc)
    if z_ranks is None or not set(z_ranks) < set(t_ranks):
        return 0
    node, tensor = y, z_acc.tensor
    for _ in range(8):  # walk back through maps of the reduced tensor
        ds = _producer(g, node, tensor)
        if ds is None:
            return 0
        if ds.op_kind == "reduction":
            reads = [o for o in ds.operands if o.base == t_acc.base]
            if len(reads) != 1 or _plain_ranks(reads[0]) is None:
                return 0
            if set(_plain_ranks(reads[0])) != set(t_ranks):
                return 0
            if set(_plain_ranks(ds.output) or ()) != set(z_ranks):
                return 0
            if _edge_footprint(g, ds.id, reads[0].tensor) != full:
                return 0
            reduced = set(t_ranks) - set(z_ranks)
            return math.prod(ds.ranks[r] for r in reduced)
        if ds.op_kind != "map":
            return 0
        same = [o for o in ds.operands if set(_plain_ranks(o) or ()) == set(z_ranks)]
        if len(same) != 1:
            return 0
        node, tensor = ds.id, same[0].tensor
    return 0


def select(items: Iterable[IOItem]) -> list[IOItem]:
    """A tensor-disjoint subset, largest work first (independent of the capacity)."""
    chosen: list[IOItem] = []
    used: set[str] = set()
    for item in sorted(items, key=lambda i: (isinstance(i, BarrierIO), -i.priority, i.node)):
        if used.isdisjoint(item.tensors):
            used |= item.tensors
            chosen.append(item)
    return chosen


# ---------------------------------------------------------------------------------------------
# the program's bound


@dataclass(frozen=True)
class CacheAwareBytes:
    bytes: float
    capacity: float
    extra: dict[str, float]  # node -> bytes beyond its compulsory traffic
    rules: dict[str, str]  # node -> the rule giving that extra


@dataclass(frozen=True, init=False)
class CacheAwareModel:
    """The cache-aware traffic of one graph as a function of capacity (build once, evaluate
    at many capacities: the ski slope). Its data are the fused bytes and the chosen items:
    :meth:`to_dict` / :meth:`from_dict` carry it without the graph (a stored
    :class:`~solar.backend.result.Bound` evaluates it at any capacity). Frozen; equal when the
    fused bytes and the chosen items are."""

    fused: float
    items: tuple[IOItem, ...]
    candidates: tuple[IOItem, ...] = field(compare=False, repr=False)  # before the choice

    def __init__(
        self,
        g: Graph | None = None,
        *,
        fused: float | None = None,
        items: Sequence[IOItem] = (),
        candidates: Sequence[IOItem] | None = None,
    ) -> None:
        """The model of graph ``g``, or of already chosen tensor-disjoint ``items`` over
        ``fused`` bytes (what a stored bound carries)."""
        if g is not None:
            fused = fused_bytes(g)
            candidates = (*contraction_io(g), *barrier_io(g))
            items = select(candidates)
        object.__setattr__(self, "fused", fused)
        object.__setattr__(self, "items", tuple(items))
        object.__setattr__(self, "candidates", tuple(items if candidates is None else candidates))

    @classmethod
    def of_items(cls, fused: float, items: Sequence[IOItem]) -> CacheAwareModel:
        """The model of already chosen tensor-disjoint ``items`` over ``fused`` bytes."""
        return cls(fused=fused, items=items)

    def to_dict(self) -> dict:
        return {"fused_bytes": self.fused, "items": [i.to_dict() for i in self.items]}

    @classmethod
    def from_dict(cls, d: dict) -> CacheAwareModel:
        return cls.of_items(d["fused_bytes"], [io_item(i) for i in d["items"]])

    def at(self, capacity: float) -> CacheAwareBytes:
        capacity = float(capacity)
        if not capacity > 0:
            raise ValueError(f"on-chip capacity must be positive, got {capacity}")
        extra: dict[str, float] = {}
        rules: dict[str, str] = {}
        for item in self.items:
            x = item.traffic_bytes(capacity) - item.compulsory_bytes
            if x > 0:
                extra[item.node] = extra.get(item.node, 0.0) + x
                rules[item.node] = item.binding_rule(capacity)
        return CacheAwareBytes(self.fused + sum(extra.values()), capacity, extra, rules)

    def bytes(self, capacity: float) -> float:
        return self.at(capacity).bytes

    def curve(self, capacities: Sequence[float] | None = None) -> list[tuple[float, float]]:
        """``(capacity, bytes)`` pairs; by default 4 points per octave from 64 KiB to 64 GiB."""
        caps = default_capacities() if capacities is None else capacities
        return [(float(c), self.bytes(c)) for c in caps]


def default_capacities(lo: float = 2.0**16, hi: float = 2.0**36, per_octave: int = 4):
    n = round(math.log2(hi / lo) * per_octave)
    return [lo * 2.0 ** (i / per_octave) for i in range(n + 1)]


def cache_aware_bytes(g: Graph, capacity: float) -> CacheAwareBytes:
    """Fused bytes plus the forced extra traffic of a fixed set of tensor-disjoint items."""
    return CacheAwareModel(g).at(capacity)


def traffic_curve(g: Graph, capacities: Sequence[float] | None = None):
    """DRAM bytes (cache-aware lower bound) against on-chip capacity in bytes."""
    return CacheAwareModel(g).curve(capacities)

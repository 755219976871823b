"""The einsum graph, the compiler's middle IR: an immutable :class:`Graph` of frozen records.

One record per node (:class:`NestNode`, :class:`ScanNode`, :class:`ExternNode` — the op nodes, on
their :class:`OpNode` base — :class:`InputNode`, :class:`OutputNode`), one :class:`Link` per edge
(its :class:`TensorEdge`), and one :class:`GraphInfo` for the graph (kernels, tensors, views, the
fused I/O, the notes). Readers use the graph's methods (:meth:`Graph.ops`, :meth:`Graph.in_edges`,
...); a pass that changes something builds a new graph (:meth:`Graph.with_nodes`);
:func:`solar.graph.verify.verify_graph` checks the invariants, and :meth:`Graph.to_networkx` is the
networkx export. Index expressions are :class:`~solar.ir.affine.Affine` objects in the graph's rank
names (:mod:`solar.graph.ranks`), as the IR held them: nothing downstream parses text.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import networkx as nx

from solar.ir.affine import Affine
from solar.ir.recurrence import Chain
from solar.ir.vocabulary import OpClass, OpKind, Role
from solar.ir.vocabulary import Word as Word  # re-exported: the base of every vocabulary

# The IR's vocabulary (OpClass, OpKind, Role, their base Word) and chain records are part of
# the graph's schema: a reader of the graph imports them from here (the backend reads graphs,
# not the IR).


@dataclass(frozen=True)
class DataDependent:
    """A data-dependent index entry (a gather's ``ids[i]``): its value is not affine."""

    text: str  # its printed form in rank names, for display only (``{ids[a]}``)
    ranks: tuple[str, ...]  # the ranks its value may depend on

    def __str__(self) -> str:
        return self.text


IndexEntry = Affine | DataDependent


@dataclass(frozen=True)
class TensorAccess:
    """One tensor access of an op node: an operand it reads or the output it writes."""

    tensor: str  # the tensor or view accessed
    base: str  # its storage tensor
    role: Role  # the base's role
    dtype: str
    itemsize: int  # bytes per element
    shape: tuple[int, ...]  # of the tensor or view accessed
    strides: tuple[int, ...] | None  # a view's element strides over its base; None: row-major
    offset: int | None  # a view's element offset into its base; None: not a view
    index: tuple[IndexEntry, ...]  # per axis, in rank names

    @property
    def indirect(self) -> bool:
        """Whether an entry is data-dependent."""
        return any(isinstance(e, DataDependent) for e in self.index)

    @property
    def ranks(self) -> tuple[str | None, ...]:
        """Per axis, the one rank it is indexed by exactly, else None (``2a+b``, ``ids[a]``)."""
        return tuple(e.single_dim if isinstance(e, Affine) else None for e in self.index)

    def __str__(self) -> str:
        return f"{self.tensor}[{','.join(map(str, self.index))}]"


@dataclass(frozen=True)
class GuardRange:
    """``lo <= expr < hi`` over the node's ranks: an instance outside it does not execute."""

    expr: Affine
    lo: int
    hi: int

    @property
    def ranks(self) -> frozenset[str]:
        return frozenset(self.expr.dims)


@dataclass(frozen=True)
class OpNode:
    """One IR statement (id ``"<kernel>/<i>"``), its dims renamed to the graph's ranks: the
    fields every statement node has. A node is one of its three kinds: :class:`NestNode` (a
    loop nest), :class:`ScanNode` (a recurrence along one rank), :class:`ExternNode` (a
    library routine over rows)."""

    id: str
    op_kind: OpKind
    ranks: Mapping[str, int]  # rank -> extent, the kernel's sequential loop ranks included
    reduction_ranks: tuple[str, ...]
    loops: tuple[str, ...]  # the kernel's sequential loop ranks, outermost first
    reduce: str | None  # the reduction operator
    ops: Mapping[OpClass, int]  # op class -> count over all instances
    operands: tuple[TensorAccess, ...]  # the distinct loads, in order
    output: TensorAccess
    guards: tuple[GuardRange, ...]  # from the statement's guards
    precision: str | None
    kernel: str  # the launched kernel it belongs to
    source_op: str  # the framework operator the kernel lowers
    source: str  # the user's source line
    module: str  # the module path
    phase: str  # of a training step, else ""
    kind: str = field(default="op", init=False)

    @property
    def einsum(self) -> str:
        """For display: ``A[a,c] B[c,b] -> C[a,b]`` (derived from the accesses)."""
        return f"{' '.join(map(str, self.operands))} -> {self.output}"

    @property
    def box(self) -> int:
        """Instances of the loop box (guards ignored)."""
        return math.prod(self.ranks.values())


@dataclass(frozen=True)
class NestNode(OpNode):
    """A loop nest: each instance of the box (minus guards) runs the statement once."""


@dataclass(frozen=True)
class ScanNode(OpNode):
    """A scan: instances along ``scan`` run in order, each reading the one before."""

    scan: str = field(kw_only=True)  # the scanned rank


@dataclass(frozen=True)
class ExternNode(OpNode):
    """A library routine (an FFT, a factorization) applied to rows, with a published count."""

    extern: str = field(kw_only=True)  # the routine's name (solar.ir.extern.EXTERN_OPS)


@dataclass(frozen=True)
class InputNode:
    """A graph input, weight or constant (id ``"in:<tensor>"``)."""

    id: str
    kind: Role  # its role: input, weight or constant
    tensor: str


@dataclass(frozen=True)
class OutputNode:
    """A graph output (id ``"out:<tensor>"``)."""

    id: str
    tensor: str
    kind: str = field(default="output", init=False)


NodeRecord = OpNode | InputNode | OutputNode


@dataclass(frozen=True)
class TensorEdge:
    """A tensor flowing from its producer (or ``in:`` node) to a reader, keyed by the tensor
    or view read."""

    tensor: str  # the storage base
    view: str | None  # the view read, None when the base itself
    shape: tuple[int, ...]  # of what is read (the view's when a view)
    dtype: str
    role: Role
    bytes: int  # the whole storage tensor
    footprint_bytes: int  # what this access touches


@dataclass(frozen=True)
class TensorInfo:
    """A storage tensor (views excluded)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    role: Role
    bytes: int


@dataclass(frozen=True)
class ViewInfo:
    """A view tensor: ``as_strided(base, shape, strides, offset)`` in elements."""

    name: str
    base: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int


@dataclass(frozen=True)
class IOBytes:
    """DRAM bytes per storage tensor, and whether every footprint behind them is exact."""

    reads: Mapping[str, int]
    writes: Mapping[str, int]
    exact: bool

    @property
    def total(self) -> int:
        return sum(self.reads.values()) + sum(self.writes.values())


@dataclass(frozen=True)
class KernelInfo:
    """One launched kernel: its statements (op node ids), DRAM reads and writes, origin and
    the loop-carried dependence chains of a looped kernel."""

    name: str
    op: str
    source: str
    module: str
    phase: str
    origin: str
    statements: tuple[str, ...]
    io: IOBytes
    chains: tuple[Chain, ...]

    @property
    def reads(self) -> Mapping[str, int]:
        return self.io.reads

    @property
    def writes(self) -> Mapping[str, int]:
        return self.io.writes

    @property
    def exact(self) -> bool:
        return self.io.exact


@dataclass(frozen=True)
class GraphInfo:
    """What backends need beyond nodes and edges."""

    name: str
    kernels: tuple[KernelInfo, ...]
    tensors: Mapping[str, TensorInfo]  # storage tensors
    views: Mapping[str, ViewInfo]
    fused_io: IOBytes  # graph inputs, weights and outputs, each once
    trace_notes: tuple[str, ...] = ()  # the trace's assumptions, carried into every bound
    routine_notes: tuple[str, ...] = ()  # the published counts of the library routines called
    complex: bool = False  # whether a tensor is of a complex dtype


@dataclass(frozen=True)
class Link:
    """One edge: tensor ``key`` (the tensor or view read) flowing from ``src`` to ``dst``."""

    src: str
    dst: str
    key: str
    edge: TensorEdge


@dataclass(frozen=True, eq=False)
class Graph:
    """The einsum graph, the compiler's middle IR: node records in program order, the edges
    between them and the graph record. Immutable: a pass that changes something returns a
    new graph (:meth:`with_nodes`, :meth:`with_info`), so a graph handed to an analysis is
    the same graph after it. The per-node adjacency is derived once, at construction."""

    info: GraphInfo
    records: tuple[NodeRecord, ...]
    links: tuple[Link, ...]

    def __post_init__(self) -> None:
        by_id: dict[str, NodeRecord] = {}
        for r in self.records:
            if r.id in by_id:
                raise ValueError(f"einsum graph {self.info.name}: node {r.id} given twice")
            by_id[r.id] = r
        # grouped by neighbour in order of its first edge, then in edge order (networkx's
        # adjacency order, which every reader's order of edges has always been)
        into: dict[str, dict[str, list[Link]]] = {n: {} for n in by_id}
        out: dict[str, dict[str, list[Link]]] = {n: {} for n in by_id}
        for e in self.links:
            out[e.src].setdefault(e.dst, []).append(e)
            into[e.dst].setdefault(e.src, []).append(e)
        flat = {n: [e for es in d.values() for e in es] for n, d in into.items()}
        object.__setattr__(self, "_by_id", by_id)
        object.__setattr__(self, "_into", flat)
        flat_out = {n: [e for es in d.values() for e in es] for n, d in out.items()}
        object.__setattr__(self, "_out", flat_out)

    @property
    def name(self) -> str:
        return self.info.name

    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, n: object) -> bool:
        return n in self._by_id  # type: ignore[attr-defined]

    def node(self, n: str) -> NodeRecord:
        return self._by_id[n]  # type: ignore[attr-defined]

    def op(self, n: str) -> OpNode | None:
        """The op record of node ``n``; None for input and output nodes."""
        rec = self._by_id[n]  # type: ignore[attr-defined]
        return rec if isinstance(rec, OpNode) else None

    def nodes(self) -> Iterator[NodeRecord]:
        """Every node record, in program order."""
        return iter(self.records)

    def ops(self) -> Iterator[OpNode]:
        """The op nodes in program order."""
        return (r for r in self.records if isinstance(r, OpNode))

    def in_edges(self, n: str) -> Iterator[tuple[str, str, TensorEdge]]:
        """``(source, key, edge)`` of each edge into ``n``."""
        return ((e.src, e.key, e.edge) for e in self._into[n])  # type: ignore[attr-defined]

    def out_edges(self, n: str) -> Iterator[tuple[str, str, TensorEdge]]:
        """``(target, key, edge)`` of each edge out of ``n``."""
        return ((e.dst, e.key, e.edge) for e in self._out[n])  # type: ignore[attr-defined]

    def edges(self) -> Iterator[tuple[str, str, str, TensorEdge]]:
        """``(source, target, key, edge)`` of every edge."""
        return (
            (e.src, e.dst, e.key, e.edge)
            for r in self.records
            for e in self._out[r.id]  # type: ignore[attr-defined]
        )

    def predecessors(self, n: str) -> list[str]:
        """The distinct nodes with an edge into ``n``, in edge order."""
        return list(dict.fromkeys(e.src for e in self._into[n]))  # type: ignore[attr-defined]

    def operands(self, n: str) -> list[TensorEdge]:
        """The distinct tensors an op node reads, in edge order."""
        seen: dict[str, TensorEdge] = {}
        for e in self._into[n]:  # type: ignore[attr-defined]
            seen.setdefault(e.key, e.edge)
        return list(seen.values())

    def with_nodes(self, changed: Mapping[str, NodeRecord]) -> Graph:
        """A new graph with the records of ``changed`` (by id) in place of the old ones."""
        records = tuple(changed.get(r.id, r) for r in self.records)
        return Graph(self.info, records, self.links)

    def with_info(self, info: GraphInfo) -> Graph:
        """A new graph with ``info`` as its graph record."""
        return Graph(info, self.records, self.links)

    def to_networkx(self) -> nx.MultiDiGraph:
        """The graph as a networkx ``MultiDiGraph`` (an export: graph algorithms, drawing),
        each node's record under ``"node"``, each edge's under ``"edge"``."""
        g = nx.MultiDiGraph(name=self.name)
        for r in self.records:
            g.add_node(r.id, node=r)
        for e in self.links:
            g.add_edge(e.src, e.dst, key=e.key, edge=e.edge)
        return g


# ---------------------------------------------------------------------------------------------
# plain data (JSON export)


def plain(x):
    """Records as plain data: dataclasses as dicts (an op node with its ``einsum``),
    index expressions as their printed form, tuples as lists."""
    if isinstance(x, (Affine, DataDependent)):
        return str(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        d = {f.name: plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
        if isinstance(x, OpNode):
            d.update(scan=getattr(x, "scan", None), extern=getattr(x, "extern", None))
            d["einsum"] = x.einsum
        if isinstance(x, KernelInfo):
            d.update(d.pop("io"))
        if isinstance(x, TensorAccess):
            d.update(ranks=list(x.ranks), indirect=x.indirect)
        return d
    if isinstance(x, Mapping):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, frozenset, set)):
        return [plain(v) for v in x]
    return x

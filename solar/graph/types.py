"""The einsum graph's schema: frozen records, one per node, edge and graph.

The container stays a networkx ``MultiDiGraph`` (paths, predecessors, export); what it holds
is typed. Each node's attribute dict holds its record under :data:`NODE` (an :class:`OpNode`,
:class:`InputNode` or :class:`OutputNode`), each edge's under :data:`EDGE` (a
:class:`TensorEdge`), and ``g.graph`` holds the :class:`GraphInfo` under :data:`INFO`.
Readers use the accessors below (:func:`op_nodes`, :func:`graph_info`, :func:`in_edges`, ...),
never the dicts. Index expressions are :class:`~solar.ir.affine.Affine` objects in the graph's
rank names (:mod:`solar.graph.ranks`), as the IR held them: nothing downstream parses text.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import networkx as nx

from solar.ir.affine import Affine
from solar.ir.recurrence import Chain

NODE = "node"  #: key of a node's record in its attribute dict
EDGE = "edge"  #: key of an edge's record in its attribute dict
INFO = "info"  #: key of the graph record in ``g.graph``


@dataclass(frozen=True)
class DataDependent:
    """A data-dependent index entry (a gather's ``ids[i]``): its value is not affine."""

    text: str  # its printed form in rank names, for display only (``{ids[a]}``)
    ranks: tuple[str, ...]  # the ranks its value may depend on

    def __str__(self) -> str:
        return self.text


IndexEntry = Affine | DataDependent


@dataclass(frozen=True)
class Access:
    """One tensor access of an op node: an operand it reads or the output it writes."""

    tensor: str  # the tensor or view accessed
    base: str  # its storage tensor
    role: str  # the base's role: input, weight, constant, output, intermediate, local, ...
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
    """One IR statement (id ``"<kernel>/<i>"``), its dims renamed to the graph's ranks."""

    id: str
    op_kind: str  # contraction, map, reduction, copy, scan, gather, scatter, extern
    ranks: Mapping[str, int]  # rank -> extent, the kernel's sequential loop ranks included
    reduction_ranks: tuple[str, ...]
    loops: tuple[str, ...]  # the kernel's sequential loop ranks, outermost first
    scan: str | None  # the scanned rank
    extern: str | None  # the library routine of an extern statement
    reduce: str | None  # the reduction operator
    ops: Mapping[str, int]  # op class -> count over all instances
    operands: tuple[Access, ...]  # the distinct loads, in order
    output: Access
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
class InputNode:
    """A graph input, weight or constant (id ``"in:<tensor>"``)."""

    id: str
    kind: str  # its role: input, weight or constant
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
    role: str
    bytes: int  # the whole storage tensor
    footprint_bytes: int  # what this access touches


@dataclass(frozen=True)
class TensorInfo:
    """A storage tensor (views excluded)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    role: str
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
    narrow_notes: tuple[str, ...] | None = None  # set once narrow recharging has run


# ---------------------------------------------------------------------------------------------
# accessors


def graph_info(g: nx.MultiDiGraph) -> GraphInfo:
    return g.graph[INFO]


def set_graph_info(g: nx.MultiDiGraph, info: GraphInfo) -> None:
    g.graph[INFO] = info
    g.graph["name"] = info.name


def node(g: nx.MultiDiGraph, n: str) -> NodeRecord:
    return g.nodes[n][NODE]


def op_node(g: nx.MultiDiGraph, n: str) -> OpNode | None:
    """The op record of node ``n``; None for input and output nodes."""
    rec = g.nodes[n][NODE]
    return rec if isinstance(rec, OpNode) else None


def nodes(g: nx.MultiDiGraph) -> Iterator[NodeRecord]:
    for _, d in g.nodes(data=True):
        yield d[NODE]


def op_nodes(g: nx.MultiDiGraph) -> Iterator[OpNode]:
    """The op nodes in insertion (program) order."""
    for _, d in g.nodes(data=True):
        if isinstance(d[NODE], OpNode):
            yield d[NODE]


def replace_node(g: nx.MultiDiGraph, rec: NodeRecord) -> None:
    """Store a changed record (records are frozen: ``dataclasses.replace`` makes one)."""
    g.nodes[rec.id][NODE] = rec


def in_edges(g: nx.MultiDiGraph, n: str) -> Iterator[tuple[str, str, TensorEdge]]:
    """``(source, key, edge)`` of each edge into ``n``."""
    for src, _, key, d in g.in_edges(n, keys=True, data=True):
        yield src, key, d[EDGE]


def out_edges(g: nx.MultiDiGraph, n: str) -> Iterator[tuple[str, str, TensorEdge]]:
    """``(target, key, edge)`` of each edge out of ``n``."""
    for _, dst, key, d in g.out_edges(n, keys=True, data=True):
        yield dst, key, d[EDGE]


def edges(g: nx.MultiDiGraph) -> Iterator[tuple[str, str, str, TensorEdge]]:
    """``(source, target, key, edge)`` of every edge."""
    for u, v, key, d in g.edges(keys=True, data=True):
        yield u, v, key, d[EDGE]


def operands(g: nx.MultiDiGraph, n: str) -> list[TensorEdge]:
    """The distinct tensors an op node reads, in edge order."""
    seen: dict[str, TensorEdge] = {}
    for _, key, e in in_edges(g, n):
        seen.setdefault(key, e)
    return list(seen.values())


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
            d["einsum"] = x.einsum
        if isinstance(x, KernelInfo):
            d.update(d.pop("io"))
        if isinstance(x, Access):
            d.update(ranks=list(x.ranks), indirect=x.indirect)
        return d
    if isinstance(x, Mapping):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, frozenset, set)):
        return [plain(v) for v in x]
    return x

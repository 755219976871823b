"""Lift an Affine Loop IR program to an einsum graph (a networkx MultiDiGraph of typed records).

Deterministic and IR-only. The records are those of :mod:`solar.graph.types` (the schema):

- one :class:`~solar.graph.types.OpNode` per statement, id ``"<kernel>/<i>"``: its kind, rank
  extents (the kernel's sequential loop dims included), reduction, loop and scan ranks, extern
  routine, reduce operator, work per op class, guards, and one
  :class:`~solar.graph.types.TensorAccess` per distinct operand and for the output (tensor, storage
  base, role, dtype, shape, view strides and offset, the index as ``Affine`` entries in rank
  names, a data-dependent entry as :class:`~solar.graph.types.DataDependent`);
- one :class:`~solar.graph.types.InputNode` per graph input / weight / constant
  (``"in:<tensor>"``) and one :class:`~solar.graph.types.OutputNode` per graph output
  (``"out:<tensor>"``).

Edges (:class:`~solar.graph.types.TensorEdge`) are tensors flowing from producer to consumer,
keyed by the tensor or view read, with the bytes of the whole tensor and of what this access
touches. The :class:`~solar.graph.types.GraphInfo` holds per launched kernel its statements,
DRAM reads and writes, origin and loop-carried chains (:func:`solar.ir.recurrence.kernel_chains`),
the storage tensors, the views, and the fused-program I/O (graph inputs, weights and outputs,
each once). Rank names are consistent across the graph (:mod:`solar.graph.ranks`).
"""

from __future__ import annotations

from collections.abc import Sequence

from solar.graph.cache import KernelFacts, kernel_facts
from solar.graph.ranks import assign_ranks
from solar.graph.types import (
    DataDependent,
    ExternNode,
    Graph,
    GraphInfo,
    GuardRange,
    IndexEntry,
    InputNode,
    IOBytes,
    KernelInfo,
    Link,
    NestNode,
    NodeRecord,
    OutputNode,
    ScanNode,
    TensorAccess,
    TensorEdge,
    TensorInfo,
    ViewInfo,
)
from solar.graph.verify import checked
from solar.ir.affine import Affine, index_tuple
from solar.ir.cost import KernelIO, program_io
from solar.ir.dtypes import is_complex
from solar.ir.extern import routine_assumptions
from solar.ir.footprint import Footprint
from solar.ir.program import Extern, Kernel, Program, Scan, Statement, verify, with_loops
from solar.ir.recurrence import kernel_chains
from solar.ir.scalar import Indirect
from solar.ir.vocabulary import OpClass, OpKind, Role


def _entry(e: Affine | Indirect, rename: dict[str, str]) -> IndexEntry:
    if isinstance(e, Indirect):
        r = e.rename(rename)
        return DataDependent(str(r), tuple(rename.get(d, d) for d in e.dims))
    return e.rename(rename)


def _access(
    program: Program, roles: dict[str, str], tensor: str, index: tuple, rename: dict[str, str]
) -> TensorAccess:
    base = program.base(tensor)
    decl, storage = program.tensors[tensor], program.tensors[base]
    return TensorAccess(
        tensor=tensor,
        base=base,
        role=Role(roles[base]),
        dtype=storage.dtype,
        itemsize=storage.itemsize,
        shape=tuple(decl.shape),
        strides=tuple(decl.view.strides) if decl.view is not None else None,
        offset=decl.view.offset if decl.view is not None else None,
        index=index_tuple(tuple(_entry(e, rename) for e in index)),
    )


def _bytes(program: Program, footprint_elements: int, tensor: str) -> int:
    return footprint_elements * program.tensors[tensor].itemsize


def _io_bytes(program: Program, io: KernelIO) -> IOBytes:
    """DRAM ``reads`` and ``writes`` in bytes per storage tensor, and whether every footprint
    behind them is ``exact``."""
    return IOBytes(
        reads={t: _bytes(program, f.elements, t) for t, f in io.reads.items()},
        writes={t: _bytes(program, f.elements, t) for t, f in io.writes.items()},
        exact=all(f.exact for f in [*io.reads.values(), *io.writes.values()]),
    )


def _storage_tensors(program: Program, roles: dict[str, str]) -> dict[str, TensorInfo]:
    """Per storage tensor (views excluded): shape, dtype, role (``roles``: the program's),
    bytes."""
    return {
        n: TensorInfo(n, tuple(t.shape), t.dtype, Role(roles[n]), t.nbytes)
        for n, t in program.tensors.items()
        if t.view is None
    }


def _views(program: Program) -> dict[str, ViewInfo]:
    return {
        n: ViewInfo(n, t.view.base, tuple(t.shape), tuple(t.view.strides), t.view.offset)
        for n, t in program.tensors.items()
        if t.view is not None
    }


class _Lifter:
    """Builds the graph kernel by kernel, statement by statement, remembering which op nodes
    wrote each storage tensor so far (the producers of later reads)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.ranks = assign_ranks(program)
        self.records: dict[str, NodeRecord] = {}  # by id, in program order
        self.links: list[Link] = []
        self.roles = program.roles()
        self.tensors = _storage_tensors(program, self.roles)
        # storage base -> op nodes that wrote it so far (tuples of names: the collector stops
        # tracking them, as it cannot for lists)
        self.writers: dict[str, tuple[str, ...]] = {}

    def add_inputs(self) -> None:
        """One ``in:<tensor>`` node per graph input, weight and constant."""
        for n, info in self.tensors.items():
            if info.role in ("input", "weight", "constant"):
                self.records[f"in:{n}"] = InputNode(f"in:{n}", Role(info.role), n)

    def add_kernel(self, ki: int, k: Kernel) -> KernelInfo:
        """The op nodes and read edges of kernel ``k``; returns its record (statements, DRAM
        reads and writes, chains)."""
        facts = kernel_facts(self.program, k)  # computed once per kernel structure
        stmt_ids = []
        for si, st in enumerate(k.statements):
            node = f"{k.name}/{si}"
            loads = self.add_op(node, ki, si, k, st, facts)
            stmt_ids.append(node)
            self.add_reads(node, loads, facts.footprints[si])
            base = self.program.base(st.out.tensor)
            wrote = self.writers.get(base, ())
            if node not in wrote:
                self.writers[base] = (*wrote, node)
        return KernelInfo(
            name=k.name,
            op=k.op,
            source=k.source,
            module=k.module,
            phase=k.phase,
            origin=k.origin,
            statements=tuple(stmt_ids),
            io=_io_bytes(self.program, facts.io),
            chains=tuple(kernel_chains(self.program, k)),
        )

    def add_op(
        self, node: str, ki: int, si: int, k: Kernel, st: Statement, facts: KernelFacts
    ) -> list[tuple]:
        """The op node of statement ``si`` of kernel ``k``, its dims renamed to the program's
        consistent ranks; returns its distinct loads ``(tensor, index)`` in order."""
        program = self.program
        whole = with_loops(st, k.loops)  # the loop dims are dims of every statement
        rename = {d.name: self.ranks[("stmt", ki, si, d.name)] for d in whole.dims}
        loads = list(dict.fromkeys((ld.tensor, ld.index) for ld in st.loads()))
        if isinstance(st, Scan):
            kind, extra = ScanNode, {"scan": rename[st.along]}
        elif isinstance(st, Extern):
            kind, extra = ExternNode, {"extern": st.routine}
        else:
            kind, extra = NestNode, {}
        rec = kind(
            id=node,
            op_kind=OpKind(facts.kinds[si]),
            ranks={rename[d.name]: d.extent for d in whole.dims},
            reduction_ranks=tuple(rename[d.name] for d in st.reduction_dims),
            loops=tuple(rename[d.name] for d in k.loops),
            reduce=st.reduce,
            ops={OpClass(k): v for k, v in facts.ops[si].items()},
            operands=tuple(_access(program, self.roles, t, i, rename) for t, i in loads),
            output=_access(program, self.roles, st.out.tensor, st.out.index, rename),
            guards=tuple(GuardRange(gd.expr.rename(rename), gd.lo, gd.hi) for gd in st.guards),
            precision=st.precision,
            kernel=k.name,
            source_op=k.op,
            source=k.source,
            module=k.module,
            phase=k.phase,
            **extra,
        )
        self.records[node] = rec
        return loads

    def add_reads(self, node: str, loads: list[tuple], footprints: tuple[Footprint, ...]) -> None:
        """One edge per load from each op that wrote the tensor so far (or from its
        ``in:`` node), with the bytes this access touches."""
        program, tensors = self.program, self.tensors
        for (tensor, _), fp in zip(loads, footprints, strict=True):
            base = program.base(tensor)
            edge = TensorEdge(
                tensor=base,
                view=tensor if tensor != base else None,
                shape=tuple(program.tensors[tensor].shape),
                dtype=program.tensors[base].dtype,
                role=tensors[base].role,
                bytes=tensors[base].bytes,
                footprint_bytes=_bytes(program, fp.elements, base),
            )
            has_input = f"in:{base}" in self.records
            sources = self.writers.get(base) or ([f"in:{base}"] if has_input else [])
            for src in sources:
                if src != node:
                    self.links.append(Link(src, node, tensor, edge))

    def add_outputs(self) -> None:
        """One ``out:<tensor>`` node per program output, fed by every op that wrote it (or by
        its input node: an output that is an input; an empty output nothing writes has no
        edge)."""
        for out in dict.fromkeys(self.program.base(o) for o in self.program.outputs):
            self.records[f"out:{out}"] = OutputNode(f"out:{out}", out)
            info = self.tensors[out]
            edge = TensorEdge(
                out, None, info.shape, info.dtype, Role.OUTPUT, info.bytes, info.bytes
            )
            has_input = f"in:{out}" in self.records
            for src in self.writers.get(out) or ([f"in:{out}"] if has_input else []):
                self.links.append(Link(src, f"out:{out}", out, edge))


def lift(program: Program, *, verified: bool = False, notes: Sequence[str] = ()) -> Graph:
    """The einsum graph of ``program`` (module docstring): input nodes, op nodes and their
    read edges kernel by kernel, output nodes, then the per-kernel and fused-program I/O.
    The program is verified first (:func:`solar.ir.program.verify`) unless ``verified``: a
    program a frontend's trace returned, which verified it as its last step."""
    if not verified:
        verify(program)
    lifter = _Lifter(program)
    lifter.add_inputs()
    kernels = tuple(lifter.add_kernel(ki, k) for ki, k in enumerate(program.kernels))
    lifter.add_outputs()
    routines = {r.extern for r in lifter.records.values() if isinstance(r, ExternNode)}
    info = GraphInfo(
        name=program.name,
        kernels=kernels,
        tensors=lifter.tensors,
        views=_views(program),
        fused_io=_io_bytes(program, program_io(program)),
        trace_notes=tuple(notes),
        routine_notes=tuple(routine_assumptions(routines)),
        complex=any(is_complex(t.dtype) for t in lifter.tensors.values()),
    )
    return checked(Graph(info, tuple(lifter.records.values()), tuple(lifter.links)))

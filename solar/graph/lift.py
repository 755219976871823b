"""Lift an Affine Loop IR program to an einsum graph (a networkx MultiDiGraph).

Deterministic and IR-only. Nodes:

- one ``op`` node per statement, id ``"<kernel>/<i>"``, with ``op_kind`` (contraction, map,
  reduction, copy, scan, gather, scatter, extern), ``einsum`` (operands written with
  consistent rank names; a data-dependent index prints as ``{ids[a]}``), ``ranks``
  (rank -> extent, including the kernel's sequential loop dims), ``loops`` (the ranks of
  those loop dims, outermost first), ``scan`` (the scanned rank), ``extern`` (the routine),
  ``reduce``, ``ops`` (op class -> count, over all loop iterations), ``kernel``,
  ``source_op``, ``source``, ``module``, ``phase`` (of a training step, else "");
- one node per graph input / weight / constant (``"in:<tensor>"``) and per graph output
  (``"out:<tensor>"``).

Edges are tensors flowing from producer to consumer, keyed by tensor name, with ``tensor``
(the storage base), ``shape``, ``dtype``, ``role``, ``bytes`` (the whole tensor) and
``footprint_bytes`` (what this access touches). ``graph.graph`` holds what the backends need
beyond nodes and edges: ``kernels`` (per launched kernel: statements, DRAM reads and writes
in bytes, phase and origin, and ``chains``: the loop-carried dependence chains of a looped
kernel, :func:`solar.ir.recurrence.kernel_chains` as dicts), ``tensors`` (per storage tensor:
shape, dtype, role, bytes), ``views`` (per view tensor: its storage ``base``, ``shape``,
element ``strides`` and ``offset``) and ``fused_io`` (bytes of graph inputs, weights and
outputs, each once).
"""

from __future__ import annotations

import networkx as nx

from solar.graph.cache import KernelFacts, kernel_facts
from solar.graph.ranks import assign_ranks
from solar.ir.affine import Affine
from solar.ir.cost import KernelIO, program_io
from solar.ir.footprint import Footprint
from solar.ir.program import Extern, Kernel, Program, Scan, Statement, verify, with_loops
from solar.ir.recurrence import kernel_chains
from solar.ir.scalar import Indirect


def _format_index(index: tuple[Affine, ...], rename: dict[str, str]) -> str:
    return ",".join(str(e.rename(rename)) for e in index)


def _einsum(st: Statement, loads: list[tuple], rename: dict[str, str]) -> str:
    ins = " ".join(f"{t}[{_format_index(i, rename)}]" for t, i in loads)
    return f"{ins} -> {st.out.tensor}[{_format_index(st.out.index, rename)}]"


def _access(program: Program, tensor: str, index: tuple[Affine, ...], rename, roles) -> dict:
    base = program.base(tensor)
    return {
        "tensor": tensor,
        "base": base,
        "role": roles[base]["role"],
        "itemsize": program.tensors[base].itemsize,
        "ranks": [rename.get(e.single_dim) if e.single_dim else None for e in index],
        "indirect": any(isinstance(e, Indirect) for e in index),
    }


def _bytes(program: Program, footprint_elements: int, tensor: str) -> int:
    return footprint_elements * program.tensors[tensor].itemsize


def _io_bytes(program: Program, io: KernelIO) -> dict:
    """DRAM ``reads`` and ``writes`` in bytes per storage tensor, and whether every footprint
    behind them is ``exact``."""
    return {
        "reads": {t: _bytes(program, f.elements, t) for t, f in io.reads.items()},
        "writes": {t: _bytes(program, f.elements, t) for t, f in io.writes.items()},
        "exact": all(f.exact for f in [*io.reads.values(), *io.writes.values()]),
    }


def _storage_tensors(program: Program) -> dict[str, dict]:
    """Per storage tensor (views excluded): shape, dtype, role, bytes."""
    return {
        n: {"shape": list(t.shape), "dtype": t.dtype, "role": program.role(n), "bytes": t.nbytes}
        for n, t in program.tensors.items()
        if t.view is None
    }


class _Lifter:
    """Builds the graph kernel by kernel, statement by statement, remembering which op nodes
    wrote each storage tensor so far (the producers of later reads)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.ranks = assign_ranks(program)
        self.g = nx.MultiDiGraph(name=program.name)
        self.tensors = _storage_tensors(program)
        self.writers: dict[str, list[str]] = {}  # storage base -> op nodes that wrote it so far

    def add_inputs(self) -> None:
        """One ``in:<tensor>`` node per graph input, weight and constant."""
        for n, info in self.tensors.items():
            if info["role"] in ("input", "weight", "constant"):
                self.g.add_node(f"in:{n}", kind=info["role"], tensor=n)

    def add_kernel(self, ki: int, k: Kernel) -> dict:
        """The op nodes and read edges of kernel ``k``; returns its ``graph.graph["kernels"]``
        record (statements, DRAM reads and writes)."""
        facts = kernel_facts(self.program, k)  # computed once per kernel structure
        stmt_ids = []
        for si, st in enumerate(k.statements):
            node = f"{k.name}/{si}"
            loads = self.add_op(node, ki, si, k, st, facts)
            stmt_ids.append(node)
            self.add_reads(node, loads, facts.footprints[si])
            base = self.program.base(st.out.tensor)
            if node not in self.writers.setdefault(base, []):
                self.writers[base].append(node)
        return {
            "name": k.name,
            "op": k.op,
            "source": k.source,
            "module": k.module,
            "phase": k.phase,
            "origin": k.origin,
            "statements": stmt_ids,
            **_io_bytes(self.program, facts.io),
            "chains": [c.to_dict() for c in kernel_chains(self.program, k)],
        }

    def add_op(
        self, node: str, ki: int, si: int, k: Kernel, st: Statement, facts: KernelFacts
    ) -> list[tuple]:
        """The op node of statement ``si`` of kernel ``k``, its dims renamed to the program's
        consistent ranks; returns its distinct loads ``(tensor, index)`` in order."""
        program, tensors = self.program, self.tensors
        whole = with_loops(st, k.loops)  # the loop dims are dims of every statement
        rename = {d.name: self.ranks[("stmt", ki, si, d.name)] for d in whole.dims}
        loads = list(dict.fromkeys((ld.tensor, ld.index) for ld in st.loads()))
        self.g.add_node(
            node,
            kind="op",
            op_kind=facts.kinds[si],
            einsum=_einsum(st, loads, rename),
            ranks={rename[d.name]: d.extent for d in whole.dims},
            reduction_ranks=[rename[d.name] for d in st.reduction_dims],
            loops=[rename[d.name] for d in k.loops],
            scan=rename[st.along] if isinstance(st, Scan) else None,
            extern=st.routine if isinstance(st, Extern) else None,
            reduce=st.reduce,
            ops=facts.ops[si],
            operands=[_access(program, t, i, rename, tensors) for t, i in loads],
            output=_access(program, st.out.tensor, st.out.index, rename, tensors),
            precision=st.precision,
            kernel=k.name,
            source_op=k.op,
            source=k.source,
            module=k.module,
            phase=k.phase,
        )
        return loads

    def add_reads(self, node: str, loads: list[tuple], footprints: tuple[Footprint, ...]) -> None:
        """One edge per load from each op that wrote the tensor so far (or from its
        ``in:`` node), with the bytes this access touches."""
        program, tensors = self.program, self.tensors
        for (tensor, _), fp in zip(loads, footprints, strict=True):
            base = program.base(tensor)
            edge = dict(
                tensor=base,
                view=tensor if tensor != base else None,
                shape=list(program.tensors[tensor].shape),
                dtype=program.tensors[base].dtype,
                role=tensors[base]["role"],
                bytes=tensors[base]["bytes"],
                footprint_bytes=_bytes(program, fp.elements, base),
            )
            has_input = self.g.has_node(f"in:{base}")
            sources = self.writers.get(base) or ([f"in:{base}"] if has_input else [])
            for src in sources:
                if src != node:
                    self.g.add_edge(src, node, key=tensor, **edge)

    def add_outputs(self) -> None:
        """One ``out:<tensor>`` node per program output, fed by every op that wrote it (or by
        its input node: an output that is an input)."""
        for out in dict.fromkeys(self.program.base(o) for o in self.program.outputs):
            self.g.add_node(f"out:{out}", kind="output", tensor=out)
            for src in self.writers.get(out, [f"in:{out}"]):
                info = self.tensors[out]
                self.g.add_edge(
                    src,
                    f"out:{out}",
                    key=out,
                    tensor=out,
                    view=None,
                    shape=info["shape"],
                    dtype=info["dtype"],
                    role="output",
                    bytes=info["bytes"],
                    footprint_bytes=info["bytes"],
                )


def lift(program: Program) -> nx.MultiDiGraph:
    """The einsum graph of ``program`` (module docstring): input nodes, op nodes and their
    read edges kernel by kernel, output nodes, then the per-kernel and fused-program I/O.
    The program is verified first (:func:`solar.ir.program.verify`)."""
    verify(program)
    lifter = _Lifter(program)
    lifter.add_inputs()
    kernels = [lifter.add_kernel(ki, k) for ki, k in enumerate(program.kernels)]
    lifter.add_outputs()
    lifter.g.graph.update(
        name=program.name,
        kernels=kernels,
        tensors=lifter.tensors,
        views={
            n: {
                "base": t.view.base,
                "shape": list(t.shape),
                "strides": list(t.view.strides),
                "offset": t.view.offset,
            }
            for n, t in program.tensors.items()
            if t.view is not None
        },
        fused_io=_io_bytes(program, program_io(program)),
    )
    return lifter.g


def operands(g: nx.MultiDiGraph, node: str) -> list[dict]:
    """The distinct tensors an op node reads, in edge order (edge attribute dicts)."""
    seen, out = set(), []
    for _, _, key, data in g.in_edges(node, keys=True, data=True):
        if key not in seen:
            seen.add(key)
            out.append(data)
    return out

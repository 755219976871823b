"""Lift an Affine Loop IR program to an einsum graph (a networkx MultiDiGraph).

Deterministic and IR-only. Nodes:

- one ``op`` node per statement, id ``"<kernel>/<i>"``, with ``op_kind`` (contraction, map,
  reduction, copy, scan, gather, scatter, extern), ``einsum`` (operands written with
  consistent rank names; a data-dependent index prints as ``{ids[a]}``), ``ranks``
  (rank -> extent, including the kernel's sequential loop dims), ``loops`` (the ranks of
  those loop dims, outermost first), ``scan`` (the scanned rank), ``extern`` (the routine),
  ``reduce``, ``ops`` (op class -> count, over all loop iterations), ``kernel``,
  ``source_op``, ``source``, ``module``;
- one node per graph input / weight / constant (``"in:<tensor>"``) and per graph output
  (``"out:<tensor>"``).

Edges are tensors flowing from producer to consumer, keyed by tensor name, with ``tensor``
(the storage base), ``shape``, ``dtype``, ``role``, ``bytes`` (the whole tensor) and
``footprint_bytes`` (what this access touches). ``graph.graph`` holds what the backends need
beyond nodes and edges: ``kernels`` (per launched kernel: statements, DRAM reads and writes
in bytes, and ``chains``: the loop-carried dependence chains of a looped kernel,
:func:`solar.ir.recurrence.kernel_chains` as dicts), ``tensors`` (per storage tensor: shape,
dtype, role, bytes) and ``fused_io`` (bytes of graph inputs, weights and outputs, each once).
"""

from __future__ import annotations

import networkx as nx

from solar.graph.cache import kernel_facts
from solar.graph.ranks import assign_ranks
from solar.ir.affine import Affine
from solar.ir.cost import program_io
from solar.ir.program import Program, Statement, with_loops
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


def lift(program: Program) -> nx.MultiDiGraph:
    ranks = assign_ranks(program)
    g = nx.MultiDiGraph(name=program.name)
    tensors = {
        n: {"shape": list(t.shape), "dtype": t.dtype, "role": program.role(n), "bytes": t.nbytes}
        for n, t in program.tensors.items()
        if t.view is None
    }
    for n, info in tensors.items():
        if info["role"] in ("input", "weight", "constant"):
            g.add_node(f"in:{n}", kind=info["role"], tensor=n)
    writers: dict[str, list[str]] = {}  # storage base -> op nodes that wrote it so far
    kernels = []
    for ki, k in enumerate(program.kernels):
        facts = kernel_facts(program, k)  # computed once per kernel structure
        io = facts.io
        stmt_ids = []
        for si, st in enumerate(k.statements):
            node = f"{k.name}/{si}"
            whole = with_loops(st, k.loops)  # the loop dims are dims of every statement
            rename = {d.name: ranks[("stmt", ki, si, d.name)] for d in whole.dims}
            loads = list(dict.fromkeys((ld.tensor, ld.index) for ld in st.loads()))
            g.add_node(
                node,
                kind="op",
                op_kind=facts.kinds[si],
                einsum=_einsum(st, loads, rename),
                ranks={rename[d.name]: d.extent for d in whole.dims},
                reduction_ranks=[rename[d.name] for d in st.reduction_dims],
                loops=[rename[d.name] for d in k.loops],
                scan=rename[st.scan] if st.scan is not None else None,
                extern=st.extern,
                reduce=st.reduce,
                ops=facts.ops[si],
                operands=[_access(program, t, i, rename, tensors) for t, i in loads],
                output=_access(program, st.out.tensor, st.out.index, rename, tensors),
                precision=st.precision,
                kernel=k.name,
                source_op=k.op,
                source=k.source,
                module=k.module,
            )
            stmt_ids.append(node)
            for (tensor, _), fp in zip(loads, facts.footprints[si], strict=True):
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
                sources = writers.get(base) or ([f"in:{base}"] if g.has_node(f"in:{base}") else [])
                for src in sources:
                    if src != node:
                        g.add_edge(src, node, key=tensor, **edge)
            base = program.base(st.out.tensor)
            if node not in writers.setdefault(base, []):
                writers[base].append(node)
        kernels.append(
            {
                "name": k.name,
                "op": k.op,
                "source": k.source,
                "module": k.module,
                "statements": stmt_ids,
                "reads": {t: _bytes(program, f.elements, t) for t, f in io.reads.items()},
                "writes": {t: _bytes(program, f.elements, t) for t, f in io.writes.items()},
                "exact": all(f.exact for f in [*io.reads.values(), *io.writes.values()]),
                "chains": [c.to_dict() for c in kernel_chains(program, k)],
            }
        )
    for out in dict.fromkeys(program.base(o) for o in program.outputs):
        g.add_node(f"out:{out}", kind="output", tensor=out)
        for src in writers.get(out, [f"in:{out}"]):
            info = tensors[out]
            g.add_edge(
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
    fio = program_io(program)
    g.graph.update(
        name=program.name,
        kernels=kernels,
        tensors=tensors,
        fused_io={
            "reads": {t: _bytes(program, f.elements, t) for t, f in fio.reads.items()},
            "writes": {t: _bytes(program, f.elements, t) for t, f in fio.writes.items()},
            "exact": all(f.exact for f in [*fio.reads.values(), *fio.writes.values()]),
        },
    )
    return g


def operands(g: nx.MultiDiGraph, node: str) -> list[dict]:
    """The distinct tensors an op node reads, in edge order (edge attribute dicts)."""
    seen, out = set(), []
    for _, _, key, data in g.in_edges(node, keys=True, data=True):
        if key not in seen:
            seen.add(key)
            out.append(data)
    return out

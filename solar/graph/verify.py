"""``verify_graph``: the einsum graph's invariants, checked after lifting and after every pass.

The graph is the middle IR every analysis reads, so what a pass may assume of it is written
down here and checked, the way :func:`solar.ir.program.verify` checks a program:

- every edge joins two nodes of the graph, and its tensor is produced before it is used: its
  source is the tensor's input node (``in:<tensor>``) or an op node earlier in program order
  that writes the tensor;
- shapes and dtypes agree: an edge's dtype and role are its storage tensor's, its shape that
  of the tensor or view it reads; an op node reads each edge's key through one of its
  operand accesses, and every access names a known tensor with one index entry per axis;
- the facts are present: every op node has its kind, its work per op class (known classes,
  no negative count) and its ranks; every kernel's statements are op nodes of the graph,
  every op node belongs to its kernel's statements; every output node is fed.
"""

from __future__ import annotations

import os

from solar.graph.types import Graph, InputNode, OpNode, OutputNode
from solar.ir.vocabulary import OpClass, OpKind, Role


class GraphError(ValueError):
    """An einsum graph breaks an invariant of :func:`verify_graph`."""


def _fail(g: Graph, what: str) -> None:
    raise GraphError(f"einsum graph {g.name}: {what}")


def _check_op(g: Graph, d: OpNode, kernel_of: dict[str, str]) -> None:
    info = g.info
    if not isinstance(d.op_kind, OpKind):
        _fail(g, f"{d.id} has no op kind (got {d.op_kind!r})")
    for cls, n in d.ops.items():
        if not isinstance(cls, OpClass) or n < 0:
            _fail(g, f"{d.id} counts {n!r} of {cls!r}: not an op class and a count")
    if any(r not in d.ranks for r in (*d.reduction_ranks, *d.loops)):
        _fail(g, f"{d.id} reduces or loops over a rank it has no extent for")
    if kernel_of.get(d.id) != d.kernel:
        _fail(g, f"{d.id} is not a statement of its kernel {d.kernel}")
    for acc in (*d.operands, d.output):
        if acc.base not in info.tensors:
            _fail(g, f"{d.id} accesses {acc.tensor} of unknown storage {acc.base}")
        if acc.tensor != acc.base and acc.tensor not in info.views:
            _fail(g, f"{d.id} accesses {acc.tensor}, neither a tensor nor a view of the graph")
        if len(acc.index) != len(acc.shape):
            _fail(
                g,
                f"{d.id} indexes {acc.tensor} with {len(acc.index)} entries for "
                f"{len(acc.shape)} axes",
            )
        if acc.dtype != info.tensors[acc.base].dtype:
            _fail(
                g,
                f"{d.id} reads {acc.tensor} as {acc.dtype}, stored as "
                f"{info.tensors[acc.base].dtype}",
            )


def verify_graph(g: Graph) -> Graph:
    """Check ``g``'s invariants (module docstring); returns ``g``, raises :class:`GraphError`
    naming the first one broken."""
    info = g.info
    order = {r.id: i for i, r in enumerate(g.records)}
    kernel_of = {s: k.name for k in info.kernels for s in k.statements}
    missing = [s for s in kernel_of if not isinstance(g.op(s) if s in g else None, OpNode)]
    if missing:
        _fail(g, f"kernel statements {missing[:3]} are not op nodes")
    for r in g.records:
        if isinstance(r, OpNode):
            _check_op(g, r, kernel_of)
        elif isinstance(r, InputNode):
            t = info.tensors.get(r.tensor)
            if t is None or not Role(r.kind).resident or t.role != r.kind:
                _fail(g, f"{r.id} is not a graph input, weight or constant of that role")
        elif isinstance(r, OutputNode) and r.tensor not in info.tensors:
            _fail(g, f"{r.id} names no tensor of the graph")
    for src, dst, key, e in g.edges():
        if src not in order or dst not in order:
            _fail(g, f"edge {src} -> {dst} joins a node the graph does not have")
        t = info.tensors.get(e.tensor)
        if t is None:
            _fail(g, f"edge {src} -> {dst} carries unknown tensor {e.tensor}")
        if (e.dtype, e.role) != (t.dtype, t.role) and e.role != Role.OUTPUT:
            _fail(
                g,
                f"edge {src} -> {dst} carries {e.tensor} as {e.dtype} {e.role}, "
                f"stored as {t.dtype} {t.role}",
            )
        read = info.views[key].shape if key in info.views else t.shape
        if tuple(e.shape) != tuple(read):
            _fail(g, f"edge {src} -> {dst} reads {key} as {list(e.shape)}, not {list(read)}")
        source = g.node(src)
        if isinstance(source, InputNode):
            ok = source.tensor == e.tensor
        else:
            ok = (
                isinstance(source, OpNode)
                and source.output.base == e.tensor
                and order[src] < order[dst]
            )
        if not ok:
            _fail(g, f"{e.tensor} is used by {dst} before {src} produces it")
        target = g.node(dst)
        if isinstance(target, OpNode) and all(a.tensor != key for a in target.operands):
            _fail(g, f"{dst} has an edge for {key} but no access reads it")
        if isinstance(target, OutputNode) and target.tensor != e.tensor:
            _fail(g, f"{dst} is fed {e.tensor}")
    return g


def checks_enabled() -> bool:
    """Whether lifting and every graph pass verify their graph (``SOLAR_CHECK_GRAPHS=1``: the
    test suite sets it, as JAX's tests set ``jax_enable_checks``; off by default, it costs a
    walk of the graph)."""
    return os.environ.get("SOLAR_CHECK_GRAPHS", "") not in ("", "0")


def checked(g: Graph) -> Graph:
    """``g``, verified when checks are enabled (:func:`checks_enabled`)."""
    return verify_graph(g) if checks_enabled() else g

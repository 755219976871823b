"""Contractions of dequantised narrow data, charged at the narrow rate.

A reference often writes a quantised GEMM for clarity: it converts FP8 (or unpacks FP4/int4
bytes), multiplies by block scales and runs the matmul in bf16/fp32. A kernel may instead feed
the narrow operands straight to FP8/FP4 tensor cores with identical results, skipping the
dequantisation. For the bound to stay below such a kernel, a contraction whose *both* operands
are computed (through elementwise maps, copies, views and gathers) from narrow graph inputs is
charged at the narrow class (``tc_fp8``; ``tc_fp4`` for data packed in bytes, which the spec may
run at its narrowest rate that consumes it, e.g. B200 FP4, H100 FP8), and the dequantisation
work on those paths is not charged. Bytes are already those of the packed inputs. A
contraction with one narrow operand (weight-only int8/int4 GEMMs) keeps its class: no tensor
core multiplies bf16 by int8, but its weight bytes are the packed ones.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from solar.graph.types import Graph, InputNode, OpClass, OpKind, OpNode

#: narrow input dtype -> the op class a native kernel would use
NARROW_CLASS = {
    "float8_e4m3fn": OpClass.TC_FP8,
    "float8_e5m2": OpClass.TC_FP8,
    "float4_e2m1fn_x2": OpClass.TC_FP4,
    "uint8": OpClass.TC_FP4,  # packed 4-bit data (two values a byte): FP4 or int4
    "int8": OpClass.TC_INT8,
}
#: narrower first
ORDER = (OpClass.TC_FP4, OpClass.TC_FP8, OpClass.TC_INT8)
_PASS_THROUGH = {OpKind.COPY, OpKind.MAP, OpKind.GATHER}
#: no narrow source: one shared pair for the many nodes that have none
_NONE: tuple[frozenset[str], frozenset] = (frozenset(), frozenset())


def _narrow_sources(g: Graph, n, memo: dict) -> tuple[frozenset[str], frozenset]:
    """(narrow classes of the graph inputs node ``n``'s output is computed from, the op nodes on
    those paths) through pass-through ops; empty when a non-narrow large path intervenes."""
    if n in memo:
        return memo[n]
    memo[n] = _NONE
    rec = g.node(n)
    if isinstance(rec, InputNode) and rec.kind == "input":
        dtypes = {e.dtype for _, _, e in g.out_edges(n)}
        classes = {NARROW_CLASS[d] for d in dtypes if d in NARROW_CLASS}
        memo[n] = (frozenset(classes), _NONE[1]) if classes else _NONE
        return memo[n]
    op = g.op(n)
    if op is None or op.op_kind not in _PASS_THROUGH:
        return memo[n]
    classes: set[str] = set()
    path = {n}
    for pred in set(g.predecessors(n)):
        c, p = _narrow_sources(g, pred, memo)
        if c:
            classes |= c
            path |= p
    memo[n] = (frozenset(classes), frozenset(path)) if classes else _NONE
    return memo[n]


@dataclass(frozen=True)
class Recharged:
    """The narrow pass's result: the graph with its dequantised contractions recharged (the
    graph it was given when there is none) and the note for the Bound's assumptions."""

    graph: Graph
    notes: tuple[str, ...]


def recharge_narrow(g: Graph) -> Recharged:
    """``g`` with its dequantised contractions charged at the narrow rate and the
    dequantisation work on their paths dropped (a new graph: ``g`` is left as it is)."""
    memo: dict = {}
    notes: list[str] = []
    dropped: set = set()
    changed: dict[str, OpNode] = {}
    for data in g.ops():
        if data.op_kind != "contraction":
            continue
        ops = data.ops
        flops = sum(v for k, v in ops.items() if OpClass(k).multiply_adds)
        found = [_narrow_sources(g, u, memo) for u in g.predecessors(data.id)]
        operand_classes = [c for c, _ in found if c]
        if len(operand_classes) < 2 or not flops:
            continue
        # the wider operand decides (an FP8 x FP4 MMA runs at the FP8 rate)
        cls = max((min(c, key=ORDER.index) for c in operand_classes), key=ORDER.index)
        new_ops = {cls: flops, **{k: v for k, v in ops.items() if not OpClass(k).multiply_adds}}
        changed[data.id] = dataclasses.replace(data, ops=new_ops)
        for _, p in found:
            dropped |= p
        notes.append(f"{data.kernel}: {cls}")
    for n in dropped:
        changed[n] = dataclasses.replace(changed.get(n) or g.node(n), ops={})
    if not notes:
        return Recharged(g, ())
    note = (
        "narrow formats: contractions whose operands are dequantised FP8/FP4/int8 inputs are "
        "charged at the narrow tensor-core rate a native kernel would use (the spec's "
        "narrowest rate that consumes them), without the dequantisation work; bytes at the "
        "packed size (" + ", ".join(notes[:6]) + (" ..." if len(notes) > 6 else "") + ")"
    )
    return Recharged(g.with_nodes(changed), (note,))

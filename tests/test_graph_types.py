"""The einsum graph holds only typed records (solar/graph/types.py); the backend reads them."""

import ast
import dataclasses
import json
from pathlib import Path

import pytest
import torch

import solar
from solar.graph import lift
from solar.graph.export import to_json
from solar.graph.types import (
    DataDependent,
    Graph,
    GraphInfo,
    InputNode,
    IOBytes,
    KernelInfo,
    OpNode,
    OutputNode,
    TensorAccess,
    TensorEdge,
    TensorInfo,
    ViewInfo,
)
from solar.graph.verify import GraphError, verify_graph
from solar.ir.affine import Affine

ROOT = Path(__file__).resolve().parents[1]


def meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


def _graphs():
    def causal(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    def gather_mlp(tab, ids, w):
        return torch.relu(tab[ids] @ w.t())

    q = meta(1, 2, 64, 16, dtype=torch.bfloat16)
    ids = torch.zeros(8, dtype=torch.long, device="meta")

    def masked(x):  # a data-dependent size assumed 0: an output nothing writes
        return x[x > 0].exp()

    return [
        lift(solar.trace(causal, [q, q.clone(), q.clone()]).program),
        lift(solar.trace(gather_mlp, [meta(32, 16), ids, meta(24, 16)]).program),
        lift(solar.trace(masked, [meta(64, 64)]).program),
    ]


@pytest.mark.parametrize("g", _graphs(), ids=["causal_sdpa", "gather_mlp", "empty_output"])
def test_the_graph_holds_only_typed_records(g):
    assert isinstance(g, Graph) and isinstance(g.info, GraphInfo)
    info = g.info
    assert verify_graph(g) is g
    assert all(isinstance(k, KernelInfo) and isinstance(k.io, IOBytes) for k in info.kernels)
    assert all(isinstance(t, TensorInfo) for t in info.tensors.values())
    assert all(isinstance(v, ViewInfo) for v in info.views.values())
    assert isinstance(info.fused_io, IOBytes)
    for d in g.nodes():
        assert isinstance(d, OpNode | InputNode | OutputNode) and g.node(d.id) is d
    for _, _, _, e in g.edges():
        assert isinstance(e, TensorEdge)
    for op in g.ops():
        for acc in (*op.operands, op.output):
            assert isinstance(acc, TensorAccess)
            assert all(isinstance(e, Affine | DataDependent) for e in acc.index)
            assert len(acc.index) == len(acc.shape)
        with pytest.raises(dataclasses.FrozenInstanceError):
            op.op_kind = "map"  # type: ignore[misc]


def test_views_and_data_dependent_entries_are_structured():
    """A transposed weight is read through a view (its strides and offset in the access); a
    gathered row index is a DataDependent entry naming the rank its value depends on."""
    g = _graphs()[1]
    gather = next(d for d in g.ops() if d.op_kind == "gather")
    (entry, col) = gather.operands[0].index
    assert isinstance(entry, DataDependent) and isinstance(col, Affine)
    assert gather.operands[0].indirect and gather.operands[0].ranks == (None, col.single_dim)
    assert entry.ranks == (gather.output.ranks[0],)
    mm = next(d for d in g.ops() if d.op_kind == "contraction")
    wt = next(a for a in mm.operands if a.base == "w")
    assert wt.tensor != "w" and wt.shape == (16, 24) and (wt.strides, wt.offset) == ((1, 16), 0)
    view = g.info.views[wt.tensor]
    assert (view.base, view.strides, view.offset) == ("w", (1, 16), 0)


def test_causal_guard_is_a_record_over_output_ranks():
    g = _graphs()[0]
    qk = next(d for d in g.ops() if d.op_kind == "contraction")
    (guard,) = qk.guards
    b, i, j = qk.output.ranks[1:]
    assert guard.expr == Affine.of(j) - Affine.of(i) and (guard.lo, guard.hi) == (-63, 1)
    assert guard.ranks <= set(qk.output.ranks)
    assert qk.einsum == f"q[0,{b},{i},e] k[0,{b},{j},e] -> sdpa_scores[a,{b},{i},{j}]"


def test_json_export_is_plain_data():
    g = _graphs()[0]
    data = json.loads(to_json(g))
    assert data["graph"]["name"] == "causal" and data["graph"]["kernels"][0]["reads"]
    op = next(n for n in data["nodes"] if n["kind"] == "op")
    assert op["einsum"].startswith("q[") and op["guards"][0]["expr"] == "-c+d"
    assert op["operands"][0]["index"] == ["0", "b", "c", "e"]
    assert op["operands"][0]["ranks"] == [None, "b", "c", "e"]
    assert all(isinstance(e["footprint_bytes"], int) for e in data["edges"])
    assert {e["key"] for e in data["edges"]} >= {"q", "k", "v"}


def test_cache_aware_reads_structure_not_text():
    tree = ast.parse((ROOT / "solar/backend/cache_aware.py").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "re" not in imported
    assert "einsum" not in (ROOT / "solar/backend/cache_aware.py").read_text().split('"""', 2)[2]


def test_rank_names_never_run_out():
    """A large training step (transformers' BEAM) needs more than 26,000 rank names."""
    from itertools import islice

    from solar.graph.ranks import _letters

    names = list(islice(_letters(), 30_000))
    assert (
        names[:2] == ["a", "b"] and names[26] == "a1" and names[-1] == "v1153"
    )  # 30,000 = 1,153 x 26 + 22
    assert len(set(names)) == 30_000


def test_a_graph_is_immutable_and_passes_return_new_graphs():
    """Records and the graph refuse assignment; ``with_nodes`` makes a new graph and leaves
    the old one as it was (its adjacency too)."""
    g = _graphs()[1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.info = g.info  # type: ignore[misc]
    mm = next(d for d in g.ops() if d.op_kind == "contraction")
    h = g.with_nodes({mm.id: dataclasses.replace(mm, ops={})})
    assert h.op(mm.id).ops == {} and g.op(mm.id) is mm and g.op(mm.id).ops
    assert list(h.in_edges(mm.id)) == list(g.in_edges(mm.id))
    assert h.predecessors(mm.id) == g.predecessors(mm.id)
    nxg = g.to_networkx()  # the networkx export: same nodes and edges, records attached
    assert list(nxg.nodes) == [d.id for d in g.nodes()]
    assert nxg.number_of_edges() == len(g.links)


def test_analysis_leaves_its_graph_as_it_was():
    """A dequantised FP8 GEMM is recharged at the FP8 rate by the narrow pass, on a new graph:
    the graph given to the analysis keeps its bf16 work (2·32·64·48 flops), the Bound charges
    it as tc_fp8, and a second analysis of the same graph gives the same Bound."""
    from solar.backend import analyze
    from solar.hw import load_spec

    def dequant_mm(a, b):
        return a.to(torch.bfloat16) @ b.to(torch.bfloat16)

    f8 = torch.float8_e4m3fn
    _, g = solar.trace_and_lift(dequant_mm, [meta(32, 64, dtype=f8), meta(64, 48, dtype=f8)])
    before = [(d.id, dict(d.ops)) for d in g.ops()]
    mm = next(d for d in g.ops() if d.op_kind == "contraction")
    assert dict(mm.ops) == {"tc_bf16": 2 * 32 * 64 * 48}
    b1 = analyze(g, load_spec("H100"))
    assert [(d.id, dict(d.ops)) for d in g.ops()] == before
    assert b1.flops.get("tc_fp8") == 2 * 32 * 64 * 48 and "tc_bf16" not in b1.flops
    assert analyze(g, load_spec("H100")).to_json() == b1.to_json()


def _broken(g, **change):
    """``g`` with the first edge's record changed."""
    first = g.links[0]
    e = dataclasses.replace(first.edge, **change)
    return Graph(g.info, g.records, (dataclasses.replace(first, edge=e), *g.links[1:]))


def test_verify_graph_names_the_broken_invariant():
    g = _graphs()[1]
    with pytest.raises(GraphError, match="carries tab as float64"):
        verify_graph(_broken(g, dtype="float64"))
    with pytest.raises(GraphError, match="reads .* as \\[1\\]"):
        verify_graph(_broken(g, shape=(1,)))
    # an edge from a later op node: used before it is produced
    ops = list(g.ops())
    late = dataclasses.replace(g.links[-1], src=ops[-1].id, dst=ops[0].id)
    with pytest.raises(GraphError):
        verify_graph(Graph(g.info, g.records, (*g.links, late)))
    # a kernel statement that is no node of the graph
    k = dataclasses.replace(g.info.kernels[0], statements=("nowhere/0",))
    info = dataclasses.replace(g.info, kernels=(k, *g.info.kernels[1:]))
    with pytest.raises(GraphError, match="not op nodes"):
        verify_graph(g.with_info(info))

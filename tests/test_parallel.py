"""Many GPUs (issue 15): collective lower bounds, interconnect specs, split groups derived from
the einsum graph, and the bounds of tensor-, data- and pipeline-parallel plans, by hand."""

import math

import pytest
import torch
from torch import nn

import solar
from solar.api import bound_parallel, trace_and_lift
from solar.backend.parallel.collectives import per_gpu_bytes
from solar.backend.parallel.model import ParallelModel
from solar.backend.parallel.parallel_bound import Plan
from solar.backend.parallel.pipeline import partition
from solar.backend.units import compute_time
from solar.hw import SpecError, load_spec

H100, A100 = load_spec("H100"), load_spec("A100")
LINK_H100 = (18 * 25 + 32 * 16 / 8) * 1e9  # NVLink 4 per direction + PCIe Gen5 x16 per direction


# --------------------------------------------------------------------------------------------
# collectives and links


@pytest.mark.parametrize(
    "kind,n,in_network,factor",
    [
        ("all-reduce", 2, False, 1.0),  # 2(n-1)/n
        ("all-reduce", 8, False, 1.75),
        ("all-reduce", 8, True, 1.0),  # NVLink SHARP: M each way
        ("reduce-scatter", 4, False, 0.75),
        ("all-gather", 4, True, 0.75),  # no switch can add what a GPU lacks
        ("all-to-all", 4, False, 3 / 16),
        ("send", 1, False, 1.0),
        ("all-reduce", 1, False, 0.0),
    ],
)
def test_collective_bytes_per_gpu(kind, n, in_network, factor):
    assert per_gpu_bytes(kind, 1000.0, n, in_network) == pytest.approx(1000.0 * factor)


def test_interconnect_specs_per_direction():
    """The datasheets' "NVLink 900 GB/s" is both directions of 18 links x 25 GB/s."""
    ic = H100.interconnect
    assert (ic.nvlink_generation, ic.nvlink_links, ic.nvswitch) == (4, 18, True)
    assert ic.nvlink_bandwidth == 450e9 and ic.nvlink_bidirectional == H100.nvlink_bandwidth
    assert ic.pcie_bandwidth == 64e9 and ic.link_bandwidth == LINK_H100
    assert ic.reduces_in_network(8) and not A100.interconnect.reduces_in_network(8)
    assert load_spec("B200").interconnect.nvlink_bandwidth == 900e9  # 1.8 TB/s bidirectional
    pcie = load_spec("H100-PCIe").interconnect
    assert (pcie.nvswitch, pcie.nvlink_domain_gpus, pcie.link_bandwidth) == (False, 2, 364e9)
    l40s = load_spec("L40S").interconnect
    assert l40s.nvlink_generation is None and l40s.link_bandwidth == 32e9
    assert load_spec(H100.to_dict()) == H100  # the block round-trips


def test_bad_interconnect_block_names_the_field():
    d = H100.to_dict()
    d["interconnect"] = {**d["interconnect"], "nvlink_links": -1}
    with pytest.raises(SpecError, match="interconnect.nvlink_links"):
        load_spec(d)
    d["interconnect"] = {**H100.to_dict()["interconnect"], "nvlink_link_gbs": 50}
    with pytest.raises(SpecError, match="1800 GB/s, but nvlink_bandwidth_gbs"):
        load_spec(d)
    d = H100.to_dict()
    del d["interconnect"]
    x = torch.empty(64, 64, device="meta")
    with pytest.raises(ValueError, match="no 'interconnect:' block"):
        solar.plan(lambda a: a @ a, [x], hw=load_spec(d), gpus=2)


# --------------------------------------------------------------------------------------------
# tensor parallel: a 2-GPU MLP by hand

T, D, HID = 4096, 1024, 4096
BF = 2  # bytes per bf16


def mlp():
    with torch.device("meta"):
        m = nn.Sequential(nn.Linear(D, HID), nn.ReLU(), nn.Linear(HID, D)).to(torch.bfloat16)
        return m, torch.empty(T, D, dtype=torch.bfloat16)


def test_tp2_mlp_by_hand():
    """Column-parallel first linear, row-parallel second (Megatron), found from the graph:
    the hidden axis (4096) is split; each GPU does half of both matmuls and of the ReLU;
    the second matmul's partial sums y [4096, 1024] are all-reduced: 2(2-1)/2 x 8 MiB."""
    model, x = mlp()
    pb = solar.plan(model, [x], hw="H100", gpus=2, tp=2)
    assert pb.plan.describe() == "TP 2 x PP 1 x DP 1"
    assert [g["label"] for g in pb.tp_groups] == ["0_weight[0]"]  # Linear(1024, 4096).weight
    assert pb.tp_groups[0]["extent"] == HID
    one = pb.single
    matmul = 2 * 2 * T * D * HID  # two matmuls, 2 flops per multiply-add
    assert one.flops["tc_bf16"] == matmul
    compute = compute_time({**one.flops, "tc_bf16": matmul / 2, "cuda_bf16": T * HID / 2}, H100)
    assert pb.stages[0].compute_s == pytest.approx(compute.seconds, rel=1e-12)
    assert pb.stages[0].compute_s == pytest.approx(one.compute_s["tensor"] / 2, rel=1e-12)
    y = T * D * BF
    (ar,) = pb.collectives
    assert (ar["tensor"], ar["kind"], ar["n"], ar["tensor_bytes"]) == (
        "addmm_1",
        "all-reduce",
        2,
        y,
    )
    assert ar["bytes_per_gpu"] == y and ar["time_s"] == pytest.approx(y / LINK_H100)
    # per GPU DRAM: x, half of W1 and b1, half of W2, all of b2, all of y (after the all-reduce)
    nbytes = (T * D + HID * D / 2 + HID / 2 + D * HID / 2 + D + T * D) * BF
    assert pb.stages[0].bytes_fused == nbytes
    assert pb.fused == pytest.approx(
        max(compute.seconds, nbytes / H100.dram_bandwidth, y / LINK_H100), rel=1e-12
    )
    # memory per GPU: x and the weight shards resident; h and relu(h) halves; y whole (partial)
    resident = (T * D + HID * D / 2 + HID / 2 + D * HID / 2 + D) * BF
    assert pb.peak_bytes == resident + 2 * (T * HID / 2) * BF
    assert pb.fits and pb.ideal_s == pytest.approx(one.fused / 2)


def test_tp_on_eight_gpus_uses_the_switch_and_pcie_counts():
    """8 H100s: NVLink SHARP all-reduces move M per GPU, not 2(8-1)/8 M; on A100s (no SHARP)
    they move 1.75 M."""
    model, x = mlp()
    h = solar.plan(model, [x], hw="H100", gpus=8, tp=8)
    a = solar.plan(model, [x], hw="A100", gpus=8, tp=8)
    (ch,), (ca,) = h.collectives, a.collectives
    assert ch["in_network"] and ch["bytes_per_gpu"] == T * D * BF
    assert not ca["in_network"] and ca["bytes_per_gpu"] == 1.75 * T * D * BF
    assert ca["time_s"] == pytest.approx(1.75 * T * D * BF / (300e9 + 32e9))


# --------------------------------------------------------------------------------------------
# split groups of a GPT block, and its peak memory by hand


def gpt_block(b=2, t=16, c=64, heads=4):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "model_gpt_block.py"
    spec = importlib.util.spec_from_file_location("gpt_block_example", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with torch.device("meta"):
        return mod.Model(c, heads), torch.empty(b, t, c, dtype=torch.bfloat16)


def test_gpt_block_split_groups():
    """Heads: c_attn's output features, the q/k/v head axis (through views of slices), the
    attention output's head axis (axis 2 of its [b, t, h, d] storage, CUDA's layout) and
    c_proj's input features split together (extent = 4 heads); the MLP's hidden units; the
    batch (axis 0 of x, linked to the flattened tokens of every linear)."""
    model, x = gpt_block()
    _, g = trace_and_lift(model, [x])
    index = ParallelModel(g).index
    heads = index.groups[index.group_of_axis("c_attn_weight", 0)]
    assert heads.reason is None and heads.extent == 4
    assert {("c_proj_weight", 1), ("sdpa_storage", 2), ("addmm", 1)} <= set(heads.axes)
    mlp_hidden = index.groups[index.group_of_axis("c_fc_weight", 0)]
    assert mlp_hidden.extent == 256 and ("mlp_proj_weight", 1) in mlp_hidden.axes
    batch = index.groups[index.batch_group()]
    assert batch.extent == 2 and {("x", 0), ("addmm", 0), ("gelu", 0)} <= set(batch.axes)


def test_views_that_disagree_make_a_group_unsplittable():
    """h[:, :D] and h.view(T, 2, D) impose different blocks on h's feature axis."""

    def f(x, w):
        h = x @ w
        return h[:, :8] * 2, h.view(16, 2, 8).sum(1)

    x, w = torch.empty(16, 4, device="meta"), torch.empty(4, 16, device="meta")
    _, g = trace_and_lift(f, [x, w])
    index = ParallelModel(g).index
    grp = index.groups[index.group_of_axis("w", 1)]
    assert grp.reason == "views impose different blocks on one of its axes"
    assert not grp.splits(2)


def test_gpt_block_peak_memory_by_hand_one_gpu_and_tp2():
    """A = one [2, 1024, 1024] bf16 activation, s = one layer-norm statistic [2, 1024, 1]. Kernels:
    ln1, qkv, sdpa (writing [b, t, h, d] as CUDA does: the head merge after it is a free view),
    proj, add, ln2, fc, gelu, mlp_proj, add. Live intermediates while each runs (one GPU):
    A+2s, 4A, 4A, 2A, 2A, 2A+2s, 6A, 9A (fc out 4A + gelu 4A + the residual A), 6A, 3A. With
    TP 2 the qkv, attention, fc and gelu tensors are halved, the partial projections whole:
    peak 5A while gelu runs, beside half of the split weights."""
    model, x = gpt_block(2, 1024, 1024, 16)
    _, g = trace_and_lift(model, [x])
    one = solar.api.bound_graph(g, "H100")
    a, s = 2 * 1024 * 1024 * BF, 2 * 1024 * BF
    weights = {n: p.numel() * BF for n, p in model.named_parameters()}
    r = a + sum(weights.values())
    assert one.memory.resident_bytes == r
    hand = [a + 2 * s, 4 * a, 4 * a, 2 * a, 2 * a, 2 * a + 2 * s, 6 * a, 9 * a, 6 * a, 3 * a]
    assert one.memory.timeline == tuple(r + v for v in hand)
    assert one.memory.peak_kernel == "gelu_7"
    tp = bound_parallel(g, "H100", 2, tp=2, single=one)
    split = (
        "c_attn.weight",
        "c_attn.bias",
        "c_proj.weight",
        "c_fc.weight",
        "c_fc.bias",
        "mlp_proj.weight",
    )
    r2 = a + sum(v / 2 if n in split else v for n, v in weights.items())
    assert tp.peak_bytes == r2 + 5 * a
    assert [c["tensor"] for c in tp.collectives] == ["addmm_1", "addmm_3"]  # proj, mlp_proj
    assert all(c["kind"] == "all-reduce" and c["tensor_bytes"] == a for c in tp.collectives)


# --------------------------------------------------------------------------------------------
# data parallel: a hand-built training step


def sgd_step(x, w, target):
    """One SGD step of a linear regression, gradients written by hand:
    out = x w, dL/dout = out - target (L = |out - target|^2 / 2), dL/dw = x^T (out - target)."""
    err = x @ w - target
    grad = x.t() @ err
    return w - 0.01 * grad


def test_dp_all_reduces_the_weight_gradient():
    """Split the batch 4 ways: every GPU computes its rows of x w and a partial x^T err (the
    batch is reduced); the update needs the whole gradient: one all-reduce of dL/dw
    (256 x 128 fp32), 2(4-1)/4 of it per GPU on A100s. Nothing else communicates."""
    b, d, o = 1024, 256, 128
    x, w, tgt = (torch.empty(*s, device="meta") for s in ((b, d), (d, o), (b, o)))
    pb = solar.plan(sgd_step, [x, w, tgt], hw="A100", gpus=4, dp=4)
    assert pb.plan.describe() == "TP 1 x PP 1 x DP 4" and pb.batch == "x[0]"
    (ar,) = pb.collectives
    grad = d * o * 4
    assert (ar["kind"], ar["mesh"], ar["n"], ar["tensor_bytes"]) == ("all-reduce", "dp", 4, grad)
    assert ar["bytes_per_gpu"] == 1.5 * grad
    # fp32 matmuls on CUDA cores (torch's default precision): x w and x^T err split 4 ways
    # with the subtraction of the target; the update (d x o: a scale and a subtraction) whole
    split = 2 * b * d * o + b * o + 2 * b * d * o
    assert pb.single.flops == {"cuda_fp32": split + 2 * d * o}
    stage = pb.stages[0]
    assert stage.compute_s == pytest.approx(
        compute_time({"cuda_fp32": split / 4 + 2 * d * o}, A100).seconds, rel=1e-12
    )
    assert stage.comm_s == pytest.approx(1.5 * grad / (300e9 + 32e9))
    # x and the target in quarters, w whole on every GPU, the new w written whole
    assert stage.bytes_fused == (b * d / 4 + b * o / 4 + d * o + d * o) * 4


# --------------------------------------------------------------------------------------------
# pipeline parallel


def test_partition_balances_contiguous_ranges():
    assert partition([1.0] * 8, range(1, 8), 2) == (0, 4)
    assert partition([1, 1, 1, 5, 1, 1, 1, 1], [2, 4, 6], 2) == (0, 4)
    assert partition([1, 1], [1], 3) is None


def test_pipeline_of_four_layers_by_formula():
    """Four Linear+ReLU layers on two stages, 4 micro-batches: cut between layers 2 and 3;
    the bound is the bottleneck stage plus one micro-batch through the other and across the
    cut; the bubble (2-1)/(4+2-1) = 0.2."""
    with torch.device("meta"):
        layers = [m for _ in range(4) for m in (nn.Linear(2048, 2048), nn.ReLU())]
        model = nn.Sequential(*layers).to(torch.bfloat16)
        x = torch.empty(4096, 2048, dtype=torch.bfloat16)
    pb = solar.plan(model, [x], hw="H100", gpus=2, pp=2, micro_batches=4)
    assert pb.plan.starts == (0, 4) and pb.bubble == pytest.approx(0.2)
    s0, s1 = pb.stages
    assert s0.compute_s == pytest.approx(s1.compute_s, rel=1e-9)
    cut = 4096 * 2048 * BF  # the activation crossing the cut, all micro-batches
    assert s0.comm_s == pytest.approx(cut / LINK_H100) and s1.comm_s == s0.comm_s
    # fill and drain: one micro-batch (a quarter of the tokens) through the other stage's two
    # layers and across the cut; the bottleneck stage's whole path in between
    assert s0.fill_s == pytest.approx(s0.compute_s / 4, rel=1e-9)
    assert s1.drain_s == pytest.approx(s1.compute_s / 4, rel=1e-9)
    delta = cut / 4 / LINK_H100
    fill = max(s0.path_s["fused"] + delta + s1.drain_s, s0.fill_s + delta + s1.path_s["fused"])
    assert fill > s0.comm_s  # two layers of compute outlast sending the activation
    assert pb.fused == pytest.approx(fill, rel=1e-12) and pb.fused_bound_by == "tensor + pipeline"
    assert pb.single.fused / 2 < pb.fused < pb.single.fused


def test_plan_without_a_split_says_why():
    model, x = mlp()
    with pytest.raises(ValueError, match="no plan splits .* over 3 GPUs with tp=3"):
        solar.plan(model, [x], hw="H100", gpus=3, tp=3)


def test_no_plan_is_faster_than_ideal():
    model, x = gpt_block(b=4, t=32, c=128, heads=8)
    _, g = trace_and_lift(model, [x])
    pm = ParallelModel(g)
    for n in (2, 4, 8):
        for tp, pp, dp in ((n, 1, 1), (1, 1, n), (1, n, 1)):
            try:
                pb = bound_parallel(g, "H100", n, tp=tp, pp=pp, dp=dp, model=pm)
            except ValueError:
                continue
            assert pb.fused >= pb.ideal_s * (1 - 1e-12)
            assert pb.cache_aware >= pb.fused * (1 - 1e-12)
            assert pb.unfused >= pb.fused * (1 - 1e-12)
    # a Plan is data: its degrees multiply to its GPUs
    assert Plan(tp=2, pp=2, dp=2).gpus == 8 and not math.isnan(Plan().gpus)


def test_only_the_part_read_crosses_or_is_reduced():
    """A tensor read later only as a slice crosses a pipeline cut with that slice; a partial
    result read only as a slice (the last token of a row-parallel output) is all-reduced
    over that slice."""
    from solar.backend.parallel.pipeline import crossings

    def f(x):
        h = x * 2
        return h + 1, h[:, :4] * 3

    _, g = trace_and_lift(f, [torch.empty(8, 16, device="meta")])
    cross, _ = crossings(g, {})
    assert cross[1] == 8 * 16 * 4 and cross[2] == 8 * 4 * 4  # all of h, then its slice

    class LastToken(nn.Module):
        def __init__(self):
            super().__init__()
            self.up, self.down = nn.Linear(256, 1024), nn.Linear(1024, 256)

        def forward(self, x):
            return torch.relu(self.down(torch.relu(self.up(x))))[-1:]

    with torch.device("meta"):
        model, x = LastToken(), torch.empty(512, 256)
    pb = solar.plan(model, [x], hw="A100", gpus=2, tp=2)
    (ar,) = pb.collectives
    assert ar["kind"] == "all-reduce" and ar["tensor_bytes"] == 512 * 256 * 4
    # relu reads all of the partial sums: the slice comes after it
    assert ar["fraction"] == 1.0

    class SliceFirst(LastToken):
        def forward(self, x):
            return self.down(torch.relu(self.up(x)))[-1:] * 2

    with torch.device("meta"):
        model = SliceFirst()
    pb = solar.plan(model, [x], hw="A100", gpus=2, tp=2)
    (ar,) = pb.collectives
    assert ar["fraction"] == pytest.approx(1 / 512)  # one row of 512 is read
    assert ar["bytes_per_gpu"] == pytest.approx(256 * 4)


def test_work_off_a_stage_path_may_overlap_the_fill():
    """Stage 1 = [w2 = w * 2, y = h @ w2]: the scaling of the weight needs nothing from
    stage 0, so only the matmul is on the micro-batch's path."""
    from solar.backend.parallel.pipeline import stage_paths

    def f(x, w):
        h = x + 1
        w2 = w * 2
        return h @ w2

    _, g = trace_and_lift(
        f, [torch.empty(64, 32, device="meta"), torch.empty(32, 16, device="meta")]
    )
    assert [k.name for k in g.info.kernels] == ["add_0", "mul_1", "mm_2"]
    assert stage_paths(g, range(1, 3)) == ([], [2])  # no later stage; the output needs mm_2
    assert stage_paths(g, range(0, 1)) == ([0], [0])  # h is sent to stage 1

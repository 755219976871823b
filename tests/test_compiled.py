"""Headroom per compiled kernel (issue 33) on the CPU: a program restricted to some kernels,
Inductor's C++ kernels mapped onto solar's trace through its provenance, a bound per group,
device activities matched to kernels, and ``solar headroom FILE --compile``.

Inductor's CPU backend generates C++ kernels with the same provenance as its Triton kernels on
a GPU; the GPU run is bench/gpu_compiled.py (results/…/compiled, docs/compiled.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

import solar
from solar.frontend.compiled import GeneratedKernel, KernelKind
from solar.gpu.compiled_headroom import Launch, match_launches
from solar.graph.lift import lift
from solar.interp.torch.execute import execute
from solar.ir.restrict import restrict
from solar.questions.kernel_groups import bound_kernel_groups

F32 = 4


def _linear_relu_program():
    """``relu(x @ w + b)`` traced: kernels mm, add, relu (x 8x64, w 64x32, b 32)."""

    def f(x, w, b):
        return torch.relu(x @ w + b)

    args = [torch.randn(8, 64), torch.randn(64, 32), torch.randn(32)]
    program, _ = solar.trace_and_lift(f, args)
    return f, args, program


def test_restrict_makes_the_group_a_program_of_its_own():
    _, _, p = _linear_relu_program()
    mm, add, relu = (k.name for k in p.kernels)
    # the add alone reads the product and the bias, and hands its sum on to the relu
    sub = restrict(p, [add])
    io = lift(sub).info.fused_io
    assert sum(io.reads.values()) == (8 * 32 + 32) * F32
    assert sum(io.writes.values()) == 8 * 32 * F32
    # add and relu: the sum stays inside; the relu's result is the program's
    io = lift(restrict(p, [add, relu])).info.fused_io
    assert (sum(io.reads.values()), sum(io.writes.values())) == ((8 * 32 + 32) * F32, 256 * F32)
    # a kernel that recomputes the add for itself hands nothing on
    io = lift(restrict(p, [add], private=[add])).info.fused_io
    assert sum(io.writes.values()) == 0
    with pytest.raises(ValueError, match="has no kernel 'nope'"):
        restrict(p, ["nope"])


def test_a_restricted_program_computes_what_the_whole_one_does():
    f, args, p = _linear_relu_program()
    mm, add, relu = (k.name for k in p.kernels)
    whole = execute(p, dict(zip(p.inputs, args, strict=True)), keep_intermediates=True)
    sub = restrict(p, [add, relu])
    got = execute(sub, {t: whole[t] if t in whole else args[p.inputs.index(t)] for t in sub.inputs})
    torch.testing.assert_close(got[sub.outputs[0]], f(*args))


class _Block(torch.nn.Module):
    """Linear -> relu -> LayerNorm -> softmax(2·x): Inductor (CPU) calls addmm and fuses
    everything after it into one C++ kernel."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(64, 32)
        self.norm = torch.nn.LayerNorm(32)

    def forward(self, x):
        return torch.softmax(self.norm(torch.relu(self.linear(x))) * 2, -1)


@pytest.fixture(scope="module")
def compiled_block():
    from solar.frontend.torch.compiled import compile_torch

    torch.manual_seed(0)
    (ct,) = compile_torch(_Block().eval(), (torch.randn(8, 64),))
    return ct


def test_inductor_kernels_map_onto_solars_trace(compiled_block):
    ct = compiled_block
    names = [k.name for k in ct.trace.program.kernels]
    assert names == ["addmm_0", "relu_1", "native_layer_norm_2", "mul_3", "softmax_4"]
    (gemm, fused) = ct.kernels
    assert (gemm.name, gemm.kind, gemm.launch, gemm.ir_kernels) == (
        "extern_kernels.addmm",
        KernelKind.EXTERN,
        ("aten::addmm",),
        ("addmm_0",),
    )
    assert fused.kind is KernelKind.CPP and fused.name.startswith("cpp_fused_")
    # the norm and the softmax are named by Inductor's provenance; its softmax rewrite keeps
    # none of the `* 2` (and, depending on its passes, of the relu): those are counted in the
    # group of their consumer (test below)
    assert (
        {"native_layer_norm_2", "softmax_4"}
        <= set(fused.ir_kernels)
        <= {
            "relu_1",
            "native_layer_norm_2",
            "softmax_4",
        }
    )
    assert all(s.startswith("test_compiled.py:") for s in fused.sources)


def test_the_seeds_inductor_draws_for_dropout_are_its_own_kernel():
    from solar.frontend.torch.compiled import compile_torch

    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Dropout(0.5)).train()
    (ct,) = compile_torch(model, (torch.randn(4, 16),))
    seeds, gemm, dropout = ct.kernels
    assert seeds.ir_kernels == () and seeds.unmapped.startswith(
        "Inductor's own: it draws the seeds"
    )
    assert (gemm.ir_kernels, dropout.ir_kernels) == (("addmm_0",), ("native_dropout_1",))


def test_one_bound_per_group_and_the_terms_add_up(compiled_block):
    b = bound_kernel_groups(compiled_block, "H100")
    whole = solar.bound(_Block().eval(), torch.randn(8, 64), hw="H100")
    assert b.fused_s == pytest.approx(whole.fused)  # the same aten calls, the same bound
    g0, g1 = b.groups
    assert g0.ir_kernels == ("addmm_0",) and "mul_3" in g1.absorbed
    assert g1.ir_kernels == ("relu_1", "native_layer_norm_2", "mul_3", "softmax_4")
    # by hand: the addmm reads x, w, b and writes its 8x32 result; the fused kernel reads that
    # result and the norm's weight and bias, and writes the 8x32 softmax
    assert g0.bytes == (8 * 64 + 32 * 64 + 32 + 8 * 32) * F32
    assert g1.bytes == (8 * 32 + 32 + 32 + 8 * 32) * F32
    assert g1.cold_bytes == (32 + 32) * F32  # the norm's weight and bias; the product is warm
    assert b.groups_s >= b.fused_s and b.uncovered == ()
    assert "mul_3" in json.loads(b.to_json())["groups"][1]["absorbed"]


def _kernel(name, kind=KernelKind.TRITON, launch=None):
    launch = launch or ((f"aten::{name.split('.')[-1]}",) if kind is KernelKind.EXTERN else (name,))
    return GeneratedKernel(name, kind, launch, ("k",))


def test_launches_match_by_name_operator_and_position():
    kernels = [
        _kernel("extern_kernels.mm", KernelKind.EXTERN),
        _kernel("triton_poi_fused_add_0"),
        _kernel("extern_kernels.mm", KernelKind.EXTERN),
        _kernel("triton_poi_fused_add_0"),  # one generated kernel launched twice
    ]
    launches = [
        Launch("sm90_gemm", 3e-6, ("aten::mm", "## Call ##"), (5, 1)),
        Launch("splitk_reduce", 1e-6, ("aten::mm", "## Call ##"), (5, 1)),  # same call
        Launch("triton_poi_fused_add_0", 2e-6, ("triton_poi_fused_add_0",), (6,)),
        Launch("nvjet_gemm", 4e-6, ("cudaGraphLaunch",), (7,)),  # no operator: by position
        Launch("triton_poi_fused_add_0", 5e-6, ("triton_poi_fused_add_0",), (8,)),
        Launch("memset", 1e-7, ("aten::zero_",), (9,)),
    ]
    found, unmatched = match_launches(kernels, launches)
    secs, names, how = found[0]
    assert (secs, names, how) == (pytest.approx(4e-6), ["sm90_gemm", "splitk_reduce"], "operator")
    assert found[1] == (2e-6, ["triton_poi_fused_add_0"], "name")
    assert found[2] == (4e-6, ["nvjet_gemm"], "position")
    assert found[3] == (5e-6, ["triton_poi_fused_add_0"], "name")
    assert unmatched == [("memset", 1e-7, "aten::zero_")]


PROBLEM = """\
import torch


class Model(torch.nn.Module):
    def __init__(self, n, m):
        super().__init__()
        self.linear = torch.nn.Linear(n, m)

    def forward(self, x):
        return torch.relu(self.linear(x)) * 2.0


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return [64, 32]
"""


def test_solar_headroom_compile_on_a_problem_file(tmp_path):
    path = tmp_path / "linear_relu.py"
    path.write_text(PROBLEM)
    cmd = ["solar", "headroom", str(path), "--compile", "--hw", "H100", "--device", "cpu"]
    out = subprocess.run(
        [*cmd, "--budget-s", "0.05", "--json"], capture_output=True, text=True, check=True
    )
    r = json.loads(out.stdout)
    assert r["schema"] == "solar.compiled_headroom/1" and r["mode"] == "default"
    (b,) = r["bounds"]
    assert [k["name"] for k in b["kernels"]] == ["extern_kernels.addmm", "cpp_fused_mul_relu_0"]
    assert [g["ir_kernels"] for g in b["groups"]] == [["addmm_0"], ["relu_1", "mul_2"]]
    assert all(k["seconds"] is not None for k in r["kernels"])  # every kernel measured
    t = r["terms"]
    total = t["fused_bound_s"] + t["fusion_s"] + t["kernel_quality_s"] + t["launch_and_gaps_s"]
    assert total == pytest.approx(t["measured_s"])
    assert r["violations"] == []  # CPU times are never read as violations of GPU bounds
    bad = subprocess.run([*cmd[:3], "--compile", "fastest"], capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice: 'fastest'" in bad.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_compiled_headroom_on_the_gpu():  # pragma: no cover - GPU only
    r = solar.headroom(_Block().cuda().eval(), torch.randn(64, 64, device="cuda"), compile=True)
    assert r.violations == () and all(k.seconds is not None for k in r.kernels)


def test_headroom_compile_refuses_a_candidate():
    with pytest.raises(ValueError, match="drop candidate="):
        solar.headroom(_Block(), torch.randn(2, 64), "H100", compile=True, candidate=lambda x: x)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_a_kernel_without_provenance_is_mapped_by_its_source_line():
    """Inductor's online-softmax rewrite (a large softmax split in two reductions on the GPU)
    makes a node with no provenance: its kernel is mapped through the line its stack trace
    names (seen on the H100 for KernelBench's 95_CrossEntropyLoss: that kernel read the whole
    536 MB input, and left out of its group it made the group look 12x faster than its bound)."""
    from solar.frontend.torch.compiled import _kernels

    code = "\n".join(
        [
            "    # [Provenance debug handles] triton_red_fused_prepare_softmax_online_0:1",
            "    triton_red_fused_prepare_softmax_online_0.run(arg0_1, buf0)",
            "    # [Provenance debug handles] triton_red_fused_nll_loss_forward_1:2",
        ]
    )
    mapping = {
        "cppCodeToPost": {
            "triton_red_fused_prepare_softmax_online_0:1": ["prepare_softmax_online_default"],
            "triton_red_fused_nll_loss_forward_1:2": ["sub_1", "gather"],
        },
        "postToPre": {"sub_1": ["cross_entropy"], "gather": ["cross_entropy"]},
    }
    trace = '  File "/home/u/model.py", line 14, in forward\n    return F.cross_entropy(p, t)\n'
    stacks = {"triton_red_fused_prepare_softmax_online_0:1": [trace]}
    ir_of = {"cross_entropy": ["log_softmax_0", "nll_loss_forward_1"]}
    first, second = _kernels(code, mapping, stacks, ir_of, {"cross_entropy": "model.py:14"})
    assert (first.ir_kernels, first.mapped_by, first.sources) == (
        ("log_softmax_0", "nll_loss_forward_1"),
        "source line",
        ("model.py:14",),
    )
    assert (second.ir_kernels, second.mapped_by) == (first.ir_kernels, "provenance")

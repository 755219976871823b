"""End-to-end bounds with hand-derived values (docs/bounds.md), on the H100 SXM spec."""

import math

import pytest
import torch

import solar
from solar.hw import load_spec

H100 = load_spec("H100")
CLOCK, SMS = 1.98e9, 132
FP32 = 256 * SMS * CLOCK  # CUDA-core fp32 flop/s: 128 lanes x FMA
TF32 = 2048 * SMS * CLOCK
BF16 = 4096 * SMS * CLOCK
BW = 3352.32e9  # 2619 MHz x 5120-bit HBM3 x 2 (DDR), see hw_specs/h100_sxm.yaml
ON_CHIP = 52428800 + SMS * (262144 + 262144)  # L2 + (L1/smem + registers) per SM


def mm(a, b):
    return a @ b


def meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


def test_spec_numbers_used_here_are_the_catalogue_ones():
    assert H100.peak("cuda_fp32") == FP32
    assert H100.dram_bandwidth == BW
    assert H100.on_chip_capacity == ON_CHIP


def test_matmul_fp32_ieee_hand_derived():
    n = 4096
    b = solar.bound(mm, [meta(n, n), meta(n, n)], hw="H100", precision="ieee")
    assert b.flops == {"cuda_fp32": 2 * n**3}
    assert b.bytes_fused == 3 * n * n * 4
    assert b.bytes_unfused == 3 * n * n * 4
    compute = 2 * n**3 / FP32
    assert b.fused == pytest.approx(max(compute, 3 * n * n * 4 / BW), rel=1e-12)
    assert b.unfused == pytest.approx(b.fused, rel=1e-12)
    # Smith et al.: 2V/sqrt(S) - 2S words is below the compulsory traffic here
    s = ON_CHIP / 4
    assert 2 * n**3 / math.sqrt(s) - 2 * s < 3 * n * n
    assert b.cache_aware == b.fused
    assert b.fused_bound_by == "fma"


def test_matmul_fp32_follows_tf32_policy():
    n = 1024
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        b = solar.bound(mm, [meta(n, n), meta(n, n)], hw="H100")
        assert b.flops == {"tc_tf32": 2 * n**3}
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        b = solar.bound(mm, [meta(n, n), meta(n, n)], hw="H100")
        assert b.flops == {"cuda_fp32": 2 * n**3}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


def test_large_bf16_matmul_cache_aware_exceeds_fused_bytes():
    n = 32768
    b = solar.bound(mm, [meta(n, n, dtype=torch.bfloat16) for _ in range(2)], hw="H100")
    s = ON_CHIP / 2  # words of the smallest operand element size
    q_bytes = (2 * n**3 / math.sqrt(s) - 2 * s) * 2
    assert b.bytes_fused == 3 * n * n * 2
    assert b.bytes_cache_aware == pytest.approx(q_bytes, rel=1e-12)
    assert b.bytes_cache_aware > b.bytes_fused
    assert b.cache_aware == pytest.approx(max(2 * n**3 / BF16, q_bytes / BW), rel=1e-12)
    assert b.fused <= b.cache_aware


def test_mlp_unfused_minus_fused_is_intermediate_traffic():
    tokens, width = 8192, 4096
    with torch.device("meta"):
        model = torch.nn.Sequential(
            torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width)
        )
        x = torch.empty(tokens, width)
    b = solar.bound(model, [x], hw="H100", precision="ieee")
    act = tokens * width * 4
    # h1 = addmm written then read by relu; a1 = relu written then read by the second addmm
    assert b.bytes_unfused - b.bytes_fused == 4 * act
    weights = 2 * (width * width + width) * 4
    assert b.bytes_fused == 2 * act + weights
    assert [k.op for k in b.kernels] == [
        "aten.addmm.default",
        "aten.relu.default",
        "aten.addmm.default",
    ]
    mac = tokens * width * width
    assert b.flops["cuda_fp32"] == 2 * (2 * mac) + tokens * width  # two GEMMs + relu
    assert b.unfused >= b.fused
    assert b.cache_aware >= b.fused


def test_json_schema_fields():
    import json

    b = solar.bound(mm, [meta(64, 32), meta(32, 16)], hw="A100")
    d = json.loads(b.to_json())
    assert d["schema"] == "solar.bound/1"
    assert d["hw"] == load_spec("A100").name
    for key in ("unfused_s", "fused_s", "cache_aware_s"):
        assert d["bounds"][key] > 0
    assert set(d["totals"]["bytes"]) == {"unfused", "fused", "cache_aware", "fused_read"}
    assert d["totals"]["bytes"]["fused"] == (64 * 32 + 32 * 16 + 64 * 16) * 4
    assert d["totals"]["bytes"]["fused_read"] == (64 * 32 + 32 * 16) * 4
    assert len(d["kernels"]) == 1
    row = d["kernels"][0]
    assert row["bytes_read"] == (64 * 32 + 32 * 16) * 4
    assert row["bytes_written"] == 64 * 16 * 4
    assert d["assumptions"]


def test_report_text_names_levels_and_bottlenecks():
    b = solar.bound(mm, [meta(256, 256), meta(256, 256)], hw="H100")
    text = str(b)
    for word in ("unfused", "fused", "cache-aware", "mm_0", "assumptions"):
        assert word in text
    html = b._repr_html_()
    assert "<table" in html and "cache-aware" in html and "mm_0" in html

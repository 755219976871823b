"""The energy floor (issue 36): its arithmetic by hand on tiny programs, the spec's ``energy:``
block, a spec without one (no energy printed, a reason instead), and the questions on top
(compare, provisioning by energy, joules per token)."""

from __future__ import annotations

import json

import pytest
import torch
import yaml
from console import run_solar

import solar
from solar.backend.energy import energy_of
from solar.backend.result import Bound
from solar.hw import SpecError, list_specs, load_spec
from solar.questions.provision import provision

# A made-up GPU whose numbers make the arithmetic easy: 1 SM at 1 GHz doing 2 fp32 ops per
# clock (2e9 ops/s), 1 GB/s of DRAM, no latency floors; energy 5 pJ per fp32 op, 20 pJ per
# DRAM byte, 10 W idle. (A test spec, not a measurement: a real GPU's come from
# `solar calibrate --energy`.)
TINY = {
    "name": "Tiny GPU",
    "arch": "test",
    "sm_count": 1,
    "max_clock_mhz": 1000,
    "dram_bandwidth_gbs": 1,
    "dram_capacity_gb": 1,
    "l2_capacity_mib": 1,
    "smem_per_sm_kib": 64,
    "registers_per_sm_kib": 64,
    "tdp_w": 100,
    "nvlink_bandwidth_gbs": 0,
    "rates_per_sm_per_clock": {"cuda_fp32": 2, "tc_bf16": 8},
    "energy": {
        "idle_w": 10,
        "op_pj": {"cuda_fp32": 5},
        "dram_pj_per_byte": 20,
        "measured_on": "a test spec, not a GPU",
    },
}
UNCALIBRATED = {k: v for k, v in TINY.items() if k != "energy"}


def mm_relu(x, w):
    return torch.relu(x @ w)


def _bound(hw=TINY, dtype=torch.float32) -> Bound:
    return solar.bound(
        mm_relu, [torch.empty(8, 64, dtype=dtype), torch.empty(64, 32, dtype=dtype)], hw=hw
    )


def test_floor_by_hand():
    b = _bound()
    # work: the matmul 2*8*64*32 = 32768 fp32 ops, the relu 8*32 = 256 (one op per element)
    ops = 32768 + 256
    assert dict(b.flops) == {"cuda_fp32": ops}
    work_j = ops * 5e-12  # 1.6512e-7 J at every level
    # unfused: mm reads (8*64 + 64*32)*4 = 10240 B, writes 8*32*4 = 1024 B; relu reads and
    # writes 1024 B each: 13312 B. Time: mm max(32768/2e9, 11264/1e9) = 16.384 us, relu
    # max(256/2e9, 2048/1e9) = 2.048 us: 18.432 us
    unfused = work_j + 13312 * 20e-12 + 10 * 18.432e-6
    # fused: x, w and the output once, 11264 B; time max(33024/2e9 = 16.512 us, 11.264 us)
    fused = work_j + 11264 * 20e-12 + 10 * 16.512e-6
    assert b.energy.unfused == pytest.approx(unfused, rel=1e-12)  # 1.8475136e-4 J
    assert b.energy.fused == pytest.approx(fused, rel=1e-12)  # 1.655104e-4 J
    assert b.energy.cache_aware == pytest.approx(fused, rel=1e-12)  # all fits on chip
    terms = {t.kind: t for t in b.energy.level("fused").terms}
    assert (terms["op"].what, terms["op"].amount, terms["op"].per) == ("cuda_fp32", ops, 5e-12)
    assert (terms["dram"].amount, terms["dram"].per) == (11264, 20e-12)
    assert terms["static"].amount == pytest.approx(16.512e-6, rel=1e-12)
    assert terms["static"].per == 10
    assert b.energy.measured_on == "a test spec, not a GPU"
    # joules per item (a decode step's tokens): the level's floor / items
    assert b.energy.per(8) == pytest.approx(fused / 8, rel=1e-12)


def test_a_rate_without_measured_cost_is_charged_nothing_and_named():
    b = _bound(dtype=torch.bfloat16)
    # the bf16 matmul (32768 ops) runs on tc_bf16, which has no measured cost: 0 J, named; the
    # bf16 relu (256 ops) falls back to the cuda_fp32 rate (no cuda_bf16 rate) and is charged
    # there. Fused: (8*64 + 64*32 + 8*32) * 2 B = 5632 B; time max(32768/8e9 = 4.096 us,
    # 5632 B / 1 GB/s = 5.632 us)
    assert dict(b.rates_used) == {"tc_bf16": "tc_bf16", "cuda_bf16": "cuda_fp32"}
    assert b.energy.uncharged == ("tc_bf16",)
    ops = {t.what: t.joules for t in b.energy.level("fused").terms if t.kind == "op"}
    assert ops == {"cuda_fp32": 256 * 5e-12, "tc_bf16": 0.0}
    fused = 256 * 5e-12 + 5632 * 20e-12 + 10 * 5.632e-6
    assert b.energy.fused == pytest.approx(fused, rel=1e-12)
    text = str(b)
    assert "no measured energy cost, charged 0 J: tc_bf16" in text


def test_the_report_states_the_floor_and_its_sources():
    text = str(_bound())
    assert "energy floor (at the energy efficiency of this GPU's best measured kernels)" in text
    assert "165.5 uJ" in text and "184.8 uJ" in text  # fused, unfused
    assert "not a physical law" in text
    assert "energy costs measured by solar calibrate --energy on a test spec, not a GPU" in text


def test_no_calibration_no_energy():
    b = _bound(UNCALIBRATED)
    assert not b.energy.available
    assert (b.energy.unfused, b.energy.fused, b.energy.cache_aware) == (None, None, None)
    assert b.energy.per(8) is None
    assert "no measured energy costs" in b.energy.reason
    assert "solar calibrate --energy" in b.energy.reason
    text = str(b)
    assert "energy floor" not in text and "--energy" not in text and " uJ" not in text


def test_json_round_trip_keeps_the_floor():
    b = _bound()
    back = Bound.from_json(b.to_json())
    assert back.energy == b.energy
    # a bound on the uncalibrated spec, priced afterwards with the costs: the same floor
    assert energy_of(_bound(UNCALIBRATED), load_spec(TINY)) == b.energy
    assert str(back) == str(b)
    old = json.loads(b.to_json())
    del old["energy"]  # a file written before floors were
    assert "before energy floors" in Bound.from_dict(old).energy.reason


def test_energy_block_round_trips_and_rejects_bad_values():
    spec = load_spec(TINY)
    assert spec.energy.op_j == {"cuda_fp32": 5e-12}
    assert spec.energy.dram_j_per_byte == 20e-12
    assert load_spec(spec.to_dict()) == spec
    for energy, message in [
        ({"idle_w": 10, "op_pj": {"cuda_fp32": 5}}, "missing 'measured_on'"),
        ({"measured_on": "x"}, "missing 'idle_w'"),
        ({"idle_w": 10, "op_pj": {"tc_fp8": 1}, "measured_on": "x"}, "rates has no tc_fp8"),
        ({"idle_w": 10, "op_pj": {"cuda_fp3": 1}, "measured_on": "x"}, "unknown unit"),
        ({"idle_w": 10, "op_j": {"cuda_fp32": 5}, "measured_on": "x"}, "above 1 nJ"),
        ({"idle_w": -1, "measured_on": "x"}, "must be a number >= 0"),
        ({"idle_w": 1, "watts": 3, "measured_on": "x"}, "unknown key 'watts' in energy"),
    ]:
        with pytest.raises(SpecError, match=message):
            load_spec({**UNCALIBRATED, "energy": energy})


def test_a_what_if_gpu_drops_the_energy_costs():
    spec = load_spec(TINY).scaled(bandwidth=2)
    assert spec.energy is None
    assert any("energy calibration" in n for n in spec.notes)
    assert not _bound(spec).energy.available


def test_compare_and_provision_by_energy():
    slow = {**TINY, "name": "Tiny GPU slow DRAM", "dram_bandwidth_gbs": 0.5}
    c = solar.compare(
        mm_relu, [torch.empty(8, 64), torch.empty(64, 32)], hw=[TINY, slow, UNCALIBRATED]
    )
    # slow DRAM: fused time 22.528 us (11264 B / 0.5 GB/s), more idle energy: TINY wins
    assert c.least_energy().hw == "Tiny GPU"
    assert c.bound("Tiny GPU slow DRAM").energy.fused == pytest.approx(
        33024 * 5e-12 + 11264 * 20e-12 + 10 * 22.528e-6, rel=1e-12
    )
    d = c.to_dict()
    assert [g["energy_j"]["fused"] is None for g in d["gpus"]] == [False, False, True]
    assert "energy (c-a)" in str(c) and "fewest joules (cache-aware energy floor): Tiny GPU" in str(
        c
    )
    p = provision(
        mm_relu,
        [torch.empty(8, 64), torch.empty(64, 32)],
        hw=TINY,
        target_s=1e-3,
        catalog=[TINY, slow, UNCALIBRATED],
    )
    assert p.least_energy.name == "Tiny GPU"
    assert p.least_energy.energy_j == pytest.approx(c.bound("Tiny GPU").energy.cache_aware)
    assert "fewest joules meeting the target: Tiny GPU" in str(p)


def test_cli_prints_the_floor_only_for_a_calibrated_spec(tmp_path):
    spec = tmp_path / "tiny.yaml"
    spec.write_text(yaml.safe_dump(TINY))
    rc, out, err = run_solar("bound", "examples/mlp.py", "--hw", spec)
    assert rc == 0, err
    assert "energy floor (at the energy efficiency of this GPU's best measured kernels)" in out
    # the H200's catalogue spec has no measured energy costs: no energy printed
    rc, out, err = run_solar("bound", "examples/mlp.py", "--hw", "H200")
    assert rc == 0, err
    assert "energy floor" not in out and "--energy" not in out


def test_the_h100_sxm_catalogue_costs_give_the_floor_by_hand():
    """The H100 SXM's catalogued costs (measured 2026-12-05, results/gpu_h100_2026-12-05/energy):
    idle 126.6 W, cuda_fp32 4.98 pJ/op, DRAM 120.6 pJ/B; the only catalogue GPU with them."""
    x, w = (torch.empty(1024, 1024, device="meta") for _ in "xw")
    b = solar.bound(mm_relu, [x, w], hw="H100")
    # work: the matmul 2 * 1024^3 fp32 ops, the relu 1024^2; fused DRAM: x, w and the output
    # once, 3 * 1024^2 * 4 B; time: compute-bound at 256 ops/clk x 132 SMs x 1.98 GHz
    ops = 2 * 1024**3 + 1024**2
    nbytes = 3 * 1024**2 * 4
    seconds = ops / (256 * 132 * 1.98e9)  # 32.11 us
    fused = ops * 4.98e-12 + nbytes * 120.6e-12 + 126.6 * seconds  # 16.28 mJ
    assert (dict(b.flops), b.bytes_fused) == ({"cuda_fp32": ops}, nbytes)
    assert b.fused == pytest.approx(seconds, rel=1e-12)
    assert b.energy.fused == pytest.approx(fused, rel=1e-12)
    assert b.energy.uncharged == ()
    text = " ".join(str(b).split())  # the report, its line wrapping undone
    assert "energy floor (at the energy efficiency of this GPU's best measured kernels)" in text
    assert "16.28 mJ" in text and "cuda_fp32 2.149e+09 ops x 4.98 pJ = 10.7 mJ" in text
    provenance = (
        "energy costs measured by solar calibrate --energy on NVIDIA H100 80GB HBM3; driver "
        "580.159.04; max SM clock 1980 MHz;"
    )
    assert provenance in text and "idle 126.6, 139.5 W; 2026-12-05" in text
    calibrated = [s.key for s in list_specs() if load_spec(s.key).energy is not None]
    assert calibrated == ["h100_sxm"]  # no other GPU gets figures it was not measured with


def test_a_symbolic_bound_gives_the_floor_as_a_formula_of_sizes():
    spec = {**TINY, "rates_per_sm_per_clock": {"cuda_fp32": 2, "sfu": 1}}

    def attention(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) / 8.0, dim=-1) @ v

    def qkv(seq):
        return [torch.empty(1, 1, seq, 8, device="meta") for _ in "qkv"]

    b = solar.bound(attention, qkv(16), hw=spec, symbolic={"seq": [(0, 2), (1, 2), (2, 2)]})
    assert "seq" in str(b.energy.fused.expr)  # a formula, not a number
    numeric = solar.bound(attention, qkv(32), hw=spec)
    assert b.at(seq=32).energy.fused == pytest.approx(numeric.energy.fused, rel=1e-9)


def test_the_level_frame_has_the_floor_only_with_costs():
    pytest.importorskip("pandas")
    df = _bound().to_dataframe(by="level")
    assert df.loc["fused", "energy_j"] == pytest.approx(1.655104e-4, rel=1e-12)
    assert "energy_j" not in _bound(UNCALIBRATED).to_dataframe(by="level").columns


def test_the_html_view_states_the_floor_only_with_costs():
    html = _bound()._repr_html_()
    assert "energy floor (at the energy efficiency of this GPU" in html and "165.5 uJ" in html
    assert "energy floor" not in _bound(UNCALIBRATED)._repr_html_()

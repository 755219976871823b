"""Inverse roofline: the feasible region, catalog matches, and latency sweeps."""

import json
import math
from pathlib import Path

import pytest
import torch
from console import run_solar

import solar
from solar.backend import analyze
from solar.hw import list_specs, load_spec
from solar.problem import ProblemError, load_problem
from solar.questions.provision import (
    CAPACITY_FACTORS,
    _unfused_bandwidth,
    provision,
    provision_graph,
)
from solar.questions.sweep import parse_sweep, sweep, sweep_problem

ROOT = Path(__file__).resolve().parents[1]
GPT_FFN = ROOT / "examples" / "mlp_bf16.py"  # the GPT-style feed-forward block
H100 = load_spec("H100")


@pytest.fixture(scope="module")
def ffn():
    """(the problem, its provision, the IR program and graph it was computed from)."""
    p = load_problem(GPT_FFN)
    program, g = solar.trace_and_lift(p.model, p.inputs, name=p.name)
    return p, provision_graph(g, target_s=2e-4, hw="H100"), program, g


def test_region_is_a_bandwidth_capacity_tradeoff(ffn):
    _, p, *_ = ffn
    assert p.level == "cache_aware" and p.target_s == pytest.approx(2e-4)
    assert [pt.capacity_scale for pt in p.region] == list(CAPACITY_FACTORS)
    caps = [pt.capacity for pt in p.region]
    bws = [pt.bandwidth for pt in p.region]
    assert caps == sorted(caps)
    assert all(a >= b for a, b in zip(bws, bws[1:]))  # more capacity never needs more BW
    assert bws[0] > bws[-1]  # this program does trade capacity for bandwidth
    assert bws[-1] == pytest.approx(p.bandwidth_floor)
    assert p.bandwidth_floor == pytest.approx(p.fused_bytes / p.target_s)
    for pt in p.region:
        assert pt.bandwidth == pytest.approx(pt.dram_bytes / p.target_s)


def test_one_region_point_recomputed_with_a_scaled_spec(ffn):
    """A GPU built with HardwareSpec.scaled at a region point's capacity and bandwidth (and
    ample compute) has a cache-aware bound of exactly the target, memory-bound; a hair less
    bandwidth misses it."""
    problem, p, _, g = ffn
    pt = p.region[0]  # 1/64 of the H100's on-chip storage: 1.9 MB
    assert pt.bandwidth > p.bandwidth_floor
    for compute in (2.0, 10.0):
        spec = H100.scaled(
            bandwidth=pt.bandwidth / H100.dram_bandwidth,
            capacity=pt.capacity_scale,
            compute=compute,
        )
        assert spec.on_chip_capacity == pt.capacity
        b = analyze(g, spec)
        assert b.cache_aware == pytest.approx(p.target_s, rel=1e-9)
        assert b.cache_aware_bound_by == "dram"
        assert p.feasible(spec.dram_bandwidth * (1 + 1e-9), pt.capacity, compute)
    slower = H100.scaled(
        bandwidth=0.999 * pt.bandwidth / H100.dram_bandwidth,
        capacity=pt.capacity_scale,
        compute=2.0,
    )
    assert analyze(g, slower).cache_aware > p.target_s
    assert not p.feasible(slower.dram_bandwidth, pt.capacity, 2.0)
    # compute: the reference must be scaled by compute_scale, exactly
    assert p.compute_scale == pytest.approx(p.reference.compute_s["tensor"] / p.target_s)
    just = H100.scaled(compute=p.compute_scale)
    assert analyze(g, just).fused == pytest.approx(p.target_s, rel=1e-9)
    assert p.peaks["tc_bf16"] == pytest.approx(H100.peak("tc_bf16") * p.compute_scale)
    assert not p.feasible(1e30, 1e30, compute_scale=0.99 * p.compute_scale)


def test_catalog_matches_and_slack(ffn):
    _, p, program, _ = ffn
    assert {c.key for c in p.catalog} == {s.key for s in list_specs()}
    for c in p.catalog:
        assert c.meets == (c.bound_s <= p.target_s)
        assert c.slack_s == pytest.approx(p.target_s - c.bound_s)
        assert c.ratio == pytest.approx(p.target_s / c.bound_s)
        b = solar.bound_program(program, c.key)
        assert c.bound_s == pytest.approx(b.cache_aware, rel=1e-12)
        if c.meets:
            assert c.dram_bandwidth >= c.bandwidth_needed and c.compute_needed <= 1
    assert [c.key for c in p.meeting] == ["b200"]
    assert "b200" in repr(p)
    d = json.loads(p.to_json())
    assert d["schema"] == "solar.provision/1"
    assert len(d["memory"]["region"]) == len(CAPACITY_FACTORS)
    assert "catalog GPUs against the target" in str(p)
    assert "meets" in p._repr_html_()


def test_fused_and_unfused_levels():
    n = 4096
    x = torch.empty(n, n, device="meta")
    model = torch.nn.Sequential(torch.nn.Linear(n, n, device="meta"), torch.nn.ReLU())
    pf = provision(model, [x], "H100", target_s=1e-3, level="fused", precision="tf32")
    assert len({pt.bandwidth for pt in pf.region}) == 1
    assert pf.bandwidth_floor == pytest.approx(pf.fused_bytes / 1e-3)
    pu = provision(model, [x], hw="H100", target_s=1e-3, level="unfused", precision="tf32")
    assert pu.bandwidth_floor > pf.bandwidth_floor  # unfused moves the intermediate too
    # at the unfused bandwidth, Σ max(compute_k, bytes_k / BW) is exactly the target
    from solar.backend.roofline import kernel_times

    _, g = solar.trace_and_lift(model, [x], precision="tf32")
    ks = kernel_times(g, H100)
    total = sum(max(k.compute.seconds, (k.bytes_read + k.bytes_written) / pu.bandwidth_floor)
                for k in ks)  # fmt: skip
    # the bound's own per-kernel numbers give the same
    assert [k.compute_s for k in pu.reference.kernels] == [k.compute.seconds for k in ks]
    assert total == pytest.approx(1e-3, rel=1e-9)
    assert _unfused_bandwidth([2.0], [1.0], 1.0) == math.inf
    with pytest.raises(ValueError, match="unknown level"):
        provision(model, [x], target_s=1e-3, level="fastest")
    with pytest.raises(ValueError, match="positive"):
        provision(model, [x], target_s=-1e-3)


def test_sweep_callable_and_problem_file():
    width = 1024

    def make(n):
        return [torch.empty(n, width, dtype=torch.bfloat16, device="meta")]

    model = torch.nn.Linear(width, width, dtype=torch.bfloat16, device="meta")
    s = sweep(model, make, [256, 1024, 4096], hw="H100", param="tokens", target_s=1e-5)
    times = s.times()
    assert times == sorted(times) and len(times) == 3
    for n, b in zip(s.sizes, s.bounds):
        assert b.flops["tc_bf16"] == 2 * n * width * width
    assert s.largest_meeting() == max(n for n, t in zip(s.sizes, times) if t <= 1e-5)
    assert "tokens" in str(s) and "tokens" in s._repr_html_()
    # (model, inputs) from the callable
    s2 = sweep(None, lambda n: (model, make(n)), [128], hw="A100")
    assert s2.hw_key == "a100_sxm_80gb"
    sp = sweep_problem(GPT_FFN, "TOKENS", [512, 2048], "H100")
    assert [b.flops["tc_bf16"] for b in sp.bounds] == [2 * 2 * n * 2048 * 8192 for n in (512, 2048)]
    assert json.loads(sp.to_json())["schema"] == "solar.sweep/1"
    with pytest.raises(ProblemError, match="TOKENS"):
        sweep_problem(GPT_FFN, "BATCH", [1], "H100")
    assert parse_sweep("S=1,2") == ("S", [1, 2])
    with pytest.raises(ValueError, match="NAME=v1"):
        parse_sweep("S")


def test_cli_provision_on_the_gpt_ffn(capsys, tmp_path):
    code, out, _ = run_solar("provision", GPT_FFN, "--target-ms", "2", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["target_s"] == pytest.approx(2e-3)
    region = d["memory"]["region"]
    assert region and all(r["bandwidth"] > 0 for r in region)
    assert {c["key"] for c in d["catalog"] if c["meets"]} >= {"h100_sxm", "b200"}
    code, out, _ = run_solar(
        "provision", GPT_FFN, "--target-ms", "0.2", "--sweep", "TOKENS=512,1024"
    )
    assert code == 0
    assert "feasible region" in out and "latency per TOKENS" in out
    target = tmp_path / "p.json"
    code, out, _ = run_solar("provision", GPT_FFN, "--target-ms", "2", "--json", "--out", target)
    assert code == 0 and out == "" and json.loads(target.read_text())["level"] == "cache_aware"


def test_provision_graph_with_explicit_catalog():
    pytest.importorskip("pandas")
    x = torch.empty(2048, 2048, dtype=torch.bfloat16, device="meta")
    t = solar.trace(lambda a, b: a @ b, [x, x])
    from solar.graph import lift

    p = provision_graph(lift(t.program), target_s=1e-4, catalog=["A100", "B200"])
    assert [c.key for c in p.catalog] == ["a100_sxm_80gb", "b200"]
    assert p.to_dataframe().index.tolist() == ["a100_sxm_80gb", "b200"]
    assert len(p.to_dataframe("region")) == len(CAPACITY_FACTORS)
    assert "tc_bf16" in p.to_dataframe("peaks").index

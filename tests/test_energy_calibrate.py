"""The arithmetic of ``solar calibrate --energy`` (:mod:`solar.gpu.calibrate_energy`) on runs
written by hand, the spec YAML it writes (loaded back), and the command on a machine without a
GPU. The runs themselves need a GPU: ``bench/gpu_energy.py``."""

from __future__ import annotations

import pytest
from console import run_solar

from solar.gpu.calibrate import spec_yaml
from solar.gpu.calibrate_energy import EnergyRun, cost_per_item, costs_of
from solar.gpu.measure import DeviceInfo
from solar.hw import load_spec

INFO = DeviceInfo(
    name="NVIDIA H100 80GB HBM3",
    kind="cuda",
    index=0,
    smi={"driver_version": "580.159.04", "clocks.max.sm": "1980"},
)
# idle 2 s at 70 W and 2 s at 75 W (the lower is the idle power); a copy of 3e12 B in 2 s at
# 370 W; a GEMM of 1e15 ops with 4e8 compulsory bytes in 2 s at 670 W
RUNS = [
    EnergyRun("idle", 2.0, 140.0),
    EnergyRun("dram", 2.0, 740.0, items=3e12, clock_mhz=1980),
    EnergyRun("tc_bf16", 2.0, 1340.0, items=1e15, dram_bytes=4e8, clock_mhz=1755),
    EnergyRun("tc_fp8", 0.0, 0.0, error="RuntimeError: no fp8"),
    EnergyRun("idle", 2.0, 150.0),
]


def test_costs_by_hand():
    c = costs_of(RUNS, INFO, date="2026-12-05")
    assert c.idle_w == 70.0
    # DRAM: (740 J - 70 W x 2 s) / 3e12 B = 600 / 3e12 = 2e-10 J/B (200 pJ/B)
    assert c.dram_j_per_byte == pytest.approx(2e-10, rel=1e-12)
    # bf16: (1340 - 140 - 4e8 B x 2e-10 J/B = 0.08 J) / 1e15 = 1.19992e-12 J/op
    assert c.op_j == {"tc_bf16": pytest.approx(1199.92 / 1e15, rel=1e-12)}  # fp8 failed: none
    assert "driver 580.159.04" in c.measured_on and "2026-12-05" in c.measured_on
    assert "tc_bf16 1755" in c.measured_on and "idle 70.0, 75.0 W" in c.measured_on


def test_a_run_at_idle_power_costs_nothing_and_no_work_is_an_error():
    assert cost_per_item(EnergyRun("tc_fp16", 1.0, 60.0, items=1e12), idle_w=70.0) == 0.0
    with pytest.raises(ValueError, match="did no work"):
        cost_per_item(EnergyRun("idle", 1.0, 70.0), idle_w=70.0)


def test_no_idle_or_dram_run_no_costs():
    assert costs_of([r for r in RUNS if r.key != "dram"], INFO) is None
    assert costs_of([r for r in RUNS if r.key != "idle"], INFO) is None


def test_the_spec_written_loads_with_its_energy_block(tmp_path):
    costs = costs_of(RUNS, INFO, date="2026-12-05")
    path = tmp_path / "h100_energy.yaml"
    path.write_text(spec_yaml(load_spec("H100"), {}, energy=costs))
    spec = load_spec(path, strict=True)
    assert spec.energy.idle_w == 70.0
    assert spec.energy.op_j["tc_bf16"] == pytest.approx(costs.op_j["tc_bf16"], rel=1e-3)
    assert spec.energy.dram_j_per_byte == pytest.approx(2e-10, rel=1e-3)
    assert spec.energy.measured_on == costs.measured_on
    assert spec.peaks() == load_spec("H100").peaks()


def test_calibrate_energy_without_a_gpu_says_so_in_one_line():
    rc, out, err = run_solar("calibrate", "--energy")
    assert rc != 0
    assert "needs a CUDA GPU" in err and "Traceback" not in err


def test_no_energy_counter_is_one_line_naming_the_way_out():
    import shutil

    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has nvidia-smi")
    from solar.gpu.calibrate_energy import EnergyMeter

    with pytest.raises(ValueError, match=r"no energy counter: NVML: .*nvidia-ml-py") as e:
        EnergyMeter.open(INFO)
    assert "\n" not in str(e.value)

"""hw="auto" (spec matching from device properties) and `solar calibrate`'s spec YAML.

Device properties are faked; the measurements run only with a CUDA GPU.
"""

import dataclasses
import types

import pytest
import torch
import yaml

from solar.gpu.calibrate import Calibration, Measurement, _clamp, derive_spec, spec_yaml
from solar.gpu.calibrate_latency import one_way, per_launch, sync_to_write
from solar.gpu.measure import DeviceInfo, detect_spec, resolve_hw
from solar.hw import SpecError, list_specs, load_spec

GiB = 2**30


def dev(name, sms, mem_bytes, cc="9.0", **kw) -> DeviceInfo:
    return DeviceInfo(
        name=name,
        kind="cuda",
        sm_count=sms,
        total_memory=mem_bytes,
        compute_capability=cc,
        **kw,
    )


# ------------------------------------------------------------------------------ hw="auto"


@pytest.mark.parametrize(
    "name, sms, mem, key",
    [
        ("NVIDIA H100 80GB HBM3", 132, 85017493504, "h100_sxm"),  # torch's name on an SXM
        ("NVIDIA H200", 132, 150754820096, "h200"),
        ("NVIDIA H100 PCIe", 114, 85031714816, "h100_pcie"),
        ("NVIDIA A100-SXM4-80GB", 108, 85098496000, "a100_sxm_80gb"),
        ("NVIDIA GeForce RTX 4090", 128, 25393692672, "rtx4090"),
    ],
)
def test_auto_by_name(name, sms, mem, key):
    spec, how = detect_spec(dev(name, sms, mem))
    assert spec.key == key and "by name" in how


def test_auto_by_sm_count_and_memory():
    # an unlisted name with the H100 PCIe's SM count and memory
    spec, how = detect_spec(dev("NVIDIA H100 NVL-ish", 114, 80 * 10**9))
    assert spec.key == "h100_pcie" and "SM count" in how


def test_auto_name_with_wrong_sm_count_falls_back():
    # the H100 SXM name on a part with the PCIe's 114 SMs: matched by SMs and memory instead
    spec, how = detect_spec(dev("NVIDIA H100 80GB HBM3", 114, 85 * 10**9))
    assert spec.key == "h100_pcie" and "has 132 SMs" in how


def test_unknown_gpu_points_to_calibrate():
    with pytest.raises(SpecError, match="solar calibrate"):
        detect_spec(dev("NVIDIA Mystery 9000", 77, 33 * GiB))


def test_ambiguous_match_is_an_error():
    specs = [load_spec("H100"), load_spec("H100").scaled(bandwidth=2.0)]
    with pytest.raises(SpecError, match="several catalogue specs"):
        detect_spec(dev("NVIDIA Other", 132, 85 * 10**9), specs=specs)


def test_auto_on_cpu_and_device_info_from_props():
    with pytest.raises(SpecError, match="needs a visible CUDA GPU"):
        detect_spec(DeviceInfo(name="x86_64", kind="cpu"))
    if not torch.cuda.is_available():
        with pytest.raises(SpecError):
            resolve_hw("auto")
    assert resolve_hw("H100").key == "h100_sxm"
    props = types.SimpleNamespace(
        name="NVIDIA H100 80GB HBM3",
        major=9,
        minor=0,
        multi_processor_count=132,
        total_memory=85017493504,
        L2_cache_size=52428800,
        clock_rate=1980000,
        memory_clock_rate=2619000,
        memory_bus_width=5120,
        shared_memory_per_multiprocessor=233472,
    )
    info = DeviceInfo.from_props(props, index=0, smi={"clocks.max.sm": "1980", "clocks.sm": "345"})
    assert info.sm_count == 132 and isinstance(info.sm_count, int)
    assert info.compute_capability == "9.0" and info.clock_mhz == pytest.approx(1980)
    assert info.max_clock_mhz == 1980.0 and info.l2_bytes == 52428800
    assert "132 SMs" in info.summary() and "max 1980" in info.summary()
    assert detect_spec(info)[0].key == "h100_sxm"


# ------------------------------------------------------------------------------ calibrate YAML


def h100_calibration() -> Calibration:
    spec = load_spec("H100")
    info = dev(
        "NVIDIA H100 80GB HBM3",
        132,
        85017493504,
        smi={"clocks.sm": "1980", "clocks.max.sm": "1980", "driver_version": "580.159.04"},
    )
    results = [
        _clamp("dram_bandwidth", 2.98e12, spec.dram_bandwidth, "copy of 1 GiB"),
        _clamp("l2_bandwidth", 9.1e12, spec.l2_bandwidth, "copies in L2"),
        _clamp("tc_bf16", 7.78e14, spec.peak("tc_bf16"), "8192^3 bf16 GEMM"),
        _clamp("cuda_fp32", 9.9e13, spec.peak("cuda_fp32"), "8192^3 fp32 GEMM"),  # > peak
        Measurement("tc_fp8", None, spec.peak("tc_fp8"), "", error="RuntimeError: no fp8"),
    ]
    return Calibration(info, spec, "by name", results, date="2026-11-21")


def test_clamp():
    m = _clamp("x", 2.0, 1.0, "m")
    assert m.clamped and m.value == 1.0 and m.raw == 2.0 and m.fraction == 2.0
    m = _clamp("x", 0.5, 1.0, "m")
    assert not m.clamped and m.value == 0.5 and m.fraction == 0.5
    assert _clamp("x", 5.0, None, "m").value == 5.0


def test_calibrated_spec_loads_with_measured(tmp_path):
    cal = h100_calibration()
    path = cal.write(tmp_path / "my_gpu.yaml")
    spec = load_spec(path)
    base = load_spec("H100")
    assert spec.peaks() == base.peaks() and spec.dram_bandwidth == base.dram_bandwidth
    assert spec.measured["dram_bandwidth"] == pytest.approx(2.98e12)
    assert spec.measured["tc_bf16"] == pytest.approx(7.78e14, rel=1e-6)
    # measured above the peak: clamped, so the loader accepts it, and said so
    assert spec.measured["cuda_fp32"] == pytest.approx(base.peak("cuda_fp32"), rel=1e-5)
    assert "tc_fp8" not in spec.measured and "l2_bandwidth" not in spec.measured
    text = path.read_text()
    assert "clamped" in text and "L2 bandwidth (measured" in text and "not measured" in text
    assert "sources:" in text and "aliases: []" in text  # comments kept, aliases dropped
    assert "CLAMPED" in str(cal) and "tc_bf16" in str(cal)
    d = cal.to_dict()
    assert d["schema"] == "solar.calibrate/1" and len(d["results"]) == 5


def test_existing_measured_block_is_replaced(tmp_path):
    first = tmp_path / "first.yaml"
    h100_calibration().write(first)
    spec = load_spec(first)
    again = spec_yaml(spec, {"dram_bandwidth": 3.0e12})
    assert again.count("measured:") == 1
    p = tmp_path / "again.yaml"
    p.write_text(again)
    assert dict(load_spec(p).measured) == {"dram_bandwidth": pytest.approx(3.0e12)}


def test_spec_without_a_file_is_written_out(tmp_path):
    spec = load_spec(load_spec("H100").to_dict() | {"path": None, "key": "inline"})
    text = spec_yaml(spec, {"tc_fp16": 7e14}, header=["hello"])
    assert text.startswith("# hello\n")
    p = tmp_path / "inline.yaml"
    p.write_text(text)
    back = load_spec(p)
    assert back.peaks() == pytest.approx(spec.peaks())
    assert back.measured["tc_fp16"] == pytest.approx(7e14)
    assert yaml.safe_load(text)["aliases"] == []


def test_write_refuses_a_spec_that_does_not_load(tmp_path):
    good = h100_calibration()
    bogus = Measurement("tc_bf16", 1e20, None, "bogus")  # no peak given: no clamp
    cal = dataclasses.replace(good, results=(*good.results, bogus))
    with pytest.raises(SpecError, match="does not load"):
        cal.write(tmp_path / "bad.yaml")
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------ latency floors


def with_latency(cal: Calibration, launch: float, sync: float) -> Calibration:
    lat = cal.base.latency
    floors = (
        Measurement("kernel_launch", launch, lat["kernel_launch"], "graph replay", raw=launch),
        Measurement("sm_sync", sync, lat["sm_sync"], "ping-pong", raw=sync),
    )
    return dataclasses.replace(cal, results=cal.results + floors)


def test_latency_helpers():
    assert per_launch([2e-3, 1e-3, 3e-3], 1000) == pytest.approx((1e-6, 2e-6))
    assert one_way([4e-3, 2e-3], 1000) == pytest.approx(1e-6)  # fastest run / 2000 handoffs
    with pytest.raises(ValueError):
        per_launch([], 10)
    with pytest.raises(ValueError):
        one_way([1.0], 0)
    # Hopper has clusters (distributed shared memory): an L2 ping-pong above the spec's floor
    # does not replace it; without clusters the measurement is the floor
    assert sync_to_write(3e-7, 5e-8, "9.0")[0] == 5e-8
    assert "distributed shared memory" in sync_to_write(3e-7, 5e-8, "9.0")[1]
    assert sync_to_write(3e-7, 5e-8, "8.0") == (3e-7, "")
    assert sync_to_write(3e-8, 5e-8, "9.0") == (3e-8, "")


def test_calibrated_spec_gets_the_latency_floors(tmp_path):
    cal = with_latency(h100_calibration(), 0.9e-6, 0.3e-6)
    spec = load_spec(cal.write(tmp_path / "lat.yaml"))
    assert spec.launch_floor_s == pytest.approx(0.9e-6)
    assert spec.sync_floor_s == pytest.approx(load_spec("H100").sync_floor_s)  # cc 9.0: kept
    text = (tmp_path / "lat.yaml").read_text()
    assert text.count("\nlatency:") == 1 and "measured 0.3 us" in text
    table = str(cal)
    assert "kernel_launch" in table and "0.9 us" in table and "180%" in table
    older = dataclasses.replace(
        with_latency(h100_calibration(), 0.9e-6, 0.3e-6),
        device=dev("NVIDIA A100-SXM4-80GB", 108, 85098496000, cc="8.0"),
    )
    assert older.latency()[0]["sm_sync"] == pytest.approx(0.3e-6)


def test_a_floor_measured_below_the_catalogue_default_is_flagged(tmp_path):
    cal = with_latency(h100_calibration(), 0.3e-6, 0.3e-6)
    assert "BELOW the spec's floor" in str(cal)
    spec = load_spec(cal.write(tmp_path / "low.yaml"))
    assert spec.launch_floor_s == pytest.approx(0.3e-6)  # the measurement is what is written
    assert "WARNING: kernel_launch measured 0.3 us" in (tmp_path / "low.yaml").read_text()


# ------------------------------------------------------------------------------ derived specs


def test_derive_spec_for_an_unknown_hopper():
    info = dev(
        "NVIDIA H800",
        132,
        85 * 10**9,
        l2_bytes=50 * 2**20,
        memory_bus_width=5120,
        smi={"clocks.max.sm": "1980", "clocks.max.mem": "2619", "power.max_limit": "700"},
    )
    spec = derive_spec(info)
    hoppers = [s for s in list_specs() if s.compute_capability == "9.0"]
    assert spec.rates["tc_bf16"] == max(s.rates["tc_bf16"] for s in hoppers)
    assert spec.peak("tc_bf16") == pytest.approx(4096 * 132 * 1.98e9)
    assert spec.dram_bandwidth == pytest.approx(2619e6 * 2 * 5120 / 8)
    assert spec.sm_count == 132 and spec.tdp_w == 700 and "derived" in spec.sources[0]
    assert "rates_per_sm_per_clock" in spec_yaml(spec, {})


def test_derive_spec_round_trip(tmp_path):
    info = dev(
        "NVIDIA H800",
        132,
        85 * 10**9,
        memory_bus_width=5120,
        smi={"clocks.max.sm": "1980", "clocks.max.mem": "2619"},
    )
    spec = derive_spec(info)
    p = tmp_path / "h800.yaml"
    p.write_text(spec_yaml(spec, {"dram_bandwidth": 2.9e12}))
    back = load_spec(p)
    assert back.peaks() == pytest.approx(spec.peaks()) and back.name == "NVIDIA H800"


def test_derive_spec_needs_facts():
    with pytest.raises(SpecError, match="compute capability 1.0"):
        derive_spec(dev("Old", 10, 10**9, cc="1.0"))
    with pytest.raises(SpecError, match="maximum SM clock"):
        derive_spec(dev("NVIDIA H800", 132, 85 * 10**9))
    with pytest.raises(SpecError, match="memory clock or bus width"):
        derive_spec(dev("NVIDIA H800", 132, 85 * 10**9, smi={"clocks.max.sm": "1980"}))


# ------------------------------------------------------------------------------ CUDA


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_calibrate_quick_on_cuda(tmp_path):
    from solar.gpu.calibrate import calibrate

    cal = calibrate(quick=True, units=["tc_bf16"])
    assert cal.measured()["dram_bandwidth"] > 0 and cal.measured()["tc_bf16"] > 0
    spec = load_spec(cal.write(tmp_path / "gpu.yaml"))
    assert spec.measured["tc_bf16"] <= spec.peak("tc_bf16") * 1.001
    assert 0 < spec.launch_floor_s < 20e-6 and 0 < spec.sync_floor_s < 20e-6

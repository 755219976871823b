"""Hardware spec catalogue and loader (docs/hardware.md): exact, hand-derived values."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.hw import (
    UNITS,
    HardwareSpec,
    SpecError,
    UnknownUnitError,
    list_specs,
    load_spec,
    resolve_name,
)

REPO = Path(__file__).resolve().parents[1]
CATALOGUE = REPO / "solar" / "hw" / "catalog"  # hw_specs/ links here
KiB, MiB = 2**10, 2**20


def raw(key: str = "h100_sxm") -> dict:
    """The YAML mapping of a catalogue file, to be broken by a test."""
    return yaml.safe_load((CATALOGUE / f"{key}.yaml").read_text())


@pytest.fixture
def catalogued(tmp_path, monkeypatch):
    """``put(mapping)``: the mapping written into a catalogue folder (SOLAR_HW_SPECS) under a
    fresh key, which it returns: loaded by name, it is held to a real GPU's checks."""
    monkeypatch.setenv("SOLAR_HW_SPECS", str(tmp_path))
    count = iter(range(1000))

    def put(data: dict) -> str:
        key = f"gpu_under_test_{next(count)}"
        (tmp_path / f"{key}.yaml").write_text(
            yaml.safe_dump({**data, "aliases": []}, sort_keys=False)
        )
        return key

    return put


def spec_error(data, *fragments: str) -> str:
    with pytest.raises(SpecError) as ei:
        load_spec(data)
    msg = str(ei.value)
    assert "\n" not in msg, msg
    for f in fragments:
        assert f in msg, (f, msg)
    return msg


# --------------------------------------------------------------------------------------------
# H100 SXM, by hand


def test_h100_peaks_are_rate_times_sms_times_max_clock():
    h = load_spec("H100")
    assert h.key == "h100_sxm"
    assert h.sm_count == 132
    assert h.max_clock_hz == 1.98e9
    assert h.peak("tc_bf16") == 4096 * 132 * 1.98e9
    assert h.peak("tc_fp16") == 4096 * 132 * 1.98e9
    assert h.peak("tc_tf32") == 2048 * 132 * 1.98e9
    assert h.peak("tc_fp8") == 8192 * 132 * 1.98e9
    assert h.peak("tc_int8") == 8192 * 132 * 1.98e9
    assert h.peak("tc_fp64") == 256 * 132 * 1.98e9
    assert h.peak("cuda_fp32") == 256 * 132 * 1.98e9
    assert h.peak("cuda_fp64") == 128 * 132 * 1.98e9
    assert h.peak("cuda_fp16") == 512 * 132 * 1.98e9
    assert h.peak("cuda_bf16") == 512 * 132 * 1.98e9
    assert h.peak("cuda_int32") == 64 * 132 * 1.98e9
    assert h.peak("sfu") == 16 * 132 * 1.98e9
    assert h.peaks()["tc_bf16"] == h.peak("tc_bf16")
    # above the datasheet's dense 989.4 TFLOP/s, which is quoted at 1830 MHz
    assert h.peak("tc_bf16") > 989.4e12


def test_h100_memory_fields():
    h = load_spec("H100")
    assert h.dram_bandwidth == pytest.approx(2 * 2619e6 * 5120 / 8, rel=1e-12)  # 3352.32 GB/s
    assert h.dram_bandwidth >= 3.35e12
    assert h.dram_capacity == 80 * 10**9
    assert h.l2_capacity == 52428800
    assert h.l2_bandwidth is None
    assert h.smem_per_sm == 233472
    assert h.l1_smem_per_sm == 256 * KiB
    assert h.registers_per_sm == 65536 * 4
    assert h.tdp_w == 700
    assert h.nvlink_bandwidth == 900e9
    assert h.arch == "hopper"
    assert h.compute_capability == "9.0"


def test_h100_on_chip_capacity_counts_all_storage():
    # L2 + per SM (combined L1/shared memory 256 KiB, of which up to 228 KiB is shared memory,
    # + 256 KiB of registers): counting only the 228 KiB carve-out would leave 28 KiB of L1
    # per SM out, and a smaller capacity would make the cache-aware bound unsound.
    h = load_spec("H100")
    assert h.on_chip_capacity == 52428800 + 132 * (262144 + 262144)
    assert h.on_chip_capacity > 52428800 + 132 * (233472 + 262144)


def test_h100_measured_ceilings_are_below_the_peaks():
    h = load_spec("H100")
    assert h.measured["tc_bf16"] == 778e12
    assert h.measured["dram_bandwidth"] == 2980e9
    for unit, m in h.measured.items():
        top = h.dram_bandwidth if unit == "dram_bandwidth" else h.peak(unit)
        assert m < top


def test_unknown_unit():
    h = load_spec("H100")
    assert not h.has_unit("tc_fp4")
    assert h.has_unit("tc_bf16")
    with pytest.raises(UnknownUnitError) as ei:
        h.peak("tc_fp4")
    assert isinstance(ei.value, ValueError)
    msg = str(ei.value)
    assert "tc_fp4" in msg and h.name in msg and "tc_bf16" in msg and "\n" not in msg


# --------------------------------------------------------------------------------------------
# The whole catalogue

# fmt: off
EXPECTED = {
    # key: (SMs, max MHz, DRAM GB/s, capacity GB, L2 MiB, smem KiB, L1+smem KiB, TDP W, NVLink GB/s)
    "h100_sxm": (132, 1980, 3352.32, 80, 50, 228, 256, 700, 900),
    "h100_pcie": (114, 1755, 2039.04, 80, 50, 228, 256, 350, 600),
    "h200": (132, 1980, 4814.304, 141, 60, 228, 256, 700, 900),
    "a100_sxm_80gb": (108, 1410, 2039, 80, 40, 164, 192, 400, 600),
    "b200": (148, 1965, 8000, 180, 126, 228, 256, 1000, 1800),
    "l40s": (142, 2520, 864, 48, 96, 100, 128, 350, 0),
    "rtx4090": (128, 3120, 1008, 24, 72, 100, 128, 450, 0),
}
HOPPER = dict(tc_fp64=256, tc_tf32=2048, tc_bf16=4096, tc_fp16=4096, tc_fp8=8192, tc_int8=8192,
              cuda_fp32=256, cuda_fp64=128, cuda_fp16=512, cuda_bf16=512, cuda_int32=64, sfu=16)
RATES = {
    "h100_sxm": HOPPER,
    "h100_pcie": HOPPER,
    "h200": HOPPER,
    "a100_sxm_80gb": dict(tc_fp64=128, tc_tf32=1024, tc_bf16=2048, tc_fp16=2048, tc_int8=4096,
                          cuda_fp32=128, cuda_fp64=64, cuda_fp16=512, cuda_bf16=256,
                          cuda_int32=64, sfu=16),
    "b200": dict(tc_fp64=128, tc_tf32=4096, tc_bf16=8192, tc_fp16=8192, tc_fp8=16384,
                 tc_int8=16384, tc_fp4=32768, cuda_fp32=256, cuda_fp64=128, cuda_fp16=512,
                 cuda_bf16=512, cuda_int32=128, sfu=16),
    "l40s": dict(tc_tf32=512, tc_bf16=1024, tc_fp16=1024, tc_fp8=2048, tc_int8=2048,
                 cuda_fp32=256, cuda_fp64=4, cuda_fp16=256, cuda_bf16=256, cuda_int32=64, sfu=16),
    "rtx4090": dict(tc_tf32=256, tc_bf16=512, tc_fp16=512, tc_fp8=1024, tc_int8=2048,
                    cuda_fp32=256, cuda_fp64=4, cuda_fp16=256, cuda_bf16=256, cuda_int32=64,
                    sfu=16),
}
# fmt: on


def test_catalogue_lists_every_file_sorted():
    specs = list_specs()
    keys = [s.key for s in specs]
    assert keys == sorted(keys)
    assert set(EXPECTED) <= set(keys)
    for s in specs:
        assert s.path is not None and Path(s.path).stem == s.key


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_catalogue_values(key):
    s = load_spec(key)
    sms, mhz, gbs, gb, l2, smem, l1, tdp, nvl = EXPECTED[key]
    assert (s.sm_count, s.max_clock_hz) == (sms, mhz * 1e6)
    assert s.dram_bandwidth == pytest.approx(gbs * 1e9, rel=1e-12)
    assert s.dram_capacity == gb * 10**9
    assert s.l2_capacity == l2 * MiB
    assert (s.smem_per_sm, s.l1_smem_per_sm, s.registers_per_sm) == (
        smem * KiB,
        l1 * KiB,
        256 * KiB,
    )
    assert (s.tdp_w, s.nvlink_bandwidth) == (tdp, nvl * 1e9)
    assert dict(s.rates) == RATES[key]
    assert s.units == tuple(u for u in UNITS if u in RATES[key])
    for unit, rate in RATES[key].items():
        assert s.peak(unit) == rate * sms * (mhz * 1e6)
    assert s.on_chip_capacity == l2 * MiB + sms * (l1 * KiB + 256 * KiB)


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_catalogue_is_sound_against_its_datasheet(key):
    s = load_spec(key)
    assert s.sources, "every spec cites its sources"
    assert s.datasheet_dense, "every spec carries datasheet figures to check its peaks"
    for unit, figure in s.datasheet_dense.items():
        # up to the printed rounding of the figure (at most 2 %), never more
        assert s.peak(unit) >= figure * 0.98, unit
    # every tensor-core figure is quoted at a clock <= the max boost clock: peak >= figure
    for unit, figure in s.datasheet_dense.items():
        if unit.startswith("tc_") and unit != "tc_fp64":
            assert s.peak(unit) >= figure * (1 - 1e-3), unit


def test_catalogue_files_cite_every_number():
    for path in sorted(CATALOGUE.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        text = path.read_text()
        for k in data:
            if k in ("name", "key", "aliases", "arch", "memory_type", "sources", "measured"):
                continue
            if k == "rates_per_sm_per_clock":
                for unit in data[k]:
                    line = next(ln for ln in text.splitlines() if ln.startswith(f"  {unit}:"))
                    assert "#" in line, f"{path.name}: rate {unit} has no source comment"
            if isinstance(data[k], dict):
                continue
            line = next(ln for ln in text.splitlines() if ln.startswith(f"{k}:"))
            assert "#" in line, f"{path.name}: {k} has no source comment"


def test_datasheet_units_in_h100():
    h = load_spec("H100")
    assert h.datasheet_dense["tc_bf16"] == 989.4e12
    assert h.peak("tc_bf16") / h.datasheet_dense["tc_bf16"] == pytest.approx(1980 / 1830, rel=1e-4)


# --------------------------------------------------------------------------------------------
# Names, aliases, paths, dicts, objects


@pytest.mark.parametrize(
    "name",
    [
        "H100",
        "h100",
        "h100-sxm",
        "H100_SXM",
        "h100 sxm",
        "H100-SXM",
        "h100_sxm",
        "NVIDIA H100 80GB HBM3",
        "nvidia h100 sxm5 80gb",
    ],
)
def test_aliases_resolve(name):
    assert resolve_name(name) == CATALOGUE / "h100_sxm.yaml"
    assert load_spec(name).key == "h100_sxm"


@pytest.mark.parametrize(
    "name,key",
    [
        ("H100-PCIe", "h100_pcie"),
        ("H100_PCIE", "h100_pcie"),
        ("H200", "h200"),
        ("NVIDIA H200", "h200"),
        ("A100", "a100_sxm_80gb"),
        ("A100-80GB", "a100_sxm_80gb"),
        ("NVIDIA A100-SXM4-80GB", "a100_sxm_80gb"),
        ("B200", "b200"),
        ("L40S", "l40s"),
        ("RTX4090", "rtx4090"),
        ("4090", "rtx4090"),
        ("RTX 4090", "rtx4090"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
    ],
)
def test_other_aliases(name, key):
    assert load_spec(name).key == key


def test_path_dict_and_object_inputs():
    h = load_spec("H100")
    path = CATALOGUE / "h100_sxm.yaml"
    assert load_spec(path) == h
    assert load_spec(str(path)) == h
    assert load_spec(h) is h
    from_dict = load_spec(raw("h100_sxm"))
    assert from_dict.path is None and from_dict.key == "nvidia_h100_sxm5_80gb"
    assert from_dict.peak("tc_bf16") == h.peak("tc_bf16")
    assert dataclasses.replace(from_dict, key=h.key, path=h.path) == h


def test_every_name_of_every_spec_resolves_to_its_own_file():
    for s in list_specs():
        for name in (s.key, s.name, *s.aliases):
            assert resolve_name(name) == Path(s.path), name


def test_unknown_name_lists_the_catalogue():
    msg = spec_error("H900", "H900", "h100_sxm", "H100", "a100_sxm_80gb", "path")
    assert "YAML" in msg


def test_missing_file_and_bad_type():
    spec_error("no/such/spec.yaml", "no such file")
    spec_error(42, "got int")


# --------------------------------------------------------------------------------------------
# Malformed specs: a one-line message that names the field


def test_missing_field():
    d = raw()
    del d["dram_bandwidth_gbs"]
    spec_error(d, "<dict>", "missing field", "dram_bandwidth_gbs")
    d = raw()
    del d["rates_per_sm_per_clock"]
    spec_error(d, "rates_per_sm_per_clock")
    d = raw()
    del d["name"]
    spec_error(d, "'name'")


def test_negative_and_zero_values():
    d = raw()
    d["dram_bandwidth_gbs"] = -1
    spec_error(d, "dram_bandwidth_gbs", "positive")
    d = raw()
    d["sm_count"] = 0
    spec_error(d, "sm_count", "positive")
    d = raw()
    d["rates_per_sm_per_clock"]["tc_bf16"] = 0
    spec_error(d, "tc_bf16", "omit")
    d = raw()
    d["nvlink_bandwidth_gbs"] = 0  # zero NVLink is allowed: no NVLink
    assert load_spec(d).nvlink_bandwidth == 0
    d["nvlink_bandwidth_gbs"] = -5
    spec_error(d, "nvlink_bandwidth_gbs")


def test_non_numeric_and_non_integral():
    d = raw()
    d["max_clock_mhz"] = "fast"
    spec_error(d, "max_clock_mhz", "number")
    d = raw()
    d["tdp_w"] = True
    spec_error(d, "tdp_w")
    d = raw()
    d["sm_count"] = 132.5
    spec_error(d, "sm_count", "whole")
    d = raw()
    d["max_clock_mhz"] = "1.98e3"  # YAML reads 1.98e3 as text; numeric text is accepted
    assert load_spec(d).max_clock_hz == 1.98e9


def test_unknown_unit_and_unknown_field():
    d = raw()
    d["rates_per_sm_per_clock"]["tc_bf17"] = 4096
    spec_error(d, "tc_bf17", "unknown unit", "did you mean 'tc_bf16'")
    d = raw()
    d["datasheet_dense_tflops"]["tensor"] = 1
    spec_error(d, "'tensor'", "datasheet_dense_tflops")
    d = raw()
    d["dram_bandwith_gbs"] = d.pop("dram_bandwidth_gbs")
    spec_error(d, "dram_bandwith_gbs", "did you mean 'dram_bandwidth_gbs'")
    d = raw()
    d["measured"]["tc_bf16_tflopz"] = 1
    spec_error(d, "tc_bf16_tflopz", "measured")


def test_base_clock_fails_the_datasheet_check(catalogued):
    d = raw()
    d["max_clock_mhz"] = 1755  # not H100 SXM's max boost clock (1980)
    msg = spec_error(catalogued(d), "peak tc_fp64 = 59.305 TFLOP/s", "66.9", "base clock")
    assert "max_clock_mhz" in msg and "for a what-if GPU load the file by path" in msg
    d["datasheet_dense_tflops"] = {"tc_bf16": 989.4}
    spec_error(catalogued(d), "peak tc_bf16 = 948.879 TFLOP/s", "below the datasheet's 989.4")


def test_datasheet_check_tolerance(catalogued):
    d = raw()
    peak_tf = 4096 * 132 * 1980 / 1e6
    d["datasheet_dense_tflops"] = {"tc_bf16": round(peak_tf * 1.0005, 2)}  # within 1e-3
    load_spec(catalogued(d))
    d["datasheet_dense_tflops"] = {"tc_bf16": round(peak_tf * 1.03, 2)}
    spec_error(catalogued(d), "tc_bf16", "datasheet")
    # a figure printed with few digits is allowed its rounding (H200's "67" for 66.9) ...
    d["datasheet_dense_tflops"] = {"tc_fp64": 67}
    load_spec(catalogued(d))
    # ... but never more than 2 %
    d["datasheet_dense_tflops"] = {"tc_fp64": 70}
    spec_error(catalogued(d), "tc_fp64")


def test_inconsistent_fields(catalogued):
    d = raw()
    d["datasheet_dense_tflops"]["tc_fp4"] = 1000
    spec_error(d, "tc_fp4", "rates has no tc_fp4")
    d = raw()
    d["measured"]["tc_bf16_tflops"] = 2000  # beats the 1070 peak: the peak would be wrong
    spec_error(catalogued(d), "measured", "tc_bf16")
    d = raw()
    d["measured"]["dram_bandwidth_gbs"] = 4000
    spec_error(catalogued(d), "dram_bandwidth")
    d = raw()
    d["l1_smem_per_sm_kib"] = 100
    spec_error(d, "l1_smem_per_sm")
    d = raw()
    d["max_clock_hz"] = 1.98e9
    spec_error(d, "max_clock_mhz", "max_clock_hz", "not both")


def test_malformed_files(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    spec_error(bad, "bad.yaml", "not valid YAML")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    spec_error(empty, "empty.yaml", "empty")
    neg = tmp_path / "neg.yaml"
    d = raw()
    d["dram_bandwidth_gbs"] = -3
    neg.write_text(yaml.safe_dump(d))
    spec_error(neg, "neg.yaml", "dram_bandwidth_gbs")
    lst = tmp_path / "list.yaml"
    lst.write_text("- 1\n- 2\n")
    spec_error(lst, "list.yaml", "mapping")


def test_env_var_catalogue(tmp_path, monkeypatch):
    d = raw()
    d["aliases"] = ["MyGPU"]
    d["name"] = "My GPU"
    (tmp_path / "my_gpu.yaml").write_text(yaml.safe_dump(d))
    monkeypatch.setenv("SOLAR_HW_SPECS", str(tmp_path))
    s = load_spec("mygpu")
    assert s.key == "my_gpu" and s.path == str((tmp_path / "my_gpu.yaml").resolve())
    assert "my_gpu" in [x.key for x in list_specs()]
    assert load_spec("H100").key == "h100_sxm"  # the built-in catalogue is still searched
    # a file in SOLAR_HW_SPECS shadows the built-in one of the same key
    d = raw("h100_sxm")
    d["tdp_w"] = 650
    (tmp_path / "h100_sxm.yaml").write_text(yaml.safe_dump(d))
    assert load_spec("H100").tdp_w == 650


# --------------------------------------------------------------------------------------------
# Derived specs and export


def test_scaled_scales_exactly():
    h = load_spec("H100")
    s = h.scaled(bandwidth=2, compute=4, capacity=8)
    assert s.dram_bandwidth == 2 * h.dram_bandwidth
    for u in h.units:
        assert s.peak(u) == 4 * h.peak(u)
    assert s.on_chip_capacity == 8 * h.on_chip_capacity
    assert s.l2_capacity == 8 * h.l2_capacity
    assert s.dram_capacity == h.dram_capacity
    assert s.sm_count == h.sm_count and s.max_clock_hz == h.max_clock_hz
    assert s.datasheet_dense == {} and s.measured == {} and s.path is None
    assert s.key != h.key and s.name != h.name
    assert h.scaled() is h
    half = h.scaled(compute=0.5)  # below the datasheet: allowed, the datasheet is dropped
    assert half.peak("tc_bf16") == h.peak("tc_bf16") / 2
    tiny = h.scaled(capacity=1e-12)  # capacities stay at least one byte
    assert tiny.l2_capacity == 1 and tiny.on_chip_capacity == 1 + h.sm_count * 2
    assert h.scaled(capacity=1e6).on_chip_capacity == 10**6 * h.on_chip_capacity
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(SpecError):
            h.scaled(bandwidth=bad)


@settings(max_examples=50, deadline=None)
@given(
    bw=st.floats(1e-3, 1e3),
    comp=st.floats(1e-3, 1e3),
    cap=st.floats(1e-3, 1e3),
)
def test_scaled_property(bw, comp, cap):
    h = load_spec("H100")
    s = h.scaled(bandwidth=bw, compute=comp, capacity=cap)
    assert s.dram_bandwidth == pytest.approx(h.dram_bandwidth * bw, rel=1e-12)
    for u in h.units:
        assert s.peak(u) == pytest.approx(h.peak(u) * comp, rel=1e-12)
    # each capacity is rounded to whole bytes: at most half a byte per field
    slack = 0.5 * (1 + 2 * h.sm_count)
    assert s.on_chip_capacity == pytest.approx(h.on_chip_capacity * cap, abs=slack)
    assert load_spec(json.loads(json.dumps(s.to_dict()))) == s


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_to_dict_round_trips(key):
    s = load_spec(key)
    d = s.to_dict()
    back = load_spec(json.loads(json.dumps(d)))
    assert back == s
    assert hash(back) == hash(s)
    assert d["rates"] == dict(s.rates) and d["max_clock_hz"] == s.max_clock_hz


def test_spec_is_immutable_and_hashable():
    h = load_spec("H100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        h.sm_count = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        h.rates["tc_bf16"] = 1  # type: ignore[index]
    assert {h: 1}[load_spec("h100-sxm")] == 1


def test_direct_construction_is_validated():
    h = load_spec("H100")
    with pytest.raises(SpecError, match="dram_bandwidth"):
        dataclasses.replace(h, dram_bandwidth=-1.0)
    with pytest.raises(SpecError, match="max_clock_mhz"):
        dataclasses.replace(h, max_clock_hz=1.5e9)  # below the datasheet
    ok = HardwareSpec(
        name="toy",
        key="toy",
        aliases=(),
        arch="test",
        sm_count=1,
        max_clock_hz=1e9,
        rates={"cuda_fp32": 2},
        dram_bandwidth=1e9,
        dram_capacity=10**9,
        l2_capacity=MiB,
        l2_bandwidth=None,
        smem_per_sm=KiB,
        registers_per_sm=KiB,
        tdp_w=1,
        nvlink_bandwidth=0,
    )
    assert ok.peak("cuda_fp32") == 2e9 and ok.on_chip_capacity == MiB + 2 * KiB

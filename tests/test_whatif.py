"""What-if hardware: quantities with units, ``HardwareSpec.scaled(**fields)``, ``--override``
on every command that takes ``--hw``, and a copied catalogue YAML with edited numbers."""

from __future__ import annotations

import json

import pytest
import yaml
from console import run_solar

import solar.cli
from solar.hw import SpecError, load_spec
from solar.hw.catalogue import CATALOGUE
from solar.hw.quantity import Factor, parse_quantity

MiB, KiB = 2**20, 2**10


@pytest.mark.parametrize(
    "text, dimension, value",
    [
        ("2TB/s", "bandwidth", 2e12),
        ("3350GB/s", "bandwidth", 3.35e12),
        ("1.5 TiB/s", "bandwidth", 1.5 * 2**40),
        ("100MiB", "bytes", 100 * MiB),
        ("50MB", "bytes", 50e6),
        ("228KiB", "bytes", 228 * KiB),
        ("80GB", "bytes", 80e9),
        ("1.98GHz", "frequency", 1.98e9),
        ("1980MHz", "frequency", 1.98e9),
        ("1500TFLOP/s", "ops", 1.5e15),
        ("2PFLOPS", "ops", 2e15),
        ("3958TOPS", "ops", 3.958e15),
        ("2us", "time", 2e-6),
        ("500ns", "time", 5e-7),
        ("700W", "power", 700.0),
        ("132", "count", 132.0),
    ],
)
def test_quantities_read_into_base_units(text, dimension, value):
    assert parse_quantity(text, dimension) == pytest.approx(value, rel=1e-15)


def test_factors():
    assert parse_quantity("x1.5", "bandwidth") == Factor(1.5)
    assert parse_quantity("2x", "bytes") == Factor(2.0)


@pytest.mark.parametrize(
    "text, dimension, message",
    [
        ("2TB", "bandwidth", "'2TB' is not a bandwidth (TB is a size in bytes) (e.g. 2TB/s"),
        ("100", "bytes", "'100' has no unit: give a size in bytes with its unit (e.g. 100MiB"),
        ("2 furlongs", "bytes", "'2 furlongs' is not a size in bytes (e.g. 100MiB"),
        ("1.5", "count", "'1.5' is not a whole number (e.g. 132)"),
        ("x0", "bandwidth", "'x0': a factor must be a positive number (e.g. x1.5)"),
        ("2MiB", "frequency", "'2MiB' is not a frequency (MiB is a size in bytes)"),
    ],
)
def test_bad_quantities_say_what_was_expected(text, dimension, message):
    with pytest.raises(ValueError) as e:
        parse_quantity(text, dimension)
    assert str(e.value).startswith(message), str(e.value)


def test_scaled_fields_set_exact_quantities():
    h = load_spec("H100")
    w = h.scaled(dram_bandwidth="2TB/s", l2="100MiB", tc_bf16="1500TFLOP/s", kernel_launch=2e-6)
    assert w.dram_bandwidth == 2e12 and w.l2_capacity == 100 * MiB
    assert w.peak("tc_bf16") == pytest.approx(1.5e15, rel=1e-15)
    assert w.rates["tc_bf16"] == pytest.approx(1.5e15 / (132 * 1.98e9), rel=1e-15)
    assert w.launch_floor_s == 2e-6
    assert w.peak("tc_fp16") == h.peak("tc_fp16")  # what was not named stays
    assert w.on_chip_capacity == h.on_chip_capacity + 50 * MiB
    assert (
        w.key == "h100_sxm[dram_bandwidth=2TB/s,l2=100MiB,tc_bf16=1500TFLOP/s,kernel_launch=2e-06]"
    )
    # figures of the real H100 stay where their peak is unchanged, and are dropped elsewhere
    kept = ("cuda_fp32", "tc_tf32", "tc_fp16")
    assert dict(w.measured) == {u: v for u, v in h.measured.items() if u in kept}
    assert "tc_bf16" not in w.datasheet_dense and w.datasheet_dense["tc_fp16"] == 989.4e12
    assert w.notes == (
        "what-if GPU from NVIDIA H100 SXM5 80GB: dram_bandwidth 3.3523 TB/s -> 2 TB/s, "
        "l2_capacity 50 MiB -> 100 MiB, tc_bf16 1070.5 TFLOP/s -> 1500 TFLOP/s, "
        "kernel_launch 0.5 us -> 2 us",
        "figures of NVIDIA H100 SXM5 80GB dropped (the peak they describe changed): "
        "datasheet tc_bf16, measured dram_bandwidth, measured tc_bf16, "
        "energy calibration (measured on the real GPU)",
    )
    assert h.energy is not None and w.energy is None  # no energy figures for a made-up GPU
    assert load_spec(json.loads(json.dumps(w.to_dict()))) == w  # what-if specs travel as dicts


def test_scaled_clock_and_sms_scale_every_peak():
    h = load_spec("H100")
    w = h.scaled(clock="x0.5", sm_count=66)
    for u in h.units:
        assert w.peak(u) == pytest.approx(h.peak(u) / 4, rel=1e-15)
    assert w.datasheet_dense == {} and set(w.measured) == {"dram_bandwidth"}
    nv = h.scaled(nvlink_bandwidth="1.8TB/s")  # the interconnect's links follow
    assert nv.interconnect.nvlink_bidirectional == pytest.approx(1.8e12, rel=1e-15)


def test_factors_and_fields_combine():
    h = load_spec("H100")
    w = h.scaled(bandwidth=2, l2="x3")
    assert w.dram_bandwidth == 2 * h.dram_bandwidth and w.l2_capacity == 3 * h.l2_capacity
    assert w.notes[0] == "what-if GPU: NVIDIA H100 SXM5 80GB (bandwidth x2)"


def test_unknown_field_is_one_line_listing_the_fields():
    with pytest.raises(SpecError) as e:
        load_spec("H100").scaled(dram_bw="2TB/s")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(
        "unknown hardware field 'dram_bw' (did you mean 'dram_bandwidth'?); fields: sm_count, "
        "max_clock_hz, dram_bandwidth, dram_capacity, l2_capacity, l2_bandwidth,"
    )
    assert "short names: l2 = l2_capacity, clock = max_clock_hz" in msg
    with pytest.raises(SpecError, match=r"^hardware field l2_capacity='2TB/s' is not a size"):
        load_spec("H100").scaled(l2="2TB/s")


def _copied_h100(tmp_path, **edits):
    data = yaml.safe_load((CATALOGUE / "h100_sxm.yaml").read_text())
    data.update(edits)
    path = tmp_path / "my_h100.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_copied_yaml_with_lower_bandwidth_loads_by_path(tmp_path):
    h = load_spec("H100")
    path = _copied_h100(tmp_path, dram_bandwidth_gbs=2000, name="My H100", aliases=[])
    s = load_spec(path)
    assert s.dram_bandwidth == 2e12
    assert "dram_bandwidth" not in s.measured  # 2.98 TB/s measured: above the new peak
    assert s.measured["tc_bf16"] == h.measured["tc_bf16"]  # still applies, still checked
    assert s.notes == (
        "figures above this spec's peaks dropped (an edited, what-if GPU; the rest are kept "
        "and checked): measured dram_bandwidth 2.98 T/s",
    )
    code, out, err = run_solar("bound", "examples/softmax.py", "--hw", path, "--json")
    assert code == 0, err
    assert s.notes[0] in json.loads(out)["assumptions"]


def test_a_catalogue_entry_must_reach_its_figures(tmp_path, monkeypatch):
    _copied_h100(tmp_path, dram_bandwidth_gbs=2000, name="My H100", aliases=[])
    monkeypatch.setenv("SOLAR_HW_SPECS", str(tmp_path))
    with pytest.raises(SpecError) as e:
        load_spec("my_h100")
    assert "measured dram_bandwidth = 2.98 T/s beats the peak 2 T/s" in str(e.value)
    assert "for a what-if GPU load the file by path" in str(e.value)


def test_every_command_with_hw_takes_override():
    parser = solar.cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    with_hw = []
    for name, sp in sub.choices.items():
        flags = {f for a in sp._actions for f in a.option_strings}
        if "--hw" in flags:
            with_hw.append(name)
            assert "--override" in flags, name
    assert set(with_hw) >= {"bound", "compare", "provision", "plot", "headroom"}


def test_cli_override_bounds_the_what_if_gpu():
    # softmax of 8192 x 8192 fp32 reads and writes 2 x 8192^2 x 4 B, all DRAM-bound
    code, out, err = run_solar(
        "bound", "examples/softmax.py", "--hw", "H100", "--override",
        "dram_bandwidth=2TB/s,l2=100MiB", "--json",
    )  # fmt: skip
    assert code == 0, err
    d = json.loads(out)
    assert d["hw_key"] == "h100_sxm[dram_bandwidth=2TB/s,l2=100MiB]"
    assert d["bounds"]["fused_s"] == pytest.approx(2 * 8192**2 * 4 / 2e12, rel=1e-12)
    assert (
        "what-if GPU from NVIDIA H100 SXM5 80GB: dram_bandwidth 3.3523 TB/s -> 2 TB/s, "
        "l2_capacity 50 MiB -> 100 MiB" in d["assumptions"]
    )


def test_cli_bad_override_is_one_line():
    code, out, err = run_solar(
        "compare", "examples/softmax.py", "--hw", "all", "--override", "l2_capacty=1MiB"
    )
    assert code == 2 and out == ""
    assert err.startswith(
        "solar: error: unknown hardware field 'l2_capacty' (did you mean 'l2_capacity'?)"
    )
    assert len(err.strip().splitlines()) == 1
    code, _, err = run_solar("bound", "examples/softmax.py", "--override", "l2")
    assert code == 2
    assert (
        err.strip() == "solar: error: --override 'l2': write FIELD=VALUE, e.g. dram_bandwidth=2TB/s"
    )

"""Cross-GPU comparison: traced once, analysed per spec, one table / JSON / DataFrame."""

import json
from pathlib import Path

import pytest
import torch
from console import run_solar

from solar.hw import list_specs, load_spec
from solar.questions.compare import compare, resolve_hw

GPT_FFN = Path(__file__).resolve().parents[1] / "examples" / "mlp_bf16.py"


def model_and_inputs():
    with torch.device("meta"):
        model = torch.nn.Sequential(
            torch.nn.Linear(2048, 8192, dtype=torch.bfloat16),
            torch.nn.GELU(approximate="tanh"),
            torch.nn.Linear(8192, 2048, dtype=torch.bfloat16),
        )
        x = torch.empty(4096, 2048, dtype=torch.bfloat16)
    return model, [x]


def test_compare_traces_once_and_matches_bound(monkeypatch):
    import solar
    import solar.api

    calls = []
    real = solar.api.trace
    monkeypatch.setattr(solar.api, "trace", lambda *a, **k: calls.append(1) or real(*a, **k))
    model, inputs = model_and_inputs()
    c = compare(model, inputs, hw=["A100", "H100", "B200"])
    assert len(calls) == 1
    assert c.keys == ["a100_sxm_80gb", "h100_sxm", "b200"]
    for b in c.bounds:
        ref = solar.bound(model, inputs, hw=b.hw_key)
        assert (b.unfused, b.fused, b.cache_aware) == (ref.unfused, ref.fused, ref.cache_aware)
        assert b.cache_aware_bound_by == ref.cache_aware_bound_by
    assert len({b.bytes_fused for b in c.bounds}) == 1  # same work and fused bytes everywhere
    assert c.fastest().hw_key == "b200"
    assert c.bound("H100").hw_key == "h100_sxm"
    with pytest.raises(KeyError):
        c.bound("L40S")


def test_all_and_names():
    assert [s.key for s in resolve_hw("all")] == [s.key for s in list_specs()]
    assert [s.key for s in resolve_hw("A100,H100")] == ["a100_sxm_80gb", "h100_sxm"]
    assert [s.key for s in resolve_hw(load_spec("B200"))] == ["b200"]


def test_json_table_and_missing_units():
    model, inputs = model_and_inputs()
    no_bf16 = load_spec("H100").to_dict()
    no_bf16["rates"] = {u: r for u, r in no_bf16["rates"].items() if "bf16" not in u}
    no_bf16.update(
        key="no_bf16", name="H100 without bf16", datasheet_dense={}, measured={}, energy=None
    )  # the H100's energy costs were measured with its bf16 tensor cores: dropped too
    c = compare(model, inputs, hw=["H100", no_bf16])
    assert c.keys == ["h100_sxm"] and "no_bf16" in c.errors
    d = json.loads(c.to_json())
    assert d["schema"] == "solar.compare/1"
    (gpu,) = d["gpus"]
    assert set(gpu["bounds"]) >= {"unfused_s", "fused_s", "cache_aware_s", "cache_aware_bound_by"}
    assert gpu["on_chip_capacity"] == load_spec("H100").on_chip_capacity
    text = str(c)
    assert "NVIDIA H100" in text and "not comparable" in text
    assert "<table" in c._repr_html_()


def test_dataframe():
    pytest.importorskip("pandas")
    model, inputs = model_and_inputs()
    df = compare(model, inputs, hw="all").to_dataframe()
    assert list(df.index) == [s.key for s in list_specs()]
    assert (df["fused_s"] <= df["cache_aware_s"]).all()
    assert (df["cache_aware_s"] <= df["unfused_s"]).all()


def test_cli_compare(capsys):
    code, out, _ = run_solar("compare", GPT_FFN, "--hw", "all", "--json")
    assert code == 0
    d = json.loads(out)
    assert [g["hw_key"] for g in d["gpus"]] == [s.key for s in list_specs()]
    code, out, _ = run_solar("compare", GPT_FFN, "--hw", "A100,B200")
    assert code == 0 and "NVIDIA A100" in out and "NVIDIA B200" in out


def test_compare_and_compare_graph_default_to_the_same_gpus():
    from solar.api import trace_and_lift
    from solar.questions.compare import DEFAULT_HW, compare_graph

    model, inputs = model_and_inputs()
    _, g = trace_and_lift(model, inputs)
    want = [load_spec(h).key for h in DEFAULT_HW]
    assert want == ["a100_sxm_80gb", "h100_sxm", "b200"]
    assert compare_graph(g).keys == want
    assert compare(model, inputs).keys == want


@pytest.mark.parametrize("name", ["bound", "plan", "compare", "provision", "sweep"])
def test_hw_comes_right_after_the_program_and_its_inputs(name):
    """``hw`` is the third parameter, as in ``solar.bound(model, inputs, hw)``; a sweep's
    inputs are its ``make_inputs`` and ``sizes``; targets are in seconds (``target_s``)."""
    import inspect

    import solar

    params = list(inspect.signature(getattr(solar, name)).parameters)
    head = ["model", "make_inputs", "sizes", "hw"] if name == "sweep" else ["model", "inputs", "hw"]
    assert params[: len(head)] == head
    if name in ("provision", "sweep"):
        assert "target_s" in params and "target_ms" not in params

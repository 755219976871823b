"""Plots (matplotlib), DataFrames (pandas) and HTML of the reports."""

import dataclasses
from pathlib import Path

import pytest
import torch
from console import run_solar

import solar
from solar.backend.attribution import kernel_attribution
from solar.hw import load_spec
from solar.report.frame import bound_frame
from solar.report.html import bound_html

ROOT = Path(__file__).resolve().parents[1]
GPT_FFN = ROOT / "examples" / "mlp_bf16.py"


@pytest.fixture(scope="module")
def ffn_bound():
    from solar.problem import load_problem

    p = load_problem(GPT_FFN)
    return solar.bound(p.model, p.inputs, hw="H100", name=p.name)


@pytest.fixture(scope="module")
def mpl():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    return matplotlib


def test_kernel_shares_add_up_to_each_level(ffn_bound):
    b = ffn_bound
    rows = kernel_attribution(b)
    assert [r["kernel"] for r in rows] == [k.name for k in b.kernels]
    assert sum(r["fused_s"] for r in rows) == pytest.approx(b.fused, rel=1e-12)
    assert sum(r["cache_aware_s"] for r in rows) == pytest.approx(b.cache_aware, rel=1e-12)
    assert sum(r["fused_bytes"] for r in rows) == b.bytes_fused
    assert sum(r["cache_aware_bytes"] for r in rows) == pytest.approx(b.bytes_cache_aware)
    assert [r["unfused_s"] for r in rows] == [k.time_s for k in b.kernels]
    # memory-bound level: shares are bytes / bandwidth
    x = torch.empty(1 << 24, device="meta")
    m = solar.bound(lambda x: torch.relu(x) * 2, [x], hw="H100")
    rows = kernel_attribution(m)
    assert m.fused_bound_by == "dram"
    assert rows[0]["fused_bytes"] == 4 * (1 << 24)  # the input, charged to its first reader
    assert rows[-1]["fused_bytes"] == 4 * (1 << 24)  # the output, to its last writer


def test_dataframes(ffn_bound):
    pytest.importorskip("pandas")
    df = bound_frame(ffn_bound)
    assert list(df.index) == [k.name for k in ffn_bound.kernels]
    for col in ("op", "flops", "flops_tc_bf16", "intensity", "unfused_s", "fused_share_s"):
        assert col in df.columns
    assert df["unfused_s"].sum() == pytest.approx(ffn_bound.unfused)
    assert df["fused_share_s"].sum() == pytest.approx(ffn_bound.fused)
    lv = bound_frame(ffn_bound, "level")
    assert list(lv.index) == ["unfused", "fused", "cache_aware"]
    assert lv.loc["fused", "time_s"] == ffn_bound.fused
    with pytest.raises(ValueError, match="by must be"):
        bound_frame(ffn_bound, "node")


def test_html(ffn_bound):
    text = bound_html(ffn_bound)
    for word in ("cache-aware", "addmm_0", "assumptions", "<table", "fusion opportunity"):
        assert word in text
    b = solar.bound(
        lambda a, b: a @ b, [torch.empty(64, 64, device="meta") for _ in range(2)], hw="H100"
    )
    b = dataclasses.replace(b, program="<script>")
    assert "<script>" not in bound_html(b) and "&lt;script&gt;" in bound_html(b)


def test_each_plot(mpl, ffn_bound, tmp_path):
    from solar.questions.compare import compare_graph
    from solar.questions.provision import provision_graph
    from solar.questions.sweep import sweep
    from solar.report.plots import (
        capacity_plot,
        compare_plot,
        kernels_plot,
        plot_bound,
        region_plot,
        roofline_plot,
        sweep_plot,
    )

    b = ffn_bound
    fig = roofline_plot(b)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    texts = " ".join(t.get_text() for t in ax.texts)
    for rate in ("tc_bf16", "cuda_bf16", "sfu", "DRAM"):
        assert rate in texts
    assert "addmm_0" in " ".join(t.get_text() for t in ax.texts)
    fig = capacity_plot(b)
    ax = fig.axes[0]
    labels = " ".join(t.get_text() for t in ax.texts)
    assert "L2" in labels and "all on-chip" in labels
    xs = {round(line.get_xdata()[0]) for line in ax.lines if len(set(line.get_xdata())) == 1}
    h100 = load_spec("H100")
    assert {h100.l2_capacity, h100.on_chip_capacity} <= xs
    assert len(kernels_plot(b).axes[0].patches) >= 3 * len(b.kernels) - 3
    from solar.problem import load_problem

    problem = load_problem(GPT_FFN)
    _, g = solar.trace_and_lift(problem.model, problem.inputs, name=problem.name)
    p = provision_graph(g, target_s=2e-4)
    assert region_plot(p).axes
    assert compare_plot(compare_graph(g, ["A100", "H100"])).axes
    lin = torch.nn.Linear(256, 256, device="meta")
    s = sweep(lin, lambda n: [torch.empty(n, 256, device="meta")], [64, 256], target_s=1e-3)
    assert sweep_plot(s).axes
    path = tmp_path / "r.png"
    plot_bound(b, "roofline").savefig(path)
    assert path.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="kind"):
        plot_bound(b, "pie")


def test_plot_command_writes_pngs(mpl, tmp_path):
    out = tmp_path / "img"
    code, stdout, err = run_solar("plot", GPT_FFN, "--out", out, "--kind", "roofline")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["roofline.png"]
    assert stdout.strip().endswith("roofline.png")


def test_solar_plot_all(mpl, tmp_path):
    out = tmp_path / "img"
    code, _, err = run_solar("plot", "--all", GPT_FFN, "--out", out)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == [
        "capacity.png",
        "compare.png",
        "kernels.png",
        "region.png",
        "roofline.png",
    ]

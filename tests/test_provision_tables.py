"""The "GPUs needed" table says which counts were tried and why, and shows memory per GPU only
for a plan (issue 22): a bf16 projection 8192 -> 8192 on a batch of 4 needs, by the proven
minimum, 5 H100s for a 9 us target, but 5, 6 and 7 have no plan, so the answer is 8."""

from __future__ import annotations

import math

import pytest
import torch

from solar.api import trace_and_lift
from solar.hw import load_spec
from solar.questions.plan import gpus_needed, tried_text
from solar.questions.provision import provision_graph
from solar.report.table import gpu_count_renderables, render

TARGET = 9e-6
WEIGHT = 8192 * 8192 * 2  # bytes, bf16
ACTIVATIONS = 2 * 4 * 8192 * 2  # the input and the output, bf16


@pytest.fixture(scope="module")
def projection():
    with torch.device("meta"):
        model = torch.nn.Linear(8192, 8192, bias=False).to(torch.bfloat16)
        x = torch.empty(4, 8192, dtype=torch.bfloat16)
    return trace_and_lift(model, [x], name="proj")


def test_counts_tried_and_why(projection):
    """The proven minimum is ceil(fused bytes / bandwidth / target) = ceil(40.08 / 9) = 5
    (memory-bound: 0.54 GFLOP is 0.5 us of the 989 TFLOP/s). A count needs TP x PP x DP with
    TP dividing 8192, DP dividing the batch 4 and PP at most the one kernel: 5, 6 and 7 have
    none; 8 is TP 8 (each GPU reads an eighth of the weight, 5.0 us)."""
    _, g = projection
    spec = load_spec("H100")
    assert math.ceil((WEIGHT + ACTIVATIONS) / spec.dram_bandwidth / TARGET) == 5
    c = gpus_needed(g, "H100", TARGET, level="fused")
    assert (c.at_least, c.gpus, c.plan) == (5, 8, "TP 8 x PP 1 x DP 1")
    assert c.tried == ((5, "no plan"), (6, "no plan"), (7, "no plan"), (8, "meets"))
    assert tried_text(c.tried) == "5-7 no plan, 8 meets"
    assert WEIGHT / 8 / spec.dram_bandwidth <= c.bound_s <= TARGET


def test_no_memory_per_gpu_without_a_plan(projection):
    """At 2 us the proven minimum is 21 (40.08 / 2), more than a host's 8: nothing is tried,
    and the row shows no memory figure."""
    _, g = projection
    c = gpus_needed(g, "H100", 2e-6, level="fused")
    assert (c.gpus, c.at_least, c.tried) == (None, 21, ())
    assert c.reason == "needs at least 21 GPUs, a host has 8"
    text = render(gpu_count_renderables([c]))
    row = next(line for line in text.splitlines() if "H100" in line)
    assert _cells(row)[:7] == ["NVIDIA H100 SXM5 80GB", "none", "21", "-", "-", "-", "-"]


def test_the_provision_table_rows(projection):
    _, g = projection
    p = provision_graph(g, target_s=TARGET, level="fused", hw="H100", catalog=["H100", "H200"])
    text = render(gpu_count_renderables(p.gpus))
    assert "GPUs needed" in str(p)
    rows = {}
    for line in text.splitlines():
        cells = _cells(line)
        if len(cells) == 8 and cells[0].startswith("NVIDIA"):
            rows[cells[0]] = cells[1:7]
    # H200: 4.8 TB/s, minimum ceil(27.9 / 9) = 4, TP 4 reads a quarter of the weight
    assert rows == {
        "NVIDIA H200 SXM 141GB": ["4", "4", "4 meets", "TP 4 x PP 1 x DP 1", "6.987 us",
                                  "33.64 MB of 141 GB"],
        "NVIDIA H100 SXM5 80GB": ["8", "5", "5-7 no plan, 8 meets", "TP 8 x PP 1 x DP 1",
                                  "5.027 us", "16.85 MB of 80 GB"],
    }  # fmt: skip
    assert "a count has a plan only when it factors as TP x PP x DP" in " ".join(text.split())


def _cells(line: str) -> list[str]:
    """The cells of a rendered table row (``│ a │ b │``)."""
    return [x.strip() for x in line.split("│")[1:-1]]

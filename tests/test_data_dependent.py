"""Data-dependent sizes: traced at their smallest possible value by default (the bound holds
for every input), at the sizes of a real run with ``observe=True`` (the executed IR then
reproduces PyTorch's outputs), and listed in the report either way."""

from __future__ import annotations

import pytest
import torch
from console import run_solar
from eager_oracle import check

import solar
from solar.frontend.torch import DataDependentOperatorError, trace_torch
from solar.ir.cost import kernel_io

X = torch.tensor(
    [[0.5, -1.0, 2.0, 0.0, 1.5], [-0.5, 3.0, 0.0, -2.0, 1.0], [0.0, 0.0, 4.0, -1.0, 0.25]]
)  # 7 of 15 elements > 0
POSITIVE = 7
LABELS = torch.tensor([3, 1, 3, 0, 1, 3, 5])  # 4 distinct values, max 5


@pytest.mark.parametrize(
    "fn, inputs",
    [
        (lambda x: torch.nonzero(x > 0), (X,)),
        (lambda x: torch.argwhere(x), (X,)),
        (lambda x: torch.where(x > 0), (X,)),
        (lambda x: torch.nonzero(x.t() < -5), (X,)),  # none: an empty result
        (lambda x: x[x > 0] * 2, (X,)),
        (lambda x: x[:, x[0] > 0].sum(0), (X,)),
        (lambda x: torch.masked_select(x, x[0] > 0), (X,)),
        (lambda x: torch.unique(x, return_inverse=True, return_counts=True), (LABELS,)),
        (lambda x: torch.unique_consecutive(x, return_counts=True), (LABELS.sort()[0],)),
        (lambda x: torch.bincount(x), (LABELS,)),
        (lambda x, w: torch.bincount(x, w, minlength=8), (LABELS, torch.rand(7))),
        (lambda x: x[: int((x > 0).sum())].exp(), (X.flatten(),)),  # .item() of a count
    ],
    ids=[
        "nonzero",
        "argwhere",
        "where",
        "nonzero-empty",
        "mask",
        "column-mask",
        "masked_select",
        "unique",
        "unique_consecutive",
        "bincount",
        "bincount-weights",
        "item",
    ],
)
def test_observed_sizes_execute_as_pytorch(fn, inputs):
    trace = check(fn, *inputs, observe=True, lifted=True)
    assert any("observed on the given inputs" in a for a in trace.assumptions), trace.assumptions


def test_histc_executes_as_pytorch():
    """``histc`` has a static size (``bins``): nothing to assume."""
    for lo, hi in ((-2.0, 2.0), (0.0, 0.0)):
        trace = check(lambda x, lo=lo, hi=hi: torch.histc(x, bins=4, min=lo, max=hi), X)
        assert not any("data-dependent" in a for a in trace.assumptions)


def test_minimum_is_the_default_and_is_reported():
    """``x[x > 0].sum()`` on a (3, 5) fp32 input: 0 rows selected. The mask kernel still reads
    the 15-byte mask and writes nothing; the sum writes its one fp32 result from 0 reads."""
    trace = trace_torch(lambda x: x[x > 0].sum(), (X,))
    (line,) = [a for a in trace.assumptions if "data-dependent" in a]
    assert "aten.index.Tensor (boolean mask) at test_data_dependent.py:" in line
    assert ": 0 (its smallest possible value" in line
    k = {k.op: kernel_io(trace.program, k) for k in trace.program.kernels}
    assert (k["aten.index.Tensor"].read_bytes, k["aten.index.Tensor"].write_bytes) == (15, 0)
    assert (k["aten.sum.default"].read_bytes, k["aten.sum.default"].write_bytes) == (0, 4)

    observed = trace_torch(lambda x: x[x > 0].sum(), (X,), observe=True)
    k = {k.op: kernel_io(observed.program, k) for k in observed.program.kernels}
    assert k["aten.index.Tensor"].write_bytes == 4 * POSITIVE
    assert k["aten.sum.default"].read_bytes == 4 * POSITIVE
    assert any(f": {POSITIVE} (observed on the given inputs)" in a for a in observed.assumptions)


@pytest.mark.parametrize(
    "fn, op, value",
    [
        (lambda x: torch.unique(x), "aten._unique2", 1),  # a non-empty input has a value
        (lambda x: torch.bincount(x), "aten.bincount", 1),  # max(x) + 1 >= 1
        (lambda x: torch.bincount(x, minlength=9), "aten.bincount", 9),
        (lambda x: torch.nonzero(x), "aten.nonzero", 0),
    ],
)
def test_the_smallest_size_each_operator_allows(fn, op, value):
    trace = trace_torch(fn, (LABELS,))
    assert any(f"size of {op} at" in a and f": {value} (" in a for a in trace.assumptions)


def test_a_top_k_of_no_elements_is_traced():
    """Detection heads (torchvision's FCOS, RetinaNet, SSD) take the top-k of the scores above
    a threshold: at the smallest size, 0 scores, the top-k has no elements and routes nothing."""

    def top_scores(x):
        scores = x[x > 0]
        return scores.topk(min(2, scores.numel())).values.sum()

    trace = trace_torch(top_scores, (X,))  # an empty top-k is no kernel
    assert [k.op for k in trace.program.kernels] == [
        "aten.gt.Scalar",
        "aten.index.Tensor",
        "aten.sum.default",
    ]
    assert any(": 0 (its smallest possible value" in a for a in trace.assumptions)


def test_iterating_over_no_rows_is_traced():
    """Mask R-CNN pastes each detected mask with ``for m, b in zip(masks, boxes)``: at the
    smallest size the ``unbind`` of 0 rows has no outputs (a view of nothing), and the
    program's own empty branch follows."""

    def paste(x):
        rows = x[x > 0].reshape(-1, 1)
        res = [r * 2 for r in rows]
        return torch.stack(res) if res else rows.new_zeros(0, 1)

    trace = trace_torch(paste, (X,))
    assert [k.op for k in trace.program.kernels] == ["aten.gt.Scalar", "aten.index.Tensor"]
    check(paste, X, observe=True)  # the observed rows execute as PyTorch


def test_the_bound_lists_each_size_once_with_its_count():
    def fn(x):
        return sum(torch.nonzero(x > t).sum() for t in (0.0, 1.0, 2.0))

    b = solar.bound(fn, (X,))
    lines = [a for a in b.assumptions if "data-dependent size" in a]
    assert len(lines) == 1 and "(3 times)" in lines[0], lines
    assert "data-dependent size of aten.nonzero" in str(b)


def test_observe_needs_real_tensors():
    with pytest.raises(ValueError, match="observe=True runs the program once"):
        trace_torch(lambda x: x[x > 0], (torch.empty(3, device="meta"),), observe=True)


def test_python_values_need_observe():
    with pytest.raises(DataDependentOperatorError, match="observe=True"):
        trace_torch(lambda x: x * x.sum().item(), (X,))
    trace = trace_torch(lambda x: x * x.sum().item(), (X,), observe=True)
    assert "1 Python value(s) read from tensors (.item(), a tensor in an if; at " in "\n".join(
        trace.assumptions
    )


def test_observed_sizes_that_the_data_contradicts_are_refused():
    """The IR of one input run on another whose sizes differ: a one-line error, not a wrong
    answer."""
    from solar.interp.torch.execute import execute

    trace = trace_torch(lambda x: torch.nonzero(x > 0), (X,), observe=True)
    with pytest.raises(ValueError, match="trace with observe=True on these inputs"):
        execute(trace.program, {n: -X for n in trace.program.inputs})


def test_cli_reports_the_assumed_size(tmp_path):
    f = tmp_path / "select.py"
    f.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x[x > 0].exp()\n"
        "def get_inputs():\n"
        "    return [torch.randn(64, 64)]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    rc, out, err = run_solar("bound", str(f))
    assert rc == 0, err
    assert "data-dependent size of aten.index.Tensor (boolean mask) at select.py:4: 0" in out


def test_nms_keeps_at_least_one_box_and_executes_as_torchvision():
    """``torchvision.ops.nms``: the best box is always kept (the minimum is 1); observed,
    the executed IR keeps torchvision's boxes in its order."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    boxes = torch.rand(40, 4) * 20
    boxes[:, 2:] += boxes[:, :2] + 1
    scores = torch.rand(40)

    def fn(b, s):
        return torchvision.ops.nms(b, s, 0.3)

    low = trace_torch(fn, (boxes, scores))
    assert any("size of torchvision.nms at" in a and ": 1 (" in a for a in low.assumptions)
    check(fn, boxes, scores, observe=True, lifted=True)


@pytest.mark.parametrize("aligned", [True, False])
def test_roi_align_executes_as_torchvision(aligned):
    """``roi_align`` (bilinear samples, a 2 x 2 grid per bin; rois reaching the border), the
    operator torchvision.ops.roi_align launches when its extension is loaded. Samples beyond
    one pixel outside the image count 0, as in torchvision's C++/CUDA kernels; the rois stay
    within that pixel, where torchvision's pure-PyTorch reference (the CPU kernel where the
    extension cannot load) agrees."""
    pytest.importorskip("torchvision")
    torch.manual_seed(0)
    x = torch.rand(2, 3, 12, 10)
    rois = torch.tensor(
        [[0, 1.0, 1.5, 7.0, 9.0], [1, -1.0, 2.0, 4.0, 14.0], [1, 8.5, 0.2, 9.0, 0.9]]
    )

    def fn(x, r):
        return torch.ops.torchvision.roi_align(x, r, 0.5, 3, 4, 2, aligned)

    check(fn, x, rois, lifted=True)

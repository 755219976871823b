"""Python values read from tensors whose contents are unknown but bounded
(:mod:`solar.frontend.torch.ranges`): intervals checked against real executions, decisions
taken only where the whole interval agrees, and the value itself reported."""

from __future__ import annotations

import pytest
import torch
import torch.fx as fx
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.fx.experimental.proxy_tensor import make_fx

import solar
from solar.frontend.torch import DataDependentOperatorError, trace_torch
from solar.frontend.torch.ranges import RangedValue, _Ranges

IDS = torch.tensor([[5, 2, 7, 2, 2, 9, 1, 2], [2, 2, 2, 2, 2, 2, 2, 2]])  # 2 x 8, pad id 2

# integer programs of (ids 2 x 8): every value they compute lies in the interval derived
PROGRAMS = {
    "mask-sum": lambda ids: (ids != 2).sum(dim=1),
    "max-of-sum": lambda ids: (ids != 2).sum(dim=1).max(),
    "argmax": lambda ids: ids.argmax(dim=1),
    "topk-positions": lambda ids: ids.topk(3, dim=1)[1],
    "affine": lambda ids: (ids == 2).sum() * 3 - 7,
    "clamp": lambda ids: (ids > 4).sum(1).clamp(2, 5),
    "where": lambda ids: torch.where(ids > 4, (ids > 6).sum(), (ids < 0).long() - 4),
    "cat": lambda ids: torch.cat([(ids > 0).sum(1), ids.argmin(1) + 10]),
    "count-nonzero": lambda ids: torch.count_nonzero(ids == 2, dim=0),
    "decided-compare": lambda ids: ((ids != 2).sum(1) <= 8).all(),
    "arange": lambda ids: torch.arange(3, 10, 2) + (ids > 100).sum(),
    "not": lambda ids: torch.logical_not(ids >= 0),
    "maximum": lambda ids: torch.maximum((ids > 1).sum(1), ids.argmax(1)),
    "max-of-two": lambda ids: torch.max((ids > 4).sum(1), ids.argmax(1) + 20),
    "narrowing": lambda ids: ((ids > 0).sum(1) * 100 + 100).to(torch.int8),
    "kthvalue-positions": lambda ids: ids.kthvalue(2, dim=0)[1],
    "to-bool": lambda ids: ((ids > 0).sum(1) + 1).bool(),
    "not-of-counts": lambda ids: torch.logical_not((ids > 0).sum(1) + 2),
}

# hand-derived intervals of each program's output
EXPECTED = {
    "mask-sum": (0, 8),  # a sum of 8 booleans
    "max-of-sum": (0, 8),
    "argmax": (0, 7),  # a position among 8
    "topk-positions": (0, 7),
    "affine": (-7, 41),  # 3 * [0, 16] - 7
    "clamp": (2, 5),
    "where": (-4, 16),  # [0, 16] joined with [0, 1] - 4
    "cat": (0, 17),  # [0, 8] joined with [10, 17]
    "count-nonzero": (0, 2),  # over dim 0 of size 2
    "arange": (3, 9 + 16),  # 3, 5, 7, 9 plus [0, 16]
    "maximum": (0, 8),  # max([0, 8], [0, 7])
    "max-of-two": (20, 27),  # elementwise: max([0, 8], [20, 27])
    "narrowing": None,  # [100, 900] wraps in int8: unknown
    "kthvalue-positions": (0, 1),  # positions along dim 0, of size 2
    "to-bool": (1, 1),  # [1, 9] is never 0
    "not-of-counts": (0, 0),  # [2, 10] is never 0: its logical not is always 0
}


def _interval_of_output(fn, example: torch.Tensor) -> tuple[fx.GraphModule, _Ranges, fx.Node]:
    gm = make_fx(fn, tracing_mode="fake")(example)
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    return gm, _Ranges(), out[0] if isinstance(out, list | tuple) else out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_interval_derived_by_hand(name):
    _, ranges, out = _interval_of_output(PROGRAMS[name], IDS)
    assert ranges.of(out) == EXPECTED[name]


def test_decided_comparisons_are_one_value():
    ranges_of = {
        name: _interval_of_output(PROGRAMS[name], IDS)
        for name in ("decided-compare", "not", "mask-sum")
    }
    gm, ranges, out = ranges_of["decided-compare"]
    assert ranges.of(out) == (1, 1)  # a sum of 8 booleans is at most 8
    gm, ranges, out = ranges_of["not"]
    assert ranges.of(out) == (0, 1)  # int64 inputs may be negative: undecided


class _Recorder(fx.Interpreter):
    def __init__(self, gm: fx.GraphModule) -> None:
        super().__init__(gm)
        self.values: dict[fx.Node, object] = {}

    def run_node(self, n: fx.Node) -> object:
        out = super().run_node(n)
        self.values[n] = out
        return out


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(st.integers(-3, 12), min_size=16, max_size=16),
    name=st.sampled_from(sorted(PROGRAMS)),
)
def test_every_value_lies_in_its_interval(data, name):
    """The second oracle: the program run for real on random ids; every integer value of
    every node lies in the interval derived for that node."""
    ids = torch.tensor(data).reshape(2, 8)
    gm, ranges, _ = _interval_of_output(PROGRAMS[name], IDS)
    recorder = _Recorder(gm)
    recorder.run(ids)
    checked = 0
    for node, value in recorder.values.items():
        span = ranges.of(node)
        if span is None or not isinstance(value, torch.Tensor) or value.is_floating_point():
            continue
        assert span[0] <= int(value.min()) and int(value.max()) <= span[1], (node, span)
        checked += 1
    assert checked


def _xlm_style(ids):
    """XLM's check: the longest unpadded row is never longer than the sequence."""
    lengths = (ids != 2).sum(dim=1).long()
    assert lengths.max().item() <= ids.shape[1]
    return ids.float().softmax(-1)


def test_a_check_the_interval_decides_is_traced_and_reported():
    trace = trace_torch(_xlm_style, (IDS,))
    notes = "\n".join(trace.assumptions)
    assert "1 Python value(s) read from tensors" in notes
    assert "its smallest possible value, of [0, 8]" in notes
    observed = trace_torch(_xlm_style, (IDS,), observe=True)
    assumed = solar.bound(_xlm_style, IDS, hw="H100")
    assert assumed.fused == solar.bound(_xlm_style, IDS, hw="H100", observe=True).fused
    assert "observed on the given inputs" in "\n".join(observed.assumptions)


def test_a_truncation_takes_the_smallest_length():
    """A size made from the value takes its smallest possible value, as every data-dependent
    size does: the bound stays below the observed one."""

    def truncate(ids):
        n = (ids != 2).sum(dim=1).max().item()
        return ids[:, :n].float().exp()

    assumed = solar.bound(truncate, IDS, hw="H100")
    observed = solar.bound(truncate, IDS, hw="H100", observe=True)  # n = 5
    assert assumed.bytes_fused < observed.bytes_fused


def test_a_decision_the_interval_does_not_decide_is_one_line_naming_it():
    def branch(ids):
        if (ids != 2).sum(dim=1).max().item() > 3:
            return ids * 2
        return ids

    with pytest.raises(DataDependentOperatorError) as err:
        trace_torch(branch, (IDS,))
    message = str(err.value)
    assert "\n" not in message
    assert "anywhere in [0, 8]" in message and "`value > 3`" in message
    assert "test_ranges.py:" in message and "observe=True" in message
    traced = trace_torch(branch, (IDS,), observe=True)  # the real value decides
    assert traced.program.kernels


def test_a_tensor_truth_the_interval_decides():
    def check(ids):
        if ((ids != 2).sum(dim=1) <= ids.shape[1]).all():
            return ids * 2
        return ids

    assert len(trace_torch(check, (IDS,)).program.kernels) >= 1
    with pytest.raises(DataDependentOperatorError):
        trace_torch(lambda ids: ids * 2 if (ids > 3).any() else ids, (IDS,))


def test_arithmetic_keeps_the_interval_and_refuses_the_rest():
    v = RangedValue(2, 10, "here.py:1")
    assert ((v + 1).lo, (v + 1).hi) == (3, 11)
    assert ((3 * v).lo, (3 * v).hi) == (6, 30)
    assert ((12 - v).lo, (12 - v).hi) == (2, 10)
    assert ((-v).lo, (-v).hi) == (-10, -2)
    assert ((v // 4).lo, (v // 4).hi) == (0, 2)
    assert int(v) == 2 and v < 11 and v >= 2 and v != 11 and not v == 0  # noqa: SIM201
    for use in (lambda: v / 2, lambda: float(v), lambda: v % 3, lambda: v < 5, lambda: v == 4):
        with pytest.raises(DataDependentOperatorError, match=r"anywhere in \[2, 10\]"):
            use()


def test_the_xlm_model_is_bounded_called_the_default_way():
    transformers = pytest.importorskip("transformers")
    config = transformers.XLMConfig(
        vocab_size=64, emb_dim=32, n_layers=1, n_heads=2, max_position_embeddings=32
    )
    with torch.device("meta"):
        model = transformers.XLMWithLMHeadModel(config).eval()
    ids = torch.randint(0, 64, (1, 16))
    bound = solar.bound(model, ids, hw="H100")
    assert "of [0, 16]" in "\n".join(bound.assumptions)

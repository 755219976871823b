"""Gathers, scatters, scans, sorting and NLL through the PyTorch frontend: every operator and
option traced, lowered, executed as IR and compared with eager PyTorch; kernel grouping, cost
facts by hand, and the clear errors for data-dependent shapes."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from eager_oracle import check as _check

from solar.frontend.torch import UnsupportedOperatorError, trace_torch
from solar.graph.lift import lift
from solar.interp.torch.execute import execute
from solar.ir.cost import kernel_io, program_io, statement_ops

aten = torch.ops.aten


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + 17 * len(shape) + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype)


def ints(*shape, lo=0, hi=5, seed=1, dtype=torch.int64):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


def perm(n, k=None, seed=2):
    """Distinct indices (overwriting scatters with duplicates have no defined winner)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randperm(n, generator=g)[: k or n]


def check(fn, *inputs, kernels=None):
    """The oracle, and the program lifts (every statement costed)."""
    return _check(fn, *inputs, kernels=kernels, lifted=True)


def case(fn, *inputs, id, kernels=None):  # noqa: A002
    return pytest.param(fn, inputs, kernels, id=id)


X = rand(4, 5)
X3 = rand(3, 4, 5)
W = rand(10, 6)
IDS = ints(2, 3, hi=10)

GATHERS = [
    case(
        lambda w, i: F.embedding(i, w), W, IDS, id="embedding", kernels=["aten.embedding.default"]
    ),
    case(lambda w, i: F.embedding(i, w, padding_idx=0), W, IDS, id="embedding_padding_idx"),
    case(lambda w, i: F.embedding(i, w), W.half(), ints(7, hi=10), id="embedding_fp16"),
    case(lambda w, i: F.embedding(i, w), W, ints(7, hi=10, dtype=torch.int32), id="embedding_i32"),
    case(lambda w, i: F.embedding(i, w), W, torch.tensor(3), id="embedding_scalar_id"),
    case(lambda x, i: x.index_select(0, i), X, ints(6, hi=4), id="index_select_0"),
    case(lambda x, i: x.index_select(-1, i), X3, ints(7), id="index_select_last"),
    case(lambda x, i: x.index_select(1, i), X3, torch.tensor(2), id="index_select_0d_index"),
    case(lambda x, i: x.t().index_select(0, i), X, ints(3), id="index_select_of_view"),
    case(lambda x, i: x.gather(1, i), X, ints(4, 3), id="gather_1"),
    case(lambda x, i: x.gather(0, i), X, ints(2, 5, hi=4), id="gather_0"),
    case(lambda x, i: x.gather(-1, i), X3, ints(2, 3, 7), id="gather_3d_smaller_index"),
    case(lambda x, i: x.take(i), X, ints(3, 2, lo=-20, hi=20), id="take_negative"),
    case(lambda x, i: x[i], X, ints(3, lo=-4, hi=4), id="index_first_negative"),
    case(lambda x, i: x[:, i], X, ints(2, 3), id="index_second_2d_index"),
    case(lambda x, i, j: x[i, j], X, ints(3, hi=4), ints(3), id="index_pair"),
    case(lambda x, i, j: x[i, :, j], X3, ints(2, 1, hi=3), ints(4), id="index_split_broadcast"),
    case(lambda x, i, j: x[:, i, j], X3, ints(2, hi=4), ints(2), id="index_adjacent_middle"),
    case(lambda x, i: x[None, i, 1:3], X, ints(3, hi=4), id="index_none_and_slice"),
    case(lambda x, i: x.half()[i], X, ints(5, hi=4), id="index_fp16"),
    case(lambda x, i: x.t()[i], X, ints(3), id="index_of_transposed_view"),
]


@pytest.mark.parametrize("fn, inputs, kernels", GATHERS)
def test_gathers(fn, inputs, kernels):
    check(fn, *inputs, kernels=kernels)


IDX = ints(4, 3)
SRC = rand(4, 3)
SCATTERS = [
    case(
        lambda x, i, s: x.scatter(1, i, s),
        X,
        torch.stack([perm(5, 3, seed=k) for k in range(4)]),
        SRC,
        id="scatter_src",
        kernels=["aten.scatter.src"],
    ),
    case(
        lambda x, i: x.scatter(1, i, 2.5),
        X,
        torch.stack([perm(5, 3, seed=k) for k in range(4)]),
        id="scatter_value",
    ),
    case(lambda x, i, s: x.scatter(1, i, s, reduce="add"), X, IDX, SRC, id="scatter_reduce_add"),
    case(
        lambda x, i, s: x.scatter(1, i, s, reduce="multiply"),
        X,
        IDX,
        SRC,
        id="scatter_reduce_multiply",
    ),
    case(lambda x, i: x.scatter(1, i, 2.0, reduce="add"), X, IDX, id="scatter_value_reduce"),
    case(lambda x, i, s: x.scatter_add(1, i, s), X, IDX, SRC, id="scatter_add"),
    case(
        lambda x, i, s: x.scatter_add(0, i, s), X, ints(2, 5, hi=4), rand(3, 6), id="scatter_add_0"
    ),
    *(
        case(
            lambda x, i, s, r=r, inc=inc: x.scatter_reduce(1, i, s, r, include_self=inc),
            X,
            IDX,
            SRC,
            id=f"scatter_reduce_{r}_{'self' if inc else 'noself'}",
        )
        for r in ("sum", "prod", "mean", "amax", "amin")
        for inc in (True, False)
    ),
    case(
        lambda x, i, s: x.scatter_reduce(0, i, s, "mean", include_self=False),
        torch.arange(12).reshape(4, 3) * 7,
        ints(5, 3, hi=4),
        torch.arange(15).reshape(5, 3) - 4,
        id="scatter_reduce_mean_int",
    ),
    case(lambda x, i, s: x.clone().scatter_add_(1, i, s), X, IDX, SRC, id="scatter_add_inplace"),
    case(lambda x, i, s: x.index_add(0, i, s), X, ints(6, hi=4), rand(6, 5), id="index_add"),
    case(
        lambda x, i, s: x.index_add(1, i, s, alpha=-2.0),
        X3,
        ints(7, hi=4),
        rand(3, 7, 5),
        id="index_add_alpha",
    ),
    case(lambda x, i, s: x.index_copy(0, i, s), X, perm(4, 2), rand(2, 5), id="index_copy"),
    case(lambda x, i: x.index_fill(1, i, -1.0), X, ints(3), id="index_fill"),
    case(
        lambda x, i, v: x.index_fill(0, i, v),
        X,
        ints(2, hi=4),
        torch.tensor(3.0),
        id="index_fill_t",
    ),
    case(
        lambda x, i, v: x.index_put((i,), v, accumulate=True),
        X,
        ints(6, hi=4),
        rand(6, 5),
        id="index_put_accumulate",
    ),
    case(lambda x, i, v: x.index_put((i,), v), X, perm(4, 3), rand(5), id="index_put_broadcast"),
    case(
        lambda x, i, j, v: x.index_put((i, j), v, accumulate=True),
        X,
        ints(6, hi=4),
        ints(6),
        rand(6),
        id="index_put_pair",
    ),
    case(
        lambda x, i, v: aten.index_put(x, [None, i], v, True),
        X3,
        ints(6, hi=4),
        rand(3, 6, 5),
        id="index_put_none_first",
    ),
    case(lambda x, i: _put(x.clone(), i, 0.0), X, ints(2, hi=4), id="setitem"),
    case(lambda x, i: _setitem(x.clone(), i), X, perm(5, 2), id="setitem_slice_view"),
    case(lambda x, m: x.masked_fill(m, 0.0), X, X > 0, id="masked_fill_is_not_data_dependent"),
    case(lambda i: F.one_hot(i, 6), ints(5, hi=6), id="one_hot"),
]


def _put(x, i, v):
    x[i] = v
    return x


def _setitem(x, i):
    x[1:, i] += 1.0  # index_put_ into a view of x
    return x


@pytest.mark.parametrize("fn, inputs, kernels", SCATTERS)
def test_scatters(fn, inputs, kernels):
    check(fn, *inputs, kernels=kernels)


def test_scatter_has_one_kernel_and_in_place_writes_self():
    t = check(lambda x, i, s: x.scatter_add(1, i, s), X, IDX, SRC)
    (k,) = t.program.kernels
    assert len(k.statements) == 2  # out = x, then the scatter
    t = trace_torch(lambda x, i, s: x.scatter_add_(1, i, s), (X.clone(), IDX, SRC))
    (k,) = t.program.kernels
    assert len(k.statements) == 1 and k.op == "aten.scatter_add_.default"


def test_embedding_bag():
    m = nn.EmbeddingBag(10, 6, mode="sum")
    ids = ints(3, 4, hi=10)
    for mode in ("sum", "mean", "max"):
        m.mode = mode
        check(m, ids)
    psw = rand(3, 4)
    check(lambda w, i, p: F.embedding_bag(i, w, mode="sum", per_sample_weights=p), W, ids, psw)
    # explicit offsets: bags of data-dependent sizes (bags.py), an empty one among them
    for mode in ("sum", "mean", "max"):
        f = lambda w, i, o, m=mode: F.embedding_bag(i, w, o, mode=m)  # noqa: E731
        check(f, W, ints(5, hi=10), torch.tensor([0, 2, 2]))
    with pytest.raises(UnsupportedOperatorError, match="include_last_offset"):
        trace_torch(
            lambda w, i: F.embedding_bag(i, w, torch.tensor([0, 2, 5]), include_last_offset=True),
            (W, ints(5, hi=10)),
        )


SCANS = [
    case(lambda x: x.cumsum(1), X, id="cumsum", kernels=["aten.cumsum.default"]),
    case(lambda x: x.cumsum(0), X3, id="cumsum_0"),
    case(lambda x: torch.cumsum(x, -1, dtype=torch.float64), X, id="cumsum_dtype"),
    case(lambda x: x.cumsum(0), ints(6, lo=-3), id="cumsum_int"),
    case(lambda x: x.cumsum(0), ints(6) > 2, id="cumsum_bool"),
    case(lambda x: x.half().cumsum(1), X, id="cumsum_fp16"),
    case(lambda x: x.cumsum(0), torch.tensor(2.0), id="cumsum_0d"),
    case(lambda x: x.t().cumsum(1), X, id="cumsum_of_view"),
    case(lambda x: x.cumprod(1), X, id="cumprod"),
    case(lambda x: x.cummax(1), X, id="cummax"),
    case(lambda x: x.cummin(0), X3, id="cummin"),
    case(lambda x: x.cummax(1), torch.tensor([[1.0, 3, 3, 2, 5, 5, 0]]), id="cummax_ties"),
    case(lambda x: x.cummin(1), ints(3, 8, hi=3), id="cummin_int_ties"),
    case(lambda x: x.logcumsumexp(1), X, id="logcumsumexp"),
    case(lambda x: x.flip(1).cumsum(1).flip(1), X, id="reverse_cumsum"),
    case(lambda x: x.cumsum(1) - x, X, id="exclusive_cumsum"),
]


@pytest.mark.parametrize("fn, inputs, kernels", SCANS)
def test_scans(fn, inputs, kernels):
    check(fn, *inputs, kernels=kernels)


SORTS = [
    case(lambda x: x.sort(dim=1), X, id="sort", kernels=["aten.sort.default"]),
    case(lambda x: x.sort(dim=0, descending=True), X3, id="sort_descending"),
    case(lambda x: torch.sort(x, stable=True), ints(3, 9, hi=3).double(), id="sort_stable"),
    case(lambda x: x.argsort(dim=1), X, id="argsort"),
    case(lambda x: torch.msort(x), X, id="msort"),
    case(lambda x: x.t().sort(), X, id="sort_of_view"),
    case(lambda x: x.topk(2, dim=1), X, id="topk"),
    case(lambda x: x.topk(3, dim=0, largest=False), X3, id="topk_smallest"),
    case(lambda x: x.kthvalue(2, dim=1), X, id="kthvalue"),
    case(lambda x: x.kthvalue(3, dim=0, keepdim=True), X3, id="kthvalue_keepdim"),
    case(lambda x: x.median(dim=1), X, id="median_dim"),
    case(lambda x: x.median(), X3, id="median_all"),
    case(lambda x: x.nanmedian(dim=0, keepdim=True), X, id="nanmedian"),
    case(lambda x: x.sort(), torch.tensor(1.5), id="sort_0d"),
]


@pytest.mark.parametrize("fn, inputs, kernels", SORTS)
def test_sorts(fn, inputs, kernels):
    check(fn, *inputs, kernels=kernels)


LOGP = F.log_softmax(X, 1)
LOGP4 = F.log_softmax(rand(2, 5, 3, 3), 1)
T4 = ints(4, hi=5)
NLLS = [
    case(
        lambda x, t: F.nll_loss(x, t),
        LOGP,
        T4,
        id="nll_mean",
        kernels=["aten.nll_loss_forward.default"],
    ),
    case(lambda x, t: F.nll_loss(x, t, reduction="sum"), LOGP, T4, id="nll_sum"),
    case(lambda x, t: F.nll_loss(x, t, reduction="none"), LOGP, T4, id="nll_none"),
    case(lambda x, t, w: F.nll_loss(x, t, weight=w), LOGP, T4, rand(5).abs(), id="nll_weight"),
    case(
        lambda x, t, w: F.nll_loss(x, t, weight=w, ignore_index=2, reduction="none"),
        LOGP,
        torch.tensor([2, 0, 2, 4]),
        rand(5).abs(),
        id="nll_weight_ignore_none",
    ),
    case(
        lambda x, t: F.nll_loss(x, t, ignore_index=1),
        LOGP,
        torch.tensor([1, 0, 1, 3]),
        id="nll_ignore",
    ),
    case(
        lambda x, t: F.nll_loss(x, t),
        LOGP,
        torch.tensor([-100, 0, -100, 3]),
        id="nll_ignore_default",
    ),
    case(lambda x, t: F.nll_loss(x, t), LOGP[0], torch.tensor(3), id="nll_unbatched"),
    case(lambda x, t: F.nll_loss(x, t), LOGP.half(), T4, id="nll_fp16"),
    case(lambda x, t: F.nll_loss(x, t), LOGP4, ints(2, 3, 3), id="nll2d"),
    case(
        lambda x, t, w: F.nll_loss(x, t, weight=w, reduction="sum", ignore_index=0),
        LOGP4,
        ints(2, 3, 3),
        rand(5).abs(),
        id="nll2d_weight_ignore_sum",
    ),
    case(lambda x, t: F.nll_loss(x, t), F.log_softmax(rand(2, 5, 4), 1), ints(2, 4), id="nll_3d"),
    *(
        case(
            lambda x, t, w, r=r: aten.nll_loss_forward(x, t, w, r, 2),
            LOGP,
            torch.tensor([2, 0, 3, 4]),
            rand(5).abs(),
            id=f"nll_forward_total_weight_{r}",
        )
        for r in (0, 1, 2)
    ),
    case(
        lambda x, t: aten.nll_loss2d_forward(x, t, None, 2, -100),
        LOGP4,
        ints(2, 3, 3),
        id="nll2d_forward_total_weight",
    ),
    case(lambda x, t: F.cross_entropy(x, t), X, T4, id="cross_entropy"),
    case(lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), X, T4, id="ce_label_smoothing"),
    case(
        lambda x, t, w: F.cross_entropy(x, t, weight=w, label_smoothing=0.2, ignore_index=1),
        X,
        T4,
        rand(5).abs(),
        id="ce_label_smoothing_weight_ignore",
    ),
    case(lambda x, t: F.cross_entropy(x, t), X, F.softmax(rand(4, 5), 1), id="ce_probabilities"),
    case(
        lambda x, t: F.cross_entropy(x, t, reduction="none"), rand(2, 5, 3), ints(2, 3), id="ce_nd"
    ),
]


@pytest.mark.parametrize("fn, inputs, kernels", NLLS)
def test_nll(fn, inputs, kernels):
    check(fn, *inputs, kernels=kernels)


# --------------------------------------------------------------------------- errors
def test_masked_writes_take_a_data_dependent_size():
    """Boolean-mask reads and writes are bounded at their traced size (reads:
    tests/test_data_dependent.py; writes, which eager runs after ``nonzero``:
    tests/test_library_families.py)."""
    trace = trace_torch(lambda x: _put(x.clone(), x > 0, 7.0), (X,))
    assert any("aten.index_put (boolean mask)" in a for a in trace.assumptions)


def test_out_of_range_indices_are_reported():
    t = trace_torch(lambda w, i: F.embedding(i, w), (W, IDS))
    values = t.values(None, (W, IDS))
    values[t.program.inputs[-1]] = torch.tensor([[0, 1, 2], [3, 4, 10]])
    with pytest.raises(ValueError, match=r"outside \[0, 10\)"):
        execute(t.program, values)


# ------------------------------------------------------------------------ costs by hand
def test_embedding_costs_by_hand():
    """T tokens x D from a V x D table: the unfused kernel reads the T int64 ids, at least one
    table row (data-dependent, so inexact), and writes T x D."""
    V, D, T_ = 1000, 64, 32
    ids = ints(T_, hi=V)
    trace = trace_torch(lambda w, i: F.embedding(i, w), (rand(V, D), ids))
    (k,) = trace.program.kernels
    io = kernel_io(trace.program, k)
    w, i = trace.program.inputs
    assert io.reads[i].elements == T_ and io.reads[i].exact
    assert io.reads[w].elements == D and not io.reads[w].exact
    assert io.read_bytes == T_ * 8 + D * 4 and io.write_bytes == T_ * D * 4
    assert not io.exact
    assert statement_ops(trace.program, k.statements[0]) == {}
    fused = program_io(trace.program)
    assert fused.bytes == T_ * 8 + D * 4 + T_ * D * 4 and not fused.exact
    g = lift(trace.program)
    (node,) = g.ops()
    assert node.op_kind == "gather"
    assert not g.info.kernels[0].exact


def test_cumsum_costs_by_hand():
    B, n = 8, 1000
    trace = trace_torch(lambda x: x.cumsum(1), (torch.empty(B, n, device="meta"),))
    (k,) = trace.program.kernels
    (st,) = k.statements
    assert statement_ops(trace.program, st) == {"cuda_fp32": (n - 1) * B}
    io = kernel_io(trace.program, k)
    assert io.read_bytes == io.write_bytes == B * n * 4 and io.exact
    g = lift(trace.program)
    assert [d.op_kind for d in g.ops()] == ["scan"]


def test_cummax_costs_by_hand():
    """Values and indices: one combine each per element beyond the first of a row."""
    B, n = 8, 100
    trace = trace_torch(lambda x: x.cummax(1), (torch.empty(B, n, device="meta"),))
    (k,) = trace.program.kernels
    ops = {}
    for st in k.statements:
        for c, v in statement_ops(trace.program, st, k).items():
            ops[c] = ops.get(c, 0) + v
    assert ops == {"cuda_fp32": (n - 1) * B, "cuda_int32": (n - 1) * B}
    io = kernel_io(trace.program, k)
    assert io.read_bytes == B * n * 4 and io.write_bytes == B * n * (4 + 8) and io.exact


def test_sort_costs_by_hand():
    B, n = 4, 100
    trace = trace_torch(lambda x: x.sort(dim=1), (torch.empty(B, n, device="meta"),))
    (k,) = trace.program.kernels
    assert all(statement_ops(trace.program, st) == {} for st in k.statements)
    io = kernel_io(trace.program, k)
    assert io.read_bytes == B * n * 4 and io.write_bytes == B * n * (4 + 8) and io.exact
    g = lift(trace.program)
    kinds = {d.op_kind for d in g.ops()}
    assert kinds == {"extern"}


def test_nll_costs_by_hand():
    """N rows of C classes, mean reduction, no weight: one multiply-add per row for the loss
    and one add per row for the weight total (minus the first), one divide. Reads N targets
    and at least one element of x (the picked ones are data-dependent)."""
    N, C = 64, 1000
    trace = trace_torch(
        lambda x, t: F.nll_loss(x, t), (torch.empty(N, C, device="meta"), ints(N, hi=C))
    )
    (k,) = trace.program.kernels
    ops = {}
    for st in k.statements:
        for c, v in statement_ops(trace.program, st, k).items():
            ops[c] = ops.get(c, 0) + v
    assert ops == {"cuda_fp32": 2 * N + (N - 1) + 1}
    io = kernel_io(trace.program, k)
    x, t = trace.program.inputs
    assert io.reads[t].elements == N and io.reads[x].elements >= 1 and not io.reads[x].exact
    assert io.write_bytes == 2 * 4  # the loss and the total weight


def test_one_hot_is_one_kernel_writing_only_its_output():
    """CUDA writes the one-hot output directly; the CPU decomposition's bool intermediate
    (arange, eq, _to_copy) would over-charge the unfused bound (seen on an H100)."""
    n, c = 1000, 64
    trace = trace_torch(lambda i: F.one_hot(i, c), (torch.empty(n, dtype=torch.int64),))
    (k,) = trace.program.kernels
    assert k.op == "solar.one_hot.default"
    io = kernel_io(trace.program, k)
    assert sum(f.elements * 8 for f in io.reads.values()) == n * 8
    assert sum(f.elements * 8 for f in io.writes.values()) == n * c * 8

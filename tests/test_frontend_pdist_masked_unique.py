"""``torch.pdist`` and its backward, ``masked_scatter`` and its backward, ``unique(dim=)``,
``nn.EmbeddingBag``'s backward, executed as IR against PyTorch (and lifted, so every
statement is costed); a few counts by hand. The counting oracle checks every count on drawn
cases (``oracle_cases_pdist_masked_unique``)."""

from __future__ import annotations

import pytest
import torch
from eager_oracle import check

from solar.frontend.torch import trace_torch
from solar.ir.cost import kernel_io, statement_ops

aten = torch.ops.aten
PS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")]


def rand(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def grad_of(f, *wrt: int):
    """``(inputs..., g) -> the gradients of f(inputs) · g`` with respect to inputs ``wrt``."""

    def grad(*args):
        *inputs, g = args
        with torch.enable_grad():
            inputs = [x.detach().requires_grad_() if k in wrt else x for k, x in enumerate(inputs)]
            return torch.autograd.grad(f(*inputs), [inputs[k] for k in wrt], g)

    return grad


def counts(fn, *inputs, op: str | None = None) -> tuple[list[dict], dict, dict]:
    """Per-statement op counts of the one kernel (of ``op``), its reads and writes (elements,
    exact)."""
    t = trace_torch(fn, inputs)
    (k,) = [k for k in t.program.kernels if op is None or k.op == op]
    ops = [dict(statement_ops(t.program, s, k)) for s in k.statements]
    io = kernel_io(t.program, k)
    reads = {n: (f.elements, f.exact) for n, f in io.reads.items()}
    writes = {n: (f.elements, f.exact) for n, f in io.writes.items()}
    return ops, reads, writes


# ------------------------------------------------------------------------------------ pdist


@pytest.mark.parametrize("p", PS)
def test_pdist_and_its_backward_equal_pytorch(p):
    x = rand(6, 4)
    x[3] = x[1]  # a zero distance
    t = check(lambda x: torch.pdist(x, p), x, kernels=["aten._pdist_forward.default"])
    assert t.program.tensors[t.output_names[0]].shape == (15,)
    grad = grad_of(lambda x: torch.pdist(x, p), 0)
    check(grad, x, rand(15, seed=1), lifted=True)


def test_pdist_counts_by_hand():
    """n = 5 rows of m = 3 (fp32), p = 2: N = 10 pairs. Per pair and coordinate a subtract and
    a square (|d| is free), per pair 2 adds: 10·3·2 + 10·2 = 80 flops; one sqrt per pair;
    the packing copy none. x read once (15), the 10 distances written once."""
    ops, reads, writes = counts(lambda x: aten._pdist_forward(x, 2.0), rand(5, 3))
    assert ops == [{"cuda_fp32": 80}, {"sfu": 10}, {}]
    assert reads == {"x": (15, True)} and writes == {"_pdist_forward": (10, True)}


def test_pdist_backward_counts_by_hand():
    """n = 5, m = 3, p = 2 (ATen's CUDA kernel): unpacking grad and pdist costs nothing; each
    of the 10 pairs and 3 coordinates computes ``g·d/dist`` once (sub, mul, div, and the select
    of ``dist == 0``: 4·30) plus the compare once per pair (10): 130; the negated copy for the
    other row is free; each of the 15 gradients sums its n − 1 = 4 buffer entries: 3 adds each,
    45. grad, pdist (10 each) and x (15) read once, the 15 gradients written once."""
    x = rand(5, 3)
    d = aten._pdist_forward(x, 2.0)
    ops, reads, writes = counts(
        lambda g, x, d: aten._pdist_backward(g, x, 2.0, d), rand(10, seed=1), x, d
    )
    assert ops == [{}, {}, {"cuda_fp32": 130}, {}, {"cuda_fp32": 45}]
    assert reads == {"g": (10, True), "x": (15, True), "d": (10, True)}
    assert writes == {"_pdist_backward": (15, True)}


# ---------------------------------------------------------------------------- masked_scatter


@pytest.mark.parametrize("kind", ["random", "none", "all"])
@pytest.mark.parametrize("shapes", [((4, 3), (4, 3)), ((4, 3), (3,)), ((1, 3), (4, 1))])
def test_masked_scatter_and_its_backward_equal_pytorch(kind, shapes):
    xs, ms = shapes
    mask = {
        "random": torch.rand(ms, generator=torch.Generator().manual_seed(2)) > 0.5,
        "none": torch.zeros(ms, dtype=torch.bool),
        "all": torch.ones(ms, dtype=torch.bool),
    }[kind]
    x, src = rand(*xs), rand(3, 5, seed=1)
    check(lambda x, m, s: x.masked_scatter(m, s), x, mask, src)
    out = torch.broadcast_shapes(xs, ms)
    grad = grad_of(lambda x, m, s: x.masked_scatter(m, s), 0, 2)
    check(grad, x, mask, src, rand(*out, seed=3), lifted=True)


def test_masked_scatter_counts_by_hand():
    """x, mask (4, 3), source (3, 5): the mask's inclusive prefix count over 12 elements is 11
    int adds, the select 12; x and the mask read once (12 each), the output written once (12);
    source's reads depend on the mask: one element claimed (its provable minimum, inexact)."""
    mask = torch.rand(4, 3, generator=torch.Generator().manual_seed(0)) > 0.5
    ops, reads, writes = counts(
        lambda x, m, s: aten.masked_scatter(x, m, s), rand(4, 3), mask, rand(3, 5)
    )
    assert ops == [{}, {"cuda_int32": 11}, {"cuda_fp32": 12}]
    assert reads == {"x": (12, True), "m": (12, True), "s": (1, False)}
    assert writes == {"masked_scatter": (12, True)}


def test_masked_scatter_backward_counts_by_hand():
    """grad, mask (4, 3), source sizes (3, 5): the prefix count (11 int adds), no flops
    otherwise; the mask read once, the 15 gradients of source written once (the unselected
    ones zero); grad's reads depend on the mask (one element claimed, inexact)."""
    mask = torch.rand(4, 3, generator=torch.Generator().manual_seed(0)) > 0.5
    ops, reads, writes = counts(
        lambda g, m: aten.masked_scatter_backward(g, m, [3, 5]), rand(4, 3), mask
    )
    assert ops == [{}, {}, {"cuda_int32": 11}, {}, {}]
    assert reads == {"m": (12, True), "g": (1, False)}
    assert writes == {"masked_scatter_backward": (15, True)}


# ------------------------------------------------------------------- embedding bag backward


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_backward_equals_autograd(mode):
    """The forward and what autograd launches for it (``_embedding_bag_backward``), with ids
    repeated across and within bags."""
    import torch.nn.functional as F

    w = rand(7, 4)
    ids = torch.tensor([[1, 3, 1], [6, 0, 3], [3, 3, 2], [5, 1, 0]])
    grad = grad_of(lambda w, i: F.embedding_bag(i, w, mode=mode), 0)
    t = check(grad, w, ids, rand(4, 4, seed=1), lifted=True)
    assert "aten._embedding_bag_backward.default" in [k.op for k in t.program.kernels]


def test_embedding_bag_per_sample_weights_backward_equals_autograd():
    import torch.nn.functional as F

    w, ids, psw = rand(7, 4), torch.tensor([[1, 3], [6, 1], [3, 3]]), rand(3, 2, seed=2)
    f = lambda w, i, p: F.embedding_bag(i, w, mode="sum", per_sample_weights=p)  # noqa: E731
    t = check(grad_of(f, 0, 2), w, ids, psw, rand(3, 4, seed=1))
    ops = [k.op for k in t.program.kernels]
    assert "aten._embedding_bag_per_sample_weights_backward.default" in ops


def test_embedding_bag_module_training_step_equals_autograd():
    bag = torch.nn.EmbeddingBag(9, 5, mode="mean")
    ids = torch.tensor([[0, 8, 2, 2], [4, 4, 4, 1]])

    def step(ids, g):
        with torch.enable_grad():
            return torch.autograd.grad(bag(ids), bag.weight, g)

    check(step, ids, rand(2, 5, seed=1))


def test_embedding_bag_backward_counts_by_hand():
    """Sum mode, 3 bags of 2 ids, table (10, 4), fp32: zeros (40 written, no flops), then
    each id's bag gradient row added into the row it names. The rows hit are data, so the
    scatter-add counts one add per distinct (output, term) pair at the fewest outputs (all
    ids equal, :mod:`solar.ir.cost`): the two ids of a bag add the same term g[b, d], so
    3 bags x 4 columns = 12 adds; grad (12) and ids (6) read once, the 40 gradients
    written once."""
    ids = torch.tensor([1, 3, 1, 6, 0, 3])

    def fn(g, i):
        offsets = torch.arange(0, 6, 2)
        empty = torch.empty(0, dtype=torch.int64)
        return aten._embedding_bag_backward(
            g, i, offsets, empty, torch.full((3,), 2), torch.zeros(3, dtype=torch.int64),
            10, False, 0, False, None,
        )  # fmt: skip

    ops, reads, writes = counts(fn, rand(3, 4), ids, op="aten._embedding_bag_backward.default")
    assert ops == [{}, {"cuda_fp32": 12}]
    assert reads == {"g": (12, True), "i": (6, True)}
    assert writes == {"_embedding_bag_backward": (40, True)}


# -------------------------------------------------------------------------------- unique_dim

ROWS = torch.tensor([[1, 2, 0], [0, 5, 1], [1, 2, 0], [0, 5, 0], [1, 2, 0]])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_dim_equals_pytorch(dim):
    """Observed sizes: the distinct slices, sorted, with the inverse and counts, along each dim
    of a 2-D and a 3-D tensor (float and int)."""
    f = lambda x: torch.unique(x, dim=dim, return_inverse=True, return_counts=True)  # noqa: E731
    check(f, ROWS, observe=True, lifted=True)
    x3 = torch.randint(0, 2, (2, 4, 3), generator=torch.Generator().manual_seed(1)).float()
    check(f, x3, observe=True)
    check(lambda x: torch.unique(x, dim=dim), ROWS, observe=True)


def test_unique_dim_size_is_stated():
    """Unobserved, the number of distinct slices is taken at its least (1), and said; the
    executed IR then refuses data with more."""
    t = trace_torch(lambda x: torch.unique(x, dim=0), (ROWS,))
    assert t.program.tensors[t.output_names[0]].shape == (1, 3)
    assert any(
        "data-dependent size of aten.unique_dim" in a and ": 1 (its smallest" in a
        for a in t.assumptions
    )
    observed = trace_torch(lambda x: torch.unique(x, dim=0), (ROWS,), observe=True)
    assert observed.program.tensors[observed.output_names[0]].shape == (3, 3)


def test_unique_dim_counts_by_hand():
    """5 rows of 3 (int64), 3 distinct (observed): 3 stable sorts and the adjacent-row test
    cost nothing (routines, index arithmetic); the prefix count of the 5 start flags is 4
    int adds, the inverse's ``group − 1`` 5, the counts' differences 3. x read once (15);
    values (9), inverse (5), counts (3) written once."""
    t = trace_torch(
        lambda x: torch.unique(x, dim=0, return_inverse=True, return_counts=True),
        (ROWS,),
        observe=True,
    )
    (k,) = t.program.kernels
    ops = [dict(statement_ops(t.program, s, k)) for s in k.statements]
    assert [o for o in ops if o] == [{"cuda_int32": 4}, {"cuda_int32": 5}, {"cuda_int32": 3}]
    io = kernel_io(t.program, k)
    assert {n: (f.elements, f.exact) for n, f in io.reads.items()} == {"x": (15, True)}
    writes = {n: (f.elements, f.exact) for n, f in io.writes.items()}
    assert sorted(writes.values()) == [(3, True), (5, True), (9, True)]


# ------------------------------------------------------------------------- FlopCounterMode


def test_flop_counter_mode_agrees_none_is_a_contraction():
    """FlopCounterMode counts matmul, convolution and attention flops only: none of these
    operators (forward or what autograd launches) has one, and solar emits no contraction
    for them either, so both contraction totals are 0 (their other counts: the oracle)."""
    import torch.nn.functional as F
    from torch.utils.flop_counter import FlopCounterMode

    from solar.ir.cost import statement_kind

    x, mask = rand(6, 4), torch.rand(6, 4, generator=torch.Generator().manual_seed(0)) > 0.5
    programs = [
        (grad_of(lambda x: torch.pdist(x, 1.5), 0), (x, rand(15, seed=1))),
        (grad_of(lambda x, m, s: x.masked_scatter(m, s), 0, 2), (x, mask, rand(30), x)),
        (grad_of(lambda w, i: F.embedding_bag(i, w, mode="mean"), 0), (x, ROWS[:, :2], x[:5])),
        (lambda x: torch.unique(x, dim=0, return_inverse=True), (ROWS,)),
    ]
    for fn, inputs in programs:
        with FlopCounterMode(display=False) as counter:
            fn(*inputs)
        assert counter.get_total_flops() == 0
        t = trace_torch(fn, inputs, observe=True)
        kinds = {statement_kind(s) for k in t.program.kernels for s in k.statements}
        assert "contraction" not in kinds, kinds


# ------------------------------------------------- embedding bags with explicit offsets

IDS, OFFSETS = torch.tensor([0, 8, 2, 2, 4, 4, 4, 1]), torch.tensor([0, 3, 3, 7])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_module_with_offsets_equals_autograd(mode):
    """nn.EmbeddingBag on a 1-D input with offsets (bags of 3, 0, 4 and 1 ids): forward and
    what autograd launches, against PyTorch."""
    bag = torch.nn.EmbeddingBag(9, 5, mode=mode)

    def step(ids, offs, g):
        with torch.enable_grad():
            return bag(ids, offs), *torch.autograd.grad(bag(ids, offs), bag.weight, g)

    t = check(step, IDS, OFFSETS, rand(4, 5, seed=1), lifted=True)
    assert "aten._embedding_bag_backward.default" in [k.op for k in t.program.kernels]


def test_embedding_bag_offsets_per_sample_weights_equal_autograd():
    import torch.nn.functional as F

    f = lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p)  # noqa: E731
    check(grad_of(f, 0, 3), rand(9, 5), IDS, OFFSETS, rand(8, seed=2), rand(4, 5, seed=1))


def test_embedding_bag_include_last_offset_is_refused():
    import torch.nn.functional as F

    from solar.frontend.torch import UnsupportedOperatorError

    with pytest.raises(UnsupportedOperatorError, match="include_last_offset=True"):
        trace_torch(
            lambda w, i, o: F.embedding_bag(i, w, o, include_last_offset=True),
            (rand(9, 5), IDS, torch.tensor([0, 3, 3, 7, 8])),
        )


def test_embedding_bag_offsets_counts_by_hand():
    """Sum mode, 8 ids in 4 bags (offsets 0, 3, 3, 7), table (9, 5), fp32. The bag of each id
    is the prefix count (7 int adds over the 8 ids) of ones scatter-added at offsets 1..3:
    a scatter-add, its outputs data, counted at the provable minimum (all offsets equal: 1
    add). The rows' scatter-add: 8 ids x 5 columns from the table, at the minimum (every id
    in one bag and naming one row: 5 distinct terms, 5 adds). ids (8) and offsets 1..3 (3:
    offsets[0] is 0) read once, the table at its minimum (one row, 5, inexact), the 20 outputs
    (zeros, then the sums) written once."""
    import torch.nn.functional as F

    ops, reads, writes = counts(
        lambda w, i, o: F.embedding_bag(i, w, o, mode="sum"), rand(9, 5), IDS, OFFSETS
    )
    assert ops == [{}, {}, {"cuda_int32": 1}, {"cuda_int32": 7}, {"cuda_fp32": 5}]
    assert reads == {"o": (3, True), "w": (5, False), "i": (8, True)}
    assert writes == {"_embedding_bag_forward_only_0": (20, True)}


def test_embedding_bag_offsets_max_indices_equal_pytorch():
    """Mode max with offsets: the maxima and output 3 (the arg-max ids the backward reads;
    0 for the empty bag, as PyTorch's CPU kernel leaves it)."""

    def fn(w, i, o):
        out = aten._embedding_bag(w, i, o, False, 2, False, None)
        return out[0], out[3]

    check(fn, rand(9, 5), IDS, OFFSETS)


def test_unique_dim_size_follows_known_router_indices():
    """Distinct expert pairs of a top-2 router over 4 experts (6 tokens): under routing 'any'
    every token picks experts (0, 1): one pair; 'balanced' gives the tokens 12 slots spread
    over the 4 experts, two distinct pairs. The size follows the routing and says so."""

    def f(x):
        return torch.unique(torch.topk(x, 2, dim=-1).indices, dim=0).float().sum()

    for routing, pairs in (("any", 1), ("balanced", 2)):
        t = trace_torch(f, (rand(6, 4),), routing=routing)
        (line,) = [a for a in t.assumptions if "data-dependent size of aten.unique_dim" in a]
        assert f": {pairs} (follows from the routing" in line, line


def test_unique_dim_refuses_long_slices_with_a_way_out():
    from solar.frontend.torch import UnsupportedOperatorError

    with pytest.raises(UnsupportedOperatorError, match="slices of 300 elements.*integer key"):
        trace_torch(lambda x: torch.unique(x, dim=0), (torch.zeros(2, 300, dtype=torch.int64),))

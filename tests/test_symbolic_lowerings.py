"""Operator lowerings keep symbolic sizes: with :class:`~solar.algebra.size.Size` s they
compute what they compute with the plain ints of the traced point, and record no guard that
pins a size to its value."""

from __future__ import annotations

import itertools
import operator

import pytest
import sympy
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from solar.algebra.size import Real, Size, recording, symbol
from solar.frontend.torch.ops.pool import tap_count
from solar.frontend.torch.scalars import is_scalar_node, scalar_value
from solar.frontend.torch.trace import trace_torch
from solar.ir.affine import Affine


def _out_size(n: int, k: int, s: int, p: int, ceil: bool) -> int:
    """PyTorch's pooling output size."""
    o = (-(-(n + 2 * p - k) // s) if ceil else (n + 2 * p - k) // s) + 1
    return o - 1 if ceil and (o - 1) * s >= n + p else o


def _pins(rec, x: sympy.Symbol, n: int) -> list[sympy.Basic]:
    """The equality guards holding at ``x = n`` but at none of its neighbours, 2n and 3n (a
    parity, ``Eq(x - 2*floor(x/2), 1)``, is not a pin)."""
    others = [v for v in (n - 2, n - 1, n + 1, n + 2, 2 * n, 3 * n) if v >= 1]
    return [
        g
        for g in rec.guards
        if isinstance(g, sympy.Eq) and not any(g.subs(x, v) == sympy.true for v in others)
    ]


POOLS = [
    (n, k, s, p, ceil, inc)
    for n, k, s, p, ceil, inc in itertools.product(
        (5, 9, 17, 30), (2, 3, 5), (1, 2, 3), (0, 1, 2), (False, True), (False, True)
    )
    if 2 * p <= k
]


@pytest.mark.parametrize(("n", "k", "s", "p", "ceil", "inc"), POOLS)
def test_avg_pool_tap_count_keeps_the_sizes(n, k, s, p, ceil, inc):
    """The divisor of a symbolic average pool (its border windows checked, not every window)
    is the plain one at the traced point, with no size pinned unless every output is a border
    one (then each window is checked at the traced extent, which pins it)."""
    e = _out_size(n, k, s, p, ceil)
    x = symbol("x")
    formula = sympy.floor((x + 2 * p - k + (s - 1) * ceil) / s) + 1
    if formula.subs(x, n) != e:  # ceil_mode's last window would start in the right padding
        pytest.skip("PyTorch drops that window: not this formula")
    size, extent = Size(n, x), Size(e, formula)
    plain = tap_count(Affine.of("p"), e, n, k, s, p, inc)
    with recording() as rec:
        symbolic = tap_count(Affine.of("p"), extent, size, k, s, p, inc)
    assert symbolic == plain
    border = -(-p // s) + 1
    if e > 2 * border:
        assert not _pins(rec, x, n), rec.guards


def test_float_of_a_size_keeps_its_expression():
    """``0.1 / sym_float(n)`` (cross_entropy's label smoothing over a symbolic class count) is
    lowered to a Real carrying ``0.1/n``, not a plain float that would pin ``n``."""

    def smoothed(x, t):
        return torch.nn.functional.cross_entropy(x, t, label_smoothing=0.1)

    gm = make_fx(smoothed, tracing_mode="symbolic")(torch.randn(8, 50), torch.randint(0, 50, (8,)))
    nodes = [n for n in gm.graph.nodes if is_scalar_node(n.target, n.meta.get("val"))]
    assert [n.target for n in nodes] == [torch.sym_float, operator.truediv]
    n = symbol("n")
    env: dict[object, object] = {nodes[0].args[0]: Size(50, n)}
    with recording() as rec:
        for node in nodes:
            args = tuple(env.get(a, a) for a in node.args)
            env[node] = scalar_value(node.target, args, node.meta["val"])
    quotient = env[nodes[-1]]
    assert isinstance(quotient, Real) and quotient.expr == sympy.Float(0.1) / n
    assert float.__float__(quotient) == 0.1 / 50 and not rec.guards


def test_every_encoder_layer_writes_q_k_v_into_one_buffer():
    """Each layer's ``_transform_bias_rescale_qkv`` writes q, k, v as slices of one buffer (as
    eager allocates them), not only the first: a cached fake returned separate tensors from
    the second layer on, and a symbolic trace (which the cache bypasses) differed from it."""
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
    enc = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False).eval()

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = enc

        def forward(self, x, m):
            return self.enc(x, src_key_padding_mask=m)

    mask = torch.zeros(2, 8, dtype=torch.bool)
    program = trace_torch(Encoder().eval(), (torch.randn(2, 8, 16), mask)).program
    kernels = [k for k in program.kernels if k.op == "aten._transform_bias_rescale_qkv.default"]
    assert len(kernels) == 3
    for k in kernels:  # each statement writes through its view into the storage
        written = {s.out.tensor for s in k.statements}
        assert len(written) == 1, written


TRILINEAR = [  # (shapes of i1, i2, i3), expand1, expand2, expand3, sumdim, unroll_dim
    (((3, 5), (7, 5, 6), (3, 6)), [1, 3], [0], [1, 2], [2, 3], 1),  # F.bilinear
    (((3, 5), (7, 5, 6), (3, 6)), [1, 3], [0], [1, 2], [2], 0),
    (((4, 2), (4, 3), (2, 3)), [2], [1], [0], [], 0),
    (((4, 2), (4, 3), (2, 3)), [2], [1], [0], [0, 1], 2),
]


@pytest.mark.parametrize(("shapes", "e1", "e2", "e3", "sumdim", "unroll"), TRILINEAR)
def test_trilinear_fake_kernel_is_the_kernels_layout(shapes, e1, e2, e3, sumdim, unroll):
    """``aten._trilinear``'s fake kernel (PyTorch has none that takes symbolic shapes) gives
    the output the CPU kernel gives: its shape, strides and dtype."""
    real = [torch.randn(s) for s in shapes]
    want = torch.ops.aten._trilinear(*real, e1, e2, e3, sumdim, unroll)
    with FakeTensorMode() as mode:
        fakes = [mode.from_tensor(t) for t in real]
        got = torch.ops.aten._trilinear(*fakes, e1, e2, e3, sumdim, unroll)
    assert (got.shape, got.stride(), got.dtype) == (want.shape, want.stride(), want.dtype)


def test_bilinear_traces_with_symbolic_shapes():
    """``F.bilinear`` records ``aten._trilinear`` in a symbolic trace too (its C++ kernel on
    symbolic fakes trips a PyTorch internal assert)."""
    args = torch.randn(3, 5), torch.randn(3, 6), torch.randn(7, 5, 6)
    gm = make_fx(torch.nn.functional.bilinear, tracing_mode="symbolic")(*args)
    ops = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten._trilinear.default in ops


def _covered(size: int, s: int, d: int, pad: int, taps: int, out: int) -> bool:
    """Every output of a transposed convolution receives a tap (enumerated)."""
    hit = {s * i + d * r - pad for i in range(size) for r in range(taps)}
    return set(range(out)) <= hit


@pytest.mark.parametrize(("s", "d"), [(1, 1), (2, 1), (2, 3), (3, 2), (4, 1)])
def test_transposed_coverage_keeps_the_size(s, d):
    """The coverage a conv's input gradient (a transposed convolution) asks, traced at a
    symbolic input length, is the enumerated answer at every length where its guards hold,
    and pins no length it is asked at (sizes of 9 and up)."""
    from solar.algebra.region import Region
    from solar.algebra.size import make
    from solar.frontend.torch.ops.conv import _transposed_coverage

    x = symbol("n")
    for taps, pad, extra in itertools.product(range(1, 6), range(5), range(max(s, d))):
        out_expr = (x - 1) * s - 2 * pad + d * (taps - 1) + extra + 1
        out = int(out_expr.subs(x, 9))
        if out < 1:
            continue
        with recording() as rec:
            got = _transposed_coverage(Size(9, x), (s, d, pad), taps, make(out, out_expr))
        assert not _pins(rec, x, 9), (taps, pad, extra)
        region = Region.of([x], rec.guards)
        for m in range(1, 40):
            om = int(out_expr.subs(x, m))
            if om >= 1 and region.holds({x: m}):
                assert got == _covered(m, s, d, pad, taps, om), (taps, pad, extra, m)

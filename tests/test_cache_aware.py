"""Cache-aware bound: invariants (hypothesis) and hand-derived values per operator family."""

import dataclasses
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import solar
from solar.backend.cache_aware import (
    RULE_BARRIER,
    RULE_CONV,
    RULE_SEGMENT_ONCHIP,
    RULE_SMITH,
    CacheAwareModel,
    cache_aware_bytes,
    contraction_io,
    traffic_curve,
)
from solar.backend.io_bounds import MU_GRID, SegmentBound
from solar.backend.roofline import fused_bytes
from solar.graph import lift
from solar.graph.access_shapes import access_indices
from solar.graph.types import GuardRange
from solar.hw import load_spec
from solar.ir.affine import Affine
from solar.ir.program import Guard, ProgramBuilder
from solar.ir.scalar import Load, call

H100 = load_spec("H100")
ON_CHIP = H100.on_chip_capacity  # 121.6 MB: L2 + 132 x (L1/smem + registers)
A = Affine.of


def meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


def _graph(m, n, k, dtype=torch.float32, chain=False):
    def f(a, b, c):
        y = a @ b
        return torch.relu(y) @ c if chain else y

    args = [meta(m, k, dtype=dtype), meta(k, n, dtype=dtype), meta(n, n, dtype=dtype)]
    return lift(solar.trace(f, args, precision="ieee").program)


def _conv(nb, c, k, h, taps=3, stride=1, dilation=1, dtype="bfloat16", out_role="output"):
    """A valid (unpadded) 2-D convolution written by hand: no guards, every instance runs."""
    p = (h - dilation * (taps - 1) - 1) // stride + 1
    b = ProgramBuilder("conv")
    x = b.tensor("x", (nb, c, h, h), dtype, "input")
    w = b.tensor("w", (k, c, taps, taps), dtype, "weight")
    y = b.tensor("y", (nb, k, p, p), dtype, out_role)
    b.begin_kernel("aten.convolution.default")
    rows = (stride * A("p") + dilation * A("r"), stride * A("q") + dilation * A("s"))
    b.statement(
        [("n", nb), ("k", k), ("p", p), ("q", p), ("c", c, True)]
        + [("r", taps, True), ("s", taps, True)],
        (y, ("n", "k", "p", "q")),
        call("mul", Load(x, (A("n"), A("c"), *rows)), Load(w, (A("k"), A("c"), A("r"), A("s")))),
        reduce="sum",
    )
    if out_role != "output":
        z = b.tensor("z", (nb, k, p, p), dtype, "output")
        b.begin_kernel("aten.relu.default")
        idx = (A("n"), A("k"), A("p"), A("q"))
        b.statement([("n", nb), ("k", k), ("p", p), ("q", p)], (z, idx), call("relu", Load(y, idx)))
    b.program.outputs.append("z" if out_role != "output" else y)
    return lift(b.program), nb * k * p * p * c * taps * taps


def _sdpa(n, d, heads=1, dtype=torch.bfloat16):
    q = meta(1, heads, n, d, dtype=dtype)

    def f(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    return lift(solar.trace(f, [q, q.clone(), q.clone()]).program)


def _invariants(g, caps):
    fused = fused_bytes(g)
    model = CacheAwareModel(g)
    values = [model.bytes(c) for c in sorted(caps)]
    assert all(v >= fused for v in values)
    assert all(a >= b - 1e-9 * a for a, b in zip(values, values[1:]))
    assert model.bytes(math.inf) == fused
    assert model.bytes(1e30) == fused


capacities = st.lists(st.floats(min_value=1e3, max_value=1e12), min_size=2, max_size=6)
dims = st.integers(min_value=1, max_value=1 << 15)


@settings(max_examples=40, deadline=None)
@given(m=dims, n=dims, k=dims, chain=st.booleans(), caps=capacities)
def test_matmul_monotone_in_capacity_and_never_below_fused(m, n, k, chain, caps):
    _invariants(_graph(m, n, k, chain=chain), caps)


@settings(max_examples=30, deadline=None)
@given(
    nb=st.integers(1, 64),
    c=st.integers(1, 512),
    k=st.integers(1, 512),
    h=st.integers(7, 128),
    taps=st.sampled_from([1, 3, 5]),
    stride=st.integers(1, 3),
    dilation=st.integers(1, 2),
    fused_out=st.booleans(),
    caps=capacities,
)
def test_conv_invariants(nb, c, k, h, taps, stride, dilation, fused_out, caps):
    role = "intermediate" if fused_out else "output"
    h = max(h, dilation * (taps - 1) + 1)  # a valid convolution has at least one output
    g, _ = _conv(nb, c, k, h, taps, stride, dilation, out_role=role)
    _invariants(g, caps)


@settings(max_examples=10, deadline=None)
@given(
    n=st.sampled_from([256, 4096, 1 << 16, 1 << 20]), d=st.sampled_from([64, 128]), caps=capacities
)
def test_attention_invariants(n, d, caps):
    _invariants(_sdpa(n, d), caps)


@settings(max_examples=300, deadline=None)
@given(
    v=st.integers(1, 1 << 50),
    sizes=st.tuples(*[st.integers(1, 1 << 40)] * 3),
    mults=st.tuples(*[st.integers(1, 1 << 20)] * 3),
    out=st.booleans(),
    k_min=st.one_of(st.none(), st.integers(1, 1 << 14)),
    classes=st.integers(1, 64),
    part=st.booleans(),
    caps=st.lists(st.floats(min_value=1.0, max_value=1e13), min_size=2, max_size=8),
)
def test_segment_bound_is_non_increasing(v, sizes, mults, out, k_min, classes, part, caps):
    """The proof's monotonicity claim, on arbitrary parameters (not only real graphs)."""
    b = SegmentBound(v, *sizes, *mults, out, k_min, classes, part)
    values = [b.words(s) for s in sorted(caps)]
    assert all(x >= 0 for x in values)
    assert all(x >= y - 1e-9 * x for x, y in zip(values, values[1:]))
    assert b.words(math.inf) == 0


def test_access_indices_are_the_lifted_affine_records():
    """The backend reads the accesses' ``Affine`` index entries, never printed text: a 2-D
    convolution's input index ``2p + r`` arrives as coefficients."""
    g, _ = _conv(1, 2, 3, 9, stride=2)
    (node,) = [d for d in g.ops() if d.op_kind == "contraction"]
    x, w, y = access_indices(node)
    p, r = "c", "f"  # the dims n k p q c r s are ranks a .. g
    assert x[2] == ({p: 2, r: 1}, 0) and isinstance(node.operands[0].index[2], Affine)
    assert [a.tensor for a in (*node.operands, node.output)] == ["x", "w", "y"]
    assert [len(ix) for ix in (x, w, y)] == [4, 4, 4]


def test_large_matmul_operands_exceed_l2_hand_derived():
    """C = A @ B, 16384² bf16 on H100: A and B are 537 MB each, far beyond the 50 MiB L2 and
    the 121.6 MB of all on-chip storage. S = 121.6 MB / 2 B = 60.8 M words.

    Smith et al. 2022: Q >= 2 n³/sqrt(S) - 2S words = 2.013 GB; compulsory (A, B, C once)
    is 3 n² x 2 B = 1.611 GB, so the cache-aware bytes are Smith's 2.013 GB."""
    n = 16384
    # two distinct matrices (one tensor passed twice is one input: A @ A has no Smith bound)
    b = solar.bound(
        lambda a, b: a @ b, [meta(n, n, dtype=torch.bfloat16) for _ in range(2)], hw="H100"
    )
    s = ON_CHIP / 2
    q = (2 * n**3 / math.sqrt(s) - 2 * s) * 2
    assert q == pytest.approx(2.0126e9, rel=1e-4)
    assert b.bytes_fused == 3 * n * n * 2
    assert b.bytes_cache_aware == pytest.approx(q, rel=1e-12)
    compute = 2 * n**3 / H100.peak("tc_bf16")  # 8.2 ms: this GEMM is compute-bound anyway
    assert b.cache_aware == pytest.approx(max(compute, q / H100.dram_bandwidth), rel=1e-12)
    assert b.bytes_cache_aware > b.bytes_fused
    (c,) = b.cache_model.items  # the stored proven I/O item (the Bound keeps no graph)
    assert c.binding_rule(ON_CHIP) == RULE_SMITH
    # our own segment bound, M = 4S: a + b + c <= 6S, F <= (s/2) sqrt(T - s) at s = 4S
    # = 2 sqrt(2) S^1.5, so Q >= 4S (V / F - 1) = sqrt(2) V / sqrt(S) - 4S: below Smith's
    v = n**3
    assert c.segment.words_at(s, 4) == pytest.approx(math.sqrt(2) * v / math.sqrt(s) - 4 * s)
    assert c.segment.words(s) < q / 2


def test_attention_long_sequence_hand_derived():
    """SDPA, one head, N = 2M tokens, d = 128, bf16, on H100 (one kernel, scores on chip).

    QKᵀ with on-chip output: with M = S (μ = 1), T = 3S, s = a + b <= 2S, a completed score
    needs its d products, so P <= ab/d² and F² <= max_s s²(T-s)/4 + s⁴/(16 d²) = S³ + S⁴/d²
    (at s = 2S: the quartic increases on [0, 2S] since S > d²). Q >= S (V / F - 1) with
    V = N² d ≈ N² d² / S: the FlashAttention/Saha-Ye law, here 2.25 GB against the 1.07 GB of
    Q and K read once."""
    n, d = 1 << 21, 128
    g = _sdpa(n, d)
    (c,) = contraction_io(g)
    assert c.rule == RULE_SEGMENT_ONCHIP and c.segment.k_min == d
    s = ON_CHIP / 2
    v = n * n * d
    q1 = s * (v / math.sqrt(s**3 + s**4 / d**2) - 1)
    assert c.segment.words_at(s, 1) == pytest.approx(q1, rel=1e-12)
    words = max(c.segment.words_at(s, mu) for mu in MU_GRID)
    assert words >= q1
    assert words == pytest.approx(n * n * d * d / s, rel=0.1)  # ~ N²d²/S
    ca = cache_aware_bytes(g, ON_CHIP)
    compulsory_qk = 2 * n * d * 2
    assert c.compulsory_bytes == compulsory_qk
    assert ca.extra == {c.node: pytest.approx(words * 2 - compulsory_qk, rel=1e-12)}
    assert ca.bytes == pytest.approx(fused_bytes(g) + words * 2 - compulsory_qk, rel=1e-12)
    assert ca.bytes > 2.2e9
    # at 2048 tokens nothing is forced: Q, K, V and O once
    assert cache_aware_bytes(_sdpa(2048, d), ON_CHIP).extra == {}


def test_explicit_attention_gets_the_same_qk_bound():
    """bmm -> softmax -> bmm (scores an intermediate) is bounded like SDPA's local scores."""
    n, d = 1 << 14, 64
    q = meta(1, n, d, dtype=torch.bfloat16)

    def f(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

    g = lift(solar.trace(f, [q, q.clone(), q.clone()]).program)
    items = contraction_io(g)
    assert [c.rule for c in items] == [RULE_SEGMENT_ONCHIP]  # PV reads P from chip: no bound
    (c,) = items
    assert c.segment.k_min == d and c.volume == n * n * d
    small = 4 * 2**20
    ref = contraction_io(_sdpa(n, d))[0]
    assert c.words(small)[0] == pytest.approx(ref.words(small)[0], rel=1e-12)


def test_conv_hand_derived_tap_classes():
    """3x3 conv, stride 1, bf16, at S = 256 KiB (one SM's shared memory, 131072 words).

    Fixing the tap (r, s) makes I[n, c, p+r, q+s] injective in (p, q): G = 9 classes, and the
    weights are split by them, so F <= sqrt(9 |I| |W| |O|) (Loomis-Whitney + Cauchy-Schwarz).
    With M = 4S: Q >= sqrt(2/9) V / sqrt(S) - 4S words."""
    g, v = _conv(32, 256, 256, 58)
    (c,) = contraction_io(g)
    assert c.rule == RULE_CONV and (c.segment.classes, c.segment.partitioned) == (9, True)
    cap = 256 * 1024
    s = cap / 2
    expected = math.sqrt(2 / 9) * v / math.sqrt(s) - 4 * s
    assert c.segment.words_at(s, 4) == pytest.approx(expected, rel=1e-12)
    ca = cache_aware_bytes(g, cap)
    assert ca.bytes >= fused_bytes(g) + expected * 2 - c.compulsory_bytes
    assert ca.rules == {c.node: RULE_CONV}
    # stride 2: taps r and r+2 collide, r and r+1 never do -> ceil(3/2)² = 4 classes
    (c2,) = contraction_io(_conv(8, 64, 64, 57, stride=2)[0])
    assert c2.segment.classes == 4
    # stride 2, dilation 2: 2p + 2r collides for every tap pair -> 9 classes
    (c3,) = contraction_io(_conv(8, 64, 64, 57, stride=2, dilation=2)[0])
    assert c3.segment.classes == 9
    # stride 3 >= 3 taps (a patchify conv): injective, plain Loomis-Whitney
    (c4,) = contraction_io(_conv(8, 64, 64, 57, stride=3)[0])
    assert c4.segment.classes == 1


def test_traced_convolutions_are_analysed():
    x = meta(8, 64, 56, 56, dtype=torch.bfloat16)
    w = meta(128, 64 // 4, 3, 3, dtype=torch.bfloat16)

    def f(x, w):
        return torch.nn.functional.conv2d(x, w, stride=2, padding=1, dilation=1, groups=4)

    g = lift(solar.trace(f, [x, w]).program)
    (c,) = contraction_io(g)
    assert c.rule == RULE_CONV and c.segment.classes == 4


def test_broadcast_operand_uses_the_view_strides():
    """W expanded over the batch (stride 0): the access record carries the view's strides,
    so the broadcast axis is dropped and W depends on (k, n) only (its footprint, k·n
    elements, is not its index-tuple count: the footprint check alone would refuse it)."""
    bsz, m, k, n = 16, 512, 1024, 1024
    b = ProgramBuilder("bcast")
    x = b.tensor("x", (bsz, m, k), "bfloat16", "input")
    w = b.tensor("w", (k, n), "bfloat16", "weight")
    wb = b.view("wb", w, (bsz, k, n), (0, n, 1))
    y = b.tensor("y", (bsz, m, n), "bfloat16", "output")
    b.begin_kernel("aten.bmm.default")
    b.statement(
        [("b", bsz), ("m", m), ("n", n), ("k", k, True)],
        (y, ("b", "m", "n")),
        call("mul", Load(x, (A("b"), A("m"), A("k"))), Load(wb, (A("b"), A("k"), A("n")))),
        reduce="sum",
    )
    b.program.outputs.append(y)
    g = lift(b.program)
    (node,) = g.ops()
    assert node.operands[1].strides == (0, n, 1) and node.operands[1].offset == 0
    assert node.operands[1].shape == (bsz, k, n) and node.operands[0].strides is None
    (c,) = contraction_io(g)
    assert c.segment.b_size == k * n and c.segment.b_mult == bsz * m


def test_barrier_global_normalisation():
    """y = x / x.sum() over a 1 GiB fp32 input: the sum needs all of x before any y can be
    written, so x - S bytes are read twice."""
    x = meta(1 << 28)
    g = lift(solar.trace(lambda x: x / x.sum(), [x]).program)
    ca = cache_aware_bytes(g, ON_CHIP)
    assert list(ca.rules.values()) == [RULE_BARRIER]
    assert ca.bytes == fused_bytes(g) + (4 * (1 << 28) - ON_CHIP)
    # row-wise normalisation (softmax) forces nothing, nor does a reduction consumer
    assert (
        cache_aware_bytes(
            lift(solar.trace(torch.softmax, [meta(8192, 8192), -1]).program), 1e6
        ).extra
        == {}
    )  # noqa: E501


def test_curve_and_selection_are_capacity_independent():
    g = _graph(8192, 8192, 8192, chain=True)
    model = CacheAwareModel(g)
    curve = traffic_curve(g)
    assert len(curve) == 81 and curve[0][0] == 2**16 and curve[-1][0] == 2**36
    assert [b for _, b in curve] == [model.bytes(c) for c, _ in curve]
    assert all(a >= b for (_, a), (_, b) in zip(curve, curve[1:]))
    assert curve[-1][1] == model.fused
    assert [i.node for i in model.items] == ["mm_0/0"]


def _schedule_matmul_words(m, n, k, s):
    """I/O words of a real schedule: b x b output tiles in fast memory, streaming k (one column
    of A and one row of B at a time: b² + 2b <= S words)."""
    b = max(1, int(math.isqrt(int(s) + 1)) - 1)
    return k * (m * -(-n // b) + n * -(-m // b)) + m * n


def _schedule_qk_words(n, d, s):
    """QKᵀ with scores consumed on chip: a block of br query rows stays in fast memory, keys
    stream one row at a time, one score accumulator (br·d + d + 1 <= S words)."""
    br = max(1, min(n, (int(s) - 1) // d - 1))
    return n * d + -(-n // br) * n * d


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 4096),
    n=st.integers(1, 4096),
    k=st.integers(1, 4096),
    s_words=st.integers(3, 1 << 22),
)
def test_matmul_bound_never_exceeds_a_real_schedule(m, n, k, s_words):
    (c,) = contraction_io(_graph(m, n, k))
    assert c.words(s_words * c.word)[0] <= _schedule_matmul_words(m, n, k, s_words)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(2, 1 << 14),
    d=st.sampled_from([16, 64, 128]),
    s_factor=st.floats(min_value=2.5, max_value=1e4),
)
def test_attention_bound_never_exceeds_flash_style_schedule(n, d, s_factor):
    (c,) = contraction_io(_sdpa(n, d))
    s_words = s_factor * d  # at least two rows of Q plus a key row
    assert c.word == 2
    assert c.words(s_words * 2)[0] <= _schedule_qk_words(n, d, s_words)


def _causal(n, d, heads=1):
    q = meta(1, heads, n, d, dtype=torch.bfloat16)

    def f(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    return lift(solar.trace(f, [q, q.clone(), q.clone()]).program)


def test_causal_attention_guard_reaches_the_bound_hand_derived():
    """Causal SDPA, one head, N = 2M tokens, d = 128, bf16, capacity 16 MiB (S = 2²³ words).

    The lifter carries the statement's guard ``-(N-1) <= k - q <= 0`` over the score's own
    ranks, so every executed score takes all d products: k_min = d, and the on-chip rule of
    the non-causal case applies to the V = N(N+1)/2 · d executed products. With M = S (μ = 1),
    F² <= S³ + S⁴/d² (S > d²) and Q >= S (V / F - 1) words. Without the guard (k_min unknown,
    as before the graph carried it) no traffic beyond Q and K once was provable."""
    n, d = 1 << 21, 128
    g = _causal(n, d)
    (c,) = contraction_io(g)  # QKᵀ (PV reads the scores from chip: no bound)
    node = g.op(c.node)
    q_rank, k_rank = node.output.ranks[2], node.output.ranks[3]
    assert node.guards == (GuardRange(A(k_rank) - A(q_rank), -(n - 1), 1),)
    assert c.rule == RULE_SEGMENT_ONCHIP
    v = n * (n + 1) // 2 * d
    assert c.volume == v and c.segment.k_min == d
    cap = 16 * 2**20
    s = cap / 2
    q1 = s * (v / math.sqrt(s**3 + s**4 / d**2) - 1)
    assert c.segment.words_at(s, 1) == pytest.approx(q1, rel=1e-12)
    words = max(c.segment.words_at(s, mu) for mu in MU_GRID)
    compulsory_qk = 2 * n * d * 2
    assert c.compulsory_bytes == compulsory_qk
    ca = cache_aware_bytes(g, cap)
    assert ca.extra == {c.node: pytest.approx(words * 2 - compulsory_qk, rel=1e-12)}
    assert ca.bytes == pytest.approx(fused_bytes(g) + words * 2 - compulsory_qk, rel=1e-12)
    assert ca.bytes >= fused_bytes(g) + q1 * 2 - compulsory_qk > 4 * fused_bytes(g)
    # the same node without k_min (guards unknown) proves nothing beyond the fused bytes here
    blind = dataclasses.replace(c.segment, k_min=None)
    assert blind.words(s) * 2 <= compulsory_qk


def test_guard_on_a_reduction_rank_leaves_k_min_unknown():
    """A guard over the reduced rank (a banded product: each output sums a different number
    of products) must not give k_min: the rule is output ranks only."""
    m, k = 4096, 4096
    b = ProgramBuilder("band")
    x = b.tensor("x", (m, k), "bfloat16", "input")
    w = b.tensor("w", (k, m), "bfloat16", "weight")
    t = b.tensor("t", (m, m), "float32", "intermediate")
    y = b.tensor("y", (m,), "float32", "output")
    b.begin_kernel("band")
    b.statement(
        [("i", m), ("j", m), ("k", k, True)],
        (t, ("i", "j")),
        call("mul", Load(x, (A("i"), A("k"))), Load(w, (A("k"), A("j")))),
        reduce="sum",
        guards=[Guard(A("k") - A("i"), -8, 9)],
    )
    b.statement([("i", m), ("j", m, True)], (y, ("i",)), Load(t, (A("i"), A("j"))), reduce="sum")
    b.program.outputs.append(y)
    g = lift(b.program)
    node = next(x for x in g.ops() if x.op_kind == "contraction")
    (guard,) = node.guards
    assert guard.ranks == {node.output.ranks[0], *node.reduction_ranks}
    (c,) = contraction_io(g)
    assert c.segment.k_min is None and not c.output_in_dram


def _schedule_causal_qk_words(n, d, s):
    """Causal QKᵀ, scores consumed on chip: as :func:`_schedule_qk_words`, a block of query
    rows meets only the keys up to its last row."""
    br = max(1, min(n, (int(s) - 1) // d - 1))
    return n * d + sum(min(n, (i + 1) * br) * d for i in range(-(-n // br)))


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(2, 1 << 13),
    d=st.sampled_from([16, 64, 128]),
    s_factor=st.floats(min_value=2.5, max_value=1e4),
)
def test_causal_attention_bound_never_exceeds_a_causal_schedule(n, d, s_factor):
    (c,) = contraction_io(_causal(n, d))
    assert c.segment.k_min == d
    s_words = s_factor * d
    assert c.words(s_words * 2)[0] <= _schedule_causal_qk_words(n, d, s_words)

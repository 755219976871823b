"""Symbolic bounds of issue 21's programs equal numeric bounds at random sizes.

For each program (the MLP and attention examples, a LLaMA-style decode step, a strided padded
convolution, the GRU stack with its critical path) the bound is traced once with its sizes as
symbols, then compared at points drawn by hypothesis with a fresh numeric ``solar.bound`` at
that size: counts (work per op class, DRAM bytes, peak memory, launches) exactly, times to
rounding, and each level's bound-by label. No formula is specialized at its traced sizes
(``b.specializations`` is empty). The engine's pieces are checked against what they replace:
the affine tails of the critical path against the step-by-step program, the residue-class
prover against the relations it decides, the caches against numeric runs before symbolic ones.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
import sympy
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import solar
from solar.algebra.prove import always
from solar.algebra.size import Size, gcd, minimum, recording, symbol
from solar.backend.chain_paths import chain_tail, dp, tail_best
from solar.symbolic.symbolic_bound import LEVELS, QUANTITIES

ROOT = Path(__file__).resolve().parents[1]
TIMES = ("unfused", "fused", "cache_aware", "critical_path")
FEW = settings(
    max_examples=6,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def assert_same(b, sizes: dict[str, int], numeric) -> None:
    """``b.at(**sizes)`` is the numeric bound: counts exact, times to rounding, labels."""
    got = b.at(**sizes)
    assert dict(got.flops) == dict(numeric.flops)
    for q, read in QUANTITIES.items():
        if q in TIMES:
            assert read(got) == pytest.approx(read(numeric), rel=1e-9, abs=1e-18), q
        else:
            assert read(got) == read(numeric), q
    for level in LEVELS:
        assert getattr(got, f"{level}_bound_by") == getattr(numeric, f"{level}_bound_by")


# ---------------------------------------------------------------------------- the programs


@pytest.fixture(scope="module")
def mlp():
    model = example("mlp").Model(64)
    b = solar.bound(model, [torch.randn(100, 64)], hw="H100", symbolic={"tokens": (0, 0)})
    return model, b


def test_mlp_formula_is_linear_in_tokens(mlp):
    _, b = mlp
    tokens = symbol("tokens")
    assert b.specializations == {}
    assert b.flops_formula() == {"cuda_fp32": 16448 * tokens}  # 2·(2·64·64 + 64) + 64 ReLU


@FEW
@given(tokens=st.integers(2, 20000))
def test_mlp_equals_numeric(mlp, tokens):
    model, b = mlp
    assert_same(b, {"tokens": tokens}, solar.bound(model, [torch.randn(tokens, 64)], hw="H100"))


def test_a_pickled_bound_evaluates_the_same(attention):
    """A symbolic bound sent to another process (pickled: its GPU spec's read-only maps
    included) gives the same numbers, formulas and crossovers; its retrace (a link to the
    model) stays behind."""
    _, b = attention
    back = pickle.loads(pickle.dumps(b))
    assert back.retrace is None and b.retrace is not None
    assert back.formula("fused") == b.formula("fused")
    assert back.flops_formula() == b.flops_formula()
    spec, back_spec = b.analysis.spec, back.analysis.spec
    assert back_spec == spec and dict(back_spec.rates) == dict(spec.rates)
    for sizes in ({"batch": 2, "seq": 100}, {"batch": 5, "seq": 3000}, {"batch": 16, "seq": 7}):
        got, want = back.at(**sizes), b.at(**sizes)
        for q, read in QUANTITIES.items():
            assert read(got) == read(want), (q, sizes)
    assert back.crossovers("seq", "fused", hi=4096) == b.crossovers("seq", "fused", hi=4096)


def _qkv(batch: int, seq: int) -> list[torch.Tensor]:
    return [torch.randn(batch, 4, seq, 64, dtype=torch.bfloat16) for _ in range(3)]


@pytest.fixture(scope="module")
def attention():
    model = example("attention_bf16").Model()
    marks = {"batch": [(i, 0) for i in range(3)], "seq": [(i, 2) for i in range(3)]}
    return model, solar.bound(model, _qkv(2, 100), hw="H100", symbolic=marks)


@FEW
@given(batch=st.integers(2, 16), seq=st.integers(2, 4096))
def test_attention_equals_numeric(attention, batch, seq):
    model, b = attention
    assert b.specializations == {}
    assert_same(b, {"batch": batch, "seq": seq}, solar.bound(model, _qkv(batch, seq), hw="H100"))


transformers = pytest.importorskip("transformers")


def _llama(hidden=256, intermediate=688, heads=8, kv_heads=2, vocab=1000, layers=2):
    cfg = transformers.LlamaConfig(
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        vocab_size=vocab,
        max_position_embeddings=16384,
        num_hidden_layers=layers,
    )
    with torch.device("meta"):
        return transformers.LlamaForCausalLM(cfg).to(torch.bfloat16)


@pytest.fixture(scope="module")
def decode():
    model = _llama()
    phase = solar.llm.decode_step(model, batch=3, context=50)
    return model, solar.bound(*phase, hw="H100", symbolic=solar.llm.decode_sizes(phase))


def test_decode_formula_in_batch_and_context(decode):
    _, b = decode
    batch, context = symbol("batch"), symbol("context")
    assert b.specializations == {}
    assert set(b.expression("bytes_fused").free_symbols) == {batch, context}
    # the KV cache read once: 2 layers x K and V x 2 heads x 32 dims x 2 bytes per slot
    assert sympy.expand(b.expression("bytes_fused")).coeff(batch * context) == 2 * 2 * 2 * 32 * 2


@settings(max_examples=20, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.integers(2, 256), context=st.integers(1, 8192))
def test_decode_equals_llm_decode_step(decode, batch, context):
    """The issue's 20 random points: the formula is solar.llm.decode_step's bound there."""
    model, b = decode
    numeric = solar.bound(*solar.llm.decode_step(model, batch=batch, context=context), hw="H100")
    assert_same(b, {"batch": batch, "context": context}, numeric)


@pytest.mark.parametrize("hw", ["H100", "B200"])
def test_decode_turns_compute_bound_at_the_crossover(decode, hw):
    """``crossovers`` names each batch where the bound-by term changes at a one-token context
    (the last: from DRAM to the tensor cores); numeric bounds on either side of each agree."""
    model, b = decode
    if hw != "H100":
        phase = solar.llm.decode_step(model, batch=3, context=50)
        b = solar.bound(*phase, hw=hw, symbolic=solar.llm.decode_sizes(phase))
    crossings = b.crossovers("batch", "fused", hi=1 << 14, context=1)
    assert crossings[-1][1:] == ("dram", "tensor")
    for x, below, above in crossings:
        for batch, by in ((x - 1, below), (x, above)):
            phase = solar.llm.decode_step(model, batch=batch, context=1)
            assert solar.bound(*phase, hw=hw).fused_bound_by == by


@pytest.fixture(scope="module")
def conv():
    model = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1)
    marks = {"batch": (0, 0), "h": (0, 2), "w": (0, 3)}
    return model, solar.bound(model, [torch.randn(2, 16, 33, 40)], hw="H100", symbolic=marks)


def test_conv_counts_are_quasi_polynomials(conv):
    """Output rows floor((h + 2 - 3) / 2) + 1: the formulas hold floors, at every parity."""
    _, b = conv
    assert b.specializations == {}
    assert b.flops_formula()["tc_tf32"].has(sympy.floor)
    assert b.expression("bytes_fused").has(sympy.floor)


@settings(max_examples=8, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.integers(2, 8), h=st.integers(3, 300), w=st.integers(3, 300))
def test_conv_equals_numeric(conv, batch, h, w):
    model, b = conv
    numeric = solar.bound(model, [torch.randn(batch, 16, h, w)], hw="H100")
    assert_same(b, {"batch": batch, "h": h, "w": w}, numeric)


@pytest.fixture(scope="module")
def gru():
    model = example("model_gru_stack").Model()
    b = solar.bound(model, [torch.randn(20, 10, 128)], hw="H100", symbolic={"seq": (0, 0)})
    return model, b


def test_gru_critical_path_is_a_formula(gru):
    """Six stacked layers fed step by step: (seq + 6 - 3) steps of the floor a, halved."""
    _, b = gru
    seq = symbol("seq")
    assert b.specializations == {}
    cp = b.expression("critical_path")
    a = b.latency.chains[0].step_s
    assert sympy.Poly(cp, seq).degree() == 1
    assert float(cp.coeff(seq)) == pytest.approx(a / 2, rel=1e-12)
    assert float(cp.subs(seq, 0)) == pytest.approx(3 * a / 2, rel=1e-12)


@FEW
@given(seq=st.integers(2, 700))
def test_gru_equals_numeric(gru, seq):
    model, b = gru
    assert_same(b, {"seq": seq}, solar.bound(model, [torch.randn(seq, 10, 128)], hw="H100"))


# ---------------------------------------------------------------------------- the pieces


FLOORS = [0.0, 1e-8, 5.05e-8, 5.05e-8, 7e-8, 2e-7]  # repeated: equal floors tie


@st.composite
def stacks(draw):
    """A stack of chains of T steps: each fed by one or two earlier chains, step by step
    (copy: the producer's step t) or from its previous step (not a copy)."""
    layers = draw(st.integers(1, 4))
    nodes = []
    for i in range(layers):
        a = draw(st.sampled_from(FLOORS))
        srcs = []
        for j in draw(st.sets(st.integers(0, i - 1), max_size=2)) if i else []:
            srcs.append((j, draw(st.sampled_from(FLOORS)), draw(st.booleans())))
        nodes.append((a, srcs))
    return draw(st.integers(2, 300)), nodes


@settings(max_examples=60, derandomize=True, deadline=None)
@given(stacks())
def test_chain_tails_equal_the_step_program(stack):
    """Where a chain's paths are affine tails, they are :func:`dp`'s arrays at every step,
    and the longest path over ``t < T`` is numpy's argmax of them."""
    T, nodes = stack
    numeric, tails = [], []
    with recording():
        size = Size(T, symbol("T"))
        for a, srcs in nodes:
            arrays = [(*numeric[j], T, w, (1, 0), (1, 0), copy) for j, w, copy in srcs]
            numeric.append(dp(T, a, arrays)[:3])
            given_tails = [(tails[j], size, w, (1, 0), (1, 0), c) for j, w, c in srcs]
            tails.append(chain_tail(size, a, given_tails))
    for (P, N, M), tail in zip(numeric, tails, strict=True):
        if tail is None:
            continue
        tP, tN, tM = tail.arrays(T)
        np.testing.assert_allclose(tP, P, rtol=1e-12, atol=1e-24)
        assert (tN == N).all() and (tM == M).all()
        s, edges, big = tail_best(tail, Size(T, symbol("T")))
        i = int(np.argmax(P))
        assert float(s) == pytest.approx(P[i], rel=1e-12) and (int(edges), float(big)) == (
            N[i],
            M[i],
        )


def test_chain_tails_cover_stacks_of_equal_floors():
    """The GRU's shape (every floor equal, fed step by step) always has a tail."""
    with recording():
        T = Size(40, symbol("T"))
        tail = chain_tail(T, 5e-8, [])
        for _ in range(5):
            tail = chain_tail(T, 5e-8, [(tail, T, 5e-8, (1, 0), (1, 0), True)])
            assert tail is not None


@st.composite
def bidirectional(draw):
    """A stack of chains of T steps whose sources are read step by step or in reverse (step
    ``t`` reads the producer's step ``T - 1 + δ - t``, as a bidirectional RNN's next layer
    reads the other direction), copies or previous steps."""
    layers = draw(st.integers(1, 4))
    nodes = []
    for i in range(layers):
        a = draw(st.sampled_from(FLOORS))
        srcs = []
        for j in draw(st.sets(st.integers(0, i - 1), max_size=3)) if i else []:
            way = draw(st.sampled_from([None, 0, -1, -3]))  # None: forward, else δ
            srcs.append((j, draw(st.sampled_from(FLOORS)), draw(st.booleans()), way))
        nodes.append((a, srcs))
    return draw(st.integers(2, 60)), draw(st.lists(st.integers(1, 200), max_size=6)), nodes


def _read(size, way, copy):
    """``(coef_b, const_b), (coef_a, const_a)`` of a source read ``way`` (None: forward)."""
    if way is None:
        return (1, 0), (1, 0)
    return (-1, size - 1 + way + (0 if copy else 1)), (1, 0)


def _tail_at(tail, T: int, x):
    """``tail``'s arrays and best at ``T``, its formulas (intercept, edges) evaluated there."""
    icpt = float(sympy.sympify(getattr(tail.icpt, "expr", tail.icpt)).subs(x, T))
    n0 = int(sympy.sympify(getattr(tail.n0, "expr", tail.n0)).subs(x, T))
    t = np.arange(tail.K, T)
    P = np.concatenate([tail.P, tail.slope * t + icpt])
    N = np.concatenate([tail.N, t + n0])
    M = np.concatenate([tail.M, np.full(t.size, tail.m)])
    return P, N, M


@settings(max_examples=150, derandomize=True, deadline=None)
@given(bidirectional())
def test_chain_tails_read_in_reverse_equal_the_step_program(case):
    """Traced at one T, a chain's tail (sources read in either order) is :func:`dp`'s arrays
    at every other T where the guards it recorded hold: the formula, not one point."""
    T0, others, nodes = case
    x = symbol("T")
    tails = []
    with recording() as rec:
        size = Size(T0, x)
        for a, srcs in nodes:
            given_tails = [(tails[j], size, w, *_read(size, way, c), c) for j, w, c, way in srcs]
            ok = all(tails[j] is not None for j, *_ in srcs)
            tails.append(chain_tail(size, a, given_tails) if ok else None)
    for T in [T0, *others]:
        if not all(bool(g.subs(x, T)) for g in rec.guards):
            continue
        numeric = []
        for (a, srcs), tail in zip(nodes, tails, strict=True):
            arrays = [(*numeric[j], T, w, *_read(T, way, c), c) for j, w, c, way in srcs]
            numeric.append(dp(T, a, arrays)[:3])
            if tail is None:
                continue
            P, N, M = numeric[-1]
            tP, tN, tM = _tail_at(tail, T, x)
            np.testing.assert_allclose(tP, P, rtol=1e-12, atol=1e-24)
            assert (tN == N).all() and (tM == M).all(), T


def test_a_bidirectional_layer_by_hand():
    """Two directions of T = 4 steps (floor 1), the next layer's forward chain fed step by
    step by the first (edge 0.5) and in reverse by the second: its longest path runs the
    whole reverse chain (3 steps), its edge into step 0 (0.5), then 3 steps of its own:
    ``P = [3.5, 4.5, 5.5, 6.5]`` over ``N = [4, 5, 6, 7]`` edges; as a formula of ``T``,
    ``P[t] = T - 1/2 + t``, ``N[t] = T + t``."""
    x = symbol("T")
    with recording() as rec:
        T = Size(4, x)
        first = chain_tail(T, 1.0, [])
        src = [(first, T, 0.5, (1, 0), (1, 0), True), (first, T, 0.5, (-1, T - 1), (1, 0), True)]
        tail = chain_tail(T, 1.0, src)
    assert tail is not None and tail.K == 0 and tail.slope == 1.0 and tail.m == 1.0
    assert sympy.expand(tail.icpt.expr - (x - sympy.Rational(1, 2))) == 0
    assert sympy.expand(tail.n0.expr - x) == 0
    assert all(g.subs(x, 2) for g in rec.guards) and not all(g.subs(x, 1) for g in rec.guards)
    line = np.arange(4.0)
    P, N, M = dp(
        4,
        1.0,
        [
            (line, np.arange(4), np.ones(4), 4, 0.5, (1, 0), (1, 0), True),
            (line, np.arange(4), np.ones(4), 4, 0.5, (-1, 3), (1, 0), True),
        ],
    )[:3]
    assert P.tolist() == [3.5, 4.5, 5.5, 6.5] and N.tolist() == [4, 5, 6, 7]
    assert M.tolist() == [1.0] * 4
    assert tail_best(tail, T)[0] == 6.5 and int(tail_best(tail, T)[1]) == 7


class _TableSlice(torch.nn.Module):
    """``x + table[:T]`` over an 8 x 4 table (a position table), traced at ``T = 8``: the
    slice's extent coincides with the table's; ``full`` also reads the whole table."""

    def __init__(self, full: bool) -> None:
        super().__init__()
        self.register_buffer("table", torch.randn(8, 4))
        self.full = full

    def forward(self, x):
        y = x + self.table[: x.shape[0]]
        return (y, self.table * 2) if self.full else y


def test_a_slice_that_coincides_with_its_table_keeps_its_size():
    """Traced where the slice spans the table, the ranks do not decide ``T == 8`` (the names
    are the same either way): the formula holds below 8, reading 16 bytes of x, 16 of the
    table and writing 16 per row (48·T, by hand)."""
    model = _TableSlice(full=False)
    b = solar.bound(model, [torch.randn(8, 4)], hw="H100", symbolic={"T": (0, 0)})
    assert b.specializations == {}
    for t in (3, 5, 8):
        assert b.at(T=t).bytes_unfused == 48 * t
        assert_same(b, {"T": t}, solar.bound(model, [torch.randn(t, 4)], hw="H100"))


def test_a_coincidence_the_ranks_depend_on_is_decided():
    """Where another op reads the whole table, merging the slice's dim with the table's
    changes the names: the equality is decided, pinning ``T``, and the formula is the
    numeric bound there."""
    model = _TableSlice(full=True)
    b = solar.bound(model, [torch.randn(8, 4)], hw="H100", symbolic={"T": (0, 0)})
    assert set(b.specializations) == {"T"}
    assert_same(b, {"T": 8}, solar.bound(model, [torch.randn(8, 4)], hw="H100"))


n, m = symbol("n"), symbol("m")
f = sympy.floor


@pytest.mark.parametrize(
    ("d", "op", "proved"),
    [
        (f(n / 2) - f((n - 1) / 2), ">=", True),  # never decided by sympy alone
        (f(n / 2) - f((n - 1) / 2) - 1, ">=", None),  # true for even n only
        (n + 1 - (2 * f((n - 1) / 2) + 3), "<=", True),
        (2 * f(n / 2) - n - 1, "<", True),
        (n - 2, ">=", None),
        (f(f((n - 1) / 2) / 2) - f(n / 4), "<=", True),  # nested floors: period 4
        (n * m - m, ">=", True),
        (-n, "==", False),
    ],
)
def test_prover_decides_by_residues(d, op, proved):
    assert always(d, op) is proved


@settings(max_examples=80, derandomize=True, deadline=None)
@given(
    c=st.lists(st.integers(-3, 3), min_size=4, max_size=4),
    q=st.integers(1, 4),
    k=st.integers(-3, 3),
    op=st.sampled_from(["<", "<=", ">", ">=", "==", "!="]),
)
def test_prover_is_sound(c, q, k, op):
    """Whatever the prover decides holds (or fails) at every size tried."""
    d = c[0] + c[1] * n + c[2] * f((n + k) / q) + c[3] * f(n / q) * m
    proved = always(d, op)
    if proved is None:
        return
    cmp = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}
    cmp |= {"==": np.equal, "!=": np.not_equal}
    for nv, mv in itertools.product(range(1, 40), range(1, 6)):
        v = int(d.subs({n: nv, m: mv}))
        assert bool(cmp[op](v, 0)) is proved


def test_min_gcd_and_floordiv_keep_expressions():
    h = symbol("h")
    out_rows = Size(17, f((h - 1) / 2) + 1)  # h = 33
    with recording() as rec:
        assert minimum(out_rows, Size(17, f(h / 2) + 1)).expr == f((h - 1) / 2) + 1
        assert gcd(0, Size(80, 2 * h)).expr == 2 * h
        assert gcd(Size(66, 2 * h), Size(33, h)).expr == h
        assert (Size(64 * 34, 64 * h + 64) // Size(32 * 34, 32 * h + 32)) == 2
    assert rec.guards == {}


def test_a_numeric_run_first_leaves_the_formula_unspecialized():
    """Caches keyed on sizes: a numeric bound at the traced size, then a symbolic one, shares
    no entry (the symbolic formula is not specialized) and replays no guard it lacks."""
    model = example("mlp").Model(32)
    solar.bound(model, [torch.randn(77, 32)], hw="H100")
    b = solar.bound(model, [torch.randn(77, 32)], hw="H100", symbolic={"tokens": (0, 0)})
    assert b.specializations == {}
    assert b.flops_formula()["cuda_fp32"].free_symbols == {symbol("tokens")}
    assert math.isclose(
        b.at(tokens=1000).fused, solar.bound(model, [torch.randn(1000, 32)], hw="H100").fused
    )


def test_interning_and_string_keys_take_plain_numbers_only():
    """The analysis-speed tables (equal Affines, index tuples and Dims one object each; the
    structure cache's keys as strings) take plain ints only: a size keeps its own record and
    expression, none of them decides ``==`` on a size (no guard), and a structure key holding
    sizes stays a tuple, compared exactly (value and expression)."""
    from solar.graph.cache import StructureCache, kernel_key
    from solar.ir.affine import Affine, index_tuple
    from solar.ir.program import ProgramBuilder, interned_dims
    from solar.ir.scalar import Load, call

    n, m = symbol("n"), symbol("m")
    with recording() as rec:
        plain, sized = Affine.build({"i": 8}, 1), Affine.build({"i": Size(8, n)}, 1)
        assert plain is Affine.build({"i": 8}, 1)
        assert sized is not plain and sized.coefs["i"].expr == n
        assert Affine.of(Size(8, m)) is not Affine.of(8) and Affine.of(Size(8, m)).const.expr == m
        assert index_tuple((sized,))[0] is sized
        dims = interned_dims([("i", Size(8, n)), ("j", 8)])
        assert dims[0].extent.expr == n and dims[1] is interned_dims([("j", 8)])[0]
    assert rec.guards == {}

    def flat_copy(size):
        b = ProgramBuilder("copy")
        x = b.tensor("x", (size * size,), "float32", "input")
        y = b.tensor("y", (size, size), "float32", "output")
        b.program.outputs.append(y)
        b.begin_kernel("k")
        index = (Affine.build({"i": size, "j": 1}),)
        b.statement([("i", size), ("j", size)], (y, ("i", "j")), call("exp", Load(x, index)))
        return b.program

    programs = [flat_copy(8), flat_copy(Size(8, n)), flat_copy(Size(8, m)), flat_copy(Size(8, n))]
    cache = StructureCache()
    with recording():
        keys = [kernel_key(p, p.kernels[0])[0] for p in programs]
        facts = [cache.facts(p, p.kernels[0]) for p in programs]
    assert [type(k) for k in keys] == [str, tuple, tuple, tuple]
    assert cache.stats()["entries"] == 3 and cache.stats()["hits"] == 1
    reads = [f.io.reads[p.inputs[0]].elements for f, p in zip(facts, programs)]
    assert type(reads[0]) is int and reads[0] == 64
    assert [r.expr for r in reads[1:]] == [n**2, m**2, n**2]

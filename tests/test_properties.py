"""Property tests (hypothesis) over random programs, shapes, dtypes and GPU specs.

Programs are random chains of the supported operators: elementwise maps (unary, binary with
another input, with a broadcast row), matmuls, reductions, softmax, layer norm and views
(transpose, reshape). For every one:

- the bounds are ordered: fused <= cache-aware, fused <= unfused; cache-aware is
  non-increasing in on-chip capacity and equals fused when the capacity is huge;
- every level is max(throughput, latency) (the unfused one per kernel, with the launch floor);
- the throughput bounds scale as the spec does (:meth:`solar.hw.HardwareSpec.scaled`):
  bandwidth and compute x k together divide every bound by k; bandwidth x k alone gives
  ``max(compute, bytes / (k * bandwidth))``, so a program that stays memory-bound runs exactly
  k times faster; compute x k alone likewise;
- the IR, executed, matches PyTorch eager on real inputs (float32 and float64);
- lifting with the structure cache gives the same graph as without it.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import solar
from solar.backend import analyze
from solar.graph import lift
from solar.graph.cache import structure_cache
from solar.hw import list_specs, load_spec
from solar.interp.torch.execute import execute

REL = 1e-9  # float slack for sums taken in different orders
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SPECS = list_specs()

UNARY = {
    "relu": torch.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "gelu": F.gelu,
    "silu": F.silu,
    "exp": lambda x: torch.exp(x.clamp(-8.0, 8.0)),
    "neg_abs": lambda x: -x.abs(),
}


# ----------------------------------------------------------------------------------------------
# random programs


@st.composite
def chains(draw, max_dim: int = 8, max_len: int = 6):
    """``(m, n, steps)``: a chain on an ``m x n`` input; each step a tuple naming the operator
    and its sizes (the shape is tracked, so every step is valid)."""
    m = draw(st.integers(1, max_dim))
    n = draw(st.integers(1, max_dim))
    rows, cols = m, n
    steps = []
    for _ in range(draw(st.integers(1, max_len))):
        kind = draw(
            st.sampled_from(
                ["unary", "binary", "row", "scale", "matmul", "sum", "amax", "mean0", "softmax"]
                + ["layer_norm", "transpose", "reshape"]
            )
        )
        if kind == "unary":
            steps.append(("unary", draw(st.sampled_from(sorted(UNARY)))))
        elif kind in ("binary", "row"):
            steps.append((kind, draw(st.sampled_from(["add", "mul", "sub", "maximum"]))))
        elif kind == "scale":
            steps.append(("scale", draw(st.sampled_from([0.5, 2.0, -1.5]))))
        elif kind == "matmul":
            p = draw(st.integers(1, max_dim))
            steps.append(("matmul", p))
            cols = p
        elif kind in ("sum", "amax"):
            steps.append((kind,))
            cols = 1
        elif kind == "mean0":
            steps.append(("mean0",))
            rows = 1
        elif kind == "transpose":
            steps.append(("transpose",))
            rows, cols = cols, rows
        elif kind == "reshape":
            steps.append(("reshape",))
            rows, cols = cols, rows
        else:
            steps.append((kind,))
    return m, n, tuple(steps)


def _weights(m: int, n: int, steps, *, dtype, device: str, seed: int = 0):
    """The input and one extra tensor per step that takes one, in order."""
    g = torch.Generator().manual_seed(seed)

    def rand(*shape, scale=1.0):
        if device == "meta":
            return torch.empty(*shape, dtype=dtype, device="meta")
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(dtype)

    tensors = [rand(m, n)]
    rows, cols = m, n
    for step in steps:
        kind = step[0]
        if kind == "binary":
            tensors.append(rand(rows, cols))
        elif kind == "row":
            tensors.append(rand(cols))
        elif kind == "matmul":
            tensors.append(rand(cols, step[1], scale=1 / math.sqrt(cols)))
            cols = step[1]
        elif kind in ("sum", "amax"):
            cols = 1
        elif kind == "mean0":
            rows = 1
        elif kind in ("transpose", "reshape"):
            rows, cols = cols, rows
    return tensors


def program_fn(steps):
    """A plain function of ``(x, *extras)`` running the chain."""

    def fn(x, *extras):
        extra = iter(extras)
        for step in steps:
            kind = step[0]
            if kind == "unary":
                x = UNARY[step[1]](x)
            elif kind in ("binary", "row"):
                x = getattr(torch, step[1])(x, next(extra))
            elif kind == "scale":
                x = x * step[1]
            elif kind == "matmul":
                x = x @ next(extra)
            elif kind == "sum":
                x = x.sum(-1, keepdim=True)
            elif kind == "amax":
                x = x.amax(-1, keepdim=True)
            elif kind == "mean0":
                x = x.mean(0, keepdim=True)
            elif kind == "softmax":
                x = torch.softmax(x, dim=-1)
            elif kind == "layer_norm":
                x = F.layer_norm(x, (x.shape[-1],))
            elif kind == "transpose":
                x = x.t()
            elif kind == "reshape":
                x = x.reshape(x.shape[1], x.shape[0])
        return x

    return fn


def _big(chain, scale: int):
    """The same chain at larger sizes (bounds need no execution)."""
    m, n, steps = chain
    steps = tuple((s[0], s[1] * scale) if s[0] == "matmul" else s for s in steps)
    return m * scale, n * scale, steps


def _graph(chain, dtype, scale: int = 64):
    m, n, steps = _big(chain, scale)
    inputs = _weights(m, n, steps, dtype=dtype, device="meta")
    return lift(solar.trace(program_fn(steps), inputs).program)


def _compute_s(b) -> float:
    return max(b.compute_s.values(), default=0.0)


DTYPES = st.sampled_from([torch.float32, torch.float16, torch.bfloat16])
SPEC = st.sampled_from(SPECS)


# ----------------------------------------------------------------------------------------------
# bounds


@SETTINGS
@given(chain=chains(), dtype=DTYPES, spec=SPEC, scale=st.sampled_from([1, 16, 256]))
def test_levels_are_ordered(chain, dtype, spec, scale):
    b = analyze(_graph(chain, dtype, scale), spec)
    assert 0 <= b.fused <= b.cache_aware * (1 + REL)  # 0: a program that only views its input
    assert b.fused <= b.unfused * (1 + REL)
    assert b.bytes_fused <= b.bytes_cache_aware * (1 + REL)


@SETTINGS
@given(
    chain=chains(),
    dtype=DTYPES,
    spec=SPEC,
    k=st.lists(st.sampled_from([1 / 4096, 1 / 64, 1 / 8, 1.0, 8.0, 1e3]), min_size=2, max_size=4),
)
def test_cache_aware_is_monotone_in_capacity(chain, dtype, spec, k):
    g = _graph(chain, dtype, 256)
    ks = sorted(set(k))
    cas = [analyze(g, spec.scaled(capacity=c)).bytes_cache_aware for c in ks]
    assert all(a >= b * (1 - REL) for a, b in zip(cas, cas[1:], strict=False))
    huge = analyze(g, spec.scaled(capacity=1e12))
    assert huge.cache_aware == pytest.approx(huge.fused, rel=REL)


@SETTINGS
@given(chain=chains(), dtype=DTYPES, spec=SPEC, k=st.sampled_from([0.25, 2.0, 3.0, 10.0]))
def test_bounds_scale_with_the_spec(chain, dtype, spec, k):
    # throughput bounds scale with the spec; the latency floors (issue 13) do not, so they are
    # left out here and checked by test_levels_are_throughput_or_latency
    spec = dataclasses.replace(spec, latency={})
    g = _graph(chain, dtype)
    b = analyze(g, spec)
    both = analyze(g, spec.scaled(bandwidth=k, compute=k))
    for level in ("fused", "cache_aware", "unfused"):
        assert getattr(both, level) == pytest.approx(getattr(b, level) / k, rel=1e-12), level

    bw = analyze(g, spec.scaled(bandwidth=k))
    memory = b.bytes_fused / (spec.dram_bandwidth * k)
    assert bw.fused == pytest.approx(max(_compute_s(b), memory), rel=1e-12)
    if b.fused_bound_by == "dram" and memory >= _compute_s(b):  # still memory-bound
        assert bw.fused == pytest.approx(b.fused / k, rel=1e-12)
    if k > 1:  # more bandwidth never hurts, and helps at most k times
        assert b.unfused / k * (1 - REL) <= bw.unfused <= b.unfused * (1 + REL)

    cp = analyze(g, spec.scaled(compute=k))
    assert cp.fused == pytest.approx(max(_compute_s(b) / k, b.bytes_fused / spec.dram_bandwidth))
    if b.fused_bound_by != "dram" and _compute_s(b) / k >= b.bytes_fused / spec.dram_bandwidth:
        assert cp.fused == pytest.approx(b.fused / k, rel=1e-12)


@SETTINGS
@given(chain=chains(), dtype=DTYPES, spec=SPEC, scale=st.sampled_from([1, 256]))
def test_levels_are_throughput_or_latency(chain, dtype, spec, scale):
    """Every level is max(throughput bound, latency bound); the unfused one adds per kernel
    max(roofline, launch floor); the throughput part is the bound of the spec without latency
    floors."""
    g = _graph(chain, dtype, scale)
    b = analyze(g, spec)
    plain = analyze(g, dataclasses.replace(spec, latency={}))
    lat = b.latency
    for level in ("fused", "cache_aware"):
        assert lat.throughput[level] == getattr(plain, level)
        assert getattr(b, level) == max(getattr(plain, level), lat.bounds[level])
    launched = [k for k in b.kernels if any(k.flops.values()) or k.bytes_read + k.bytes_written]
    assert lat.launches == len(launched)
    assert b.unfused == pytest.approx(
        sum(max(k.time_s, spec.launch_floor_s if k in launched else 0.0) for k in b.kernels),
        rel=REL,
    )
    assert b.unfused >= plain.unfused * (1 - REL)
    assert b.fused >= spec.launch_floor_s * (1 - REL) if launched else b.fused == plain.fused


# ----------------------------------------------------------------------------------------------
# the IR executes to what PyTorch computes


@SETTINGS
@given(chain=chains(), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_ir_matches_pytorch_on_random_programs(chain, dtype):
    m, n, steps = chain
    fn = program_fn(steps)
    inputs = _weights(m, n, steps, dtype=dtype, device="cpu", seed=m * 31 + n)
    want = fn(*inputs)
    trace = solar.trace(fn, inputs)
    got = execute(trace.program, trace.values(fn, inputs))[trace.output_names[0]]
    # float64: summation orders differ (PyTorch's blocked reductions, the IR's own) and the
    # chain's exp/log/divide steps amplify that by their condition numbers; a wrong loop nest
    # is off by O(1), not 1e-7 (hypothesis found a correct chain 5.4e-9 off at 1e-9)
    tol = 1e-4 if dtype == torch.float32 else 1e-7
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=tol, atol=tol, equal_nan=True)


# ----------------------------------------------------------------------------------------------
# the structure cache changes nothing


def _dump(g) -> tuple:
    nodes = sorted((d.id, repr(d)) for d in g.nodes())
    edges = sorted((u, v, k, repr(e)) for u, v, k, e in g.edges())
    return nodes, edges, repr(g.info)


@SETTINGS
@given(chain=chains(), dtype=DTYPES, repeats=st.integers(1, 3))
def test_structure_cache_changes_nothing(chain, dtype, repeats):
    m, n, steps = chain
    fn = program_fn(steps)

    def layers(x, *extras):  # the chain repeated as residual layers (identical kernels)
        for _ in range(repeats):
            y = fn(x, *extras)
            x = x + y if y.shape == x.shape else x + y.sum()
        return x

    inputs = _weights(m, n, steps, dtype=dtype, device="meta")
    program = solar.trace(layers, inputs).program
    with structure_cache(True):
        cached = lift(program)
        again = lift(program)  # every kernel a lookup now
    with structure_cache(False):
        plain = lift(program)
    assert _dump(cached) == _dump(plain) == _dump(again)
    spec = load_spec("H100")
    assert analyze(cached, spec).to_dict() == analyze(plain, spec).to_dict()

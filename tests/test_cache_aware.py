"""Cache-aware bound invariants (hypothesis) and its formula on a hand-built graph."""

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import solar
from solar.backend.cache_aware import cache_aware_bytes, contraction_io
from solar.backend.roofline import fused_bytes
from solar.graph import lift


def _graph(m, n, k, dtype=torch.float32, chain=False):
    def f(a, b, c):
        y = a @ b
        return torch.relu(y) @ c if chain else y

    args = [
        torch.empty(m, k, dtype=dtype, device="meta"),
        torch.empty(k, n, dtype=dtype, device="meta"),
        torch.empty(n, n, dtype=dtype, device="meta"),
    ]
    return lift(solar.trace(f, args, precision="ieee").program)


dims = st.integers(min_value=1, max_value=1 << 15)


@settings(max_examples=40, deadline=None)
@given(
    m=dims,
    n=dims,
    k=dims,
    chain=st.booleans(),
    caps=st.lists(st.floats(min_value=1e3, max_value=1e12), min_size=2, max_size=5),
)
def test_monotone_in_capacity_and_never_below_fused(m, n, k, chain, caps):
    g = _graph(m, n, k, chain=chain)
    fused = fused_bytes(g)
    values = [cache_aware_bytes(g, c).bytes for c in sorted(caps)]
    assert all(v >= fused for v in values)
    assert all(a >= b - 1e-6 * a for a, b in zip(values, values[1:]))
    assert cache_aware_bytes(g, math.inf).bytes == fused


def test_intermediate_output_uses_phase_argument():
    g = _graph(8192, 8192, 8192, chain=True)
    rules = {c.node: c.rule for c in contraction_io(g)}
    # first GEMM: inputs in DRAM, output consumed on chip; second reads an intermediate
    assert list(rules.values()) == ["Hong-Kung/Loomis-Whitney phases"]
    (c,) = contraction_io(g)
    s = 1e6 / 4
    per_phase = math.sqrt(4 * s * s * (4 * s + 4 * s * s / 8192**2))
    expected = max(c.compulsory_bytes, s * (8192**3 / per_phase - 1) * 4)
    assert c.traffic_bytes(1e6) == expected

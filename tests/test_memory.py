"""Peak memory (solar/backend/memory.py): live bytes over the kernel order, derived by hand."""

import json

import pytest
import torch

import solar
from solar.backend.memory import live_intervals, peak_memory
from solar.graph import lift


def mlp(n=8192, d=4096):
    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.ReLU(), torch.nn.Linear(d, d))
        x = torch.empty(n, d)
    return model, x


def test_mlp_timeline_by_hand():
    """x [8192, 4096] fp32 and two Linear(4096, 4096): inputs and weights resident,
    h = addmm(x) lives kernels 0-1, r = relu(h) kernels 1-2, y (output) kernel 2 to the end."""
    model, x = mlp()
    b = solar.bound(model, [x], hw="H100")
    act = 8192 * 4096 * 4
    weights = 2 * (4096 * 4096 + 4096) * 4
    resident = act + weights  # x and the weights
    m = b.memory
    assert m.resident_bytes == resident
    assert m.timeline == (resident + act, resident + 2 * act, resident + 2 * act)
    assert m.peak_bytes == resident + 2 * act and m.peak_kernel == "relu_1"
    assert m.at_peak == {"input": act, "weight": weights, "intermediate": 2 * act}
    assert b.fits is True and b.dram_capacity == 80 * 10**9
    d = json.loads(b.to_json())["memory"]
    assert d["peak_bytes"] == resident + 2 * act and d["fits"] is True
    assert "peak memory: 536.9 MB while relu_1 runs" in str(b)


def test_outputs_stay_live_and_dead_values_only_while_written():
    """f(x) = (x + 1, (x * 2).sum()): y = x + 1 is an output, live from kernel 0 to the end;
    t = x * 2 lives only while written and summed (kernels 1-2); s (output) from kernel 2."""

    def f(x):
        return x + 1, (x * 2).sum()

    x = torch.empty(1000, 1000, device="meta")
    g = lift(solar.trace(f, [x]).program)
    iv = live_intervals(g)
    assert sorted(iv.values()) == [(0, 2), (1, 2), (2, 2)]
    m = peak_memory(g)
    mb = 1000 * 1000 * 4
    assert m.timeline == (2 * mb, 3 * mb, 3 * mb + 4)


def test_does_not_fit_is_said():
    """Ten Linear(32768, 32768) bf16 layers: 10 x 2.15 GB of weights = 21.5 GB fits on an
    H100 (80 GB); forty do not (85.9 GB of weights alone), but fit on an H200 (141 GB)."""

    def stack(n):
        with torch.device("meta"):
            m = torch.nn.Sequential(
                *[torch.nn.Linear(32768, 32768, bias=False, dtype=torch.bfloat16) for _ in range(n)]
            )
            return m, torch.empty(16, 32768, dtype=torch.bfloat16)

    m, x = stack(10)
    assert solar.bound(m, [x], hw="H100").fits is True
    m, x = stack(40)
    b = solar.bound(m, [x], hw="H100")
    assert b.memory.peak_bytes >= 40 * 32768 * 32768 * 2
    assert b.fits is False and "DOES NOT FIT on one GPU" in " ".join(str(b).split())
    assert solar.bound(m, [x], hw="H200").fits is True  # 141 GB hold 85.9 GB


@pytest.mark.parametrize("n", [1, 3])
def test_peak_never_below_the_resident_bytes(n):
    model, x = mlp(64 * n, 128)
    m = solar.bound(model, [x]).memory
    assert min(m.timeline) >= m.resident_bytes

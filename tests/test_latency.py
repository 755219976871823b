"""Latency bounds (issue 13): the launch floor and the critical path of sequential work, with
every number derived by hand from the catalogue's H100 SXM spec.

H100 SXM per SM and clock (hw_specs/h100_sxm.yaml): tc_tf32 2048 flops, cuda_fp32 256 flops,
sfu 16 results; 132 SMs at 1980 MHz; latency floors: kernel launch 0.5 µs, SM-to-SM handoff
0.0505 µs (100 clocks). A dependent step's floor is
``φ = min(work at one SM's peak, max(sync, work at all SMs' peaks))`` and a path of ``n``
steps of floor ``φ`` takes ``(n·φ - φ) / 2`` (docs/bounds.md). SFU work may move to the FMA
pipe at 8 flops each; the balanced time is ``(t_sfu·8/256·16 + ...)`` as written per case.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

import solar
from solar.api import bound_graph, trace_and_lift
from solar.gpu.violations import Floors, classify
from solar.hw import SpecError, list_specs, load_spec
from solar.ir.affine import Affine, affines
from solar.ir.program import Guard, ProgramBuilder
from solar.ir.recurrence import kernel_chains
from solar.ir.scalar import Load, call
from solar.problem import load_problem

ROOT = Path(__file__).resolve().parents[1]
H100 = load_spec("H100")
CLK, SMS = 1.98e9, 132
LAUNCH, SYNC = 0.5e-6, 0.0505e-6


def cycles(n: float) -> float:
    """Seconds of ``n`` clocks of one SM."""
    return n / CLK


def test_catalogue_latency_floors_are_lower_estimates():
    assert H100.launch_floor_s == LAUNCH and H100.sync_floor_s == SYNC
    for spec in list_specs():
        assert set(spec.latency) == {"kernel_launch", "sm_sync"}, spec.key
        # at or below the 1.0 µs per dependent tiny kernel measured on an H100 (issue 13)
        assert 0 < spec.launch_floor_s <= 1.0e-6, spec.key
        # at most 100 SM clocks at the maximum clock: below any L2 or SM-to-SM latency
        assert 0 < spec.sync_floor_s <= 100 / spec.max_clock_hz, spec.key


def test_latency_block_is_read_in_either_unit_and_checked():
    base = {k: v for k, v in H100.to_dict().items() if k not in ("latency", "path")}
    us = load_spec({**base, "latency": {"kernel_launch_us": 2, "sm_sync_us": 0.25}})
    assert us.latency == {"kernel_launch": 2e-6, "sm_sync": 0.25e-6}
    assert load_spec(us.to_dict()) == us  # base units (seconds) round-trip
    assert load_spec(base).launch_floor_s == 0.0  # no block: no floor
    bad = {
        "kernel_lanch_us": "did you mean 'kernel_launch_us'",
        "sm_sync": "between 0 and",  # 1 s given in seconds: surely meant microseconds
    }
    for key, msg in bad.items():
        with pytest.raises(SpecError, match=msg):
            load_spec({**base, "latency": {key: 1}})
    with pytest.raises(SpecError, match="must be a number"):
        load_spec({**base, "latency": {"sm_sync_us": "fast"}})
    with pytest.raises(SpecError, match="twice"):
        load_spec({**base, "latency": {"sm_sync_us": 1, "sm_sync": 1e-6}})
    with pytest.raises(SpecError, match="between 0 and"):
        load_spec({**base, "latency": {"kernel_launch_us": -1}})


# ---------------------------------------------------------------------------------------------
# the launch floor


def test_chain_of_100_tiny_elementwise_kernels():
    """50 x (mul, relu) on 256 fp32: each kernel reads and writes 1024 B, 2048 B / 3.352 TB/s
    = 0.61 ns, far below one launch: 100 launches x 0.5 µs = 50 µs unfused, one launch
    fused."""
    p = load_problem(ROOT / "examples" / "chain_tiny_kernels.py")
    b = solar.bound(p.model, p.inputs, hw="H100")
    assert len(b.kernels) == 100
    for k in b.kernels:
        assert k.bytes_read + k.bytes_written == 2048
        assert k.time_s == pytest.approx(2048 / H100.dram_bandwidth)
        assert k.latency_s == LAUNCH and k.latency_bound and k.unfused_s == LAUNCH
    assert b.unfused == pytest.approx(100 * LAUNCH, rel=1e-12)
    assert b.fused == b.cache_aware == LAUNCH
    assert b.unfused_bound_by == b.fused_bound_by == b.cache_aware_bound_by == "latency"
    lat = b.latency
    assert lat.launches == 100 and lat.critical_path_s == 0
    assert lat.throughput["unfused"] == pytest.approx(100 * 2048 / H100.dram_bandwidth)
    d = json.loads(b.to_json())["latency"]
    assert d["launches"] == 100 and d["latency_s"]["unfused"] == pytest.approx(50e-6)
    text = str(b)
    assert "launches: 100 kernels x launch floor 500 ns = 50 us" in text
    assert "│ latency" in text and "bound by" in text
    # a spec without latency floors gives back the throughput bounds
    plain = solar.bound(p.model, p.inputs, hw=dataclasses.replace(H100, latency={}))
    assert plain.unfused == pytest.approx(lat.throughput["unfused"], rel=1e-12)
    assert plain.unfused_bound_by == "dram"


# ---------------------------------------------------------------------------------------------
# the critical path of sequential work


def test_gru_stack_of_the_issue():
    """6-layer GRU, input 128, hidden 256, batch 10, 512 steps, fp32 (tf32 contractions: cuDNN
    follows torch.backends.cudnn.allow_tf32, on by default).

    One step of one layer and one batch row (a lane; the 10 rows are independent chains):
    - recurrent GEMM W_hh (3·256 x 256): 3·256·256·2 = 393,216 tf32 flops -> 192 clocks;
    - gates per hidden unit: r = σ(gi_r + gh_r), z = σ(gi_z + gh_z), n = tanh(gi_n + r·gh_n),
      h' = n + z·(h - n): 4 adds + 2 muls + 1 sub + 2 sigmoids (2 flops each) = 11 fp32 flops
      and 3 SFU results: 11·256 / 256 = 11 clocks of FMA, 3·256 / 16 = 48 clocks of SFU,
      balanced by emulating a share f = 37/72 on the FMA pipe: 23.3 clocks each;
    so one SM needs 192 clocks = 96.97 ns, all SMs 0.73 ns, and the step floor is
    φ = min(96.97 ns, max(50.5 ns, 0.73 ns)) = 50.5 ns (the SM-to-SM handoff).
    Layers 2-6 read the layer below's output of the same step: the input GEMM (393,216 flops
    per lane again) and the gates give the same 50.5 ns per edge. The longest path is
    512 + 6 - 1 = 517 steps, 516 edges: (516 - 1) x 50.5 ns / 2 = 13.0 µs. Each layer alone:
    (512 - 2) x 50.5 ns / 2 = 12.88 µs, above its roofline (at most 7.5 µs): the unfused
    bound is 6 x 12.88 µs + one launch for the zero initial state = 77.77 µs. The fused bound
    stays the tensor-core time (23.2 Gflop at 535 Tflop/s = 43.3 µs)."""
    p = load_problem(ROOT / "examples" / "model_gru_stack.py")
    _, g = trace_and_lift(p.model, p.inputs, name="gru")
    b = bound_graph(g, H100)
    lane = {"tc_tf32": 3 * 256 * 256 * 2, "cuda_fp32": 11 * 256, "sfu": 3 * 256}
    chains = b.latency.chains
    assert [c.state for c in chains] == [f"gru_l{i}_h" for i in range(6)]
    for c, raw in zip(chains, [k.chains[0] for k in g.info.kernels[1:]], strict=True):
        assert (c.steps, c.lanes) == (512, 10)
        assert raw.ops == {u: 10 * n for u, n in lane.items()}
        assert c.one_sm_s == pytest.approx(cycles(192), rel=1e-12)
        assert c.spread_s == SYNC and c.step_s == SYNC
        assert c.critical_path_s == pytest.approx(510 * SYNC / 2, rel=1e-12)
    lat = b.latency
    assert lat.critical_steps == 516
    assert lat.critical_path_s == pytest.approx(515 * SYNC / 2, rel=1e-12)
    assert [k.latency_s for k in b.kernels] == pytest.approx([LAUNCH] + [510 * SYNC / 2] * 6)
    assert all(k.time_s < k.latency_s for k in b.kernels)
    assert b.unfused == pytest.approx(LAUNCH + 6 * 510 * SYNC / 2, rel=1e-12)
    assert b.unfused_bound_by == "latency"
    assert b.fused == lat.throughput["fused"] == pytest.approx(23.2e9 / 535.3e12, rel=2e-3)
    assert b.fused_bound_by == "tensor"
    # a GPU whose SMs hand values over slowly: one SM (96.97 ns per step) is then the floor
    slow = dataclasses.replace(H100, latency={"kernel_launch": LAUNCH, "sm_sync": 1e-6})
    s = bound_graph(g, slow).latency
    assert s.chains[0].step_s == pytest.approx(cycles(192), rel=1e-12)
    assert s.critical_path_s == pytest.approx(515 * cycles(192) / 2, rel=1e-12)


def test_bidirectional_lstm():
    """2-layer bidirectional LSTM, input 32, hidden 64, batch 4, 200 steps, fp32.

    One step of one direction, one batch row: recurrent GEMM 4·64·64·2 = 32,768 tf32 flops =
    16 clocks; the cell (c' = σ(i)·tanh(g) + σ(f)·c, h' = σ(o)·tanh(c')) is 10 fp32 flops and
    5 SFU results per unit: 2.5 FMA clocks and 20 SFU clocks, balanced at 8.3 clocks. So
    φ = min(16 clocks = 8.08 ns, 50.5 ns) = 8.08 ns. The two directions of a layer are two
    independent chains: a layer's own critical path is (200 - 2) x φ / 2, once. Layer 2's
    forward step t reads y[t] (layer 1's forward step t and reverse step 199 - t), so the
    longest path runs through a whole layer-1 chain (199 edges), one edge into layer 2 (its
    input GEMM over 128 features, half of them from that direction: 4·64·64·2 flops per lane,
    16 clocks, again 8.08 ns) and a whole layer-2 chain (199 edges): 399 edges,
    (399 - 1) x φ / 2 = 1.608 µs, above the throughput bound: bound by latency."""
    torch.manual_seed(0)
    model = torch.nn.LSTM(32, 64, num_layers=2, bidirectional=True)
    _, g = solar.trace_and_lift(model, [torch.randn(200, 4, 32)])
    b = solar.api.bound_graph(g, "H100")
    phi = cycles(16)
    chains = b.latency.chains
    assert [c.state for c in chains] == [
        "lstm_l0_h",
        "lstm_l0_reverse_h",
        "lstm_l1_h",
        "lstm_l1_reverse_h",
    ]
    for c in chains:
        assert (c.steps, c.lanes) == (200, 4)
        assert c.step_s == pytest.approx(phi, rel=1e-12)
    layer2 = g.info.kernels[-1].chains[0]
    (inp,) = layer2.inputs
    assert inp.tensor == "lstm_l0_output" and (inp.coef, inp.const) == (1, 0)
    assert inp.mixing_ops == {"tc_tf32": 4 * (4 * 64 * 128 * 2)}
    assert inp.mixed_ops == {"cuda_fp32": 4 * 64 * 10, "sfu": 4 * 64 * 5}
    lat = b.latency
    assert lat.critical_steps == 399
    # the edge into layer 2 costs φ too (half of its input GEMM, 16 clocks): Σ = 399 φ
    assert lat.critical_sum_s == pytest.approx(399 * phi, rel=1e-12)
    assert lat.critical_path_s == pytest.approx(398 * phi / 2, rel=1e-12)
    assert b.kernels[-1].latency_s == pytest.approx(198 * phi / 2, rel=1e-12)
    assert b.fused == b.cache_aware == pytest.approx(398 * phi / 2, rel=1e-12)
    assert lat.throughput["fused"] < b.fused
    assert b.fused_bound_by == b.cache_aware_bound_by == "latency"
    assert "critical path: 399 dependent steps" in str(b)


def test_last_writers_match_a_scan_of_the_kernels():
    """The producer lookup of the critical path: the last kernel before ``i`` writing a
    tensor, found by search, equals the running scan it replaces (which kept one dict per
    kernel: kernels x tensors memory, gigabytes for RWKV or Zamba)."""
    from solar.backend.latency import _LastWriters

    model = torch.nn.GRU(8, 16, num_layers=2)
    _, g = solar.trace_and_lift(model, [torch.randn(5, 2, 8)])
    kernels = g.info.kernels
    writers, seen = _LastWriters(g), {}
    tensors = {t for k in kernels for t in k.writes} | {"not_a_tensor"}
    for i, k in enumerate(kernels):
        assert {t: writers.before(i, t) for t in tensors} == {t: seen.get(t) for t in tensors}
        seen.update((t, i) for t in k.writes)


def test_jax_scan_recurrence():
    """``h = tanh(h @ W + x @ U + b)`` with ``jax.lax.scan``, 1000 steps, batch 4, hidden 256
    (examples/jax_scan_rnn.py; one looped kernel). Per step and batch row: h @ W is
    256·256·2 = 131,072 tf32 flops = 64 clocks; the bias add and tanh are 256 fp32 flops and
    256 SFU results (1 and 16 clocks, balanced at 6); x @ U does not depend on h and is not on
    the chain. φ = min(64 clocks = 32.3 ns, 50.5 ns) = 32.3 ns; the chain of 1000 steps takes
    (999 - 1) x φ / 2 = 16.13 µs, ~10x its throughput bound, at every level."""
    pytest.importorskip("jax")
    from solar.frontend.jax.problem import load_jax_problem
    from solar.problem import load_module

    fn, inputs = load_jax_problem(load_module(ROOT / "examples" / "jax_scan_rnn.py"))
    _, g = solar.trace_and_lift(fn, inputs)
    b = solar.api.bound_graph(g, "H100")
    (raw,) = g.info.kernels[0].chains
    assert (raw.steps, raw.lanes, raw.state) == (1000, 4, "scan_carry_hist")
    assert raw.ops == {"tc_tf32": 4 * 131072, "cuda_fp32": 4 * 256, "sfu": 4 * 256}
    phi = cycles(64)
    cp = 998 * phi / 2
    assert b.latency.chains[0].step_s == pytest.approx(phi, rel=1e-12)
    assert b.latency.critical_steps == 999
    for level in ("unfused", "fused", "cache_aware"):
        assert b.time(level) == pytest.approx(cp, rel=1e-12)
        assert b.bound_by(level) == "latency"
        assert b.latency.throughput[level] < cp / 5


def test_no_chain_for_linear_or_unmixed_recurrences():
    """A linear recurrence (c = 0.5·c + x: a parallel scan evaluates it in log depth) is not
    charged; a tanh recurrence is, with one lane per element when nothing mixes them."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def scan(body):
        def f(xs, c0):
            return jax.lax.scan(lambda c, x: (body(c, x), c), c0, xs)[0]

        xs = jax.ShapeDtypeStruct((3000, 8), jnp.float32)
        c0 = jax.ShapeDtypeStruct((8,), jnp.float32)
        ir, _ = solar.trace_and_lift(f, [xs, c0])
        assert any(k.loops for k in ir.kernels)  # lowered as one looped kernel
        return [c for k in ir.kernels for c in kernel_chains(ir, k)]

    assert scan(lambda c, x: 0.5 * c + x) == []
    (c,) = scan(lambda c, x: jnp.tanh(c) + x)
    assert (c.lanes, c.lane_positions) == (8, (1,))
    assert c.ops == {"sfu": 8.0, "cuda_fp32": 8.0}  # tanh(c) and the add of x, per step


def elman(T=6, B=3, H=4, guard=None, diagonal=False):
    """h[t+1, b, i] = tanh(Σ_k W[i, k] h[t, b, k] + x[t, b, i]), written as IR by hand."""
    b = ProgramBuilder("elman")
    x = b.tensor("x", (T, B, H), "float32", "input")
    w = b.tensor("W", (H, H), "float32", "weight")
    h0 = b.tensor("h0", (B, H), "float32", "input")
    acc = b.tensor("acc", (B, H), "float32", "local")
    h = b.tensor("h", (T + 1, B, H), "float32", "output")
    b.begin_kernel("rnn", loops=[("t", T)])
    b.statement([("b", B), ("i", H)], (h, (0, "b", "i")), Load(h0, affines(["b", "i"])),
                guards=[Guard(Affine.of("t"), 0, 1)])  # fmt: skip
    prev = Load(h, affines(["t", "k", "k"] if diagonal else ["t", "b", "k"]))
    b.statement(
        [("b", B), ("i", H), ("k", H, True)],
        (acc, ("b", "i")),
        call("mul", Load(w, affines(["i", "k"])), prev),
        reduce="sum",
        guards=[guard] if guard else (),
    )
    step = call(
        "tanh", call("add", Load(acc, affines(["b", "i"])), Load(x, affines(["t", "b", "i"])))
    )
    b.statement([("b", B), ("i", H)], (h, (Affine.of("t") + 1, "b", "i")), step)
    b.program.outputs.append(h)
    return b.program


def test_chain_facts_of_a_hand_written_recurrence():
    """Per step and for all 3 lanes: the recurrent contraction 3·4·4 FMAs = 96 fp32 flops (no
    tf32: IEEE), then the add of x and tanh, 12 each. x enters elementwise (x[t, b, i] reaches
    h[t+1, b, i] only), so the new state does not depend on all of x's slice within a lane:
    no step input is claimed (a producer of x gets no wavefront edge into this chain)."""
    p = elman()
    (c,) = kernel_chains(p, p.kernels[0])
    assert (c.kernel, c.state, c.steps, c.lanes, c.lane_positions) == ("rnn_0", "h", 6, 3, (1,))
    assert c.ops == {"cuda_fp32": 96 + 12, "sfu": 12}
    assert c.inputs == () and c.outputs == ()


def test_no_chain_when_the_mixing_skips_terms():
    """A triangular (guarded) or diagonal recurrent reduction does not make every new element
    depend on every old one: no chain is claimed."""
    tri = elman(guard=Guard(Affine.of("k") - Affine.of("i"), -100, 1))  # k <= i
    assert kernel_chains(tri, tri.kernels[0]) == []
    diag = elman(B=4, diagonal=True)
    assert kernel_chains(diag, diag.kernels[0]) == []


# ---------------------------------------------------------------------------------------------
# violations


def test_a_measurement_below_the_latency_floor_is_classified():
    f = Floors(50e-6, "latency", 1e-9, "fma", 2e-9, 2048, 2048, 3.35e12, 5e7, latency_s=50e-6)
    kind, cause, reason = classify(10e-6, f, ir_ok=True, level="unfused")
    assert (kind, cause) == ("bound_bug", "latency") and "solar calibrate" in reason
    kind, cause, _ = classify(10e-6, f, ir_ok=True, candidate=True, level="unfused")
    assert (kind, cause) == ("cache_effect", "launches")
    kind, cause, _ = classify(10e-6, f, ir_ok=True, candidate=True, level="fused")
    assert (kind, cause) == ("not_doing_the_work", "latency")


def test_cli_reports_latency():
    """What a user runs: ``solar bound FILE --json`` carries the latency block and the
    ``latency`` bottleneck (the table: test_chain_of_100_tiny_elementwise_kernels)."""
    from console import run_solar

    code, out, err = run_solar("bound", ROOT / "examples" / "chain_tiny_kernels.py", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["bounds"]["fused_bound_by"] == "latency"
    assert d["latency"]["launches"] == 100 and d["latency"]["launch_floor_s"] == LAUNCH
    assert d["kernels"][0]["latency_s"] == LAUNCH

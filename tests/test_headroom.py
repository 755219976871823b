"""Headroom, violations and their classification, and the profiler-event -> IR-kernel mapping.

Everything here runs on CPU: bounds are real (traced on meta tensors), measurements synthetic or
CPU-timed; the CUDA test skips without a GPU.
"""

import dataclasses
import json
import math
import types
from pathlib import Path

import pytest
import torch

import solar
from solar.cli import main
from solar.gpu.headroom import (
    SCHEMA,
    Floors,
    HeadroomReport,
    assess,
    build_report,
    classify,
)
from solar.gpu.headroom_batch import BATCH_SCHEMA, headroom_paths
from solar.gpu.measure import (
    DeviceInfo,
    KernelMapping,
    KernelMatch,
    OpEvent,
    Timing,
    _greedy_pairs,
    _lcs_pairs,
    events_from_profiler,
    map_kernels,
    map_reps,
    profiler_name,
    time_fn,
)
from solar.gpu.validate import OutputCheck, ValidationReport
from solar.hw import load_spec
from solar.report.measured import headroom_batch_table
from solar.report.plots import plot_headroom

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
H100 = load_spec("H100")
BW = H100.dram_bandwidth
N = 4 * 2**20  # 16 MiB of fp32


def timing(seconds: float, flushed: bool = True) -> Timing:
    return Timing.of([seconds] * 5, warmup=1, timer="cuda_events", flushed=flushed)


@pytest.fixture(scope="module")
def elementwise():
    """x * 2 + 1 on 16 MiB: two DRAM-bound kernels (mul reads the input, add the
    intermediate)."""
    return solar.bound(lambda x: x * 2 + 1, [torch.empty(N, device="meta")], hw=H100)


@pytest.fixture(scope="module")
def matmul():
    """A bf16 4096^3 product: compute-bound (tensor cores)."""
    a = torch.empty(4096, 4096, dtype=torch.bfloat16, device="meta")
    return solar.bound(lambda a, b: a @ b, [a, a.clone()], hw=H100)


def passed(name="p") -> ValidationReport:
    return ValidationReport(name, "cuda", "passed")


# ---------------------------------------------------------------------------- classification


def floors(**kw) -> Floors:
    base = dict(
        bound_s=10e-6,
        bound_by="dram",
        compute_s=1e-6,
        compute_unit="fma",
        floor_s=5e-6,
        bytes=32e6,
        cold_bytes=16e6,
        dram_bandwidth=BW,
        l2_bytes=50 * 2**20,
    )
    base.update(kw)
    return Floors(**base)


def test_classify_rules_in_order():
    f = floors()
    # 1. the measured code's outputs are wrong: whatever the numbers
    assert classify(9e-6, f, ir_ok=False, code_ok=False, candidate=True)[:2] == (
        "not_doing_the_work",
        "outputs",
    )
    # 2. the IR's outputs differ from the program's
    kind, cause, why = classify(9e-6, f, ir_ok=False, ir_reason="out0 rel err 0.3")
    assert (kind, cause) == ("bound_bug", "ir_mismatch") and "rel err 0.3" in why
    # 3. below the compute part: the source's own code -> our bug; a candidate -> cheating
    assert classify(0.5e-6, f, ir_ok=True)[:2] == ("bound_bug", "compute")
    kind, cause, why = classify(0.5e-6, f, ir_ok=True, code_ok=True, candidate=True)
    assert (kind, cause) == ("not_doing_the_work", "compute") and "lower precision" in why
    # 4. below the cache floor
    kind, cause, why = classify(3e-6, f, ir_ok=True)
    assert (kind, cause) == ("bound_bug", "bytes") and "footprint" in why
    kind, cause, why = classify(3e-6, f, ir_ok=True, code_ok=True, candidate=True)
    assert (kind, cause) == ("not_doing_the_work", "bytes") and "reading its inputs" in why
    # 5. between the floor and the bound: the L2 served what the level does not credit
    kind, cause, why = classify(7e-6, f, ir_ok=True, level="unfused")
    assert (kind, cause) == ("cache_effect", "l2") and "unfused level" in why
    # an unvalidated IR is said so
    assert "not validated" in classify(3e-6, f, ir_ok=None)[2]


# ---------------------------------------------------------------------------- assess (program)


def test_no_violation_and_headroom(elementwise):
    b = elementwise
    rep = build_report(b, H100, {"name": "fake"}, measured=timing(100e-6), mapping=None,
                       validation=passed())  # fmt: skip
    assert rep.violations == ()
    assert rep.levels["fused"] == pytest.approx(100e-6 / b.fused)
    assert rep.headroom["unfused"] == pytest.approx(100e-6 / b.unfused)
    assert set(rep.headroom) == {"unfused", "fused", "cache_aware", "kernels"}
    assert all(k.measured_s is None for k in rep.kernels)


def test_cache_effect_above_floor(elementwise):
    b = elementwise
    # fused bound: 16 MiB read + 16 MiB written; the floor credits the written 16 MiB (L2)
    assert b.fused == pytest.approx(2 * 4 * N / BW, rel=1e-6)
    m = 0.7 * b.fused  # above (read bytes) / BW = 0.5 * fused
    _, vs = assess(b, H100, measured=timing(m), validation=passed())
    by_level = {v.level: v for v in vs}
    assert set(by_level) == {"unfused", "fused", "cache_aware"}
    assert {v.kind for v in vs} == {"cache_effect"}
    v = by_level["fused"]
    assert v.evidence["floor_s"] == pytest.approx(4 * N / BW, rel=1e-6)
    assert v.evidence["cold_bytes"] == pytest.approx(4 * N)
    assert v.ratio == pytest.approx(0.7)


def test_below_floor_is_a_bound_bug_or_cheating(elementwise):
    b = elementwise
    m = 0.3 * b.fused  # faster than reading the input once
    _, vs = assess(b, H100, measured=timing(m), validation=passed())
    fused = next(v for v in vs if v.level == "fused")
    assert (fused.kind, fused.cause) == ("bound_bug", "bytes")
    assert fused.evidence["implied_bandwidth"] > BW
    ok = [OutputCheck("output0", (N,), "float32", 0.0, 0.0, 1e-4, True)]
    _, vs = assess(b, H100, measured=timing(m), validation=passed(), candidate=True,
                   candidate_check=ok)  # fmt: skip
    assert {(v.kind, v.cause) for v in vs} == {("not_doing_the_work", "bytes")}
    assert all(v.evidence["code_validation"] == "passed" for v in vs)


def test_unflushed_timing_credits_the_inputs_too(elementwise):
    b = elementwise
    m = 0.3 * b.fused
    _, vs = assess(b, H100, measured=timing(m, flushed=False), validation=passed())
    assert {v.kind for v in vs} == {"cache_effect"}  # 32 MiB fits the L2 twice over


def test_compute_violations(matmul):
    b = matmul
    assert b.fused_bound_by == "tensor"
    m = 0.8 * b.fused
    _, vs = assess(b, H100, measured=timing(m), validation=passed())
    assert {(v.kind, v.cause) for v in vs} == {("bound_bug", "compute")}
    v = next(v for v in vs if v.level == "fused")
    assert v.evidence["compute_unit"] == "tensor"
    assert v.evidence["compute_fraction_of_peak"] == pytest.approx(1 / 0.8)
    _, vs = assess(b, H100, measured=timing(m), validation=passed(), candidate=True)
    assert {v.kind for v in vs} == {"not_doing_the_work"}


def test_validation_failures_decide(matmul):
    b = matmul
    bad_ir = ValidationReport("p", "cuda", "failed", reason="1 of 1 outputs differ")
    _, vs = assess(b, H100, measured=timing(0.5 * b.fused), validation=bad_ir)
    assert {(v.kind, v.cause) for v in vs} == {("bound_bug", "ir_mismatch")}
    wrong = [OutputCheck("output0", (4096, 4096), "bfloat16", 0.9, 3.0, 2e-2, False, "rel")]
    _, vs = assess(b, H100, measured=timing(0.5 * b.fused), validation=bad_ir,
                   candidate=True, candidate_check=wrong)  # fmt: skip
    assert {(v.kind, v.cause) for v in vs} == {("not_doing_the_work", "outputs")}
    # a skipped validation is "not run", not a failure
    skipped = ValidationReport("p", "cuda", "skipped", reason="too large")
    _, vs = assess(b, H100, measured=timing(0.5 * b.fused), validation=skipped)
    assert {v.evidence["ir_validation"] for v in vs} == {"not run"}
    assert {v.cause for v in vs} == {"compute"}


# ---------------------------------------------------------------------------- assess (kernels)


def test_kernel_violations(elementwise):
    b = elementwise
    assert [k.name for k in b.kernels] == ["mul_0", "add_1"]
    kb = [k.time_s for k in b.kernels]
    mapping = KernelMapping(
        matches=[
            KernelMatch([0], "aten::mul", 0.3 * kb[0], ["mul_kernel"]),  # below its cold read
            KernelMatch([1], "aten::add", 0.6 * kb[1], ["add_kernel"]),  # input left in the L2
        ],
        unmatched_ir=[],
        unmatched_device=[],
        total_device_s=0.9 * kb[0],
    )
    rows, vs = assess(b, H100, measured=timing(1.0), mapping=mapping, validation=passed())
    assert [r.measured_s for r in rows] == pytest.approx([0.3 * kb[0], 0.6 * kb[1]])
    assert rows[0].headroom == pytest.approx(0.3) and rows[0].device_kernels == ("mul_kernel",)
    assert rows[0].cold_bytes == pytest.approx(4 * N) and rows[1].cold_bytes == 0
    kv = {v.name: v for v in vs if v.scope == "kernel"}
    assert (kv["mul_0"].kind, kv["mul_0"].cause) == ("bound_bug", "bytes")
    assert (kv["add_1"].kind, kv["add_1"].cause) == ("cache_effect", "l2")
    assert not [v for v in vs if v.scope == "program"]


def test_grouped_kernels_share_one_measurement(elementwise):
    b = elementwise
    mapping = KernelMapping([KernelMatch([0, 1], "aten::foo", 1.0, ["k"])], [], [], 1.0)
    rows, _ = assess(b, H100, measured=None, mapping=mapping)
    assert len(rows) == 1 and rows[0].name == "mul_0+add_1"
    assert rows[0].bound_s == pytest.approx(b.unfused)


def test_report_json_schema(elementwise):
    rep = build_report(elementwise, H100, DeviceInfo("NVIDIA H100 80GB HBM3", "cuda"),
                       measured=timing(0.7 * elementwise.fused), mapping=None,
                       validation=passed())  # fmt: skip
    d = json.loads(rep.to_json())
    assert d["schema"] == SCHEMA
    for key in ("program", "hw", "device", "measured", "bounds", "headroom", "kernels",
                "violations", "validation", "mapping", "notes", "errors", "seconds"):  # fmt: skip
        assert key in d
    assert d["device"]["name"] == "NVIDIA H100 80GB HBM3"
    assert d["bounds"]["fused_s"] == pytest.approx(elementwise.fused)
    assert {"scope", "name", "level", "kind", "cause", "reason", "measured_s", "bound_s",
            "ratio", "evidence"} <= set(d["violations"][0])  # fmt: skip
    assert isinstance(repr(rep), str) and "cache_effect" in str(rep)


# ---------------------------------------------------------------------------- mapping


def test_profiler_names():
    assert profiler_name("aten.addmm.default") == "aten::addmm"
    assert profiler_name("aten.add_.Tensor") == "aten::add_"
    assert profiler_name("aten::mm") == "aten::mm"
    assert profiler_name("solar.sdpa.default") == "aten::scaled_dot_product_attention"
    assert profiler_name("solar.lstm.default") == "aten::lstm"


class Ev:
    """Builds an OpEvent list: ``add(name, parent, kernels)`` -> index."""

    def __init__(self):
        self.events: list[OpEvent] = []

    def add(self, name, parent=None, kernels=(), t=None):
        t = float(len(self.events)) if t is None else t
        self.events.append(OpEvent(name, t, t + 0.5, parent, list(kernels)))
        return len(self.events) - 1


def linear_rep(ev: Ev, root: int, us: float = 1.0) -> None:
    """aten::linear > aten::t > aten::transpose; aten::addmm > aten::copy_ (bias) + gemm."""
    lin = ev.add("aten::linear", root)
    t = ev.add("aten::t", lin)
    ev.add("aten::transpose", t)
    mm = ev.add("aten::addmm", lin, [("sm90_gemm", 10 * us * 1e-6)])
    ev.add("aten::copy_", mm, [("bias_copy", us * 1e-6)])


def test_map_nested_owner_and_unmatched():
    ev = Ev()
    root = ev.add("solar::rep0")
    linear_rep(ev, root)
    ev.add("aten::relu", root, [("relu_kernel", 2e-6)])
    ev.add("aten::fill_", root, [("fill_kernel", 3e-6)])  # device work the IR does not model
    linear_rep(ev, root, us=2.0)
    ev.add("aten::zero_", None, [("flush", 9.0)])  # outside the repetition: ignored
    ops = ["aten.addmm.default", "aten.relu.default", "aten.addmm.default", "aten.sum.default"]
    m = map_kernels(ops, ev.events, root)
    assert [(x.ir, x.op) for x in m.matches] == [
        ([0], "aten::addmm"),
        ([1], "aten::relu"),
        ([2], "aten::addmm"),
    ]
    assert m.matches[0].seconds == pytest.approx(11e-6)  # gemm + the bias copy inside addmm
    assert m.matches[0].device_kernels == ["sm90_gemm", "bias_copy"]
    assert m.matches[2].seconds == pytest.approx(22e-6)
    assert m.unmatched_ir == [3]
    assert m.unmatched_device == [("aten::fill_", pytest.approx(3e-6), ["fill_kernel"])]
    assert m.total_device_s == pytest.approx(11e-6 + 2e-6 + 3e-6 + 22e-6)
    assert m.seconds_of() == {0: pytest.approx(11e-6), 1: pytest.approx(2e-6),
                              2: pytest.approx(22e-6)}  # fmt: skip
    d = m.to_dict(["a", "b", "c", "d"])
    assert d["unmatched_ir"] == ["d"] and d["matched"][1]["kernels"] == ["b"]


def test_map_aliases_and_one_call_several_kernels():
    ev = Ev()
    root = ev.add("solar::rep0")
    sd = ev.add("aten::scaled_dot_product_attention", root)
    fl = ev.add("aten::_scaled_dot_product_flash_attention", sd)
    ev.add("aten::_flash_attention_forward", fl, [("flash_fwd", 5e-6)])
    ls = ev.add("aten::lstm", root)
    ev.add("aten::_cudnn_rnn", ls, [("gemm", 1e-6), ("lstm_cell", 2e-6), ("gemm", 1e-6)])
    ops = ["solar.sdpa.default", "solar.lstm.default", "solar.lstm.default"]
    m = map_kernels(ops, ev.events, root)
    assert [x.ir for x in m.matches] == [[0], [1, 2]]
    assert m.matches[1].seconds == pytest.approx(4e-6)
    assert m.unmatched_ir == [] and m.unmatched_device == []


def test_map_backward_on_the_autograd_thread():
    """A training step's backward runs on the autograd engine's device thread: its operators
    hang under no repetition range, only inside its time span; later ones stay outside."""
    ev = Ev()
    root = ev.add("solar::rep0", t=0.0)
    ev.events[root].end_us = 100.0
    ev.add("aten::mm", root, [("fwd_gemm", 1e-6)], t=1.0)
    top = ev.add("autograd::engine::evaluate_function: MmBackward0", None, t=10.0)
    grad = ev.add("MmBackward0", top, t=10.1)
    ev.add("aten::mm", grad, [("bwd_gemm", 2e-6)], t=10.2)
    ev.add("aten::zero_", None, [("flush", 9.0)], t=200.0)  # after the repetition: ignored
    m = map_kernels(["aten.mm.default", "aten.mm.default"], ev.events, root)
    assert [(x.ir, x.seconds) for x in m.matches] == [([0], 1e-6), ([1], 2e-6)]
    assert m.total_device_s == pytest.approx(3e-6) and m.unmatched_device == []


def test_map_attention_backward_under_any_backend():
    """``solar.sdpa_backward`` is whichever attention backward eager picked at run time."""
    ev = Ev()
    root = ev.add("solar::rep0")
    eff = ev.add("aten::_scaled_dot_product_efficient_attention_backward", root)
    ev.add("aten::_efficient_attention_backward", eff, [("fmha_bwd", 4e-6)])
    m = map_kernels(["solar.sdpa_backward.default"], ev.events, root)
    assert [(x.ir, x.seconds) for x in m.matches] == [([0], 4e-6)]


def test_map_reps_takes_the_median():
    ev = Ev()
    for i, us in enumerate((1.0, 3.0, 2.0)):
        root = ev.add(f"solar::rep{i}")
        linear_rep(ev, root, us=us)
    m = map_reps(["aten.addmm.default"], ev.events)
    assert m.reps == 3 and m.matches[0].seconds == pytest.approx(22e-6)


def test_map_without_root_and_with_a_missing_op():
    ev = Ev()
    ev.add("aten::mul", None, [("k1", 1e-6)])
    ev.add("aten::add", None, [("k2", 1e-6)])
    ev.add("aten::mul", None, [("k3", 1e-6)])
    m = map_kernels(["aten.mul.Tensor", "aten.div.Tensor", "aten.mul.Tensor"], ev.events)
    assert [x.ir for x in m.matches] == [[0], [2]]
    assert m.unmatched_ir == [1] and m.unmatched_device[0][0] == "aten::add"


def test_lcs_exact_and_greedy_agree_on_near_identical_sequences():
    a = ["mm", "add", "relu", "mm", "add", "softmax"] * 50
    b = list(a)
    del b[7]
    b.insert(100, "fill_")
    exact = _lcs_pairs(a, b)
    assert len(exact) == len(a) - 1
    assert all(a[i] == b[j] for i, j in exact)
    assert [i for i, _ in exact] == sorted(i for i, _ in exact)
    greedy = _greedy_pairs(a, b)
    assert len(greedy) == len(exact) and all(a[i] == b[j] for i, j in greedy)


def test_events_from_profiler_objects():
    def fe(name, parent=None, kernels=(), start=0.0, self_us=1.0):
        return types.SimpleNamespace(
            name=name,
            device_type="DeviceType.CPU",
            is_async=False,
            time_range=types.SimpleNamespace(start=start, end=start + 1.0),
            cpu_parent=parent,
            kernels=[types.SimpleNamespace(name=k, duration=d) for k, d in kernels],
            self_cpu_time_total=self_us,
        )

    root = fe("solar::rep0", kernels=[("solar::rep0", 99.0)])  # the device mirror: dropped
    mm = fe("aten::mm", root, [("gemm", 7.0)], start=1.0)
    gpu = types.SimpleNamespace(name="gemm", device_type="DeviceType.CUDA", is_async=False)
    evs = events_from_profiler([root, mm, gpu], device_kind="cuda")
    assert [e.name for e in evs] == ["solar::rep0", "aten::mm"]
    assert evs[0].kernels == [] and evs[1].kernels == [("gemm", pytest.approx(7e-6))]
    assert evs[1].parent == 0
    cpu = events_from_profiler([root, mm], device_kind="cpu")
    assert cpu[0].kernels == [] and cpu[1].kernels == [("aten::mm", pytest.approx(1e-6))]
    m = map_reps(["aten.mm.default"], evs)
    assert m.matches[0].seconds == pytest.approx(7e-6)


# ---------------------------------------------------------------------------- timing


def test_time_fn_host_adaptive():
    calls = []
    t = time_fn(lambda: calls.append(1), device="cpu", budget_s=0.01, warmup=2, max_reps=50)
    assert t.timer == "host" and not t.flushed
    assert 5 <= t.reps <= 50 and len(calls) == 2 + 1 + t.reps
    assert t.min_s <= t.median_s <= t.max_s and t.q25_s <= t.q75_s
    t = time_fn(lambda: None, device="cpu", reps=3)
    assert t.reps == 3 and len(t.to_dict(times=True)["times_s"]) == 3
    with pytest.raises(ValueError):
        time_fn(lambda: None, device="cpu", timer="cuda_events")


def test_timing_of():
    t = Timing.of([3.0, 1.0, 2.0, 4.0], warmup=1, timer="host", flushed=False)
    assert t.median_s == 2.5 and t.min_s == 1.0 and t.max_s == 4.0 and t.reps == 4
    assert t.spread == pytest.approx((t.q75_s - t.q25_s) / 2.5)


# ---------------------------------------------------------------------------- end to end (CPU)


def small_mlp():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16))
    return m, torch.randn(8, 32)


def test_headroom_on_cpu_maps_every_kernel():
    m, x = small_mlp()
    r = solar.headroom(m, (x,), hw="H100", budget_s=0.02)
    assert isinstance(r, HeadroomReport)
    assert r.measured is not None and r.measured.timer == "host"
    assert r.validation is not None and r.validation.ok
    assert [k.name for k in r.kernels] == ["addmm_0", "relu_1", "addmm_2"]
    assert all(k.measured_s is not None and k.measured_s > 0 for k in r.kernels)
    assert r.mapping["unmatched_ir"] == []
    assert r.violations == ()  # a CPU is far slower than an H100's bounds
    assert all(h > 1 for h in r.headroom["kernels"].values())
    assert json.loads(r.to_json())["schema"] == SCHEMA


def test_candidate_on_cpu():
    m, x = small_mlp()
    good = solar.headroom(m, (x,), hw="H100", budget_s=0.02, candidate=lambda x: m(x))
    assert good.candidate and all(c.ok for c in good.candidate_check)
    assert good.baseline is not None and good.score is not None and good.score > 0
    assert good.mapping is None  # per-kernel mapping is for the source program
    bad = solar.headroom(m, (x,), hw="H100", budget_s=0.02, candidate=lambda x: 2 * m(x))
    assert not all(c.ok for c in bad.candidate_check)


def test_headroom_auto_needs_a_gpu():
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    m, x = small_mlp()
    with pytest.raises(solar.hw.SpecError, match="needs a visible CUDA GPU"):
        solar.headroom(m, (x,), hw="auto")


def test_batch_on_cpu(tmp_path):
    for name in ("mlp.py", "elementwise.py"):
        (tmp_path / name).write_text((EX / name).read_text())
    (tmp_path / "no_model.py").write_text("x = 1\n")
    (tmp_path / "untraceable.py").write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.special.zeta(x, 2.0)\n"
        "def get_inputs():\n"
        "    return [torch.randn(16)]\n"
    )
    seen = []
    batch = headroom_paths(
        [tmp_path],
        "H100",
        device="cpu",
        overrides={"TOKENS": 8, "WIDTH": 16, "BATCH": 4},
        budget_s=0.02,
        show_progress=False,
        on_entry=seen.append,
    )
    st = {e.name: (e.status, e.stage) for e in batch.entries}
    assert st == {
        "elementwise": ("ok", None),
        "mlp": ("ok", None),
        "no_model": ("error", "load"),
        "untraceable": ("error", "trace"),
    }
    assert len(seen) == 4
    untraceable = next(e for e in batch.entries if e.name == "untraceable")
    assert untraceable.measured is not None  # the source was still timed
    d = json.loads(batch.to_json())
    assert d["schema"] == BATCH_SCHEMA and d["summary"]["programs"] == 4
    assert d["summary"]["ok"] == 2 and d["summary"]["validation"] == {"passed": 2}
    assert "mlp" in headroom_batch_table(batch) and "geomean headroom" in str(batch)
    skipped = headroom_paths([tmp_path], "H100", device="cpu", budget_total_s=0.0,
                             show_progress=False)  # fmt: skip
    assert {e.status for e in skipped.entries} == {"skipped"}


def test_plots(tmp_path, elementwise):
    pytest.importorskip("matplotlib")
    reps = [
        build_report(elementwise, H100, {}, measured=timing(s), mapping=None, validation=None)
        for s in (1e-3, 0.7 * elementwise.fused)
    ]
    reps[1] = dataclasses.replace(reps[1], program="fast")
    plot_headroom(reps, tmp_path / "batch.png")
    assert (tmp_path / "batch.png").stat().st_size > 1000
    plot_headroom([json.loads(r.to_json()) for r in reps], tmp_path / "dicts.png")
    assert (tmp_path / "dicts.png").exists()
    m, x = small_mlp()
    r = solar.headroom(m, (x,), hw="H100", budget_s=0.02)
    r.plot(tmp_path / "kernels.png")
    assert (tmp_path / "kernels.png").exists()


def test_cli_headroom(capsys, tmp_path):
    out = tmp_path / "r.json"
    argv = ["headroom", str(EX / "mlp.py"), "--hw", "H100", "--device", "cpu", "--set",
            "TOKENS=8", "--set", "WIDTH=16", "--budget-s", "0.02", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    assert "per kernel" in capsys.readouterr().out
    d = json.loads(out.read_text())
    assert d["schema"] == SCHEMA and d["validation"]["status"] == "passed"
    assert math.isfinite(d["headroom"]["fused"])


# ---------------------------------------------------------------------------- CUDA


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_matmul_on_cuda():
    from solar.gpu.headroom_batch import headroom_problem

    e = headroom_problem(EX / "matmul.py", "auto", device="cuda", budget_s=0.3)
    assert e.status == "ok", e.error
    r = e.report
    assert r.validation.ok and r.measured.timer == "cuda_events" and r.measured.flushed
    assert r.mapping["unmatched_ir"] == []
    bad = [v for v in r.violations if v.kind != "cache_effect"]
    assert not bad, [v.reason for v in bad]

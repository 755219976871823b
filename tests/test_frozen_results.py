"""Results as frozen data (issue 23, items 2, 7, 8): a Bound holds what its views need and no
graph, IR or spec object; ``Bound.from_json(b.to_json())`` renders every view identically;
``solar.bound`` answers one type; the framework is told by types or by ``framework=``."""

from __future__ import annotations

import dataclasses
import gc
import json
import pickle
import weakref

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import solar
from solar.backend.assumptions import Assumption
from solar.backend.cache_aware import CacheAwareModel
from solar.backend.parallel.parallel_bound import ParallelBound
from solar.backend.result import Bound, KernelRow
from solar.backend.units import SFU_EMULATION_FLOPS
from solar.frozen import FrozenDict
from solar.questions.compare import Comparison, compare_graph
from solar.questions.provision import provision_bound, provision_graph


def _training_step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32))
    opt = torch.optim.AdamW(model.parameters())

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, (torch.randn(16, 64), torch.randn(16, 32))


class CausalAttention(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _attention():
    q = torch.empty(2, 8, 1024, 64, dtype=torch.bfloat16, device="meta")
    return CausalAttention(), (q, q.clone(), q.clone())


def _jax_function():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def f(w, x):
        return jnp.tanh(x @ w).sum(axis=0)

    return f, (
        jax.ShapeDtypeStruct((256, 512), jnp.float32),
        jax.ShapeDtypeStruct((128, 256), jnp.float32),
    )


PROGRAMS = {"training step": _training_step, "causal attention": _attention, "jax": _jax_function}


@pytest.fixture(scope="module", params=list(PROGRAMS))
def bound_and_loaded(request):
    model, inputs = PROGRAMS[request.param]()
    b = solar.bound(model, inputs, hw="H100")
    return b, Bound.from_json(b.to_json())


def test_loaded_bound_renders_every_view_identically(bound_and_loaded):
    b, loaded = bound_and_loaded
    assert loaded.to_json() == b.to_json()
    assert str(loaded) == str(b)  # the text table: per kernel, the levels, the assumptions
    assert loaded._repr_html_() == b._repr_html_()
    assert loaded.kernels == b.kernels and loaded.latency == b.latency
    assert loaded.assumptions == b.assumptions
    pytest.importorskip("pandas")
    for by in ("kernel", "level", "phase"):
        assert loaded.to_dataframe(by).equals(b.to_dataframe(by))


def test_loaded_bound_draws_the_same_plots(bound_and_loaded):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    b, loaded = bound_and_loaded
    kinds = ["roofline", "capacity", "kernels"] + (["phases"] if b.phases else [])
    for kind in kinds:
        mine, theirs = b.plot(kind).axes[0], loaded.plot(kind).axes[0]
        assert [t.get_text() for t in mine.texts] == [t.get_text() for t in theirs.texts]
        for m, t in zip(mine.lines, theirs.lines, strict=True):
            assert list(m.get_ydata()) == list(t.get_ydata())
        assert [p.get_width() for p in mine.patches] == [p.get_width() for p in theirs.patches]


def test_bound_keeps_no_graph_ir_or_spec(bound_and_loaded):
    b, _ = bound_and_loaded
    for name in ("graph", "ir", "spec"):
        assert not hasattr(b, name)
    json.dumps(b.to_dict())  # plain data all the way down


def test_the_graph_is_freed_once_the_bound_is_made():
    program, g = solar.trace_and_lift(*_attention())
    b = solar.api.bound_graph(g, "H100")
    ref = weakref.ref(g)
    del g, program
    gc.collect()
    assert ref() is None
    assert b.cache_aware > 0


def test_cache_model_round_trip_gives_the_curve_at_any_capacity():
    """The stored items of causal attention give the same DRAM bytes as the graph's model, at
    capacities the analysis never evaluated."""
    _, g = solar.trace_and_lift(*_attention())
    b = solar.api.bound_graph(g, "H100")
    model = CacheAwareModel(g)
    loaded = Bound.from_json(b.to_json()).cache_model
    assert loaded == model and loaded.items  # QKᵀ and PV of the attention
    assert loaded.curve() == model.curve()
    for cap in (1e3, 3.3e5, 7.77e7, 1e12):
        assert loaded.bytes(cap) == model.bytes(cap)
    assert b.cache_aware_bytes(b.hardware().on_chip_capacity) == b.bytes_cache_aware


def test_provision_on_a_loaded_bound_equals_the_original():
    model, inputs = _attention()
    _, g = solar.trace_and_lift(model, inputs)
    b = solar.api.bound_graph(g, "H100")
    loaded = Bound.from_json(b.to_json())
    for level in ("cache_aware", "fused", "unfused"):
        mine = provision_bound(b, target_s=1e-4, level=level)
        theirs = provision_bound(loaded, target_s=1e-4, level=level)
        assert theirs.to_json() == mine.to_json() and str(theirs) == str(mine)
        for cap in (1e6, 5e7):
            assert theirs.bandwidth_needed(cap) == mine.bandwidth_needed(cap)
    # the graph's provision has the same compute needs and region (and the catalogue on top)
    full = provision_graph(g, target_s=1e-4, catalog=["A100", "H100"], max_gpus=1)
    part = provision_bound(loaded, target_s=1e-4)
    assert full.region == part.region and full.peaks == part.peaks
    assert full.compute_scale == part.compute_scale
    assert [c.key for c in full.catalog] == ["a100_sxm_80gb", "h100_sxm"]


def test_comparison_of_loaded_bounds_renders_identically():
    _, g = solar.trace_and_lift(*_attention())
    c = compare_graph(g, ["A100", "H100"])
    loaded = Comparison(c.program, [Bound.from_json(b.to_json()) for b in c.bounds], c.errors)
    assert str(loaded) == str(c) and loaded.to_json() == c.to_json()
    assert loaded._repr_html_() == c._repr_html_()


def test_assumptions_are_records_rendered_from_their_numbers():
    b = solar.bound(*_attention(), hw="H100")
    (sfu,) = [a for a in b.assumption_records if a.kind == "sfu_emulation"]
    assert sfu.values == {"flops": SFU_EMULATION_FLOPS}
    assert f"at {SFU_EMULATION_FLOPS} flops per op" in sfu.text
    assert "at 16 flops per op" in Assumption("sfu_emulation", {"flops": 16}).text
    (dram,) = [a for a in b.assumption_records if a.kind == "dram"]
    assert dram.values["bandwidth"] == b.hardware().dram_bandwidth
    assert dram.text == "DRAM bandwidth 3.35 TB/s (datasheet peak)"
    assert b.assumptions == [a.text for a in b.assumption_records]
    assert tuple(Assumption.from_dict(a.to_dict()) for a in b.assumption_records) == (
        b.assumption_records
    )


def test_kernel_rows_are_built_from_keywords():
    with pytest.raises(TypeError):
        KernelRow("k", "op", "", "", {}, 0, 0, 0.0, 0.0, 0.0, "dram", True)  # noqa


def test_bound_answers_one_gpu_and_names_plan_for_several():
    x = torch.empty(256, 256, device="meta")
    with pytest.raises(TypeError, match=r"bound\(\) bounds one GPU; for gpus= use solar\.plan"):
        solar.bound(lambda a: a @ a, [x], gpus=2)
    with pytest.raises(TypeError, match="for gpus=, tp= use solar.plan"):
        solar.bound(lambda a: a @ a, [x], gpus=2, tp=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        solar.bound(lambda a: a @ a, [x], colour="red")
    assert isinstance(solar.bound(lambda a: a @ a, [x], gpus=1), Bound)
    model = nn.Linear(4096, 4096, device="meta", dtype=torch.bfloat16)
    pb = solar.plan(model, [torch.empty(64, 4096, device="meta", dtype=torch.bfloat16)],
                    gpus=2, tp=2)  # fmt: skip
    assert isinstance(pb, ParallelBound) and pb.plan.tp == 2


def test_framework_from_types_or_the_keyword():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def f(x):
        return jnp.sin(x) * 2

    x = np.ones((64, 64), np.float32)
    with pytest.raises(TypeError, match="numpy array .*, or framework='jax' for a JAX function"):
        solar.bound(f, [x])  # numpy alone says no framework
    with pytest.raises(TypeError, match="pass framework='torch' or framework='jax'"):
        solar.trace(lambda: jnp.ones(3), [])  # nothing at all says one
    b = solar.bound(f, [x], framework="jax")
    assert b.flops == solar.bound(f, [jnp.asarray(x)]).flops
    with pytest.raises(ValueError, match="framework must be one of torch, jax"):
        solar.bound(f, [x], framework="tensorflow")
    # torch and JAX values together: say which
    with pytest.raises(TypeError, match="both PyTorch and JAX values"):
        solar.trace(f, [jnp.asarray(x), torch.ones(2)])


def test_training_step_without_tensor_arguments_needs_framework_torch():
    """A step that reaches its model, optimizer and batch through its closure has no value
    whose type names a framework: ``framework="torch"`` says it."""
    step, (x, y) = _training_step()

    def closed():
        return step(x, y)

    with pytest.raises(TypeError, match="framework="):
        solar.bound(closed, ())
    b = solar.bound(closed, (), framework="torch")
    assert [p.phase for p in b.phases] == ["forward", "backward", "optimizer"]


def test_a_file_of_the_first_schema_still_loads():
    """``solar.bound/1`` files written before the added fields load; their text is the same
    (it needs none of them) and what needs them says so in one line."""
    b = solar.bound(*_attention(), hw="H100")
    d = b.to_dict()
    for key in ("assumption_records", "gpu", "rates_used", "cache_aware_model"):
        del d[key]
    old = Bound.from_dict(d)
    assert str(old) == str(b)
    assert old.hardware() == b.hardware()  # the catalogue's spec of hw_key
    with pytest.raises(ValueError, match="has no cache-aware model"):
        old.cache_aware_bytes(1e6)
    with pytest.raises(ValueError, match="not a solar.bound/1 object"):
        Bound.from_dict({**d, "schema": "solar.compare/1"})


# ---------------------------------------------------------------------------------------------
# Frozen results: no result changes under the code holding it (issue: "results can change
# under the user"); JSON and equality as before


def test_frozen_dict_refuses_changes_and_reads_as_the_dict():
    from solar.frozen import FrozenList, freeze, thaw

    plain = {"a": 1, "b": {"c": [1, 2]}}
    f = freeze(plain)
    assert type(f) is FrozenDict and type(f["b"]) is FrozenDict
    assert type(f["b"]["c"]) is FrozenList and f["b"]["c"] == [1, 2]
    assert f == plain and thaw(f) == plain and type(thaw(f)["b"]["c"]) is list
    assert json.dumps(f, indent=2) == json.dumps(plain, indent=2)
    changes = [
        lambda: f.__setitem__("a", 2),
        lambda: f.__delitem__("a"),
        lambda: f.update(a=2),
        lambda: f.pop("a"),
        lambda: f.popitem(),
        lambda: f.setdefault("z", 0),
        lambda: f.clear(),
        lambda: f["b"].__setitem__("c", 0),
        lambda: f["b"]["c"].append(3),
        lambda: f["b"]["c"].__setitem__(0, 3),
        lambda: f["b"]["c"].sort(),
    ]
    for change in changes:
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert thaw(f) == plain
    back = pickle.loads(pickle.dumps(f))
    assert type(back) is FrozenDict and back == f and type(back["b"]["c"]) is FrozenList
    assert {f: 1}[freeze(plain)] == 1  # hashable, by value
    assert f | {"z": 3} == {**f, "z": 3}  # a new (plain) dict; f unchanged
    assert "z" not in f


def _assert_frozen(result, want: frozenset = frozenset({"mapping", "sequence"})) -> None:
    """Every field refuses assignment; mappings and sequences refuse item assignment (``want``:
    the kinds of container the result has, each checked)."""
    kinds = set()
    for fld in dataclasses.fields(result):
        value = getattr(result, fld.name)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(result, fld.name, value)
        if fld.name.startswith("_"):
            continue  # a private memo cache (outside equality)
        assert not isinstance(value, (list, set)), fld.name
        if isinstance(value, dict):
            assert isinstance(value, FrozenDict), fld.name
            with pytest.raises(TypeError):
                value["new key"] = 1
            kinds.add("mapping")
        if isinstance(value, tuple) and value:
            with pytest.raises(TypeError):
                value[0] = value[0]  # type: ignore[index]
            kinds.add("sequence")
    assert kinds == want, type(result).__name__


_BOTH = frozenset({"mapping", "sequence"})


def _mlp():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256))
    return model, [torch.randn(64, 256)]


def test_every_result_class_is_frozen():
    from solar.api import bound_parallel
    from solar.gpu.calibrate import Calibration, Measurement
    from solar.gpu.headroom import HeadroomReport
    from solar.gpu.headroom_batch import BatchReport
    from solar.gpu.measure import DeviceInfo
    from solar.gpu.validate import ValidationReport
    from solar.hw import load_spec
    from solar.questions.batch import BatchResult
    from solar.questions.sweep import sweep

    model, inputs = _mlp()
    _, g = solar.trace_and_lift(model, inputs)
    b = solar.api.bound_graph(g, "H100")
    results = [
        b,
        b.kernels[0],
        bound_parallel(g, "H100", 2, tp=2, single=b),
        compare_graph(g, ["A100", "H100"]),
        provision_bound(b, target_s=1e-4),
        sweep(model, lambda n: [torch.randn(n, 256)], [8, 16], hw="H100", symbolic=False),
        BatchResult("p.py", "p", "ok", 1.0, {"totals": {"flops": {"fma": 3}}}, None),
        ValidationReport("p", "cpu", "passed", notes=["n"], seconds={"ir": 0.5}),
        HeadroomReport(
            "p",
            "H100",
            "h100_sxm",
            {"name": "x"},
            None,
            {"fused": 1.0},
            {"fused": "dram"},
            [],
            [],
            notes=["n"],
        ),  # fmt: skip
        BatchReport("H100", "h100_sxm", {"name": "x"}, [], 1.0, ["n"]),
        Calibration(
            DeviceInfo("cpu", "cpu"),
            load_spec("H100"),
            "given",
            [Measurement("dram_bandwidth", 3e12, 3.35e12, "copy")],
            date="2026-12-05",
        ),  # fmt: skip
    ]
    for r in results:
        if isinstance(r, (KernelRow, ParallelBound, Calibration)):
            # KernelRow: one mapping (flops), no sequence; ParallelBound: its stages' path_s;
            # Calibration: results only (its device and spec are their own frozen records)
            for fld in dataclasses.fields(r):
                with pytest.raises(dataclasses.FrozenInstanceError):
                    setattr(r, fld.name, getattr(r, fld.name))
            continue
        _assert_frozen(r, frozenset({"mapping"}) if isinstance(r, BatchResult) else _BOTH)
    p = results[2]
    assert isinstance(p.stages, tuple) and isinstance(p.stages[0].path_s, FrozenDict)
    with pytest.raises(TypeError):
        p.collectives[0]["kind"] = "x"
    with pytest.raises(TypeError):
        p.tp_groups[0]["kernels"].append("x")
    assert isinstance(results[1].flops, FrozenDict) and isinstance(results[-1].results, tuple)
    for r in results:  # pickles equal; JSON the same text
        back = pickle.loads(pickle.dumps(r))
        assert back == r
        if hasattr(r, "to_json"):
            assert back.to_json() == r.to_json()


def test_bound_json_round_trip_is_frozen_and_byte_identical():
    model, inputs = _mlp()
    b = solar.bound(model, inputs, hw="H100")
    text = b.to_json()
    back = Bound.from_json(text)
    assert back == b and back.to_json() == text
    _assert_frozen(back)
    # the text is json.dumps of plain data: a thawed dict writes the same bytes
    from solar.frozen import thaw

    assert json.dumps(thaw(back.to_dict()), indent=2) == text
    changed = dataclasses.replace(b, program="other")  # how a changed result is made
    assert changed.program == "other" and b.program != "other" and changed.kernels == b.kernels


def test_a_draft_fills_a_frozen_result_in_steps():
    from solar.frozen import Draft
    from solar.gpu.validate import ValidationReport

    d = Draft(ValidationReport, "p", "cpu", "error")
    d.notes.append("first")
    d.seconds["ir"] = 0.25
    assert not d.ok  # a property: read off a result built for it
    d.status = "passed"
    r = d.build()
    assert r.ok and r.notes == ("first",) and r.seconds == {"ir": 0.25}
    d.notes.append("later")
    assert r.notes == ("first",)  # the built result does not follow its draft
    with pytest.raises(AttributeError, match="no field"):
        d.statuss = "x"


def test_symbolic_bound_json_keeps_formulas_regions_and_pieces():
    from solar.algebra.size import symbol
    from solar.symbolic.analysis import OutsideRegionError
    from solar.symbolic.symbolic_bound import QUANTITIES, SymbolicBound

    lin = nn.Linear(64, 32)
    b = solar.bound(lin, [torch.randn(8, 64)], hw="H100", symbolic={"rows": [(0, 0)]})
    assert isinstance(b, SymbolicBound)
    lo, hi = b.piece_region.interval(symbol("rows"), {symbol("rows"): 8}, hi=1 << 20)
    b.at(rows=hi + 1)  # another piece, recorded
    assert len(b.pieces) == 2
    text = b.to_json()
    back = SymbolicBound.from_json(text)
    assert back == b and back.to_json() == text
    for q in QUANTITIES:
        assert back.formula(q) == b.formula(q)
    assert back.flops_formula() == b.flops_formula()
    assert back.counts_region == b.counts_region and back.piece_region == b.piece_region
    assert [p.region for p in back.pieces] == [p.region for p in b.pieces]
    for n in {lo, (lo + hi) // 2, hi, hi + 1}:  # inside the pieces written: the same numbers
        assert back.at(rows=n).to_json() == b.at(rows=n).to_json()
    assert back.at(rows=hi).flops == {k: 2 * hi * 64 * 32 for k in b.flops}
    _, top = b.pieces[1].region.interval(symbol("rows"), {symbol("rows"): hi + 1}, hi=1 << 40)
    with pytest.raises(OutsideRegionError, match="none of the pieces"):
        back.at(rows=top + 1)  # no graph kept to analyse a new piece
    assert b.at(rows=top + 1).fused > 0  # the original analyses it (a third piece)
    with pytest.raises(TypeError):
        back.sizes["rows"] = 9
    with pytest.raises(dataclasses.FrozenInstanceError):
        back.piece_region = None


def test_the_records_inside_device_reports_are_frozen():
    from solar.gpu.calibrate import Measurement
    from solar.gpu.validate import KernelCheck
    from solar.gpu.violations import Violation

    v = Violation("program", "p", "fused", 1.0, 2.0, "bound_bug", "bytes", "r", {"x": [1]})
    k = KernelCheck("k", "aten.mul", [])
    m = Measurement("dram_bandwidth", 3e12, 3.35e12, "copy")
    for record, name in ((v, "kind"), (k, "kernel"), (m, "value")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, name, getattr(record, name))
    assert isinstance(v.evidence, FrozenDict) and v.evidence == {"x": [1]}
    with pytest.raises(TypeError):
        v.evidence["x"].append(2)
    assert k.tensors == () and k.ok

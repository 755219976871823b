"""Results as frozen data (issue 23, items 2, 7, 8): a Bound holds what its views need and no
graph, IR or spec object; ``Bound.from_json(b.to_json())`` renders every view identically;
``solar.bound`` answers one type; the framework is told by types or by ``framework=``."""

from __future__ import annotations

import gc
import json
import weakref

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import solar
from solar.backend.assumptions import Assumption
from solar.backend.cache_aware import CacheAwareModel
from solar.backend.parallel.result import ParallelBound
from solar.backend.result import Bound, KernelRow
from solar.backend.units import SFU_EMULATION_FLOPS
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
    program, g = solar.trace_and_lift(*_attention())
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
    program, g = solar.trace_and_lift(model, inputs)
    b = solar.api.bound_graph(g, "H100")
    loaded = Bound.from_json(b.to_json())
    for level in ("cache_aware", "fused", "unfused"):
        mine = provision_bound(b, target_s=1e-4, level=level)
        theirs = provision_bound(loaded, target_s=1e-4, level=level)
        assert theirs.to_json() == mine.to_json() and str(theirs) == str(mine)
        for cap in (1e6, 5e7):
            assert theirs.bandwidth_needed(cap) == mine.bandwidth_needed(cap)
    # the graph's provision has the same compute needs and region (and the catalogue on top)
    full = provision_graph(program, g, target_s=1e-4, catalog=["A100", "H100"], max_gpus=1)
    part = provision_bound(loaded, target_s=1e-4)
    assert full.region == part.region and full.peaks == part.peaks
    assert full.compute_scale == part.compute_scale
    assert [c.key for c in full.catalog] == ["a100_sxm_80gb", "h100_sxm"]


def test_comparison_of_loaded_bounds_renders_identically():
    program, g = solar.trace_and_lift(*_attention())
    c = compare_graph(program, g, ["A100", "H100"])
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
    assert [Assumption.from_dict(a.to_dict()) for a in b.assumption_records] == (
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

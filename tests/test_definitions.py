"""FlashInfer-Trace definitions: the loader's one-line errors, axes and constraints, references
that read index values on the host (loops unrolled: the same fused and cache-aware bounds as the
vectorised form), narrow formats charged at the FP8/FP4 rate, and the CLI."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
import torch
from console import run_solar

from solar.definition import DefinitionError, bound_definition, load_definition
from solar.definition.schema import load_workloads
from solar.definition.workload import lift_workload
from solar.hw import load_spec

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "examples" / "definitions"


def doc(name: str) -> dict:
    return json.loads((CORPUS / f"{name}.json").read_text())


def test_loader_errors_name_file_and_field(tmp_path):
    d = doc("rmsnorm_h4096")
    d["inputs"]["x"]["dtype"] = "float7"
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    with pytest.raises(DefinitionError, match=r"bad.json: input 'x' has dtype 'float7'"):
        load_definition(p)
    d = doc("rmsnorm_h4096")
    d["outputs"]["y"]["shape"] = ["batch_size", "hiden"]
    with pytest.raises(DefinitionError, match="output 'y' uses axis 'hiden'"):
        load_definition(d)
    d = doc("rmsnorm_h4096")
    d["reference"] = "def forward(x):\n    return x\n"
    with pytest.raises(DefinitionError, match=r"defines no top-level run"):
        load_definition(d)


def test_missing_var_axis_and_failed_constraint_are_one_line():
    d = load_definition(doc("gemm_bf16_n4096_k4096"))
    b = bound_definition(d, [{"uuid": "w", "axes": {}}])
    assert b.workloads[0].status == "error"
    assert "var axis 'M' has no value" in b.workloads[0].error
    g = doc("grouped_gemm_g8_n4096_k4096")
    b = bound_definition(g, [{"uuid": "w", "axes": {"total_m": 16}}])
    assert b.ok  # make_inputs gives m_indptr[-1] == 16
    g["constraints"] = ["m_indptr[-1].item() == total_m + 1"]
    b = bound_definition(g, [{"uuid": "w", "axes": {"total_m": 16}}])
    assert "constraint 'm_indptr[-1].item() == total_m + 1' does not hold" in b.workloads[0].error


def test_expr_axes_and_hand_derived_gemm():
    """bf16 GEMM, M=16: 2*M*N*K tensor flops; fused bytes = A + B + C (2 bytes each)."""
    b = bound_definition(doc("gemm_bf16_n4096_k4096"), [{"uuid": "w", "axes": {"M": 16}}], "H100")
    full = b.workloads[0].bound
    m, n, k = 16, 4096, 4096
    assert full.flops == {"tc_bf16": 2 * m * n * k}
    assert full.bytes_fused == 2 * (m * k + n * k + m * n)


def _paged_loop_and_vectorised() -> tuple[dict, dict]:
    """The corpus's vectorised paged decode, and the same with the loop-written run of the
    corpus's loop definition (same inputs: every sequence holds pages_per_seq pages)."""
    vec = doc("gqa_paged_decode_vectorised_h32_kv8_d128_ps16")
    loop_run = doc("gqa_paged_decode_h32_kv8_d128_ps16")["reference"].split("def run", 1)[1]
    loop = copy.deepcopy(vec)
    loop["reference"] = vec["reference"].split("def run", 1)[0] + "def run" + loop_run
    return loop, vec


@pytest.mark.parametrize("hw", ["H100", "B200"])
def test_paged_decode_loop_equals_vectorised(hw):
    loop, vec = _paged_loop_and_vectorised()
    wl = [{"uuid": "w", "axes": {"batch_size": 3, "num_pages": 32, "pages_per_seq": 4},
           "inputs": {"sm_scale": {"type": "scalar", "value": 0.125}}}]  # fmt: skip
    a = bound_definition(loop, wl, hw).workloads[0]
    b = bound_definition(vec, wl, hw).workloads[0]
    assert a.status == b.status == "ok", (a.error, b.error)
    assert a.bound.flops == b.bound.flops
    assert a.bound.bytes_fused == b.bound.bytes_fused
    assert a.fused == pytest.approx(b.fused, rel=1e-12)
    assert a.cache_aware == pytest.approx(b.cache_aware, rel=1e-12)
    assert a.kernels > b.kernels  # the loop's own launches: one set per batch entry
    # the 3 x 4 distinct pages the indices name, K and V: page_size 16 x 8 heads x 128 x bf16
    graphs = []
    for d in (loop, vec):  # the graphs the bounds were computed from (a Bound keeps none)
        defn = load_definition(d)
        graphs.append(lift_workload(defn, load_workloads(wl, defn)[0])[2])
    for g in graphs:
        reads = g.info.fused_io.reads
        assert reads["k_cache"] == reads["v_cache"] == 12 * 16 * 8 * 128 * 2
    # unfused: each of the loop's gather kernels reads its own sequence's 4 pages
    kernels = graphs[0].info.kernels
    gathers = [k.reads["k_cache"] for k in kernels if "k_cache" in k.reads]
    assert gathers == [4 * 16 * 8 * 128 * 2] * 3
    assert any(
        "the unfused level is that reference's own launches" in s for s in a.bound.assumptions
    )


GROUPED_VECTORISED = """
import torch

def make_inputs(axes, device):
    m, g = axes["total_m"], axes["num_groups"]
    return {"m_indptr": torch.arange(0, m + 1, m // g, dtype=torch.int32)}

def run(x, W, m_indptr):
    G, N, K = W.shape
    return torch.bmm(x.view(G, -1, K), W.transpose(1, 2)).reshape(-1, N)
"""


def test_grouped_gemm_loop_equals_vectorised():
    loop = doc("grouped_gemm_g8_n4096_k4096")
    vec = dict(loop, reference=GROUPED_VECTORISED)
    wl = [{"uuid": "w", "axes": {"total_m": 64}}]
    a = bound_definition(loop, wl, "B200").workloads[0]
    b = bound_definition(vec, wl, "B200").workloads[0]
    assert a.bound.flops == b.bound.flops == {"tc_bf16": 2 * 64 * 4096 * 4096}
    # x, W, y in bf16; m_indptr is read on the host only (no kernel loads it)
    assert (
        a.bound.bytes_fused == b.bound.bytes_fused == 2 * (64 * 4096 + 8 * 4096 * 4096 + 64 * 4096)
    )
    assert (a.fused, a.cache_aware) == pytest.approx((b.fused, b.cache_aware), rel=1e-12)
    assert a.kernels == 8 + 1 and a.unfused > b.unfused  # 8 matmuls and the cat


@pytest.mark.parametrize(("name", "cls"), [
    ("gemm_fp8_per_tensor_n4096_k4096", "tc_fp8"),
    ("gemm_fp8_blockwise_n7168_k2048", "tc_fp8"),
    ("gemm_nvfp4_block_scaled_n4096_k4096", "tc_fp4"),
])  # fmt: skip
def test_dequantised_contractions_run_at_the_narrow_rate(name, cls):
    d = load_definition(doc(name))
    m = 32
    n, k = d.axes["N"].value, d.axes["K"].value
    for hw, rate in (("B200", cls), ("H100", "tc_fp8")):
        wb = bound_definition(d, [{"uuid": "w", "axes": {"M": m}}], hw).workloads[0]
        b = wb.bound
        assert b.flops.get(cls) == 2 * m * n * k, b.flops
        # no dequantisation charged: CUDA-core work is at most an epilogue on the output
        assert sum(v for c, v in b.flops.items() if c.startswith("cuda_")) <= m * n
        spec = load_spec(hw)
        assert b.compute_s["tensor"] == pytest.approx(2 * m * n * k / spec.peak(rate))
        assert any(a.startswith("narrow formats:") for a in b.assumptions)


def test_weight_only_int8_stays_bf16():
    wb = bound_definition(doc("gemm_w8a16_int8_n4096_k4096"), [{"uuid": "w", "axes": {"M": 8}}])
    b = wb.workloads[0].bound
    assert b.flops["tc_bf16"] == 2 * 8 * 4096 * 4096
    # bytes at the packed size: X bf16, W int8, scale bf16, Y bf16
    assert b.bytes_fused == 2 * 8 * 4096 + 4096 * 4096 + 2 * 4096 + 2 * 8 * 4096


def test_corpus_is_complete():
    defs = sorted(CORPUS.glob("*.json"))
    assert len(defs) >= 25
    for p in defs:
        wl = p.with_suffix(".workloads.jsonl")
        assert len(wl.read_text().splitlines()) >= 8, p.name


@pytest.mark.parametrize("hw", ["H100", "B200"])
def test_corpus_bounds_on_h100_and_b200(hw):
    """Every definition of the corpus, one workload each (all of them: python -m solar.bench
    definitions)."""
    from solar.definition import bound_definitions

    results = bound_definitions([CORPUS], hw, sample=1)
    bad = [(r.name, w.error) for r in results for w in r.workloads if w.status != "ok"]
    assert not bad
    assert all(w.cache_aware > 0 and w.fused <= w.unfused for r in results for w in r.workloads)


def test_cli_bound_definition_json():
    rc, out, err = run_solar("bound", CORPUS / "rmsnorm_h4096.json", "--sample", "2", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["schema"] == "solar.definition-bounds/1" and len(d["workloads"]) == 2
    assert d["workloads"][0]["axes"] == {"batch_size": 1, "hidden_size": 4096}


def test_cli_bound_definition_symbolic_rows_equal_their_traces():
    """``solar bound DEF.json --symbolic``: the var axes as symbols, as
    ``bound_definition(..., symbolic=True)``; each row's numbers are those of the workload's
    own trace (the numeric path, here in this process), and the table says which came from
    the formula."""
    from tests.symbolic_equal import fresh_caches

    path = CORPUS / "rmsnorm_h4096.json"
    rc, out, err = run_solar("bound", path, "--symbolic", "--sample", "3", "--jobs", "1", "--json")
    assert rc == 0, err
    rows = json.loads(out)["workloads"]
    assert [w["method"] for w in rows] == ["trace", "formula", "formula"]  # batch 1: broadcast
    fresh_caches()
    numeric = bound_definition(path, sample=3)
    for got, want in zip(rows, numeric.workloads, strict=True):
        assert got["uuid"] == want.uuid and got["axes"] == want.axes
        for level in ("unfused", "fused", "cache_aware"):
            assert math.isclose(got[level], getattr(want, level), rel_tol=1e-9), level
    rc, out, err = run_solar("bound", path, "--symbolic", "--sample", "3", "--jobs", "1")
    assert rc == 0, err
    assert "from" in out.splitlines()[1] and "the formula traced at workload" in out


def test_cli_symbolic_names_on_a_definition_is_one_line():
    rc, out, err = run_solar("bound", CORPUS / "rmsnorm_h4096.json", "--symbolic", "B")
    assert rc != 0 and err.strip().count("\n") == 0 and "give --symbolic alone" in err


def test_cli_bound_missing_definition_is_one_line(tmp_path):
    rc, out, err = run_solar("bound", tmp_path / "nope.json")
    assert rc != 0 and err.strip().count("\n") == 0 and "no such definition file" in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU error")
def test_cli_score_without_cuda_is_one_line():
    rc, out, err = run_solar("score", CORPUS / "rmsnorm_h4096.json", "--solution", __file__)
    assert rc != 0 and err.strip().count("\n") == 0 and "needs a CUDA GPU" in err


def test_folder_batch_on_worker_processes_equals_one_process(tmp_path):
    """A folder of definitions through the installed command with --jobs 2 (every workload a
    task of one pool) gives the numbers of bounding them one after another here, in order; a
    definition that does not load is one error row and the batch goes on."""
    from solar.definition import bound_definitions

    names = ["rmsnorm_h4096", "gqa_paged_decode_h32_kv8_d128_ps16"]
    for n in names:
        for suffix in (".json", ".workloads.jsonl"):
            (tmp_path / f"{n}{suffix}").write_text((CORPUS / f"{n}{suffix}").read_text())
    (tmp_path / "broken.json").write_text("{")
    rc, out, err = run_solar("bound", tmp_path, "--sample", "3", "--jobs", "2", "--json")
    assert rc == 1, err  # the broken definition
    pooled = {d["name"]: d for d in json.loads(out)["definitions"]}
    assert pooled["broken"]["workloads"][0]["status"] == "error"
    here = bound_definitions([tmp_path], "H100", sample=3)
    for r in here:
        if r.name == "broken":
            continue
        got = pooled[r.name]["workloads"]
        assert [w["uuid"] for w in got] == [w.uuid for w in r.workloads]
        for w, g in zip(r.workloads, got, strict=True):
            assert (g["unfused"], g["fused"], g["cache_aware"]) == (
                w.unfused,
                w.fused,
                w.cache_aware,
            )
        assert pooled[r.name]["assumptions"] == r.assumptions


def test_workload_past_its_time_limit_is_a_row():
    from solar.definition import bound_definition

    db = bound_definition(
        CORPUS / "gqa_paged_decode_h32_kv8_d128_ps16.json", sample=2, jobs=1, timeout=1e-3
    )
    assert [w.status for w in db.workloads] == ["timeout", "timeout"]
    assert "time limit" in db.workloads[0].error


def test_symbolic_folder_on_worker_processes_equals_this_process(tmp_path):
    """``symbolic=True`` with ``jobs=2``: one task per definition on a pool of worker
    processes (its workloads share the formulas); every row (bounds, what binds them, kernels,
    formula or trace and why) equals the row bounded in this process, and a definition that
    does not load is one error row."""
    from solar.definition import bound_definitions
    from tests.symbolic_equal import fresh_caches

    names = ["rmsnorm_h4096", "gemm_bf16_n4096_k4096"]
    for n in names:
        for suffix in (".json", ".workloads.jsonl"):
            (tmp_path / f"{n}{suffix}").write_text((CORPUS / f"{n}{suffix}").read_text())
    (tmp_path / "broken.json").write_text("{")
    fresh_caches()
    pooled = bound_definitions([tmp_path], "H100", sample=4, jobs=2, symbolic=True)
    fresh_caches()
    here = bound_definitions([tmp_path], "H100", sample=4, symbolic=True)
    assert [r.name for r in pooled] == [r.name for r in here] == ["broken", *sorted(names)]
    broken = pooled[0].workloads[0]
    assert broken.status == "error" and "broken.json" in broken.error
    keys = ("uuid", "status", "unfused", "fused", "cache_aware", "fused_bound_by")
    keys += ("cache_aware_bound_by", "kernels", "method", "note", "axes")
    for p, h in zip(pooled[1:], here[1:], strict=True):
        assert [w.status for w in p.workloads] == ["ok"] * 4
        assert any(w.method == "formula" for w in p.workloads)  # the formulas, on the workers
        for a, b in zip(p.workloads, h.workloads, strict=True):
            assert [getattr(a, k) for k in keys] == [getattr(b, k) for k in keys]
            assert a.bound is None and b.bound is not None  # a Bound stays in its process
        assert p.assumptions == h.assumptions


def test_symbolic_definition_past_its_time_limit_is_one_row_per_workload():
    """With ``timeout`` a symbolic definition is one task: past the limit, each of its
    workloads is a timeout row."""
    db = bound_definition(CORPUS / "rmsnorm_h4096.json", sample=3, symbolic=True, timeout=1e-3)
    assert [w.status for w in db.workloads] == ["timeout"] * 3
    assert "time limit" in db.workloads[0].error


def test_solar_bound_on_definitions_freezes_the_imports():
    """``solar bound`` on definitions imports what every trace needs (torch._dynamo, through
    FakeTensorMode) and freezes those objects, so that no full collection during a workload
    walks them; the collector of this process is put back after."""
    import gc
    import sys

    from solar.cli.targets.definitions import freeze_imports

    try:
        freeze_imports()
        assert "torch._dynamo" in sys.modules and "solar.frontend.torch" in sys.modules
        assert gc.get_freeze_count() > 100_000  # the frameworks' objects
    finally:
        gc.unfreeze()


def test_a_library_batch_leaves_the_collector_as_it_is():
    """``bound_definition`` changes nothing of the caller's collector, during the call or
    after: thresholds, enabled, frozen objects (the collector is the process's)."""
    import gc

    from gc_probe import EAGER, collections

    with collections() as seen:
        frozen = gc.get_freeze_count()
        db = bound_definition(CORPUS / "gqa_paged_decode_h32_kv8_d128_ps16.json", sample=2)
        assert db.ok and seen.thresholds == {EAGER}
        assert gc.get_threshold() == EAGER and gc.isenabled()
        assert gc.get_freeze_count() == frozen


def test_solar_bound_on_definitions_defers_full_collections(capsys):
    """The command's process is its own: no full collection starts during its batch (the
    oldest generation's threshold raised), and the thresholds are put back after."""
    import gc

    from gc_probe import EAGER, collections

    import solar.cli
    from solar.collector import DEFERRED

    try:
        with collections() as seen:
            path = str(CORPUS / "rmsnorm_h4096.json")
            assert solar.cli.main(["bound", path, "--sample", "2", "--jobs", "1"]) == 0
            deferred = (*EAGER[:2], DEFERRED)
            assert deferred in seen.thresholds and seen.full_under(deferred) == 0
            assert gc.get_threshold() == EAGER and gc.isenabled()
    finally:
        gc.unfreeze()
    assert "rmsnorm_h4096" in capsys.readouterr().out

"""Batch analysis (solar.questions.batch): executors agree, failures stay per file, workers
that die fail only their own task; the structure cache (solar.graph.cache) changes nothing
but the time."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

import solar
from solar.cli import main
from solar.graph import lift
from solar.graph.cache import CACHE, compute_facts, kernel_facts, kernel_key, structure_cache
from solar.problem import discover
from solar.questions.batch import BatchResult, bound_paths
from solar.questions.executors import map_tasks, resolve_executor
from solar.report.table import bound_batch_text

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["matmul", "mlp", "softmax", "reduction", "op_layernorm_bf16", "op_embedding"]

BROKEN = (
    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
    "        return torch.special.airy_ai(x)\n"
    "def get_inputs():\n    return [torch.randn(8, 8)]\n"
)
CRASHES = "import os\nos._exit(3)  # the worker process dies while importing the problem\n"
NEEDS = "REQUIRES = ['no_such_package_xyz']\nimport no_such_package_xyz\n"


@pytest.fixture()
def corpus(tmp_path) -> Path:
    """A folder of small problem files from the examples."""
    for name in SMALL:
        shutil.copy(ROOT / "examples" / f"{name}.py", tmp_path / f"{name}.py")
    return tmp_path


def _strip(results: list[BatchResult]) -> list[tuple]:
    return [(Path(r.path).name, r.status, r.bound, r.error) for r in results]


def test_discover_files_and_folders(corpus):
    (corpus / "_private.py").write_text("x = 1\n")
    (corpus / "sub").mkdir()
    (corpus / "sub" / "extra.py").write_text("x = 1\n")
    found = discover([corpus])
    assert [p.name for p in found] == sorted(f"{n}.py" for n in SMALL) + ["extra.py"]
    assert discover([corpus / "mlp.py"]) == [corpus / "mlp.py"]
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        discover([corpus / "nope"])


def test_serial_and_process_pool_agree(corpus):
    serial = bound_paths([corpus], "H100", jobs=1)
    pooled = bound_paths([corpus], "H100", jobs=2)
    assert [r.status for r in serial] == ["ok"] * len(SMALL)
    assert _strip(serial) == _strip(pooled)  # same order, same numbers
    direct = solar.bound(*_problem(corpus / "mlp.py"), hw="H100", name="mlp").to_dict()
    assert next(r.bound for r in pooled if r.name == "mlp") == direct


def _problem(path):
    from solar.problem import load_problem

    p = load_problem(path)
    return p.model, p.inputs


def test_failures_and_skips_stay_per_file(corpus):
    (corpus / "broken.py").write_text(BROKEN)
    (corpus / "needs.py").write_text(NEEDS)
    results = bound_paths([corpus], "H100", jobs=2)
    by = {r.name: r for r in results}
    assert by["broken"].status == "error"
    assert "special_airy_ai" in by["broken"].error and "\n" not in by["broken"].error
    assert by["needs"].status == "skipped" and "no_such_package_xyz" in by["needs"].error
    assert all(by[n].ok for n in SMALL)
    text = bound_batch_text(results)
    assert f"{len(SMALL)} of {len(SMALL) + 2} bounded, 1 failed, 1 skipped" in text


def test_a_dying_worker_fails_only_its_task(corpus):
    (corpus / "crashes.py").write_text(CRASHES)
    results = bound_paths([corpus], "H100", jobs=2)
    by = {r.name: r for r in results}
    assert by["crashes"].status == "error" and "worker process died" in by["crashes"].error
    assert all(by[n].ok for n in SMALL)


def test_spec_objects_travel_to_workers(corpus):
    spec = solar.hw.load_spec("H100").scaled(bandwidth=2.0)  # not in the catalogue
    pooled = bound_paths([corpus / "mlp.py", corpus / "softmax.py"], spec, jobs=2)
    serial = bound_paths([corpus / "mlp.py", corpus / "softmax.py"], spec, jobs=1)
    assert _strip(pooled) == _strip(serial) and all(r.ok for r in pooled)
    assert pooled[0].bound["hw"] == spec.name


def test_bad_spec_fails_before_any_task(corpus):
    with pytest.raises(ValueError, match="unknown hardware"):
        bound_paths([corpus], "NoSuchGPU", jobs=2)


def test_map_tasks_is_in_input_order_and_reports_progress():
    seen = []
    out = map_tasks(pow, [(2, k) for k in range(6)], jobs=2, on_done=lambda i, r: seen.append(i))
    assert out == [2**k for k in range(6)]
    assert sorted(seen) == list(range(6))
    assert map_tasks(pow, [(3, 2)], executor="serial") == [9]
    with pytest.raises(ValueError, match="unknown executor"):
        map_tasks(pow, [(3, 2)], executor="threads")
    with pytest.raises(ValueError, match="at least 1"):
        map_tasks(pow, [(3, 2)], jobs=0)


def test_resolve_executor():
    assert resolve_executor() == "process"
    assert resolve_executor(jobs=1) == "serial"
    assert resolve_executor(jobs=4, ray="auto") == "ray"
    assert resolve_executor(jobs=4, executor="serial") == "serial"


def test_cli_bound_folder(capsys, corpus, tmp_path):
    out = tmp_path / "out" / "batch.json"
    out.parent.mkdir()
    code = main(["bound", str(corpus), "--jobs", "2", "--json", "--out", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "solar.bound-batch/1" and doc["hw"] == "H100"
    assert [p["name"] for p in doc["programs"]] == sorted(SMALL)
    assert all(p["bound"]["schema"] == "solar.bound/1" for p in doc["programs"])
    assert list(out.parent.iterdir()) == [out]  # no temporary file left behind
    (corpus / "broken.py").write_text(BROKEN)
    code = main(["bound", str(corpus), "--jobs", "1"])
    text = capsys.readouterr().out
    assert code == 1 and "broken" in text and "1 failed" in text


def test_cli_ray_without_ray_says_how_to_install(capsys, corpus, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    code = main(["bound", str(corpus), "--ray", "local"])
    err = capsys.readouterr().err
    assert code == 2 and "solar[ray]" in err and len(err.strip().splitlines()) == 1


# ----------------------------------------------------------------------------------------------
# the structure cache


def _graph_dump(g) -> tuple:
    nodes = sorted((d.id, repr(d)) for d in g.nodes())
    edges = sorted((u, v, k, repr(e)) for u, v, k, e in g.edges())
    return nodes, edges, repr(g.info)


class Block(torch.nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 2 * width)
        self.down = torch.nn.Linear(2 * width, width)

    def forward(self, x):
        h = torch.softmax(self.up(self.norm(x)), dim=-1)
        return x + self.down(torch.nn.functional.gelu(h))


def _stack(layers: int, width: int = 32):
    with torch.device("meta"):
        model = torch.nn.Sequential(*[Block(width) for _ in range(layers)])
        x = torch.randn(4, 16, width)
    return solar.trace(model, (x,)).program


def test_repeated_layers_are_analysed_once():
    program = _stack(6)
    CACHE.clear()
    with structure_cache(True):
        cached = lift(program)
    stats = CACHE.stats()
    per_layer = len(program.kernels) // 6
    # the first layer (its first kernel reads the graph input) and the last kernel (it writes
    # the graph output); every other kernel is a lookup
    assert stats["misses"] <= per_layer + 2
    assert stats["hits"] == len(program.kernels) - stats["misses"] and stats["unkeyed"] == 0
    with structure_cache(False):
        plain = lift(program)
    assert _graph_dump(cached) == _graph_dump(plain)


def test_cache_keys_see_everything_the_facts_depend_on():
    a, b = _stack(1, 32), _stack(1, 48)  # same code, other shapes: other structures
    ka = [kernel_key(a, k)[0] for k in a.kernels]
    kb = [kernel_key(b, k)[0] for k in b.kernels]
    assert not set(ka) & set(kb)
    # and a hit gives the facts of the kernel asked about, by its own tensor names
    p = _stack(2)
    n = len(p.kernels) // 2
    same = 0
    for k1, k2 in zip(p.kernels[:n], p.kernels[n:], strict=True):
        kernel_facts(p, k1)
        if kernel_key(p, k1)[0] == kernel_key(p, k2)[0]:
            same += 1
        assert kernel_facts(p, k2) == compute_facts(p, k2)
    assert same >= n - 2  # all but the layer's first (reads a graph input) and last kernels

"""The example corpus: every problem file in ``examples/`` is bounded on an H100.

Each file is its own test (a failure names the file). Files that need an optional package say
so with a module constant ``REQUIRES = ["transformers"]``; they are skipped when it is missing.
The files are read with :mod:`ast` for these checks, so collecting the tests imports nothing.
PyTorch files are built by :func:`solar.problem.load_problem`; JAX problem files (they import
jax or flax) by the JAX frontend's loader, and both go through the same ``solar.bound``.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import pytest

import solar
from solar.problem import load_module, load_problem

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
FAMILIES = ("op_", "chain_", "model_")
REL = 1e-9  # float slack for comparisons of sums computed in different orders


def _module(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def requirements(path: Path) -> list[str]:
    """The packages a problem file declares in ``REQUIRES = [...]`` (none if absent)."""
    for node in _module(path).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "REQUIRES" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    return []


def _param(path: Path):
    missing = [r for r in requirements(path) if importlib.util.find_spec(r) is None]
    marks = [pytest.mark.skip(reason=f"needs {', '.join(missing)}")] if missing else []
    return pytest.param(path, id=path.stem, marks=marks)


def test_corpus_is_large_and_spans_the_families():
    assert len(EXAMPLES) >= 60
    for prefix in FAMILIES:
        assert sum(p.name.startswith(prefix) for p in EXAMPLES) >= 8, prefix


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in EXAMPLES])
def test_example_is_a_problem_file(path):
    """A docstring, ``Model``, ``get_inputs()`` and ``get_init_inputs()``."""
    tree = _module(path)
    assert ast.get_docstring(tree), "no module docstring"
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    assert {"Model", "get_inputs", "get_init_inputs"} <= names


def bound_file(path: Path):
    """``solar.bound`` of a problem file on an H100, whichever framework it is written in."""
    try:
        from solar.frontend.jax.problem import load_jax_problem
    except ImportError:
        jax_problem = None
    else:
        jax_problem = load_jax_problem(load_module(path))
    if jax_problem is not None:
        fn, inputs = jax_problem
        return solar.bound(fn, inputs, hw="H100", name=path.stem)
    problem = load_problem(path)
    return solar.bound(problem.model, problem.inputs, hw="H100", name=problem.name)


@pytest.mark.parametrize("path", [_param(p) for p in EXAMPLES])
def test_bound_example(path):
    b = bound_file(path)

    assert b.fused > 0 and b.cache_aware > 0 and b.unfused > 0
    assert b.fused <= b.cache_aware * (1 + REL)
    assert b.fused <= b.unfused * (1 + REL)
    assert len(b.kernels) >= 1
    for k in b.kernels:
        assert k.time_s >= 0 and k.compute_s >= 0 and k.memory_s >= 0, k.name
        assert k.bytes_read >= 0 and k.bytes_written >= 0, k.name
    # the kernel rooflines add up to the unfused throughput bound; with each kernel's latency
    # floor (issue 13: a launch, its own critical path) they add up to the unfused bound
    assert sum(k.time_s for k in b.kernels) == pytest.approx(
        b.latency.throughput["unfused"], rel=1e-6
    )
    unfused = max(sum(k.unfused_s for k in b.kernels), b.latency.critical_path_s)
    assert unfused == pytest.approx(b.unfused, rel=1e-6)
    assert b.fused >= b.latency.launch_floor_s * (1 - REL)

    d = json.loads(b.to_json())
    assert d == b.to_dict()
    assert d["schema"] == "solar.bound/1" and d["program"] == path.stem
    assert d["bounds"]["fused_s"] == b.fused and len(d["kernels"]) == len(b.kernels)

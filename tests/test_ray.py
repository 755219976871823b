"""Batch analysis on Ray (solar.ray_backend): a local Ray cluster on CPU gives the same results
as the local process pool, one task per problem. Skipped when Ray is not installed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray not installed (pip install 'solar[ray]')")
# Ray starts its processes with fork + exec; with JAX loaded (by other test modules) Python
# warns about the fork, which the exec makes harmless.
pytestmark = pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")

from solar.batch import bound_paths  # noqa: E402
from solar.ray_backend import ray_map  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FILES = ["matmul", "mlp", "softmax", "op_layernorm_bf16"]
BROKEN = "import torch\nclass Model(torch.nn.Module):\n    pass\n"  # no get_inputs


def test_ray_matches_the_process_pool(tmp_path):
    for name in FILES:
        shutil.copy(ROOT / "examples" / f"{name}.py", tmp_path / f"{name}.py")
    (tmp_path / "broken.py").write_text(BROKEN)
    pooled = bound_paths([tmp_path], "H100", jobs=2)
    # a Ray instance started for the batch, solar's code shipped to it, problems sent as text
    on_ray = bound_paths([tmp_path], "H100", ray="local")
    assert not ray.is_initialized()  # shut down again
    assert [r.path for r in on_ray] == [r.path for r in pooled]
    assert [r.status for r in on_ray] == [r.status for r in pooled]
    assert [r.bound for r in on_ray] == [r.bound for r in pooled]
    assert [r.error for r in on_ray] == [r.error for r in pooled]
    assert sum(r.ok for r in on_ray) == len(FILES)


def test_ray_map_is_in_input_order():
    done = []
    items = [(2, k) for k in range(5)]
    out = ray_map(pow, items, address="local", num_cpus=2, on_done=lambda i, r: done.append(i))
    assert out == [2**k for k in range(5)] and sorted(done) == list(range(5))

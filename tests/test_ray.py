"""Batches on Ray (solar.ray_backend): on a local Ray cluster on CPU, batch analysis gives the
same results as the local process pool and batch headroom (validation + measurement) the same
as the serial run, one task per problem. Skipped when Ray is not installed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray not installed (pip install 'solar[ray]')")
# Ray starts its processes with fork + exec; with JAX loaded (by other test modules) Python
# warns about the fork, which the exec makes harmless.
pytestmark = pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")

from solar.cli import main  # noqa: E402
from solar.gpu.headroom_batch import headroom_paths  # noqa: E402
from solar.questions.batch import bound_paths  # noqa: E402
from solar.questions.executors import ray_map  # noqa: E402

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


def _facts(batch) -> list[tuple]:
    """What must not depend on where a program ran (times do)."""
    out = []
    for e in batch.entries:
        r = e.report
        validation = r.validation.status if r and r.validation else None
        bounds = r.bounds if r else None
        out.append((Path(e.path).name, e.status, e.stage, e.error, validation, bounds))
    return out


def test_headroom_on_ray_matches_the_serial_run(tmp_path):
    for name in ("mlp", "elementwise"):
        shutil.copy(ROOT / "examples" / f"{name}.py", tmp_path / f"{name}.py")
    (tmp_path / "broken.py").write_text(BROKEN)
    kw = dict(device="cpu", overrides={"TOKENS": 8, "WIDTH": 16, "BATCH": 4}, budget_s=0.02)
    serial = headroom_paths([tmp_path], "H100", show_progress=False, **kw)
    seen = []
    on_ray = headroom_paths(
        [tmp_path], "H100", ray="local", show_progress=False, on_entry=seen.append, **kw
    )
    assert not ray.is_initialized()
    assert _facts(on_ray) == _facts(serial)
    assert [e.status for e in on_ray.entries] == ["error", "ok", "ok"]  # broken, elementwise, mlp
    assert {e.report.validation.status for e in on_ray.entries if e.report} == {"passed"}
    assert len(seen) == 3 and on_ray.hw == serial.hw
    assert any("Ray" in n for n in on_ray.notes)


def test_headroom_command_line_on_ray(tmp_path, capsys):
    shutil.copy(ROOT / "examples" / "elementwise.py", tmp_path / "elementwise.py")
    out = tmp_path / "batch.json"
    argv = ["headroom", str(tmp_path), "--hw", "H100", "--device", "cpu", "--ray", "local"]
    assert main([*argv, "--budget-s", "0.02", "--out", str(out), "--json"]) == 0
    assert '"ok": 1' in out.read_text()


def test_gpu_tasks_hold_one_gpu_each_in_a_fresh_worker():
    """What ``solar headroom --ray`` asks of Ray on a GPU cluster, on a CPU instance that
    declares two (pretend) GPUs: each task is given one GPU and its own worker process."""

    def where():
        import os

        return tuple(ray.get_gpu_ids()), os.getpid()

    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = ray_map(where, [()] * 4, address="auto", gpus_per_task=1, fresh_worker=True)
    finally:
        ray.shutdown()
    assert all(len(gpus) == 1 for gpus, _ in out)
    assert len({pid for _, pid in out}) == 4

"""examples/notebook.ipynb runs top to bottom in a real Jupyter kernel (nbclient + ipykernel),
as a user runs it: every plot cell displays a PNG (not ``<Figure size ...>``), no cell raises,
the source column names notebook cells (``In [3]:11``), and the story it tells holds.

The kernel is this interpreter (a kernel spec written to a temporary ``JUPYTER_PATH``), with the
checkout first on its path and matplotlib's backend left to the kernel (no ``MPLBACKEND``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"
KERNEL = "solar-notebook-test"

#: run after the notebook, in its kernel (not saved in the notebook): the story holds
CHECKS = """\
assert long.bytes_cache_aware > 1.5 * long.bytes_fused  # 2M-token attention re-reads Q and K
assert s.largest_meeting() == 1024
assert [g.key for g in p.meeting] == ["b200"]
import sys
assert "matplotlib.pyplot" not in sys.modules  # solar's figures need no pyplot
print("checks passed")
"""


def _is_plot_cell(cell) -> bool:
    lines = [ln for ln in cell.source.strip().splitlines() if ln.strip()]
    return cell.cell_type == "code" and bool(lines) and ".plot(" in lines[-1]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook, executed in a fresh kernel of this interpreter."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    jupyter = tmp_path_factory.mktemp("jupyter")
    spec = jupyter / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "solar test", "language": "python"})
    )
    mp = pytest.MonkeyPatch()
    mp.setenv("JUPYTER_PATH", str(jupyter))
    mp.setenv("JUPYTER_RUNTIME_DIR", str(jupyter / "runtime"))
    mp.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    mp.delenv("MPLBACKEND", raising=False)
    try:
        nb = nbformat.read(NOTEBOOK, as_version=4)
        nbformat.validate(nb)
        nb.cells.append(nbformat.v4.new_code_cell(CHECKS))
        client = nbclient.NotebookClient(
            nb,
            kernel_name=KERNEL,
            timeout=600,
            allow_errors=True,
            resources={"metadata": {"path": str(NOTEBOOK.parent)}},
        )
        client.execute()
    finally:
        mp.undo()
    return nb


def test_no_cell_raises(executed):
    errors = [
        f"cell {i}: {o.ename}: {o.evalue}"
        for i, c in enumerate(executed.cells)
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]
    assert not errors, errors
    assert "checks passed" in "".join(o.get("text", "") for o in executed.cells[-1].outputs)


def test_every_plot_cell_shows_a_png(executed):
    plots = [c for c in executed.cells if _is_plot_cell(c)]
    assert len(plots) >= 7
    for c in plots:
        pngs = [o for o in c.outputs if "image/png" in o.get("data", {})]
        assert len(pngs) == 1, (c.source, [o.get("data", {}).keys() for o in c.outputs])
        assert pngs[0].data["image/png"].startswith("iVBORw0KGgo")  # base64 of the PNG magic


def test_reports_render_as_html(executed):
    html = "\n".join(
        o.data["text/html"]
        for c in executed.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "text/html" in o.get("data", {})
    )
    for word in ("cache-aware", "catalog", "latency per", "bounds per GPU"):
        assert word in html


def test_sources_name_the_notebook_cell(executed):
    cell = next(c for c in executed.cells if "b = solar.bound(ffn" in c.source)
    html = next(o.data["text/html"] for o in cell.outputs if "text/html" in o.get("data", {}))
    # the FFN's kernels come from `ffn` called in that cell: named by its execution count
    sources = set(re.findall(r"In \[(\d+)\]:(\d+)", html))
    assert sources == {(str(cell.execution_count), "11")}, sources
    assert not re.search(r"\d{6,}\.py:\d+", html)  # no temporary cell file names

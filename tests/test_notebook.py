"""examples/notebook.ipynb runs top to bottom on CPU, and what it displays renders.

The code cells are executed in order in one namespace (no Jupyter kernel needed); the value of
a cell's last expression is "displayed" the way Jupyter would: its ``_repr_html_`` is rendered,
a matplotlib Figure is drawn to PNG.
"""

import ast
import io
import json
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "notebook.ipynb"


def _display(value) -> str:
    if value is None:
        return ""
    if hasattr(value, "savefig"):  # a matplotlib Figure (its _repr_html_ is for webagg)
        buf = io.BytesIO()
        value.savefig(buf, format="png")
        assert buf.getvalue()[:4] == b"\x89PNG"
        return "<png>"
    if hasattr(value, "_repr_html_"):
        out = value._repr_html_()
        assert isinstance(out, str) and out
        return out
    return repr(value)


def test_notebook_runs_top_to_bottom():
    matplotlib = pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    matplotlib.use("Agg")
    nb = json.loads(NOTEBOOK.read_text())
    assert nb["nbformat"] == 4
    try:
        import nbformat
    except ImportError:
        pass
    else:
        nbformat.validate(nbformat.reads(NOTEBOOK.read_text(), as_version=4))
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert len(cells) >= 10
    ns: dict = {"__name__": "__main__"}
    shown = []
    for i, cell in enumerate(cells):
        src = "".join(cell["source"])
        assert not src.lstrip().startswith(("%", "!")), "cells must be plain Python"
        tree = ast.parse(src)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, f"<cell {i}>", "exec"), ns)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), f"<cell {i}>", "eval"), ns)
            shown.append(_display(value))
    html = "\n".join(shown)
    for word in ("cache-aware", "catalog", "latency per", "bounds per GPU"):
        assert word in html
    assert html.count("<png>") >= 6
    # the story the notebook tells holds
    assert ns["long"].bytes_cache_aware > 1.5 * ns["long"].bytes_fused  # 2M-token attention
    assert ns["s"].largest_meeting() == 1024
    assert [c.key for c in ns["p"].meeting] == ["b200"]

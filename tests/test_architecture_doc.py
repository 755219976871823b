"""docs/architecture.md's worked example (adding an analysis pass) runs as written."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def test_the_worked_example_of_a_pass_runs():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert blocks, "docs/architecture.md has no Python block"
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), {"__name__": "architecture_doc"})

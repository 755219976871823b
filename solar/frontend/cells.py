"""How a source line is named in reports: ``file.py:LINE``, or ``In [3]:11`` for line 11 of a
notebook or IPython cell.

IPython compiles each cell under a name of its own (ipykernel: a temporary file such as
``/tmp/ipykernel_123/2418534393.py``; the terminal: ``<ipython-input-3-...>``) and its compiler
remembers which execution count each name belongs to (``get_ipython().compile
.format_code_name(name)`` -> ``("Cell", "In[3]")``, what IPython's own tracebacks use). Outside
IPython nothing is imported and every file is named by its base name.
"""

from __future__ import annotations

import os
import sys


def cell_name(filename: str) -> str | None:
    """``In [3]`` when ``filename`` is the code of an IPython cell of this process, else None."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None  # type: ignore[attr-defined]
    format_code_name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if format_code_name is None:
        return None
    try:
        named = format_code_name(filename)
    except Exception:  # an IPython whose compiler differs: the plain file name then
        return None
    if not named:
        return None
    return named[1].replace("In[", "In [", 1)


def source_label(filename: str, line: int) -> str:
    """``In [3]:11`` for a cell, else ``file.py:11``."""
    return f"{cell_name(filename) or os.path.basename(filename)}:{line}"

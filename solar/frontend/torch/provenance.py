"""Where a traced node came from: the user's source line and the ``nn.Module`` path.

Every kernel in a report names both. make_fx can record them itself (``record_stack_traces``,
``record_module_stack``), but at a price that dominates a trace: it formats the whole Python
stack into a string for every node, and wraps every module attribute access in a proxy to
know the module path (together ~1.7x the bare trace on a LLaMA). Solar records the same two
facts cheaply while make_fx traces (:func:`record_provenance`):

- the source: the innermost frame outside torch, solar and the standard library, found by
  walking ``sys._getframe`` (a dict lookup per frame; no source text is read) and kept as
  ``node.meta["solar_source"] = "file.py:LINE"`` (``In [3]:LINE`` for a notebook cell,
  :mod:`solar.frontend.cells`);
- the module path: the modules whose ``forward`` frames are on the same stack, named by
  ``root.named_modules()``, kept in ``node.meta["nn_module_stack"]`` in make_fx's own format
  (``{key: (path, type)}``, outermost first). Not module hooks: a global forward hook sends
  every module call down ``nn.Module``'s slow path, which costs more than the hooks save.
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import torch
import torch.fx as fx

from solar.frontend.cells import cell_name, source_label

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_SOLAR_DIR = str(Path(__file__).resolve().parents[2]) + os.sep
_STDLIB_DIRS = tuple(
    p + os.sep for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
)
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in ')
_USER_FILE: dict[str, bool] = {}  # co_filename -> is_user_file, filled as frames are seen


def is_user_file(path: str) -> bool:
    """Whether ``path`` is the user's code: not torch, solar, the standard library or
    generated code (``<string>``); an IPython cell (``<ipython-input-...>``) is the user's."""
    if path.startswith("<"):  # <string>, <frozen ...>: generated code, unless a cell
        return cell_name(path) is not None
    path = os.path.abspath(path)
    if path.startswith((_TORCH_DIR, _SOLAR_DIR)) or "site-packages" + os.sep + "torch" in path:
        return False
    return not (path.startswith(_STDLIB_DIRS) and "site-packages" not in path)


def caller_source(depth: int = 1) -> str:
    """``file.py:LINE`` (``In [3]:LINE`` in a notebook) of the innermost user frame on the
    current Python stack."""
    frame = sys._getframe(depth)
    cache = _USER_FILE
    while frame is not None:
        filename = frame.f_code.co_filename
        user = cache.get(filename)
        if user is None:
            user = cache[filename] = is_user_file(filename)
        if user:
            return source_label(filename, frame.f_lineno)
        frame = frame.f_back
    return ""


def user_source(stack_trace: str | None) -> str:
    """``file.py:LINE`` of the innermost user frame of a formatted ``stack_trace`` (graphs
    traced by make_fx with ``record_stack_traces``)."""
    for path, line in reversed(_FRAME.findall(stack_trace or "")):
        if is_user_file(path):
            return source_label(path, int(line))
    return ""


def node_source(node: fx.Node) -> str:
    """The user's source line of ``node``: recorded by :func:`record_provenance`, else read
    from make_fx's stack trace."""
    source = node.meta.get("solar_source")
    return source if source is not None else user_source(node.meta.get("stack_trace"))


def module_label(node: fx.Node) -> str:
    """``layers.0 (Linear)``: the innermost nn.Module the node was traced in."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, kind = list(stack.values())[-1]
    kind = getattr(kind, "__name__", str(kind)).split(".")[-1]
    return f"{path} ({kind})" if path else f"({kind})"


def module_stack(frame: FrameType | None, names: dict[int, str]) -> dict[str, tuple[str, type]]:
    """The ``nn.Module`` s whose ``forward`` is running on the Python stack from ``frame`` out,
    as make_fx's ``nn_module_stack`` (``{key: (path, type)}``, outermost first); ``names``
    maps ``id(module)`` to its path."""
    found: list[torch.nn.Module] = []
    while frame is not None:
        if frame.f_code.co_name == "forward":
            obj = frame.f_locals.get("self")
            if isinstance(obj, torch.nn.Module) and (not found or found[-1] is not obj):
                found.append(obj)  # a super().forward() call is the same module
        frame = frame.f_back
    stack = {}
    for depth, mod in enumerate(reversed(found)):
        path = names.get(id(mod), "")
        stack[f"{path}@{depth}"] = (path, type(mod))  # unique keys when a module re-enters
    return stack


@contextmanager
def record_provenance(root: torch.nn.Module | None) -> Iterator[None]:
    """While make_fx traces, record each new node's user source line and module path (see
    the module docstring). ``root`` names the modules; modules outside it get their type only.
    """
    from torch.fx.experimental.proxy_tensor import PythonKeyTracer

    names: dict[int, str] = {}
    if root is not None:
        for name, m in root.named_modules(remove_duplicate=False):
            names.setdefault(id(m), name)  # a shared module keeps its first path
    had = "create_node" in PythonKeyTracer.__dict__
    original = PythonKeyTracer.create_node

    def create_node(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        node = original(self, *args, **kwargs)
        if node.op not in ("placeholder", "output"):
            node.meta["solar_source"] = caller_source(2)
            stack = module_stack(sys._getframe(1), names)
            if stack:
                node.meta["nn_module_stack"] = stack
        return node

    PythonKeyTracer.create_node = create_node  # type: ignore[method-assign]
    try:
        yield
    finally:
        if had:
            PythonKeyTracer.create_node = original  # type: ignore[method-assign]
        else:
            del PythonKeyTracer.create_node

"""Where a traced node came from: the user's source line and the ``nn.Module`` path.

Every kernel in a report names both. make_fx can record them itself (``record_stack_traces``,
``record_module_stack``), but at a price that dominates a trace: it formats the whole Python
stack into a string for every node, and wraps every module attribute access in a proxy to
know the module path (together ~1.7x the bare trace on a LLaMA). Solar records the same two
facts cheaply while make_fx traces (:func:`record_provenance`):

- the source: the innermost frame of the model's own code (:func:`source_frame`: the user's
  code, or a library that defines one of the modules running, such as torchvision for its
  segmentation models), found by walking ``sys._getframe`` (a dict lookup per frame; no
  source text is read) and kept as ``node.meta["solar_source"] = "file.py:LINE"``
  (``In [3]:LINE`` for a notebook cell, :mod:`solar.frontend.cells`);
- the module path: the modules whose ``forward`` frames are on the same stack, named by
  ``root.named_modules()``, kept in ``node.meta["nn_module_stack"]`` in make_fx's own format
  (``{key: (path, class name)}``, outermost first). Not module hooks: a global forward hook sends
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
#: console scripts of the environment (the ``solar`` command's own launcher): never the user's
_SCRIPTS_DIR = os.path.abspath(sysconfig.get_paths()["scripts"]) + os.sep
_SITE_DIRS = tuple(os.sep + d + os.sep for d in ("site-packages", "dist-packages"))
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in ')
#: co_filename -> who owns the code: "" the user, a package name a library, None the framework
#: (torch, solar, the standard library, generated code: never named). Filled as frames are seen.
_OWNER: dict[str, str | None] = {}


def is_user_file(path: str) -> bool:
    """Whether ``path`` may be named as a source: not torch, solar, the standard library,
    the environment's console scripts or generated code (``<string>``); an IPython cell
    (``<ipython-input-...>``) is the user's. Libraries' files may be named (see
    :func:`source_frame`)."""
    if path.startswith("<"):  # <string>, <frozen ...>: generated code, unless a cell
        return cell_name(path) is not None
    path = os.path.abspath(path)
    in_torch = any(f"{site}torch{os.sep}" in path for site in _SITE_DIRS)
    if path.startswith((_TORCH_DIR, _SOLAR_DIR, _SCRIPTS_DIR)) or in_torch:
        return False
    return not (path.startswith(_STDLIB_DIRS) and not is_library_file(path))


def is_library_file(path: str) -> bool:
    """Whether ``path`` is an installed package's file (under site-packages)."""
    return any(site in path for site in _SITE_DIRS)


def code_owner(frame: FrameType) -> str | None:
    """Who owns ``frame``'s code: ``""`` the user, a top-level package name an installed
    library (``"torchvision"``), None the framework (see :data:`_OWNER`)."""
    filename = frame.f_code.co_filename
    try:
        return _OWNER[filename]
    except KeyError:
        pass
    owner: str | None = None
    if is_user_file(filename):
        package = str(frame.f_globals.get("__name__") or "").split(".")[0]
        owner = (package or None) if is_library_file(filename) else ""
    _OWNER[filename] = owner
    return owner


def source_frame(frame: FrameType | None, packages: set[str]) -> FrameType | None:
    """The frame an operator (or an error) is named by, walking out from ``frame``.

    The rule: the innermost frame of the model's own code, which is (1) the user's code (any
    file outside installed packages, torch, solar and the standard library), or (2) a
    library that defines one of the ``nn.Module`` s whose ``forward`` is running
    (``packages``: their classes' top-level packages). So a user's model is named at the
    user's line; a torchvision segmentation model at the torchvision line that called
    ``F.interpolate`` (torchvision defines the model), not at the user's ``solar.bound(...)``;
    and a helper library a user's forward calls (einops) is skipped for the user's line that
    called it. When no frame qualifies: the innermost library frame, else None."""
    fallback = None
    while frame is not None:
        owner = code_owner(frame)
        if owner == "" or (owner and owner in packages):
            return frame
        if owner and fallback is None:
            fallback = frame
        frame = frame.f_back
    return fallback


def frame_label(frame: FrameType | None) -> str:
    """``file.py:LINE`` of ``frame``; empty for None."""
    if frame is None:
        return ""
    return source_label(frame.f_code.co_filename, frame.f_lineno)


def module_packages(modules) -> set[str]:
    """The top-level packages defining ``modules``' classes (``{"torchvision"}``)."""
    return {type(m).__module__.split(".")[0] for m in modules}


def caller_source(depth: int = 1) -> str:
    """``file.py:LINE`` (``In [3]:LINE`` in a notebook) of the current Python stack's source
    frame (:func:`source_frame`)."""
    frame = sys._getframe(depth)
    return frame_label(source_frame(frame, module_packages(forward_modules(frame))))


def user_source(stack_trace: str | None) -> str:
    """``file.py:LINE`` of the innermost user frame of a formatted ``stack_trace`` (graphs
    traced by make_fx with ``record_stack_traces``): the user's code first, else the
    innermost library frame (the modules running are not known here)."""
    frames = [(p, line) for p, line in _FRAME.findall(stack_trace or "") if is_user_file(p)]
    for path, line in sorted(reversed(frames), key=lambda f: is_library_file(f[0])):
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


def forward_modules(frame: FrameType | None) -> list[torch.nn.Module]:
    """The ``nn.Module`` s whose ``forward`` is running on the Python stack from ``frame`` out,
    innermost first."""
    found: list[torch.nn.Module] = []
    while frame is not None:
        if frame.f_code.co_name == "forward":
            obj = frame.f_locals.get("self")
            if isinstance(obj, torch.nn.Module) and (not found or found[-1] is not obj):
                found.append(obj)  # a super().forward() call is the same module
        frame = frame.f_back
    return found


def module_stack(
    found: list[torch.nn.Module],
    names: dict[int, str],
    entries: dict[tuple[str, type], tuple[str, str]] | None = None,
) -> dict[str, tuple[str, str]]:
    """The modules of :func:`forward_modules` as make_fx's ``nn_module_stack`` (``{key:
    (path, class)}``, outermost first, the class by its qualified name as make_fx's module
    stack tracer writes it); ``names`` maps ``id(module)`` to its path. With ``entries`` (a
    dict kept across the nodes of one trace), equal pairs are one tuple: thousands of nodes
    share a few hundred, and a dict of such tuples of strings is one Python's collector
    does not track."""
    stack = {}
    for depth, mod in enumerate(reversed(found)):
        path, cls = names.get(id(mod), ""), type(mod)
        entry = entries.get((path, cls)) if entries is not None else None
        if entry is None:
            entry = (path, f"{cls.__module__}.{cls.__qualname__}")
            if entries is not None:
                entries[(path, cls)] = entry
        stack[f"{path}@{depth}"] = entry  # unique keys when a module re-enters
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
    entries: dict[tuple[str, type], tuple[str, str]] = {}
    had = "create_node" in PythonKeyTracer.__dict__
    original = PythonKeyTracer.create_node

    def create_node(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        node = original(self, *args, **kwargs)
        if node.op not in ("placeholder", "output"):
            frame = sys._getframe(1)
            found = forward_modules(frame)
            node.meta["solar_source"] = frame_label(source_frame(frame, module_packages(found)))
            stack = module_stack(found, names, entries)
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

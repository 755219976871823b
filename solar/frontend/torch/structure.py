"""The tensors inside any Python structure a program takes or returns, and the structure rebuilt
around other tensors.

Models are called with and return more than tuples of tensors: dicts, dataclasses and
``ModelOutput`` s, namedtuples, and objects that merely hold tensors (a Hugging Face
``DynamicCache``/``StaticCache`` holds a list of layer objects, each holding ``keys`` and
``values``). :func:`flatten` walks all of them in a fixed order and returns the tensor leaves
with their paths; :func:`rebuild` makes a copy of the structure with other tensors in their
places (fake ones while tracing), copying every container on the way to a tensor so the
caller's objects are never modified by the trace.

Rules: tensors are leaves; ``None``, numbers, strings, dtypes and devices are kept as they are;
tuples, lists, dicts (``OrderedDict``, ``ModelOutput``), dataclasses and objects with a
``__dict__`` are walked (dict items in order, object attributes in definition order);
``nn.Module`` s, functions, classes and modules are never walked (they are code, not data).
An object reached twice is walked once (its tensors keep one position, the copy is shared).
"""

from __future__ import annotations

import copy
import dataclasses
import types
from collections.abc import Callable
from dataclasses import dataclass

import torch

#: How deep :func:`flatten` walks into nested objects (a guard against pathological graphs).
MAX_DEPTH = 32


@dataclass(frozen=True)
class Attr:
    """A path step into an object attribute (``cache.layers``), as opposed to an index/key."""

    name: str

    def __str__(self) -> str:
        return self.name


Path = tuple[object, ...]

_ATOMS = (str, bytes, int, float, complex, bool, type(None), torch.dtype, torch.device)
_OPAQUE = (
    torch.nn.Module,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type,
)


def _children(obj: object) -> list[tuple[object, object]] | None:
    """``[(step, child), ...]`` of a container, or None for a leaf/atom/opaque object."""
    if isinstance(obj, (torch.Tensor, *_ATOMS, *_OPAQUE)):
        return None
    if isinstance(obj, (tuple, list)):
        return list(enumerate(obj))
    if isinstance(obj, dict):
        return list(obj.items())
    if dataclasses.is_dataclass(obj):
        return [(Attr(f.name), getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        return [(Attr(k), v) for k, v in attrs.items()]
    return None


def flatten(obj: object, *, unique: bool = True) -> list[tuple[Path, torch.Tensor]]:
    """Every tensor inside ``obj`` with its path, in walk order. With ``unique`` a tensor object
    reached twice is listed once (at its first path: one graph input); without, at every
    place it appears (outputs). Containers are walked once either way."""
    out: list[tuple[Path, torch.Tensor]] = []
    seen: set[int] = set()

    def walk(x: object, path: Path) -> None:
        if isinstance(x, torch.Tensor):
            if not unique or id(x) not in seen:
                seen.add(id(x))
                out.append((path, x))
            return
        if id(x) in seen:
            return
        if len(path) > MAX_DEPTH:
            return
        kids = _children(x)
        if kids is None:
            return
        seen.add(id(x))
        for step, child in kids:
            walk(child, (*path, step))

    walk(obj, ())
    return out


def tensors(obj: object, *, unique: bool = True) -> list[torch.Tensor]:
    """The tensors of :func:`flatten`, without paths."""
    return [t for _, t in flatten(obj, unique=unique)]


def rebuild(
    obj: object,
    replace: Callable[[torch.Tensor], object],
    device: torch.device | None = None,
) -> object:
    """A copy of ``obj`` with every tensor ``t`` replaced by ``replace(t)`` (called once per
    distinct tensor). Containers that hold no tensor are shared with ``obj``; the others are
    copied (tuples and lists rebuilt, dicts, dataclasses and objects shallow-copied and updated),
    so ``obj`` itself is left untouched. With ``device``, a ``torch.device("meta")`` held next to
    the tensors (a KV cache's ``device`` attribute) becomes ``device``: meta tensors are traced
    as fake tensors on ``device``, and new tensors made on the object's device must join them."""
    memo: dict[int, object] = {}
    meta = torch.device("meta")

    def has_tensor(x: object, depth: int, visiting: set[int]) -> bool:
        if isinstance(x, torch.Tensor) or (device is not None and x == meta):
            return True
        if depth > MAX_DEPTH or id(x) in visiting:
            return False
        kids = _children(x)
        if not kids:
            return False
        visiting.add(id(x))
        return any(has_tensor(c, depth + 1, visiting) for _, c in kids)

    def walk(x: object, depth: int) -> object:
        if id(x) in memo:
            return memo[id(x)]
        if isinstance(x, torch.Tensor):
            memo[id(x)] = new = replace(x)
            return new
        if device is not None and isinstance(x, torch.device) and x == meta:
            return device
        kids = _children(x)
        if not kids or depth > MAX_DEPTH or not has_tensor(x, depth, set()):
            return x
        if isinstance(x, (tuple, list)):
            items = [walk(c, depth + 1) for c in x]
            if isinstance(x, list):
                memo[id(x)] = new_list = type(x)(items) if type(x) is not list else items
                return new_list
            new_tuple = type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
            memo[id(x)] = new_tuple
            return new_tuple
        new = _shallow_copy(x)
        memo[id(x)] = new
        for step, child in kids:
            value = walk(child, depth + 1)
            if value is child:
                continue
            if isinstance(step, Attr):
                object.__setattr__(new, step.name, value)
            else:
                new[step] = value  # type: ignore[index]
        return new

    return walk(obj, 0)


def _shallow_copy(x: object) -> object:
    try:
        return copy.copy(x)
    except Exception:  # an object whose copy protocol fails: copy its attributes by hand
        new = object.__new__(type(x))
        new.__dict__.update(vars(x))
        return new


def lookup(obj: object, path: Path) -> object:
    """The value at ``path`` inside ``obj`` (see :func:`flatten`)."""
    for step in path:
        obj = getattr(obj, step.name) if isinstance(step, Attr) else obj[step]  # type: ignore[index]
    return obj


def path_label(path: Path) -> str:
    """``past_key_values_layers_0_keys``-style text of a path (for IR tensor names)."""
    return "_".join(str(s) for s in path)

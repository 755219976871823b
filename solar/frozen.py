"""Read-only containers for results: :class:`FrozenDict`, :func:`freeze` and :class:`Frozen`.

Results are frozen dataclasses (they cannot change under the code that holds them). Their
list fields become tuples and their dict fields :class:`FrozenDict` s: a ``dict`` that refuses
every change (its lists :class:`FrozenList` s), so it still compares equal to a dict with the
same items, pickles, and ``json.dumps`` writes it exactly as the dict it was. :class:`Frozen`
is the mixin that freezes a dataclass's fields once, after ``__init__``: constructors keep
taking lists and dicts. :class:`Draft` holds a result's fields while code fills them in steps.
"""

from __future__ import annotations

import dataclasses
from typing import NoReturn

__all__ = ["Draft", "Frozen", "FrozenDict", "FrozenList", "freeze", "thaw"]


class FrozenDict(dict):
    """A dict that refuses changes (``TypeError``); equal to, and JSON as, the same dict."""

    __slots__ = ()

    def _refuse(self, *args, **kwargs) -> NoReturn:
        raise TypeError(f"{type(self).__name__} is read-only (frozen data: build a new one)")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return (type(self), (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))


class FrozenList(list):
    """A list inside a :class:`FrozenDict` that refuses changes; equal to, and JSON as, the same
    list (so a frozen mapping still equals the dict it was made from)."""

    __slots__ = ()

    def _refuse(self, *args, **kwargs) -> NoReturn:
        raise TypeError(f"{type(self).__name__} is read-only (frozen data: build a new one)")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self):
        return (type(self), (list(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))


def freeze(value: object) -> object:
    """``value`` with every dict (deeply) a :class:`FrozenDict` and every list a tuple (inside a
    mapping a :class:`FrozenList`, equal to the list it was); other objects as they are
    (dataclasses freeze their own fields)."""
    if isinstance(value, list) or (type(value) is tuple):
        return tuple(_frozen_item(v) for v in value)
    return _frozen_item(value)


def _frozen_item(value: object) -> object:
    if isinstance(value, (FrozenDict, FrozenList)):
        return value
    if isinstance(value, dict):
        return FrozenDict({k: _frozen_in_mapping(v) for k, v in value.items()})
    if isinstance(value, list) or (type(value) is tuple):
        return tuple(_frozen_item(v) for v in value)
    return value


def _frozen_in_mapping(value: object) -> object:
    if isinstance(value, list) and not isinstance(value, FrozenList):
        return FrozenList(_frozen_in_mapping(v) for v in value)
    return _frozen_item(value)


def thaw(value: object) -> object:
    """Plain data of a frozen value: every mapping (deeply) a new ``dict``, every tuple a
    ``list`` (what :func:`freeze` took, as JSON would read it back)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if type(value) is tuple or isinstance(value, list):
        return [thaw(v) for v in value]
    return value


class Frozen:
    """Mixin of frozen dataclasses: ``__post_init__`` freezes every field whose name does not
    start with ``_`` (those are private memo caches, outside equality)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if not f.name.startswith("_"):
                value = getattr(self, f.name)
                frozen = freeze(value)
                if frozen is not value:
                    object.__setattr__(self, f.name, frozen)


class Draft:
    """The fields of a frozen dataclass ``cls`` while code fills them in steps (set and mutate
    them freely: tuples and mappings given or defaulted are lists and dicts here); :meth:`build`
    makes the frozen result. Other attributes (a result's
    properties) are read off a result built for the purpose."""

    def __init__(self, cls: type, /, *args: object, **kwargs: object) -> None:
        fields = [f for f in dataclasses.fields(cls) if f.init]
        values = dict(zip((f.name for f in fields), args))
        values.update(kwargs)
        for f in fields:
            if f.name not in values:
                if f.default is not dataclasses.MISSING:
                    values[f.name] = f.default
                elif f.default_factory is not dataclasses.MISSING:
                    values[f.name] = f.default_factory()
        object.__setattr__(self, "_cls", cls)
        object.__setattr__(self, "_values", {k: _editable(v) for k, v in values.items()})

    def __getattr__(self, name: str) -> object:
        values = self.__dict__["_values"]
        if name in values:
            return values[name]
        return getattr(self.build(), name)

    def __setattr__(self, name: str, value: object) -> None:
        if name not in self._values:
            raise AttributeError(f"{self._cls.__name__} has no field {name!r}")
        self._values[name] = value

    def build(self):
        """The frozen result of the fields as they are now (the draft stays as it is)."""
        return self._cls(**self._values)


def _editable(value: object) -> object:
    """A draft's copy of a field: a tuple as a list, a mapping as a dict (one level)."""
    if type(value) is tuple:
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value

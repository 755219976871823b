"""Marks: which dims of a program's inputs are which symbolic sizes."""

from __future__ import annotations

from collections.abc import Mapping

from solar.symbolic.size import symbol

#: ``{name: (input, dim)}``, or ``{name: [(input, dim), ...]}`` for a size several dims share;
#: ``input`` is a positional input's index or a binding such as ``("param", "fc.weight")``
Marks = Mapping[str, object]


def mark_dims(marks: Marks) -> dict[tuple[object, int], tuple[str, object]]:
    """``{(binding, dim): (name, symbol)}`` of the marks (a binding is ``(\"input\", i)``
    for a positional input, or the binding given)."""
    out: dict[tuple[object, int], tuple[str, object]] = {}
    for name, where in marks.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"symbolic size name {name!r} must be an identifier")
        places = (
            [where]
            if isinstance(where, tuple) and len(where) == 2 and isinstance(where[1], int)
            else list(where)
        )  # type: ignore[arg-type]
        for place in places:
            if not (isinstance(place, tuple) and len(place) == 2 and isinstance(place[1], int)):
                raise ValueError(
                    f"symbolic size {name!r}: expected (input index, dim), got {place!r}"
                )
            leaf, dim = place
            binding = ("input", leaf) if isinstance(leaf, int) else leaf
            out[(binding, dim)] = (name, symbol(name))
    return out

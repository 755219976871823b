"""Marks: which dims of a program's inputs are which symbolic sizes."""

from __future__ import annotations

from collections.abc import Mapping

from solar.algebra.size import symbol

#: ``{name: (input, dim)}``, or ``{name: [(input, dim), ...]}`` for a size several dims share;
#: ``input`` is a positional input's index or a binding such as ``("param", "fc.weight")``; a
#: place ``(input, dim, offset)`` is a dim of ``name + offset`` (a KV cache of ``context + 1``
#: slots)
Marks = Mapping[str, object]


def _is_place(x: object) -> bool:
    return (
        isinstance(x, tuple)
        and len(x) in (2, 3)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in x[1:])
    )


def mark_dims(marks: Marks) -> dict[tuple[object, int], tuple[str, object]]:
    """``{(binding, dim): (name, expression)}`` of the marks: a binding is ``("input", i)``
    for a positional input, or the binding given; the expression is the symbol plus the
    place's offset."""
    out: dict[tuple[object, int], tuple[str, object]] = {}
    for name, where in marks.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"symbolic size name {name!r} must be an identifier")
        places = [where] if _is_place(where) else list(where)  # type: ignore[call-overload]
        for place in places:
            if not _is_place(place):
                raise ValueError(
                    f"symbolic size {name!r}: expected (input index, dim), got {place!r}"
                )
            leaf, dim, *offset = place
            binding = ("input", leaf) if isinstance(leaf, int) else leaf
            out[(binding, dim)] = (name, symbol(name) + sum(offset))
    return out

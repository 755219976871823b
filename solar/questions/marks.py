"""Where a swept size appears in a program: the dims a symbolic trace makes that size.

A sweep builds the program at each size ``n`` (``make(n)`` -> model and inputs). Built at
two sizes ``n0 != n1``, every tensor the trace takes (each input, however nested, and, when
the model is rebuilt per size, each parameter and buffer) is compared dim by dim: a dim that
is ``n0`` at ``n0`` and ``n1`` at ``n1`` is the size itself and becomes its symbol; a dim
equal at both is a constant. Anything else (a dim ``2n`` or ``n + 1``, a tensor whose rank
or presence changes, no dim that changes at all) leaves the sweep on one trace per point,
and :func:`size_marks` says which in one line.

That two builds decide the marks is an assumption (a dim could equal ``n`` at both probes
and not elsewhere); the sweep checks the formula against a trace at a second size and says
so.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from solar.frontend.torch import structure

Leaf = tuple[object, torch.Tensor]  # (a binding as solar.bound(symbolic=...) takes it, tensor)


def size_marks(
    param: str, built0: tuple[object, tuple], built1: tuple[object, tuple], n0: int, n1: int
) -> tuple[list[tuple[object, int]] | None, str]:
    """``(places, "")`` where ``places`` are the ``(input, dim)`` of the dims equal to the
    swept size (``solar.bound(symbolic={param: places})``), or ``(None, why)``.
    ``built0``/``built1`` are ``(model, inputs)`` at sizes ``n0``/``n1``."""
    (m0, in0), (m1, in1) = built0, built1
    rebuilt = m0 is not m1
    leaves0 = dict(_leaves(m0 if rebuilt else None, in0))
    leaves1 = dict(_leaves(m1 if rebuilt else None, in1))
    if leaves0.keys() != leaves1.keys():
        diff = sorted(map(str, leaves0.keys() ^ leaves1.keys()))[0]
        return None, f"the program's tensors differ between {param}={n0} and {param}={n1} ({diff})"
    places: list[tuple[object, int]] = []
    for where, t0 in leaves0.items():
        s0, s1 = tuple(t0.shape), tuple(leaves1[where].shape)
        if len(s0) != len(s1):
            return None, f"{_label(where)} has {len(s0)} dims at {param}={n0}, {len(s1)} at {n1}"
        for d, (a, b) in enumerate(zip(s0, s1, strict=True)):
            if a == b:
                continue
            if (a, b) != (n0, n1):
                return None, (
                    f"{_label(where)} dim {d} is {a} at {param}={n0} and {b} at {param}={n1}: "
                    f"not {param} itself (a symbol marks a dim equal to the swept size)"
                )
            places.append((where, d))
    if not places:
        return None, f"no dim of the program's inputs changes with {param}"
    return places, ""


def _leaves(model: object, inputs: object) -> Iterator[Leaf]:
    """The tensors a trace binds, keyed as ``solar.bound(symbolic=...)`` names them:
    ``("param", name)``, ``("buffer", name)``, an input's index, or ``("input", path)`` for a
    tensor nested in an input (:func:`solar.frontend.torch.trace.trace_torch`'s bindings)."""
    if isinstance(model, torch.nn.Module):
        yield from ((("param", k), t) for k, t in model.named_parameters())
        yield from ((("buffer", k), t) for k, t in model.named_buffers())
    args = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    for (_, first, *rest), t in structure.flatten((args, {})):
        yield (first if not rest else ("input", (first, *rest))), t


def _label(where: object) -> str:
    if isinstance(where, int):
        return f"input {where}"
    kind, key = where  # type: ignore[misc]
    return f"{kind} {key!r}" if kind != "input" else f"input {structure.path_label(key)}"

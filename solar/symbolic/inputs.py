"""The graph inputs of a built problem file, and a check that its structure follows the sizes.

:func:`graph_inputs` lists the tensors a trace binds (parameters, buffers, ``get_inputs()``
leaves) as :func:`solar.frontend.torch.trace.trace_torch` binds them.

:func:`probe` builds the problem file again with one size constant at another value (plain
numbers, on the meta device: nothing is traced) and compares its graph inputs with what the
symbolic dims predict there. A constant that changes the program's structure in a way the
tracker cannot see (a loop over it inside a library, ``nn.LSTM(num_layers=LAYERS)``; a size
computed through ``math`` or numpy) shows up as a parameter that appears or a shape that
differs: the formula is then specialized to the constant's value, and the guard says why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import sympy

from solar.algebra.size import Recording, symbol

Binding = tuple[str, object]


def graph_inputs(model, inputs: tuple) -> list[tuple[Binding, object, str]]:
    """``(binding, tensor, label)`` of the trace's graph inputs, in its order."""
    import torch

    from solar.frontend.torch import structure
    from solar.frontend.torch.wrappers import unwrap_module

    out: list[tuple[Binding, object, str]] = []
    module, _ = unwrap_module(model)
    if isinstance(module, torch.nn.Module):
        for n, t in module.named_parameters():
            out.append((("param", n), t, f"parameter {n!r}"))
        for n, t in module.named_buffers():
            out.append((("buffer", n), t, f"buffer {n!r}"))
    for (_, first, *rest), t in structure.flatten((inputs, {})):
        key = first if not rest else (first, *rest)
        where = "".join(f"[{k!r}]" for k in rest)
        out.append((("input", key), t, f"get_inputs()[{first}]{where}"))
    return out


def _values(point: Mapping[str, int]) -> dict[sympy.Symbol, int]:
    return {symbol(k): v for k, v in point.items()}


def probe(
    sizes: Mapping[str, int],
    expected: Mapping[Binding, tuple[sympy.Expr, ...]],
    rec: Recording,
    build_at: Callable[[Mapping[str, int]], tuple[object, tuple]],
) -> None:
    """For each size, build the program with it at another value inside the guards recorded
    so far (``build_at(sizes)`` -> ``(model, inputs)``) and compare its graph inputs with
    ``expected`` (each binding's dims as expressions); where they differ, record that the
    size is used as a plain number (the formula is specialized to its value)."""
    from solar.algebra.region import Region

    region = Region.of([symbol(n) for n in sizes], rec.guards)
    for name, value in sizes.items():
        if name in region.specializations:
            continue
        other = next(
            (
                v
                for v in (2 * value, value + 1, 3 * value, value - 1)
                if v >= 1 and region.holds(_values({**sizes, name: v}))
            ),
            None,
        )
        if other is None:
            continue
        point = {**sizes, name: other}
        try:
            model, inputs = build_at(point)
        except Exception as e:  # the program cannot be built there: nothing to compare
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            why = f"building it at {name}={other} fails ({type(e).__name__}: {first})"
        else:
            why = _difference(model, inputs, expected, point)
        if why:
            with rec.at(f"the program's structure follows {name} where solar cannot see: {why}"):
                rec.add(sympy.Eq(symbol(name), value))


def _difference(model, inputs, expected, point: Mapping[str, int]) -> str:
    """How the graph inputs built at ``point`` differ from ``expected`` there ("" if not)."""
    got = {
        b: (label, tuple(int(n) for n in t.shape)) for b, t, label in graph_inputs(model, inputs)
    }
    at = f"at {', '.join(f'{k}={v}' for k, v in point.items())}"
    for b in expected:
        if b not in got:
            return f"{b[0]} {b[1]!r} is gone {at}"
    for b, (label, shape) in got.items():
        if b not in expected:
            return f"{label} appears {at}"
        want = tuple(int(e.subs(_values(point))) for e in expected[b])
        if want != shape:
            return f"{label} is {shape}, not {want}, {at}"
    return ""


__all__ = ["graph_inputs", "probe"]

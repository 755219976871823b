"""A definition's declared outputs against what a function returns: the reference before it is
bounded (a reference that returns ``[n, 64]`` where ``[n, 128]`` is declared, or one output
where two are declared, is an error, not a bound of some other operator), and a solution's
return value when it is scored.

What a function may return, as SOL-ExecBench reads it: one tensor (one declared output), a
tuple or list (the declared outputs in order), or a dict by output name; a Python scalar for an
output declared with ``"shape": null``.
"""

from __future__ import annotations

from solar.definition.axes import shape_of
from solar.definition.schema import Definition, DefinitionError


def named_outputs(defn: Definition, result, who: str = "the reference") -> dict[str, object]:
    """``result`` by declared output name; a count or name that differs is a one-line
    :class:`DefinitionError` naming it."""
    names = list(defn.outputs)
    if isinstance(result, dict):
        missing = [n for n in names if n not in result]
        if missing:
            raise DefinitionError(f"{defn.where}: {who} does not return output {missing[0]!r}")
        extra = [k for k in result if k not in defn.outputs]
        if extra:
            raise DefinitionError(
                f"{defn.where}: {who} returns {extra[0]!r}, which is not a declared output "
                f"(declared: {', '.join(names)})"
            )
        return {n: result[n] for n in names}
    values = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(values) != len(names):
        raise DefinitionError(
            f"{defn.where}: {who} returns {_count(len(values))}, the definition declares "
            f"{_count(len(names))} ({', '.join(names)})"
        )
    return dict(zip(names, values, strict=True))


def _count(n: int) -> str:
    return f"{n} output" + ("" if n == 1 else "s")


def check_outputs(
    defn: Definition, axes: dict[str, int], result, who: str = "the reference"
) -> dict[str, object]:
    """``result`` by output name, each checked against its declaration: a tensor of the
    declared shape (axes resolved with ``axes``; symbolic dims of a symbolic trace are not
    compared) and dtype, or a Python scalar where ``"shape": null`` is declared. The first
    difference is a one-line :class:`DefinitionError` naming the output and the difference."""
    import torch

    from solar.definition.inputs import torch_dtype

    named = named_outputs(defn, result, who)
    for name, value in named.items():
        spec = defn.outputs[name]
        where = f"{defn.where}: {who}'s output {name!r}"
        if spec.is_scalar:
            if isinstance(value, torch.Tensor) and value.dim() != 0:
                raise DefinitionError(
                    f"{where} has shape {tuple(value.shape)}, declared a scalar (shape null)"
                )
            continue
        if not isinstance(value, torch.Tensor):
            raise DefinitionError(f"{where} is a {type(value).__name__}, declared a tensor")
        want = shape_of(spec, axes)
        got = tuple(value.shape)
        same = len(got) == len(want) and all(
            not isinstance(g, int) or g == w for g, w in zip(got, want, strict=True)
        )
        if not same:
            declared = "[" + ", ".join(spec.shape or ()) + "]"
            raise DefinitionError(
                f"{where} has shape {_shape(got)}, the definition declares {declared} = "
                f"{_shape(want)}"
            )
        if value.dtype != torch_dtype(spec.dtype):
            raise DefinitionError(
                f"{where} has dtype {str(value.dtype).removeprefix('torch.')}, the definition "
                f"declares {spec.dtype}"
            )
    return named


def _shape(dims) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"

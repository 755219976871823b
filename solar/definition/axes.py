"""Axis values of a workload and the checks a definition states: ``const`` axes are fixed,
``var`` axes come from the workload, ``expr`` axes are Python expressions over the others;
``constraints`` are Python expressions over axes and inputs that must hold."""

from __future__ import annotations

import math

from solar.definition.schema import Definition, DefinitionError, TensorSpec, Workload

_SAFE = {
    "min": min,
    "max": max,
    "abs": abs,
    "len": len,
    "int": int,
    "math": math,
    "all": all,
    "any": any,
    "sum": sum,
    "range": range,
}


def evaluate(expr: str, names: dict, where: str) -> object:
    """``expr`` evaluated over ``names`` (axes, inputs) and a few builtins."""
    try:
        return eval(compile(expr, "<expression>", "eval"), {"__builtins__": _SAFE}, dict(names))  # noqa: S307
    except Exception as e:
        raise DefinitionError(
            f"{where}: evaluating {expr!r} failed: {type(e).__name__}: {e}"
        ) from None


def axis_values(defn: Definition, wl: Workload) -> dict[str, int]:
    """Every axis's value for workload ``wl``: const, then var (from the workload), then expr
    (in an order in which each expression's axes are known)."""
    where = f"{defn.where}: workload {wl.uuid}"
    values: dict[str, int] = {}
    for name, ax in defn.axes.items():
        if ax.kind == "const":
            values[name] = int(ax.value or 0)
            if name in wl.axes and wl.axes[name] != ax.value:
                raise DefinitionError(
                    f"{where}: const axis {name!r} is {ax.value}, the workload says {wl.axes[name]}"
                )
        elif ax.kind == "var":
            if name not in wl.axes:
                raise DefinitionError(
                    f"{where}: var axis {name!r} has no value in the workload's axes"
                )
            values[name] = int(wl.axes[name])
    pending = {n: ax.expression for n, ax in defn.axes.items() if ax.kind == "expr"}
    while pending:
        ready = {
            n: e
            for n, e in pending.items()
            if all(v in values for v in _names_in(e) if v in defn.axes)
        }
        if not ready:
            raise DefinitionError(
                f"{where}: expr axes {', '.join(pending)} depend on each other in a cycle"
            )
        for n, e in ready.items():
            v = evaluate(e, values, where)
            if not isinstance(v, (int, float)) or v != int(v) or v < 0:
                raise DefinitionError(f"{where}: expr axis {n!r} = {e} gave {v!r}, not a size")
            values[n] = int(v)
            del pending[n]
    return values


def _names_in(expr: str) -> set[str]:
    import ast

    return {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}


def shape_of(spec: TensorSpec, axes: dict[str, int]) -> tuple[int, ...]:
    return tuple(axes[a] for a in spec.shape or ())


def check_constraints(defn: Definition, wl: Workload, axes: dict[str, int], inputs: dict) -> None:
    """Every constraint must hold for the workload's axes and (real index / fake float) inputs."""
    names = {**axes, **inputs}
    for c in defn.constraints:
        ok = evaluate(c, names, f"{defn.where}: workload {wl.uuid}: constraint")
        if not bool(ok):
            raise DefinitionError(
                f"{defn.where}: workload {wl.uuid}: constraint {c!r} does not hold; give the "
                "definition a custom_inputs_entrypoint that makes consistent inputs, or "
                "fix the workload"
            )

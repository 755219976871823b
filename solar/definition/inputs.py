"""The inputs of one workload. Integer tensors (index tensors: ``kv_indptr``, ``kv_indices``,
expert ids) and scalars carry real values, made by the definition's
``custom_inputs_entrypoint`` (called as SOL-ExecBench calls it: ``fn(axes_and_scalars,
device)``, every axis and the workload's scalar inputs; an input marked ``{"type": "custom"}``
must be among what it returns), read from safetensors or given as scalars; float tensors are
meta tensors when bounding (nothing allocated) and random data on a device when executing.
Random integer tensors larger than :data:`INDEX_NUMEL` are packed data, not indices: fake when
bounding (a host read of one is then an error naming it)."""

from __future__ import annotations

import linecache
import math
import sys
import types
from dataclasses import dataclass
from pathlib import Path

from solar.definition.axes import axis_values, check_constraints, shape_of
from solar.definition.schema import Definition, DefinitionError, TensorSpec, Workload


@dataclass
class WorkloadInputs:
    """``values`` in the definition's input order: a tensor (meta or real) or a Python scalar;
    ``real`` the real values of the integer tensors (by input name)."""

    axes: dict[str, int]
    values: dict[str, object]
    real: dict[str, object]


def reference_module(defn: Definition) -> types.ModuleType:
    """The reference source run as a module (``torch``, ``math`` and ``F`` importable as usual)."""
    mod = types.ModuleType(f"solar_definition_{defn.name}")
    filename = f"{defn.name}.reference"  # not "<...>": the provenance of operators reads it
    mod.__file__ = filename
    # importable by name, as torch.compile (dynamo) looks a function's module up
    sys.modules[mod.__name__] = mod
    # its source findable by inspect, as decorators that read it (@triton.jit) need
    lines = defn.reference.splitlines(keepends=True)
    linecache.cache[filename] = (len(defn.reference), None, lines, filename)
    try:
        exec(compile(defn.reference, filename, "exec"), mod.__dict__)  # noqa: S102
    except Exception as e:
        raise DefinitionError(
            f"{defn.where}: running the reference source failed: {type(e).__name__}: {e}"
        ) from None
    return mod


#: random integer tensors up to this many elements carry real values when bounding (index
#: tensors); larger ones are packed data (int8/int4/FP4 weights) and stay fake
INDEX_NUMEL = 1 << 16


def torch_dtype(name: str):
    import torch

    return getattr(torch, name)


def _random(spec: TensorSpec, shape, device, real_floats: bool, gen):
    import torch

    dt = torch_dtype(spec.dtype)
    if spec.is_integer:  # packed data: any byte; an index with no entrypoint: 0 or 1
        lo, hi = {"uint8": (0, 256), "int8": (-128, 128)}.get(spec.dtype, (0, 2))
        return torch.randint(lo, hi, shape, generator=gen, dtype=torch.int64).to(dt)
    if not real_floats:
        return torch.empty(shape, dtype=dt, device="meta")
    if spec.dtype == "float4_e2m1fn_x2":  # random packed bytes
        return torch.randint(0, 256, shape, generator=gen, dtype=torch.uint8).view(dt).to(device)
    x = torch.randn(shape, generator=gen, dtype=torch.float32)
    return x.to(dt).to(device)


def _safetensors(defn: Definition, name: str, path: str, key: str):
    from safetensors.torch import load_file

    base = defn.path.parent if defn.path else Path(".")
    p = Path(path) if Path(path).is_absolute() else base / path
    if not p.is_file():
        raise DefinitionError(f"{defn.where}: input {name!r}: safetensors file {p} not found")
    data = load_file(str(p))
    if key not in data:
        raise DefinitionError(f"{defn.where}: input {name!r}: {p} has no tensor {key!r}")
    return data[key]


def make_inputs(
    defn: Definition,
    wl: Workload,
    *,
    module: types.ModuleType | None = None,
    device: str = "cpu",
    real_floats: bool = False,
    seed: int = 0,
) -> WorkloadInputs:
    """The inputs of ``wl``: see the module docstring. Constraints are checked on the result."""
    import torch

    axes = axis_values(defn, wl)
    gen = torch.Generator().manual_seed(seed)
    made: dict[str, object] = {}
    if defn.custom_inputs_entrypoint:
        module = module or reference_module(defn)
        fn = getattr(module, defn.custom_inputs_entrypoint, None)
        if not callable(fn):
            raise DefinitionError(
                f"{defn.where}: custom_inputs_entrypoint "
                f"{defn.custom_inputs_entrypoint!r} is not a function of the reference"
            )
        torch.manual_seed(seed)
        scalars = {n: s.value for n, s in wl.inputs.items() if s.kind == "scalar"}
        where_made = torch.device(device if real_floats else "cpu")
        try:
            made = dict(fn({**axes, **scalars}, where_made))
        except Exception as e:
            raise DefinitionError(
                f"{defn.where}: workload {wl.uuid}: {defn.custom_inputs_entrypoint}(...) "
                f"failed: {type(e).__name__}: {e}"
            ) from None
    missing = [n for n, s in wl.inputs.items() if s.kind == "custom" and n not in made]
    if missing:
        raise DefinitionError(
            f"{defn.where}: workload {wl.uuid}: input {missing[0]!r} is "
            f'{{"type": "custom"}} but {defn.custom_inputs_entrypoint}(...) returns no '
            f"{missing[0]!r} (it returns {', '.join(map(repr, made)) or 'nothing'})"
        )
    values: dict[str, object] = {}
    real: dict[str, object] = {}
    for name, spec in defn.inputs.items():
        src = wl.inputs.get(name)
        shape = shape_of(spec, axes)
        if src is not None and src.kind == "scalar":
            v = src.value
        elif src is not None and src.kind == "safetensors":
            v = _safetensors(defn, name, src.path or "", src.tensor_key or "")
        elif name in made:
            v = made[name]
        elif spec.is_scalar:
            raise DefinitionError(
                f"{defn.where}: workload {wl.uuid}: scalar input {name!r} needs "
                '{"type": "scalar", "value"}'
            )
        elif spec.is_integer and not real_floats and math.prod(shape) > INDEX_NUMEL:
            v = torch.empty(shape, dtype=torch_dtype(spec.dtype), device="meta")  # packed data
        else:
            v = _random(spec, shape, device, real_floats, gen)
        if isinstance(v, torch.Tensor) and v.device.type == "meta":
            values[name] = v
            continue
        if isinstance(v, torch.Tensor):
            if not spec.is_scalar and tuple(v.shape) != shape:
                raise DefinitionError(
                    f"{defn.where}: workload {wl.uuid}: input {name!r} has shape "
                    f"{tuple(v.shape)}, the axes give {shape}"
                )
            v = v.to(torch_dtype(spec.dtype)) if v.dtype != torch_dtype(spec.dtype) else v
            if spec.is_integer:
                real[name] = v
                v = v.to(device) if real_floats else v.to("meta")
            elif real_floats:
                v = v.to(device)
            else:
                v = torch.empty(shape, dtype=v.dtype, device="meta")
        values[name] = v
    check_constraints(defn, wl, axes, {n: real.get(n, v) for n, v in values.items()})
    return WorkloadInputs(axes, values, real)

"""The FlashInfer-Trace problem format that SOL-ExecBench uses, as dataclasses, with a loader
whose errors are one line naming the file and the field.

A *definition* (``definition.json``): ``name``; optional ``op_type``, ``description``, ``tags``;
``axes`` (name -> ``{"type": "const", "value": N}`` | ``{"type": "var"}`` | ``{"type": "expr",
"expression": "batch_size * seq_len"}``); ``constraints`` (Python expressions over axes and
inputs); ``inputs``/``outputs`` (name -> ``{"shape": [axis names] | [] | null, "dtype": ...}``,
``null``: a Python scalar); ``reference`` (Python source defining ``run(...)``); optional
``custom_inputs_entrypoint`` (a function of ``reference`` that makes consistent inputs:
``fn(axes: dict[str, int], device) -> dict[name, tensor or scalar]``).

A *workload* (one line of ``workload.jsonl``): ``uuid``, ``axes`` (var axis -> value),
``inputs`` (name -> ``{"type": "random"}`` | ``{"type": "scalar", "value": v}`` |
``{"type": "safetensors", "path", "tensor_key"}`` | ``{"type": "custom"}``: made by the
definition's ``custom_inputs_entrypoint``), optional ``tolerance`` (SOL-ExecBench's
``max_atol``, ``max_rtol``, ``required_matched_ratio``, ``max_error_cap``,
``allow_negative_inf``; FlashInfer's ``atol``/``rtol`` read as ``max_atol``/``max_rtol``).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

#: dtype names of the format (FlashInfer spells FP8/FP4 both with and without ``fn``)
DTYPES = {
    "float64": "float64",
    "float32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e4m3": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float4_e2m1fn_x2": "float4_e2m1fn_x2",
    "float4_e2m1": "float4_e2m1fn_x2",
    "int64": "int64",
    "int32": "int32",
    "int16": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
}
INTEGER_DTYPES = frozenset({"int64", "int32", "int16", "int8", "uint8", "bool"})


class DefinitionError(ValueError):
    """A definition or workload that cannot be used; the message is one line."""


@dataclass(frozen=True)
class Axis:
    kind: str  # "const", "var" or "expr"
    value: int | None = None
    expression: str | None = None


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[str, ...] | None  # None: a Python scalar
    dtype: str

    @property
    def is_scalar(self) -> bool:
        return self.shape is None

    @property
    def is_integer(self) -> bool:
        return self.dtype in INTEGER_DTYPES


@dataclass
class Definition:
    name: str
    axes: dict[str, Axis]
    inputs: dict[str, TensorSpec]
    outputs: dict[str, TensorSpec]
    reference: str
    constraints: list[str] = field(default_factory=list)
    op_type: str = ""
    description: str = ""
    custom_inputs_entrypoint: str | None = None
    path: Path | None = None

    @property
    def where(self) -> str:
        return str(self.path) if self.path else f"definition {self.name!r}"


@dataclass(frozen=True)
class InputSource:
    kind: str  # "random", "scalar", "safetensors" or "custom"
    value: object = None
    path: str | None = None
    tensor_key: str | None = None


@dataclass(frozen=True)
class Tolerance:
    """When a solution's output matches the reference's (SOL-ExecBench's rule): an element
    matches if ``|out - ref| <= max_atol + max_rtol * |ref|``; the output matches if at least
    ``required_matched_ratio`` of its elements do and (when set) no error exceeds
    ``max_error_cap``. The defaults are SOL-ExecBench's."""

    max_atol: float = 1e-2
    max_rtol: float = 1e-2
    required_matched_ratio: float = 0.99
    max_error_cap: float | None = None
    allow_negative_inf: bool = False


@dataclass
class Workload:
    uuid: str
    axes: dict[str, int]
    inputs: dict[str, InputSource]
    tolerance: Tolerance = field(default_factory=Tolerance)
    raw: dict = field(default_factory=dict, repr=False)  # the line as written (for traces)


def _need(d: dict, key: str, kind: type | tuple, where: str, what: str):
    if key not in d:
        raise DefinitionError(f"{where}: {what} has no {key!r} field")
    if not isinstance(d[key], kind):
        raise DefinitionError(f"{where}: {what}.{key} must be {_kind_name(kind)}, got {d[key]!r}")
    return d[key]


def _kind_name(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(
        {dict: "an object", list: "a list", str: "a string", int: "an integer"}.get(k, k.__name__)
        for k in kinds
    )


def parse_definition(doc: dict, path: Path | None = None) -> Definition:
    """A :class:`Definition` from a parsed ``definition.json``."""
    where = str(path) if path else "definition"
    if not isinstance(doc, dict):
        raise DefinitionError(f"{where}: a definition is a JSON object")
    name = _need(doc, "name", str, where, "the definition")
    axes = {
        a: _axis(a, spec, where)
        for a, spec in _need(doc, "axes", dict, where, "the definition").items()
    }
    tensors = {}
    for side in ("inputs", "outputs"):
        tensors[side] = {
            n: _tensor(n, spec, side, axes, where)
            for n, spec in _need(doc, side, dict, where, "the definition").items()
        }
    reference = _need(doc, "reference", str, where, "the definition")
    _check_reference(reference, list(tensors["inputs"]), where)
    constraints = doc.get("constraints") or []
    if not isinstance(constraints, list) or not all(isinstance(c, str) for c in constraints):
        raise DefinitionError(f"{where}: constraints must be a list of Python expressions")
    for c in constraints:
        try:
            ast.parse(c, mode="eval")
        except SyntaxError:
            raise DefinitionError(f"{where}: constraint {c!r} is not a Python expression") from None
    entry = doc.get("custom_inputs_entrypoint")
    if entry is not None and not isinstance(entry, str):
        raise DefinitionError(f"{where}: custom_inputs_entrypoint must be a function name")
    return Definition(
        name,
        axes,
        tensors["inputs"],
        tensors["outputs"],
        reference,
        list(constraints),
        str(doc.get("op_type") or doc.get("type") or ""),
        str(doc.get("description") or ""),
        entry,
        path,
    )


def _axis(name: str, spec, where: str) -> Axis:
    if not isinstance(spec, dict) or spec.get("type") not in ("const", "var", "expr"):
        raise DefinitionError(
            f'{where}: axis {name!r} must be {{"type": "const"|"var"|"expr", ...}}, got {spec!r}'
        )
    if spec["type"] == "const":
        v = spec.get("value")
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise DefinitionError(
                f"{where}: const axis {name!r} needs a non-negative integer value"
            )
        return Axis("const", value=v)
    if spec["type"] == "expr":
        e = spec.get("expression")
        if not isinstance(e, str):
            raise DefinitionError(f"{where}: expr axis {name!r} needs an 'expression' string")
        return Axis("expr", expression=e)
    return Axis("var")


def _tensor(name: str, spec, side: str, axes: dict, where: str) -> TensorSpec:
    what = f"{side[:-1]} {name!r}"
    if not isinstance(spec, dict):
        raise DefinitionError(f"{where}: {what} must be an object with shape and dtype")
    dtype = spec.get("dtype")
    if dtype not in DTYPES:
        raise DefinitionError(f"{where}: {what} has dtype {dtype!r}; known: {', '.join(DTYPES)}")
    shape = spec.get("shape")
    if shape is not None:
        if not isinstance(shape, list):
            raise DefinitionError(f"{where}: {what}.shape must be a list of axis names or null")
        for a in shape:
            if a not in axes:
                raise DefinitionError(
                    f"{where}: {what} uses axis {a!r}, which axes does not define"
                )
        shape = tuple(shape)
    return TensorSpec(shape, DTYPES[dtype])


def _check_reference(source: str, inputs: list[str], where: str) -> None:
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise DefinitionError(
            f"{where}: reference is not valid Python: line {e.lineno}: {e.msg}"
        ) from None
    if not any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in tree.body):
        raise DefinitionError(f"{where}: reference defines no top-level run(...) function")


def parse_workload(doc: dict, defn: Definition, where: str) -> Workload:
    if not isinstance(doc, dict):
        raise DefinitionError(f"{where}: a workload is a JSON object")
    uuid = str(doc.get("uuid") or "")
    if not uuid:
        raise DefinitionError(f"{where}: workload has no 'uuid'")
    axes = doc.get("axes") or {}
    if not isinstance(axes, dict):
        raise DefinitionError(f"{where}: workload {uuid}: axes must be an object")
    for a, v in axes.items():
        if a not in defn.axes:
            raise DefinitionError(
                f"{where}: workload {uuid}: axis {a!r} is not an axis of {defn.name}"
            )
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise DefinitionError(
                f"{where}: workload {uuid}: axis {a!r} must be a non-negative integer"
            )
    inputs = {}
    for n, spec in (doc.get("inputs") or {}).items():
        if n not in defn.inputs:
            raise DefinitionError(f"{where}: workload {uuid}: {n!r} is not an input of {defn.name}")
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind == "random":
            inputs[n] = InputSource("random")
        elif kind == "scalar" and "value" in spec:
            inputs[n] = InputSource("scalar", value=spec["value"])
        elif kind == "safetensors" and spec.get("path") and spec.get("tensor_key"):
            inputs[n] = InputSource("safetensors", path=spec["path"], tensor_key=spec["tensor_key"])
        elif kind == "custom":
            if not defn.custom_inputs_entrypoint:
                raise DefinitionError(
                    f'{where}: workload {uuid}: input {n!r} is {{"type": "custom"}} but '
                    f"{defn.name} has no custom_inputs_entrypoint; add one to the definition "
                    'or make the input {"type": "random"}'
                )
            inputs[n] = InputSource("custom")
        else:
            raise DefinitionError(
                f'{where}: workload {uuid}: input {n!r} must be {{"type": "random"}}, '
                '{"type": "scalar", "value"}, {"type": "safetensors", "path", "tensor_key"} '
                'or {"type": "custom"}'
            )
    tolerance = _tolerance(doc.get("tolerance"), f"{where}: workload {uuid}")
    return Workload(uuid, dict(axes), inputs, tolerance, dict(doc))


#: tolerance fields and what they must hold; FlashInfer's short names read as SOL-ExecBench's
_TOLERANCE_FIELDS = {
    "max_atol": "max_atol",
    "atol": "max_atol",
    "max_rtol": "max_rtol",
    "rtol": "max_rtol",
    "required_matched_ratio": "required_matched_ratio",
    "max_error_cap": "max_error_cap",
    "allow_negative_inf": "allow_negative_inf",
}


def _tolerance(doc, where: str) -> Tolerance:
    """A workload's :class:`Tolerance` (defaults for what it leaves out)."""
    if doc is None:
        return Tolerance()
    if not isinstance(doc, dict):
        raise DefinitionError(f"{where}: tolerance must be an object")
    given = {}
    for key, v in doc.items():
        name = _TOLERANCE_FIELDS.get(key)
        if name is None:
            raise DefinitionError(
                f"{where}: tolerance field {key!r} is unknown; known: "
                + ", ".join(dict.fromkeys(_TOLERANCE_FIELDS.values()))
            )
        if name == "allow_negative_inf":
            ok = isinstance(v, bool)
        elif name == "max_error_cap":
            ok = v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0)
        else:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
            ok = ok and (name != "required_matched_ratio" or v <= 1)
        if not ok:
            raise DefinitionError(f"{where}: tolerance {key} = {v!r} is not a valid value")
        given[name] = v if name == "allow_negative_inf" or v is None else float(v)
    return Tolerance(**given)


def load_definition(source: str | Path | dict) -> Definition:
    """A definition from a ``definition.json`` path or an already parsed dict."""
    if isinstance(source, dict):
        return parse_definition(source)
    path = Path(source)
    if not path.is_file():
        raise DefinitionError(f"{path}: no such definition file")
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise DefinitionError(f"{path}: not JSON: line {e.lineno}: {e.msg}") from None
    return parse_definition(doc, path)


def load_workloads(source: str | Path | list, defn: Definition) -> list[Workload]:
    """Workloads from a ``workload.jsonl`` path (one JSON object a line) or a list of dicts."""
    if isinstance(source, list):
        return [parse_workload(d, defn, f"workload {i}") for i, d in enumerate(source)]
    path = Path(source)
    if not path.is_file():
        raise DefinitionError(f"{path}: no such workload file")
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as e:
            raise DefinitionError(f"{path}:{i}: not JSON: {e.msg}") from None
        out.append(parse_workload(doc, defn, f"{path}:{i}"))
    if not out:
        raise DefinitionError(f"{path}: holds no workload")
    return out


def default_workloads_path(defn_path: Path) -> Path | None:
    """``workload.jsonl`` next to ``definition.json``, or ``<stem>.workloads.jsonl`` next to
    ``<stem>.json``."""
    for cand in (defn_path.with_suffix(".workloads.jsonl"), defn_path.parent / "workload.jsonl"):
        if cand.is_file():
            return cand
    return None

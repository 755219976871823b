"""One model of the zoo, in its own process: build it, bound its forward (and a training step),
and say why when that fails.

A failure is one line (exception type and message) and a category: ``missing operator`` (an
operator with no loop nest: every such operator of the traced graph is listed, with how often
it occurs, not only the first), ``data-dependent`` (a size or value that depends on tensor
contents), ``unsupported case`` (a lowered operator refusing these arguments), ``dtype`` (a
dtype the IR cannot express), ``build`` (the library's constructor failed on meta and on the
CPU), ``library`` (the model's own eager call on meta tensors fails the same way, without
solar) or ``error`` (anything else: to be triaged).
"""

from __future__ import annotations

import operator
import os
import time
import traceback
from collections import Counter

import torch

from solar.bench.zoo_models import Case, build


def run_one(library: str, name: str, train: bool, hw: str = "H100") -> dict:
    """The zoo's record of one model (JSON-ready)."""
    rec: dict = {"library": library, "name": name, "environment": environment()}
    t0 = time.perf_counter()
    try:
        case = build(library, name)
    except Exception as e:  # noqa: BLE001 - every failure is a row of the table
        rec["forward"] = failure(e, "build")
        rec["seconds"] = round(time.perf_counter() - t0, 1)
        return rec
    rec["call"], rec["notes"] = case.call, case.notes
    rec["build_s"] = round(time.perf_counter() - t0, 1)
    rec["forward"] = _bounded(lambda: _forward(case, name, hw))
    if rec["forward"].get("category") == "error":
        _check_eagerly(case, rec["forward"])
    if train:
        rec["train"] = _bounded(lambda: _train(case, name, hw))
    rec["seconds"] = round(time.perf_counter() - t0, 1)
    return rec


def environment() -> str:
    """Where a record was made: the versions of PyTorch and the model libraries, the CPUs."""
    import importlib.metadata as md

    parts = []
    for dist in (
        "torch", "torchvision", "transformers", "diffusers", "timm", "torch-geometric",
        "ultralytics", "segment-anything",
    ):  # fmt: skip
        try:
            parts.append(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            continue
    return ", ".join(parts) + f"; {os.cpu_count()} CPUs"


def _forward(case: Case, name: str, hw: str):
    import solar

    return solar.bound(
        case.model, case.inputs, hw, kwargs=case.kwargs or None, name=name, observe=case.observe
    )


EAGER_CPU_PARAMS = 300_000_000  # a model up to this size is also run on the CPU


def _check_eagerly(case: Case, fail: dict) -> None:
    """Call the model eagerly, without solar: on the CPU (weights allocated, uninitialised)
    when it is small enough, else on meta tensors. When that fails with the same error, the
    failure is the library's own (category ``library``)."""
    from torch.utils._pytree import tree_map

    model = case.model
    on_cpu = sum(p.numel() for p in model.parameters()) <= EAGER_CPU_PARAMS
    device = "cpu" if on_cpu else "meta"

    def move(x):
        return x.to(device) if isinstance(x, torch.Tensor) else x

    try:
        if on_cpu:
            model = model.to_empty(device="cpu")
        with torch.no_grad():
            model(*tree_map(move, case.inputs), **tree_map(move, case.kwargs))
    except Exception as e:  # noqa: BLE001
        eager = f"{type(e).__name__}: {one_line(e)}"[:400]
        fail["eager"] = f"on {device}: {eager}"
        if eager == fail["error"]:
            fail["category"] = "library"
    else:
        fail["eager"] = f"on {device}: runs"
    if on_cpu:
        case.model = model.to("meta")


def _train(case: Case, name: str, hw: str):
    """A training step (docs/training.md): train mode, ``loss(model(*inputs), *targets)``,
    ``loss.backward()``, AdamW."""
    import solar

    inputs = case.train_inputs if case.train_inputs is not None else case.inputs
    return solar.bound_training(
        case.model.train(),
        inputs,
        hw,
        loss=case.loss,
        targets=case.targets,
        optimizer=torch.optim.AdamW,
        name=f"{name} step",
    )


def _bounded(make) -> dict:
    t0 = time.perf_counter()
    try:
        b = make()
    except Exception as e:  # noqa: BLE001
        out = failure(e, "bound")
    else:
        out = {
            "ok": True,
            "kernels": len(b.kernels),
            "fused_ms": b.fused * 1e3,
            "unfused_ms": b.unfused * 1e3,
            "bound_by": b.fused_bound_by,
        }
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def failure(e: BaseException, stage: str) -> dict:
    """A failure's record: category, one-line error, missing operators (name -> count)."""
    from solar.frontend.torch.lower import UnsupportedDtypeError
    from solar.frontend.torch.registry import (
        DataDependentOperatorError,
        UnsupportedOperatorError,
    )

    message = f"{type(e).__name__}: {one_line(e)}"
    missing: dict[str, int] = {}
    if stage == "build":
        category = "build"
    elif isinstance(e, DataDependentOperatorError) or _data_dependent(e):
        category = "data-dependent"
    elif isinstance(e, UnsupportedOperatorError):
        missing = missing_operators(e)
        category = "missing operator" if missing else "unsupported case"
    elif isinstance(e, UnsupportedDtypeError):
        category = "dtype"
    else:
        category = "error"
    out = {"ok": False, "category": category, "error": message[:400], "where": _where(e)}
    if missing:
        out["missing"] = missing
    return out


def one_line(e: BaseException) -> str:
    lines = [s.strip() for s in str(e).strip().splitlines() if s.strip()]
    return lines[0] if lines else ""


def _data_dependent(e: BaseException) -> bool:
    from torch._subclasses import fake_tensor as ft
    from torch.fx.experimental import symbolic_shapes as ss

    kinds = (ft.DynamicOutputShapeException, ft.DataDependentOutputException)
    kinds += (ss.GuardOnDataDependentSymNode,)
    while e is not None:
        if isinstance(e, kinds):
            return True
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return False


def _where(e: BaseException) -> str:
    """The innermost frame outside torch's own internals: where the failure met the model."""
    frames = traceback.extract_tb(e.__traceback__)
    keep = [f for f in frames if "/torch/" not in f.filename]
    f = (keep or frames or [None])[-1]
    if f is None:
        return ""
    parts = f.filename.split("/")
    return f"{'/'.join(parts[-2:])}:{f.lineno}"


def missing_operators(e: BaseException) -> dict[str, int]:
    """Every operator of the traced graph with no lowering (name -> occurrences), found in the
    graph the failing lowering walked; plus any operator the message names."""
    from solar.frontend.torch.lower import Lowerer, aliases_an_input
    from solar.frontend.torch.registry import find_lowering, mutated_args

    counts: Counter[str] = Counter()
    graph = None
    tb = e.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, Lowerer):
            graph = owner.gm.graph
        tb = tb.tb_next
    for node in graph.nodes if graph is not None else ():
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        t = node.target
        if not isinstance(t, torch._ops.OpOverload):
            counts[getattr(t, "__name__", str(t))] += 1
        elif find_lowering(t) is None and (mutated_args(t) or not aliases_an_input(node)):
            counts[str(t)] += 1
    listed = getattr(e, "missing", None) or [e]  # an error listing every operator, or one
    for m in listed:
        op, reason = getattr(m, "op", ""), getattr(m, "reason", str(m))
        if op and ("loop-nest definition" in reason or "not an aten operator" in reason):
            counts[op] = max(counts[op], getattr(m, "count", 1))
    return dict(counts.most_common())

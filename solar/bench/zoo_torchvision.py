"""Import torchvision where its compiled operators cannot load.

The torchvision wheel built for CUDA torch (``_C.so`` links ``libc10_cuda.so``) cannot load
beside a CPU-only torch, and torchvision then fails at import (its fake kernel of
``torchvision::nms`` is registered unconditionally); timm, which imports torchvision, fails
with it. For tracing on fake tensors only the operators' schemas are needed: torchvision's
own Python fake (meta) kernels and autograd formulas do the rest. :func:`ensure_torchvision`
declares the schemas torchvision's ``_C`` declares (copied from its ``csrc/ops/*.cpp``) when
``_C`` cannot load, then imports torchvision as usual; the traced graph holds the same
``torchvision::`` operators a working install records. No kernel is registered: running
these operators on real CPU tensors still fails, as it does with this install.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "qroi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward(Tensor grad, Tensor rois, Tensor channel_mapping, "
    "float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio, "
    "SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
    "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width) -> (Tensor, Tensor)",
    "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, "
    "SymInt height, SymInt width) -> Tensor",
    "ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width) -> (Tensor, Tensor)",
    "_ps_roi_pool_backward(Tensor grad, Tensor rois, Tensor channel_mapping, "
    "float spatial_scale, SymInt pooled_height, SymInt pooled_width, SymInt batch_size, "
    "SymInt channels, SymInt height, SymInt width) -> Tensor",
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
    "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, "
    "SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> Tensor",
    "_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, "
    "Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, "
    "SymInt dilation_h, SymInt dilation_w, SymInt groups, SymInt offset_groups, "
    "bool use_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    "box_iou_rotated(Tensor boxes1, Tensor boxes2) -> Tensor",
    "_cuda_version() -> int",
)

_LIBRARY: list[torch.library.Library] = []  # kept alive: a dropped Library unregisters


def ensure_torchvision() -> str | None:
    """Make ``import torchvision`` work; a note saying what was done, or None when torchvision
    imports as it is (or is not installed)."""
    if _LIBRARY or importlib.util.find_spec("torchvision") is None:
        return None
    try:
        import torchvision  # noqa: F401

        return None
    except (RuntimeError, OSError) as e:
        if "torchvision::" not in str(e):
            raise
    for name in [m for m in sys.modules if m.split(".")[0] == "torchvision"]:
        del sys.modules[name]  # the failed import's half-run modules
    spec = importlib.util.find_spec("torchvision")
    compiled = Path(spec.submodule_search_locations[0]) / "_C.so"
    try:
        torch.ops.load_library(str(compiled))
        return None
    except OSError as e:
        reason = str(e.__cause__ or e).split("\n")[0]
    lib = torch.library.Library("torchvision", "DEF")
    for schema in SCHEMAS:
        lib.define(schema)
    lib.impl("_cuda_version", lambda: -1, "CompositeExplicitAutograd")
    _LIBRARY.append(lib)
    original = torch.ops.load_library

    def load(path: str) -> None:
        if Path(path) != compiled:
            original(path)

    torch.ops.load_library = load  # torchvision.extension: `_C` "loads", so ops are on
    try:
        import torchvision  # noqa: F401, F811
    finally:
        torch.ops.load_library = original
    return (
        f"torchvision's compiled operators could not load ({reason}); their schemas were "
        "declared with torchvision's own fake kernels (tracing only)"
    )

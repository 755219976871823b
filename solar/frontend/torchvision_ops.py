"""torchvision's operators where its compiled extension cannot load.

PyPI's torchvision wheels link against CUDA builds of torch. Beside a CPU-only torch (a laptop,
a CI machine) their extension fails to load, and ``import torchvision`` itself then fails (its
fake-tensor registrations name ``torchvision::nms``, which does not exist) — and with it every
library that imports torchvision on the way (transformers' image models, timm, diffusers).

:func:`ensure_torchvision_ops` makes such an install usable for analysis: before torchvision
is imported it defines torchvision's operator schemas (as its C++ extension declares them), so
that torchvision imports, registers its own fake-tensor kernels, and its models call the same
operators (``torchvision::nms``, ``torchvision::roi_align``) that they launch on a GPU, which is
what solar traces and bounds. Eager execution on the CPU gets reference kernels for ``nms`` and
``roi_align`` (torchvision's own pure-PyTorch ``_roi_align``); the other operators raise a
one-line error when run eagerly. Nothing is done when the extension loads, or when torchvision
is absent or already imported.

When: ``import solar`` changes nothing (no import hook: ``sys.meta_path`` is the user's). A
program that imports torchvision itself on such an install calls :func:`ensure_torchvision_ops`
first (or :func:`install_import_hook`, which defers the work to its first ``import
torchvision``). solar installs the hook only where it runs code that may import torchvision:
:func:`torchvision_importable` scopes it to a PyTorch trace and to loading a problem file
(its import, ``Model`` and ``get_inputs``: transformers imports torchvision lazily), and removes
it afterwards; the ``solar`` command installs it for its own process, and the model zoo calls
:func:`ensure_torchvision_ops`. Once torchvision has imported, the operators defined for it
stay (a ``torch.library`` fragment: a process cannot undefine them).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "SCHEMAS",
    "ensure_torchvision_ops",
    "install_import_hook",
    "torchvision_importable",
]

#: torchvision's operators as ``torchvision/csrc/ops/*.cpp`` declare them.
SCHEMAS: dict[str, str] = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "roi_align": "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward": "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, "
    "SymInt height, SymInt width, int sampling_ratio, bool aligned) -> Tensor",
    "roi_pool": "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width) -> (Tensor, Tensor)",
    "_roi_pool_backward": "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, "
    "float spatial_scale, SymInt pooled_height, SymInt pooled_width, SymInt batch_size, "
    "SymInt channels, SymInt height, SymInt width) -> Tensor",
    "ps_roi_align": "ps_roi_align(Tensor input, Tensor rois, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward": "_ps_roi_align_backward(Tensor grad, Tensor rois, "
    "Tensor channel_mapping, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "int sampling_ratio, SymInt batch_size, SymInt channels, SymInt height, "
    "SymInt width) -> Tensor",
    "ps_roi_pool": "ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width) -> (Tensor, Tensor)",
    "_ps_roi_pool_backward": "_ps_roi_pool_backward(Tensor grad, Tensor rois, "
    "Tensor channel_mapping, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
    "SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
    "deform_conv2d": "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, "
    "Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, "
    "SymInt dilation_h, SymInt dilation_w, SymInt groups, SymInt offset_groups, "
    "bool use_mask) -> Tensor",
    "_deform_conv2d_backward": "_deform_conv2d_backward(Tensor grad, Tensor input, "
    "Tensor weight, Tensor offset, Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, "
    "SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, "
    "SymInt offset_groups, bool use_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
}

_LIBRARY = None  # the torch.library fragment holding the schemas (kept alive)
_DONE = False  # the operators are defined (or needed no definition)


@functools.cache
def _extension_loads(package_dir: str | None = None) -> bool:
    """Whether torchvision's compiled extension (in ``package_dir``, else where torchvision is
    installed) loads beside this torch; True where there is no torchvision."""
    if package_dir is None:
        spec = importlib.machinery.PathFinder.find_spec("torchvision")
        if spec is None or not spec.submodule_search_locations:
            return True
        package_dir = next(iter(spec.submodule_search_locations))
    libs = [*Path(package_dir).glob("_C*.so"), *Path(package_dir).glob("_C*.pyd")]
    if not libs:
        return False
    import torch

    try:
        torch.ops.load_library(str(libs[0]))
    except (OSError, RuntimeError):
        return False
    return True


def _nms_reference(dets, scores, iou_threshold: float):
    """Greedy non-maximum suppression as torchvision's CPU kernel computes it: boxes in
    decreasing score order, each kept unless its IoU with a kept box exceeds the threshold."""
    import torch

    order = torch.argsort(scores, descending=True, stable=True)
    boxes = dets[order]
    x1, y1, x2, y2 = boxes.unbind(1)
    areas = (x2 - x1) * (y2 - y1)
    suppressed = torch.zeros(len(order), dtype=torch.bool)
    keep = []
    for i in range(len(order)):
        if suppressed[i]:
            continue
        keep.append(i)
        w = (torch.minimum(x2[i], x2[i + 1 :]) - torch.maximum(x1[i], x1[i + 1 :])).clamp(min=0)
        h = (torch.minimum(y2[i], y2[i + 1 :]) - torch.maximum(y1[i], y1[i + 1 :])).clamp(min=0)
        inter = w * h
        iou = inter / (areas[i] + areas[i + 1 :] - inter)
        suppressed[i + 1 :] |= iou > iou_threshold
    return order[torch.tensor(keep, dtype=torch.long)]


def _no_cpu_kernel(name: str):
    def kernel(*args, **kwargs):
        raise NotImplementedError(
            f"torchvision::{name} has no CPU kernel here: torchvision's compiled extension does "
            "not load beside this torch (install the torchvision build matching your torch to "
            "run it; solar traces and bounds it without running it)"
        )

    return kernel


def _define_operators() -> None:
    """The schemas and CPU kernels; run before torchvision's own modules execute."""
    global _LIBRARY
    import torch

    _LIBRARY = torch.library.Library("torchvision", "FRAGMENT")
    for schema in SCHEMAS.values():
        _LIBRARY.define(schema)
    for name in SCHEMAS:
        if name not in ("nms", "roi_align"):
            _LIBRARY.impl(name, _no_cpu_kernel(name), "CPU")
    _LIBRARY.impl("nms", _nms_reference, "CPU")

    def roi_align(*args):
        from torchvision.ops.roi_align import _roi_align

        return _roi_align(*args)

    _LIBRARY.impl("roi_align", roi_align, "CPU")


def _after_import() -> None:
    """Once torchvision has imported: its operators exist, so its models call them, and the
    fake-tensor kernels it skipped (it registers them only when the extension loaded) are
    registered."""
    import torchvision.extension as extension
    from torchvision import _meta_registrations as meta

    missing = extension._has_ops

    def has_ops() -> bool:
        return True

    extension._has_ops = has_ops
    for name, module in list(sys.modules.items()):  # modules that imported it by name
        if name.startswith("torchvision") and getattr(module, "_has_ops", None) is missing:
            module._has_ops = has_ops
    for name in SCHEMAS:  # torchvision registered nms and qnms itself
        fn = getattr(meta, f"meta_{name.lstrip('_')}", None)
        if name not in ("nms", "qnms") and fn is not None:
            meta.register_meta(name)(fn)


def ensure_torchvision_ops() -> bool:
    """Define torchvision's operators when its extension cannot load (module docstring), and
    import torchvision. Returns whether it had to; idempotent."""
    global _DONE
    if _DONE or "torchvision" in sys.modules or _extension_loads():
        return False
    _DONE = True
    _define_operators()
    import torchvision  # noqa: F401

    _after_import()
    return True


class _ImportHook(importlib.abc.MetaPathFinder):
    """Runs :func:`ensure_torchvision_ops`'s two halves around the first ``import torchvision``,
    without importing torch before anyone imports torchvision."""

    def find_spec(self, name, path, target=None):
        if name != "torchvision" or "torchvision" in sys.modules:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if (
            spec is None
            or spec.loader is None
            or not spec.submodule_search_locations
            or _extension_loads(next(iter(spec.submodule_search_locations)))
        ):
            return spec  # find_spec() probes come here too: patch only what gets executed
        exec_module = spec.loader.exec_module

        def exec_then_patch(module):
            global _DONE
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            if not _DONE:
                _DONE = True
                _define_operators()
            exec_module(module)
            _after_import()

        spec.loader.exec_module = exec_then_patch
        return spec


def install_import_hook() -> None:
    """Make a later ``import torchvision`` work where its extension cannot load (costs nothing
    until then, and nothing at all where torchvision is absent, loads, or is imported). The
    hook stays in ``sys.meta_path`` until torchvision imports: the caller's choice, never
    solar's own (see :func:`torchvision_importable`)."""
    if _DONE or "torchvision" in sys.modules:
        return
    if not any(isinstance(f, _ImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _ImportHook())


@contextmanager
def torchvision_importable() -> Iterator[None]:
    """An ``import torchvision`` inside the block works where its extension cannot load: the
    import hook of :func:`install_import_hook` for the block only (removed after it, if
    torchvision was not imported). solar runs user code this way (a trace, a problem file),
    where a model may import torchvision."""
    if _DONE or "torchvision" in sys.modules:
        yield
        return
    hook = _ImportHook()
    sys.meta_path.insert(0, hook)
    try:
        yield
    finally:
        if hook in sys.meta_path:
            sys.meta_path.remove(hook)

"""torchvision where its compiled extension cannot load (solar/frontend/torchvision_ops.py).

Run in fresh interpreters: whether torchvision imports depends on what ran before it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torchvision")


def run(code: str) -> str:
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_torchvision_imports_after_the_hook_and_its_operators_exist():
    out = run(
        """
        from solar.frontend.torchvision_ops import install_import_hook
        install_import_hook()
        import torch, torchvision
        from torch._subclasses import FakeTensorMode
        with FakeTensorMode():
            x, rois = torch.empty(2, 3, 16, 16), torch.empty(5, 5)
            y = torch.ops.torchvision.roi_align(x, rois, 0.5, 7, 7, 2, True)
        print(list(y.shape), torch.ops.torchvision.nms.default.name())
        """
    )
    assert out.strip() == "[5, 3, 7, 7] torchvision::nms"


def test_reference_nms_keeps_the_boxes_torchvision_keeps():
    """Boxes in score order: b0 kept; b1 overlaps b0 with IoU 81/119 = 0.68, dropped at
    threshold 0.5 and kept at 0.7; b2 disjoint, kept; b3 overlaps b2 with IoU 25/175 = 0.14,
    kept."""
    out = run(
        """
        from solar.frontend.torchvision_ops import ensure_torchvision_ops
        ensure_torchvision_ops()
        import torch, torchvision
        b = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [25, 25, 35, 35.]])
        s = torch.tensor([0.9, 0.8, 0.7, 0.6])
        print(torchvision.ops.nms(b, s, 0.5).tolist(), torchvision.ops.nms(b, s, 0.7).tolist())
        """
    )
    assert out.strip() == "[0, 2, 3] [0, 1, 2, 3]"


def test_torchvision_roi_align_calls_the_operator():
    """``torchvision.ops.roi_align`` imported ``_has_ops`` by name: it must call the operator
    (what a GPU runs, and what solar lowers), not torchvision's compiled Python fallback."""
    out = run(
        """
        from solar.frontend.torchvision_ops import ensure_torchvision_ops
        ensure_torchvision_ops()
        import torch, torchvision
        from torch.utils._python_dispatch import TorchDispatchMode

        class Ops(TorchDispatchMode):
            seen = []
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                self.seen.append(str(func))
                return func(*args, **(kwargs or {}))

        with Ops() as m:
            torchvision.ops.roi_align(torch.rand(1, 2, 8, 8), torch.tensor([[0, 1, 1, 6, 6.]]), 2)
        print("torchvision.roi_align.default" in m.seen)
        """
    )
    assert out.strip() == "True"


def test_detection_model_runs_eagerly_on_the_cpu():
    out = run(
        """
        from solar.frontend.torchvision_ops import ensure_torchvision_ops
        ensure_torchvision_ops()
        import torch, torchvision
        m = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
            weights=None, weights_backbone=None).eval()
        with torch.no_grad():
            (o,) = m([torch.rand(3, 96, 96)])
        print(sorted(o))
        """
    )
    assert out.strip() == "['boxes', 'labels', 'scores']"


def test_the_hook_lives_only_inside_the_block():
    """:func:`torchvision_importable`: torchvision imports inside the block (a model traced or
    a problem file loaded there), and ``sys.meta_path`` is as before once it ends, whether or
    not torchvision was imported in it."""
    out = run(
        """
        import sys
        from solar.frontend.torchvision_ops import torchvision_importable
        before = list(sys.meta_path)
        with torchvision_importable():
            pass
        unused = sys.meta_path == before
        with torchvision_importable():
            import torchvision
        print(unused, sys.meta_path == before, torchvision.ops.nms.__name__)
        """
    )
    assert out.strip() == "True True nms"

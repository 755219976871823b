"""Before any test module: make a torchvision whose compiled extension cannot load beside this
CPU-only torch importable (solar/frontend/torchvision_ops.py; ``import solar`` alone does not),
as test modules import transformers, timm and diffusers, which import torchvision on the way."""

import os

# every graph the tests lift, and every graph pass's result, is checked by
# solar.graph.verify.verify_graph (the subprocesses of CLI tests inherit it)
os.environ.setdefault("SOLAR_CHECK_GRAPHS", "1")

from solar.frontend.torchvision_ops import ensure_torchvision_ops  # noqa: E402

ensure_torchvision_ops()

"""Import solar before any test module: solar makes a torchvision whose compiled extension
cannot load beside this CPU-only torch importable (solar/frontend/torchvision_ops.py), and test
modules import transformers, timm and diffusers, which import torchvision on the way."""

import os

# every graph the tests lift, and every graph pass's result, is checked by
# solar.graph.verify.verify_graph (the subprocesses of CLI tests inherit it)
os.environ.setdefault("SOLAR_CHECK_GRAPHS", "1")

import solar  # noqa: E402, F401

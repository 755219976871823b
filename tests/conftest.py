"""Import solar before any test module: solar makes a torchvision whose compiled extension
cannot load beside this CPU-only torch importable (solar/frontend/torchvision_ops.py), and test
modules import transformers, timm and diffusers, which import torchvision on the way."""

import solar  # noqa: F401

"""Before any test module: make a torchvision whose compiled extension cannot load beside this
CPU-only torch importable (solar/frontend/torchvision_ops.py; ``import solar`` alone does not),
as test modules import transformers, timm and diffusers, which import torchvision on the way."""

from solar.frontend.torchvision_ops import ensure_torchvision_ops

ensure_torchvision_ops()

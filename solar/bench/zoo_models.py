"""The model zoo's catalogue: per library, the model names and how to build and call each.

Every model is built in bf16 on the ``meta`` device (a constructor that cannot run there is
built on the CPU, as its users build it, then cast) from its library's defaults, and called the
way its library documents. A :class:`Case` says how: ``model(*inputs, **kwargs)`` for the
forward (eval mode); a training step (train mode) is ``loss(model(*train_inputs), *targets)``,
``loss.backward()``, AdamW (:func:`solar.bound_training`).
The sizes used are in :data:`SIZES` and in each case's ``call``; the table states them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from solar.bench.zoo_case import Case, main_tensor, on_meta_or_cpu
from solar.bench.zoo_families import FAMILIES
from solar.frontend.torchvision_ops import ensure_torchvision_ops

LIBRARIES = ("transformers", "torchvision", "diffusers", "timm", *FAMILIES)
TOKENS = 128  # causal LMs: model(ids) with ids of 1 x TOKENS
TIMM_EVERY = 20  # timm: every 20th of timm.list_models(), plus TIMM_POPULAR
TIMM_POPULAR = (
    "resnet50",
    "vit_base_patch16_224",
    "convnext_tiny",
    "efficientnet_b0",
    "swin_tiny_patch4_window7_224",
)
SIZES = {
    "transformers": f"AutoConfig.for_model(type) defaults; model(ids), ids 1 x {TOKENS}",
    "torchvision": "weights=None (weights_backbone=None); images 1 x 3 x 224 x 224 "
    "(inception 299; segmentation 520; video 16 frames 112/224; detection a list of one "
    "3 x 480 x 640 image; RAFT two 1 x 3 x 520 x 960 frames); classifiers' training steps on "
    "a batch of 2",
    "diffusers": "SD 1.5 UNet and VAE, DiT-XL/2-256, SD3-medium, FLUX.1 (see each case)",
    "timm": f"every {TIMM_EVERY}th of timm.list_models() plus {', '.join(TIMM_POPULAR)}; "
    "pretrained=False, the model's default input size; classifiers' training steps on a "
    "batch of 2",
    **{name: family.sizes for name, family in FAMILIES.items()},
}


def names(library: str) -> list[str]:
    """The library's models, in the zoo's order (the training subset is every n-th)."""
    ensure_torchvision_ops()  # each library imports torchvision on the way
    if library == "transformers":
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

        return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    if library == "torchvision":
        import torchvision

        return sorted(torchvision.models.list_models())
    if library == "diffusers":
        return list(DIFFUSERS)
    if library == "timm":
        import timm

        every = timm.list_models()[::TIMM_EVERY]
        return list(dict.fromkeys([*TIMM_POPULAR, *every]))
    if library in FAMILIES:
        return list(FAMILIES[library].names)
    raise ValueError(f"unknown library {library!r}; one of: {', '.join(LIBRARIES)}")


def build(library: str, name: str) -> Case:
    ensure_torchvision_ops()  # each library imports torchvision on the way
    return {
        "transformers": _transformers,
        "torchvision": _torchvision,
        "diffusers": lambda n: DIFFUSERS[n](),
        "timm": _timm,
        **{name: family.build for name, family in FAMILIES.items()},
    }[library](name)


def missing(library: str) -> str | None:
    """One line when ``library`` (or the one a family needs) is not installed, else None."""
    import importlib.util

    if library in FAMILIES:
        return FAMILIES[library].missing()
    try:
        found = importlib.util.find_spec(library) is not None
    except ModuleNotFoundError:  # a finder that refuses it: not installed either
        found = False
    return None if found else f"{library} is not installed (pip install {library}): skipped"


def _cross_entropy(out: object, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(main_tensor(out).float(), labels)


TRAIN_BATCH = 2  # image classifiers' training steps: BatchNorm refuses to train on one value


def _classifier(model: nn.Module, x: torch.Tensor, call: str, notes: list[str]) -> Case:
    """An image (or clip) classifier: the forward on ``x``, the training step on a batch of
    :data:`TRAIN_BATCH` (PyTorch's BatchNorm refuses training statistics of one value per
    channel, which a batch of one gives after global pooling)."""
    batch = x.expand(TRAIN_BATCH, *x.shape[1:]).clone()
    labels = torch.zeros(TRAIN_BATCH, dtype=torch.long)
    return Case(
        model,
        (x,),
        _cross_entropy,
        targets=(labels,),
        call=call,
        notes=notes,
        train_inputs=(batch,),
    )


def _mse(out: object) -> torch.Tensor:
    x = main_tensor(out).float()
    return F.mse_loss(x, torch.zeros_like(x))


# -- transformers ---------------------------------------------------------------------------


def _transformers(name: str) -> Case:
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(name)
    notes: list[str] = []
    model = on_meta_or_cpu(
        lambda: AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16), notes
    )
    ids = torch.ones(1, TOKENS, dtype=torch.long)
    return Case(
        model.eval(),
        (ids,),
        _next_token_loss,
        targets=(ids,),
        call=f"{type(model).__name__}(ids), ids 1 x {TOKENS}",
        notes=notes,
    )


def _next_token_loss(out: object, ids: torch.Tensor) -> torch.Tensor:
    """transformers' causal-LM loss, as ``model(ids, labels=ids).loss`` computes it
    (``ForCausalLMLoss``): float32 logits, the labels shifted by one (padded with -100)."""
    labels = F.pad(ids, (0, 1), value=-100)[:, 1:]
    logits = out.logits.float()
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)


# -- torchvision ----------------------------------------------------------------------------


def _torchvision(name: str) -> Case:
    import torchvision

    builder = torchvision.models.get_model_builder(name)
    kw: dict = {"weights": None}
    if "weights_backbone" in inspect.signature(builder).parameters:
        kw["weights_backbone"] = None
    notes: list[str] = []
    model = on_meta_or_cpu(lambda: builder(**kw), notes).eval()
    family = builder.__module__.split(".")[2]  # classification, detection, video, ...
    if family == "detection":
        images = [torch.rand(3, 480, 640, dtype=torch.bfloat16)]
        targets = [_detection_target(name)]
        return Case(
            model,
            (images,),
            lambda losses: sum(losses.values()),
            train_inputs=(images, targets),
            call="model([image 3 x 480 x 640]); training: sum(model(images, targets).values())",
            notes=notes,
        )
    if family == "optical_flow":
        a, b = (torch.rand(1, 3, 520, 960) for _ in range(2))
        notes.append(
            "fp32 weights under torch.autocast('cuda', torch.bfloat16): cast to bf16, RAFT "
            "feeds its own float32 coordinate grids to bf16 convolutions and fails eagerly too"
        )
        return Case(
            Autocast(model.float()),
            (a, b),
            lambda flows: sum(f.float().abs().mean() for f in flows),
            call="model(frame1, frame2), 1 x 3 x 520 x 960; training: L1 of every flow",
            notes=notes,
        )
    if family == "video":
        side = 112 if name[:3] in ("r3d", "mc3", "r2p") else 224
        x = torch.rand(1, 3, 16, side, side, dtype=torch.bfloat16)
        return _classifier(model, x, f"model(clip 1x3x16x{side}x{side})", notes)
    if family == "segmentation":
        x = torch.rand(1, 3, 520, 520, dtype=torch.bfloat16)
        y = torch.zeros(1, 520, 520, dtype=torch.long)
        return Case(
            model,
            (x,),
            lambda out, t: F.cross_entropy(out["out"].float(), t),
            targets=(y,),
            call="model(1 x 3 x 520 x 520)['out']",
            notes=notes,
        )
    side = 299 if "inception" in name else 224
    x = torch.rand(1, 3, side, side, dtype=torch.bfloat16)
    return _classifier(model, x, f"model(1 x 3 x {side} x {side})", notes)


class Autocast(nn.Module):
    """``model(*args)`` under ``torch.autocast("cuda", torch.bfloat16)``: mixed precision as
    users of a model that cannot run wholly in bf16 run it."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *args):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return self.model(*args)


def _detection_target(name: str) -> dict:
    target = {
        "boxes": torch.tensor([[40.0, 60.0, 300.0, 400.0]], dtype=torch.bfloat16),
        "labels": torch.tensor([1]),
    }
    if "mask" in name:
        target["masks"] = torch.zeros(1, 480, 640, dtype=torch.uint8)
    if "keypoint" in name:
        target["keypoints"] = torch.ones(1, 17, 3, dtype=torch.bfloat16)
    return target


# -- diffusers ------------------------------------------------------------------------------

SD15_UNET = dict(  # runwayml/stable-diffusion-v1-5, unet/config.json
    sample_size=64,
    cross_attention_dim=768,
    attention_head_dim=8,
    block_out_channels=(320, 640, 1280, 1280),
    layers_per_block=2,
)
SD15_VAE = dict(  # runwayml/stable-diffusion-v1-5, vae/config.json
    in_channels=3,
    out_channels=3,
    latent_channels=4,
    block_out_channels=(128, 256, 512, 512),
    layers_per_block=2,
    sample_size=512,
    down_block_types=("DownEncoderBlock2D",) * 4,
    up_block_types=("UpDecoderBlock2D",) * 4,
)
SD3_MEDIUM = dict(  # stabilityai/stable-diffusion-3-medium-diffusers, transformer/config.json
    sample_size=128,
    patch_size=2,
    in_channels=16,
    num_layers=24,
    attention_head_dim=64,
    num_attention_heads=24,
    joint_attention_dim=4096,
    caption_projection_dim=1536,
    pooled_projection_dim=2048,
    out_channels=16,
    pos_embed_max_size=192,
)


class Method(nn.Module):
    """``model.<method>(*args)`` as a module (the VAE's documented ``vae.decode(latents)``)."""

    def __init__(self, model: nn.Module, method: str):
        super().__init__()
        self.model, self.method = model, method

    def forward(self, *args):
        return getattr(self.model, self.method)(*args).sample


def _bf(*shape: int) -> torch.Tensor:
    return torch.rand(*shape, dtype=torch.bfloat16)


def _unet() -> Case:
    from diffusers import UNet2DConditionModel

    model = on_meta_or_cpu(lambda: UNet2DConditionModel(**SD15_UNET), []).eval()
    args = (_bf(1, 4, 64, 64), torch.tensor([999]), _bf(1, 77, 768))
    return Case(
        model,
        args,
        _mse,
        call="SD 1.5 UNet config: model(latents 1x4x64x64, timestep, text 1x77x768).sample",
    )


def _vae_decoder() -> Case:
    from diffusers import AutoencoderKL

    vae = on_meta_or_cpu(lambda: AutoencoderKL(**SD15_VAE), []).eval()
    return Case(
        Method(vae, "decode"),
        (_bf(1, 4, 64, 64),),
        _mse,
        call="SD 1.5 VAE config: vae.decode(latents 1x4x64x64).sample (a 512x512 image)",
    )


def _dit() -> Case:
    from diffusers import DiTTransformer2DModel

    model = on_meta_or_cpu(DiTTransformer2DModel, []).eval()  # defaults: DiT-XL/2, 256 px
    args = (_bf(1, 4, 32, 32), torch.tensor([999]), torch.tensor([1]))
    return Case(
        model,
        args,
        _mse,
        call="default config (DiT-XL/2-256): model(latents 1x4x32x32, timestep, class_labels)",
    )


def _sd3() -> Case:
    from diffusers import SD3Transformer2DModel

    model = on_meta_or_cpu(lambda: SD3Transformer2DModel(**SD3_MEDIUM), []).eval()
    kwargs = dict(
        hidden_states=_bf(1, 16, 128, 128),
        encoder_hidden_states=_bf(1, 333, 4096),
        pooled_projections=_bf(1, 2048),
        timestep=torch.tensor([999]),
    )
    return Case(
        model,
        (),
        _mse,
        kwargs=kwargs,
        train_inputs=tuple(kwargs.values()),
        call="SD3-medium config: model(latents 1x16x128x128 (1024 px), text 1x333x4096, "
        "pooled 1x2048, timestep)",
    )


def _flux() -> Case:
    from diffusers import FluxTransformer2DModel

    model = on_meta_or_cpu(FluxTransformer2DModel, []).eval()  # defaults: FLUX.1-schnell
    kwargs = dict(
        hidden_states=_bf(1, 4096, 64),
        encoder_hidden_states=_bf(1, 512, 4096),
        pooled_projections=_bf(1, 768),
        timestep=torch.tensor([1.0], dtype=torch.bfloat16),
        img_ids=torch.zeros(4096, 3),
        txt_ids=torch.zeros(512, 3),
    )
    return Case(
        model,
        (),
        _mse,
        kwargs=kwargs,
        train_inputs=tuple(kwargs.values()),
        call="default config (FLUX.1-schnell): model(latents 1x4096x64 (1024 px), text "
        "1x512x4096, pooled 1x768, timestep, img_ids, txt_ids)",
    )


DIFFUSERS: dict[str, Callable[[], Case]] = {
    "UNet2DConditionModel": _unet,
    "AutoencoderKL.decode": _vae_decoder,
    "DiTTransformer2DModel": _dit,
    "SD3Transformer2DModel": _sd3,
    "FluxTransformer2DModel": _flux,
}


# -- timm -----------------------------------------------------------------------------------


def _timm(name: str) -> Case:
    import timm

    notes: list[str] = []
    model = on_meta_or_cpu(lambda: timm.create_model(name, pretrained=False), notes).eval()
    size = tuple(model.pretrained_cfg.get("input_size") or (3, 224, 224))
    x = torch.rand(1, *size, dtype=torch.bfloat16)
    return _classifier(model, x, f"model(1 x {' x '.join(map(str, size))})", notes)

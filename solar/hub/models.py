"""Find a model's ``config.json`` (a folder, the local Hugging Face cache, or the Hub for the
config alone), read it, choose the model class and build the model on the meta device; see
:mod:`solar.hub` for the order and the dtype rule."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from solar.frontend.extras import optional

PREFIX = "hf:"
#: the unpatched ``from_pretrained`` functions while :mod:`solar.hub.pretrained` redirects them
ORIGINALS: dict = {}
CONFIG = "config.json"
#: the heads :func:`model_class` falls back to, by what the program needs
_HEADS = {
    "causal": ("AutoModelForCausalLM",),
    "train": ("AutoModelForSeq2SeqLM", "AutoModelForMaskedLM", "AutoModelForCausalLM"),
    "forward": ("AutoModelForCausalLM", "AutoModelForSeq2SeqLM", "AutoModel"),
}


class HubError(ValueError):
    """A model by name that cannot be built; the message is one line."""


@dataclass(frozen=True)
class ConfigSource:
    """Where a model's ``config.json`` was found: ``folder`` holds it; ``where`` says how."""

    model_id: str
    folder: Path
    where: str


# ----------------------------------------------------------------------------- finding it


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE")


def offline() -> bool:
    """``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) is set, read now (not at import)."""
    return _truthy("HF_HUB_OFFLINE") or _truthy("TRANSFORMERS_OFFLINE")


def cache_dir() -> Path:
    """The Hugging Face hub cache, from the environment as it is now."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def strip_prefix(name: str) -> str:
    return name[len(PREFIX) :] if name.startswith(PREFIX) else name


def find_config(model_id: str | os.PathLike) -> ConfigSource:
    """The folder holding ``model_id``'s ``config.json`` (see the module docstring for the
    order); a one-line :class:`HubError` when none has it."""
    name = strip_prefix(str(model_id))
    local = Path(name).expanduser()
    if local.is_file() and local.name == CONFIG:
        local = local.parent
    if local.is_dir():
        if not (local / CONFIG).is_file():
            raise HubError(f"{local}: the folder holds no {CONFIG} (hf:FOLDER needs one)")
        return ConfigSource(name, local, f"the folder {local}")
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise HubError(f"{name}: no such folder, and not a Hugging Face model id (ORG/NAME)")
    with optional("hf: models"):
        from huggingface_hub import try_to_load_from_cache

    cache = cache_dir()
    try:
        hit = try_to_load_from_cache(name, CONFIG, cache_dir=cache)
    except Exception as e:  # an id huggingface_hub rejects
        raise HubError(f"{name}: not a Hugging Face model id ({_first_line(e)})") from e
    if isinstance(hit, str) and Path(hit).is_file():
        return ConfigSource(name, Path(hit).parent, f"the Hugging Face cache {cache}")
    fetch = f"`hf download {name} {CONFIG}` fetches the config alone"
    looked = f"no {CONFIG} for {name}: not a folder, not in the Hugging Face cache {cache}"
    if offline():
        raise HubError(f"{looked}, and HF_HUB_OFFLINE is set; {fetch} (or pass hf:FOLDER)")
    from solar.hub.network import hub_unreachable

    unreachable = hub_unreachable()  # at once, where the download would retry for ~30 s
    if unreachable is not None:
        raise HubError(f"{looked}, and the Hub cannot be reached ({unreachable}); {fetch}")
    from huggingface_hub import hf_hub_download

    try:
        path = hf_hub_download(name, CONFIG, cache_dir=cache)
    except Exception as e:
        raise HubError(f"{looked}; fetching it failed ({type(e).__name__}); {fetch}") from e
    return ConfigSource(
        name, Path(path).parent, f"the Hugging Face Hub (config.json alone), {cache}"
    )


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__


def load_config(model_id: str | os.PathLike, **overrides):
    """``(config, source)``: the ``transformers`` config of ``model_id`` read from its
    ``config.json`` (``overrides`` set attributes, as ``from_pretrained`` keywords do)."""
    with optional("hf: models"):
        import transformers

    source = find_config(model_id)
    try:
        read = ORIGINALS.get("config") or transformers.AutoConfig.from_pretrained.__func__
        config = read(transformers.AutoConfig, str(source.folder), **overrides)
    except Exception as e:
        raise HubError(
            f"{source.folder / CONFIG}: transformers cannot read it: {type(e).__name__}: "
            f"{_first_line(e)}"
        ) from e
    return config, source


# ----------------------------------------------------------------------------- building it


def model_class(config, need: str = "forward"):
    """The ``transformers`` model class to build: the config's own ``architectures[0]`` when it
    suits ``need`` (``"forward"``: any; ``"causal"``: a causal LM, for prefill and decode;
    ``"train"``: a head that computes a loss from ``labels``), else the first auto class of
    :data:`_HEADS` that knows the config's type."""
    import transformers

    named = [getattr(transformers, a, None) for a in (config.architectures or [])]
    own = next((c for c in named if c is not None), None)
    if own is not None and _suits(own, config, need):
        return own
    for auto_name in _HEADS[need]:
        mapping = getattr(transformers, auto_name)._model_mapping
        if type(config) in mapping:
            return mapping[type(config)]
    wanted = {"causal": "a causal LM head", "train": "a head that computes a loss"}
    raise HubError(
        f"{config.model_type}: transformers has no {wanted.get(need, 'model class')} for this "
        f"config (architectures: {', '.join(config.architectures or []) or 'none'})"
    )


def _suits(cls, config, need: str) -> bool:
    import transformers

    if need == "forward":
        return True
    heads = _HEADS["causal"] if need == "causal" else _HEADS["train"]
    for auto_name in heads:
        mapping = getattr(transformers, auto_name)._model_mapping
        if type(config) in mapping and mapping[type(config)] is cls:
            return True
    return False


def resolve_dtype(config, dtype=None):
    """``(torch dtype, where it came from)`` by ``from_pretrained``'s default rule (see the
    module docstring)."""
    import torch

    if isinstance(dtype, str) and dtype != "auto":
        if not isinstance(getattr(torch, dtype, None), torch.dtype):
            raise HubError(f"dtype {dtype!r}: not a torch dtype (float32, bfloat16, float16)")
        dtype = getattr(torch, dtype)
    if isinstance(dtype, torch.dtype):
        return dtype, "as asked"
    own = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    if isinstance(own, str):
        own = getattr(torch, own, None)
    if isinstance(own, torch.dtype):
        return own, "the config's torch_dtype"
    return torch.float32, "float32: the config names no torch_dtype"


def build(config, cls, dtype=None):
    """``cls`` built from ``config`` on the meta device in ``dtype`` (see
    :func:`resolve_dtype`), in eval mode, as ``from_pretrained`` returns it."""
    import torch

    dtype, _ = resolve_dtype(config, dtype)
    with torch.device("meta"):
        model = cls._from_config(config, dtype=dtype)
    return model.eval()


@dataclass
class HubModel:
    """A model by name, built: the module, its config and how it was made (``notes``)."""

    model: object
    config: object
    source: ConfigSource
    notes: list[str] = field(default_factory=list)


def hub_model(model_id: str, *, need: str = "forward", dtype=None, **overrides) -> HubModel:
    """Find, read and build ``model_id`` (see the module docstring)."""
    config, source = load_config(model_id, **overrides)
    cls = model_class(config, need)
    dtype, why = resolve_dtype(config, dtype)
    model = build(config, cls, dtype)
    note = (
        f"{source.model_id}: {cls.__name__} built from config.json alone ({source.where}) on "
        f"the meta device, no weights downloaded; dtype {str(dtype).replace('torch.', '')} "
        f"({why})"
    )
    return HubModel(model, config, source, [note])

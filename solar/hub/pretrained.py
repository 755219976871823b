"""``from_pretrained`` builds from ``config.json`` on the meta device while a problem file
loads (:func:`from_config_instead_of_weights`): benchmark suites' model-level problems call
``AutoModelForCausalLM.from_pretrained(name, config=config)`` in ``Model.__init__`` and
``AutoConfig.from_pretrained(name)`` at import; neither downloads weights under solar."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from solar.frontend.extras import optional
from solar.hub.models import ORIGINALS, HubError, build, find_config, load_config, resolve_dtype

#: ``from_pretrained`` keywords about fetching and placing weights, not the model's shape
_LOADING_KEYWORDS = frozenset(
    ("cache_dir", "force_download", "local_files_only", "token", "revision", "subfolder",
     "use_safetensors", "device_map", "low_cpu_mem_usage", "max_memory", "offload_folder",
     "offload_state_dict", "weights_only", "trust_remote_code", "proxies", "resume_download",
     "output_loading_info", "from_tf", "from_flax", "ignore_mismatched_sizes",
     "quantization_config", "mirror", "_fast_init", "variant", "key_mapping", "tp_plan",
     "tp_size", "distributed_config", "gguf_file", "state_dict", "adapter_kwargs")
)  # fmt: skip


@contextlib.contextmanager
def from_config_instead_of_weights() -> Iterator[list[str]]:
    """While active, ``from_pretrained`` of ``transformers``' auto classes, model classes and
    config classes reads ``config.json`` through :func:`find_config` and builds the model from
    it on the meta device (:func:`build`): nothing is downloaded but the config. Yields the
    list of notes (one per model built) for the report."""
    with optional("a problem file calling from_pretrained"):
        import transformers
        import transformers.models.auto.modeling_auto  # noqa: F401 - the auto classes, now
        from transformers.models.auto.auto_factory import _BaseAutoModelClass

    notes: list[str] = []
    auto = _auto_from_pretrained(notes)
    # every auto class holds its own copy of from_pretrained (transformers' auto_class_update):
    # patch each, and restore each, so that none keeps the redirection afterwards
    owners = [(c, auto) for c in _subclasses(_BaseAutoModelClass) if "from_pretrained" in vars(c)]
    owners += [
        (transformers.PreTrainedModel, _model_from_pretrained(notes)),
        (transformers.AutoConfig, _config_from_pretrained),
        (transformers.PretrainedConfig, _config_class_from_pretrained),
    ]
    saved = [(owner, vars(owner)["from_pretrained"]) for owner, _ in owners]
    ORIGINALS["config"] = vars(transformers.AutoConfig)["from_pretrained"].__func__
    ORIGINALS["config_class"] = vars(transformers.PretrainedConfig)["from_pretrained"].__func__
    try:
        for owner, fn in owners:
            owner.from_pretrained = classmethod(fn)
        yield notes
    finally:
        for owner, original in saved:
            owner.from_pretrained = original
        ORIGINALS.clear()


def _subclasses(cls) -> list[type]:
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        out.append(c)
        todo += c.__subclasses__()
    return out


def _split_kwargs(kwargs: dict) -> tuple[object, dict]:
    """``(dtype, config overrides)`` of ``from_pretrained``'s keywords."""
    kwargs = {k: v for k, v in kwargs.items() if k not in _LOADING_KEYWORDS}
    dtype = kwargs.pop("dtype", None)
    torch_dtype = kwargs.pop("torch_dtype", None)
    return (dtype if dtype is not None else torch_dtype), kwargs


def _config_for(name, config, overrides: dict, config_cls=None):
    if config is None or isinstance(config, str | os.PathLike):
        config, source = load_config(config or name)
        where = source.where
    else:
        where = "the config passed in"
    attn = overrides.pop("attn_implementation", None)
    for k, v in overrides.items():  # from_pretrained sets config attributes it is given
        setattr(config, k, v)
    if attn is not None:
        config._attn_implementation = attn
    return config, where


def _auto_from_pretrained(notes: list[str]):
    def from_pretrained(cls, name, *args, config=None, **kwargs):
        dtype, overrides = _split_kwargs(kwargs)
        config, where = _config_for(name, config, overrides)
        mapping = cls._model_mapping
        if type(config) not in mapping:
            raise HubError(
                f"{name}: {cls.__name__} has no class for model type {config.model_type}"
            )
        return _built(notes, name, config, mapping[type(config)], dtype, where)

    return from_pretrained


def _model_from_pretrained(notes: list[str]):
    def from_pretrained(cls, name, *args, config=None, **kwargs):
        dtype, overrides = _split_kwargs(kwargs)
        config, where = _config_for(name, config, overrides)
        return _built(notes, name, config, cls, dtype, where)

    return from_pretrained


def _built(notes, name, config, cls, dtype, where):
    dtype, why = resolve_dtype(config, dtype)
    model = build(config, cls, dtype)
    notes.append(
        f"{cls.__name__}.from_pretrained({str(name)!r}) built from its config.json ({where}) "
        f"on the meta device: no weights downloaded; dtype {str(dtype).replace('torch.', '')} "
        f"({why})"
    )
    return model


def _config_from_pretrained(cls, name, *args, **kwargs):
    kwargs = {k: v for k, v in kwargs.items() if k not in _LOADING_KEYWORDS}
    source = find_config(name)
    return ORIGINALS["config"](cls, str(source.folder), *args, **kwargs)


def _config_class_from_pretrained(cls, name, *args, **kwargs):
    kwargs = {k: v for k, v in kwargs.items() if k not in _LOADING_KEYWORDS}
    source = find_config(name)
    return ORIGINALS["config_class"](cls, str(source.folder), *args, **kwargs)


def uses_from_pretrained(path: Path) -> bool:
    """Whether a problem file's text calls ``from_pretrained`` (so loading it needs
    :func:`from_config_instead_of_weights`; other files never import ``transformers`` for it)."""
    try:
        return "from_pretrained" in Path(path).read_text(errors="replace")
    except OSError:
        return False

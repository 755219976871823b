"""LLM inference phases of a Hugging Face causal LM, as programs ``solar.bound`` takes.

    from solar.llm import prefill, decode_step
    b_prefill = solar.bound(*prefill(model, batch=1, context=4096), hw="H100")
    b_decode = solar.bound(*decode_step(model, batch=8, context=4096), hw="H100")

Both return a :class:`Phase` ``(program, inputs)`` and work on the meta device (a model built
under ``torch.device("meta")``: nothing is allocated) as on a real one (then the inputs are
random token ids and random cache contents on the model's device, ready for
``solar.validate``/``solar.headroom``).

- **prefill**: ``model(input_ids)`` with every default (``use_cache=True``: the model creates
  its cache and returns it; its keys and values are outputs), a prompt of ``context`` tokens.
- **decode step**: one new token per sequence with a KV cache already holding ``context``
  tokens (``position_ids = context``), the cache passed in as the model takes it:

  - ``cache="static"`` (default): a ``transformers.StaticCache`` of ``context + 1`` slots, the
    new keys and values written in place (``index_copy_``) and attention over the whole cache:
    the in-place KV cache of serving engines and of ``generate(cache_implementation=
    "static")``. Its fused bound is the classic one: weights + the KV cache (+ the new token's
    keys and values, the ids and the logits) over the DRAM bandwidth, or the compute of
    ``2 · parameters · batch`` flops (plus attention) at large batch. The step sets each
    layer's position counter back to ``context`` first (one tiny ``fill_`` per layer), so it
    can be run again and again, as timing does.
  - ``cache="dynamic"``: a ``transformers.DynamicCache`` (``generate()``'s default): each
    layer concatenates the new keys and values to the cache (``torch.cat``: the whole cache
    is read and written again every step). The step returns the logits and the new cache,
    and leaves the cache it was given as it was (so it can be run again).

The decode roofline (tokens/s bound against batch size) is one :func:`solar.sweep`::

    sw = solar.sweep(None, lambda b: decode_step(model, batch=b, context=4096),
                     [1, 8, 32, 128, 512], hw="H100", param="batch")
    tokens_per_s = [b / t for b, t in zip(sw.sizes, sw.times("fused"))]

Needs ``transformers`` (>= 5, the ``models`` extra); imported when a phase is built.
"""

from __future__ import annotations

import inspect
from typing import NamedTuple

import torch

__all__ = ["Phase", "decode_sizes", "decode_step", "prefill"]


class Phase(NamedTuple):
    """A program and its inputs: ``solar.bound(*phase, hw=...)``."""

    program: torch.nn.Module
    inputs: tuple


def _device_dtype(model: torch.nn.Module) -> tuple[torch.device, torch.dtype]:
    p = next(iter(model.parameters()))
    floats = [q.dtype for q in model.parameters() if q.dtype.is_floating_point]
    return p.device, (floats[0] if floats else torch.float32)


def _ids(model, batch: int, length: int, device) -> torch.Tensor:
    vocab = int(model.config.get_text_config().vocab_size)
    return torch.randint(0, vocab, (batch, length), device=device)


def prefill(model: torch.nn.Module, batch: int, context: int) -> Phase:
    """``model(input_ids)`` for a prompt of ``context`` tokens, every argument at its default."""
    device, _ = _device_dtype(model)
    return Phase(model, (_ids(model, batch, context, device),))


def _kv_shape(model, batch: int, length: int) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """Layers, and the cached keys' and values' shapes of one layer. Multi-head latent
    attention (DeepSeek-V2/V3: ``kv_lora_rank``) caches the compressed latent as one head:
    "keys" of ``kv_lora_rank`` dims and "values" of ``qk_rope_head_dim`` (the shared rotary
    key), as transformers' MLA does."""
    cfg = model.config.get_text_config()
    heads = int(cfg.num_attention_heads)
    layers = int(cfg.num_hidden_layers)
    if getattr(cfg, "kv_lora_rank", None) and getattr(cfg, "qk_rope_head_dim", None):
        latent, rope = int(cfg.kv_lora_rank), int(cfg.qk_rope_head_dim)
        return layers, (batch, 1, length, latent), (batch, 1, length, rope)
    kv_heads = int(getattr(cfg, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // heads)
    shape = (batch, kv_heads, length, head_dim)
    return layers, shape, shape


def _cache_keyword(model) -> str:
    """The keyword the model takes its cache by (``cache`` in newer transformers, else
    ``past_key_values``)."""
    names = inspect.signature(model.forward).parameters
    return "cache" if "cache" in names else "past_key_values"


def _fill(shape, dtype, device) -> torch.Tensor:
    if torch.device(device).type == "meta":
        return torch.empty(shape, dtype=dtype, device=device)
    return torch.randn(shape, dtype=dtype, device=device)


class StaticDecodeStep(torch.nn.Module):
    """One decode step with an in-place ``StaticCache`` (see the module docstring)."""

    def __init__(self, model: torch.nn.Module, context: int) -> None:
        super().__init__()
        self.model = model
        self.context = context
        self.keyword = _cache_keyword(model)

    def forward(self, input_ids, position_ids, cache):
        for layer in cache.layers:  # the cache holds `context` tokens: write the next slot
            layer.cumulative_length.fill_(self.context)
            # the mask spans the cache's slots: its length read off the tensor (a symbol when
            # the context is one, see decode_sizes), not the int the cache was built with
            layer.max_cache_len = layer.keys.shape[2]
        out = self.model(input_ids=input_ids, position_ids=position_ids, **{self.keyword: cache})
        return out.logits


class DynamicDecodeStep(torch.nn.Module):
    """One decode step with a ``DynamicCache`` (see the module docstring)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        self.keyword = _cache_keyword(model)

    def forward(self, input_ids, position_ids, cache):
        before = [(layer.keys, layer.values) for layer in cache.layers]
        out = self.model(input_ids=input_ids, position_ids=position_ids, **{self.keyword: cache})
        new = [(layer.keys, layer.values) for layer in cache.layers]
        for layer, (k, v) in zip(cache.layers, before, strict=True):
            layer.keys, layer.values = k, v  # the cache it was given, unchanged
        return out.logits, new


def decode_step(
    model: torch.nn.Module, batch: int, context: int, *, cache: str = "static"
) -> Phase:
    """One new token per sequence with a KV cache of ``context`` tokens (``cache``:
    ``"static"`` or ``"dynamic"``, see the module docstring)."""
    import transformers

    device, dtype = _device_dtype(model)
    layers, key_shape, value_shape = _kv_shape(model, batch, context)
    ids = _ids(model, batch, 1, device)
    positions = torch.full((batch, 1), context, dtype=torch.long, device=device)
    if cache == "dynamic":
        kv = [
            (_fill(key_shape, dtype, device), _fill(value_shape, dtype, device))
            for _ in range(layers)
        ]
        return Phase(DynamicDecodeStep(model), (ids, positions, transformers.DynamicCache(kv)))
    if cache != "static":
        raise ValueError(f"cache must be 'static' or 'dynamic', not {cache!r}")
    static = transformers.StaticCache(config=model.config, max_cache_len=context + 1)
    for layer in static.layers:
        layer.lazy_initialization(
            torch.empty((*key_shape[:2], 1, key_shape[3]), dtype=dtype, device=device),
            torch.empty((*value_shape[:2], 1, value_shape[3]), dtype=dtype, device=device),
        )
        if device.type != "meta":  # the past tokens' keys and values: never validate on zeros
            layer.keys.copy_(_fill(layer.keys.shape, dtype, device))
            layer.values.copy_(_fill(layer.values.shape, dtype, device))
        layer.cumulative_length = torch.tensor(context, dtype=torch.long, device=device)
    return Phase(StaticDecodeStep(model, context), (ids, positions, static))


def decode_sizes(phase: Phase) -> dict[str, list[tuple]]:
    """The symbolic sizes of a :func:`decode_step` phase: ``batch`` (the token ids', the
    positions' and every cached key's and value's first dim) and ``context`` (the cached
    tokens: a ``StaticCache`` holds ``context + 1`` slots, a ``DynamicCache`` ``context``)::

        ph = decode_step(model, batch=8, context=4096)
        b = solar.bound(*ph, hw="H100", symbolic=decode_sizes(ph))
        b.at(batch=64, context=32768)
    """
    from solar.frontend.torch import structure

    ids, positions, cache = phase.inputs
    slots = 1 if isinstance(phase.program, StaticDecodeStep) else 0
    batch: list[tuple] = [(0, 0), (1, 0)]
    context: list[tuple] = []
    for path, _ in structure.flatten(cache):
        if path[-1] in (structure.Attr("keys"), structure.Attr("values")):
            binding = ("input", (2, *path))
            batch.append((binding, 0))
            context.append((binding, 2, slots))
    return {"batch": batch, "context": context}

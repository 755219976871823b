"""LLM inference phases of Hugging Face causal LMs: ``prefill`` and ``decode_step``, and
``decode_sizes`` (a decode step's batch and context as symbolic sizes); see
:mod:`solar.frontend.torch.llm`."""

from solar.frontend.torch.llm import (
    DynamicDecodeStep,
    Phase,
    StaticDecodeStep,
    decode_sizes,
    decode_step,
    prefill,
)

__all__ = [
    "DynamicDecodeStep",
    "Phase",
    "StaticDecodeStep",
    "decode_sizes",
    "decode_step",
    "prefill",
]

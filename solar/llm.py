"""LLM inference phases of Hugging Face causal LMs: ``prefill`` and ``decode_step`` (see
:mod:`solar.frontend.torch.llm`)."""

from solar.frontend.torch.llm import (
    DynamicDecodeStep,
    Phase,
    StaticDecodeStep,
    decode_step,
    prefill,
)

__all__ = ["DynamicDecodeStep", "Phase", "StaticDecodeStep", "decode_step", "prefill"]

"""What a serving engine does, as stated assumptions with a switch each (docs/serving.md).

Each switch changes the step that is traced (:mod:`solar.questions.serving_steps`) or the
contexts it is traced and held at, never a formula typed per architecture:

- ``continuous_batching`` (on): a step holds requests at contexts spread over the generation;
  a request's prompt is prefilled alone (its TTFT is one prompt's prefill). Off (static
  batching): the batch's prompts are prefilled together and every sequence holds its
  ``prompt + output`` slots until the batch ends.
- ``page_size`` (16, vLLM's default; None: no paging): the KV cache is held in pages, so a
  sequence holds its own tokens rounded up to whole pages; without paging (or without
  continuous batching) each sequence reserves ``prompt + output`` slots.
- ``prefix_tokens`` (0): that many leading prompt tokens are shared by every request and cached
  once: the prefill is a forward of the other prompt tokens after them, and the cache holds
  the shared tokens once instead of once per sequence. Each decode step still reads them.
- ``speculative`` (``(k, a)``, None): k draft tokens accepted each with probability ``a``; the
  step is the verify forward of ``k + 1`` tokens per sequence, which gives
  ``(1 - a^(k+1)) / (1 - a)`` tokens on average (Leviathan et al. 2023, eq. 1); the draft
  model's own time is left out (it only adds time).
- ``kv_cache`` (``"model"``; ``"fp8"``): the KV cache stored in float8 e4m3 at a fixed
  per-tensor scale of 1 (vLLM's default without calibrated scales), converted to the model's
  dtype as attention reads it.
- ``chunked_prefill`` (None; tokens): every decode step also carries that many prompt tokens of
  a request being prefilled (one program: the weights read once for both); a prompt then
  takes ``ceil(new prompt tokens / chunk)`` steps to its first token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

KV_CACHES = ("model", "fp8")


class ServingError(ValueError):
    """A serving question that cannot be asked as given; the message is one line."""


@dataclass(frozen=True)
class Engine:
    """The serving engine's behaviours (see the module docstring), each a switch."""

    continuous_batching: bool = True
    page_size: int | None = 16
    prefix_tokens: int = 0
    speculative: tuple[int, float] | None = None
    kv_cache: str = "model"
    chunked_prefill: int | None = None

    def __post_init__(self) -> None:
        if self.page_size is not None and not _whole(self.page_size):
            raise ServingError(
                f"page_size must be a whole number >= 1 or None, got {self.page_size!r}"
            )
        if not _whole(self.prefix_tokens, zero=True):
            raise ServingError(
                f"prefix_tokens must be a whole number >= 0, got {self.prefix_tokens!r}"
            )
        if self.kv_cache not in KV_CACHES:
            raise ServingError(f"kv_cache {self.kv_cache!r}: one of {', '.join(KV_CACHES)}")
        if self.chunked_prefill is not None and not _whole(self.chunked_prefill):
            raise ServingError(
                f"chunked_prefill must be a whole number of tokens >= 1 or None, got "
                f"{self.chunked_prefill!r}"
            )
        if self.speculative is not None:
            k, a = self.speculative
            if not _whole(k) or not (0.0 <= float(a) < 1.0):
                raise ServingError(
                    f"speculative (k, a) = {self.speculative!r}: k a whole number >= 1 of draft "
                    "tokens, a the acceptance rate in [0, 1)"
                )

    @property
    def new_tokens(self) -> int:
        """Tokens each sequence feeds per step: 1, or ``k + 1`` when verifying k drafts."""
        return 1 if self.speculative is None else int(self.speculative[0]) + 1

    @property
    def tokens_per_step(self) -> float:
        """Output tokens a sequence gains per step on average (1 without speculation)."""
        if self.speculative is None:
            return 1.0
        k, a = int(self.speculative[0]), float(self.speculative[1])
        return (1.0 - a ** (k + 1)) / (1.0 - a)

    def check(self, prompt: int, output: int) -> None:
        """The engine against the request shape: a shared prefix shorter than the prompt."""
        if self.prefix_tokens >= prompt:
            raise ServingError(
                f"prefix_tokens={self.prefix_tokens} must be shorter than the prompt ({prompt}); "
                "at least one prompt token is the request's own"
            )

    def decode_context(self, prompt: int, output: int) -> int:
        """The context a decode step is traced at: the mean of the contexts a sequence's steps
        meet (``prompt .. prompt + output - 1``), rounded down."""
        return prompt + (output - 1) // 2

    def held_context(self, prompt: int, output: int) -> int:
        """Tokens of KV cache each sequence holds, for the memory limit on batch (see the
        module docstring): its mean context in whole pages when paged with continuous
        batching, else the ``prompt + output`` slots it reserves."""
        if self.page_size is None or not self.continuous_batching:
            return prompt + output
        slots = self.decode_context(prompt, output) + self.new_tokens
        return math.ceil(slots / self.page_size) * self.page_size

    def assumptions(self) -> tuple[str, ...]:
        """One sentence per switch, as it stands."""
        out = []
        if self.continuous_batching:
            out.append(
                "continuous batching: a step holds requests at contexts spread over their "
                "generation; each prompt is prefilled alone (TTFT: one prompt's prefill)"
            )
        else:
            out.append(
                "static batching: the batch's prompts are prefilled together (TTFT: the "
                "batch's prefill) and each sequence holds prompt + output slots to the end"
            )
        if self.page_size is None:
            out.append("no paged KV cache: each sequence reserves prompt + output slots")
        else:
            out.append(
                f"paged KV cache of {self.page_size}-token pages: a sequence holds its tokens "
                "in whole pages (with continuous batching, its mean context)"
            )
        if self.prefix_tokens:
            out.append(
                f"prefix caching: {self.prefix_tokens} shared prompt tokens cached once; the "
                "prefill computes the rest after them; each decode step still reads them"
            )
        if self.speculative is not None:
            k, a = self.speculative
            out.append(
                f"speculative decoding: {k} draft tokens, acceptance {a}: the step verifies "
                f"{k + 1} tokens per sequence for {self.tokens_per_step:.4g} tokens on average "
                "((1 - a^(k+1)) / (1 - a)); the draft model's time is left out"
            )
        if self.kv_cache == "fp8":
            out.append(
                "KV cache in float8 e4m3 (per-tensor scale 1), converted to the model's dtype "
                "as attention reads it"
            )
        if self.chunked_prefill is not None:
            out.append(
                f"chunked prefill: every decode step also carries {self.chunked_prefill} prompt "
                "tokens of one request (one program: weights read once); TTFT: the steps "
                "its prompt takes"
            )
        return tuple(out)

    def to_dict(self) -> dict:
        return {
            "continuous_batching": self.continuous_batching,
            "page_size": self.page_size,
            "prefix_tokens": self.prefix_tokens,
            "speculative": list(self.speculative) if self.speculative else None,
            "kv_cache": self.kv_cache,
            "chunked_prefill": self.chunked_prefill,
            "tokens_per_step": self.tokens_per_step,
        }


def _whole(n: object, zero: bool = False) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and n >= (0 if zero else 1)

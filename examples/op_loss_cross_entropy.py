"""LLM training loss: ``F.cross_entropy`` with label smoothing 0.1 and ignore_index -100 over
(16384, 128256) bf16 logits (LLaMA-3 vocabulary, 8 x 2048 tokens), int64 targets."""

import torch

TOKENS, VOCAB, SMOOTHING = 16384, 128256, 0.1


class Model(torch.nn.Module):
    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(
            logits, targets, ignore_index=-100, label_smoothing=SMOOTHING
        )


def get_inputs():
    return [
        torch.randn(TOKENS, VOCAB, dtype=torch.bfloat16),
        torch.randint(0, VOCAB, (TOKENS,)),
    ]


def get_init_inputs():
    return []

"""Greedy decoding step: argmax over a 128256-token vocabulary of (64, 128256) bf16 logits
(LLaMA-3 vocabulary, batch of 64 sequences), and argmin over the same rows."""

import torch

BATCH, VOCAB = 64, 128256


class Model(torch.nn.Module):
    def forward(self, logits: torch.Tensor):
        return torch.argmax(logits, dim=-1), torch.argmin(logits, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, VOCAB, dtype=torch.bfloat16)]


def get_init_inputs():
    return []

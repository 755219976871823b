"""Causal masking of (8, 32, 2048, 2048) fp32 attention scores: the mask is built with
``torch.tril`` of a ones matrix and applied with ``masked_fill(-inf)``; ``torch.triu`` of the
scores (upper triangle, diagonal 1) is returned as well."""

import torch

BATCH, HEADS, TOKENS = 8, 32, 2048


class Model(torch.nn.Module):
    def forward(self, scores: torch.Tensor):
        mask = torch.tril(torch.ones(TOKENS, TOKENS, dtype=torch.bool, device=scores.device))
        masked = scores.masked_fill(~mask, float("-inf"))
        return masked, torch.triu(scores, diagonal=1)


def get_inputs():
    return [torch.randn(BATCH, HEADS, TOKENS, TOKENS)]


def get_init_inputs():
    return []

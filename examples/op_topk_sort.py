"""Top-k sampling and sorting: ``torch.topk`` (k = 50) over a 50257-token vocabulary for 256
sequences, and a full descending ``torch.sort`` of the same logits (nucleus sampling), fp32."""

import torch

BATCH, VOCAB, K = 256, 50257, 50


class Model(torch.nn.Module):
    def forward(self, logits: torch.Tensor):
        top_v, top_i = torch.topk(logits, K, dim=-1)
        sorted_v, sorted_i = torch.sort(logits, dim=-1, descending=True)
        return top_v, top_i, sorted_v, sorted_i


def get_inputs():
    return [torch.randn(BATCH, VOCAB)]


def get_init_inputs():
    return []

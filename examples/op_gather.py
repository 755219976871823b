"""Gathers: ``torch.gather`` of the target-token log-probabilities from (8192, 32000) fp32
log-probs, ``index_select`` of 65536 rows from a (1048576, 256) feature table, and advanced
indexing ``x[idx]`` of the same rows (both as a framework would run them)."""

import torch

TOKENS, VOCAB = 8192, 32000
TABLE_ROWS, FEATURES, PICKED = 1048576, 256, 65536


class Model(torch.nn.Module):
    def forward(self, logp: torch.Tensor, targets: torch.Tensor, table: torch.Tensor, idx):
        picked = torch.gather(logp, 1, targets.unsqueeze(1)).squeeze(1)
        return picked, torch.index_select(table, 0, idx), table[idx]


def get_inputs():
    return [
        torch.randn(TOKENS, VOCAB),
        torch.randint(0, VOCAB, (TOKENS,)),
        torch.randn(TABLE_ROWS, FEATURES),
        torch.randint(0, TABLE_ROWS, (PICKED,)),
    ]


def get_init_inputs():
    return []

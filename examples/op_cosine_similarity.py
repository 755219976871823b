"""Cosine similarity of (16384, 768) fp32 sentence embeddings (``F.cosine_similarity``) and the
cosine embedding loss with +-1 labels, as in contrastive retrieval training."""

import torch
import torch.nn.functional as F

BATCH, DIM = 16384, 768


class Model(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor, y: torch.Tensor):
        return F.cosine_similarity(a, b, dim=-1), F.cosine_embedding_loss(a, b, y, margin=0.1)


def get_inputs():
    return [torch.randn(BATCH, DIM), torch.randn(BATCH, DIM), torch.sign(torch.randn(BATCH))]


def get_init_inputs():
    return []

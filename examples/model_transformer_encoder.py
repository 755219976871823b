"""``nn.TransformerEncoder`` of 6 ``nn.TransformerEncoderLayer``s (width 512, 8 heads,
feed-forward 2048, ReLU, post-norm, batch_first) with a key padding mask, batch 64 x 256
tokens, fp32: the stock PyTorch module as users write it."""

import torch
from torch import nn

BATCH, TOKENS, WIDTH, HEADS, FFN, LAYERS = 64, 256, 512, 8, 2048, 6


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(WIDTH, HEADS, FFN, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)

    def forward(self, x: torch.Tensor, padding_mask: torch.Tensor) -> torch.Tensor:
        return self.encoder(x, src_key_padding_mask=padding_mask)


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH), torch.zeros(BATCH, TOKENS, dtype=torch.bool)]


def get_init_inputs():
    return []

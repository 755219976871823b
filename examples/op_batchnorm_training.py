"""Training-mode batch normalization (statistics of the batch, as in a training forward pass)
on a BatchNorm1d-shaped (8192, 4096) fp32 activation and a (32, 512, 28, 28) feature map.

Uses ``F.batch_norm(..., training=True)`` explicitly, since problem files are run in eval mode.
"""

import torch

ROWS, FEATURES = 8192, 4096
BATCH, CHANNELS, SIZE = 32, 512, 28


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.ones(FEATURES))
        self.b1 = torch.nn.Parameter(torch.zeros(FEATURES))
        self.w2 = torch.nn.Parameter(torch.ones(CHANNELS))
        self.b2 = torch.nn.Parameter(torch.zeros(CHANNELS))

    def forward(self, x: torch.Tensor, y: torch.Tensor):
        f = torch.nn.functional.batch_norm
        return (
            f(x, None, None, self.w1, self.b1, training=True),
            f(y, None, None, self.w2, self.b2, training=True),
        )


def get_inputs():
    return [torch.randn(ROWS, FEATURES), torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return []

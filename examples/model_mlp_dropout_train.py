"""A model left in train mode: a 3-layer MLP (1024 -> 4096 -> 4096 -> 1024, GELU) with
``nn.Dropout(0.1)`` after each hidden layer, batch 4096, fp32. ``TRAIN_MODE = True`` tells
solar's problem loader to keep it in train mode (problem files are put in eval mode
otherwise): every dropout is CUDA's fused kernel (``native_dropout``), which draws its mask and
writes the output and the mask, and the report says the model was traced in train mode."""

import torch
from torch import nn

TRAIN_MODE = True
BATCH, WIDTH, HIDDEN, P = 4096, 1024, 4096, 0.1


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(WIDTH, HIDDEN), nn.GELU(), nn.Dropout(P),
            nn.Linear(HIDDEN, HIDDEN), nn.GELU(), nn.Dropout(P),
            nn.Linear(HIDDEN, WIDTH),
        )  # fmt: skip

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(BATCH, WIDTH)]


def get_init_inputs():
    return []

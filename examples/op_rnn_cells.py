"""``nn.LSTMCell`` and ``nn.GRUCell`` stepped over a short sequence (input 512, hidden 1024,
batch 256, 8 steps, fp32): per step, as CUDA runs each cell, two GEMMs (input and hidden, no
bias) and one fused cell kernel (``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell``) that adds
the biases, applies the gates and writes the new state."""

import torch
from torch import nn

BATCH, STEPS, INPUT, HIDDEN = 256, 8, 512, 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTMCell(INPUT, HIDDEN)
        self.gru = nn.GRUCell(INPUT, HIDDEN)

    def forward(self, x):
        h = c = g = None
        for t in range(x.shape[1]):
            h, c = self.lstm(x[:, t], None if h is None else (h, c))
            g = self.gru(x[:, t], g)
        return h, c, g


def get_inputs():
    return [torch.randn(BATCH, STEPS, INPUT)]


def get_init_inputs():
    return []

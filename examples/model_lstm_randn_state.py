"""An LSTM whose forward draws its initial state with ``torch.randn`` (a pattern of public
benchmark programs): a 2-layer ``nn.LSTM`` (256 -> 512, batch_first) over batch 64 x 128 steps,
then a linear head on the last step, fp32. The two ``randn`` kernels are real work: each draws
its values and writes the state."""

import torch
from torch import nn

BATCH, STEPS, INPUT, HIDDEN, LAYERS, OUT = 64, 128, 256, 512, 2, 10


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, LAYERS, batch_first=True)
        self.head = nn.Linear(HIDDEN, OUT)

    def forward(self, x):
        h0 = torch.randn(LAYERS, x.size(0), HIDDEN, device=x.device)
        c0 = torch.randn(LAYERS, x.size(0), HIDDEN, device=x.device)
        out, _ = self.lstm(x, (h0, c0))
        return self.head(out[:, -1, :])


def get_inputs():
    return [torch.randn(BATCH, STEPS, INPUT)]


def get_init_inputs():
    return []

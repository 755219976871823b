"""``nn.LSTM``: 2 layers, bidirectional, batch_first, 256 -> 512 hidden, batch 64, 32 steps,
fp32. Returns the output sequence and the final (h, c) states.

The sequence is kept short: PyTorch unrolls the recurrence into per-step operators, so the
trace grows with layers x directions x steps.
"""

import torch

BATCH, STEPS, INPUT, HIDDEN, LAYERS = 64, 32, 256, 512, 2


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(
            INPUT, HIDDEN, num_layers=LAYERS, batch_first=True, bidirectional=True
        )

    def forward(self, x: torch.Tensor):
        out, (h, c) = self.lstm(x)
        return out, h, c


def get_inputs():
    return [torch.randn(BATCH, STEPS, INPUT)]


def get_init_inputs():
    return []

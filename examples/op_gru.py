"""``nn.GRU``: 3 layers, sequence-first (seq, batch, feature), 512 -> 1024 hidden, 32 steps,
batch 128, fp32, with an explicit initial hidden state."""

import torch

STEPS, BATCH, INPUT, HIDDEN, LAYERS = 32, 128, 512, 1024, 3


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(INPUT, HIDDEN, num_layers=LAYERS)

    def forward(self, x: torch.Tensor, h0: torch.Tensor):
        return self.gru(x, h0)


def get_inputs():
    return [torch.randn(STEPS, BATCH, INPUT), torch.randn(LAYERS, BATCH, HIDDEN)]


def get_init_inputs():
    return []

"""``nn.GRU`` stack of issue 13: 6 layers, 128 -> 256 hidden, batch 10, 512 steps, fp32,
sequence-first. A long recurrence at a small batch: its bound is shaped by the chain of 512
dependent steps per layer (a wavefront of 512 + 6 - 1 steps through the stack) as much as by
its work."""

import torch

STEPS, BATCH, INPUT, HIDDEN, LAYERS = 512, 10, 128, 256, 6


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(INPUT, HIDDEN, num_layers=LAYERS)

    def forward(self, x: torch.Tensor):
        out, h = self.gru(x)
        return out, h


def get_inputs():
    return [torch.randn(STEPS, BATCH, INPUT)]


def get_init_inputs():
    return []

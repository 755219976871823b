"""A vanilla RNN cell written by hand, as a public benchmark writes it: the hidden state is a
plain tensor attribute created in ``__init__`` and replaced in every ``forward``
(``self.hidden = tanh(i2h(cat(x, hidden)))``), output ``h2o(hidden)``. Batch 256, input 1024,
hidden 2048, output 512, fp32. Tracing must leave the model's attribute as it was (a fake tensor
left there would break the next real run)."""

import torch
from torch import nn

BATCH, INPUT, HIDDEN, OUTPUT = 256, 1024, 2048, 512


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.randn(BATCH, HIDDEN)
        self.i2h = nn.Linear(INPUT + HIDDEN, HIDDEN)
        self.h2o = nn.Linear(HIDDEN, OUTPUT)
        self.tanh = nn.Tanh()

    def forward(self, x):
        self.hidden = self.hidden.to(x.device)
        combined = torch.cat((x, self.hidden), dim=1)
        self.hidden = self.tanh(self.i2h(combined))
        return self.h2o(self.hidden)


def get_inputs():
    return [torch.randn(BATCH, INPUT)]


def get_init_inputs():
    return []

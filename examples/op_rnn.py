"""Elman ``nn.RNN``s: a 2-layer tanh RNN (batch_first) and a bidirectional ReLU RNN,
512 -> 1024 hidden, batch 128, 48 steps, fp32."""

import torch

BATCH, STEPS, INPUT, HIDDEN = 128, 48, 512, 1024


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tanh_rnn = torch.nn.RNN(INPUT, HIDDEN, num_layers=2, batch_first=True)
        self.relu_rnn = torch.nn.RNN(
            INPUT, HIDDEN, nonlinearity="relu", batch_first=True, bidirectional=True
        )

    def forward(self, x: torch.Tensor):
        out_tanh, h_tanh = self.tanh_rnn(x)
        out_relu, h_relu = self.relu_rnn(x)
        return out_tanh, h_tanh, out_relu, h_relu


def get_inputs():
    return [torch.randn(BATCH, STEPS, INPUT)]


def get_init_inputs():
    return []

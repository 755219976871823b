"""``nn.Bilinear`` (y = x1^T A x2 + b) with 512 x 512 inputs into 256 outputs, batch 8192, fp32
(recorded as aten._trilinear)."""

import torch

BATCH, IN1, IN2, OUT = 8192, 512, 512, 256


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bilinear = torch.nn.Bilinear(IN1, IN2, OUT)

    def forward(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        return self.bilinear(x1, x2)


def get_inputs():
    return [torch.randn(BATCH, IN1), torch.randn(BATCH, IN2)]


def get_init_inputs():
    return []

"""Average pooling: Inception-style 3x3 stride-1 padding-1 (count_include_pad=False) on
(64, 768, 17, 17), and DenseNet-transition 2x2 stride-2 on (64, 256, 56, 56), bf16."""

import torch

BATCH = 64
INCEPTION_C, INCEPTION_SIZE = 768, 17
DENSENET_C, DENSENET_SIZE = 256, 56


class Model(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor):
        inception = torch.nn.functional.avg_pool2d(
            a, 3, stride=1, padding=1, count_include_pad=False
        )
        transition = torch.nn.functional.avg_pool2d(b, 2, stride=2)
        return inception, transition


def get_inputs():
    return [
        torch.randn(BATCH, INCEPTION_C, INCEPTION_SIZE, INCEPTION_SIZE, dtype=torch.bfloat16),
        torch.randn(BATCH, DENSENET_C, DENSENET_SIZE, DENSENET_SIZE, dtype=torch.bfloat16),
    ]


def get_init_inputs():
    return []

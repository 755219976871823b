"""PyTorch twin of examples/jax_twin_convnet.py (NCHW, fp32): conv 3x3 (3->64, pad 1) -> ReLU
-> conv 3x3 stride 2 (64->128, pad 1) -> ReLU -> global mean -> linear (128->10); batch 32 of
224x224 images."""

import torch

BATCH, SIZE, C1, C2, CLASSES = 32, 224, 64, 128, 10


class Model(torch.nn.Module):
    def __init__(self, c1: int = C1, c2: int = C2, classes: int = CLASSES):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, c1, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(c1, c2, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(c2, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv1(x))
        h = torch.relu(self.conv2(h))
        return self.fc(h.mean(dim=(2, 3)))


def get_inputs(batch: int = BATCH, size: int = SIZE):
    return [torch.randn(batch, 3, size, size)]


def get_init_inputs():
    return [C1, C2, CLASSES]

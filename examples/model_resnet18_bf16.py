"""ResNet-18 (basic blocks [2, 2, 2, 2]) in plain torch, bf16 weights and activations, batch
128 at 224x224, ImageNet head."""

import torch
from torch import nn

BATCH, SIZE, CLASSES = 128, 224, 1000
LAYERS = (2, 2, 2, 2)
WIDTHS = (64, 128, 256, 512)


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class Model(nn.Module):
    def __init__(self, classes: int = CLASSES):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        blocks, c_in = [], 64
        for i, (n, width) in enumerate(zip(LAYERS, WIDTHS)):
            for j in range(n):
                blocks.append(BasicBlock(c_in, width, 2 if (j == 0 and i > 0) else 1))
                c_in = width
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(c_in, classes)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.stem(x))
        return self.fc(x.mean(dim=(2, 3)))


def get_inputs():
    return [torch.randn(BATCH, 3, SIZE, SIZE, dtype=torch.bfloat16)]


def get_init_inputs():
    return [CLASSES]

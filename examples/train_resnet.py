"""One training step of ResNet-18 on ImageNet-sized images: forward with batch-norm in
training mode (batch statistics, running statistics updated in place), cross-entropy loss,
backward, SGD with momentum 0.9, Nesterov off, weight decay 5e-5 (foreach, as eager CUDA
runs it). Batch 32 x 3 x 224 x 224, fp32 (TF32 convolutions).

A training problem file (docs/training.md): ``Model.forward`` returns the loss and
``get_optimizer(model)`` makes the optimizer; the step is solar's default one.
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH, SIZE, CLASSES = 32, 224, 1000


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.down is None else self.down(x)))


class Model(nn.Module):
    def __init__(self, classes: int = CLASSES):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        widths = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
        self.layers = nn.Sequential(
            *(nn.Sequential(BasicBlock(a, b, s), BasicBlock(b, b, 1)) for a, b, s in widths)
        )
        self.fc = nn.Linear(512, classes)

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(images))
        logits = self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
        return F.cross_entropy(logits, labels)


def get_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)


def get_inputs():
    return [torch.randn(BATCH, 3, SIZE, SIZE), torch.randint(0, CLASSES, (BATCH,))]


def get_init_inputs():
    return [CLASSES]

"""``F.one_hot`` of (256, 1024) int64 class labels into 1000 classes, converted to fp32 as a
soft-target matrix (the num_classes argument is given, so the shape is static)."""

import torch

BATCH, POSITIONS, CLASSES = 256, 1024, 1000


class Model(torch.nn.Module):
    def forward(self, labels: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot(labels, CLASSES).float()


def get_inputs():
    return [torch.randint(0, CLASSES, (BATCH, POSITIONS))]


def get_init_inputs():
    return []

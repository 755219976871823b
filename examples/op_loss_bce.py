"""Binary cross-entropy for multi-label classification over (4096, 9605) fp32 (Open Images
classes): ``F.binary_cross_entropy`` on sigmoid probabilities, and
``F.binary_cross_entropy_with_logits`` with a per-class pos_weight."""

import torch
import torch.nn.functional as F

BATCH, CLASSES = 4096, 9605


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("pos_weight", torch.ones(CLASSES))

    def forward(self, logits: torch.Tensor, targets: torch.Tensor):
        bce = F.binary_cross_entropy(torch.sigmoid(logits), targets)
        bce_logits = F.binary_cross_entropy_with_logits(logits, targets, pos_weight=self.pos_weight)
        return bce, bce_logits


def get_inputs():
    return [torch.randn(BATCH, CLASSES), torch.rand(BATCH, CLASSES)]


def get_init_inputs():
    return []

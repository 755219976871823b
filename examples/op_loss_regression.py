"""Regression losses over (256, 4096, 1024) fp32 predictions and targets, mean-reduced:
MSE, L1, Huber (delta 1.0) and SmoothL1 (beta 0.5)."""

import torch
import torch.nn.functional as F

BATCH, TOKENS, WIDTH = 256, 4096, 1024


class Model(torch.nn.Module):
    def forward(self, pred: torch.Tensor, target: torch.Tensor):
        return (
            F.mse_loss(pred, target),
            F.l1_loss(pred, target),
            F.huber_loss(pred, target, delta=1.0),
            F.smooth_l1_loss(pred, target, beta=0.5),
        )


def get_inputs():
    return [torch.randn(BATCH, TOKENS, WIDTH), torch.randn(BATCH, TOKENS, WIDTH)]


def get_init_inputs():
    return []

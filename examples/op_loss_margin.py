"""Margin losses for metric learning, fp32: triplet margin loss on (8192, 512) anchor /
positive / negative embeddings, margin ranking loss on (8192,) scores, hinge embedding loss
and multi-class margin (SVM) loss over (8192, 1000) scores."""

import torch
import torch.nn.functional as F

BATCH, DIM, CLASSES = 8192, 512, 1000


class Model(torch.nn.Module):
    def forward(self, anchor, positive, negative, s1, s2, sign, scores, labels):
        return (
            F.triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0),
            F.margin_ranking_loss(s1, s2, sign, margin=0.2),
            F.hinge_embedding_loss(scores, torch.sign(scores), margin=1.0),
            F.multi_margin_loss(scores, labels, margin=1.0),
        )


def get_inputs():
    return [
        torch.randn(BATCH, DIM),
        torch.randn(BATCH, DIM),
        torch.randn(BATCH, DIM),
        torch.randn(BATCH),
        torch.randn(BATCH),
        torch.sign(torch.randn(BATCH)),
        torch.randn(BATCH, CLASSES),
        torch.randint(0, CLASSES, (BATCH,)),
    ]


def get_init_inputs():
    return []

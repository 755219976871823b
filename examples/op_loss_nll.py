"""Class-weighted negative log-likelihood over ImageNet-22k log-probabilities: ``log_softmax``
then ``F.nll_loss`` with per-class weights, (1024, 21841) fp32, and a segmentation NLL over
(16, 150, 128, 128) per-pixel log-probs (ADE20K classes)."""

import torch
import torch.nn.functional as F

BATCH, CLASSES = 1024, 21841
SEG_BATCH, SEG_CLASSES, SIZE = 16, 150, 128


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("class_weight", torch.ones(CLASSES))

    def forward(self, logits, labels, seg_logits, seg_labels):
        cls = F.nll_loss(F.log_softmax(logits, dim=-1), labels, weight=self.class_weight)
        seg = F.nll_loss(F.log_softmax(seg_logits, dim=1), seg_labels)
        return cls, seg


def get_inputs():
    return [
        torch.randn(BATCH, CLASSES),
        torch.randint(0, CLASSES, (BATCH,)),
        torch.randn(SEG_BATCH, SEG_CLASSES, SIZE, SIZE),
        torch.randint(0, SEG_CLASSES, (SEG_BATCH, SIZE, SIZE)),
    ]


def get_init_inputs():
    return []

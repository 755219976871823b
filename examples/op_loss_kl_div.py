"""Knowledge-distillation loss: KL(teacher || student) with temperature 2 over (4096, 32000)
fp32 logits, ``F.kl_div(log_softmax(s/T), log_softmax(t/T), log_target=True,
reduction="batchmean") * T^2``."""

import torch
import torch.nn.functional as F

TOKENS, VOCAB, TEMPERATURE = 4096, 32000, 2.0


class Model(torch.nn.Module):
    def forward(self, student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
        s = F.log_softmax(student / TEMPERATURE, dim=-1)
        t = F.log_softmax(teacher / TEMPERATURE, dim=-1)
        return F.kl_div(s, t, reduction="batchmean", log_target=True) * TEMPERATURE**2


def get_inputs():
    return [torch.randn(TOKENS, VOCAB), torch.randn(TOKENS, VOCAB)]


def get_init_inputs():
    return []

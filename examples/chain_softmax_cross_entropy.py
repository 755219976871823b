"""LM head and loss written out: logits = hidden @ W_vocab^T, softmax cross-entropy as
max-subtract, exp, sum, log, gather of the target logit, mean; 8192 tokens, width 2048,
vocabulary 50304, fp32. The (8192, 50304) logits never need to reach DRAM when fused."""

import torch

TOKENS, WIDTH, VOCAB = 8192, 2048, 50304


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH, vocab: int = VOCAB):
        super().__init__()
        self.head = torch.nn.Linear(width, vocab, bias=False)

    def forward(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.head(hidden)
        shifted = logits - logits.amax(dim=-1, keepdim=True)
        log_z = torch.log(torch.exp(shifted).sum(dim=-1))
        target_logit = torch.gather(shifted, 1, targets.unsqueeze(1)).squeeze(1)
        return (log_z - target_logit).mean()


def get_inputs():
    return [torch.randn(TOKENS, WIDTH), torch.randint(0, VOCAB, (TOKENS,))]


def get_init_inputs():
    return [WIDTH, VOCAB]

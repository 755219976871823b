"""PyTorch twin of examples/jax_twin_train_gpt.py: one training step (loss, backward, AdamW)
of the same small GPT, same shapes, parameter layout, bf16 parameters and optimizer state,
attention written out as matmul-softmax-matmul, the loss in float32. Both get the same fused
bound (the step's tensor-core work is the same, operation for operation).

A training problem file (docs/training.md): ``Model.forward`` returns the loss and
``get_optimizer(model)`` makes the optimizer; the step is solar's default one.
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH, TOKENS, VOCAB, WIDTH, HEADS, LAYERS = 8, 512, 4096, 512, 8, 2


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.attn = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / (c // self.heads) ** 0.5)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        probs = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        return self.proj((probs @ v).transpose(1, 2).reshape(b, t, c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Model(nn.Module):
    def __init__(self, layers=LAYERS, width=WIDTH, vocab=VOCAB, context=TOKENS):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList([Block(width, HEADS) for _ in range(layers)])
        self.lnf = nn.LayerNorm(width)
        self.to(torch.bfloat16)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lnf(x) @ self.wte.weight.T
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def get_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.AdamW(
        model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.01
    )


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, TOKENS)), torch.randint(0, VOCAB, (BATCH, TOKENS))]


def get_init_inputs():
    return [LAYERS, WIDTH, VOCAB, TOKENS]

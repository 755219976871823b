"""One training step of a GPT-2-small-sized language model (nanoGPT layout), as nanoGPT runs
it: bf16 autocast, loss, backward, gradient clipping at 1.0, fused AdamW with weight decay on
the matrices only. 12 blocks (width 768, 12 heads, causal SDPA, tanh-GELU MLP), vocabulary
50304, batch 8 x 1024 tokens, fp32 weights (124M parameters).

A training problem file (docs/training.md): ``Model.forward`` returns the loss,
``get_optimizer(model)`` makes the optimizer, ``train_step(model, optimizer, *batch)`` is the
step solar analyses (traced on fake tensors: nothing is allocated).
"""

import torch
import torch.nn.functional as F
from torch import nn

BATCH, TOKENS, VOCAB, WIDTH, HEADS, LAYERS = 8, 1024, 50304, 768, 12, 12


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.attn = nn.Linear(width, 3 * width)
        self.attn_proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.fc_proj = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class Model(nn.Module):
    def __init__(self, layers=LAYERS, width=WIDTH, heads=HEADS, vocab=VOCAB, context=TOKENS):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def get_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), fused=True)


def train_step(model, optimizer, idx, targets):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(idx, targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, TOKENS)), torch.randint(0, VOCAB, (BATCH, TOKENS))]


def get_init_inputs():
    return [LAYERS, WIDTH, HEADS, VOCAB, TOKENS]

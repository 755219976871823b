"""A GPT-style language model in plain torch (nanoGPT layout): token + position embeddings,
12 transformer blocks (width 1024, 16 heads, causal SDPA, GELU MLP), final LayerNorm and an
LM head tied to the token embedding; vocabulary 50304, batch 8 x 2048 tokens, bf16
(GPT-2-medium-sized, ~350M parameters)."""

import torch
import torch.nn.functional as F
from torch import nn

BATCH, TOKENS, VOCAB, WIDTH, HEADS, LAYERS, CONTEXT = 8, 2048, 50304, 1024, 16, 12, 2048


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
    def __init__(self, vocab: int = VOCAB, width: int = WIDTH, layers: int = LAYERS):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(CONTEXT, width)
        self.blocks = nn.ModuleList([Block(width, HEADS) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying
        self.to(torch.bfloat16)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, TOKENS))]


def get_init_inputs():
    return [VOCAB, WIDTH, LAYERS]

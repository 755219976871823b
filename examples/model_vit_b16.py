"""ViT-B/16 in plain torch: 16x16 patch-embedding conv, class token, learned position
embeddings, 12 pre-norm transformer blocks (width 768, 12 heads, MLP 3072, SDPA attention),
classification head; batch 64 at 224x224 (196 patches + 1), bf16."""

import torch
import torch.nn.functional as F
from torch import nn

BATCH, SIZE, PATCH, WIDTH, DEPTH, HEADS, MLP, CLASSES = 64, 224, 16, 768, 12, 12, 3072, 1000


class Block(nn.Module):
    def __init__(self, width: int, heads: int, mlp: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width, eps=1e-6)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width, eps=1e-6)
        self.fc1 = nn.Linear(width, mlp)
        self.fc2 = nn.Linear(mlp, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, t, 3, self.heads, c // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        y = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class Model(nn.Module):
    def __init__(self, classes: int = CLASSES):
        super().__init__()
        n_patches = (SIZE // PATCH) ** 2
        self.patch = nn.Conv2d(3, WIDTH, PATCH, stride=PATCH)
        self.cls = nn.Parameter(torch.zeros(1, 1, WIDTH))
        self.pos = nn.Parameter(torch.zeros(1, n_patches + 1, WIDTH))
        self.blocks = nn.Sequential(*[Block(WIDTH, HEADS, MLP) for _ in range(DEPTH)])
        self.norm = nn.LayerNorm(WIDTH, eps=1e-6)
        self.head = nn.Linear(WIDTH, classes)
        self.to(torch.bfloat16)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        x = self.patch(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


def get_inputs():
    return [torch.randn(BATCH, 3, SIZE, SIZE, dtype=torch.bfloat16)]


def get_init_inputs():
    return [CLASSES]

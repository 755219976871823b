"""A Swin Transformer stage as its reference code writes it: 4 blocks of (shifted) window
attention with a relative position bias and an MLP, width 192, 6 heads, 7 x 7 windows on a
56 x 56 feature map, batch 8, fp32, eval mode. Its constructor reads numbers out of tensors
(the stochastic-depth schedule ``[x.item() for x in torch.linspace(0, 0.2, depth)]``, the
attention mask of the shifted windows built with real indexing), which the meta device cannot
do: solar builds it on the CPU and says so in the report."""

import torch
from torch import nn

BATCH, SIZE, WIDTH, HEADS, WINDOW, DEPTH = 8, 56, 192, 6, 7, 4


class DropPath(nn.Module):
    """Stochastic depth: drops whole residual branches in training, identity in eval."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        keep = torch.rand(x.shape[0], 1, 1, device=x.device) >= self.p
        return x * keep / (1 - self.p)


def windows(x, w):
    b, h, wd, c = x.shape
    x = x.view(b, h // w, w, wd // w, w, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, w * w, c)


def unwindows(x, w, h, wd):
    b = x.shape[0] // ((h // w) * (wd // w))
    x = x.view(b, h // w, wd // w, w, w, -1).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(b, h, wd, -1)


class WindowAttention(nn.Module):
    def __init__(self, dim, heads, w):
        super().__init__()
        self.heads, self.w = heads, w
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.bias_table = nn.Parameter(torch.randn((2 * w - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij"))
        flat = coords.flatten(1)
        rel = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0) + (w - 1)
        self.register_buffer("index", rel[..., 0] * (2 * w - 1) + rel[..., 1], persistent=False)

    def forward(self, x, mask=None):
        n_win, n, c = x.shape
        qkv = self.qkv(x).view(n_win, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
        attn = q @ k.transpose(-2, -1)
        bias = self.bias_table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        attn = attn + bias.unsqueeze(0)
        if mask is not None:
            g = mask.shape[0]
            attn = attn.view(n_win // g, g, self.heads, n, n) + mask[None, :, None]
            attn = attn.view(n_win, self.heads, n, n)
        out = (attn.softmax(-1) @ v).transpose(1, 2).reshape(n_win, n, c)
        return self.proj(out)


def shift_mask(size, w, shift):
    """The attention mask of shifted windows (-100 between regions), built by real indexing."""
    img = torch.zeros(1, size, size, 1)
    region = 0
    for hs in (slice(0, -w), slice(-w, -shift), slice(-shift, None)):
        for ws in (slice(0, -w), slice(-w, -shift), slice(-shift, None)):
            img[:, hs, ws, :] = region
            region += 1
    win = windows(img, w).squeeze(-1)
    diff = win[:, None, :] - win[:, :, None]
    return diff.masked_fill(diff != 0, -100.0).masked_fill(diff == 0, 0.0)


class Block(nn.Module):
    def __init__(self, dim, heads, w, shift, drop_path):
        super().__init__()
        self.w, self.shift = w, shift
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, heads, w)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.drop_path = DropPath(drop_path)
        mask = shift_mask(SIZE, w, shift) if shift else None
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        b, h, wd, c = x.shape
        y = self.norm1(x)
        if self.shift:
            y = torch.roll(y, (-self.shift, -self.shift), (1, 2))
        y = unwindows(self.attn(windows(y, self.w), self.mask), self.w, h, wd)
        if self.shift:
            y = torch.roll(y, (self.shift, self.shift), (1, 2))
        x = x + self.drop_path(y)
        return x + self.drop_path(self.mlp(self.norm2(x)))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        rates = [x.item() for x in torch.linspace(0, 0.2, DEPTH)]  # reads values: not on meta
        self.blocks = nn.Sequential(
            *(Block(WIDTH, HEADS, WINDOW, (i % 2) * (WINDOW // 2), r) for i, r in enumerate(rates))
        )

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(BATCH, SIZE, SIZE, WIDTH)]


def get_init_inputs():
    return []

"""A Mamba-2-style language model in plain torch: token embedding, 2 Mamba-2 blocks and a tied
LM head. Each block: in-projection to (z, x, B, C, dt), a causal depthwise conv1d (kernel 4)
with SiLU, softplus step sizes, the selective state-space scan in its chunked "SSD" form
(written with ``cumsum``, ``exp``, triangular masks and 2-, 3- and 4-operand ``torch.einsum``,
as in the Mamba-2 paper's minimal reference), a D skip, a SiLU-gated RMSNorm and the
out-projection. Width 2048 (inner 4096, 64 heads of 64, state 128, chunk 256), vocabulary
50280, batch 4 x 2048 tokens, fp32."""

import torch
import torch.nn.functional as F
from torch import nn

BATCH, TOKENS, VOCAB, WIDTH, LAYERS = 4, 2048, 50280, 2048, 2
EXPAND, HEAD_DIM, STATE, CHUNK, CONV_K, EPS = 2, 64, 128, 256, 4, 1e-5


def segsum(x: torch.Tensor) -> torch.Tensor:
    """out[..., i, j] = x[..., j+1] + ... + x[..., i] for i >= j, -inf above the diagonal."""
    t = x.size(-1)
    x = x[..., None].expand(*x.shape, t)
    below = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=-1)
    x = x.masked_fill(~below, 0)
    x_segsum = torch.cumsum(x, dim=-2)
    causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=0)
    return x_segsum.masked_fill(~causal, float("-inf"))


def ssd(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Chunked selective scan. x (B, L, H, P), a (B, L, H), b and c (B, L, N) -> (B, L, H, P)."""
    bsz, length, heads, p = x.shape
    n_chunks = length // CHUNK
    x = x.reshape(bsz, n_chunks, CHUNK, heads, p)
    b = b.reshape(bsz, n_chunks, CHUNK, -1)
    c = c.reshape(bsz, n_chunks, CHUNK, -1)
    a = a.reshape(bsz, n_chunks, CHUNK, heads).permute(0, 3, 1, 2)  # (B, H, C, L)
    a_cumsum = torch.cumsum(a, dim=-1)

    # 1. outputs within each chunk (the quadratic, attention-like form)
    decay = torch.exp(segsum(a))
    y_diag = torch.einsum("bcln,bcsn,bhcls,bcshp->bclhp", c, b, decay, x)
    # 2. the state each chunk leaves behind
    decay_states = torch.exp(a_cumsum[..., -1:] - a_cumsum)
    states = torch.einsum("bcln,bhcl,bclhp->bchpn", b, decay_states, x)
    # 3. the recurrence between chunks
    states = torch.cat([torch.zeros_like(states[:, :1]), states], dim=1)
    decay_chunk = torch.exp(segsum(F.pad(a_cumsum[..., -1], (1, 0))))
    states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)[:, :-1]
    # 4. the states' contribution to each output
    y_off = torch.einsum("bcln,bchpn,bhcl->bclhp", c, states, torch.exp(a_cumsum))
    return (y_diag + y_off).reshape(bsz, length, heads, p)


class MambaBlock(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.inner = EXPAND * width
        self.heads = self.inner // HEAD_DIM
        conv_channels = self.inner + 2 * STATE
        self.norm = nn.RMSNorm(width, eps=EPS)
        self.in_proj = nn.Linear(width, 2 * self.inner + 2 * STATE + self.heads, bias=False)
        self.conv = nn.Conv1d(
            conv_channels, conv_channels, CONV_K, groups=conv_channels, padding=CONV_K - 1
        )
        self.dt_bias = nn.Parameter(torch.zeros(self.heads))
        self.a_log = nn.Parameter(torch.zeros(self.heads))
        self.d = nn.Parameter(torch.ones(self.heads))
        self.gate_norm = nn.Parameter(torch.ones(self.inner))
        self.out_proj = nn.Linear(self.inner, width, bias=False)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        bsz, length, _ = u.shape
        z, xbc, dt = self.in_proj(self.norm(u)).split(
            [self.inner, self.inner + 2 * STATE, self.heads], dim=-1
        )
        xbc = F.silu(self.conv(xbc.transpose(1, 2))[..., :length].transpose(1, 2))
        x, b, c = xbc.split([self.inner, STATE, STATE], dim=-1)
        dt = F.softplus(dt + self.dt_bias)  # (B, L, H)
        a = -torch.exp(self.a_log)  # (H,)
        x = x.reshape(bsz, length, self.heads, HEAD_DIM)
        y = ssd(x * dt.unsqueeze(-1), a * dt, b, c) + x * self.d[:, None]
        y = y.reshape(bsz, length, self.inner) * F.silu(z)
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + EPS) * self.gate_norm
        return u + self.out_proj(y)


class Model(nn.Module):
    def __init__(self, vocab: int = VOCAB, width: int = WIDTH, layers: int = LAYERS):
        super().__init__()
        self.embedding = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList([MambaBlock(width) for _ in range(layers)])
        self.norm_f = nn.RMSNorm(width, eps=EPS)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.embedding.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embedding(ids)
        for layer in self.layers:
            h = layer(h)
        return self.lm_head(self.norm_f(h))


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, TOKENS))]


def get_init_inputs():
    return [VOCAB, WIDTH, LAYERS]

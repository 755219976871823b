"""``torch.einsum`` with three and four operands, fp32: a batched matrix chain
``bij,bjk,bkl->bil`` (64 x 1024^3), a bilinear form ``bi,oij,bj->bo`` (batch 4096, 512 x 512
into 256 outputs), and a four-tensor network ``abc,cd,de,ef->abf``."""

import torch

B, N = 64, 1024
BATCH, IN, OUT = 4096, 512, 256
A, BB, C, D, E, F = 32, 512, 1024, 256, 1024, 512


class Model(torch.nn.Module):
    def forward(self, x, y, z, u, w, v, t0, t1, t2, t3):
        chain = torch.einsum("bij,bjk,bkl->bil", x, y, z)
        bilinear = torch.einsum("bi,oij,bj->bo", u, w, v)
        network = torch.einsum("abc,cd,de,ef->abf", t0, t1, t2, t3)
        return chain, bilinear, network


def get_inputs():
    return [
        torch.randn(B, N, N),
        torch.randn(B, N, N),
        torch.randn(B, N, N),
        torch.randn(BATCH, IN),
        torch.randn(OUT, IN, IN),
        torch.randn(BATCH, IN),
        torch.randn(A, BB, C),
        torch.randn(C, D),
        torch.randn(D, E),
        torch.randn(E, F),
    ]


def get_init_inputs():
    return []

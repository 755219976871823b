"""Vector and matrix norms of (4096, 8192) fp32: L2 norm of rows (``torch.linalg.vector_norm``),
L1 norm of columns, infinity norm, the Frobenius norm of the whole matrix, and
``F.normalize`` (rows divided by their L2 norm), as in gradient clipping and embedding heads."""

import torch

ROWS, COLS = 4096, 8192


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        return (
            torch.linalg.vector_norm(x, ord=2, dim=-1),
            torch.linalg.vector_norm(x, ord=1, dim=0),
            torch.linalg.vector_norm(x, ord=float("inf"), dim=-1),
            torch.linalg.matrix_norm(x, ord="fro"),
            torch.nn.functional.normalize(x, p=2.0, dim=-1),
        )


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []

"""Indexed accumulation: ``index_add`` of 2M rows of width 256 into a 1M-row table (sparse
embedding-gradient style) and ``index_put`` with accumulate=True, fp32."""

import torch

ROWS, UPDATES, WIDTH = 1048576, 2097152, 256


class Model(torch.nn.Module):
    def forward(self, table: torch.Tensor, idx: torch.Tensor, src: torch.Tensor):
        added = table.index_add(0, idx, src, alpha=0.5)
        put = table.index_put((idx,), src, accumulate=True)
        return added, put


def get_inputs():
    return [
        torch.randn(ROWS, WIDTH),
        torch.randint(0, ROWS, (UPDATES,)),
        torch.randn(UPDATES, WIDTH),
    ]


def get_init_inputs():
    return []

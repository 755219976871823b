"""Scatters: ``scatter_add`` of 4M edge messages (width 128) into 1M graph nodes (GNN sum
aggregation), ``scatter_reduce`` with amax, and ``scatter`` of a one-per-row value, fp32."""

import torch

EDGES, NODES, WIDTH = 4194304, 1048576, 128
ROWS, COLS = 8192, 32000


class Model(torch.nn.Module):
    def forward(self, msg: torch.Tensor, dst: torch.Tensor, base: torch.Tensor, cols):
        index = dst.unsqueeze(1).expand(EDGES, WIDTH)
        zeros = torch.zeros(NODES, WIDTH, dtype=msg.dtype, device=msg.device)
        summed = torch.scatter_add(zeros, 0, index, msg)
        maxed = torch.scatter_reduce(zeros, 0, index, msg, reduce="amax", include_self=False)
        marked = torch.scatter(base, 1, cols.unsqueeze(1), 1.0)
        return summed, maxed, marked


def get_inputs():
    return [
        torch.randn(EDGES, WIDTH),
        torch.randint(0, NODES, (EDGES,)),
        torch.randn(ROWS, COLS),
        torch.randint(0, COLS, (ROWS,)),
    ]


def get_init_inputs():
    return []

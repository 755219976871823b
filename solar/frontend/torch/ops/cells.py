"""RNN cells as CUDA runs them: ``solar.lstm_cell`` and ``solar.gru_cell``, ONE kernel each.

``nn.LSTMCell``/``nn.GRUCell`` on CUDA launch two GEMMs (``input @ W_ih^T``, ``h @ W_hh^T``,
without bias) and one fused cell kernel (``_thnn_fused_lstm_cell`` /
``_thnn_fused_gru_cell``) that adds the biases, applies the gates and writes the new state; the
CPU trace records per-gate ``addmm``/``sigmoid_``/``tanh_``/``mul`` kernels instead, so while
tracing the calls are rerouted (:mod:`solar.frontend.torch.reroute`) and the cell kernel
lowers here. Over the batch ``b < B`` and hidden units ``j < H``, with ``G = igates +
hgates + b_ih + b_hh`` (gate ``k`` at columns ``k·H + j``)::

    LSTM  cy[b,j] = σ(G_f) · cx[b,j] + σ(G_i) · tanh(G_g)        hy[b,j] = σ(G_o) · tanh(cy)
    GRU   r = σ(i_r + h_r)   z = σ(i_z + h_z)   n = tanh(i_n + r · h_n)   hy = n + z · (hx - n)

(the GRU's biases go with their own gates: ``h_n`` includes ``b_hn``). The gates stay on chip
(kernel-local); the kernel reads both gate blocks, the state and the biases, and writes ``hy``
(and ``cy``). CUDA's kernel also writes a workspace of the gates for the backward pass; it is
not charged (fewer bytes: still a lower bound).
"""

from __future__ import annotations

import torch

from solar.frontend.torch import reroute  # noqa: F401  (defines torch.ops.solar.*_cell)
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Expr, call


def _gate(ctx: LoweringContext, parts: list[T | None], k: int, hidden: int, dtype: str) -> Expr:
    """The sum of gate ``k``'s columns ``k·H + j`` over ``parts`` (gate blocks ``(B, nH)`` or
    biases ``(nH,)``; None parts are skipped)."""
    col = Affine.of("j") + k * hidden
    terms = [
        ctx.load(p, ["b", col] if p.ndim == 2 else [col], dtype) for p in parts if p is not None
    ]
    total = terms[0]
    for t in terms[1:]:
        total = call("add", total, t)
    return total


@lowering(torch.ops.solar.lstm_cell.default)
def lstm_cell(
    ctx: LoweringContext, igates: T, hgates: T, cx: T, b_ih: T | None, b_hh: T | None
) -> None:
    hy, cy = ctx.out(0), ctx.out(1)
    batch, hidden = cy.shape
    dims = [("b", batch), ("j", hidden)]
    dt = cy.dtype

    def gate(k: int) -> Expr:
        return _gate(ctx, [igates, hgates, b_ih, b_hh], k, hidden, dt)

    c_new = call(
        "add",
        call("mul", call("sigmoid", gate(1)), ctx.load(cx, ["b", "j"], dt)),
        call("mul", call("sigmoid", gate(0)), call("tanh", gate(2))),
    )
    ctx.statement(dims, cy, ["b", "j"], c_new)
    h_new = call("mul", call("sigmoid", gate(3)), call("tanh", ctx.load(cy, ["b", "j"])))
    ctx.statement(dims, hy, ["b", "j"], h_new)


@lowering(torch.ops.solar.gru_cell.default)
def gru_cell(
    ctx: LoweringContext, igates: T, hgates: T, hx: T, b_ih: T | None, b_hh: T | None
) -> None:
    hy = ctx.out(0)
    batch, hidden = hy.shape
    dims = [("b", batch), ("j", hidden)]
    dt = hy.dtype

    def gate(k: int, parts: list[T | None]) -> Expr:
        return _gate(ctx, parts, k, hidden, dt)

    both = [igates, hgates, b_ih, b_hh]
    r = call("sigmoid", gate(0, both))
    z = call("sigmoid", gate(1, both))
    n = call(
        "tanh",
        call("add", gate(2, [igates, b_ih]), call("mul", r, gate(2, [hgates, b_hh]))),
    )
    h = ctx.load(hx, ["b", "j"], dt)
    ctx.statement(dims, hy, ["b", "j"], call("add", n, call("mul", z, call("sub", h, n))))

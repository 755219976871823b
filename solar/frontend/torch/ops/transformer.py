"""The kernels of PyTorch's fused transformer paths (what ``nn.MultiheadAttention`` and
``nn.TransformerEncoderLayer`` run in eval mode on CUDA, rerouted while tracing by
:mod:`solar.frontend.torch.reroute`):

- ``_addmm_activation(bias, a, b, use_gelu)``: ONE cuBLASLt GEMM with a bias + ReLU/GELU
  epilogue, ``out = act(bias + a @ b)`` (the feed-forward's first linear layer);
- ``_transform_bias_rescale_qkv(qkv, bias, H)``: ONE kernel splitting the packed projection
  ``(B, T, 3·D)`` into ``q, k, v`` of ``(B, H, T, D/H)``, adding the bias and scaling ``q`` by
  ``1/√(D/H)``;
- ``_masked_softmax(x, mask, dim, mask_type)``: ONE softmax kernel where ``mask`` (True = drop)
  removes entries; rows with every entry dropped give 0. ``mask_type`` 0 is an ``(L, S)`` mask,
  1 a ``(B, S)`` key-padding mask (of a ``(B, H, L, S)`` input), otherwise ``mask`` broadcasts.
"""

from __future__ import annotations

import math

import torch

from solar.algebra.size import sqrt
from solar.frontend.torch import fakes  # noqa: F401  (fake kernels of the ops lowered here)
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import acc_dtype, broadcast_index, nest
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, call

aten = torch.ops.aten

_ACTIVATIONS = {False: "relu", True: "gelu_tanh"}  # cuBLASLt: the tanh GELU


@lowering(aten._addmm_activation.default)
def addmm_activation(
    ctx: LoweringContext,
    bias: T,
    a: T,
    b: T,
    beta: float = 1,
    alpha: float = 1,
    use_gelu: bool = False,
) -> None:
    out = ctx.out()
    m, k = a.shape
    n = b.shape[1]
    compute = out.dtype
    acc = ctx.local("acc", (m, n), compute)
    product = call("mul", ctx.load(a, ["m", "k"], compute), ctx.load(b, ["k", "n"], compute))
    dims = [("m", m), ("n", n), ("k", k, True)]
    ctx.statement(
        dims, acc, ["m", "n"], product, reduce="sum", precision=ctx.policy.matmul(compute)
    )
    y = ctx.load(acc, ["m", "n"])
    if alpha != 1:
        y = call("mul", Const(alpha), y)
    if beta:
        b_expr = ctx.load(bias, broadcast_index(bias.shape, ["m", "n"]), compute)
        y = call("add", y, b_expr if beta == 1 else call("mul", Const(beta), b_expr))
    act = call(_ACTIVATIONS[bool(use_gelu)], y)
    ctx.statement(nest("mn", out.shape), out, ["m", "n"], act)


@lowering(aten._transform_bias_rescale_qkv.default)
def transform_bias_rescale_qkv(ctx: LoweringContext, qkv: T, bias: T, num_heads: int) -> None:
    batch, tokens, three_d = qkv.shape
    dim = three_d // 3
    head = dim // num_heads
    dims = [("b", batch), ("h", num_heads), ("t", tokens), ("e", head)]
    vals = ctx.val
    if isinstance(vals, (tuple, list)) and torch._C._is_alias_of(vals[0], vals[1]):
        # q, k, v are three slices of one (3, B, H, T, E) buffer, as the kernel writes them
        # (and as eager torch returns them); a trace whose outputs are three separate
        # tensors (a fake from PyTorch's fake tensor cache, which the rerouted MHA path
        # turns off) keeps ctx.outs()'s default: later views of q, k
        # and v carry the trace's offsets, so the IR's layout must be the trace's.
        shape = (batch, num_heads, tokens, head)
        size = batch * num_heads * tokens * head
        storage = ctx.builder.tensor(f"{ctx.node.name}_qkv", (3, *shape), qkv.dtype)
        strides = (num_heads * tokens * head, tokens * head, head, 1)
        ctx.set_outs(
            [
                T(
                    ctx.builder.view(f"{ctx.node.name}_{n}", storage, shape, strides, k * size),
                    shape,
                    qkv.dtype,
                )  # fmt: skip
                for k, n in enumerate("qkv")
            ]
        )
    for which in range(3):
        out = ctx.out(which)
        col = Affine.of("h") * head + "e" + which * dim
        value = call("add", ctx.load(qkv, ["b", "t", col]), ctx.load(bias, [col], qkv.dtype))
        if which == 0:
            value = call("mul", value, Const(1 / sqrt(head)))  # a symbolic head dim kept
        ctx.statement(dims, out, ["b", "h", "t", "e"], value)


@lowering(aten._masked_softmax.default)
def masked_softmax(
    ctx: LoweringContext, x: T, mask: T, dim: int | None = None, mask_type: int | None = None
) -> None:
    out = ctx.out()
    nd = x.ndim
    d = (nd - 1) if dim is None else dim % nd
    if d != nd - 1:
        ctx.fail(f"along dim {dim} (not the last) is not supported")
    names = [f"i{k}" for k in range(nd - 1)] + ["r"]
    if mask_type == 0 and mask.ndim == 2:
        m_ix: list[object] = names[-2:]
    elif mask_type == 1 and mask.ndim == 2 and nd == 4:
        m_ix = [names[0], "r"]
    else:
        m_ix = broadcast_index(mask.shape, names)
    row, row_shape = names[:-1], x.shape[:-1]
    full = nest(names, x.shape)
    reduce_r = [*nest(row, row_shape), ("r", x.shape[-1], True)]
    compute, local = out.dtype, acc_dtype(out.dtype)
    logit = call("where", ctx.load(mask, m_ix), Const(-math.inf), ctx.load(x, names, compute))
    m = ctx.local("max", row_shape, local)
    s = ctx.local("sum", row_shape, local)
    e = ctx.local("exp", x.shape, local)
    ctx.statement(reduce_r, m, row, logit, reduce="max", dtype=compute)
    ctx.statement(full, e, names, call("exp", call("sub", logit, ctx.load(m, row))))
    ctx.statement(reduce_r, s, row, ctx.load(e, names), reduce="sum")
    norm = call("div", ctx.load(e, names), ctx.load(s, row))
    empty = call("eq", ctx.load(m, row), Const(-math.inf))
    ctx.statement(full, out, names, call("where", empty, Const(0.0), norm), dtype=compute)

"""Fake kernels of aten operators PyTorch gives none (no meta kernel), for symbolic traces.

On fake tensors PyTorch runs such an operator's CPU kernel on zeros of the traced shapes (its
"unsafe fallback"), which a trace with symbolic shapes cannot do: the fallback refuses
symbolic sizes, or the kernel trips an internal assert on them. Each fake kernel here gives
exactly the outputs that fallback gives (shapes, dtypes, strides, storage offsets, aliasing),
so a numeric trace records the same graph as before and a symbolic one records it too:

- ``_transform_bias_rescale_qkv(qkv, bias, H)`` (``nn.MultiheadAttention``'s math path):
  q, k, v of ``(B, H, T, D/H)``, three slices of one ``(3, B, H, T, D/H)`` buffer;
- ``_masked_softmax(x, mask, dim, mask_type)``: ``x``'s shape and layout;
- ``_trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim)`` (what
  ``F.bilinear`` records): a contiguous tensor of the index space's sizes less the summed
  dims (``at::zeros`` of them, the summed dims squeezed), of ``i1``'s dtype.

A kernel is registered only where PyTorch has no meta kernel of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

_ATEN = torch.library.Library("aten", "FRAGMENT")  # noqa: TOR901


def _transform_bias_rescale_qkv(qkv, qkv_bias, num_heads):
    b, t, three_d = qkv.shape
    buf = qkv.new_empty((3, b, num_heads, t, three_d // 3 // num_heads))
    return buf[0], buf[1], buf[2]


def _masked_softmax(x, mask, dim=None, mask_type=None):
    return torch.empty_like(x)


def _trilinear(
    i1, i2, i3, expand1: Sequence[int], expand2: Sequence[int], expand3: Sequence[int],
    sumdim: Sequence[int], unroll_dim: int = 1,
):  # fmt: skip
    total = i1.dim() + len(expand1)
    shape = []
    for i in range(total):
        s = 0  # the size of the last input spanning dim i (as the kernel reads it)
        for t, expand in ((i1, expand1), (i2, expand2), (i3, expand3)):
            if i not in {e % total for e in expand}:
                s = t.shape[i - sum(1 for e in expand if e % total < i)]
        if i not in {d % total for d in sumdim}:
            shape.append(s)
    return i1.new_empty(shape)


for _name, _fake in (
    ("_transform_bias_rescale_qkv", _transform_bias_rescale_qkv),
    ("_masked_softmax", _masked_softmax),
    ("_trilinear", _trilinear),
):
    if not torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{_name}", "Meta"):
        torch.library.register_fake(f"aten::{_name}", _fake, lib=_ATEN)
